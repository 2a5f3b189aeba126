// Custom primitives with several results (Primitive::result "(f64, f64[3])"
// or a type rule's `types`): bound as `lp, g = prim(q)`, in every VM (the
// stack VM with and without the JIT, over --threads shards, and a lowered
// program compiled again), and their registration and type errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

// logp_grad(q, mu) = (-|q - mu|^2 / 2, -(q - mu)): a density and its gradient
// from one pass over the operands.
bool logp_grad_kernel(const autobatch::KernelCall& c, autobatch::KernelError* err) {
  for (int64_t j = 0; j < c.n; ++j) {
    const double* q = c.args[0].lane<double>(j);
    const double* mu = c.args[1].lane<double>(j);
    double* lp = c.outs[0].lane<double>(j);
    double* g = c.outs[1].lane<double>(j);
    double s = 0;
    for (int e = 0; e < 3; ++e) {
      double r = q[e] - mu[e];
      if (std::isnan(r)) {
        err->lane = j;
        err->message = "logp_grad of NaN";
        return false;
      }
      g[e] = -r;
      s += r * r;
    }
    *lp = -0.5 * s;
  }
  return true;
}

autobatch::Primitive logp_grad_prim() {
  autobatch::Primitive p;
  p.name = "logp_grad";
  p.arity = 2;
  p.result = "(f64, f64[3])";
  p.kernel = logp_grad_kernel;
  p.doc = "log density and gradient";
  return p;
}

// n gradient steps from q, summing the densities: the primitive runs inside a
// loop that threads leave at different steps, so it sees partial batches.
const char* kClimb = R"(func main(q: f64[3], mu: f64[3], n: i64) -> (f64, f64[3]) {
  total = 0.0
  i = 0
  while i < n {
    lp, g = logp_grad(q, mu)
    total = total + lp
    q = q + 0.25 * g
    i = i + 1
  }
  return total, q
}
)";

struct Climb {
  std::vector<double> total, q;
};

Climb climb_expected(const std::vector<double>& q0, const std::vector<double>& mu,
                     const std::vector<int64_t>& n) {
  Climb out;
  for (size_t t = 0; t < n.size(); ++t) {
    double q[3] = {q0[3 * t], q0[3 * t + 1], q0[3 * t + 2]};
    double total = 0;
    for (int64_t i = 0; i < n[t]; ++i) {
      double s = 0, g[3];
      for (int e = 0; e < 3; ++e) {
        double r = q[e] - mu[e];
        g[e] = -r;
        s += r * r;
      }
      total += -0.5 * s;
      for (int e = 0; e < 3; ++e) q[e] += 0.25 * g[e];
    }
    out.total.push_back(total);
    out.q.insert(out.q.end(), q, q + 3);
  }
  return out;
}

std::vector<double> doubles(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::F64);
  const double* p = a.as<double>();
  return std::vector<double>(p, p + a.num_elements());
}

struct Config {
  const char* vm;
  bool jit;
  int threads;
};

}  // namespace

TEST_CASE("api: result types of one or several tensors") {
  auto one = autobatch::parse_result_types("f64[3]");
  REQUIRE(one);
  CHECK(one->size() == 1);
  auto two = autobatch::parse_result_types("(f64, i32[2, 2])");
  REQUIRE(two);
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].str() == "f64");
  CHECK((*two)[1].str() == "i32[2,2]");
  for (const char* bad : {"(f64)", "(f64,)", "(f64, f65)", "(f64, f64", "()", "((f64, f64), i64)"})
    CHECK_MESSAGE(!autobatch::parse_result_types(bad), bad);
}

