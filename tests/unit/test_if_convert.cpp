// if_convert on small programs: what it converts (diamonds, triangles, nested
// branches, loop headers) and what it must leave alone (an arm that can fail,
// a call). Every converted program is printed, parsed back, verified and run
// by the reference interpreter against the original.
#include <doctest/doctest.h>

#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/if_convert.h"
#include "passes/pipeline.h"
#include "passes/infer_types.h"
#include "passes/verify.h"
#include "vm/reference/reference.h"

using namespace ab;

namespace {

Module parse_verified(const std::string& text) {
  Result<Module> m = parse_text("p.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  verify(*m, d);
  INFO(d.render());
  REQUIRE_FALSE(d.has_errors());
  return m.take();
}

struct Converted {
  Module before, after;
  bool changed = false;
};

// Converts `text` (entry f, i64 parameters), checks the printed result parses,
// verifies and gives the same outputs as the original on `inputs`.
Converted convert(const std::string& text, int nparams,
                  const std::vector<std::vector<int64_t>>& inputs) {
  Converted c;
  c.before = parse_verified(text);
  std::vector<std::optional<Type>> ptypes(nparams, Type::scalar(DType::I64));
  Diagnostics d;
  TypeInfo types = infer_types(c.before, "f", ptypes, d);
  REQUIRE_FALSE(d.has_errors());
  c.after = c.before;
  c.changed = if_convert(c.after, types);
  std::string printed = print_module(c.after);
  INFO(printed);
  Module again = parse_verified(printed);
  CHECK(again == c.after);
  TypeInfo types2 = infer_types(again, "f", ptypes, d);
  REQUIRE_FALSE(d.has_errors());
  const int64_t batch = static_cast<int64_t>(inputs.at(0).size());
  std::vector<Array> arrays;
  for (const auto& v : inputs) {
    Array a(TensorType{DType::I64, {}}, batch);
    for (int64_t i = 0; i < batch; ++i) a.as<int64_t>()[i] = v[static_cast<size_t>(i)];
    arrays.push_back(std::move(a));
  }
  RunResult r1 = run_reference(c.before, types, "f", arrays, batch, {});
  RunResult r2 = run_reference(again, types2, "f", arrays, batch, {});
  REQUIRE_FALSE(r1.error);
  REQUIRE_FALSE(r2.error);
  REQUIRE(r1.outputs.size() == r2.outputs.size());
  for (size_t i = 0; i < r1.outputs.size(); ++i)
    for (int64_t t = 0; t < batch; ++t)
      CHECK(r1.outputs[i].as<int64_t>()[t] == r2.outputs[i].as<int64_t>()[t]);
  return c;
}

int count_selects(const Function& f) {
  int n = 0;
  for (const auto& b : f.blocks)
    for (const auto& in : b.instrs) n += in.kind == InstrKind::Prim && in.prim == PrimId::Select;
  return n;
}

const std::vector<std::vector<int64_t>> kAB = {{3, 9, -4, 7, 0}, {5, 2, -4, -8, 0}};

}  // namespace

TEST_CASE("if_convert: a diamond becomes one block with a select") {
  Converted c = convert(
      "func f(a, b) {\nentry:\n  c = lt(a, b)\n  branch c, small, big\nsmall:\n  x = sub(b, a)\n"
      "  goto join\nbig:\n  x = sub(a, b)\n  goto join\njoin:\n  y = mul(x, 2)\n  return y\n}\n",
      2, kAB);
  CHECK(c.changed);
  const Function& f = c.after.funcs[0];
  REQUIRE(f.blocks.size() == 1);  // entry + join merged
  CHECK(count_selects(f) == 1);
  CHECK(f.blocks[0].term.kind == TermKind::Return);
}

TEST_CASE("if_convert: a triangle selects between the new and the old value") {
  Converted c = convert(
      "func f(a, b) {\nentry:\n  x = a\n  c = lt(a, 0)\n  branch c, flip, join\nflip:\n"
      "  x = neg(a)\n  goto join\njoin:\n  s = add(x, b)\n  return s\n}\n",
      2, kAB);
  CHECK(c.changed);
  REQUIRE(c.after.funcs[0].blocks.size() == 1);
  CHECK(count_selects(c.after.funcs[0]) == 1);
}

TEST_CASE("if_convert: nested diamonds convert inside out; dead arm values get no select") {
  Converted c = convert(
      "func f(a, b) {\nentry:\n  c = lt(a, b)\n  branch c, inner, other\ninner:\n"
      "  d = lt(a, 0)\n  branch d, neg, pos\nneg:\n  x = neg(a)\n  t = 1\n  goto inner_join\n"
      "pos:\n  x = add(a, b)\n  goto inner_join\ninner_join:\n  goto join\nother:\n"
      "  x = mul(a, b)\n  goto join\njoin:\n  return x\n}\n",
      2, kAB);
  CHECK(c.changed);
  REQUIRE(c.after.funcs[0].blocks.size() == 1);
  CHECK(count_selects(c.after.funcs[0]) == 2);  // x inside, x outside; t is dead
}

TEST_CASE("if_convert: an arm that may divide by zero stays a branch") {
  Converted c = convert(
      "func f(a, b) {\nentry:\n  z = eq(b, 0)\n  branch z, zero, nonzero\nzero:\n  q = 0\n"
      "  goto join\nnonzero:\n  q = div(a, b)\n  goto join\njoin:\n  return q\n}\n",
      2, kAB);
  CHECK_FALSE(c.changed);
  CHECK(c.after == c.before);
  // A literal non-zero divisor cannot fail: that one converts.
  Converted lit = convert(
      "func f(a, b) {\nentry:\n  z = eq(b, 0)\n  branch z, zero, nonzero\nzero:\n  q = 0\n"
      "  goto join\nnonzero:\n  q = div(a, 2)\n  goto join\njoin:\n  return q\n}\n",
      2, kAB);
  CHECK(lit.changed);
  CHECK(count_selects(lit.after.funcs[0]) == 1);
}

TEST_CASE("if_convert: get with a variable index, cast of a float and a call stay branches") {
  const std::string get_arm =
      "func f(a, b) {\nentry:\n  v = iota(n=3)\n  ok = lt(a, 3)\n  branch ok, in, out\nin:\n"
      "  x = get(v, a)\n  goto join\nout:\n  x = 0\n  goto join\njoin:\n  return x\n}\n";
  CHECK_FALSE(convert(get_arm, 2, {{0, 1, 2, 5}, {0, 0, 0, 0}}).changed);
  const std::string call_arm =
      "func g(a) {\nentry:\n  r = add(a, 1)\n  return r\n}\n"
      "func f(a, b) {\nentry:\n  c = lt(a, b)\n  branch c, yes, no\nyes:\n  x = call g(a)\n"
      "  goto join\nno:\n  x = b\n  goto join\njoin:\n  return x\n}\n";
  CHECK_FALSE(convert(call_arm, 2, kAB).changed);
  const std::string cast_arm =
      "func f(a, b) {\nentry:\n  h = cast(a, dtype=f64)\n  c = lt(a, b)\n  branch c, yes, no\n"
      "yes:\n  x = cast(h, dtype=i64)\n  goto join\nno:\n  x = b\n  goto join\njoin:\n"
      "  return x\n}\n";
  CHECK_FALSE(convert(cast_arm, 2, kAB).changed);
}

TEST_CASE("if_convert: a while loop's body becomes one block that branches to itself") {
  Converted c = convert(
      "func f(n) {\nentry:\n  steps = 0\n  goto loop\nloop:\n  done = le(n, 1)\n"
      "  branch done, finish, step\nstep:\n  r = mod(n, 2)\n  odd = eq(r, 1)\n"
      "  branch odd, up, down\nup:\n  t = mul(n, 3)\n  n = add(t, 1)\n  goto next\ndown:\n"
      "  n = div(n, 2)\n  goto next\nnext:\n  steps = add(steps, 1)\n  goto loop\nfinish:\n"
      "  return steps\n}\n",
      1, {{1, 2, 3, 6, 7, 27}});
  CHECK(c.changed);
  const Function& f = c.after.funcs[0];
  const Block* step = f.find_block("step");
  REQUIRE(step != nullptr);
  CHECK(step->term.kind == TermKind::Branch);
  CHECK(step->term.target2.name == "step");  // loops to itself
  CHECK(step->term.target.name == "finish");
  CHECK(count_selects(f) == 1);            // n; t is dead after the join
  CHECK(f.find_block("loop") == nullptr);  // both jumps to it were rotated
  CHECK(f.blocks.size() == 3);             // entry, step, finish
}
