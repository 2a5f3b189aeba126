// Forms of the language that follow habits from Python and C (docs/language.md,
// "The structured form"): `return f(x)` and `a, b = f(x)` for any number of
// results, `x += e` and its kin, `for i in range(...)` with break and continue,
// the constants `pi` and `e`, `else` on its own line, and the messages for
// the habits the language does not take (`elif`, a stray `else`, `for x in
// xs`). Each form: what the front end makes of it, what `fmt` prints, and
// what it computes under every VM.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "ir/printer.h"
#include "parse/parser.h"
#include "parse/syntax.h"
#include "passes/verify.h"

namespace {

const char* const kVms[] = {"stack", "stackless", "reference"};

// Parse and verify errors, rendered ("" when there are none).
std::string problems(const std::string& text) {
  ab::Result<ab::Module> m = ab::parse_text("t.ab", text);
  if (!m) return m.diags().render();
  ab::Diagnostics d(m->source);
  ab::verify(*m, d);
  return d.render();
}

// fmt's output, checked idempotent.
std::string fmt(const std::string& text) {
  ab::Result<std::string> f = ab::format_text("t.ab", text);
  INFO(f.diags().render());
  REQUIRE(f.ok());
  ab::Result<std::string> again = ab::format_text("t2.ab", *f);
  REQUIRE(again.ok());
  CHECK(*again == *f);
  return *f;
}

// The block form the front end made, printed; it parses back to the same IR.
std::string blocks(const std::string& text) {
  ab::Result<ab::Module> m = ab::parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  std::string printed = ab::print_module(*m);
  ab::Result<ab::Module> again = ab::parse_text("t2.ab", printed);
  INFO(printed);
  REQUIRE(again.ok());
  CHECK(*again == *m);
  CHECK(problems(text).empty());
  return printed;
}

// Runs `text` on i64 inputs under every VM, checks they agree and returns
// the outputs as doubles (one vector per output) with the names.
struct Ran {
  std::vector<std::vector<double>> outputs;
  std::vector<std::string> names;
};

Ran run(const std::string& text, const std::vector<std::vector<int64_t>>& inputs,
        int64_t batch = 0) {
  autobatch::Result<autobatch::Program> p = autobatch::compile(text);
  INFO(p.rendered());
  REQUIRE(p.ok());
  std::vector<autobatch::ArrayView> views;
  for (const auto& in : inputs)
    views.push_back(autobatch::ArrayView::of(in.data(), static_cast<int64_t>(in.size())));
  Ran first;
  for (const char* vm : kVms) {
    autobatch::RunOptions o;
    o.vm = vm;
    o.batch = batch;
    autobatch::RunResult r = p->run(views, o);
    INFO(vm);
    INFO(r.rendered());
    REQUIRE(r.ok());
    Ran got;
    got.names = r.names;
    for (const auto& a : r.outputs) {
      std::vector<double> v;
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        switch (a.dtype()) {
          case autobatch::DType::I64:
            v.push_back(static_cast<double>(a.as<int64_t>()[i]));
            break;
          case autobatch::DType::F64:
            v.push_back(a.as<double>()[i]);
            break;
          default:
            FAIL("unexpected dtype");
        }
      }
      got.outputs.push_back(std::move(v));
    }
    if (vm == kVms[0]) {
      first = got;
    } else {
      CHECK(got.outputs == first.outputs);
      CHECK(got.names == first.names);
    }
  }
  return first;
}

}  // namespace

TEST_CASE("return f(x) passes on every result of f, however many") {
  // The old message: "'integrate' declares 2 results but this return gives 1".
  const char* text = R"(func pair(x: i64) -> (i64, i64) {
  return x + 1, x * 2
}
func triple(x: i64) {
  a, b = pair(x)
  return a, b, a + b
}
func integrate(x: i64) -> (i64, i64) {
  return pair(x)
}
func again(x) {
  return integrate(x)
}
func main(x: i64) {
  p, q = again(x)
  a, b, c = triple(x)
  return p, q, c
}
)";
  CHECK(problems(text).empty());
  Ran r = run(text, {{1, 5}});
  CHECK(r.outputs == std::vector<std::vector<double>>{{2, 6}, {2, 10}, {4, 16}});
  // `return pair(x)` binds the results to temporaries and returns them.
  CHECK(blocks("func pair(x) -> (i64, i64) {\n  return x, x\n}\n"
               "func f(x) -> (i64, i64) {\n  return pair(x)\n}\n")
            .find("  t.1, t.2 = call pair(x)\n  return t.1, t.2\n") != std::string::npos);
  // A function of no results: `return g(x)` calls it and returns nothing.
  CHECK(problems("func g(x) {\n  return\n}\nfunc f(x) {\n  return g(x)\n}\n").empty());
}

