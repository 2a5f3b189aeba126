// The stack VM's execution planner (src/vm/stack/plan.h): the cost rule on
// made-up block facts, and the modes real programs get, read from the
// public API's RunResult::execution and --stats's "execution" (not from the
// -v log).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "autobatch/autobatch.h"
#include "support/env_options.h"
#include "vm/jit/jit.h"
#include "vm/stack/plan.h"

namespace {

using ab::stack::BlockFacts;
using ab::stack::ExecMode;
using ab::stack::plan_blocks;
using ab::stack::PlanOptions;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

BlockFacts loop_body(bool fails) {
  BlockFacts f;
  f.ops = 7;
  f.loop = true;
  f.dense_form = true;
  f.dense_fails = fails;
  f.dense_fail_op = fails ? "div" : "";
  f.dense_copies = fails ? 1 : 4;
  f.segments = 1;
  f.segment_ops = 6;
  return f;
}

BlockFacts whole_body() {
  BlockFacts f;
  f.ops = 4;
  f.whole_form = true;
  f.segments = 1;
  f.segment_ops = 4;
  return f;
}

autobatch::Program load(const char* name, const char* entry) {
  autobatch::CompileOptions co;
  co.entry = entry;
  auto p = autobatch::compile_file(std::string(AUTOBATCH_SOURCE_DIR) + "/programs/" + name, co);
  REQUIRE_MESSAGE(p, p.rendered());
  return std::move(*p);
}

autobatch::RunResult run(const autobatch::Program& p, std::vector<int64_t> n,
                         autobatch::RunOptions o = {}) {
  o.threads = 1;
  auto r = p.run({autobatch::ArrayView::of(n.data(), static_cast<int64_t>(n.size()))}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  return r;
}

int count(const autobatch::RunResult& r, const std::string& mode) {
  int k = 0;
  for (const auto& e : r.execution) k += e.mode == mode;
  return k;
}

// Blocks with no instruction (their terminator moves the threads on):
// interpreted, with nothing to compile.
int count_empty(const autobatch::RunResult& r) {
  int n = 0;
  for (const auto& e : r.execution) n += e.mode == "interpreted" && has(e.reason, "no instructions");
  return n;
}

}  // namespace

TEST_CASE("plan: the cost rule on block facts") {
  PlanOptions o;
  o.calls = true;
  std::vector<BlockFacts> facts{loop_body(false), loop_body(true), whole_body(), BlockFacts{}};
  facts[3].ops = 2;
  facts[3].not_compiled = "op 'matmul' on tensors is not compiled";
  auto p = plan_blocks(facts, o);
  CHECK(p[0].mode == ExecMode::DenseLoop);
  CHECK(has(p[0].reason, "4 iterations per call"));
  CHECK(p[1].mode == ExecMode::DenseChunks);
  CHECK(has(p[1].reason, "'div' can fail"));
  CHECK(p[2].mode == ExecMode::Chained);
  CHECK(p[3].mode == ExecMode::Interpreted);
  CHECK(has(p[3].reason, "'matmul' on tensors"));

  // --stats changes nothing; traced runs are not chained; --max-steps keeps
  // loops off the dense form.
  o.stats = true;
  auto counted = plan_blocks(facts, o);
  for (size_t b = 0; b < p.size(); ++b) {
    CHECK(counted[b].mode == p[b].mode);
    CHECK(counted[b].reason == p[b].reason);
  }
  o.stats = false;
  o.traced = true;
  p = plan_blocks(facts, o);
  CHECK(p[2].mode == ExecMode::WholeBlock);
  CHECK(has(p[2].reason, "traced"));
  o.traced = false;
  o.max_steps = 100;
  p = plan_blocks(facts, o);
  CHECK(p[0].mode == ExecMode::Segments);
  CHECK(has(p[0].reason, "--max-steps"));
  CHECK(p[2].mode == ExecMode::WholeBlock);

  // Without calls no block is compiled whole; min-pc loops are not dense.
  o = PlanOptions{};
  o.persistent = false;
  p = plan_blocks(facts, o);
  CHECK(p[0].mode == ExecMode::Segments);
  CHECK(p[2].mode == ExecMode::Segments);
  CHECK(has(p[2].reason, "only in programs with calls"));

  // No JIT: everything op at a time, with the reason.
  o = PlanOptions{};
  o.jit = false;
  for (const auto& b : plan_blocks(facts, o)) {
    CHECK(b.mode == ExecMode::Interpreted);
    CHECK(has(b.reason, "--jit off"));
  }
  o.jit = true;
  o.jit_available = false;
  for (const auto& b : plan_blocks(facts, o)) CHECK(has(b.reason, "no JIT"));
}

TEST_CASE("plan: fib is chained, whole blocks with --stats, interpreted with --jit off") {
  auto p = load("fib.ab", "fib");
  auto r = run(p, {6, 7, 8, 7});
  REQUIRE(!r.execution.empty());
  for (const auto& e : r.execution) {
    CAPTURE(e.block);
    CAPTURE(e.reason);
    CHECK(!e.reason.empty());
    if (ab::jit::available())
      CHECK((e.mode == "chained" || (e.mode == "interpreted" && has(e.reason, "no instructions")) ||
             has(e.reason, "ends its threads")));
  }
  if (ab::jit::available()) CHECK(count(r, "chained") >= 3);

  autobatch::RunOptions o;
  o.stats = true;
  r = run(p, {6, 7, 8, 7}, o);
  REQUIRE(r.stats);
  // --stats changes nothing in the plan: chained, and the chain's work is
  // counted (as the reference counts it: every primitive once per thread).
  if (ab::jit::available()) CHECK(count(r, "chained") >= 3);
  {
    autobatch::RunOptions ro;
    ro.stats = true;
    ro.vm = "reference";
    auto rr = run(p, {6, 7, 8, 7}, ro);
    REQUIRE(rr.stats);
    CHECK(rr.stats->lane_operations == r.stats->lane_operations);
  }
  // --stats's JSON: one entry per block, as RunResult::execution.
  auto j = nlohmann::json::parse(r.stats->json());
  REQUIRE(j.contains("execution"));
  CHECK(j["execution"].size() == r.execution.size());
  CHECK(j["execution"].size() == j["block_executions"].size());
  for (const auto& e : r.execution) {
    CHECK(j["execution"][e.block]["mode"] == e.mode);
    CHECK(j["execution"][e.block]["reason"] == e.reason);
  }

  o = {};
  o.jit = false;
  r = run(p, {6, 7, 8, 7}, o);
  for (const auto& e : r.execution) {
    CHECK(e.mode == "interpreted");
    CHECK(has(e.reason, "--jit off"));
  }
}

TEST_CASE("plan: collatz's loop is a dense loop; other VMs interpret every block") {
  auto p = load("collatz.ab", "collatz_steps");
  auto r = run(p, {1, 6, 7, 27, 12});
  if (ab::jit::available()) {
    CHECK(count(r, "dense_loop") == 1);
    for (const auto& e : r.execution)
      if (e.mode == "dense_loop") CHECK(has(e.reason, "loop body"));
  }
  autobatch::RunOptions o;
  o.max_steps = 1000;
  r = run(p, {1, 6, 7, 27, 12}, o);
  CHECK(count(r, "dense_loop") == 0);
  o = {};
  o.schedule = "min-pc";
  r = run(p, {1, 6, 7, 27, 12}, o);
  CHECK(count(r, "dense_loop") == 0);
  for (const char* vm : {"stackless", "reference"}) {
    o = {};
    o.vm = vm;
    o.stats = true;
    r = run(p, {1, 6, 7, 27, 12}, o);
    REQUIRE(!r.execution.empty());
    REQUIRE(r.stats);
    CHECK(r.stats->execution.size() == r.execution.size());
    for (const auto& e : r.execution) {
      CHECK(e.mode == "interpreted");
      CHECK(has(e.reason, "every block"));
    }
  }
}

TEST_CASE("plan: nuts mixes the modes: whole blocks, segments with tensor ops and calls") {
  if (!ab::jit::available()) return;
  auto p = load("nuts.ab", "main");
  auto in = p.load_inputs({std::string(AUTOBATCH_SOURCE_DIR) + "/programs/nuts.json"});
  REQUIRE_MESSAGE(in, in.rendered());
  autobatch::RunOptions o;
  o.threads = 1;
  auto r = p.run(*in, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  auto mode = [&](const std::string& block) {
    for (const auto& e : r.execution)
      if (e.block == block) return e.mode;
    return std::string();
  };
  // The tree's recursion: the blocks of scalar ops are compiled whole (its
  // unpacking of the shared `target` computed before the run), but not
  // chained: the recursion also runs blocks of matrix and vector ops,
  // compiled as segments (vector ops inline, the matrix product called as
  // its batched kernel), where threads would leave the chain.
  CHECK(mode("build_tree.entry") == "whole_block");
  CHECK(mode("build_tree.second") == "whole_block");
  CHECK(mode("build_tree.leaf") == "whole_block");
  CHECK(mode("build_tree.leaf.2") == "segments");
  CHECK(mode("main.extended") == "segments");
  CHECK(mode("log_density.entry") == "segments");
  for (const auto& e : r.execution) {
    if (e.mode == "segments") CHECK(has(e.reason, "compiled"));
    if (e.mode == "whole_block") CHECK(has(e.reason, "not chained: block '"));
  }
  CHECK(count(r, "whole_block") >= 4);
  CHECK(count(r, "chained") == 0);
  CHECK(count(r, "segments") >= 6);
  CHECK(count(r, "interpreted") == count_empty(r));
  CHECK(count(r, "dense_loop") == 0);
}

// The chain's rule: chained only where threads stay in the chain.
// mergesort's recursion, tensor copies and all, compiles whole and is
// chained whole: the run is main's two steps. nqueens' place pushes its
// board (a tensor) across its recursive call, so the blocks around that
// call run as segments and place's scalar blocks are whole blocks, not
// chained.
TEST_CASE("plan: the chain only where the recursion's blocks are all compiled whole") {
  if (!ab::jit::available()) return;
  {
    auto p = load("mergesort.ab", "main");
    auto in = p.load_inputs({std::string(AUTOBATCH_SOURCE_DIR) + "/programs/mergesort.json"});
    REQUIRE_MESSAGE(in, in.rendered());
    autobatch::RunOptions o;
    o.threads = 1;
    o.stats = true;
    auto r = p.run(*in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    for (const auto& e : r.execution)
      if (e.block.rfind("sort.", 0) == 0 || e.block.rfind("merge.", 0) == 0) {
        CAPTURE(e.block);
        CHECK(e.mode == "chained");
      }
    REQUIRE(r.stats);
    CHECK(r.stats->steps <= 3);
  }
  auto p = load("nqueens.ab", "nqueens");
  auto in = p.load_inputs({std::string(AUTOBATCH_SOURCE_DIR) + "/programs/nqueens.json"});
  REQUIRE_MESSAGE(in, in.rendered());
  autobatch::RunOptions o;
  o.threads = 1;
  auto r = p.run(*in, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(count(r, "chained") == 0);
  CHECK(count(r, "whole_block") >= 4);
  for (const auto& e : r.execution)
    if (e.mode == "whole_block") {
      CAPTURE(e.reason);
      CHECK(has(e.reason, "not chained: block 'place."));
    }
  // The plan alone, on made-up facts: f (blocks 1-3) calls itself; block 3
  // is not compiled whole.
  std::vector<BlockFacts> f(4, whole_body());
  f[0].next = {};
  f[0].callee = 1;  // main: call f
  f[1].next = {2};
  f[2].next = {3};
  f[2].callee = 1;  // f calls f, returns to 3
  f[3].whole_form = false;
  f[3].whole_blocker = "op 'get' on tensors is compiled only in segments";
  for (size_t i = 0; i < f.size(); ++i) f[i].name = "b" + std::to_string(i);
  PlanOptions po;
  po.calls = true;
  auto plan = plan_blocks(f, po);
  CHECK(plan[1].mode == ExecMode::WholeBlock);
  CHECK(has(plan[1].reason, "block 'b3'"));
  CHECK(plan[3].mode == ExecMode::Segments);
  // Block 3 compiled whole too: the recursion stays in the chain; main's
  // block 0 is outside it but runs once per thread.
  f[3] = whole_body();
  f[0].whole_form = false;
  f[0].whole_blocker = "it ends its threads";
  plan = plan_blocks(f, po);
  CHECK(plan[1].mode == ExecMode::Chained);
  CHECK(plan[3].mode == ExecMode::Chained);
  CHECK(plan[0].mode == ExecMode::Segments);
}

TEST_CASE("plan: a block that computes a shared value chains; its value is computed once, early") {
  if (!ab::jit::available()) return;
  auto p = load("simpson.ab", "main");
  std::vector<double> a{0.0, 0.5, 1.0}, b{3.0, 2.0, 1.5}, tol{1e-8, 1e-6, 1e-10};
  std::vector<int64_t> depth{20};
  autobatch::RunOptions o;
  o.threads = 1;
  o.jit_wait = true;
  auto r = p.run({autobatch::ArrayView::of(a.data(), 3), autobatch::ArrayView::of(b.data(), 3),
                  autobatch::ArrayView::of(tol.data(), 3),
                  autobatch::ArrayView::of(depth.data(), 1)},
                 o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  for (const auto& e : r.execution) {
    CAPTURE(e.block);
    CAPTURE(e.reason);
    if (e.block == "adapt.entry.2") CHECK(e.mode == "chained");
    CHECK(!has(e.reason, "shared by every thread"));
  }
}

// A shared value whose computation fails is not computed early: the error
// comes only if a thread reaches it, as it did before, and names it.
TEST_CASE("plan: a shared value that fails is left to the threads that reach it") {
  auto p = autobatch::compile(R"(func g(n: i64, z: i64) -> i64 {
  if n < 0 {
    return 7 / z
  }
  if n <= 1 {
    return n
  }
  return g(n - 1, z) + 1
}
)");
  REQUIRE_MESSAGE(p, p.rendered());
  int64_t z[1] = {0};
  autobatch::RunOptions o;
  o.threads = 1;
  o.jit_wait = true;
  std::vector<int64_t> n{3, 4, 5};
  auto r = p->run({autobatch::ArrayView::of(n.data(), 3), autobatch::ArrayView::of(z, 1)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].as<int64_t>()[2] == 5);
  n = {3, -1, 5};
  r = p->run({autobatch::ArrayView::of(n.data(), 3), autobatch::ArrayView::of(z, 1)}, o);
  REQUIRE(r.runtime_error);
  CHECK(r.runtime_error->thread == 1);
  CHECK(has(r.runtime_error->rendered, "division by zero"));
}

// A segment that can fail saves, before it runs, only the values its rerun
// reads before writing them (here `a`, read and then overwritten; not `x`
// or `y`, written first): on a failed check they come back and the
// threads that did not fail get the same results.
TEST_CASE("plan: a failed segment reruns from the values it overwrote") {
  auto p = autobatch::compile(R"(func f(a: i64, b: i64) -> i64 {
  x = a + 1
  y = x * 2
  a = a + y
  q = 100 / b
  return a + q
}
)");
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> a(600), b(600);
  for (int64_t t = 0; t < 600; ++t) {
    a[t] = t;
    b[t] = t % 7 == 3 ? 0 : t % 5 + 1;
  }
  for (bool jit : {true, false}) {
    CAPTURE(jit);
    autobatch::RunOptions o;
    o.threads = 1;
    o.jit = jit;
    o.jit_wait = true;
    o.on_error = autobatch::OnError::Record;
    auto r = p->run(
        {autobatch::ArrayView::of(a.data(), 600), autobatch::ArrayView::of(b.data(), 600)}, o);
    REQUIRE_FALSE(r.runtime_error);
    CHECK(r.errors.size() == 86);  // t % 7 == 3 for t < 600
    const int64_t* got = r.outputs[0].as<int64_t>();
    for (int64_t t = 0; t < 600; ++t)
      if (b[t] != 0) {
        CAPTURE(t);
        CHECK(got[t] == t + 2 * (t + 1) + 100 / b[t]);
      }
  }
}

TEST_CASE("plan: the environment options reader") {
  // No variable set: every default.
  ab::EnvOptions none = ab::read_env_options([](const char*) -> const char* { return nullptr; });
  CHECK(none.coalesce);
  CHECK(none.jit_blocks);
  CHECK(none.jit_chain);
  CHECK_FALSE(none.jit_dump);
  CHECK(none.jit_light_cg == "none");
  CHECK(none.jit_light_pipeline.empty());
  CHECK_FALSE(none.mpi_launcher);
  ab::EnvOptions set = ab::read_env_options([](const char* n) -> const char* {
    const std::string name = n;
    if (name == "AUTOBATCH_COALESCE" || name == "AUTOBATCH_JIT_CHAIN") return "0";
    if (name == "AUTOBATCH_JIT_BLOCKS") return "1";  // only 0 turns it off
    if (name == "AUTOBATCH_JIT_DUMP") return "1";
    if (name == "AUTOBATCH_JIT_LIGHT_CG") return "less";
    if (name == "PMI_RANK") return "3";
    return nullptr;
  });
  CHECK_FALSE(set.coalesce);
  CHECK(set.jit_blocks);
  CHECK_FALSE(set.jit_chain);
  CHECK(set.jit_dump);
  CHECK(set.jit_light_cg == "less");
  CHECK(set.mpi_launcher);
}

TEST_CASE("plan: a loop body that can fail runs as dense chunks") {
  auto p = autobatch::compile(R"(func f(n: i64, d: i64) -> i64 {
  s = 0
  while n > 0 {
    s = s + 100 / d
    n = n - 1
  }
  return s
}
)");
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> n{3, 5, 0, 7}, d{1, 2, 3, 4};
  autobatch::RunOptions o;
  o.threads = 1;
  auto r =
      p->run({autobatch::ArrayView::of(n.data(), 4), autobatch::ArrayView::of(d.data(), 4)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  if (!ab::jit::available()) return;
  CHECK(count(r, "dense_chunks") == 1);
  for (const auto& e : r.execution)
    if (e.mode == "dense_chunks") CHECK(has(e.reason, "can fail"));
}

// Every loop compiles: the example programs that loop (on scalars, random
// numbers and integer division included, or on tensors, whose ops compile
// inline or call their batched kernels) run no block op at a time, and
// neither do those without loops whose blocks hold tensor ops.
TEST_CASE("plan: the example programs that loop run no block interpreted") {
  if (!ab::jit::available()) return;
  const char* programs[][2] = {
      {"random_walk", "walk"}, {"collatz", "collatz_steps"}, {"gcd", "gcd"},
      {"mandelbrot", "escape_time"}, {"straggler", "spin"}, {"spin", "spin"},
      {"sum_to", "sum_to"}, {"random_keys", "main"}, {"collatz_select", "collatz_steps"},
      {"deep_recursion", "tri"}, {"fib", "fib"}, {"terminators", "main"},
      {"nuts", "main"}, {"leapfrog", "main"}, {"leapfrog_matrix", "main"},
      {"power_iteration", "power"}, {"mergesort", "main"}, {"tree_eval", "main"},
      {"vectors", "main"}, {"birth_death", "main"}, {"reductions", "main"},
      {"nqueens", "nqueens"}, {"roots", "roots"}, {"linalg", "descend"}};
  for (const auto& prog : programs) {  // no structured binding: CAPTURE is a lambda (clang 15)
    const char* name = prog[0];
    const char* entry = prog[1];
    CAPTURE(name);
    autobatch::CompileOptions co;
    co.entry = entry;
    const std::string dir = std::string(AUTOBATCH_SOURCE_DIR) + "/programs/";
    auto p = autobatch::compile_file(dir + name + ".ab", co);
    REQUIRE_MESSAGE(p, p.rendered());
    auto in = p->load_inputs({dir + name + ".json"});
    REQUIRE_MESSAGE(in, in.rendered());
    autobatch::RunOptions o;
    o.threads = 1;
    auto r = p->run(*in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    REQUIRE(!r.execution.empty());
    for (const auto& e : r.execution) {
      CAPTURE(e.block);
      CAPTURE(e.reason);
      if (e.mode == "interpreted") CHECK(has(e.reason, "no instructions"));
    }
  }
}

TEST_CASE("ops: each primitive's effects, speculation and compilation") {
  std::map<std::string, autobatch::OpInfo> row;
  for (const auto& o : autobatch::ops()) row[o.name] = o;
  CHECK(row.at("add").effects == "pure");
  CHECK(row.at("add").speculate == "always");
  CHECK(row.at("add").compiles == "inline");
  CHECK(row.at("div").effects == "fails");
  CHECK(row.at("div").speculate == "if it cannot fail");
  CHECK(row.at("erf").compiles == "libm erf");
  CHECK(row.at("sqrt").compiles.rfind("intrinsic", 0) == 0);
  CHECK(has(row.at("split").effects, "random"));
  CHECK(row.at("split").compiles == "inline");
  CHECK(row.at("normal").compiles.rfind("kernel call", 0) == 0);
  CHECK(has(row.at("thread_index").effects, "thread"));
  CHECK(row.at("matmul").compiles == "batched kernel");
  CHECK(row.at("get").compiles == "inline");
  CHECK(row.at("tuple").compiles == "none");
  for (const auto& kv : row) {  // no structured binding: CAPTURE is a lambda (clang 15)
    const auto& name = kv.first;
    const auto& o = kv.second;
    CAPTURE(name);
    CHECK(!o.effects.empty());
    CHECK(!o.speculate.empty());
    CHECK(!o.compiles.empty());
  }
}

// A run whose OS threads take every core compiles first (no core is left to
// compile on in the background) and says so in every compiled block's reason.
TEST_CASE("plan: a run on every core compiles first and says why") {
  if (!ab::jit::available()) return;
  auto p = autobatch::compile(R"(func f(n: i64) -> i64 {
  s = 0
  while n > 0 {
    s = s + n
    n = n - 1
  }
  return s
}
)");
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> n(4096, 3);
  autobatch::RunOptions o;
  o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto r = p->run({autobatch::ArrayView::of(n.data(), static_cast<int64_t>(n.size()))}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  int said = 0, compiled = 0;
  for (const auto& e : r.execution) {
    compiled += e.mode != "interpreted";
    said += has(e.reason, "take every core") || has(e.reason, "takes every core");
  }
  CHECK(compiled > 0);
  CHECK(said == compiled);
}
