// Compile-time warnings (parse/unused.h, docs/language.md "Warnings"): what
// Program::warnings() holds, that only the user's own file is warned about,
// that a parameter is warned only for the entry, and that the CLI's
// --no-warnings changes stderr only: stdout and the exit status are the same
// byte for byte. The golden cases (tests/golden/diag/warn_*.ab) show the
// messages themselves.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "cli_harness.h"
#include "temp_dir.h"

namespace {

const char* kTypo = R"(func main(xs: f64[4], thrshold: f64) -> i64 {
  events = 0
  for i in range(4) {
    if xs[i] > 0.5 {
      evnts = events + 1
    }
  }
  return events
}
)";

std::string write_file(const ab_test::TempDir& dir, const std::string& name,
                       const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

std::vector<std::string> messages(const autobatch::Program& p) {
  std::vector<std::string> out;
  for (const auto& w : p.warnings()) out.push_back(w.message);
  return out;
}

}  // namespace

TEST_CASE("warnings: an unused variable and an unused entry parameter, with did-you-mean") {
  autobatch::CompileOptions co;
  co.name = "typo.ab";
  auto p = autobatch::compile(kTypo, co);
  REQUIRE_MESSAGE(p, p.rendered());
  const auto& w = p->warnings();
  REQUIRE(w.size() == 2);
  CHECK(w[0].severity == autobatch::Severity::Warning);
  CHECK(w[0].file == "typo.ab");
  CHECK(w[0].line == 5);
  CHECK(w[0].column == 7);
  CHECK(w[0].message == "variable 'evnts' is assigned but never used (did you mean 'events'?)");
  CHECK(w[0].rendered.rfind("typo.ab:5:7: warning: variable 'evnts'", 0) == 0);
  CHECK(w[1].line == 1);
  CHECK(w[1].column == 23);
  CHECK(w[1].message.find("parameter 'thrshold' of the entry function 'main' is never used") == 0);
  // The warnings change nothing a run computes.
  double xs[8] = {0.9, 0.1, 0.7, 0.2, 0.0, 0.0, 0.0, 0.0};
  double t[2] = {0.5, 0.5};
  auto r = p->run({autobatch::ArrayView::of(xs, 2, {4}), autobatch::ArrayView::of(t, 2)});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(r.outputs[0].as<int64_t>()[0] == 0);
}

TEST_CASE("warnings: a parameter is warned only when its function is the entry") {
  const char* text = R"(func helper(x: f64, spare: f64) -> f64 {
  return 2.0 * x
}

func main(x: f64) -> f64 {
  return helper(x, 1.0)
}
)";
  autobatch::CompileOptions co;
  co.name = "entry.ab";
  auto as_main = autobatch::compile(text, co);
  REQUIRE(as_main);
  CHECK(as_main->warnings().empty());
  co.entry = "helper";
  auto as_helper = autobatch::compile(text, co);
  REQUIRE(as_helper);
  REQUIRE(as_helper->warnings().size() == 1);
  CHECK(as_helper->warnings()[0].message.find("parameter 'spare' of the entry function 'helper'") ==
        0);
}

TEST_CASE("warnings: imported files, the shipped library and lowered programs are not warned") {
  ab_test::TempDir dir("ab_warnings");
  write_file(dir, "helpers.ab",
             "func twice(x, unused_param) {\n  wasted = x * 3.0\n  return 2.0 * x\n}\n");
  std::string main = write_file(dir, "main.ab",
                                "import helpers\nimport dists\nimport transforms\n\n"
                                "entry func main(x: f64) {\n"
                                "  return twice(x, 0.0) + normal_lpdf(x, 0.0, 1.0)\n}\n");
  auto p = autobatch::compile_file(main);
  REQUIRE_MESSAGE(p, p.rendered());
  CHECK(messages(*p).empty());

  // The helpers file checked on its own is the user's file: warned.
  auto h = autobatch::compile_file(dir / "helpers.ab");
  REQUIRE(h);
  CHECK(messages(*h) == std::vector<std::string>{
                            "variable 'wasted' is assigned but never used; name it '_wasted' if "
                            "that is intended",
                            "parameter 'unused_param' of the entry function 'twice' is never "
                            "used; name it '_unused_param' if that is intended"});

  // The lowered program of a warned one: the compiler's temporaries, no warnings.
  autobatch::CompileOptions co;
  co.name = "typo.ab";
  auto typo = autobatch::compile(kTypo, co);
  REQUIRE(typo);
  auto lowered = typo->lower();
  REQUIRE_MESSAGE(lowered, lowered.rendered());
  co.name = "typo.lowered.ab";
  auto again = autobatch::compile(*lowered, co);
  REQUIRE_MESSAGE(again, again.rendered());
  CHECK(again->is_lowered());
  CHECK(messages(*again).empty());
}