TEST_CASE("x += e, -=, *=, /=, %=, **= assign x op e, on variables and elements") {
  // The old message: "expected an operand after the operator".
  const char* text = R"(func main(n: i64) {
  x = n
  x += 10
  x -= 1
  x *= 3
  x /= 2
  x %= 100
  y = 2
  y **= 3
  v = [1, 2, 3]
  v[1] += n
  v[2] *= v[1]
  return x, y, v[1], v[2]
}
)";
  Ran r = run(text, {{1, 4}});
  // n = 1: ((1 + 10 - 1) * 3) / 2 = 15; n = 4: (13 * 3) / 2 = 19
  CHECK(r.outputs[0] == std::vector<double>{15, 19});
  CHECK(r.outputs[1] == std::vector<double>{8, 8});
  CHECK(r.outputs[2] == std::vector<double>{3, 6});
  CHECK(r.outputs[3] == std::vector<double>{9, 18});
  CHECK(fmt("func f(x) {\n  x  +=  1.0\n  x[ i ] -=2\n  x**=y\n  return x\n}\n") ==
        "func f(x) {\n  x += 1.0\n  x[i] -= 2\n  x **= y\n  return x\n}\n");
  // The right side is one operand: x *= a + b is x = x * (a + b).
  CHECK(blocks("func f(x, a, b) {\n  x *= a + b\n  return x\n}\n")
            .find("  t.1 = add(a, b)\n  x = mul(x, t.1)\n") != std::string::npos);
  // x[i] op= v reads x[i] once and evaluates i once.
  CHECK(blocks("func f(x, i) {\n  x[i + 1] += 2\n  return x\n}\n")
            .find("  t.1 = add(i, 1)\n  t.2 = get(x, t.1)\n  t.3 = add(t.2, 2)\n"
                  "  x = set(x, t.1, t.3)\n") != std::string::npos);
}

TEST_CASE("for i in range(n) and range(a, b), with break and continue") {
  // The old message: "unexpected text; expected the end of the line".
  const char* text = R"(func main(n: i64) {
  total = 0
  for i in range(n) {
    total += i
  }
  odd = 0
  j = 0
  for j in range(1, n + 1) {
    if j % 2 == 0 {
      continue
    }
    if j > 7 {
      break
    }
    odd += j
  }
  last = -1
  for k in range(3, n) {
    last = k
    n = 0
    k = 100
  }
  return total, odd, last, j
}
)";
  Ran r = run(text, {{0, 1, 5, 10}});
  CHECK(r.outputs[0] == std::vector<double>{0, 0, 10, 45});
  CHECK(r.outputs[1] == std::vector<double>{0, 1, 9, 16});
  // The bound is evaluated once (n = 0 in the body does not stop the loop);
  // assigning k does not change the iterations.
  CHECK(r.outputs[2] == std::vector<double>{-1, -1, 4, 9});
  // After the loop j holds the last value it took (the one break left it at).
  CHECK(r.outputs[3] == std::vector<double>{0, 1, 5, 9});
  CHECK(fmt("func f(n) {\n  for  i  in  range( 2 ,n ) {\n  x = i\n  }\n  return\n}\n") ==
        "func f(n) {\n  for i in range(2, n) {\n    x = i\n  }\n  return\n}\n");
  const std::string b = blocks("func f(n) {\n  s = 0\n  for i in range(n) {\n    s += i\n  }\n"
                               "  return s\n}\n");
  CHECK(b.find("  count.1 = 0\n  stop.2 = n\n  goto range.3\nrange.3:\n  t.7 = lt(count.1, stop.2)\n"
               "  branch t.7, body.4, done.6\nbody.4:\n  i = count.1\n") != std::string::npos);
  CHECK(b.find("step.5:\n  count.1 = add(count.1, 1)\n  goto range.3\n") != std::string::npos);
}

