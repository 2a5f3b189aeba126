// The progress(n) primitive (ops.def: effects thread and progress): it
// returns n, and a run with RunOptions::thread_progress sees each thread's
// latest n in its slot, the same under every VM (the stack VM interpreted and
// with the JIT, whose compiled blocks call its kernel; the stackless VM; the
// reference interpreter; a lowered program), lanes and OS threads. A call in
// a branch is never run for threads that did not take the branch, and a
// call whose result is not read still reports. The type rule and `ops`.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

// Thread t loops t % 7 times; even threads report each iteration inside a
// branch (the result unread), odd threads report only after the loop, 100
// plus their count, through the result (returned).
const char* kProgram = R"(func main(n: i64) {
  t = thread_index()
  k = 0
  while k < n % 7 {
    k += 1
    if t % 2 == 0 {
      progress(k)
    }
  }
  r = 0
  if t % 2 == 1 {
    r = progress(100 + k)
  }
  return r, k
}
)";

struct Case {
  std::string vm;
  bool jit = true;
  int threads = 1;
  int64_t lanes = 0;
};

}  // namespace

TEST_CASE("progress: every VM fills the side table and returns n") {
  auto p = autobatch::compile(kProgram);
  REQUIRE_MESSAGE(p, p.rendered());
  auto lowered_text = p->lower();
  REQUIRE(lowered_text);
  auto lowered = autobatch::compile(*lowered_text);
  REQUIRE_MESSAGE(lowered, lowered.rendered());
  const int64_t B = 600;  // two shards on two OS threads
  std::vector<int64_t> n(B);
  for (int64_t t = 0; t < B; ++t) n[t] = t;
  std::vector<int64_t> want(B);
  for (int64_t t = 0; t < B; ++t) want[t] = t % 2 == 0 ? (t % 7 == 0 ? -1 : t % 7) : 100 + t % 7;
  const std::vector<Case> cases = {
      {"stack", true},        {"stack", false},        {"stack", true, 2},
      {"stack", true, 1, 5},  {"stackless", true},     {"stackless", true, 2, 3},
      {"reference", true},    {"reference", true, 2},
  };
  for (int lower = 0; lower < 2; ++lower)
    for (const Case& c : cases) {
      if (lower && c.vm == "stackless") continue;  // a lowered program runs on the other two
      CAPTURE(lower);
      CAPTURE(c.vm);
      CAPTURE(c.jit);
      CAPTURE(c.threads);
      CAPTURE(c.lanes);
      std::vector<std::atomic<int64_t>> table(B);
      for (auto& s : table) s.store(-1);
      autobatch::RunOptions o;
      o.vm = c.vm;
      o.jit = c.jit;
      o.jit_wait = true;
      o.threads = c.threads;
      o.lanes = c.lanes;
      o.thread_progress = table.data();
      const autobatch::Program& prog = lower ? *lowered : *p;
      autobatch::RunResult r = prog.run({autobatch::ArrayView::of(n.data(), B)}, o);
      REQUIRE_MESSAGE(r.ok(), r.rendered());
      REQUIRE(r.outputs.size() == 2);
      const int64_t* ret = r.outputs[0].as<int64_t>();
      const int64_t* k = r.outputs[1].as<int64_t>();
      int wrong = 0;
      for (int64_t t = 0; t < B; ++t) {
        wrong += table[t].load() != want[t];
        wrong += ret[t] != (t % 2 == 1 ? 100 + t % 7 : 0);
        wrong += k[t] != t % 7;
      }
      CHECK(wrong == 0);
      // Without a table: the same outputs.
      o.thread_progress = nullptr;
      autobatch::RunResult plain = prog.run({autobatch::ArrayView::of(n.data(), B)}, o);
      REQUIRE(plain.ok());
      CHECK(plain.json(false) == r.json(false));
    }
}

TEST_CASE("progress: a run's table is indexed from its first thread") {
  auto p = autobatch::compile("func main(x: i64) {\n  return progress(x + thread_index())\n}\n");
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> x = {10, 20, 30};
  std::vector<std::atomic<int64_t>> table(3);
  for (auto& s : table) s.store(0);
  autobatch::RunOptions o;
  o.first_thread = 40;
  o.thread_progress = table.data();
  auto r = p->run({autobatch::ArrayView::of(x.data(), 3)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(table[0].load() == 50);
  CHECK(table[1].load() == 61);
  CHECK(table[2].load() == 72);
}

TEST_CASE("progress: an i64 scalar only, and `ops` says what it does") {
  auto bad = autobatch::compile("func main(x) {\n  return progress(x)\n}\n");
  REQUIRE_MESSAGE(bad, bad.rendered());
  double x = 1.5;
  auto r = bad->run({autobatch::ArrayView::of(&x, 1)});
  CHECK_FALSE(r.ok());
  CHECK(r.rendered().find("'progress' takes an i64 scalar (an iteration, say), got f64") !=
        std::string::npos);
  bool found = false;
  for (const auto& op : autobatch::ops()) {
    if (op.name != "progress") continue;
    found = true;
    CHECK(op.effects == "thread,progress");
    CHECK(op.speculate == "never");
    CHECK(op.compiles == "none");
  }
  CHECK(found);
}
