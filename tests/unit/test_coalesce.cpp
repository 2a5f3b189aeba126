// Copy coalescing (vm/coalesce.h): which register variables of a lowered
// program the stack VM may store together, and that the runs it changes keep
// their outputs.
#include <doctest/doctest.h>

#include <string>

#include "parse/parser.h"
#include "passes/pipeline.h"
#include "vm/coalesce.h"
#include "vm/reference/lowered.h"
#include "vm/stack/stack_vm.h"

using namespace ab;

namespace {

Program lowered(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  REQUIRE(m->program.has_value());
  return *m->program;
}

// Every declared register variable that is neither an input nor an output
// takes part; every pair is compatible.
std::map<std::string, std::string> coalesce(const Program& p) {
  auto eligible = [&](const std::string& v) {
    for (const auto& i : p.inputs)
      if (i.name == v) return false;
    for (const auto& o : p.outputs)
      if (o.name == v) return false;
    for (const auto& d : p.vars)
      if (d.name.name == v) return d.storage == StorageClass::Register;
    return false;
  };
  return coalesce_copies(p, eligible, [](const std::string&, const std::string&) { return true; });
}

// The i64 outputs of a lowered program on one i64 input per thread, from
// the stack VM (jit on or off) or the lowered-program reference.
enum class Vm { JitOn, JitOff, Reference };
std::vector<int64_t> run_i64(const std::string& text, const std::vector<int64_t>& in, Vm vm) {
  Result<Module> m = parse_text("t.ab", text);
  REQUIRE(m.ok());
  const Program& p = *m->program;
  TensorType i64{DType::I64, {}};
  std::vector<Array> inputs{Array(i64, static_cast<int64_t>(in.size()))};
  std::copy(in.begin(), in.end(), inputs[0].as<int64_t>());
  Diagnostics d;
  FunctionTypes ft = infer_program_types(p, {Type{false, i64, {}}}, d, m->source);
  REQUIRE_FALSE(d.has_errors());
  RunOptions opt;
  opt.jit = vm == Vm::JitOn;
  RunResult r = vm == Vm::Reference
                    ? run_reference_program(p, ft, inputs, static_cast<int64_t>(in.size()), opt)
                    : run_stack(p, ft, inputs, static_cast<int64_t>(in.size()), opt);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.outputs.size() == 1);
  const int64_t* o = r.outputs[0].as<int64_t>();
  return std::vector<int64_t>(o, o + r.outputs[0].batch);
}

std::string rep(const std::map<std::string, std::string>& a, const std::string& v) {
  auto it = a.find(v);
  return it == a.end() ? v : it->second;
}

}  // namespace

TEST_CASE("coalesce: a call's argument, parameter and result share storage") {
  // The leapfrog's calling sequence: q goes in, comes back, and is copied
  // at each step; none of the copies' two sides is live while the other is
  // written.
  Program p = lowered(R"(
var main.q0 register
var main.n: i64 register
var main.q register
var main.i: i64 register
var main.more: bool temporary
var step.q register
var step.ret register
var main.ret register
program main(main.q0, main.n) -> (main.ret) {
main.entry:
  main.q = main.q0
  main.i = 0
  main.more = lt(main.i, main.n)
  branch main.more, main.body, main.done
main.body:
  step.q = main.q
  push_goto main.body.1, step.entry
main.body.1:
  main.q = step.ret
  main.i = add(main.i, 1)
  main.more = lt(main.i, main.n)
  branch main.more, main.body, main.done
main.done:
  main.ret = main.q
  halt
step.entry:
  step.q = mul(step.q, 2.0)
  step.ret = step.q
  indirect_goto
}
)");
  auto a = coalesce(p);
  CHECK(rep(a, "main.q") == rep(a, "step.q"));
  CHECK(rep(a, "step.ret") == rep(a, "step.q"));
  // Inputs and outputs keep their own storage; so does the loop counter.
  CHECK(rep(a, "main.q0") == "main.q0");
  CHECK(rep(a, "main.ret") == "main.ret");
  CHECK(rep(a, "main.i") == "main.i");
}

TEST_CASE("coalesce: a caller's variable live across the call keeps its storage") {
  // main.b is read after the call, so it is live all through f; f's copy of
  // its parameter (f.y) is written there and must not share main.b's
  // storage. f.x itself is only read, so it may share with main.b.
  Program p = lowered(R"(
var main.a register
var main.b register
var main.c register
var main.d register
var f.x register
var f.y register
var f.ret register
program main(main.a) -> (main.d) {
main.entry:
  main.b = main.a
  f.x = main.b
  push_goto main.entry.1, f.entry
main.entry.1:
  main.c = f.ret
  main.d = add(main.b, main.c)
  halt
f.entry:
  f.y = f.x
  f.y = add(f.y, 1.0)
  f.ret = f.y
  indirect_goto
}
)");
  auto a = coalesce(p);
  CHECK(rep(a, "f.x") == rep(a, "main.b"));
  CHECK(rep(a, "f.y") != rep(a, "main.b"));
  CHECK(rep(a, "f.y") != rep(a, "f.x"));
  // f.ret and main.c are joined by a copy and never both hold a value.
  CHECK(rep(a, "main.c") == rep(a, "f.ret"));
}

