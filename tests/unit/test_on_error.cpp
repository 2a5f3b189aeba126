// --on-error record and --max-steps (docs/language.md, "Runtime errors"), through the public API,
// in every VM configuration: the stack VM (JIT on and off, both schedules), the
// stackless VM, the reference interpreter, and the lowered program under the
// stack VM and the lowered reference; each with refill lanes and with
// --threads shards. A thread that fails stops; the others must give exactly
// the outputs they give when run alone, and the failed ones are listed.
#include <doctest/doctest.h>

#include "on_error_program.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

using autobatch::ArrayView;
using autobatch::OnError;
using autobatch::Program;
using autobatch::RunOptions;
using autobatch::RunResult;

// Threads fail deep in a recursion (pending returns up the stack), in a loop
// (a persistent loop block), or not at all; results of two dtypes.
const char* kFail = kOnErrorProgram;

// One VM configuration: the program (source or lowered) and the options.
struct Config {
  std::string name;
  bool lowered = false;
  RunOptions options;
};

std::vector<Config> configs() {
  std::vector<Config> out;
  auto add = [&](std::string name, bool lowered, std::string vm, bool jit, std::string schedule) {
    for (int64_t lanes : {0, 1, 2}) {
      for (int threads : {1, 3}) {
        Config c;
        c.name = name + " lanes=" + std::to_string(lanes) + " threads=" + std::to_string(threads);
        c.lowered = lowered;
        c.options.vm = vm;
        c.options.jit = jit;
        c.options.schedule = schedule;
        c.options.lanes = lanes;
        c.options.threads = threads;
        out.push_back(c);
      }
    }
  };
  add("stack", false, "stack", true, "persistent");
  add("stack jit=off", false, "stack", false, "persistent");
  add("stack min-pc", false, "stack", true, "min-pc");
  add("stackless", false, "stackless", true, "persistent");
  add("reference", false, "reference", true, "persistent");
  add("lowered stack", true, "stack", true, "persistent");
  add("lowered reference", true, "reference", true, "persistent");
  return out;
}

Program compiled(const std::string& text, bool lowered) {
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p.ok(), p.rendered());
  if (!lowered) return *p;
  auto low = p->lower();
  REQUIRE_MESSAGE(low.ok(), low.rendered());
  auto q = autobatch::compile(*low);
  REQUIRE_MESSAGE(q.ok(), q.rendered());
  return *q;
}

std::vector<int64_t> i64s(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::I64);
  return std::vector<int64_t>(a.as<int64_t>(), a.as<int64_t>() + a.num_elements());
}

std::vector<double> f64s(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::F64);
  return std::vector<double>(a.as<double>(), a.as<double>() + a.num_elements());
}

