// value_and_grad (passes/grad.h): the gradient of each function below, at
// random points (one per thread), agrees with central finite differences
// computed by the same program, in the stack VM (compiled and interpreted),
// the stackless VM and the reference interpreter; and the constructs it cannot
// differentiate are compile errors that name them.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

struct Case {
  const char* name;
  std::vector<int64_t> shape;  // of x: {}, {n} or {m, n}
  double lo, hi;               // x is drawn uniformly from [lo, hi]
  // Defines f(x, c), c an f64[3] of data drawn from [0.5, 1.5] (helpers
  // allowed).
  const char* source;
};

const Case kCases[] = {
    {"arithmetic and broadcasting", {3}, -2, 2,
     "func f(x, c) {\n  return sum(x * x * c[0] - x / (1.5 + c[1] * c[1]) + 3.0 - c * x)\n}\n"},
    {"pow", {3}, 0.3, 2, "func f(x, c) {\n  return sum(x ** 2.5 + 1.7 ** x + x ** c)\n}\n"},
    {"exp log trig", {3}, 0.2, 1.5,
     "func f(x, c) {\n"
     "  a = exp(x) + log(x) + log1p(x) + expm1(x) + sqrt(x) + sin(x) + cos(x)\n"
     "  return sum(a + tan(x * 0.5) + tanh(x) + sigmoid(x) - x / c)\n}\n"},
    {"special functions", {4}, 0.05, 6,
     "func f(x, c) {\n"
     "  a = erf(x) + erfc(x * 0.3) + lgamma(x) + log2(x) + log10(x) + cbrt(x)\n"
     "  return sum(a + sinh(x * 0.5) + cosh(x * 0.3) + atan(x))\n}\n"},
    {"lgamma below one half", {}, 0.02, 0.48, "func f(x, c) {\n  return lgamma(x) * c[0]\n}\n"},
    {"lgamma of negative values", {}, -2.9, -2.1, "func f(x, c) {\n  return lgamma(x)\n}\n"},
    {"inverse trig", {3}, -0.9, 0.9,
     "func f(x, c) {\n  return sum(asin(x) * acos(x) + atan2(x, c) + hypot(x, c))\n}\n"},
    {"min max abs mod", {3}, -2, 2,
     "func f(x, c) {\n"
     "  return sum(min(x, c - 1.0) * max(x, 0.5) + abs(x) + x % 1.3 + (c * 2.0) % (x + 3.0))\n"
     "}\n"},
    {"select and comparisons", {4}, -2, 2,
     "func f(x, c) {\n  y = select(x > 0.0, x * x, -3.0 * x)\n  return sum(y) + sum(select(x < c[0], "
     "1.0, x))\n}\n"},
    {"if else", {}, -1, 2,
     "func f(x, c) {\n  if x > 0.5 {\n    r = x * x * c[0]\n  } else {\n    r = sin(x)\n  }\n"
     "  return r + x\n}\n"},
    {"while loop", {}, -1, 1,
     "func f(x, c) {\n  t = x\n  i = 0\n  while i < 5 {\n    t = t * 0.9 + sin(t) * c[1]\n"
     "    i += 1\n  }\n  return t\n}\n"},
    {"loop with a data-dependent count", {}, 0.1, 3,
     "func f(x, c) {\n  t = x\n  n = 0\n  while t < 20.0 and n < 50 {\n    t = t * 1.5 + c[0]\n"
     "    n += 1\n  }\n  return t\n}\n"},
    {"for loop over get and set", {5}, -1, 1,
     "func f(x, c) {\n  y = x\n  for i in range(1, size(x)) {\n"
     "    y[i] = y[i - 1] * 0.5 + x[i] * x[i]\n  }\n  return sum(y * y)\n}\n"},
    {"reshape transpose stack", {4}, -1, 1,
     "func f(x, c) {\n  m = reshape(x, shape=[2, 2])\n  t = transpose(m)\n"
     "  s = [x[0], x[1] * x[2], c[0]]\n  return sum(matmul(m, t)) + dot(s, s)\n}\n"},
    {"linear algebra", {3}, -1, 1,
     "func f(x, c) {\n  a = outer(x, c) + outer(c, x * x)\n  v = matvec(a, x)\n"
     "  return dot(v, v) + sum(matmul(a, transpose(a))) + sum(matvec(a, c))\n}\n"},
    {"reductions with axis", {2, 3}, 0.5, 1.5,
     "func f(x, c) {\n  a = sum(mean(x, axis=0) * c) * sum(prod(x, axis=1))\n"
     "  b = reduce_max(x) + sum(reduce_min(x, axis=-1)) + prod(x) + sum(reduce_max(x, axis=0))\n"
     "  return a + b + mean(x) + sum(sum(x * x, axis=1))\n}\n"},
    {"helpers with tuples", {3}, -1, 1,
     "func helper(a, b) {\n  return a * b, a + b\n}\n"
     "func pair(a) {\n  return tuple(a, a * a)\n}\n"
     "func f(x, c) {\n  p, q = helper(x, c)\n  (u, v) = pair(p)\n  t = tuple(q, c)\n"
     "  (k, l) = t\n  return sum(p * q + u * v + k * l)\n}\n"},
    {"a helper in a loop", {2}, -1, 1,
     "func norm_lp(y, mu, s) {\n  z = (y - mu) / s\n  return -0.5 * z * z - log(s)\n}\n"
     "func f(x, c) {\n  total = 0.0\n  for i in range(3) {\n"
     "    total += norm_lp(c[i], x[0], exp(x[1]))\n  }\n  return total\n}\n"},
    {"fill and a scalar x", {}, -1, 1,
     "func f(x, c) {\n  v = fill(x, shape=[3])\n  return sum(v * c + x) + sum(c * x * x)\n}\n"},
    {"set rows of a matrix", {3}, -1, 1,
     "func f(x, c) {\n  z = zeros(shape=[2, 3])\n  z[0] = x\n  z[1] = x * 2.0 + c\n"
     "  z[1][2] = x[0] * x[1]\n  return sum(z * z)\n}\n"},
    {"integers computed beside", {3}, -1, 1,
     "func f(x, c) {\n  n = cast(c[0] * 3.0, dtype=i64)\n  k = n % 2\n"
     "  return sum(x * cast(k + 1, dtype=f64)) + floor(c[1]) * x[0]\n}\n"},
    {"slices", {6}, -1, 1,
     "func f(x, c) {\n  a = x[1:4] * x[:3] + x[-3:] * c\n  m = reshape(x, shape=[3, 2])\n"
     "  return sum(a * a) + sum(m[1:] ** 2.0) + x[2:3][0]\n}\n"},
    {"concat and indexing by row and column", {3, 2}, -1, 1,
     "func f(x, c) {\n  j = concat(x, x[1:] * 2.0, x[2:] * x[:1], [[0.5, 1.5]])\n"
     "  col = x[:, 1]\n  return sum(j * j) + dot(col, c) + x[2, 0] * x[0, 1] + sum(x[1:, :1])\n}\n"},
    {"elements of a matrix read and written in a loop nest", {3, 3}, -1, 1,
     "func f(x, c) {\n  y = x\n  for i in range(1, 3) {\n    for j in range(3) {\n"
     "      y[i, j] = y[i - 1, j] * c[j] + x[i, 2 - j] * y[i][j]\n    }\n  }\n"
     "  y[0][1] += x[2, 2] * x[-1, 0]\n  return sum(y * y) + y[2, 1]\n}\n"},
    {"a block-form loop back to the entry block", {}, 0.1, 2,
     "func f(x, c) {\nentry:\n  x = x * 1.5 + c[0]\n  more = x < 20.0\n  branch more, entry, done\n"
     "done:\n  return x * x\n}\n"},
    {"x reassigned in the entry loop", {}, 0.1, 1,
     "func f(x, c) {\n  while x < 4.0 {\n    x = x * 2.0 + c[2]\n  }\n  return x * x\n}\n"},
};