TEST_CASE("a for loop's variable is undefined after a loop that may not run") {
  CHECK(problems("func f(n) {\n  for i in range(n) {\n    x = 1\n  }\n  return i\n}\n")
            .find("'i'") != std::string::npos);
}

TEST_CASE("for loops over anything but range, and C's for, are answered with the fix") {
  CHECK(problems("func f(xs) {\n  for x in xs {\n    y = x\n  }\n  return\n}\n")
            .find("t.ab:2:12: error: a for loop runs over range(n) or range(a, b)") !=
        std::string::npos);
  CHECK(problems("func f(n) {\n  for i in range(0, n, 2) {\n    y = i\n  }\n  return\n}\n")
            .find("range(n) or range(a, b)") != std::string::npos);
  CHECK(problems("func f(n) {\n  for (i = 0; i < n; i += 1) {\n  }\n  return\n}\n")
            .find("t.ab:2:7: error: syntax error: expected the loop variable: for i in "
                  "range(n) {") != std::string::npos);
  CHECK(problems("func f(n) {\n  for i range(n) {\n  }\n  return\n}\n")
            .find("expected 'in' after the loop variable") != std::string::npos);
  CHECK(problems("func f(n) {\n  break\n}\n").find("'break' outside a loop") != std::string::npos);
}

TEST_CASE("pi and e are constants unless the function has a variable of that name") {
  const char* text = R"(func area(r: f64) -> f64 {
  return pi * r ** 2
}
func growth(t: f64) -> f64 {
  return e ** t
}
func energy(m: f64) -> f64 {
  e = m * 2.0
  return e
}
func shadow(pi: f64) -> f64 {
  return pi + 1.0
}
)";
  autobatch::Result<autobatch::Program> p = autobatch::compile(text);
  REQUIRE(p.ok());
  for (const char* entry : {"area", "growth", "energy", "shadow"}) {
    autobatch::CompileOptions o;
    o.entry = entry;
    auto q = autobatch::compile(text, o);
    REQUIRE(q.ok());
    double x[] = {1.0, 2.0};
    autobatch::RunResult r = q->run({autobatch::ArrayView::of(x, 2)});
    REQUIRE(r.ok());
    const double* y = r.outputs[0].as<double>();
    const std::string name = entry;
    for (int i = 0; i < 2; ++i) {
      double want = name == "area"     ? M_PI * x[i] * x[i]
                    : name == "growth" ? std::pow(M_E, x[i])
                    : name == "energy" ? 2 * x[i]
                                       : x[i] + 1;
      CHECK(y[i] == doctest::Approx(want).epsilon(1e-15));
    }
  }
  // They are f64 literals: next to an f32 they are f32.
  CHECK(blocks("func f(x: f32) {\n  return x * pi\n}\n")
            .find("mul(x, 3.141592653589793)") != std::string::npos);
  // fmt keeps the names.
  CHECK(fmt("func f(x) {\n  return -pi*e\n}\n") == "func f(x) {\n  return -pi * e\n}\n");
}

TEST_CASE("else and else if may start the line after the if's '}'") {
  // The old message: "expected a label, an instruction, a terminator, or '}'".
  const char* text = R"(func sign(x: i64) -> i64 {
  if x > 0 {
    return 1
  }
  # negative or zero
  else if x < 0 {
    return -1
  }
  else {
    return 0
  }
}
)";
  Ran r = run(text, {{-5, 0, 7}});
  CHECK(r.outputs[0] == std::vector<double>{-1, 0, 1});
  CHECK(fmt(text) ==
        "func sign(x: i64) -> i64 {\n  if x > 0 {\n    return 1\n    # negative or zero\n"
        "  } else if x < 0 {\n    return -1\n  } else {\n    return 0\n  }\n}\n");
}

TEST_CASE("a stray else and Python's elif are answered with the fix") {
  CHECK(problems("func f(x) {\n  y = 1\n  else {\n    y = 2\n  }\n  return y\n}\n")
            .find("t.ab:3:3: error: syntax error: 'else' must follow the '}' that closes an if") !=
        std::string::npos);
  CHECK(problems("func f(x) {\n  if x {\n    y = 1\n  } elif x {\n    y = 2\n  }\n  return\n}\n")
            .find("t.ab:4:5: error: syntax error: write 'else if': the language has no 'elif'") !=
        std::string::npos);
  CHECK(problems("func f(x) {\n  elif x {\n  }\n  return\n}\n").find("write 'else if'") !=
        std::string::npos);
  // `elif` stays a name.
  CHECK(problems("func f(x) {\n  elif = x\n  return elif\n}\n").empty());
}

