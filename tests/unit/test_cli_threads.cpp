// `autobatch run --threads N`: the same outputs for every N, under every VM,
// with lanes and with a lowered program; statistics summed; a trace runs one
// shard; a bad N is a usage error.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

std::string inputs_json(int n) {
  std::string s = R"({"n": [)";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string((i * 5) % 14);
  return s + "]}";
}

ab_test::Proc run(const std::vector<std::string>& args) {
  return ab_test::run_binary(AUTOBATCH_SOURCE_DIR, args, std::nullopt, 120);
}

}  // namespace

TEST_CASE("cli: --threads N gives the outputs of --threads 1") {
  const std::string in = inputs_json(777);
  for (const char* vm : {"stack", "stackless", "reference"}) {
    ab_test::Proc one = run(
        {"run", "programs/fib.ab", "--entry", "fib", "--vm", vm, "--inputs", in, "--threads", "1"});
    REQUIRE(one.code == 0);
    CHECK(one.out.rfind(R"({"outputs": [[1, 8, 89, 1, 13)", 0) == 0);
    for (const char* t : {"2", "3", "16"}) {
      CAPTURE(vm);
      CAPTURE(t);
      ab_test::Proc many = run(
          {"run", "programs/fib.ab", "--entry", "fib", "--vm", vm, "--inputs", in, "--threads", t});
      CHECK(many.code == 0);
      CHECK(many.out == one.out);
      ab_test::Proc lanes = run({"run", "programs/fib.ab", "--entry", "fib", "--vm", vm, "--inputs",
                                 in, "--threads", t, "--lanes", "50"});
      CHECK(lanes.code == 0);
      CHECK(lanes.out == one.out);
    }
  }
}

TEST_CASE("cli: --threads with a lowered program, --stats, --trace and bad values") {
  fs::path dir = fs::temp_directory_path() / "autobatch_cli_threads";
  fs::create_directories(dir);
  const std::string in = inputs_json(300);
  ab_test::Proc low = run({"lower", "programs/fib.ab", "--entry", "fib"});
  REQUIRE(low.code == 0);
  std::ofstream(dir / "fib.lowered.ab") << low.out;
  ab_test::Proc one =
      run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "1"});
  ab_test::Proc lowered =
      run({"run", (dir / "fib.lowered.ab").string(), "--inputs", in, "--threads", "4"});
  CHECK(lowered.code == 0);
  CHECK(lowered.out == one.out);

  // lane_operations counts work: the same however the batch is split.
  auto lane_ops = [](const std::string& out) {
    size_t at = out.find("\"lane_operations\": ");
    REQUIRE(at != std::string::npos);
    return std::stoll(out.substr(at + 19));
  };
  ab_test::Proc s1 = run(
      {"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "1", "--stats"});
  ab_test::Proc s4 = run(
      {"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "4", "--stats"});
  REQUIRE(s1.code == 0);
  REQUIRE(s4.code == 0);
  CHECK(lane_ops(s1.out) == lane_ops(s4.out));

  // A trace is one run: its header names the whole batch.
  fs::path trace = dir / "t.jsonl";
  ab_test::Proc t = run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads",
                         "4", "--trace", trace.string()});
  CHECK(t.code == 0);
  CHECK(t.out == one.out);
  std::ifstream f(trace);
  std::string header;
  std::getline(f, header);
  CHECK(header.find("\"batch\": 300") != std::string::npos);

  ab_test::Proc zero =
      run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "0"});
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--threads") != std::string::npos);
  fs::remove_all(dir);
}
