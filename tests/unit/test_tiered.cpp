// Tiered execution (docs/engine.md, "Tiered execution"): a stack VM run
// starts with every block interpreted while the JIT compiles its code in the
// background, and switches the blocks to their planned modes at a step
// boundary once the code is ready. A run whose compilation is held back
// finishes interpreted without waiting for it, and the code lands in the
// cache for the next run (of the same Program too); a switch at any step
// (RunOptions::jit_switch_at: a step, not a time) gives the outputs of --jit
// off bit for bit, in every compiled mode (a dense loop whose chunks were
// parked mid-loop, dense chunks with failing threads, whole blocks, the
// chain, segments with tensors); runs that count steps compile first; the
// CLI exits without waiting for a compilation still running.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "autobatch/autobatch.h"
#include "cli_harness.h"
#include "stack_harness.h"
#include "vm/jit/jit.h"

using namespace ab;

namespace {

using stack_harness::load;
using stack_harness::Prog;
using stack_harness::stack;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The background compiler held for a scope, released however the test ends.
struct Hold {
  Hold() { jit::hold_background(true); }
  ~Hold() { jit::hold_background(false); }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
};

// Outputs bit for bit (any NaN equals any NaN), and the same failed threads.
void same_outputs(const RunResult& a, const RunResult& b) {
  stack_harness::same_bits(a, b);
  REQUIRE(a.failed.size() == b.failed.size());
  for (size_t i = 0; i < a.failed.size(); ++i) {
    CHECK(a.failed[i].thread == b.failed[i].thread);
    CHECK(a.failed[i].message == b.failed[i].message);
  }
}

// The step at which a tiered run switched to the compiled code, as its
// execution report says ("interpreted for the first N steps"), -1 if it did
// not ("interpreted throughout"), -2 if the report says neither.
int64_t switched_at(const RunResult& r) {
  for (const auto& e : r.execution) {
    const std::string tag = "interpreted for the first ";
    if (auto at = e.reason.find(tag); at != std::string::npos)
      return std::stoll(e.reason.substr(at + tag.size()));
    if (has(e.reason, "interpreted throughout")) return -1;
  }
  return -2;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// `count` threads: {"a": [fa(0), ...], "b": [fb(0), ...]}.
template <typename FA, typename FB>
std::string inputs(const char* a, const char* b, int count, FA fa, FB fb) {
  std::string x, y;
  for (int i = 0; i < count; ++i) {
    x += (i ? ", " : "") + std::to_string(fa(i));
    y += (i ? ", " : "") + std::to_string(fb(i));
  }
  return std::string("{\"") + a + "\": [" + x + "], \"" + b + "\": [" + y + "]}";
}

// A loop that cannot fail (a dense loop with several iterations per call)
// on 600 threads: three chunks, so that a switch can come between the
// interpreter's rounds (all the loop's threads in one step) and the compiled
// loop then takes them a window at a time.
const char* kLoop = R"(func main(n: i64, x: f64) -> (i64, f64) {
  steps = 0
  while n != 1 {
    if n % 2 == 0 {
      n = n / 2
    } else {
      n = 3 * n + 1
    }
    x = x * 1.0001 + 0.5
    steps += 1
  }
  return steps, x
}
)";

// A loop that can fail (dense chunks): threads whose d reaches 0 divide by
// zero, recorded with --on-error record.
const char* kFailingLoop = R"(func main(d: i64, n: i64) -> i64 {
  acc = 0
  while n > 0 {
    acc = acc + 1000 / d
    d = d - 1
    n = n - 1
  }
  return acc
}
)";

// Recursion: blocks compiled whole, chained under the persistent schedule.
const char* kRecursion = R"(func fib(n: i64, x: f64) -> (i64, f64) {
  if n <= 1 {
    return 1, x
  }
  a, y = fib(n - 1, x * 0.5)
  b, z = fib(n - 2, x + 1.0)
  return a + b, y + z
}
)";

struct Case {
  const char* name;
  Prog prog;
  bool record = false;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"loop", load(kLoop, inputs(
                                         "n", "x", 600, [](int i) { return 1 + (i * 37) % 97; },
                                         [](int i) { return i % 5; }))});
  out.push_back({"failing loop",
                 load(kFailingLoop, inputs(
                                        "d", "n", 300, [](int i) { return 1 + i % 37; },
                                        [](int i) { return i % 31; })),
                 true});
  out.push_back({"recursion", load(kRecursion, inputs(
                                                   "n", "x", 300, [](int i) { return i % 15; },
                                                   [](int i) { return i % 3; }))});
  const std::string dir = std::string(AUTOBATCH_SOURCE_DIR) + "/programs/";
  out.push_back({"nuts", load(read(dir + "nuts.ab"), read(dir + "nuts.json"), "main")});
  return out;
}

}  // namespace

