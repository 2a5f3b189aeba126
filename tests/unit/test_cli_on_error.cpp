// `autobatch run --on-error record` end to end (docs/language.md, "Runtime errors"): the outputs of
// the threads that finished plus an "errors" list on stdout, the errors on
// stderr, exit status 1; with file outputs an errors.json beside them; the
// default stays abort. Under every VM, with --lanes and --threads.
#include <doctest/doctest.h>

#include "on_error_program.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

// Threads 1 and 3 of 6 divide by zero: thread 1 three calls deep, thread 3
// in main's loop.
const char* kProgram = kOnErrorProgram;
const char* kInputs = R"({"n": [3, 4, 2, 5, 1, 3], "d": [10, 2, 20, 6, 11, 12]})";
const char* kOutputs =
    R"({"outputs": [[84, 0, 18, 0, 25, 60], [42.0, "NaN", 9.0, "NaN", 12.5, 30.0]], )"
    R"("names": ["s", "out1"])";
const char* kError1 = "fail.ab:16:7: integer division by zero (function down, block ";
const char* kError3 = "fail.ab:6:13: integer division by zero (function main, block ";

class Dir {
 public:
  Dir() {
    std::string tmpl = (fs::temp_directory_path() / "ab_on_error_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
    std::ofstream(path_ / "fail.ab") << kProgram;
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ab_test::Proc run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"run", "fail.ab", "--inputs", kInputs});
    return ab_test::run_binary(path_, args, std::nullopt, 60);
  }
  std::string read(const std::string& name) const {
    std::ifstream f(path_ / name, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  bool exists(const std::string& name) const { return fs::exists(path_ / name); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("cli: --on-error record prints the other outputs and both errors, exit 1, every VM") {
  Dir dir;
  const std::vector<std::vector<std::string>> configs = {
      {"--vm", "stack"},
      {"--vm", "stack", "--jit", "off"},
      {"--vm", "stack", "--schedule", "min-pc"},
      {"--vm", "stackless"},
      {"--vm", "reference"},
      {"--vm", "stack", "--lanes", "2"},
      {"--vm", "stackless", "--lanes", "2"},
      {"--vm", "stack", "--threads", "3"},
      {"--vm", "stackless", "--threads", "2", "--lanes", "3"},
      {"--vm", "reference", "--threads", "4"},
  };
  for (const auto& c : configs) {
    std::vector<std::string> args = c;
    args.insert(args.end(), {"--on-error", "record"});
    CAPTURE(args);
    ab_test::Proc p = dir.run(args);
    CHECK(p.code == 1);
    CHECK(p.out.rfind(
              std::string(kOutputs) + ", \"errors\": [{\"thread\": 1, \"message\": \"" + kError1,
              0) == 0);
    CHECK(has(p.out, std::string("}, {\"thread\": 3, \"message\": \"") + kError3));
    CHECK(p.out.back() == '\n');
    CHECK(has(p.err, "fail.ab:16:7: runtime error: integer division by zero in thread 1 of 6"));
    CHECK(has(p.err, "fail.ab:6:13: runtime error: integer division by zero in thread 3 of 6"));
  }
}

TEST_CASE("cli: the default --on-error abort stops at the first failing thread") {
  Dir dir;
  for (std::vector<std::string> args :
       {std::vector<std::string>{}, std::vector<std::string>{"--on-error", "abort"}}) {
    ab_test::Proc p = dir.run(args);
    CHECK(p.code == 1);
    CHECK(p.out.empty());
    CHECK(has(p.err, "fail.ab:16:7: runtime error: integer division by zero in thread 1 of 6"));
    CHECK_FALSE(has(p.err, "thread 3"));
  }
}

TEST_CASE("cli: --on-error record with file outputs writes errors.json beside them") {
  Dir dir;
  const std::string errors_start =
      "{\"errors\": [{\"thread\": 1, \"message\": \"" + std::string(kError1);
  {
    ab_test::Proc p = dir.run({"--on-error", "record", "--output", "out.json"});
    CHECK(p.code == 1);
    CHECK(p.out.empty());
    CHECK(dir.read("out.json").rfind(kOutputs, 0) == 0);
    CHECK(has(dir.read("out.json"), "\"errors\": [{\"thread\": 1"));
    CHECK(dir.read("errors.json").rfind(errors_start, 0) == 0);
    CHECK(has(dir.read("errors.json"), "{\"thread\": 3, \"message\": \"" + std::string(kError3)));
    fs::remove(dir.path() / "errors.json");
  }
  {
    ab_test::Proc p = dir.run({"--on-error", "record", "--output", "res/"});
    CHECK(p.code == 1);
    CHECK(dir.exists("res/s.npy"));
    CHECK(dir.exists("res/out1.npy"));
    CHECK(dir.read("res/errors.json").rfind(errors_start, 0) == 0);
    CHECK_FALSE(dir.exists("errors.json"));
  }
  {
    // No failure: exit 0 and an empty list (no stale errors.json).
    const std::string ok = R"({"n": [3, 2], "d": [10, 20]})";
    ab_test::Proc p = ab_test::run_binary(
        dir.path(), {"run", "fail.ab", "--inputs", ok, "--on-error", "record", "--output", "ok/"},
        std::nullopt, 60);
    CHECK(p.code == 0);
    CHECK(p.err.empty());
    CHECK(dir.read("ok/errors.json") == "{\"errors\": []}\n");
  }
  {
    // Abort: no file at all.
    ab_test::Proc p = dir.run({"--output", "none/"});
    CHECK(p.code == 1);
    CHECK_FALSE(dir.exists("none/errors.json"));
    CHECK_FALSE(dir.exists("none/out0.npy"));
  }
}

TEST_CASE("cli: --max-steps with --on-error record stops only the threads over the bound") {
  Dir dir;
  std::ofstream(dir.path() / "count.ab") << "func main(n: i64) -> i64 {\n"
                                            "  s = 0\n"
                                            "  while s < n {\n"
                                            "    s = s + 1\n"
                                            "  }\n"
                                            "  return s\n"
                                            "}\n";
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    ab_test::Proc p = ab_test::run_binary(
        dir.path(),
        {"run", "count.ab", "--vm", vm, "--inputs", R"({"n": [3, 1000000000, 5, 2000000000]})",
         "--max-steps", "100", "--on-error", "record"},
        std::nullopt, 60);
    CHECK(p.code == 1);
    CHECK(p.out.rfind(
              R"({"outputs": [[3, 0, 5, 0]], "names": ["s"], "errors": [{"thread": 1, "message": "count.ab:)", 0) ==
          0);
    CHECK(has(p.out, "--max-steps 100 exceeded (function main"));
    CHECK(has(p.out, "{\"thread\": 3, "));
    CHECK(has(p.err, "in thread 3 of 4"));
  }
}