// The reference interpreter on one thread alone (abort mode): its outputs.
RunResult alone(const Program& p, int64_t n, int64_t d) {
  RunOptions o;
  o.vm = "reference";
  RunResult r = p.run({ArrayView::of(&n, 1), ArrayView::of(&d, 1)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  return r;
}

}  // namespace

TEST_CASE("on-error record: division by zero in threads 1 and 3 of 6, in every VM") {
  // Thread 1 fails three calls deep in `down` (100 / (2 - 2)); thread 3 in
  // main's loop (60 / (6 + 1 - 7)).
  const std::vector<int64_t> n = {3, 4, 2, 5, 1, 3};
  const std::vector<int64_t> d = {10, 2, 20, 6, 11, 12};
  const Program source = compiled(kFail, false);
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    const Program p = c.lowered ? compiled(kFail, true) : source;
    RunOptions o = c.options;
    o.on_error = OnError::Record;
    RunResult r = p.run({ArrayView::of(n.data(), 6), ArrayView::of(d.data(), 6)}, o);
    REQUIRE_MESSAGE(r.diagnostics.empty(), r.rendered());
    REQUIRE_FALSE(r.runtime_error);
    CHECK_FALSE(r.ok());
    CHECK(r.recorded);
    REQUIRE(r.outputs.size() == 2);
    const auto s = i64s(r.outputs[0]);
    const auto h = f64s(r.outputs[1]);
    for (int64_t t : {0, 2, 4, 5}) {
      CAPTURE(t);
      RunResult one = alone(source, n[t], d[t]);
      CHECK(s[t] == i64s(one.outputs[0])[0]);
      CHECK(h[t] == f64s(one.outputs[1])[0]);
    }
    CHECK(s[1] == 0);
    CHECK(s[3] == 0);
    CHECK(std::isnan(h[1]));
    CHECK(std::isnan(h[3]));
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].thread == 1);
    CHECK(r.errors[1].thread == 3);
    CHECK(r.errors[0].error.message == "integer division by zero");
    CHECK(r.errors[0].error.function == "down");
    CHECK(r.errors[1].error.function == "main");
    CHECK(r.errors[0].error.thread == 1);
    CHECK(r.errors[0].error.batch == 6);
    if (!c.lowered) {
      CHECK(r.errors[0].message.rfind("<input>:16:7: integer division by zero (function down", 0) ==
            0);
      CHECK(r.errors[1].message.rfind("<input>:6:13: integer division by zero (function main", 0) ==
            0);
    }
    CHECK(r.errors[0].error.rendered.find("runtime error: integer division by zero in thread 1 "
                                          "of 6") != std::string::npos);
    // The JSON: outputs, then the errors.
    const std::string json = r.json();
    CHECK(json.find("{\"outputs\": [[") == 0);
    CHECK(json.find("\"errors\": [{\"thread\": 1, \"message\": ") != std::string::npos);
    CHECK(json.find("{\"thread\": 3, \"message\": ") != std::string::npos);

    // The default stays abort: no outputs, the first failing thread.
    RunResult a = p.run({ArrayView::of(n.data(), 6), ArrayView::of(d.data(), 6)}, c.options);
    REQUIRE(a.runtime_error);
    CHECK(a.outputs.empty());
    CHECK(a.errors.empty());
    CHECK_FALSE(a.recorded);
  }
}

TEST_CASE("on-error record: no failure gives every output, an empty list and ok()") {
  const std::vector<int64_t> n = {3, 2, 1};
  const std::vector<int64_t> d = {10, 20, 11};
  const Program p = compiled(kFail, false);
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    RunOptions o;
    o.vm = vm;
    o.on_error = OnError::Record;
    RunResult r = p.run({ArrayView::of(n.data(), 3), ArrayView::of(d.data(), 3)}, o);
    CHECK(r.ok());
    CHECK(r.errors.empty());
    CHECK(r.json().find("\"errors\": []") != std::string::npos);
    for (int t = 0; t < 3; ++t)
      CHECK(i64s(r.outputs[0])[t] == i64s(alone(p, n[t], d[t]).outputs[0])[0]);
  }
}

