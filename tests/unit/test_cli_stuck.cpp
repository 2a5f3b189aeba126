// Runs that do not end: --time-limit stops them in every VM, saying how many
// threads finished (those that left an endless loop's block included) and
// naming the threads still running with their function, block and line;
// endless tail recursion ends the same way in every VM (every VM reuses the
// frame of a tail self-call), and finite tail recursion deeper than the stack
// bound succeeds in every VM; a long run whose stderr is not a terminal
// prints a status line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

// Thread 0 leaves the loop after 3 iterations; thread 1 never does.
const char* kEndlessLoop =
    "func main(n: i64) -> i64 {\n"
    "  i = 0\n"
    "  while i < n or n < 0 {\n"
    "    i = i + 1\n"
    "  }\n"
    "  return i\n"
    "}\n";

// Thread 0 returns at once; thread 1 calls itself forever (a tail call).
const char* kEndlessTail =
    "func f(n: i64) -> i64 {\n"
    "  if n == 0 {\n"
    "    return 0\n"
    "  }\n"
    "  return f(n + 1)\n"
    "}\n";

struct StuckDir {
  fs::path dir;
  explicit StuckDir(const char* name) : dir(fs::temp_directory_path() / name) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~StuckDir() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(dir / file) << text;
  }
  ab_test::Proc run(const std::vector<std::string>& args, double timeout = 60) const {
    return ab_test::run_binary(dir, args, std::nullopt, timeout);
  }
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("cli: --time-limit stops an endless loop, counting the thread that left it") {
  StuckDir d("autobatch_test_stuck_loop");
  d.write("endless.ab", kEndlessLoop);
  for (const char* vm : {"stack", "stackless", "reference"}) {
    for (const char* jit : {"on", "off"}) {
      if (std::string(vm) != "stack" && std::string(jit) == "off") continue;
      CAPTURE(vm);
      CAPTURE(jit);
      ab_test::Proc p = d.run({"run", "endless.ab", "--inputs", R"({"n": [3, -1]})", "--vm", vm,
                               "--jit", jit, "--time-limit", "2"});
      CHECK(p.code == 1);
      CHECK(p.out.empty());
      CHECK(contains(p.err, "--time-limit 2 s reached after"));
      CHECK(contains(p.err, "(1 of 2 threads finished)"));
      CHECK(contains(p.err, "still running: thread 1 in function main, block "));
      CHECK(contains(p.err, "endless.ab:3)"));
      CHECK(p.seconds < 20);
    }
  }
}

TEST_CASE("cli: --time-limit under --threads and --lanes names a running thread of the batch") {
  StuckDir d("autobatch_test_stuck_threads");
  d.write("endless.ab", kEndlessLoop);
  // Threads 0-5 finish, 6 and 7 loop forever.
  const std::string in = R"({"n": [1, 2, 3, 4, 5, 6, -1, -1]})";
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--threads", "2"}, std::vector<std::string>{"--lanes", "3"}}) {
    std::vector<std::string> args{"run", "endless.ab", "--inputs", in, "--time-limit", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    ab_test::Proc p = d.run(args);
    CAPTURE(extra[0]);
    CHECK(p.code == 1);
    CHECK(contains(p.err, "(6 of 8 threads finished)"));
    CHECK((contains(p.err, "still running: thread 6 in function main") ||
           contains(p.err, "still running: thread 7 in function main")));
  }
}

TEST_CASE("cli: endless tail recursion runs until the time limit or --max-steps in every VM") {
  StuckDir d("autobatch_test_stuck_tail");
  d.write("tail.ab", kEndlessTail);
  for (std::string vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    // A stack bound far below what the run reaches: a tail call takes none.
    // One OS thread: thread 0 then finishes at the first step, however busy
    // the machine (on two, its shard might not have started by the limit).
    ab_test::Proc p = d.run({"run", "tail.ab", "--inputs", R"({"n": [0, 1]})", "--vm", vm,
                             "--max-stack-depth", "50", "--time-limit", "0.5", "--threads", "1"});
    CHECK(p.code == 1);
    CHECK(p.out.empty());
    CHECK(contains(p.err, "--time-limit 0.5 s reached"));
    CHECK(contains(p.err, "(1 of 2 threads finished)"));
    CHECK(contains(p.err, "still running: thread 1 in function f, block "));
    CHECK(contains(p.err, " (tail.ab:"));
    CHECK(!contains(p.err, "stack depth"));
    CHECK(p.seconds < 20);

    p = d.run({"run", "tail.ab", "--inputs", R"({"n": [0, 1]})", "--vm", vm, "--max-stack-depth",
               "50", "--max-steps", "10000"});
    CHECK(p.code == 1);
    CHECK(p.out.empty());
    CHECK(contains(p.err, "tail.ab:"));
    CHECK(contains(p.err, "runtime error: --max-steps 10000 exceeded in thread 1 of 2 "
                          "(function f, block "));
    CHECK(!contains(p.err, "stack depth"));
  }
}

