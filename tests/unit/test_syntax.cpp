// The structured form and nested expressions (docs/language.md, "The structured form"): what the
// front end makes of each construct, where its diagnostics point, and what `fmt`
// prints (comments kept, idempotent).
#include <doctest/doctest.h>

#include "ir/printer.h"
#include "parse/parser.h"
#include "parse/syntax.h"
#include "passes/verify.h"

using namespace ab;

namespace {

// The block form the front end produced, printed.
std::string blocks(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  std::string printed = print_module(*m);
  // What the front end printed parses again to the same IR.
  Result<Module> again = parse_text("t2.ab", printed);
  INFO(printed);
  INFO(again.diags().render());
  REQUIRE(again.ok());
  CHECK(*again == *m);
  Diagnostics d(m->source);
  verify(*m, d);
  INFO(d.render());
  CHECK_FALSE(d.has_errors());
  return printed;
}

// Parse and verify errors, rendered.
std::string errors(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  if (!m) return m.diags().render();
  Diagnostics d(m->source);
  verify(*m, d);
  REQUIRE(d.has_errors());
  return d.render();
}

std::string fmt(const std::string& text) {
  Result<syntax::File> f = syntax::parse_syntax(std::make_shared<SourceFile>("t.ab", text));
  INFO(f.diags().render());
  REQUIRE(f.ok());
  std::string out = syntax::format(*f);
  Result<syntax::File> again = syntax::parse_syntax(std::make_shared<SourceFile>("t2.ab", out));
  INFO(out);
  REQUIRE(again.ok());
  CHECK(syntax::format(*again) == out);  // idempotent
  return out;
}

}  // namespace

TEST_CASE("infix operators become three-address instructions with fresh temporaries") {
  CHECK(blocks("func f(a, b) {\n  x = a + b * 2\n  return x\n}\n") ==
        "func f(a, b) {\nentry:\n  t.1 = mul(b, 2)\n  x = add(a, t.1)\n  return x\n}\n");
  // Left-associative - and /, right-associative **, ** tighter than prefix minus.
  CHECK(blocks("func f(a, b, c) {\n  return a - b - c\n}\n") ==
        "func f(a, b, c) {\nentry:\n  t.2 = sub(a, b)\n  t.1 = sub(t.2, c)\n  return t.1\n}\n");
  CHECK(blocks("func f(x) {\n  return -x ** 2\n}\n") ==
        "func f(x) {\nentry:\n  t.2 = pow(x, 2)\n  t.1 = neg(t.2)\n  return t.1\n}\n");
  CHECK(blocks("func f(x) {\n  return 2 ** 3 ** x\n}\n") ==
        "func f(x) {\nentry:\n  t.2 = pow(3, x)\n  t.1 = pow(2, t.2)\n  return t.1\n}\n");
  // Comparisons bind looser than arithmetic, not looser than `and`.
  CHECK(blocks("func f(a, b) {\n  c = not a + 1 < b\n  return c\n}\n") ==
        "func f(a, b) {\nentry:\n  t.2 = add(a, 1)\n  t.1 = lt(t.2, b)\n  c = not(t.1)\n  "
        "return c\n}\n");
  // A negative literal stays a literal; a user name of the temporaries' shape is skipped.
  CHECK(blocks("func f(t.1) {\n  y = t.1 * -3\n  return y + 1\n}\n") ==
        "func f(t.1) {\nentry:\n  y = mul(t.1, -3)\n  t.2 = add(y, 1)\n  return t.2\n}\n");
}

TEST_CASE("calls of module functions nest inside expressions, with or without 'call'") {
  std::string out = blocks(
      "func g(n) {\n  return n\n}\n\nfunc f(n) {\n  r = g(n)\n  s = call g(g(n) + 1)\n  "
      "g(r)\n  return r + s\n}\n");
  CHECK(out.find("  r = call g(n)\n") != std::string::npos);
  CHECK(out.find("  t.2 = call g(n)\n  t.1 = add(t.2, 1)\n  s = call g(t.1)\n") !=
        std::string::npos);
  CHECK(out.find("  call g(r)\n") != std::string::npos);
}