TEST_CASE("api: a custom primitive with several results in every VM and a lowered program") {
  autobatch::Primitives prims;
  autobatch::Status s = prims.add(logp_grad_prim());
  REQUIRE_MESSAGE(s, s.rendered());
  autobatch::CompileOptions co;
  co.primitives = prims;
  auto p = autobatch::compile(kClimb, co);
  REQUIRE_MESSAGE(p, p.rendered());
  auto sig = p->signature();
  REQUIRE(sig);
  CHECK((*sig)[0] == "func main(q: f64[3], mu: f64[3], n: i64) -> (f64, f64[3])");

  // Enough threads for several shards under --threads.
  const int64_t batch = 1500;
  std::vector<double> q(3 * batch), mu = {1.0, -2.0, 0.5};
  std::vector<int64_t> n(batch);
  for (int64_t t = 0; t < batch; ++t) {
    for (int e = 0; e < 3; ++e) q[3 * t + e] = std::sin(double(t * 3 + e));
    n[t] = t % 7;
  }
  std::vector<autobatch::ArrayView> in = {autobatch::ArrayView::of(q.data(), batch, {3}),
                                          autobatch::ArrayView::of(mu.data(), 1, {3}),
                                          autobatch::ArrayView::of(n.data(), batch)};
  Climb want = climb_expected(q, mu, n);
  const Config configs[] = {{"stack", true, 1},      {"stack", false, 1}, {"stackless", false, 1},
                            {"reference", false, 1}, {"stack", true, 3},  {"stackless", false, 3}};
  std::vector<double> first_total;
  for (const Config& c : configs) {
    CAPTURE(c.vm);
    CAPTURE(c.jit);
    CAPTURE(c.threads);
    autobatch::RunOptions o;
    o.vm = c.vm;
    o.jit = c.jit;
    o.threads = c.threads;
    auto r = p->run(in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    REQUIRE(r.outputs.size() == 2);
    std::vector<double> total = doubles(r.outputs[0]), qn = doubles(r.outputs[1]);
    for (int64_t t = 0; t < batch; ++t) CHECK(total[t] == doctest::Approx(want.total[t]));
    for (int64_t k = 0; k < 3 * batch; ++k) CHECK(qn[k] == doctest::Approx(want.q[k]));
    if (first_total.empty()) first_total = total;
    CHECK(total == first_total);  // bit-identical in every VM
  }

  // The printed lowered program binds both results and runs again.
  auto text = p->lower();
  REQUIRE(text);
  CHECK(text->find("logp_grad(") != std::string::npos);
  auto lowered = autobatch::compile(*text, co);
  REQUIRE_MESSAGE(lowered, lowered.rendered());
  for (const char* vm : {"stack", "reference"}) {
    autobatch::RunOptions o;
    o.vm = vm;
    o.threads = 2;
    auto r = lowered->run(in, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    CHECK(doubles(r.outputs[0]) == first_total);
  }

  // The kernel's error names the failing thread.
  q[3 * 5 + 1] = NAN;
  auto r = p->run(in);
  REQUIRE(r.runtime_error);
  CHECK(r.runtime_error->thread == 5);
  CHECK(r.runtime_error->message.find("logp_grad of NaN") != std::string::npos);
}

TEST_CASE("api: several results from a type rule; bad result types are errors") {
  // minmax(v): (the smallest, the largest) element of any float vector, of its dtype.
  autobatch::Primitive p;
  p.name = "minmax";
  p.arity = 1;
  p.rule = [](const std::vector<autobatch::TensorType>& args) -> autobatch::TypeRuleResult {
    if (args[0].dtype != autobatch::DType::F64 || args[0].shape.size() != 1)
      return {std::nullopt, "wants an f64 vector, got " + args[0].str()};
    autobatch::TensorType s{autobatch::DType::F64, {}};
    return {std::nullopt, "", {s, s}};
  };
  p.kernel = [](const autobatch::KernelCall& c, autobatch::KernelError*) {
    for (int64_t j = 0; j < c.n; ++j) {
      const double* v = c.args[0].lane<double>(j);
      double lo = v[0], hi = v[0];
      for (int64_t e = 1; e < c.args[0].event_size; ++e) {
        lo = std::min(lo, v[e]);
        hi = std::max(hi, v[e]);
      }
      *c.outs[0].lane<double>(j) = lo;
      *c.outs[1].lane<double>(j) = hi;
    }
    return true;
  };
  autobatch::Primitives prims;
  REQUIRE(prims.add(p));
  autobatch::CompileOptions co;
  co.primitives = prims;
  auto prog = autobatch::compile("func main(v) {\n  lo, hi = minmax(v)\n  return hi - lo\n}\n", co);
  REQUIRE_MESSAGE(prog, prog.rendered());
  double v[] = {3, 1, 4, 1, 5, 9};
  for (const char* vm : {"stack", "stackless", "reference"}) {
    autobatch::RunOptions o;
    o.vm = vm;
    auto r = prog->run({autobatch::ArrayView::of(v, 2, {3})}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    CHECK(doubles(r.outputs[0]) == std::vector<double>{3, 8});
  }
  // A rule's own rejection, and a rule that gives a single type in `types`.
  double u[] = {1};
  int64_t k[] = {1};
  auto r = prog->run({autobatch::ArrayView::of(k, 1)});
  CHECK(r.rendered().find("wants an f64 vector, got i64") != std::string::npos);
  p.name = "minmax_one";
  p.rule = [](const std::vector<autobatch::TensorType>& args) -> autobatch::TypeRuleResult {
    return {std::nullopt, "", {args[0]}};
  };
  REQUIRE(prims.add(p));
  co.primitives = prims;
  auto one = autobatch::compile("func main(v) {\n  a = minmax_one(v)\n  return a\n}\n", co);
  REQUIRE(one);
  r = one->run({autobatch::ArrayView::of(u, 1)});
  CHECK(r.rendered().find("gave 1 result types") != std::string::npos);

  // Binding a two-result primitive to one name gives the tuple; to three is an error.
  auto three = autobatch::compile(
      "func main(v: f64[3]) -> f64 {\n  a, b, c = minmax(v)\n  return a\n}\n", co);
  bool rejected = !three;
  if (three) rejected = !three->run({autobatch::ArrayView::of(v, 2, {3})}).diagnostics.empty();
  CHECK(rejected);

  // Registration errors.
  autobatch::Primitive bad = logp_grad_prim();
  bad.name = "bad_results";
  for (const char* result : {"(f64)", "(f64, f65)", "(f64, (f64, f64))"}) {
    bad.result = result;
    autobatch::Status s = prims.add(bad);
    CHECK_FALSE(s);
    CHECK(s.rendered().find("several in parentheses") != std::string::npos);
  }
}