TEST_CASE("warnings: --no-warnings changes stderr only; outputs and exit status are the same") {
  ab_test::TempDir dir("ab_warnings_cli");
  write_file(dir, "typo.ab", kTypo);
  write_file(dir, "in.json",
             R"({"xs": [[0.9, 0.1, 0.7, 0.2], [0.0, 0.0, 0.0, 0.0]], "thrshold": [0.5, 0.5]})");
  const std::vector<std::vector<std::string>> commands = {
      {"run", "typo.ab", "--inputs", "in.json", "--jit", "off"},
      {"run", "typo.ab", "--inputs", "in.json", "--vm", "reference"},
      {"run", "typo.ab", "--inputs", "in.json", "--vm", "stackless", "--stats"},
      {"check", "typo.ab"},
      {"check", "typo.ab", "--inputs", "in.json"},
      {"lower", "typo.ab"},
      {"lower", "typo.ab", "--print-after", "blocks"},
  };
  for (const auto& args : commands) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    CAPTURE(line);
    ab_test::Proc on = ab_test::run_binary(dir.path, args, std::nullopt, 120);
    std::vector<std::string> off_args = args;
    off_args.push_back("--no-warnings");
    ab_test::Proc off = ab_test::run_binary(dir.path, off_args, std::nullopt, 120);
    CHECK(on.code == 0);
    CHECK(off.code == 0);
    CHECK(on.err.find("typo.ab:5:7: warning: variable 'evnts' is assigned but never used (did "
                      "you mean 'events'?)") != std::string::npos);
    CHECK(on.err.find("typo.ab:1:23: warning: parameter 'thrshold'") != std::string::npos);
    CHECK(off.err.empty());
    if (args.back() == "--stats") {
      // The statistics carry times; the outputs before them must agree.
      CHECK(on.out.substr(0, on.out.find("\"stats\"")) ==
            off.out.substr(0, off.out.find("\"stats\"")));
    } else {
      CHECK(on.out == off.out);
    }
  }
  // -q silences the progress line, not the warnings.
  ab_test::Proc quiet = ab_test::run_binary(
      dir.path, {"run", "typo.ab", "--inputs", "in.json", "-q"}, std::nullopt, 120);
  CHECK(quiet.code == 0);
  CHECK(quiet.err.find("warning: variable 'evnts'") != std::string::npos);
  CHECK(quiet.out == "{\"outputs\": [[0, 0]], \"names\": [\"events\"]}\n");
}

TEST_CASE("warnings: sample warns about the model's own variables, not the generated driver") {
  ab_test::TempDir dir("ab_warnings_sample");
  write_file(dir, "model.ab",
             "import dists\n\nfunc log_density(theta: f64[1]) -> f64 {\n"
             "  scael = 2.0\n  scale = 1.0\n  return normal_lpdf(theta[0], 0.0, scale)\n}\n");
  std::vector<std::string> args = {"sample", "model.ab", "--print-program"};
  ab_test::Proc on = ab_test::run_binary(dir.path, args, std::nullopt, 120);
  args.push_back("--no-warnings");
  ab_test::Proc off = ab_test::run_binary(dir.path, args, std::nullopt, 120);
  CHECK(on.code == 0);
  CHECK(off.code == 0);
  CHECK(on.err ==
        "model.ab:4:3: warning: variable 'scael' is assigned but never used (did you mean "
        "'scale'?)\n      scael = 2.0\n      ^~~~~\n");
  CHECK(off.err.empty());
  CHECK(on.out == off.out);
}
