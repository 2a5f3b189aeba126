// The shipped library's distributions (lib/dists.ab): each log density, log
// mass and log (complementary) cumulative distribution at a few points
// against the same formula in C++ (<cmath>'s erfc, lgamma, atan), and the
// gradients value_and_grad takes of the new ones against central
// differences. Values are summed over the broadcast elements, as Stan's are.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

// `expr` (using x, a per-thread f64, and the library) at each x, on the
// stack VM.
std::vector<double> eval(const std::string& expr, const std::vector<double>& xs) {
  const std::string text = "import dists\nfunc main(x: f64) -> f64 {\n  return " + expr + "\n}\n";
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  autobatch::RunResult r =
      p->run({autobatch::ArrayView::of(xs.data(), static_cast<int64_t>(xs.size()))});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  const double* v = r.outputs[0].as<double>();
  return std::vector<double>(v, v + xs.size());
}

void close(const std::string& expr, const std::vector<double>& xs,
           const std::function<double(double)>& want) {
  std::vector<double> got = eval(expr, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(expr);
    CAPTURE(xs[i]);
    const double w = want(xs[i]);
    if (std::isinf(w)) {
      CHECK(got[i] == w);
      continue;
    }
    CHECK(std::abs(got[i] - w) <= 1e-12 * (1.0 + std::abs(w)));
  }
}

double log_phi(double z) { return std::log(0.5 * std::erfc(-z / std::sqrt(2.0))); }
const double kPi = 3.141592653589793;

}  // namespace

TEST_CASE("dists: log densities and log masses against their formulas") {
  const std::vector<double> xs = {0.3, 1.0, 2.5, 7.0};
  close("normal_lpdf(x, 0.5, 2.0)", xs, [](double x) {
    const double z = (x - 0.5) / 2.0;
    return -0.5 * z * z - std::log(2.0) - 0.5 * std::log(2 * kPi);
  });
  close("cauchy_lpdf(x, 0.5, 2.0)", xs, [](double x) {
    const double z = (x - 0.5) / 2.0;
    return -std::log1p(z * z) - std::log(2.0) - std::log(kPi);
  });
  close("student_t_lpdf(x, 3.0, 0.5, 2.0)", xs, [](double x) {
    const double z = (x - 0.5) / 2.0, nu = 3.0;
    return std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * kPi) -
           std::log(2.0) - (nu + 1) / 2 * std::log1p(z * z / nu);
  });
  close("gamma_lpdf(x, 2.5, 1.5)", xs, [](double x) {
    return 2.5 * std::log(1.5) - std::lgamma(2.5) + 1.5 * std::log(x) - 1.5 * x;
  });
  close("lognormal_lpdf(x, 0.2, 0.7)", xs, [](double x) {
    const double z = (std::log(x) - 0.2) / 0.7;
    return -0.5 * z * z - std::log(0.7) - 0.5 * std::log(2 * kPi) - std::log(x);
  });
  // Counts: x is cast to a whole number of events.
  const std::vector<double> ns = {0.0, 1.0, 4.0, 9.0};
  close("poisson_lpmf(cast(x, dtype=i64), 3.5)", ns,
        [](double n) { return n * std::log(3.5) - 3.5 - std::lgamma(n + 1); });
  close("poisson_log_lpmf(cast(x, dtype=i64), log(3.5))", ns,
        [](double n) { return n * std::log(3.5) - 3.5 - std::lgamma(n + 1); });
  close("binomial_lpmf(cast(x, dtype=i64), 10, 0.3)", ns, [](double n) {
    return std::lgamma(11.0) - std::lgamma(n + 1) - std::lgamma(11.0 - n) + n * std::log(0.3) +
           (10 - n) * std::log(0.7);
  });
  close("neg_binomial_2_lpmf(cast(x, dtype=i64), 3.0, 2.0)", ns, [](double n) {
    const double mu = 3.0, phi = 2.0;
    return std::lgamma(n + phi) - std::lgamma(n + 1) - std::lgamma(phi) +
           phi * std::log(phi / (mu + phi)) + n * std::log(mu / (mu + phi));
  });
}