TEST_CASE("on-error record: a failing lane of a batched kernel leaves the other lanes intact") {
  // Vectors (events of 3 elements) updated in a loop: thread t's vector has
  // a zero divisor element in some threads only, at different iterations;
  // `get` out of range fails others. Every VM must give each surviving
  // thread exactly its value alone.
  const char* text = R"(# entry: main
func main(a: i64[3], b: i64[3], k: i64) -> (i64[3], i64) {
  i = 0
  while i < 4 {
    a = a + 100 / (b - i)
    i = i + 1
  }
  return a, a[k]
}
)";
  const int64_t B = 40;
  std::vector<int64_t> a(B * 3), b(B * 3), k(B);
  for (int64_t t = 0; t < B; ++t) {
    for (int j = 0; j < 3; ++j) {
      a[t * 3 + j] = t * 7 + j;
      b[t * 3 + j] = (t % 5 == 1) ? j + 1 : 5 + (t + j) % 4;  // 1, 2, 3: hit at i = 1..3
    }
    k[t] = (t % 7 == 3) ? 3 : t % 3;  // 3 is out of range
  }
  std::vector<int64_t> failing;
  for (int64_t t = 0; t < B; ++t)
    if (t % 5 == 1 || t % 7 == 3) failing.push_back(t);
  const Program source = compiled(text, false);
  // Each thread alone, under the reference (abort: fails or not).
  std::vector<std::vector<int64_t>> want(B);
  for (int64_t t = 0; t < B; ++t) {
    RunOptions o;
    o.vm = "reference";
    RunResult r = source.run({ArrayView::of(&a[t * 3], 1, {3}), ArrayView::of(&b[t * 3], 1, {3}),
                              ArrayView::of(&k[t], 1)},
                             o);
    bool fails = std::find(failing.begin(), failing.end(), t) != failing.end();
    REQUIRE(bool(r.runtime_error) == fails);
    if (!fails) {
      want[t] = i64s(r.outputs[0]);
      want[t].push_back(i64s(r.outputs[1])[0]);
    }
  }
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    const Program p = c.lowered ? compiled(text, true) : source;
    RunOptions o = c.options;
    o.on_error = OnError::Record;
    RunResult r = p.run({ArrayView::of(a.data(), B, {3}), ArrayView::of(b.data(), B, {3}),
                         ArrayView::of(k.data(), B)},
                        o);
    REQUIRE_MESSAGE(r.diagnostics.empty(), r.rendered());
    REQUIRE_FALSE(r.runtime_error);
    std::vector<int64_t> threads;
    for (const auto& e : r.errors) threads.push_back(e.thread);
    CHECK(threads == failing);
    const auto v = i64s(r.outputs[0]);
    const auto x = i64s(r.outputs[1]);
    for (int64_t t = 0; t < B; ++t) {
      CAPTURE(t);
      if (want[t].empty()) {
        CHECK(v[t * 3] == 0);
        CHECK(x[t] == 0);
        continue;
      }
      CHECK(std::vector<int64_t>(v.begin() + t * 3, v.begin() + t * 3 + 3) ==
            std::vector<int64_t>(want[t].begin(), want[t].begin() + 3));
      CHECK(x[t] == want[t][3]);
    }
  }
}

TEST_CASE("on-error record: an operation on shared values fails every thread that reaches it") {
  // zero is shared (a literal): 1 / zero fails wherever it runs.
  const char* text = R"(# entry: main
func main(n: i64) -> i64 {
  zero = 0
  if n > 2 {
    n = 1 / zero
  }
  return n
}
)";
  const std::vector<int64_t> n = {1, 5, 2, 7};
  const Program p = compiled(text, false);
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    RunOptions o;
    o.vm = vm;
    o.on_error = OnError::Record;
    RunResult r = p.run({ArrayView::of(n.data(), 4)}, o);
    REQUIRE_FALSE(r.runtime_error);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].thread == 1);
    CHECK(r.errors[1].thread == 3);
    CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{1, 0, 2, 0});
  }
}

TEST_CASE("on-error record: threads over --max-stack-depth fail, the others finish") {
  const char* text = R"(# entry: down
func down(n: i64) -> i64 {
  if n <= 0 {
    return 0
  }
  return down(n - 1) + 1
}
)";
  const std::vector<int64_t> n = {5, 320, 10, 400, 3};
  const Program p = compiled(text, false);
  // Bound 20: the threads reach it in the stack VM's compiled call block
  // (its code reads the first 256 levels in place), which hands the chunk
  // back; bound 300: in the interpreter, past those levels.
  for (int bound : {300, 20}) {
    for (const char* vm : {"stack", "stackless", "reference"}) {
      CAPTURE(bound);
      CAPTURE(vm);
      RunOptions o;
      o.vm = vm;
      o.max_stack_depth = bound;
      o.on_error = OnError::Record;
      RunResult r = p.run({ArrayView::of(n.data(), 5)}, o);
      REQUIRE_FALSE(r.runtime_error);
      REQUIRE(r.errors.size() == 2);
      CHECK(r.errors[0].thread == 1);
      CHECK(r.errors[1].thread == 3);
      CHECK(r.errors[0].error.message.find("stack depth limit of " + std::to_string(bound)) == 0);
      CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{5, 0, 10, 0, 3});
    }
  }
}

