// Type inference: small programs named by what they check. Signatures are
// read from the FunctionTypes the pass returns.
#include <doctest/doctest.h>

#include "parse/parser.h"
#include "passes/infer_types.h"
#include "passes/verify.h"

using namespace ab;

namespace {

struct Inferred {
  Module m;
  TypeInfo types;
  std::string diags;
};

Inferred infer(const std::string& text, const std::string& entry,
               std::vector<std::optional<Type>> inputs) {
  Result<Module> m = parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  ab::verify(*m, d);
  INFO(d.render());
  REQUIRE_FALSE(d.has_errors());
  Inferred out{m.take(), {}, ""};
  out.types = infer_types(out.m, entry, inputs, d);
  out.diags = d.render();
  return out;
}

std::string var_type(const Inferred& r, const std::string& f, const std::string& v) {
  const auto& vars = r.types.funcs.at(f).vars;
  auto it = vars.find(v);
  return it == vars.end() ? "?" : it->second.str();
}

const Type i32 = Type::scalar(DType::I32);
const Type i64 = Type::scalar(DType::I64);
const Type f32 = Type::scalar(DType::F32);
const Type f64 = Type::scalar(DType::F64);

bool has(const std::string& hay, const std::string& needle) {
  INFO(hay);
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("recursion: fib's result type is found by fixpoint") {
  auto r = infer(
      "func fib(n) {\ne:\n  s = le(n, 1)\n  branch s, b, r\nb:\n  return 1\nr:\n  n1 = sub(n, 1)\n"
      "  a = call fib(n1)\n  n2 = sub(n, 2)\n  c = call fib(n2)\n  t = add(a, c)\n  return t\n}\n",
      "fib", {i32});
  CHECK(r.diags == "");
  // Nothing ties the result to n: the lone literal 1 defaults to i64.
  CHECK(r.types.funcs.at("fib").results[0] == i64);
  CHECK(var_type(r, "fib", "n1") == "i32");
}

TEST_CASE("mutual recursion without annotations") {
  auto r = infer(
      "func ev(n) {\ne:\n  z = eq(n, 0)\n  branch z, y, no\ny:\n  return true\nno:\n  m = sub(n, "
      "1)\n"
      "  o = call od(m)\n  return o\n}\n\n"
      "func od(n) {\ne:\n  z = eq(n, 0)\n  branch z, y, no\ny:\n  return false\nno:\n  m = sub(n, "
      "1)\n"
      "  o = call ev(m)\n  return o\n}\n",
      "ev", {i64});
  CHECK(r.diags == "");
  CHECK(r.types.funcs.at("od").params[0] == i64);
  CHECK(r.types.funcs.at("od").results[0] == Type::scalar(DType::Bool));
}

TEST_CASE("a literal assigned alone takes the type the rest of the program gives it") {
  auto r = infer(
      "func f(a, n) {\ne:\n  k = 0\n  i = 0\n  goto h\nh:\n  c = lt(i, n)\n  branch c, b, d\n"
      "b:\n  k = add(a, k)\n  i = add(i, 1)\n  goto h\nd:\n  return k\n}\n",
      "f", {i32, i64});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "k") == "i32");
  CHECK(var_type(r, "f", "i") == "i64");
}

TEST_CASE("an integer literal becomes a float where a float literal or float op needs it") {
  auto r =
      infer("func f() {\ne:\n  x = 1\n  y = add(x, 0.5)\n  z = 2\n  w = exp(z)\n  return y, w\n}\n",
            "f", {});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "x") == "f64");
  CHECK(var_type(r, "f", "z") == "f64");
}

TEST_CASE("unconstrained literals default to i64 and f64") {
  auto r = infer(
      "func f() {\ne:\n  a = 1\n  b = 2.5\n  c = true\n  d = [1, 2]\n  return a, b, c, d\n}\n", "f",
      {});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "a") == "i64");
  CHECK(var_type(r, "f", "b") == "f64");
  CHECK(var_type(r, "f", "c") == "bool");
  CHECK(var_type(r, "f", "d") == "i64[2]");
}

TEST_CASE(
    "literal partners: a float literal next to f32 is f32; select's literal follows the other "
    "value") {
  auto r = infer("func f(x, c) {\ne:\n  y = mul(x, 2.0)\n  z = select(c, 1.5, y)\n  return z\n}\n",
                 "f", {f32, Type::scalar(DType::Bool)});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "y") == "f32");
  CHECK(var_type(r, "f", "z") == "f32");
}