TEST_CASE("dists: log cumulative distributions against their formulas") {
  const std::vector<double> xs = {-40.0, -3.0, 0.3, 1.0, 2.5, 9.0};
  close("normal_lcdf(x, 0.5, 2.0)", xs, [](double x) { return log_phi((x - 0.5) / 2.0); });
  close("normal_lccdf(x, 0.5, 2.0)", xs, [](double x) { return log_phi(-(x - 0.5) / 2.0); });
  close("cauchy_lcdf(x, 0.5, 2.0)", xs,
        [](double x) { return std::log(0.5 + std::atan((x - 0.5) / 2.0) / kPi); });
  close("cauchy_lccdf(x, 0.5, 2.0)", xs,
        [](double x) { return std::log(0.5 - std::atan((x - 0.5) / 2.0) / kPi); });
  const std::vector<double> pos = {0.01, 0.3, 1.0, 2.5, 9.0};
  close("lognormal_lcdf(x, 0.2, 0.7)", pos,
        [](double x) { return log_phi((std::log(x) - 0.2) / 0.7); });
  close("lognormal_lccdf(x, 0.2, 0.7)", pos,
        [](double x) { return log_phi(-(std::log(x) - 0.2) / 0.7); });
  close("exponential_lcdf(x, 1.5)", pos, [](double x) { return std::log(-std::expm1(-1.5 * x)); });
  close("exponential_lccdf(x, 1.5)", pos, [](double x) { return -1.5 * x; });
  // Summed over the broadcast elements: a vector of y gives the sum.
  std::vector<double> got = eval("normal_lccdf([0.0, 1.0, x], 0.0, 1.0)", {2.0});
  CHECK(std::abs(got[0] - (log_phi(0.0) + log_phi(-1.0) + log_phi(-2.0))) <= 1e-12);
}

// The integral of exp(log_pdf) over [lo, x] by Simpson's rule on n panels.
double integral(const std::function<double(double)>& log_pdf, double lo, double x, int n = 20000) {
  const double h = (x - lo) / n;
  double s = std::exp(log_pdf(lo)) + std::exp(log_pdf(x));
  for (int i = 1; i < n; ++i) s += (i % 2 ? 4.0 : 2.0) * std::exp(log_pdf(lo + i * h));
  return s * h / 3.0;
}