// A program returning value_and_grad(f, x, c) and the finite differences.
std::string program(const Case& k) {
  std::string s = k.source;
  const double h = 1e-6;
  const std::string hs = "1e-6", h2 = "2e-6";
  (void)h;
  if (k.shape.empty()) {
    s += "func fd(x, c) {\n  return (f(x + " + hs + ", c) - f(x - " + hs + ", c)) / " + h2 +
         "\n}\n";
  } else {
    int64_t n = 1;
    for (int64_t d : k.shape) n *= d;
    std::string shape = "[";
    for (size_t i = 0; i < k.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(k.shape[i]);
    shape += "]";
    s += "func fd(x, c) {\n  flat = reshape(x, shape=[" + std::to_string(n) + "])\n  g = flat\n";
    s += "  for i in range(" + std::to_string(n) + ") {\n";
    s += "    up = reshape(set(flat, i, flat[i] + " + hs + "), shape=" + shape + ")\n";
    s += "    down = reshape(set(flat, i, flat[i] - " + hs + "), shape=" + shape + ")\n";
    s += "    g[i] = (f(up, c) - f(down, c)) / " + h2 + "\n  }\n";
    s += "  return reshape(g, shape=" + shape + ")\n}\n";
  }
  s += "entry func main(x, c) {\n  v, g = value_and_grad(f, x, c)\n  return v, g, fd(x, c), "
       "f(x, c)\n}\n";
  return s;
}

std::vector<double> doubles(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::F64);
  return std::vector<double>(a.as<double>(), a.as<double>() + a.num_elements());
}

}  // namespace