TEST_CASE("results may be named in the signature; fmt and the printer keep the names") {
  CHECK(fmt("func f(x)->( total :f64,n: i64 ) {\n  return x, 1\n}\n") ==
        "func f(x) -> (total: f64, n: i64) {\n  return x, 1\n}\n");
  CHECK(fmt("func f(x) -> total: f64 {\n  return x\n}\n") ==
        "func f(x) -> total: f64 {\n  return x\n}\n");
  CHECK(fmt("func f(x) -> (p: (f64, i64), i64) {\n  return x, 1\n}\n") ==
        "func f(x) -> (p: (f64, i64), i64) {\n  return x, 1\n}\n");
  CHECK(blocks("func f(x: f64) -> (total: f64, i64) {\n  return x, 1\n}\n")
            .find("func f(x: f64) -> (total: f64, i64) {") != std::string::npos);
  CHECK(problems("func f(x) -> (a: f64, a: f64) {\n  return x, x\n}\n")
            .find("result name 'a' is given twice in 'f'") != std::string::npos);
  CHECK(problems("func f(x) -> (a: f64, b) {\n  return x, x\n}\n")
            .find("expected a result type, or a name and its type (total: f64)") !=
        std::string::npos);
}

TEST_CASE("entry func marks the entry; fmt keeps the mark; one mark per module") {
  CHECK(fmt("entry  func main(x) {\n  return x\n}\n") == "entry func main(x) {\n  return x\n}\n");
  CHECK(problems("entry func a(x) {\n  return x\n}\nentry func b(x) {\n  return x\n}\n")
            .find("'b' is marked 'entry', but so is 'a'") != std::string::npos);
  CHECK(problems("entry main(x) {\n  return x\n}\n")
            .find("expected 'func' after 'entry': entry func main(...)") != std::string::npos);
  // `entry` is still a label and a variable.
  CHECK(problems("func f(x) {\nentry:\n  entry = x\n  return entry\n}\n").empty());
}

