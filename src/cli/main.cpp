// autobatch: the command-line tool. Each subcommand is a thin layer over the
// library: parse flags (CLI11), call the library, print, and map the outcome
// to the exit codes of docs/language.md, "Diagnostics and exit status" (0 ok, 2
// usage/parse/type/input error, 1 runtime error).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/autobatch.h"
#include "cli/commands.h"

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// "; did you mean '--inputs'?" for each flag on the command line that
// neither the subcommand nor the tool knows but that is a plausible typo of
// one they do (about one edit per three letters, or a prefix: --input).
std::string flag_hints(CLI::App& app, int argc, char** argv) {
  CLI::App* sub = nullptr;
  for (int i = 1; i < argc && !sub; ++i)
    for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; }))
      if (s->get_name() == argv[i]) sub = s;
  std::vector<std::string> known;
  for (CLI::App* a : {&app, sub}) {
    if (!a) continue;
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) known.push_back("--" + l);
      for (const auto& s : o->get_snames()) known.push_back("-" + s);
    }
  }
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
    if (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.') continue;  // -1: a value
    if (arg.size() > 2 && arg[1] != '-') continue;  // -abc: short flags, left to CLI11
    std::string_view name = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const auto& k : known) {
      bool prefix =
          (k.rfind(name, 0) == 0 || name.rfind(k, 0) == 0) && std::min(k.size(), name.size()) >= 5;
      size_t d = prefix ? 1 : edit_distance(name, k);
      if (d < best_d) best_d = d, best = k;
    }
    if (best_d <= std::max<size_t>(1, (name.size() - 2 + 1) / 3))
      out += "; did you mean '" + best + "' for '" + std::string(name) + "'?";
  }
  return out;
}

// "; give each input its own --inputs ..." when an argument nobody expected
// looks like a second input after one --inputs (NAME=FILE or a .npy/.json
// file): --inputs takes one value per use.
std::string inputs_hint(const CLI::ParseError& e, int argc, char** argv) {
  if (!dynamic_cast<const CLI::ExtrasError*>(&e)) return "";
  auto ends = [](std::string_view a, std::string_view suffix) {
    return a.size() >= suffix.size() && a.substr(a.size() - suffix.size()) == suffix;
  };
  bool after_inputs = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--inputs") {
      after_inputs = true;
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      after_inputs = false;
      continue;
    }
    const size_t eq = a.find('=');
    const bool named = eq != std::string_view::npos && eq > 0 &&
                       (std::isalpha(static_cast<unsigned char>(a[0])) || a[0] == '_');
    if (after_inputs && (named || ends(a, ".npy") || ends(a, ".json")))
      return "; each input needs its own --inputs: --inputs A --inputs " + std::string(a);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"autobatch: run one program on many inputs at once (program-counter auto-batching)",
               "autobatch"};
  app.set_version_flag("--version", std::string("autobatch ") + autobatch::version());
  app.require_subcommand(1);
  app.fallthrough(false);

  ab::cli::Options opt;
  ab::cli::register_commands(app, opt);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A first word that names no command: say so, and list them.
    std::string names;
    bool known = false;
    for (const CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + s->get_name();
      known = known || (argc > 1 && s->get_name() == argv[1]);
    }
    if (argc > 1 && argv[1][0] != '-' && !known) {
      std::cerr << "autobatch: error: unknown command '" << argv[1] << "' (commands: " << names
                << ")\n";
      std::cerr << "Run 'autobatch --help' for usage.\n";
      return 2;
    }
    std::cerr << "autobatch: error: " << e.what() << flag_hints(app, argc, argv)
              << inputs_hint(e, argc, argv) << "\n";
    std::cerr << "Run 'autobatch --help' for usage.\n";
    return 2;
  }
  try {
    const int status = ab::cli::dispatch(app, opt);
    // A run that ended before the JIT's code was ready does not wait for it
    // (docs/engine.md, "Tiered execution"): the outputs are written, so the
    // process ends here rather than in the exit handlers, which would join
    // the compiling thread.
    if (autobatch::compiling_in_background()) {
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      std::_Exit(status);
    }
    return status;
  } catch (const std::bad_alloc&) {
    // Outputs are written whole or not at all, so nothing partial is left.
    std::cerr << "autobatch: error: out of memory (the batch times the size of one thread's values "
                 "is too large for this machine)\n";
    return 1;
  }
}
