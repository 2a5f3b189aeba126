// Grammar corner cases: what parses, into what IR, and what the printer
// makes of it. The round trip parse(print(m)) == m is checked on each.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/printer.h"
#include "parse/parser.h"

using namespace ab;

namespace {

Module parse_ok(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  // Round trip: printing and parsing again gives the same IR, and printing
  // that gives the same text (fmt is idempotent).
  std::string printed = print_module(*m);
  Result<Module> again = parse_text("t2.ab", printed);
  INFO(printed);
  INFO(again.diags().render());
  REQUIRE(again.ok());
  CHECK(*again == *m);
  CHECK(print_module(*again) == printed);
  return m.take();
}

std::string parse_error(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  REQUIRE_FALSE(m.ok());
  return m.diags().render();
}

const Instr& first_instr(const Module& m) { return m.funcs.at(0).blocks.at(0).instrs.at(0); }

}  // namespace

TEST_CASE("the README's fibonacci parses and prints back unchanged") {
  std::string fib =
      "func fib(n: i64) -> i64 {\n"
      "entry:\n"
      "  small = le(n, 1)\n"
      "  branch small, base, recur\n"
      "base:\n"
      "  return 1\n"
      "recur:\n"
      "  n1 = sub(n, 1)\n"
      "  a = call fib(n1)\n"
      "  n2 = sub(n, 2)\n"
      "  b = call fib(n2)\n"
      "  s = add(a, b)\n"
      "  return s\n"
      "}\n";
  Module m = parse_ok(fib);
  CHECK(print_module(m) == fib);
  REQUIRE(m.funcs.size() == 1);
  const Function& f = m.funcs[0];
  CHECK(f.name.name == "fib");
  CHECK(f.blocks.size() == 3);
  CHECK(f.blocks[0].term.kind == TermKind::Branch);
  CHECK(f.blocks[2].instrs[1].kind == InstrKind::Call);
  CHECK(f.blocks[2].instrs[1].callee.name == "fib");
  CHECK(f.blocks[0].instrs[0].prim == PrimId::Le);
}

TEST_CASE("comments, blank lines and spacing are not significant") {
  Module m = parse_ok(
      "# header\n\n   func   f ( x )   {   # trailing\n"
      "\n# between\nentry:   # label comment\n"
      "    y   =   add( x ,1 )   # comment\n\n"
      "  return y}\n# end\n");
  CHECK(print_module(m) == "func f(x) {\nentry:\n  y = add(x, 1)\n  return y\n}\n");
}

TEST_CASE("newlines inside brackets and parentheses are whitespace") {
  Module m = parse_ok(
      "func f(a,\n       b) {\nentry:\n"
      "  m = [[1.0, 0.5],\n       [0.5, 1.0]]\n"
      "  r = matvec(m,\n    a)\n  return r\n}\n");
  const Instr& in = first_instr(m);
  CHECK(in.kind == InstrKind::Copy);
  CHECK(in.args[0].lit.shape == Shape{2, 2});
  CHECK(in.args[0].lit.kind == Scalar::Kind::Float);
}

TEST_CASE("literals: integers, floats, specials, booleans, tensors") {
  Module m = parse_ok(
      "func f() {\nentry:\n"
      "  a = 42\n  b = -3\n  c = 1.5\n  d = -2e-3\n  e = inf\n  g = -inf\n  h = nan\n"
      "  i = true\n  j = false\n  k = [1, 2, 3]\n  l = [[true], [false]]\n  m = []\n"
      "  n = 1e5\n  o = 9223372036854775807\n  p = -9223372036854775808\n  return\n}\n");
  const auto& ins = m.funcs[0].blocks[0].instrs;
  CHECK(ins[0].args[0].lit.elems[0] == Scalar::of_int(42));
  CHECK(ins[1].args[0].lit.elems[0] == Scalar::of_int(-3));
  CHECK(ins[2].args[0].lit.elems[0] == Scalar::of_float(1.5));
  CHECK(ins[3].args[0].lit.elems[0] == Scalar::of_float(-2e-3));
  CHECK(std::isinf(ins[4].args[0].lit.elems[0].f));
  CHECK(ins[5].args[0].lit.elems[0].f < 0);
  CHECK(std::isnan(ins[6].args[0].lit.elems[0].f));
  CHECK(ins[7].args[0].lit.elems[0] == Scalar::of_bool(true));
  CHECK(ins[9].args[0].lit.shape == Shape{3});
  CHECK(ins[10].args[0].lit.kind == Scalar::Kind::Bool);
  CHECK(ins[10].args[0].lit.shape == Shape{2, 1});
  CHECK(ins[11].args[0].lit.shape == Shape{0});
  CHECK(ins[12].args[0].lit.kind == Scalar::Kind::Float);
  CHECK(ins[13].args[0].lit.elems[0].i == INT64_MAX);
  CHECK(ins[14].args[0].lit.elems[0].i == INT64_MIN);
  // Floats always print as floats.
  CHECK(print_module(m).find("n = 100000.0") != std::string::npos);
  CHECK(print_module(m).find("c = 1.5") != std::string::npos);
}