TEST_CASE("dists: student_t, gamma and beta cumulative distributions") {
  const std::vector<double> xs = {-30.0, -3.0, -0.5, 0.0, 0.7, 4.0, 30.0};
  // Closed forms: t with 1 degree of freedom is Cauchy, with 2 it is
  // 1/2 + t / (2 sqrt(2 + t^2)).
  close("student_t_lcdf(x, 1.0, 0.5, 2.0)", xs,
        [](double x) { return std::log(0.5 + std::atan((x - 0.5) / 2.0) / kPi); });
  close("student_t_lccdf(x, 1.0, 0.5, 2.0)", xs,
        [](double x) { return std::log(0.5 - std::atan((x - 0.5) / 2.0) / kPi); });
  auto t2 = [](double t) { return 0.5 + t / (2.0 * std::sqrt(2.0 + t * t)); };
  close("student_t_lcdf(x, 2.0, 0.0, 1.0)", xs, [&](double x) { return std::log(t2(x)); });
  close("student_t_lccdf(x, 2.0, 0.0, 1.0)", xs, [&](double x) { return std::log(t2(-x)); });
  // gamma(1, r) is exponential; gamma(2, 1) has cdf 1 - e^-x (1 + x).
  const std::vector<double> pos = {0.0, 0.01, 0.3, 1.0, 2.5, 9.0, 40.0};
  close("gamma_lcdf(x, 1.0, 1.5)", pos, [](double x) { return std::log(-std::expm1(-1.5 * x)); });
  close("gamma_lccdf(x, 1.0, 1.5)", pos, [](double x) { return -1.5 * x; });
  close("gamma_lccdf(x, 2.0, 1.0)", pos, [](double x) { return -x + std::log1p(x); });
  // beta(a, 1) has cdf y^a; beta(2, 2) 3y^2 - 2y^3.
  const std::vector<double> unit = {0.001, 0.2, 0.5, 0.75, 0.999};
  close("beta_lcdf(x, 2.5, 1.0)", unit, [](double x) { return 2.5 * std::log(x); });
  close("beta_lccdf(x, 2.5, 1.0)", unit, [](double x) { return std::log1p(-std::pow(x, 2.5)); });
  close("beta_lcdf(x, 2.0, 2.0)", unit, [](double x) { return std::log(x * x * (3.0 - 2.0 * x)); });
  // The general case against the density integrated numerically.
  auto near = [](const std::string& expr, const std::vector<double>& at,
                 const std::function<double(double)>& want) {
    std::vector<double> got = eval(expr, at);
    for (size_t i = 0; i < at.size(); ++i) {
      CAPTURE(expr);
      CAPTURE(at[i]);
      CHECK(std::abs(got[i] - want(at[i])) <= 1e-8);
    }
  };
  auto t3 = [](double y) {
    const double z = (y - 0.5) / 2.0, nu = 3.0;
    return std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * kPi) -
           std::log(2.0) - (nu + 1) / 2 * std::log1p(z * z / nu);
  };
  // (the tail below -2000 holds about 5e-10 of the mass: integrate from -1e5 in two pieces)
  near("student_t_lcdf(x, 3.0, 0.5, 2.0)", {-2.0, 0.5, 1.3, 6.0}, [&](double x) {
    return std::log(integral(t3, -1e5, -50.0, 400000) + integral(t3, -50.0, x));
  });
  auto g = [](double y) {
    return 2.5 * std::log(1.5) - std::lgamma(2.5) + 1.5 * std::log(y) - 1.5 * y;
  };
  near("gamma_lcdf(x, 2.5, 1.5)", {0.2, 1.0, 1.9, 4.0},
       [&](double x) { return std::log(integral(g, 1e-12, x, 200000)); });
  auto bd = [](double y) {
    return std::lgamma(6.0) - std::lgamma(2.5) - std::lgamma(3.5) + 1.5 * std::log(y) +
           2.5 * std::log1p(-y);
  };
  near("beta_lcdf(x, 2.5, 3.5)", {0.05, 0.3, 0.6, 0.9},
       [&](double x) { return std::log(integral(bd, 0.0, x)); });
  near("beta_lccdf(x, 2.5, 3.5)", {0.05, 0.3, 0.6, 0.9},
       [&](double x) { return std::log(integral(bd, x, 1.0)); });
}

TEST_CASE("dists: value_and_grad of the cumulative distributions") {
  // d/dmu of each at mu = x, against a central difference.
  const std::vector<double> xs = {-1.2, 0.4, 2.0};
  for (const std::string f : {"normal_lcdf", "normal_lccdf", "cauchy_lcdf", "cauchy_lccdf",
                               "student_t_lcdf(0.7, 3.5, ", "student_t_lccdf(0.7, 3.5, "}) {
    CAPTURE(f);
    // (a name alone takes (0.7, mu, 1.3); one ending in ", " has its first arguments)
    const std::string call = f.back() == ' ' ? f : f + "(0.7, ";
    const std::string ld = "inline func ld(m: f64[1]) -> f64 {\n  return " + call +
                           "m[0], 1.3)\n}\n";
    auto p = autobatch::compile("import dists\n" + ld +
                                "func main(x: f64) -> (f64, f64) {\n"
                                "  v, g = value_and_grad(ld, [x])\n  return v, g[0]\n}\n");
    REQUIRE_MESSAGE(p, p.rendered());
    autobatch::RunResult r = p->run({autobatch::ArrayView::of(xs.data(), 3)});
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    const double h = 1e-6;
    std::vector<double> up = xs, down = xs;
    for (auto& x : up) x += h;
    for (auto& x : down) x -= h;
    const std::string expr = call + "x, 1.3)";
    std::vector<double> fu = eval(expr, up), fd = eval(expr, down);
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(xs[i]);
      const double numeric = (fu[i] - fd[i]) / (2 * h);
      CHECK(std::abs(r.outputs[1].as<double>()[i] - numeric) <= 1e-6 * (1 + std::abs(numeric)));
    }
  }
}