TEST_CASE("tiered: a switch at any step gives the outputs of --jit off, in every compiled mode") {
  for (Case& c : cases()) {
    for (bool persistent : {true, false}) {
      CAPTURE(c.name);
      CAPTURE(persistent);
      RunOptions off;
      off.jit = false;
      off.persistent = persistent;
      off.record_errors = c.record;
      const RunResult want = stack(c.prog, off);
      REQUIRE(want.steps > 20);
      if (c.record) CHECK(!want.failed.empty());
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}, want.steps / 3,
                        want.steps / 2, want.steps - 1, want.steps, want.steps + 10}) {
        CAPTURE(k);
        RunOptions o = off;
        o.jit = true;
        o.jit_wait = false;
        o.jit_switch_at = k;
        const RunResult r = stack(c.prog, o);
        same_outputs(r, want);
        if (!jit::available()) continue;
        // The switch comes at step k exactly (the run interpreted until then
        // runs the steps of --jit off), or never if the run ends first.
        CHECK(switched_at(r) == (k < want.steps ? k : -1));
        if (k < want.steps) CHECK(has(r.log, "in use from step " + std::to_string(k)));
        // The plan's modes are reported, whether or not they were reached.
        int compiled = 0;
        for (const auto& e : r.execution) compiled += e.mode != "interpreted";
        CHECK(compiled > 0);
      }
    }
  }
}

TEST_CASE("tiered: runs that count steps compile first; the switch leaves --lanes alone") {
  Prog p = load(kLoop, inputs(
                           "n", "x", 300, [](int i) { return 1 + (i * 13) % 71; },
                           [](int i) { return i % 7; }));
  RunOptions off;
  off.jit = false;
  const RunResult want = stack(p, off);
  RunOptions o;
  o.jit_wait = false;
  o.jit_switch_at = 5;
  // --max-steps: compiled before the run, whatever jit_wait says.
  o.max_steps = 1000000;
  auto said = [](const RunResult& r, const std::string& flag) {
    int n = 0;
    for (const auto& e : r.execution)
      n += has(e.reason, "compiled before the run, which counts its steps (" + flag + ")");
    return n;
  };
  RunResult r = stack(p, o);
  same_outputs(r, want);
  CHECK(switched_at(r) == -2);
  if (jit::available()) CHECK(said(r, "--max-steps") > 0);
  // Statistics: the same.
  Stats st;
  o.max_steps = 0;
  o.stats = &st;
  r = stack(p, o);
  same_outputs(r, want);
  CHECK(switched_at(r) == -2);
  if (jit::available()) CHECK(said(r, "--stats") > 0);
  // Streaming lanes, switched mid-run.
  o.stats = nullptr;
  o.lanes = 37;
  r = stack(p, o);
  same_outputs(r, want);
  if (jit::available()) CHECK(switched_at(r) == 5);
}

TEST_CASE("tiered: a run does not wait for a held compilation; the next takes it from the cache") {
  if (!jit::available()) return;
  // A program of its own (no other test compiles this code).
  Prog p = load(R"(func main(n: i64, x: f64) -> f64 {
  while n > 0 {
    x = x * 0.99991 + 7919.25
    n = n - 1
  }
  return x
}
)",
                inputs(
                    "n", "x", 50, [](int i) { return i * 3; }, [](int i) { return i; }));
  RunOptions off;
  off.jit = false;
  const RunResult want = stack(p, off);
  RunOptions o;
  o.jit_wait = false;
  {
    Hold hold;
    // The compiler cannot start: the run finishes interpreted all the same.
    const RunResult r = stack(p, o);
    same_outputs(r, want);
    CHECK(switched_at(r) == -1);
    CHECK(has(r.log, "before the code was ready"));
    CHECK(jit::compiling());
    // Another run of the same code shares the queued compilation.
    const RunResult again = stack(p, o);
    same_outputs(again, want);
    CHECK(switched_at(again) == -1);
  }
  jit::wait_idle();
  CHECK_FALSE(jit::compiling());
  // The code went into the cache: the next run has it before its first step.
  const RunResult r = stack(p, o);
  same_outputs(r, want);
  CHECK(switched_at(r) == -2);
  CHECK(has(r.log, "cached"));
  for (const auto& e : r.execution) CHECK_FALSE(has(e.reason, "background"));
}