TEST_CASE("tuples and nested destructuring") {
  auto r = infer(
      "func g(a, b) {\ne:\n  t = tuple(b, a)\n  return a, t\n}\n\n"
      "func f(x, y) {\ne:\n  p, (q, r) = call g(x, y)\n  return q\n}\n",
      "f", {i64, f64});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "q") == "f64");
  CHECK(var_type(r, "f", "r") == "i64");
  CHECK(r.types.funcs.at("g").results[1]->str() == "(f64, i64)");
}

TEST_CASE("vectors and matrices flow through linear algebra") {
  auto r = infer(
      "func f(m, v) {\ne:\n  w = matvec(m, v)\n  s = dot(w, v)\n  o = outer(v, w)\n  return s, "
      "o\n}\n",
      "f", {Type::tensor_of(DType::F64, {3, 3}), Type::tensor_of(DType::F64, {3})});
  CHECK(r.diags == "");
  CHECK(var_type(r, "f", "w") == "f64[3]");
  CHECK(var_type(r, "f", "s") == "f64");
  CHECK(var_type(r, "f", "o") == "f64[3,3]");
}

TEST_CASE("annotations are checked against the inputs and the body") {
  auto r = infer("func f(n: i32) -> i32 {\ne:\n  return n\n}\n", "f", {i64});
  CHECK(has(r.diags, "parameter 'n' is declared i32 but the input is i64"));
  r = infer("func f(n) -> f64 {\ne:\n  return n\n}\n", "f", {i64});
  CHECK(has(r.diags, "t.ab:3:10: error: 'f' returns i64 here, but its result is f64"));
}

TEST_CASE("mixing dtypes suggests cast") {
  auto r = infer("func f(a, b) {\ne:\n  c = add(a, b)\n  return c\n}\n", "f", {i64, f64});
  CHECK(has(r.diags,
            "t.ab:3:7: error: operands of 'add' have different dtypes: 'a' (i64) and 'b' (f64); "
            "convert it with cast(a, dtype=f64)"));
}

TEST_CASE("a float literal next to an integer is an error") {
  auto r = infer("func f(a) {\ne:\n  c = mul(a, 1.5)\n  return c\n}\n", "f", {i64});
  CHECK(has(r.diags, "'mul' mixes 'a' (i64) with a float literal"));
}

TEST_CASE("functions are monomorphic: two argument types name both calls") {
  auto r = infer(
      "func h(x) {\ne:\n  return x\n}\n\nfunc f(a, b) {\ne:\n  p = call h(a)\n  q = call h(b)\n  "
      "return p, q\n}\n",
      "f", {i64, f64});
  CHECK(has(r.diags,
            "t.ab:9:14: error: argument 1 of 'h' is f64 here, but parameter 'x' is i64 at line 8"));
  CHECK(r.diags.find("error", r.diags.find("error") + 1) == std::string::npos);  // no cascade
}

TEST_CASE("a recursion with no base case names the variable") {
  auto r = infer("func f(n) {\ne:\n  m = add(n, 1)\n  r = call f(m)\n  return r\n}\n", "f", {i64});
  CHECK(has(r.diags, "t.ab:4:3: error: cannot determine the type of 'r' in 'f'"));
}

TEST_CASE("without inputs, unknown types are not errors") {
  auto r = infer("func f(n) {\ne:\n  m = add(n, 1)\n  return m\n}\n", "f", {std::nullopt});
  CHECK(r.diags == "");
  CHECK_FALSE(r.types.funcs.at("f").params[0].has_value());
}

TEST_CASE("branch conditions must be scalar bools") {
  auto r = infer("func f(n) {\ne:\n  branch n, a, a\na:\n  return\n}\n", "f", {i64});
  CHECK(has(r.diags, "branch condition 'n' must be a scalar bool, but it is i64"));
}

TEST_CASE("an i32 literal out of range is an error") {
  auto r = infer("func f(n) {\ne:\n  m = add(n, 3000000000)\n  return m\n}\n", "f", {i32});
  CHECK(has(r.diags, "the literal 3000000000 does not fit in i32"));
}

TEST_CASE("primitive type rules report shape errors at the operation") {
  auto r = infer("func f(a, b) {\ne:\n  c = add(a, b)\n  return c\n}\n", "f",
                 {Type::tensor_of(DType::F64, {3}), Type::tensor_of(DType::F64, {2})});
  CHECK(has(r.diags, "t.ab:3:7: error: operands of 'add' have incompatible event shapes"));
}
