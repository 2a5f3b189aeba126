// Program::parameters(): the entry's inputs by name and declared type (what
// the Python module binds keyword arguments to).
#include <doctest/doctest.h>

#include "autobatch/autobatch.h"

TEST_CASE("api: parameters of an entry, a lowered program and a program without entry") {
  autobatch::CompileOptions co;
  co.entry = "main";
  auto p = autobatch::compile("func main(x, k: i32, v: f64[3]) {\n  return x\n}\n", co);
  REQUIRE(p);
  auto params = p->parameters();
  REQUIRE(params.size() == 3);
  CHECK(params[0].name == "x");
  CHECK(!params[0].type);
  CHECK(params[1].name == "k");
  REQUIRE(params[1].type);
  CHECK(params[1].type->str() == "i32");
  CHECK(params[2].type->str() == "f64[3]");

  // A lowered program's inputs keep the source's names.
  co.entry = "";
  auto fib = autobatch::compile("func fib(n: i64) -> i64 {\n  return n\n}\n", co);
  REQUIRE(fib);
  auto text = fib->lower();
  REQUIRE(text);
  auto lowered = autobatch::compile(*text);
  REQUIRE(lowered);
  REQUIRE(lowered->is_lowered());
  auto lp = lowered->parameters();
  REQUIRE(lp.size() == 1);
  CHECK(lp[0].name == "n");
  CHECK(lp[0].type->str() == "i64");

  // Two functions and no main: no entry, no parameters.
  auto none = autobatch::compile("func f(a) {\n  return a\n}\nfunc g(b) {\n  return b\n}\n");
  REQUIRE(none);
  CHECK(none->entry().empty());
  CHECK(none->parameters().empty());
}