TEST_CASE("value_and_grad agrees with finite differences in every VM") {
  const int64_t batch = 7;
  std::mt19937_64 rng(20261127);
  for (const Case& k : kCases) {
    const std::string name = k.name;
    CAPTURE(name);
    std::string text = program(k);
    CAPTURE(text);
    autobatch::CompileOptions co;
    co.name = "grad_case.ab";
    auto p = autobatch::compile(text, co);
    REQUIRE_MESSAGE(p, p.rendered());
    int64_t n = 1;
    for (int64_t d : k.shape) n *= d;
    std::uniform_real_distribution<double> ux(k.lo, k.hi), uc(0.5, 1.5);
    std::vector<double> x(static_cast<size_t>(batch * n)), c(static_cast<size_t>(batch * 3));
    for (auto& v : x) v = ux(rng);
    for (auto& v : c) v = uc(rng);
    std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(x.data(), batch, k.shape),
                                            autobatch::ArrayView::of(c.data(), batch, {3})};
    std::vector<double> first_g;
    struct Config {
      const char* vm;
      bool jit;
    };
    for (Config cfg : {Config{"stack", true}, Config{"stack", false}, Config{"stackless", false},
                       Config{"reference", false}}) {
      CAPTURE(cfg.vm);
      CAPTURE(cfg.jit);
      autobatch::RunOptions o;
      o.vm = cfg.vm;
      o.jit = cfg.jit;
      auto r = p->run(in, o);
      REQUIRE_MESSAGE(r.ok(), r.rendered());
      REQUIRE(r.outputs.size() == 4);
      std::vector<double> v = doubles(r.outputs[0]), g = doubles(r.outputs[1]),
                          fd = doubles(r.outputs[2]), f = doubles(r.outputs[3]);
      REQUIRE(g.size() == x.size());
      for (int64_t t = 0; t < batch; ++t) CHECK(v[t] == doctest::Approx(f[t]).epsilon(1e-14));
      for (size_t i = 0; i < g.size(); ++i) {
        CAPTURE(i);
        CAPTURE(x[i]);
        CHECK(std::isfinite(g[i]));
        CHECK(std::abs(g[i] - fd[i]) <= 2e-6 * (1 + std::abs(fd[i])));
      }
      if (first_g.empty()) {
        first_g = g;
      } else {
        for (size_t i = 0; i < g.size(); ++i)
          CHECK(g[i] == doctest::Approx(first_g[i]).epsilon(1e-12));
      }
    }
  }
}

// A loop's gradient is one call per iteration: the loop's header is rotated
// into its body before grad, so the body's function calls itself (a `for`
// loop was three blocks, a header, a body and a step, and three calls per
// iteration). 150 iterations then stay well within the chain's levels.
TEST_CASE("value_and_grad of a loop: one frame per iteration") {
  const char* text = R"(func f(x, y) {
  s = 0.0
  for t in range(1, size(y)) {
    d = y[t - 1] - x
    s += d * d * 0.5 + sin(x * y[t])
  }
  return s
}

