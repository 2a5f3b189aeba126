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

// Without --stats the batch is cut into shards of at least 256 threads, up
// to 32 per OS thread, taken in batch order as each thread finishes one:
// sorted inputs (the long threads all at the end) keep both threads busy.
// With --stats there is one shard per thread (the shares an MPI run makes).
// Either way the outputs are those of one thread, and an error is the one
// of the first failing shard in batch order.
TEST_CASE("cli: --threads hands out shards; --stats keeps one per thread") {
  std::string in = R"({"n": [)";
  for (int i = 0; i < 4096; ++i) in += (i ? ", " : "") + std::to_string(2 + i * 14 / 4096);
  in += "]}";
  ab_test::Proc one =
      run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "1"});
  REQUIRE(one.code == 0);
  ab_test::Proc two =
      run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in, "--threads", "2", "-v"});
  REQUIRE(two.code == 0);
  CHECK(two.out == one.out);
  CHECK(two.err.find("16 shards on 2 threads") != std::string::npos);
  ab_test::Proc stats = run({"run", "programs/fib.ab", "--entry", "fib", "--inputs", in,
                             "--threads", "2", "--stats", "-v"});
  REQUIRE(stats.code == 0);
  CHECK(stats.err.find("2 shards on 2 threads") != std::string::npos);

  // Threads 1000 and 3000 divide by zero: the error is thread 1000's (its
  // shard comes first), whichever OS thread ran which shard.
  std::string d = R"({"a": [)";
  for (int i = 0; i < 4096; ++i) d += (i ? ", " : "") + std::string(i == 1000 || i == 3000 ? "0" : "1");
  d += "]}";
  const std::string div = (fs::temp_directory_path() / "ab_threads_div.ab").string();
  std::ofstream(div) << "func d(a: i64) -> i64 {\n  return 7 / a\n}\n";
  for (const char* t : {"1", "2", "3"}) {
    CAPTURE(t);
    ab_test::Proc e = run({"run", div, "--inputs", d, "--threads", t});
    CHECK(e.code == 1);
    CHECK(e.err.find("thread 1000 of 4096") != std::string::npos);
  }
}