TEST_CASE("dists: binomial_rng and neg_binomial_2_rng have their distributions' moments") {
  auto p = autobatch::compile(
      "import dists\n"
      "func main(seed: i64) -> (i64, i64) {\n"
      "  k1, k2 = split(fold_in(seed, thread_index()))\n"
      "  return binomial_rng(k1, 12, 0.3), neg_binomial_2_rng(k2, 4.0, 2.5)\n}\n");
  REQUIRE_MESSAGE(p, p.rendered());
  const int64_t seed = 7, n = 40000;
  std::vector<std::vector<int64_t>> by_vm;
  for (const char* vm : {"stack", "stackless"}) {
    autobatch::RunOptions o;
    o.vm = vm;
    o.batch = n;
    autobatch::RunResult r = p->run({autobatch::ArrayView::of(&seed, 1)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    std::vector<int64_t> both(r.outputs[0].as<int64_t>(), r.outputs[0].as<int64_t>() + n);
    both.insert(both.end(), r.outputs[1].as<int64_t>(), r.outputs[1].as<int64_t>() + n);
    by_vm.push_back(both);
  }
  CHECK(by_vm[0] == by_vm[1]);  // the same draws in every VM
  // Mean within 5 standard errors, variance within 10%.
  auto moments = [&](size_t from, double mean, double var) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(by_vm[0][from + static_cast<size_t>(i)]);
    const double m = s / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(by_vm[0][from + static_cast<size_t>(i)]) - m;
      ss += d * d;
    }
    const double v = ss / static_cast<double>(n - 1);
    CAPTURE(from);
    CHECK(std::abs(m - mean) <= 5 * std::sqrt(var / static_cast<double>(n)));
    CHECK(std::abs(v / var - 1) <= 0.1);
  };
  moments(0, 12 * 0.3, 12 * 0.3 * 0.7);
  moments(static_cast<size_t>(n), 4.0, 4.0 + 16.0 / 2.5);
}

namespace {

// One thread per x: y = [x, -1.2, 2.0] against a fixed mean and covariance;
// outputs as the program returns them.
autobatch::RunResult run_mvn(const std::string& body, const std::vector<double>& xs) {
  const std::string text =
      "import dists\n"
      "inline func ld(S: f64[3, 3], y: f64[3]) -> f64 {\n"
      "  return multi_normal_lpdf(y, [0.1, 0.2, 0.3], S)\n}\n"
      "inline func ld_y(y: f64[3], S: f64[3, 3]) -> f64 {\n"
      "  return ld(S, y)\n}\n"
      "func main(x: f64) -> (f64, f64, f64[3], f64[3, 3]) {\n"
      "  S = [[2.0, 0.5, 0.2], [0.5, 1.5, -0.3], [0.2, -0.3, 1.0]]\n"
      "  y = [x, -1.2, 2.0]\n" +
      body + "}\n";
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  autobatch::RunResult r =
      p->run({autobatch::ArrayView::of(xs.data(), static_cast<int64_t>(xs.size()))});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  return r;
}

const double kS[3][3] = {{2.0, 0.5, 0.2}, {0.5, 1.5, -0.3}, {0.2, -0.3, 1.0}};

// The same in C++: the Cholesky factor, the log density and S^-1 z.
struct Mvn {
  double L[3][3] = {};
  double lp = 0;
  double grad_y[3] = {};  // -S^-1 (y - mu)
};
Mvn mvn(double x) {
  Mvn m;
  for (int j = 0; j < 3; ++j) {
    double s = kS[j][j];
    for (int k = 0; k < j; ++k) s -= m.L[j][k] * m.L[j][k];
    m.L[j][j] = std::sqrt(s);
    for (int i = j + 1; i < 3; ++i) {
      double t = kS[i][j];
      for (int k = 0; k < j; ++k) t -= m.L[i][k] * m.L[j][k];
      m.L[i][j] = t / m.L[j][j];
    }
  }
  const double z[3] = {x - 0.1, -1.2 - 0.2, 2.0 - 0.3};
  double v[3], w[3];
  for (int i = 0; i < 3; ++i) {  // L v = z
    double s = z[i];
    for (int j = 0; j < i; ++j) s -= m.L[i][j] * v[j];
    v[i] = s / m.L[i][i];
  }
  for (int i = 2; i >= 0; --i) {  // L^T w = v: w = S^-1 z
    double s = v[i];
    for (int j = i + 1; j < 3; ++j) s -= m.L[j][i] * w[j];
    w[i] = s / m.L[i][i];
  }
  m.lp = -1.5 * std::log(2 * kPi);
  for (int i = 0; i < 3; ++i) m.lp += -0.5 * v[i] * v[i] - std::log(m.L[i][i]);
  for (int i = 0; i < 3; ++i) m.grad_y[i] = -w[i];
  return m;
}

}  // namespace