entry func main(x: f64, y: f64[150]) {
  v, g = value_and_grad(f, x, y)
  return v, g
}
)";
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<double> x = {0.3, -0.7}, y(150);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(0.1 * static_cast<double>(i));
  std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(x.data(), 2),
                                          autobatch::ArrayView::of(y.data(), 1, {150})};
  // Interpreted, and with compiled code, whose chain runs the whole
  // recursion (--stats counts its depth too).
  for (bool jit : {true, false}) {
    CAPTURE(jit);
    autobatch::RunOptions o;
    o.jit = jit;
    o.stats = true;
    auto r = p->run(in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    REQUIRE(r.stats);
    CHECK(r.stats->peak_stack_depth >= 149);
    CHECK(r.stats->peak_stack_depth <= 155);
  }
  // Every VM runs the same generated functions (the loop's blocks shaped
  // before grad for the unlowered VMs too): the same depth, so a bound of
  // 200 frames holds the 149 iterations everywhere, and 100 fails the same
  // way everywhere (the unlowered VMs ran two calls per iteration, and
  // failed past half the bound the stack VM allowed).
  std::string error;
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    autobatch::RunOptions o;
    o.vm = vm;
    o.max_stack_depth = 200;
    auto r = p->run(in, o);
    CHECK_MESSAGE(r.ok(), r.rendered());
    o.max_stack_depth = 100;
    r = p->run(in, o);
    REQUIRE_FALSE(r.ok());
    if (error.empty()) error = r.rendered();
    CHECK(r.rendered() == error);
    CHECK(error.find("stack depth limit of 100 frames") != std::string::npos);
  }
  autobatch::RunOptions o;
  o.jit = false;
  auto r = p->run(in, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  // The gradient itself: sum over t of -(y[t-1] - x) + cos(x y[t]) y[t].
  for (size_t k = 0; k < x.size(); ++k) {
    double want = 0;
    for (size_t t = 1; t < y.size(); ++t)
      want += -(y[t - 1] - x[k]) + std::cos(x[k] * y[t]) * y[t];
    CHECK(doubles(r.outputs[1])[k] == doctest::Approx(want).epsilon(1e-12));
  }
}