TEST_CASE("block-form functions take nested expressions too") {
  CHECK(blocks("func f(a, b) {\nentry:\n  s = add(a, b * 2)\n  t = a + b\n  return s - t\n}\n") ==
        "func f(a, b) {\nentry:\n  t.1 = mul(b, 2)\n  s = add(a, t.1)\n  t = add(a, b)\n  "
        "t.2 = sub(s, t)\n  return t.2\n}\n");
}

TEST_CASE("if, else if, else, while, break, continue become blocks") {
  std::string out = blocks(
      "func f(n) {\n  i = 0\n  while i < n {\n    if i == 3 {\n      break\n    } else if i == 1 {"
      "\n      i = i + 2\n      continue\n    } else {\n      i = i + 1\n    }\n  }\n  return "
      "i\n}\n");
  CHECK(out ==
        "func f(n) {\nentry:\n  i = 0\n  goto loop.1\nloop.1:\n  t.4 = lt(i, n)\n  branch t.4, "
        "body.2, done.3\nbody.2:\n  t.6 = eq(i, 3)\n  branch t.6, then.7, elif.8\nthen.7:\n  goto "
        "done.3\nelif.8:\n  t.9 = eq(i, 1)\n  branch t.9, then.10, otherwise.11\nthen.10:\n  i = "
        "add(i, "
        "2)\n  goto loop.1\notherwise.11:\n  i = add(i, 1)\n  goto endif.5\nendif.5:\n  goto "
        "loop.1\ndone.3:\n  return i\n}\n");
  // Falling off the end returns nothing; an if whose arms all return has no join block.
  CHECK(blocks("func f(c: bool) {\n  if c {\n    return\n  } else {\n    return\n  }\n}\n") ==
        "func f(c: bool) {\nentry:\n  branch c, then.2, otherwise.3\nthen.2:\n  "
        "return\notherwise.3:\n  "
        "return\n}\n");
  CHECK(blocks("func f() {\n}\n") == "func f() {\nentry:\n  return\n}\n");
}

TEST_CASE("infix and/or short-circuit: the right side runs in its own block") {
  std::string out = blocks("func f(x: i64[3], i) {\n  ok = i < 3 and x[i] > 0\n  return ok\n}\n");
  CHECK(
      out ==
      "func f(x: i64[3], i) {\nentry:\n  t.1 = lt(i, 3)\n  branch t.1, rhs.3, short.4\nrhs.3:\n  "
      "t.7 = get(x, i)\n  t.6 = gt(t.7, 0)\n  t.2 = t.6\n  goto join.5\nshort.4:\n  t.2 = false\n  "
      "goto join.5\njoin.5:\n  ok = t.2\n  return ok\n}\n");
  // `or` takes the shortcut when the left side is true; the call form evaluates both.
  out = blocks("func f(a: bool, b: bool) {\n  c = a or b\n  d = or(a, b)\n  return c, d\n}\n");
  CHECK(out.find("branch a, short.") != std::string::npos);
  CHECK(out.find("  t.1 = true\n") != std::string::npos);
  CHECK(out.find("  d = or(a, b)\n") != std::string::npos);
}

TEST_CASE("tensors from expressions and x[i] = v") {
  CHECK(blocks("func f(a, b) {\n  v = [a, b + 1, 2]\n  v[0] = -v[1]\n  return v, [1, -2]\n}\n") ==
        "func f(a, b) {\nentry:\n  t.1 = add(b, 1)\n  v = stack(a, t.1, 2)\n  t.3 = get(v, 1)\n  "
        "t.2 = neg(t.3)\n  v = set(v, 0, t.2)\n  return v, [1, -2]\n}\n");
}

TEST_CASE("x[i][j] = v is one set with both indices") {
  CHECK(blocks("func f(m, i) {\n  m[i][i + 1] = 0\n  return m\n}\n") ==
        "func f(m, i) {\nentry:\n  t.1 = add(i, 1)\n  m = set(m, i, t.1, 0)\n  return m\n}\n");
  CHECK(blocks("func f(m, i) {\n  m[i, 0] -= m[0][i]\n  return m\n}\n") ==
        "func f(m, i) {\nentry:\n  t.1 = get(m, i, 0)\n  t.3 = get(m, 0, i)\n  "
        "t.2 = sub(t.1, t.3)\n  m = set(m, i, 0, t.2)\n  return m\n}\n");
}