TEST_CASE("coalesce: an operation never gets one of its operands as its output") {
  // x = z is a copy, and x dies where z = matvec(m, x) reads it, so nothing
  // but the rule keeps z and x apart: joined, the product would write the
  // vector it reads.
  Program p = lowered(R"(
var main.m register
var main.a register
var main.n: i64 register
var main.x register
var main.z register
var main.i: i64 register
var main.more: bool temporary
var main.r register
program main(main.m, main.a, main.n) -> (main.r) {
main.entry:
  main.x = main.a
  main.i = 0
  goto main.loop
main.loop:
  main.z = matvec(main.m, main.x)
  main.x = main.z
  main.i = add(main.i, 1)
  main.more = lt(main.i, main.n)
  branch main.more, main.loop, main.done
main.done:
  main.r = main.x
  halt
}
)");
  auto a = coalesce(p);
  CHECK(rep(a, "main.z") != rep(a, "main.x"));
}

TEST_CASE("coalesce: two values alive at once stay apart") {
  // A swap through a temporary: t = x; x = y; y = t. x and t may not share
  // (x is written while t holds the old x); likewise y and x.
  Program p = lowered(R"(
var main.a register
var main.b register
var main.x register
var main.y register
var main.t register
var main.r register
program main(main.a, main.b) -> (main.r) {
main.entry:
  main.x = main.a
  main.y = main.b
  main.t = main.x
  main.x = main.y
  main.y = main.t
  main.r = sub(main.x, main.y)
  halt
}
)");
  auto a = coalesce(p);
  CHECK(rep(a, "main.t") != rep(a, "main.x"));
  CHECK(rep(a, "main.x") != rep(a, "main.y"));
}

TEST_CASE("stack VM: a push after an in-place write in one compiled segment saves the new value") {
  // Block b writes x in place (no push), then pushes x: the push must save
  // a + 1, not the a from before the write. The compiled segment's pushes
  // happen before its ops run, so a segment may not hold both (it used to:
  // with the JIT this gave 3a + 2).
  const std::string text = R"(
var main.a: i64 register
var main.x: i64 full
var main.t: i64 temporary
var main.r: i64 register
program main(main.a) -> (main.r) {
main.entry:
  main.x = main.a
  goto main.b
main.b:
  main.t = add(main.a, 1)
  main.x! = main.t
  main.t = mul(main.t, 2)
  main.x = main.t
  main.r = add(main.x, 0)
  pop main.x
  main.r = add(main.r, main.x)
  pop main.x
  halt
}
)";
  const std::vector<int64_t> want{6, 33, -6};
  for (Vm vm : {Vm::JitOn, Vm::JitOff, Vm::Reference})
    CHECK(run_i64(text, {1, 10, -3}, vm) == want);
}

TEST_CASE("stack VM: coalesced variables give the reference's outputs") {
  // The caller's b is live across the call and shares storage with the
  // callee's parameter; the callee's own copy is written there. A loop
  // around the call reuses every storage many times.
  const std::string text = R"(
var main.a: i64 register
var main.b: i64 register
var main.c: i64 register
var main.d: i64 register
var main.i: i64 register
var main.more: bool temporary
var main.ret: i64 register
var f.x: i64 register
var f.y: i64 register
var f.ret: i64 register
program main(main.a) -> (main.ret) {
main.entry:
  main.b = main.a
  main.d = 0
  main.i = 0
  goto main.loop
main.loop:
  main.more = lt(main.i, 5)
  branch main.more, main.body, main.done
main.body:
  f.x = main.b
  push_goto main.body.1, f.entry
main.body.1:
  main.c = f.ret
  main.d = add(main.d, main.c)
  main.d = add(main.d, main.b)
  main.b = main.c
  main.i = add(main.i, 1)
  goto main.loop
main.done:
  main.ret = main.d
  halt
f.entry:
  f.y = f.x
  f.y = mul(f.y, 3)
  f.y = add(f.y, 1)
  f.ret = f.y
  indirect_goto
}
)";
  auto a = coalesce(lowered(text));
  CHECK(rep(a, "f.x") == rep(a, "main.b"));
  CHECK(rep(a, "f.y") != rep(a, "main.b"));
  const std::vector<int64_t> in{0, 1, 7, -4, 1000};
  const std::vector<int64_t> want = run_i64(text, in, Vm::Reference);
  CHECK(want[1] == 721);  // b = 1, 4, 13, 40, 121; c = 3b + 1; d sums c + b
  CHECK(run_i64(text, in, Vm::JitOn) == want);
  CHECK(run_i64(text, in, Vm::JitOff) == want);
}