TEST_CASE("dists: multivariate normal, its Cholesky factor and Dirichlet against their formulas") {
  const std::vector<double> xs = {-2.5, 0.3, 1.7};
  autobatch::RunResult r = run_mvn(
      "  L = cholesky_decompose(S)\n"
      "  v, g = value_and_grad(ld_y, y, S)\n"
      "  return multi_normal_cholesky_lpdf(y, [0.1, 0.2, 0.3], L), v, g, L\n",
      xs);
  for (size_t t = 0; t < xs.size(); ++t) {
    CAPTURE(xs[t]);
    Mvn want = mvn(xs[t]);
    CHECK(std::abs(r.outputs[0].as<double>()[t] - want.lp) <= 1e-12 * (1 + std::abs(want.lp)));
    CHECK(std::abs(r.outputs[1].as<double>()[t] - want.lp) <= 1e-12 * (1 + std::abs(want.lp)));
    for (int i = 0; i < 3; ++i)
      CHECK(std::abs(r.outputs[2].as<double>()[t * 3 + i] - want.grad_y[i]) <= 1e-10);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        const double got = r.outputs[3].as<double>()[t * 9 + i * 3 + j];
        CHECK(std::abs(got - want.L[i][j]) <= 1e-14);
        if (j > i) CHECK(!std::signbit(got));  // +0.0 above the diagonal
      }
  }
  // Dirichlet: lgamma(sum a) - sum lgamma(a) + sum (a - 1) log theta, also
  // with a scalar (symmetric) concentration.
  std::vector<double> got =
      eval("dirichlet_lpdf([x, 0.3, 0.7 - x], [1.5, 2.0, 3.0])", {0.1, 0.2, 0.45});
  std::vector<double> sym = eval("dirichlet_lpdf([x, 0.3, 0.7 - x], 2.5)", {0.1, 0.2, 0.45});
  for (double x : {0.1, 0.2, 0.45}) {
    const size_t t = x == 0.1 ? 0 : x == 0.2 ? 1 : 2;
    const double th[3] = {x, 0.3, 0.7 - x}, a[3] = {1.5, 2.0, 3.0};
    double want = std::lgamma(6.5), want_sym = std::lgamma(7.5) - 3 * std::lgamma(2.5);
    for (int i = 0; i < 3; ++i) {
      want += -std::lgamma(a[i]) + (a[i] - 1) * std::log(th[i]);
      want_sym += 1.5 * std::log(th[i]);
    }
    CHECK(std::abs(got[t] - want) <= 1e-12 * (1 + std::abs(want)));
    CHECK(std::abs(sym[t] - want_sym) <= 1e-12 * (1 + std::abs(want_sym)));
  }
}

TEST_CASE("dists: value_and_grad of multi_normal_lpdf in its covariance, through the factoring") {
  // d lp / d S[1][0] (the lower triangle is what is read) against a central
  // difference of the library's own value.
  const std::vector<double> xs = {-2.5, 0.3, 1.7};
  autobatch::RunResult r = run_mvn(
      "  v, g = value_and_grad(ld, S, y)\n"
      "  return v, g[1][0], y, S\n",
      xs);
  const double h = 1e-6;
  for (size_t t = 0; t < xs.size(); ++t) {
    CAPTURE(xs[t]);
    auto lp = [&](double d) {
      const std::string body = "  T = S\n  T[1][0] = S[1][0] + " + std::to_string(d) +
                               "\n  return ld(T, y), 0.0, y, S\n";
      return run_mvn(body, {xs[t]}).outputs[0].as<double>()[0];
    };
    const double numeric = (lp(h) - lp(-h)) / (2 * h);
    CHECK(std::abs(r.outputs[1].as<double>()[t] - numeric) <= 1e-6 * (1 + std::abs(numeric)));
  }
}