TEST_CASE("value_and_grad of f32 programs agrees with finite differences in f64") {
  // The cases above that type-check in f32 (those making f64 zeros or casts
  // do not), with straight code, reductions over an axis, loops and calls:
  // the program runs on f32 inputs, and on the same values as f64, where
  // `fd` gives the finite differences; the f32 gradient is f32 and agrees
  // with them to f32's precision.
  const char* const names[] = {"arithmetic and broadcasting",
                               "exp log trig",
                               "special functions",
                               "lgamma below one half",
                               "inverse trig",
                               "min max abs mod",
                               "select and comparisons",
                               "while loop",
                               "for loop over get and set",
                               "reshape transpose stack",
                               "linear algebra",
                               "reductions with axis",
                               "helpers with tuples",
                               "a helper in a loop",
                               "fill and a scalar x",
                               "slices",
                               "concat and indexing by row and column"};
  const int64_t batch = 5;
  std::mt19937_64 rng(20261129);
  for (const char* want : names) {
    const Case* found = nullptr;
    for (const Case& k : kCases)
      if (std::string(k.name) == want) found = &k;
    REQUIRE(found);
    const Case& k = *found;
    const std::string name = k.name;
    CAPTURE(name);
    std::string text = program(k);
    auto p = autobatch::compile(text);
    REQUIRE_MESSAGE(p, p.rendered());
    int64_t n = 1;
    for (int64_t d : k.shape) n *= d;
    std::uniform_real_distribution<float> ux(static_cast<float>(k.lo), static_cast<float>(k.hi)),
        uc(0.5f, 1.5f);
    std::vector<float> x32(static_cast<size_t>(batch * n)), c32(static_cast<size_t>(batch * 3));
    for (auto& v : x32) v = ux(rng);
    for (auto& v : c32) v = uc(rng);
    std::vector<double> x64(x32.begin(), x32.end()), c64(c32.begin(), c32.end());
    // f64: the finite differences (and the f64 value).
    auto r64 = p->run({autobatch::ArrayView::of(x64.data(), batch, k.shape),
                       autobatch::ArrayView::of(c64.data(), batch, {3})});
    REQUIRE_MESSAGE(r64.ok(), r64.rendered());
    std::vector<double> v64 = doubles(r64.outputs[0]), fd = doubles(r64.outputs[2]);
    for (const char* vm : {"stack", "stackless", "reference"}) {
      CAPTURE(vm);
      autobatch::RunOptions o;
      o.vm = vm;
      auto r = p->run({autobatch::ArrayView::of(x32.data(), batch, k.shape),
                       autobatch::ArrayView::of(c32.data(), batch, {3})},
                      o);
      REQUIRE_MESSAGE(r.ok(), r.rendered());
      REQUIRE(r.outputs[0].dtype() == autobatch::DType::F32);
      REQUIRE(r.outputs[1].dtype() == autobatch::DType::F32);
      REQUIRE(r.outputs[1].num_elements() == static_cast<int64_t>(fd.size()));
      const float* v = r.outputs[0].as<float>();
      const float* g = r.outputs[1].as<float>();
      for (int64_t t = 0; t < batch; ++t)
        CHECK(std::abs(v[t] - v64[t]) <= 1e-4 * (1 + std::abs(v64[t])));
      for (size_t i = 0; i < fd.size(); ++i) {
        CAPTURE(i);
        CHECK(std::isfinite(g[i]));
        CHECK(std::abs(g[i] - fd[i]) <= 2e-3 * (1 + std::abs(fd[i])));
      }
    }
  }
}

TEST_CASE("value_and_grad of nuts.ab's log density is its hand-written gradient") {
  // log_density as in programs/nuts.ab; leapfrog there uses -matvec(prec, q - mu).
  const char* text =
      "func log_density(q, prec, mu) {\n  r = q - mu\n  return -0.5 * dot(r, matvec(prec, r))\n"
      "}\n"
      "entry func main(q, prec, mu) {\n  lp, g = value_and_grad(log_density, q, prec, mu)\n"
      "  return lp, g, -matvec(prec, q - mu)\n}\n";
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  const int64_t batch = 5, d = 4;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z;
  std::vector<double> q(batch * d), mu(d), a(d * d), prec(d * d, 0.0);
  for (auto& v : q) v = z(rng);
  for (auto& v : mu) v = z(rng);
  for (auto& v : a) v = z(rng);
  for (int i = 0; i < d; ++i)  // prec = a a' + I, symmetric positive definite
    for (int j = 0; j < d; ++j) {
      for (int k = 0; k < d; ++k) prec[i * d + j] += a[i * d + k] * a[j * d + k];
      prec[i * d + j] += i == j;
    }
  std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(q.data(), batch, {d}),
                                          autobatch::ArrayView::of(prec.data(), 1, {d, d}),
                                          autobatch::ArrayView::of(mu.data(), 1, {d})};
  for (const char* vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    autobatch::RunOptions o;
    o.vm = vm;
    auto r = p->run(in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    std::vector<double> g = doubles(r.outputs[1]), want = doubles(r.outputs[2]);
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-13));
  }
}