TEST_CASE("cli: tail recursion far deeper than the stack bound gives the same outputs in every VM") {
  StuckDir d("autobatch_test_stuck_deep_tail");
  d.write("count.ab",
          "func count(n: i64, acc: i64) -> i64 {\n"
          "  if n == 0 {\n"
          "    return acc\n"
          "  }\n"
          "  return count(n - 1, acc + n)\n"
          "}\n");
  // 100000 calls deep for thread 0, against a bound of 50 frames.
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    ab_test::Proc p = d.run({"run", "count.ab", "--inputs", R"({"n": [100000, 5, 300], "acc": 0})",
                             "--vm", vm, "--max-stack-depth", "50", "--quiet"});
    CHECK(p.code == 0);
    CHECK(p.err.empty());  // --quiet: no status line if a slow (sanitized) build runs past 10 s
    CHECK(p.out == "{\"outputs\": [[5000050000, 15, 45150]], \"names\": [\"acc\"]}\n");
  }
}

// Only some threads take the tail call, after loops of different lengths (so
// they reach it in different steps while others still wait in the loop or
// have returned), with a shared argument passed on (k), a parameter that
// starts shared and changes (s), two swapped (a, b), and a value computed
// from the parameters (ks, s + ks). down() is called with a shared depth:
// every thread recurses the same way. A VM that kept a parameter, or a
// value computed from one, as it was before the call gets other outputs or
// never ends (--max-steps bounds it).
const char* kPartialTail =
    "func g(n: i64, k: i64, s: i64, a: i64, b: i64) -> (i64, i64) {\n"
    "  i = 0\n"
    "  while i < n {\n"
    "    i = i + 1\n"
    "  }\n"
    "  ks = k * 3\n"
    "  if n <= 0 or n == 4 {\n"
    "    return s + ks, a - b\n"
    "  }\n"
    "  r, q = g(n - 1, k, s + n + ks, b, a + 1)\n"
    "  return r, q\n"
    "}\n"
    "\n"
    "func down(depth: i64, acc: i64) -> i64 {\n"
    "  if depth < 1 {\n"
    "    return acc\n"
    "  }\n"
    "  return down(depth - 1, acc + depth)\n"
    "}\n"
    "\n"
    "func main(n: i64, k: i64) -> (i64, i64, i64) {\n"
    "  r, q = g(n, k, 5, n, 2)\n"
    "  d = down(16, n)\n"
    "  return r, q, d\n"
    "}\n";

TEST_CASE("cli: a tail call taken by some threads only keeps each thread's arguments in every VM") {
  StuckDir d("autobatch_test_stuck_partial_tail");
  d.write("part.ab", kPartialTail);
  const std::string want =
      "{\"outputs\": [[26, 95, 107, 48, 26, 166, 71, 262], [-2, -2, -6, 0, 2, -8, 0, 10], "
      "[136, 139, 143, 137, 140, 145, 138, 148]], \"names\": [\"r\", \"q\", \"d\"]}\n";
  for (const char* vm : {"stack", "stackless", "reference"}) {
    for (const char* lanes : {"8", "3", "1"}) {
      CAPTURE(vm);
      CAPTURE(lanes);
      ab_test::Proc p =
          d.run({"run", "part.ab", "--inputs", R"({"n": [0, 3, 7, 1, 4, 9, 2, 12], "k": 7})",
                 "--vm", vm, "--lanes", lanes, "--max-steps", "100000"});
      CHECK(p.code == 0);
      CHECK(p.err.empty());
      CHECK(p.out == want);
    }
  }
}

TEST_CASE("cli: a time limit that is not a number of seconds is a usage error") {
  StuckDir d("autobatch_test_stuck_usage");
  d.write("endless.ab", kEndlessLoop);
  for (const char* bad : {"-1", "soon", "1e12"}) {
    CAPTURE(bad);
    ab_test::Proc p =
        d.run({"run", "endless.ab", "--inputs", R"({"n": [1]})", "--time-limit", bad});
    CHECK(p.code == 2);
    CHECK(contains(p.err, "--time-limit"));
  }
}

TEST_CASE("cli: a long run on a non-terminal stderr prints a status line" * doctest::timeout(60)) {
  StuckDir d("autobatch_test_stuck_status");
  d.write("endless.ab", kEndlessLoop);
  ab_test::Proc p =
      d.run({"run", "endless.ab", "--inputs", R"({"n": [3, -1]})", "--time-limit", "10.5"});
  CHECK(p.code == 1);
  CHECK(contains(p.err, "autobatch: step "));
  CHECK(contains(p.err, "1 of 2 threads finished, "));
  CHECK(contains(p.err, " s\nautobatch: --time-limit 10.5 s reached"));
}