TEST_CASE("tiered: a Program run again uses the code its first run left compiling") {
  if (!jit::available()) return;
  auto p = autobatch::compile(R"(func main(n: i64) -> i64 {
  s = 0
  while n > 0 {
    s = s + n * 104729 % 13
    n = n - 1
  }
  return s
}
)");
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> n{5, 0, 17, 3, 40, 2};
  autobatch::RunOptions o;
  o.threads = 1;
  std::vector<int64_t> first;
  {
    Hold hold;
    auto r = p->run({autobatch::ArrayView::of(n.data(), 6)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    first.assign(r.outputs[0].as<int64_t>(), r.outputs[0].as<int64_t>() + 6);
    bool throughout = false;
    for (const auto& e : r.execution) throughout = throughout || has(e.reason, "throughout");
    CHECK(throughout);
    CHECK(autobatch::compiling_in_background());
  }
  jit::wait_idle();
  CHECK_FALSE(autobatch::compiling_in_background());
  auto r = p->run({autobatch::ArrayView::of(n.data(), 6)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(std::vector<int64_t>(r.outputs[0].as<int64_t>(), r.outputs[0].as<int64_t>() + 6) == first);
  int compiled = 0;
  for (const auto& e : r.execution) {
    CHECK_FALSE(has(e.reason, "background"));
    compiled += e.mode != "interpreted";
  }
  CHECK(compiled > 0);
  // jit_wait compiles first (here: from the cache) and so does a run with
  // statistics; both report no tiering.
  o.jit_wait = true;
  r = p->run({autobatch::ArrayView::of(n.data(), 6)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  for (const auto& e : r.execution) CHECK_FALSE(has(e.reason, "background"));
}

TEST_CASE("tiered: the CLI does not wait for a compilation still running when its run ends") {
  if (!jit::available()) return;
  const auto root = ab_test::fs::path(AUTOBATCH_SOURCE_DIR);
  const std::vector<std::string> run = {"run", "programs/nuts.ab", "--inputs",
                                        "programs/nuts.json"};
  // Each background compilation takes 60 s longer: the run ends long before.
  ::setenv("AUTOBATCH_JIT_DELAY_MS", "60000", 1);
  ab_test::Proc tiered = ab_test::run_binary(root, run, std::nullopt, 30);
  auto waited = run;
  waited.insert(waited.end(), {"--jit", "wait"});  // compiles on its own thread: no delay
  ab_test::Proc wait = ab_test::run_binary(root, waited, std::nullopt, 30);
  ::unsetenv("AUTOBATCH_JIT_DELAY_MS");
  CHECK_FALSE(tiered.timed_out);
  CHECK(tiered.code == 0);
  CHECK(tiered.seconds < 20);
  CHECK(tiered.err.empty());
  CHECK(wait.code == 0);
  CHECK(tiered.out == wait.out);
  CHECK(has(tiered.out, "\"outputs\""));
}

TEST_CASE("tiered: a Program may go away while its code compiles; the code still lands") {
  if (!jit::available()) return;
  const char* text = R"(func main(n: i64) -> i64 {
  s = 0
  while n > 0 {
    s = s + n * 7727 % 17
    n = n - 1
  }
  return s
}
)";
  std::vector<int64_t> n{9, 1, 30};
  autobatch::RunOptions o;
  o.threads = 1;
  std::vector<int64_t> first;
  {
    Hold hold;
    auto p = autobatch::compile(text);
    REQUIRE_MESSAGE(p, p.rendered());
    auto r = p->run({autobatch::ArrayView::of(n.data(), 3)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    first.assign(r.outputs[0].as<int64_t>(), r.outputs[0].as<int64_t>() + 3);
    CHECK(autobatch::compiling_in_background());
  }  // the Program and its run are gone before the compilation starts
  jit::wait_idle();
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  auto r = p->run({autobatch::ArrayView::of(n.data(), 3)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(std::vector<int64_t>(r.outputs[0].as<int64_t>(), r.outputs[0].as<int64_t>() + 3) == first);
  // A new Program of the same text finds the code: nothing interpreted for lack of it.
  for (const auto& e : r.execution) CHECK_FALSE(has(e.reason, "background"));
}