TEST_CASE("what value_and_grad cannot differentiate is a compile error at its line") {
  struct Bad {
    const char* source;
    const char* inputs_kind;  // "x": x f64[3]; "xn": x f64[3] and n i64
    const char* message;
    int line;
  };
  const Bad bad[] = {
      {"func r(x, n) {\n  if n == 0 {\n    return sum(x)\n  }\n  return r(x * 0.5, n - 1)\n}\n"
       "entry func main(x, n) {\n  return value_and_grad(r, x, n)\n}\n",
       "xn", "recursion cannot be differentiated", 5},
      {"func f(x, n) {\n  return sum(x * normal(n))\n}\n"
       "entry func main(x, n) {\n  return value_and_grad(f, x, n)\n}\n",
       "xn", "draws random numbers", 2},
      {"func f(x, n) {\n  k = cast(x[0], dtype=i64)\n  return sum(x) * cast(k, dtype=f64)\n}\n"
       "entry func main(x, n) {\n  return value_and_grad(f, x, n)\n}\n",
       "xn", "loses its gradient", 2},
      {"func f(x) {\n  return x * 2.0\n}\nentry func main(x) {\n  return value_and_grad(f, x)\n}\n",
       "x", "one f64 scalar", 5},
      {"func f(x, n) {\n  return sum(x)\n}\n"
       "entry func main(x, n) {\n  return value_and_grad(f, n, x)\n}\n",
       "xn", "must be an f64 or f32 scalar or tensor", 5},
      {"func f(x) {\n  return sum(x)\n}\nentry func main(x) {\n  return value_and_grad(g, x)\n}\n",
       "x", "takes first the name of a function", 5},
      {"func f(x) {\n  a, b = value_and_grad(g, x)\n  return a\n}\nfunc g(x) {\n  return sum(x)\n}\n"
       "entry func main(x) {\n  return value_and_grad(f, x)\n}\n",
       "x", "gradients of gradients", 2},
  };
  double x[3] = {0.5, 1.0, 1.5};
  int64_t n[1] = {2};
  for (const Bad& b : bad) {
    const std::string source = b.source;
    CAPTURE(source);
    autobatch::CompileOptions co;
    co.name = "bad.ab";
    auto p = autobatch::compile(b.source, co);
    std::string text;
    if (!p) {
      text = p.rendered();
    } else {
      std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(x, 1, {3})};
      if (std::string(b.inputs_kind) == "xn") in.push_back(autobatch::ArrayView::of(n, 1));
      for (const char* vm : {"stack", "stackless"}) {
        autobatch::RunOptions o;
        o.vm = vm;
        auto r = p->run(in, o);
        CHECK_FALSE(r.ok());
        text = r.rendered();
        CAPTURE(text);
        CHECK(text.find(b.message) != std::string::npos);
        CHECK(text.find("bad.ab:" + std::to_string(b.line) + ":") != std::string::npos);
      }
    }
    CAPTURE(text);
    CHECK(text.find(b.message) != std::string::npos);
    CHECK(text.find("bad.ab:" + std::to_string(b.line) + ":") != std::string::npos);
  }
}

TEST_CASE("the grad pass shows its functions with --print-after") {
  auto p = autobatch::compile(
      "func f(x) {\n  return sum(x * x)\n}\nentry func main(x) {\n  return value_and_grad(f, x)\n"
      "}\n");
  REQUIRE(p);
  double x[3] = {1, 2, 3};
  std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(x, 1, {3})};
  auto text = p->lower("grad", &in);
  REQUIRE_MESSAGE(text, text.rendered());
  // f is one block: its gradient is expanded in main, as an inline call would be.
  CHECK(text->find("f_vjp1") == std::string::npos);
  CHECK(text->find("i1_t_1_v2 = sum(i1_t_2_v1)") != std::string::npos);
  auto r = p->run(in);
  REQUIRE(r.ok());
  CHECK(doubles(r.outputs[0])[0] == 14.0);
  CHECK(doubles(r.outputs[1]) == std::vector<double>{2, 4, 6});

  // With a loop, the gradient is functions, one per block (the last expanded into its caller).
  auto loop = autobatch::compile(
      "func f(x) {\n  s = 0.0\n  for i in range(3) {\n    s += x[i] * x[i]\n  }\n  return s\n}\n"
      "entry func main(x) {\n  return value_and_grad(f, x)\n}\n");
  REQUIRE(loop);
  text = loop->lower("grad", &in);
  REQUIRE_MESSAGE(text, text.rendered());
  CHECK(text->find("call f_vjp1(x, 1.0)") != std::string::npos);
  CHECK(text->find("func f_vjp1(") != std::string::npos);
  CHECK(text->find("func f_vjp1_body_3(") != std::string::npos);
  r = loop->run(in);
  REQUIRE(r.ok());
  CHECK(doubles(r.outputs[1]) == std::vector<double>{2, 4, 6});
}