TEST_CASE("dists: lkj_corr_cholesky_lpdf is normalised") {
  // K = 2: L = [[1, 0], [r, sqrt(1 - r^2)]] gives r the density
  // (1 - r^2)^(eta - 1) / (2^(2 eta - 1) B(eta, eta)).
  for (double eta : {1.0, 2.0, 0.7}) {
    CAPTURE(eta);
    const std::string e = std::to_string(eta);
    std::vector<double> rs = {-0.6, 0.0, 0.45};
    std::vector<double> got =
        eval("lkj_corr_cholesky_lpdf([[1.0, 0.0], [x, sqrt(1.0 - x * x)]], " + e + ")", rs);
    for (size_t t = 0; t < rs.size(); ++t) {
      const double r = rs[t];
      const double want = (eta - 1) * std::log(1 - r * r) - (2 * eta - 1) * std::log(2.0) -
                          (2 * std::lgamma(eta) - std::lgamma(2 * eta));
      CHECK(std::abs(got[t] - want) <= 1e-12 * (1 + std::abs(want)));
    }
  }
  // K = 3 at the identity: minus the log of the normalising constant, pi^2 / 2
  // for eta = 1 (the volume of the 3 x 3 correlation matrices) and 1.85055...
  // for eta = 2 (the integral of det(R) over them, checked by Monte Carlo).
  const std::string id = "[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]";
  CHECK(std::abs(eval("lkj_corr_cholesky_lpdf(" + id + ", x)", {1.0})[0] +
                 std::log(kPi * kPi / 2)) <= 1e-12);
  const double b = std::exp(2 * std::lgamma(2.5) - std::lgamma(5.0));
  CHECK(std::abs(eval("lkj_corr_cholesky_lpdf(" + id + ", x)", {2.0})[0] +
                 std::log(2048 * b * b / 6)) <= 1e-12);
  CHECK(std::abs(2048 * b * b / 6 - 1.85055) < 1e-5);
}

TEST_CASE("dists: categorical log masses and the draws under Stan's names") {
  // theta = (0.2, 0.5, 0.3); beta = log(theta) + 1.7 (the same, unnormalised).
  const std::vector<double> ys = {0.0, 1.0, 2.0};
  const double theta[3] = {0.2, 0.5, 0.3};
  close("categorical_lpmf(cast(x, dtype=i64), [0.2, 0.5, 0.3])", ys,
        [&](double y) { return std::log(theta[static_cast<int>(y)]); });
  close("categorical_logit_lpmf(cast(x, dtype=i64), log([0.2, 0.5, 0.3]) + 1.7)", ys,
        [&](double y) { return std::log(theta[static_cast<int>(y)]); });
  close("log_sum_exp([x, 2.0 * x, -x])", {0.5, 300.0}, [](double x) {
    const double m = std::max({x, 2 * x, -x});
    return m + std::log(std::exp(x - m) + std::exp(2 * x - m) + std::exp(-x - m));
  });
  // Frequencies of 4000 draws each (one thread per draw, a key per thread).
  const std::string text = R"(import dists
func main(i: i64) -> (i64, i64, i64) {
  k1, k2 = split(fold_in(7, i))
  k3, k4 = split(k2)
  return categorical_rng(k1, [0.2, 0.5, 0.3]), categorical_logit_rng(k3, log([0.2, 0.5, 0.3])), poisson_rng(k4, 3.5)
}
)";
  auto p = autobatch::compile(text);
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<int64_t> idx(4000);
  for (int64_t i = 0; i < 4000; ++i) idx[static_cast<size_t>(i)] = i;
  autobatch::RunResult r = p->run({autobatch::ArrayView::of(idx.data(), 4000)});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  for (int o = 0; o < 2; ++o) {
    double count[3] = {0, 0, 0};
    for (int64_t i = 0; i < 4000; ++i) count[r.outputs[o].as<int64_t>()[i]] += 1;
    for (int c = 0; c < 3; ++c) {
      CAPTURE(o);
      CAPTURE(c);
      // within 4.5 binomial sds
      CHECK(std::abs(count[c] / 4000 - theta[c]) <= 4.5 * std::sqrt(theta[c] * (1 - theta[c]) / 4000));
    }
  }
  double mean = 0;
  for (int64_t i = 0; i < 4000; ++i) mean += static_cast<double>(r.outputs[2].as<int64_t>()[i]);
  CHECK(std::abs(mean / 4000 - 3.5) <= 4.5 * std::sqrt(3.5 / 4000));
}
