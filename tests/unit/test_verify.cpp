// The verifier: one small program per check, named by what it tests.
#include <doctest/doctest.h>

#include "parse/parser.h"
#include "passes/verify.h"

using namespace ab;

namespace {

// All diagnostics of a program that parses, rendered.
std::string verify(const std::string& text) {
  Result<Module> m = parse_text("v.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  ab::verify(*m, d);
  return d.render();
}

int errors(const std::string& text) {
  Result<Module> m = parse_text("v.ab", text);
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  ab::verify(*m, d);
  return static_cast<int>(d.error_count());
}

bool has(const std::string& hay, const std::string& needle) {
  INFO(hay);
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a correct program has no diagnostics") {
  CHECK(
      verify("func fib(n: i64) -> i64 {\nentry:\n  small = le(n, 1)\n  branch small, base, recur\n"
             "base:\n  return 1\nrecur:\n  n1 = sub(n, 1)\n  a = call fib(n1)\n  n2 = sub(n, 2)\n"
             "  b = call fib(n2)\n  s = add(a, b)\n  return s\n}\n") == "");
}

TEST_CASE("unknown label, with a suggestion") {
  std::string d = verify(
      "func f(c) {\nentry:\n  branch c, done, recurr\nrecur:\n  goto done\ndone:\n  return\n}\n");
  CHECK(has(d, "v.ab:3:19: error: unknown label 'recurr' (did you mean 'recur'?)"));
}

TEST_CASE("unknown function, with a suggestion") {
  std::string d = verify("func fib(n) {\ne:\n  a = call fibb(n)\n  return a\n}\n");
  CHECK(has(d, "v.ab:3:12: error: unknown function 'fibb' (did you mean 'fib'?)"));
}

TEST_CASE("unknown operation, with a suggestion") {
  CHECK(has(verify("func f(n) {\ne:\n  a = ad(n, 1)\n  return a\n}\n"),
            "v.ab:3:7: error: unknown operation 'ad' (did you mean 'add'?)"));
}

TEST_CASE("call arity mismatch") {
  std::string d = verify(
      "func f(a, b) {\ne:\n  return a\n}\n\nfunc g(x) {\ne:\n  y = call f(x)\n  return y\n}\n");
  CHECK(has(d, "v.ab:8:12: error: 'f' takes 2 arguments, but 1 was given"));
}

TEST_CASE("primitive arity mismatch") {
  CHECK(has(verify("func f(x) {\ne:\n  y = add(x)\n  return y\n}\n"),
            "v.ab:3:7: error: 'add' takes 2 arguments, but 1 was given"));
  CHECK(has(verify("func f(x) {\ne:\n  y = select(x, x)\n  return y\n}\n"),
            "'select' takes 3 arguments, but 2 were given"));
}

TEST_CASE("attributes: unknown, missing, of the wrong kind, repeated") {
  CHECK(has(verify("func f(x) {\ne:\n  y = sum(x, axes=0)\n  return y\n}\n"),
            "'sum' has no attribute 'axes' (did you mean 'axis'?)"));
  CHECK(has(verify("func f(x) {\ne:\n  y = cast(x)\n  return y\n}\n"),
            "v.ab:3:7: error: 'cast' needs the attribute 'dtype=...'"));
  CHECK(has(verify("func f(x) {\ne:\n  y = cast(x, dtype=1)\n  return y\n}\n"),
            "attribute 'dtype' must be a dtype"));
  CHECK(has(verify("func f() {\ne:\n  y = zeros(shape=[-1])\n  return y\n}\n"),
            "attribute 'shape' must be a list of non-negative integers"));
  CHECK(has(verify("func f(x) {\ne:\n  y = sum(x, axis=0, axis=1)\n  return y\n}\n"),
            "attribute 'axis' is given twice"));
  CHECK(has(verify("func f(x) {\ne:\n  y = add(x, 1, axis=0)\n  return y\n}\n"),
            "'add' has no attribute 'axis' (it takes none)"));
}

TEST_CASE("return count against the declared results and between returns") {
  CHECK(has(verify("func f(x) -> (i64, i64) {\ne:\n  return x\n}\n"),
            "v.ab:3:3: error: 'f' declares 2 results but this return gives 1"));
  CHECK(has(verify("func f(c) {\ne:\n  branch c, a, b\na:\n  return 1\nb:\n  return 1, 2\n}\n"),
            "v.ab:7:3: error: this return gives 2 values but the return at line 5 gives 1"));
}

TEST_CASE("call patterns bind as many values as the callee returns") {
  std::string two = "func g() {\ne:\n  return 1, 2\n}\n\n";
  CHECK(has(verify(two + "func f() {\ne:\n  a, b, c = call g()\n  return\n}\n"),
            "the pattern binds 3 values, but 'g' returns 2"));
  CHECK(verify(two +
               "func f() {\ne:\n  a, b = call g()\n  t = call g()\n  call g()\n  return a\n}\n") ==
        "");
  CHECK(has(verify("func g() {\ne:\n  return\n}\n\nfunc f() {\ne:\n  a = call g()\n  return\n}\n"),
            "'g' returns no values"));
}

TEST_CASE("a variable defined in only one arm is undefined after the join") {
  std::string d = verify(
      "func f(c) {\nentry:\n  branch c, yes, no\nyes:\n  x = 1\n  goto join\nno:\n  goto join\n"
      "join:\n  return x\n}\n");
  CHECK(has(d, "v.ab:10:10: error: variable 'x' is not defined on every path to this use"));
}

TEST_CASE("a variable defined in both arms is defined after the join") {
  CHECK(
      verify("func f(c) {\nentry:\n  branch c, yes, no\nyes:\n  x = 1\n  goto join\nno:\n  x = 2\n"
             "  goto join\njoin:\n  return x\n}\n") == "");
}

TEST_CASE("loops: defined only inside the body is undefined after the loop") {
  std::string d = verify(
      "func f(n) {\nentry:\n  i = 0\n  goto head\nhead:\n  more = lt(i, n)\n  branch more, body, "
      "done\n"
      "body:\n  last = i\n  i = add(i, 1)\n  goto head\ndone:\n  return last\n}\n");
  CHECK(has(d, "v.ab:13:10: error: variable 'last' is not defined on every path to this use"));
}

TEST_CASE("loops: a variable defined before the loop and updated in it is fine") {
  CHECK(verify("func f(n) {\nentry:\n  i = 0\n  goto head\nhead:\n  more = lt(i, n)\n  branch "
               "more, body, done\n"
               "body:\n  i = add(i, 1)\n  goto head\ndone:\n  return i\n}\n") == "");
}

TEST_CASE("loops: a read before the first write in a loop back to the entry") {
  std::string d = verify(
      "func f(n) {\nentry:\n  y = add(x, 1)\n  x = y\n  c = lt(x, n)\n  branch c, entry, "
      "out\nout:\n  return x\n}\n");
  CHECK(has(d, "v.ab:3:11: error: variable 'x' is not defined on every path to this use"));
}

TEST_CASE("an instruction reading the variable it defines first") {
  CHECK(has(verify("func f() {\ne:\n  x = add(x, 1)\n  return x\n}\n"),
            "variable 'x' is not defined on every path"));
}

TEST_CASE("unknown variable, with a suggestion") {
  CHECK(has(verify("func f(count) {\ne:\n  y = add(cont, 1)\n  return y\n}\n"),
            "v.ab:3:11: error: unknown variable 'cont' (did you mean 'count'?)"));
}

TEST_CASE("duplicates: labels, functions, parameters, pattern names") {
  CHECK(has(verify("func f() {\na:\n  goto a\na:\n  return\n}\n"),
            "v.ab:4:1: error: label 'a' is defined twice in 'f' (first at line 2)"));
  CHECK(has(verify("func f() {\na:\n  return\n}\n\nfunc f() {\na:\n  return\n}\n"),
            "v.ab:6:6: error: function 'f' is defined twice (first at line 1)"));
  CHECK(has(verify("func f(x, x) {\na:\n  return\n}\n"),
            "v.ab:1:11: error: parameter 'x' is declared twice"));
  CHECK(has(verify("func f(t) {\na:\n  x, x = t\n  return\n}\n"),
            "'x' is bound twice in one pattern"));
}

TEST_CASE("lowered-only forms are rejected in functions") {
  CHECK(has(verify("func f(x) {\na:\n  pop x\n  return\n}\n"),
            "'pop' only appears in lowered programs"));
  CHECK(has(verify("func f(x) {\na:\n  x! = add(x, 1)\n  return\n}\n"),
            "in-place update 'x!' only appears in lowered programs"));
  CHECK(has(verify("func f(x) {\na:\n  halt\n}\n"), "'halt' only appears in lowered programs"));
  CHECK(has(verify("func f(x) {\na:\n  push_goto a, a\n}\n"),
            "'push_goto' only appears in lowered programs"));
  CHECK(has(verify("func f(x) {\na:\n  y.z = x\n  return\n}\n"),
            "names with '.' only appear in lowered programs"));
}

TEST_CASE("several independent errors are all reported") {
  CHECK(errors("func f(x) {\na:\n  y = add(x)\n  z = call nope(y)\n  branch x, b, c\nb:\n  return "
               "w\n}\n") == 4);
}

TEST_CASE("lowered programs: undeclared variables, unknown labels, source-only forms") {
  std::string d = verify(
      "var m.x: i64 full\n\nprogram m(m.x) -> (m.y) {\nm.entry:\n  m.x! = add(m.z, 1)\n  a = call "
      "f(m.x)\n"
      "  push_goto m.ret, m.entyr\nm.ret:\n  return m.x\n}\n");
  CHECK(has(d, "v.ab:3:20: error: undeclared variable 'm.y'"));
  CHECK(has(d, "undeclared variable 'm.z'"));
  CHECK(has(d, "'call' does not appear in lowered programs"));
  CHECK(has(d, "unknown label 'm.entyr' (did you mean 'm.entry'?)"));
  CHECK(has(d, "'return' does not appear in lowered programs"));
}

TEST_CASE("result_count: declared, from returns, none") {
  auto count = [](const std::string& text) {
    Result<Module> m = parse_text("v.ab", text);
    REQUIRE(m.ok());
    return result_count(m->funcs[0]);
  };
  CHECK(count("func f() -> (i64, i64) {\ne:\n  return 1, 2\n}\n") == 2u);
  CHECK(count("func f() {\ne:\n  return 1, 2, 3\n}\n") == 3u);
  CHECK(count("func f() {\ne:\n  goto e\n}\n") == 0u);
}
