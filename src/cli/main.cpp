// autobatch: the command-line tool. Each subcommand is a thin layer over the
// library: parse flags (CLI11), call the library, print, and map the outcome
// to the exit codes of SPEC §6 (0 ok, 2 usage/parse/type/input error,
// 1 runtime error).
#include <CLI/CLI.hpp>
#include <iostream>

#include "autobatch/autobatch.h"
#include "cli/commands.h"

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
    std::cerr << "autobatch: error: " << e.what() << "\n";
    std::cerr << "Run 'autobatch --help' for usage.\n";
    return 2;
  }
  try {
    return ab::cli::dispatch(app, opt);
  } catch (const std::bad_alloc&) {
    // Outputs are written whole or not at all, so nothing partial is left.
    std::cerr << "autobatch: error: out of memory (the batch times the size of one thread's values "
                 "is too large for this machine)\n";
    return 1;
  }
}