TEST_CASE("X[i, j], X[:, j] and X[a:b, c:d] index a matrix by row and column; concat joins rows") {
  // The old message: "an index takes one position per bracket: write X[i][j] ...".
  const char* text = R"(func main(k: i64) {
  X = reshape(iota(n=12), shape=[3, 4]) * k
  col = X[:, 1]
  last = X[:, -1]
  block = X[1:, 2:]
  rows = X[:2, :]
  a = X[1, 2]
  X[2, 3] = 100
  X[0, 0] += 7
  both = concat(col, last, [k])
  return a, sum(col), sum(last), sum(block), size(block), sum(rows), X[2][3], X[0, 0], size(both), both[6], sum(X[1, :]), sum(X[:, :])
}
)";
  CHECK(problems(text).empty());
  Ran r = run(text, {{1, 2}});
  // X = [[0 1 2 3] [4 5 6 7] [8 9 10 11]] * k
  CHECK(r.outputs[0] == std::vector<double>{6, 12});         // X[1, 2]
  CHECK(r.outputs[1] == std::vector<double>{15, 30});        // 1 + 5 + 9
  CHECK(r.outputs[2] == std::vector<double>{21, 42});        // 3 + 7 + 11
  CHECK(r.outputs[3] == std::vector<double>{34, 68});        // 6 + 7 + 10 + 11
  CHECK(r.outputs[4] == std::vector<double>{4, 4});          // [2, 2]
  CHECK(r.outputs[5] == std::vector<double>{28, 56});        // rows 0 and 1
  CHECK(r.outputs[6] == std::vector<double>{100, 100});      // X[2, 3] = 100
  CHECK(r.outputs[7] == std::vector<double>{7, 7});          // X[0, 0] += 7
  CHECK(r.outputs[8] == std::vector<double>{7, 7});          // 3 + 3 + 1
  CHECK(r.outputs[9] == std::vector<double>{1, 2});          // [k]
  CHECK(r.outputs[10] == std::vector<double>{22, 44});       // row 1
  CHECK(r.outputs[11] == std::vector<double>{66 + 89 + 7, 132 + 78 + 7});
  // X[:, j] is transpose(X)[j]; X[i, j] is X[i][j], one get with an index per dimension.
  const std::string col_blocks = blocks("func f(X: f64[2, 3], j) {\n  return X[:, j]\n}\n");
  INFO(col_blocks);
  CHECK(col_blocks.find(" = transpose(X)\n") != std::string::npos);
  CHECK(col_blocks.find(" = get(t.") != std::string::npos);
  const std::string elem_blocks = blocks("func f(X: f64[2, 3], i, j) {\n  return X[i, j]\n}\n");
  INFO(elem_blocks);
  CHECK(elem_blocks.find(" = get(X, i, j)\n") != std::string::npos);
  CHECK(elem_blocks.find("transpose") == std::string::npos);
  CHECK(blocks("func f(X: f64[2, 3], i, j) {\n  return X[i][j]\n}\n") == elem_blocks);
  // An assignment to an element is one set, whichever brackets it is written with; `+=` reads
  // the element once.
  const std::string set_blocks =
      blocks("func f(X: f64[2, 3], i, j) {\n  X[i, j] = 1.0\n  X[i][j] += 2.0\n  return X\n}\n");
  INFO(set_blocks);
  CHECK(set_blocks.find("X = set(X, i, j, 1.0)\n") != std::string::npos);
  CHECK(set_blocks.find(" = get(X, i, j)\n") != std::string::npos);
  CHECK(set_blocks.find("X = set(X, i, j, t.") != std::string::npos);
  // fmt keeps the positions as written, in expressions and assignments.
  CHECK(fmt("func f(X) {\n  X[ 1,2 ] = X[ :,1 ][0] + sum(X[1: , :-1]) + sum( X[:,:] )\n"
            "  X[0,1]+=1.0\n  return (X[0, 0])\n}\n") ==
        "func f(X) {\n  X[1, 2] = X[:, 1][0] + sum(X[1:, :-1]) + sum(X[:, :])\n"
        "  X[0, 1] += 1.0\n  return (X[0, 0])\n}\n");
  // What it cannot mean is an error at its place.
  CHECK(problems("func f(X: f64[2, 3, 4]) {\n  return X[:, :, 1]\n}\n")
            .find("t.ab:2:18: error: after a slice only one more position may follow") !=
        std::string::npos);
  CHECK(problems("func f(X: f64[2, 3]) {\n  X[0:1, 0] = 1.0\n  return X\n}\n")
            .find("t.ab:2:5: error: a slice cannot be assigned to") != std::string::npos);
  CHECK(problems("func f(X: f64[2, 3]) {\n  return X[0, ]\n}\n")
            .find("t.ab:2:15: error: syntax error: expected an index or a slice") != std::string::npos);
  // Shapes are checked when the run's inputs fix the types.
  auto type_errors = [](const char* t) {
    autobatch::Result<autobatch::Program> p = autobatch::compile(t);
    REQUIRE(p.ok());
    const int64_t k[] = {1};
    return p->run({autobatch::ArrayView::of(k, 1)}).rendered();
  };
  CHECK(type_errors("func f(k: i64) {\n  return concat([1.0, 2.0], fill(1.0, shape=[2, 2]))\n}\n")
            .find("2:10: error: the operands of 'concat' must have equal shapes after the first "
                  "dimension, got f64[2] and f64[2,2]") != std::string::npos);
  CHECK(type_errors("func f(k: i64) {\n  return concat(k, k)\n}\n").find("must be tensors") !=
        std::string::npos);
  CHECK(type_errors("func f(k: i64) {\n  X = zeros(shape=[2, 3])\n  return X[k, 0, 1]\n}\n")
            .find("3:10: error: 'get' has 3 indices but f64[2,3] has 2 dimensions") !=
        std::string::npos);
  CHECK(type_errors("func f(k: i64) {\n  X = zeros(shape=[2, 3])\n  X[0, k] = [1.0, 2.0]\n"
                    "  return X\n}\n")
            .find("3:3: error: the value stored by 'set' is f64[2], which does not fit an element "
                  "of f64[2,3]") != std::string::npos);
}