TEST_CASE("integer literal out of range is an error with a location") {
  std::string e = parse_error("func f() {\nentry:\n  a = 9223372036854775808\n  return\n}\n");
  CHECK(e.find("t.ab:3:7: error: integer literal 9223372036854775808 is out of range") !=
        std::string::npos);
}

TEST_CASE("ragged and mixed tensor literals are rejected") {
  CHECK(parse_error("func f() {\nentry:\n  a = [[1, 2], [3]]\n  return\n}\n").find("ragged") !=
        std::string::npos);
  CHECK(parse_error("func f() {\nentry:\n  a = [[1, 2], 3]\n  return\n}\n").find("ragged") !=
        std::string::npos);
  CHECK(parse_error("func f() {\nentry:\n  a = [1, true]\n  return\n}\n").find("mixes booleans") !=
        std::string::npos);
}

TEST_CASE("types: scalars, shapes, tuples, and the three spellings of results") {
  Module m = parse_ok(
      "func a(x: f64[3], y: f32[2,2], z: i64[], w: (i64, (f64[3], bool))) -> (i64, f64) {\n"
      "e:\n  return 1, 2.0\n}\n\n"
      "func b() -> ((i64, f64)) {\ne:\n  t = tuple(1, 2.0)\n  return t\n}\n\n"
      "func c() -> () {\ne:\n  return\n}\n\n"
      "func d() -> (bool) {\ne:\n  return true\n}\n");
  const Function& a = m.funcs[0];
  CHECK(a.params[0].type->str() == "f64[3]");
  CHECK(a.params[1].type->str() == "f32[2,2]");
  CHECK(*a.params[2].type == Type::scalar(DType::I64));
  CHECK(a.params[3].type->str() == "(i64, (f64[3], bool))");
  CHECK(a.results.size() == 2);
  CHECK(m.funcs[1].results.size() == 1);
  CHECK(m.funcs[1].results[0].is_tuple);
  CHECK(m.funcs[2].results_declared);
  CHECK(m.funcs[2].results.empty());
  CHECK(m.funcs[3].results.size() == 1);
  std::string printed = print_module(m);
  CHECK(printed.find("func b() -> ((i64, f64)) {") != std::string::npos);
  CHECK(printed.find("func c() -> () {") != std::string::npos);
  CHECK(printed.find("func d() -> bool {") != std::string::npos);
}

TEST_CASE("patterns: bare tuples, nested tuples, in-place marks") {
  Module m = parse_ok(
      "func f(t) {\ne:\n  q, p = call g(t)\n  (a, (b, c)) = t\n  x, (y, z) = t\n  return\n}\n\n"
      "func g(t) {\ne:\n  return t, t\n}\n");
  const auto& ins = m.funcs[0].blocks[0].instrs;
  CHECK(ins[0].out.is_tuple);
  CHECK(ins[0].out.elems.size() == 2);
  CHECK(ins[1].out.is_tuple);
  CHECK(ins[1].out.elems[1].is_tuple);
  // `(a, (b, c))` and `a, (b, c)` are the same pattern.
  CHECK(print_pattern(ins[1].out) == "a, (b, c)");
  CHECK(print_pattern(ins[2].out) == "x, (y, z)");
  CHECK(ins[2].out.elems[1].elems[0].name == "y");
}

TEST_CASE("keyword attributes: dtypes, shapes, integers") {
  Module m = parse_ok(
      "func f(x) {\ne:\n  z = zeros(shape=[2, 3], dtype=f32)\n  s = sum(x, axis=0)\n"
      "  i = iota(n=5)\n  c = cast(x, dtype=i32)\n  return\n}\n");
  const auto& ins = m.funcs[0].blocks[0].instrs;
  REQUIRE(ins[0].attrs.size() == 2);
  CHECK(ins[0].attrs[0].key == "shape");
  CHECK(ins[0].attrs[0].lit.elems.size() == 2);
  CHECK(ins[0].attrs[1].is_dtype);
  CHECK(ins[0].attrs[1].dtype == DType::F32);
  CHECK(print_instr(ins[0]) == "z = zeros(shape=[2, 3], dtype=f32)");
  CHECK(ins[1].args.size() == 1);
  CHECK(ins[1].attrs[0].lit.elems[0].i == 0);
}

TEST_CASE("a call whose results are discarded stands alone") {
  Module m = parse_ok("func f() {\ne:\n  call g(1)\n  return\n}\n\nfunc g(x) {\ne:\n  return\n}\n");
  CHECK(print_instr(first_instr(m)) == "call g(1)");
}