TEST_CASE("front-end diagnostics point at the sub-expression") {
  CHECK(errors("func f(n) {\n  return n * (n + m)\n}\n")
            .find("t.ab:2:19: error: unknown variable 'm'") != std::string::npos);
  CHECK(errors("func f(a, b, c) {\n  return a < b < c\n}\n")
            .find("t.ab:2:16: error: syntax error: comparisons do not chain") != std::string::npos);
  CHECK(errors("func add(a, b) {\n  return a\n}\n")
            .find("t.ab:1:6: error: function 'add' has the name of a primitive") !=
        std::string::npos);
  CHECK(errors("func f(n) {\n  return n\n  n = 1\n}\n")
            .find("t.ab:3:3: error: this statement can never run") != std::string::npos);
  CHECK(
      errors("func f(n) {\n  continue\n}\n").find("t.ab:2:3: error: 'continue' outside a loop") !=
      std::string::npos);
  CHECK(errors("func f(n) {\n  n + 1\n}\n")
            .find("t.ab:2:3: error: an expression alone must be a call") != std::string::npos);
  CHECK(errors("func f(n) {\nentry:\n  if n {\n    return\n  }\n  return\n}\n")
            .find("t.ab:3:3: error: if, while, break and continue belong to functions written in "
                  "statements") != std::string::npos);
  CHECK(errors("func f(n) {\n  goto x\n}\n")
            .find("t.ab:2:3: error: a function written in "
                  "statements has no labels or jumps") != std::string::npos);
  CHECK(errors("func f(n) {\n  x = [[1, 2], [3]]\n}\n").find("t.ab:2:16: error: ragged") !=
        std::string::npos);
  // An unknown callee is a function typo or an operation typo, whichever it is closer to.
  CHECK(errors("func fib(n) {\n  return fibb(n - 1)\n}\n")
            .find("t.ab:2:10: error: unknown function 'fibb' (did you mean 'fib'?)") !=
        std::string::npos);
  CHECK(errors("func fib(n) {\n  return sqrtt(n)\n}\n")
            .find("t.ab:2:10: error: unknown operation 'sqrtt' (did you mean 'sqrt'?)") !=
        std::string::npos);
}

TEST_CASE("fmt prints the structured form canonically and keeps every comment") {
  std::string src =
      "# header\nfunc   f(n:i64)->i64{   # on the header\n  # before the if\n  if n<=1{ # on the "
      "if\n"
      "      return 1 # on the return\n    # closing the then\n  }else if(n==2){\n return 2\n  }   "
      "else {   # on else\n    x=[n,-n ** 2 , f(n-1)]\n  } # on the close\n  while n>0 and not "
      "false{\n    n=n-1\n    break\n  }\n  v[ n ]=call f( n )\n  return add(n , 1) # last\n  # "
      "trailing in body\n} # after\n# end of file\n";
  CHECK(fmt(src) ==
        "# header\nfunc f(n: i64) -> i64 { # on the header\n  # before the if\n  if n <= 1 { # on "
        "the if\n    return 1 # on the return\n    # closing the then\n  } else if (n == 2) {\n    "
        "return 2\n  } else { # on else\n    x = [n, -n ** 2, f(n - 1)]\n  } # on the close\n  "
        "while n > 0 and not false {\n    n = n - 1\n    break\n  }\n  v[n] = call f(n)\n  return "
        "add(n, 1) # last\n  # trailing in body\n} # after\n# end of file\n");
}

TEST_CASE("fmt keeps comments of the block form with their label, instruction or block") {
  std::string src =
      "func f(n) {\n# before entry\nentry:   # on entry\n  m = add(n,\n  # inside\n  1) # after\n"
      "  return m\n}\n";
  CHECK(fmt(src) ==
        "func f(n) {\n# before entry\nentry: # on entry\n  # inside\n  m = add(n, 1) # after\n  "
        "return m\n}\n");
}
