// The compiler passes on small programs named by what they check, and the
// stack discipline of every program in programs/.
#include <doctest/doctest.h>

#include <filesystem>

#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/allocation_strategy.h"
#include "passes/block_order.h"
#include "passes/fuse_pop_push.h"
#include "passes/liveness.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/reference/reference.h"
#include "vm/reference/lowered.h"

using namespace ab;

namespace {

Module parse_verified(const std::string& text) {
  Result<Module> m = parse_text("p.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  ab::verify(*m, d);
  INFO(d.render());
  REQUIRE_FALSE(d.has_errors());
  return m.take();
}

Compiled compile_ok(const Module& m, const std::string& entry,
                    std::vector<std::optional<Type>> types = {}) {
  CompileOptions opt;
  opt.entry = entry;
  opt.entry_types = std::move(types);
  Result<Compiled> c = compile(m, opt);
  INFO(c.diags().render());
  REQUIRE(c.ok());
  return c.take();
}

StorageClass class_of(const Program& p, const std::string& var) {
  for (const auto& v : p.vars)
    if (v.name.name == var) return v.storage;
  FAIL("no variable " << var);
  return StorageClass::Null;
}

const std::string kFib =
    "func fib(n) {\nentry:\n  small = le(n, 1)\n  branch small, base, recur\nbase:\n  return 1\n"
    "recur:\n  n1 = sub(n, 1)\n  a = call fib(n1)\n  n2 = sub(n, 2)\n  b = call fib(n2)\n  s = "
    "add(a, b)\n"
    "  return s\n}\n";

Array i64_batch(std::vector<int64_t> v) {
  Array a(TensorType{DType::I64, {}}, static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) a.as<int64_t>()[i] = v[i];
  return a;
}

// Runs the source with the reference interpreter and the lowered program with
// the lowered-program interpreter; both must give the same i64 outputs.
void same_outputs(const std::string& text, const std::string& entry,
                  std::vector<std::vector<int64_t>> inputs) {
  Module m = parse_verified(text);
  std::vector<Array> arrays;
  std::vector<std::optional<Type>> types;
  for (auto& v : inputs) {
    arrays.push_back(i64_batch(v));
    types.push_back(Type::scalar(DType::I64));
  }
  int64_t batch = static_cast<int64_t>(inputs.at(0).size());
  Compiled c = compile_ok(m, entry, types);
  RunResult plain = run_reference(m, c.types, entry, arrays, batch, {});
  REQUIRE_FALSE(plain.error);
  // Through the printed text, as `lower` + `run` would.
  Result<Module> again = parse_text("lowered.ab", print_module(c.lowered));
  REQUIRE(again.ok());
  Diagnostics d;
  FunctionTypes ft = infer_program_types(*again->program, types, d, again->source);
  REQUIRE_FALSE(d.has_errors());
  RunResult low = run_reference_program(*again->program, ft, arrays, batch, {});
  INFO(print_module(c.lowered));
  REQUIRE_FALSE(low.error);
  REQUIRE(low.outputs.size() == plain.outputs.size());
  for (size_t i = 0; i < plain.outputs.size(); ++i)
    for (int64_t t = 0; t < batch; ++t)
      CHECK(low.outputs[i].as<int64_t>()[t] == plain.outputs[i].as<int64_t>()[t]);
}

}  // namespace

TEST_CASE("liveness: straight line, branches and a loop") {
  Module m = parse_verified(
      "func f(n) {\nentry:\n  i = 0\n  s = 0\n  goto head\nhead:\n  c = lt(i, n)\n  branch c, "
      "body, done\n"
      "body:\n  s = add(s, i)\n  i = add(i, 1)\n  goto head\ndone:\n  return s\n}\n");
  LivenessInfo live = compute_liveness(m.funcs[0].blocks);
  CHECK(live.live_in[0] == VarSet{"n"});
  CHECK(live.live_in[1] == VarSet{"i", "n", "s"});  // the loop keeps i and s alive
  CHECK(live.live_out[1] == VarSet{"i", "n", "s"});
  CHECK(live.live_in[3] == VarSet{"s"});
  CHECK(live.instr_out[0][0] == VarSet{"i", "n"});  // after i = 0: s not yet defined
  CHECK(live.instr_out[1][0] == VarSet{"c", "i", "n", "s"});
  CHECK(live.term_in[1] == VarSet{"c", "i", "n", "s"});
}

TEST_CASE("liveness: a variable read only in one arm is live out of the branch") {
  Module m = parse_verified(
      "func f(a, b, c) {\ne:\n  branch c, x, y\nx:\n  return a\ny:\n  return b\n}\n");
  LivenessInfo live = compute_liveness(m.funcs[0].blocks);
  CHECK(live.live_out[0] == VarSet{"a", "b"});
  CHECK(live.live_in[1] == VarSet{"a"});
}

TEST_CASE("allocation: live across a recursive self-call is full") {
  Compiled c = compile_ok(parse_verified(kFib), "fib", {Type::scalar(DType::I64)});
  const Program& p = *c.lowered.program;
  CHECK(class_of(p, "fib.a") == StorageClass::Full);  // held while fib(n2) runs
  CHECK(class_of(p, "fib.n") == StorageClass::Full);  // held while fib(n1) runs
  CHECK(class_of(p, "fib.small") == StorageClass::Temporary);
  CHECK(class_of(p, "fib.s") == StorageClass::Temporary);
  CHECK(class_of(p, "fib.ret.0") == StorageClass::Register);
}

TEST_CASE("allocation: never read is null; read only inside its block is temporary") {
  // (f2 divides by a variable, so if_convert does not merge it into e.)
  Compiled c = compile_ok(parse_verified("func f(x) {\ne:\n  unused = mul(x, 2)\n  t = add(x, 1)\n "
                                         " u = mul(t, t)\n  goto f2\nf2:\n  q = div(u, x)\n"
                                         "  return q\n}\n"),
                          "f", {Type::scalar(DType::I64)});
  const Program& p = *c.lowered.program;
  CHECK(class_of(p, "f.unused") == StorageClass::Null);
  CHECK(class_of(p, "f.t") == StorageClass::Temporary);
  CHECK(class_of(p, "f.u") == StorageClass::Register);  // crosses into f2
}

TEST_CASE("allocation: live across a call to a function that cannot come back is a register") {
  Compiled c = compile_ok(
      parse_verified("func sq(x) {\ne:\n  y = mul(x, x)\n  return y\n}\n\n"
                     "func f(a) {\ne:\n  b = call sq(a)\n  c = add(a, b)\n  return c\n}\n"),
      "f", {Type::scalar(DType::I64)});
  const Program& p = *c.lowered.program;
  CHECK(class_of(p, "f.a") == StorageClass::Register);  // sq never reaches f
}

TEST_CASE("allocation: mutual recursion makes the caller's live variables full") {
  Compiled c = compile_ok(
      parse_verified(
          "func f(n) {\ne:\n  z = le(n, 0)\n  branch z, b, r\nb:\n  return 0\nr:\n  m = sub(n, 1)\n"
          "  x = call g(m)\n  y = add(x, n)\n  return y\n}\n\n"
          "func g(n) {\ne:\n  w = call f(n)\n  return w\n}\n"),
      "f", {Type::scalar(DType::I64)});
  CHECK(class_of(*c.lowered.program, "f.n") == StorageClass::Full);  // g calls f back
}

TEST_CASE("lowering: fib has the seed's calling sequence") {
  Compiled c = compile_ok(parse_verified(kFib), "fib", {Type::scalar(DType::I64)});
  std::string text = print_module(c.lowered);
  INFO(text);
  // Push the argument onto the callee's parameter and jump, remembering where to return.
  CHECK(text.find("  fib.n = sub(fib.n, 1)\n  push_goto fib.recur.1, fib.entry\n") !=
        std::string::npos);
  // Take the result; the caller's n is dead, so the second argument replaces it in place.
  CHECK(text.find("fib.recur.1:\n  fib.a = fib.ret.0\n  fib.n! = sub(fib.n, 2)\n  push_goto "
                  "fib.recur.2, fib.entry\n") != std::string::npos);
  CHECK(text.find("  pop fib.a\n  fib.ret.0 = fib.s\n  indirect_goto\n") != std::string::npos);
  CHECK(text.find("halt") == std::string::npos);  // fib calls itself: every return is indirect
}

TEST_CASE("lowering: the entry's return is halt when nothing calls it") {
  Compiled c = compile_ok(parse_verified("func f(x) {\ne:\n  y = add(x, 1)\n  return y\n}\n"), "f",
                          {Type::scalar(DType::I64)});
  CHECK(c.lowered.program->blocks.back().term.kind == TermKind::Halt);
}

TEST_CASE("lowering: a tail self-call becomes a goto") {
  std::string gcd =
      "func gcd(a, b) {\ne:\n  z = eq(b, 0)\n  branch z, done, step\ndone:\n  return a\n"
      "step:\n  r = mod(a, b)\n  g = call gcd(b, r)\n  return g\n}\n";
  Compiled c =
      compile_ok(parse_verified(gcd), "gcd", {Type::scalar(DType::I64), Type::scalar(DType::I64)});
  std::string text = print_module(c.lowered);
  INFO(text);
  CHECK(text.find("push_goto") == std::string::npos);
  CHECK(text.find("goto gcd.e\n") != std::string::npos);
  same_outputs(gcd, "gcd", {{12, 7, 0, 48}, {18, 5, 3, 0}});
}

TEST_CASE("lowering: arguments that are the callee's own parameters, swapped") {
  same_outputs(
      "func f(a, b, k) {\ne:\n  z = le(k, 0)\n  branch z, done, more\ndone:\n  r = sub(a, b)\n  "
      "return r\n"
      "more:\n  k1 = sub(k, 1)\n  x = call f(b, a, k1)\n  y = add(x, a)\n  return y\n}\n",
      "f", {{1, 5, 2, 9}, {10, 3, 7, 2}, {0, 1, 2, 3}});
}

TEST_CASE("lowering: a parameter a recursion only passes on is neither pushed nor popped") {
  // f passes d on unchanged in its own position and nothing f reaches calls
  // f otherwise: one value of f.d per thread serves every level. main calls
  // f twice, with different values.
  const std::string text =
      "func f(d, k) {\ne:\n  z = le(k, 0)\n  branch z, done, more\ndone:\n  return d\n"
      "more:\n  k1 = sub(k, 1)\n  x = call f(d, k1)\n  y = add(x, d)\n  return y\n}\n\n"
      "func main(a, k) {\ne:\n  r = call f(a, k)\n  s = call f(r, k)\n  return s\n}\n";
  Compiled c = compile_ok(parse_verified(text), "main",
                          {Type::scalar(DType::I64), Type::scalar(DType::I64)});
  std::string lowered = print_module(c.lowered);
  INFO(lowered);
  CHECK(class_of(*c.lowered.program, "f.d") == StorageClass::Register);
  CHECK(lowered.find("pop f.d") == std::string::npos);  // read after the call all the same
  CHECK(c.info.find("f")->invariant == std::vector<std::string>{"f.d"});
  Diagnostics all_full;
  Lowered raw = lower_function_calls(parse_verified(text), "main", nullptr);
  check_stack_discipline(*raw.module.program, raw.info, false, all_full);
  CHECK(all_full.render() == "");
  same_outputs(text, "main", {{1, 5, -2, 9}, {0, 3, 7, 2}});
}

TEST_CASE("lowering: a parameter written, moved, or passed back by another function is pushed") {
  auto full = [](const std::string& text, const std::string& var) {
    Compiled c =
        compile_ok(parse_verified(text), "f", {Type::scalar(DType::I64), Type::scalar(DType::I64)});
    INFO(print_module(c.lowered));
    CHECK(class_of(*c.lowered.program, var) == StorageClass::Full);
    same_outputs(text, "f", {{1, 5, -2, 9}, {0, 3, 7, 2}});
  };
  const std::string head =
      "func f(d, k) {\ne:\n  z = le(k, 0)\n  branch z, done, more\n"
      "done:\n  return d\nmore:\n  k1 = sub(k, 1)\n";
  full(head + "  d = add(d, 1)\n  x = call f(d, k1)\n  y = add(x, d)\n  return y\n}\n",
       "f.d");                                                                  // written
  full(head + "  x = call f(k1, d)\n  y = add(x, d)\n  return y\n}\n", "f.d");  // moved
  full(head +
           "  x = call g(d, k1)\n  y = add(x, d)\n  return y\n}\n\n"
           "func g(d, k) {\ne:\n  e = mul(d, 2)\n  x = call f(e, k)\n  return x\n}\n",
       "f.d");  // g, which f reaches, calls f with another value
}

TEST_CASE("lowering: a loop, a variable dying on one branch edge, and a call in the loop") {
  same_outputs(
      "func sq(x) {\ne:\n  y = mul(x, x)\n  return y\n}\n\n"
      "func f(n) {\ne:\n  i = 0\n  s = 0\n  goto h\nh:\n  c = lt(i, n)\n  branch c, body, done\n"
      "body:\n  q = call sq(i)\n  s = add(s, q)\n  i = add(i, 1)\n  goto h\ndone:\n  return s\n}\n",
      "f", {{0, 1, 4, 10}});
}

TEST_CASE("lowering: an entry block that is also a loop target, with an unread parameter") {
  same_outputs(
      "func f(n, unused) {\ne:\n  n = sub(n, 1)\n  c = gt(n, 0)\n  branch c, e, out\nout:\n  "
      "return n\n}\n",
      "f", {{5, 1, 3}, {0, 0, 0}});
}

TEST_CASE("fuse_pop_push: pop then write without a read between becomes x!") {
  Result<Module> m = parse_text(
      "p.ab",
      "var x: i64 full\nvar y: i64 full\n\nprogram p(x) -> (x) {\ne:\n  y = add(x, 1)\n  pop x\n"
      "  x = mul(y, 2)\n  pop y\n  halt\n}\n");
  REQUIRE(m.ok());
  Program p = *m->program;
  fuse_pop_push(p);
  std::string text = print_program(p);
  CHECK(text.find("  x! = mul(y, 2)\n") != std::string::npos);
  CHECK(text.find("pop x") == std::string::npos);
}

TEST_CASE("fuse_pop_push: a read between the pop and the write keeps them apart") {
  Result<Module> m = parse_text(
      "p.ab",
      "var x: i64 full\nvar y: i64 full\n\nprogram p(x) -> (x) {\ne:\n  pop x\n  y = add(x, 1)\n"
      "  x = mul(y, 2)\n  pop y\n  halt\n}\n");
  REQUIRE(m.ok());
  Program p = *m->program;
  fuse_pop_push(p);
  std::string text = print_program(p);
  CHECK(text.find("pop x") != std::string::npos);
  CHECK(text.find("x!") == std::string::npos);
}

TEST_CASE("block_order: the entry stays first, blocks without primitives come next, stably") {
  Result<Module> m = parse_text(
      "p.ab",
      "var x: i64 register\n\nprogram p(x) -> (x) {\ne:\n  goto a\na:\n  x = add(x, 1)\n  goto b\n"
      "b:\n  x = x\n  goto c\nc:\n  x = mul(x, 2)\n  goto d\nd:\n  halt\n}\n");
  REQUIRE(m.ok());
  Program p = *m->program;
  block_order(p);
  std::vector<std::string> labels;
  for (const auto& b : p.blocks) labels.push_back(b.label.name);
  CHECK(labels == std::vector<std::string>{"e", "b", "d", "a", "c"});
}

TEST_CASE("block_order: blocks that only jump are bypassed, chains of them too") {
  Result<Module> m = parse_text(
      "p.ab",
      "var x: i64 register\n\nprogram p(x) -> (x) {\ne:\n  goto j1\nj1:\n  goto j2\nj2:\n  goto a\n"
      "a:\n  c = lt(x, 10)\n  x = add(x, 1)\n  branch c, j2, d\nd:\n  halt\n}\n");
  REQUIRE(m.ok());
  Program p = *m->program;
  block_order(p);
  std::string text = print_program(p);
  INFO(text);
  CHECK(text.find("j1:") == std::string::npos);
  CHECK(text.find("j2") == std::string::npos);
  CHECK(text.find("e:\n  goto a\n") != std::string::npos);
  CHECK(text.find("branch c, a, d") != std::string::npos);
}

TEST_CASE("the stack-discipline checker catches an unbalanced function") {
  Compiled c = compile_ok(parse_verified(kFib), "fib", {Type::scalar(DType::I64)});
  Program broken = *c.lowered.program;
  // Drop the pop of fib.a: the function then leaves a value behind.
  for (auto& b : broken.blocks) {
    std::vector<Instr> kept;
    for (auto& in : b.instrs)
      if (!(in.kind == InstrKind::Pop && in.popped.size() == 1 && in.popped[0].name == "fib.a"))
        kept.push_back(in);
    b.instrs = kept;
  }
  Diagnostics d;
  check_stack_discipline(broken, c.info, true, d);
  CHECK(d.render().find("stack discipline of 'fib' broken") != std::string::npos);
  CHECK(d.render().find("fib.a=1") != std::string::npos);
}

TEST_CASE("every program in programs/ lowers with a sound stack discipline and round-trips") {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AUTOBATCH_SOURCE_DIR) / "programs")) {
    if (e.path().extension() != ".ab") continue;
    Result<Module> m = parse_file(e.path().string());
    REQUIRE(m.ok());
    Diagnostics d(m->source);
    ab::verify(*m, d);
    REQUIRE_FALSE(d.has_errors());
    // The entry named in the header comment.
    std::string entry;
    const std::string& text = m->source->text();
    size_t at = text.find("# entry: ");
    if (at != std::string::npos) entry = text.substr(at + 9, text.find('\n', at) - at - 9);
    if (entry.empty()) entry = m->funcs.front().name.name;
    INFO(e.path().string());
    Compiled c =
        compile_ok(*m, entry);  // compile() runs the checker after lowering and after fusing
    Diagnostics all_full;
    Lowered raw = lower_function_calls(*m, entry, nullptr);
    check_stack_discipline(*raw.module.program, raw.info, false, all_full);
    CHECK(all_full.render() == "");
    Diagnostics full_only;
    check_stack_discipline(*c.lowered.program, c.info, true, full_only);
    CHECK(full_only.render() == "");
    // The printed program parses back to the same program.
    Result<Module> again = parse_text("again.ab", print_module(c.lowered));
    REQUIRE(again.ok());
    CHECK(*again == c.lowered);
    ++checked;
  }
  CHECK(checked >= 15);
}