TEST_CASE("return with zero, one and several operands, and a return before '}'") {
  Module m = parse_ok(
      "func f(a) {\ne:\n  branch a, x, y\nx:\n  return\ny:\n  goto z\nz:\n  return a, 1 }\n");
  const Function& f = m.funcs[0];
  CHECK(f.blocks[1].term.values.empty());
  CHECK(f.blocks[3].term.values.size() == 2);
}

TEST_CASE("syntax errors name the position and what was expected") {
  CHECK(parse_error("func f(x {\n")
            .find("t.ab:1:10: error: syntax error: expected ',' or ')' after a parameter") !=
        std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  a = x < y < z\n  return\n}\n")
            .find("t.ab:3:13: error: syntax error: comparisons do not chain") != std::string::npos);
  CHECK(parse_error("func f() {\n  a = 1. + x\n}\n")
            .find("t.ab:2:7: error: syntax error: float literal '1.' needs digits on both sides "
                  "of the point: write '1.0'") != std::string::npos);
  CHECK(parse_error("func f() {\n  a = .5\n}\n").find("write '0.5'") != std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  a = add(x, 1\n  return\n}\n")
            .find("t.ab:4:3: error: syntax error: expected ',' or ')' in argument list") !=
        std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  a = 1\n")
            .find("t.ab:4:1: error: syntax error: unexpected end of file: expected a statement or '}'") !=
        std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  a = 1 2\n  return\n}\n")
            .find("t.ab:3:9: error: syntax error: unexpected text") != std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  return = 1\n  return\n}\n")
            .find("t.ab:3:3: error: syntax error: a reserved word cannot be used as a name") !=
        std::string::npos);
  CHECK(parse_error("func f(x: int) {\ne:\n  return\n}\n")
            .find("t.ab:1:11: error: syntax error: expected a type") != std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  branch true, a, b\n}\n")
            .find("expected a condition variable") != std::string::npos);
  CHECK(parse_error("fun f() {}\n").find("t.ab:1:1: error: syntax error: expected 'func'") !=
        std::string::npos);
  CHECK(parse_error("func f() {\ne:\n  a = [1, 2\n  return\n}\n").find("expected ',' or ']'") !=
        std::string::npos);
}

TEST_CASE("blocks: a missing terminator and code after a terminator are reported") {
  std::string e = parse_error("func f() {\na:\n  x = 1\nb:\n  return\n}\n");
  CHECK(e.find("t.ab:4:1: error: block 'a' does not end with a terminator") != std::string::npos);
  e = parse_error("func f() {\na:\n  return\n  x = 1\n  return\n}\n");
  CHECK(e.find("t.ab:4:3: error: this follows the terminator of block 'a'") != std::string::npos);
  e = parse_error("func f() {\n  x = 1\na:\n  return\n}\n");
  CHECK(e.find("expected a label to start the first block of 'f'") != std::string::npos);
}

TEST_CASE("diagnostics show the source line and a caret under the token") {
  std::string e = parse_error("func f() {\ne:\n  a = [[1, 2], [3]]\n  return\n}\n");
  CHECK(e.find("    a = [[1, 2], [3]]\n") != std::string::npos);
  CHECK(e.find("t.ab:3:16: error: ragged") != std::string::npos);
  CHECK(e.find("\n                   ^~~\n") != std::string::npos);
}

TEST_CASE("lowered programs: var declarations, program header, lowered instructions") {
  std::string text =
      "var fib.n: i64 full\n"
      "var fib.r0: i64 register\n"
      "var t: (i64, f64[3]) temporary\n"
      "var u null\n"
      "\n"
      "program fib(fib.n) -> (fib.r0) {\n"
      "fib.entry:\n"
      "  fib.r0! = add(fib.n, 1)\n"
      "  pop fib.n, t\n"
      "  push_goto fib.ret, fib.entry\n"
      "fib.ret:\n"
      "  indirect_goto\n"
      "fib.exit:\n"
      "  halt\n"
      "}\n";
  Module m = parse_ok(text);
  CHECK(print_module(m) == text);
  REQUIRE(m.program);
  CHECK(m.program->vars.size() == 4);
  CHECK(m.program->vars[0].storage == StorageClass::Full);
  CHECK(!m.program->vars[3].type);
  CHECK(m.program->blocks[0].instrs[0].out.in_place);
  CHECK(m.program->blocks[0].instrs[1].kind == InstrKind::Pop);
  CHECK(m.program->blocks[0].term.kind == TermKind::PushGoto);
  CHECK(m.program->blocks[1].term.kind == TermKind::IndirectGoto);
  CHECK(m.program->blocks[2].term.kind == TermKind::Halt);
}

TEST_CASE("lowered forms cannot be mixed with functions") {
  CHECK(parse_error("var x: i64 full\nfunc f() {\ne:\n  return\n}\n")
            .find("'var' declarations belong to a lowered program") != std::string::npos);
}