TEST_CASE("on-error record: at --max-stack-depth one thread fails, one a frame short goes on") {
  // Thread 1 enters `down` through `wrap`, one frame deeper than thread 0,
  // and the schedule runs their calls in the same steps: thread 1 exceeds
  // the bound in the step where thread 0 makes its last call, which must
  // push exactly one frame (the stack VM pushes the step's frames, then
  // takes them back when one is over the bound).
  const char* text = R"(# entry: main
func down(n: i64) -> i64 {
  if n <= 0 {
    return 0
  }
  return down(n - 1) + 1
}
func wrap(n: i64) -> i64 {
  return down(n) + 100
}
func main(n: i64, extra: i64) -> i64 {
  if extra > 0 {
    return wrap(n)
  }
  return down(n)
}
)";
  const std::vector<int64_t> n = {18, 30, 5}, extra = {0, 1, 1};
  const Program p = compiled(text, false);
  for (const char* vm : {"stack", "stackless", "reference"}) {
    for (bool jit : {true, false}) {
      CAPTURE(vm);
      CAPTURE(jit);
      RunOptions o;
      o.vm = vm;
      o.jit = jit;
      o.max_stack_depth = 20;
      o.on_error = OnError::Record;
      RunResult r = p.run({ArrayView::of(n.data(), 3), ArrayView::of(extra.data(), 3)}, o);
      REQUIRE_FALSE(r.runtime_error);
      REQUIRE(r.errors.size() == 1);
      CHECK(r.errors[0].thread == 1);
      CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{18, 0, 105});
    }
  }
}

TEST_CASE("--max-steps counts the blocks of each thread, the same in every VM") {
  // A loop that calls a function: per iteration the thread starts the loop
  // test, the body, the callee's block and the body's continuation after
  // the call. The loop test divides (an operation that may fail), so
  // if-conversion merges no block: the compiled program starts the same
  // blocks as the source.
  const char* text = R"(# entry: main
func main(n: i64) -> i64 {
  s = 0
  while 2 * n / (n + 1) > 0 {
    s = s + twice(n)
    n = n - 1
  }
  return s
}

func twice(x: i64) -> i64 {
  return x + x
}
)";
  const Program source = compiled(text, false);
  // The least bound under which thread n alone passes, found under the reference.
  auto passes = [&](const Program& p, RunOptions o, int64_t n, int64_t bound) {
    o.max_steps = bound;
    RunResult r = p.run({ArrayView::of(&n, 1)}, o);
    if (r.runtime_error)
      CHECK(r.runtime_error->message == "--max-steps " + std::to_string(bound) + " exceeded");
    return r.ok();
  };
  RunOptions ref;
  ref.vm = "reference";
  std::vector<int64_t> need;
  for (int64_t n : {0, 1, 5, 9}) {
    int64_t m = 1;
    while (!passes(source, ref, n, m)) ++m;
    need.push_back(m);
  }
  CHECK(need[0] < need[1]);
  CHECK(need[2] - need[1] == need[3] - need[2]);  // the same blocks per iteration
  const std::vector<int64_t> ns = {0, 1, 5, 9};
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    const Program p = c.lowered ? compiled(text, true) : source;
    for (size_t i = 0; i < ns.size(); ++i) {
      CAPTURE(ns[i]);
      CHECK(passes(p, c.options, ns[i], need[i]));
      CHECK_FALSE(passes(p, c.options, ns[i], need[i] - 1));
    }
    // A batch: the bound is per thread (a batch of many threads passes where
    // one thread does), and under record only the threads over it fail.
    RunOptions o = c.options;
    o.max_steps = need[2];
    o.on_error = OnError::Record;
    std::vector<int64_t> batch = {9, 5, 1, 0, 9, 5, 5, 9};
    RunResult r = p.run({ArrayView::of(batch.data(), 8)}, o);
    REQUIRE_FALSE(r.runtime_error);
    std::vector<int64_t> failed;
    for (const auto& e : r.errors) failed.push_back(e.thread);
    CHECK(failed == std::vector<int64_t>{0, 4, 7});
    CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{0, 30, 2, 0, 0, 30, 30, 0});
    // Abort: the run stops at a thread over the bound.
    o.on_error = OnError::Abort;
    RunResult a = p.run({ArrayView::of(batch.data(), 8)}, o);
    REQUIRE(a.runtime_error);
    CHECK(a.runtime_error->message == "--max-steps " + std::to_string(need[2]) + " exceeded");
    CHECK((a.runtime_error->thread == 0 || a.runtime_error->thread == 4 ||
           a.runtime_error->thread == 7));
  }
}
