// The per-thread C++ baselines of the users' benchmark suite: see users_native.h.
#include "users_native.h"

#include <algorithm>
#include <cmath>

namespace users {

namespace {

double simpson_rule(double a, double b, double fa, double fm, double fb) {
  return (b - a) / 6.0 * (fa + 4.0 * fm + fb);
}

SimpsonResult adapt(double a, double b, double fa, double fm, double fb, double whole, double tol,
                    int64_t depth) {
  double m = (a + b) / 2.0, lm = (a + m) / 2.0, rm = (m + b) / 2.0;
  double flm = std::sin(lm), frm = std::sin(rm);
  double left = simpson_rule(a, m, fa, flm, fm), right = simpson_rule(m, b, fm, frm, fb);
  double delta = left + right - whole;
  if (depth <= 0 || std::fabs(delta) <= 15.0 * tol) return {left + right + delta / 15.0, 1};
  SimpsonResult l = adapt(a, m, fa, flm, fm, left, tol / 2.0, depth - 1);
  SimpsonResult r = adapt(m, b, fm, frm, fb, right, tol / 2.0, depth - 1);
  return {l.integral + r.integral, l.calls + r.calls + 1};
}

using V2 = std::array<double, 2>;

V2 deriv(const V2& y, double w) { return {y[1], -(w * w) * y[0]}; }

}  // namespace

SimpsonResult simpson(double a, double b, double tol, int64_t max_depth) {
  double fa = std::sin(a), fb = std::sin(b), m = (a + b) / 2.0, fm = std::sin(m);
  return adapt(a, b, fa, fm, fb, simpson_rule(a, b, fa, fm, fb), tol, max_depth);
}

DopriResult dopri(double w, double t_end, double tol, double h0) {
  V2 y{1.0, 0.0};
  double t = 0.0, h = h0;
  int64_t accepted = 0, rejected = 0;
  while (t < t_end) {
    if (t + h > t_end) h = t_end - t;
    V2 k1 = deriv(y, w), k2, k3, k4, k5, k6, k7, y_new, err;
    V2 s;
    for (int i = 0; i < 2; ++i) s[i] = y[i] + h * (k1[i] / 5.0);
    k2 = deriv(s, w);
    for (int i = 0; i < 2; ++i) s[i] = y[i] + h * (3.0 / 40.0 * k1[i] + 9.0 / 40.0 * k2[i]);
    k3 = deriv(s, w);
    for (int i = 0; i < 2; ++i)
      s[i] = y[i] + h * (44.0 / 45.0 * k1[i] - 56.0 / 15.0 * k2[i] + 32.0 / 9.0 * k3[i]);
    k4 = deriv(s, w);
    for (int i = 0; i < 2; ++i)
      s[i] = y[i] + h * (19372.0 / 6561.0 * k1[i] - 25360.0 / 2187.0 * k2[i] +
                         64448.0 / 6561.0 * k3[i] - 212.0 / 729.0 * k4[i]);
    k5 = deriv(s, w);
    for (int i = 0; i < 2; ++i)
      s[i] = y[i] + h * (9017.0 / 3168.0 * k1[i] - 355.0 / 33.0 * k2[i] + 46732.0 / 5247.0 * k3[i] +
                         49.0 / 176.0 * k4[i] - 5103.0 / 18656.0 * k5[i]);
    k6 = deriv(s, w);
    for (int i = 0; i < 2; ++i)
      y_new[i] = y[i] + h * (35.0 / 384.0 * k1[i] + 500.0 / 1113.0 * k3[i] + 125.0 / 192.0 * k4[i] -
                             2187.0 / 6784.0 * k5[i] + 11.0 / 84.0 * k6[i]);
    k7 = deriv(y_new, w);
    double sq = 0.0;
    for (int i = 0; i < 2; ++i) {
      err[i] = h * (71.0 / 57600.0 * k1[i] - 71.0 / 16695.0 * k3[i] + 71.0 / 1920.0 * k4[i] -
                    17253.0 / 339200.0 * k5[i] + 22.0 / 525.0 * k6[i] - 1.0 / 40.0 * k7[i]);
      double scale = tol + tol * std::max(std::fabs(y[i]), std::fabs(y_new[i]));
      double e = err[i] / scale;
      sq += e * e;
    }
    double err_norm = std::sqrt(sq / 2.0);
    if (err_norm <= 1.0) {
      t = t + h;
      y = y_new;
      ++accepted;
    } else {
      ++rejected;
    }
    double factor = err_norm == 0.0 ? 5.0 : std::min(5.0, std::max(0.2, 0.9 * std::pow(err_norm, -0.2)));
    h = h * factor;
  }
  return {y, accepted, rejected};
}

SsaResult gillespie(std::mt19937_64& g, double b, double d, int64_t n0, double t_end) {
  std::exponential_distribution<double> exponential(1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int64_t n = n0, events = 0;
  double t = 0.0;
  while (true) {
    double birth = b, death = d * static_cast<double>(n), total = birth + death;
    if (total <= 0.0) break;
    t += exponential(g) / total;
    if (t >= t_end) break;
    if (uniform(g) * total < birth)
      ++n;
    else
      --n;
    ++events;
  }
  return {n, events};
}

WalkResult walk(std::mt19937_64& g, int64_t bound) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int64_t x = 0, steps = 0;
  while (std::abs(x) < bound) {
    x += uniform(g) < 0.5 ? 1 : -1;
    ++steps;
  }
  return {steps, x};
}

namespace {

double log_posterior(const std::vector<double>& beta, const std::vector<double>& X,
                     const std::vector<double>& y, int64_t n, int64_t p, double prior_sd) {
  double log_lik = 0.0, bb = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double eta = 0.0;
    for (int64_t j = 0; j < p; ++j) eta += X[i * p + j] * beta[j];
    log_lik += y[i] * eta - (std::max(eta, 0.0) + std::log1p(std::exp(-std::fabs(eta))));
  }
  for (int64_t j = 0; j < p; ++j) bb += beta[j] * beta[j];
  return log_lik - 0.5 * bb / (prior_sd * prior_sd);
}

}  // namespace

int64_t metropolis(std::mt19937_64& g, const std::vector<double>& X, const std::vector<double>& y,
                   int64_t n, int64_t p, double scale, double prior_sd, int64_t n_iter,
                   double* beta_out, double* mean_beta) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> beta(p, 0.0), proposal(p), sum(p, 0.0);
  double lp = log_posterior(beta, X, y, n, p, prior_sd);
  int64_t accepted = 0;
  for (int64_t i = 1; i <= n_iter; ++i) {
    for (int64_t j = 0; j < p; ++j) proposal[j] = beta[j] + scale * normal(g);
    double lp_proposal = log_posterior(proposal, X, y, n, p, prior_sd);
    if (std::log(uniform(g)) < lp_proposal - lp) {
      beta.swap(proposal);
      lp = lp_proposal;
      ++accepted;
    }
    if (2 * i > n_iter)
      for (int64_t j = 0; j < p; ++j) sum[j] += beta[j];
  }
  int64_t kept = std::max<int64_t>(n_iter - n_iter / 2, 1);
  for (int64_t j = 0; j < p; ++j) {
    beta_out[j] = beta[j];
    mean_beta[j] = sum[j] / static_cast<double>(kept);
  }
  return accepted;
}

namespace {

using Vec = std::vector<double>;

struct Target {
  const Vec& prec;
  const Vec& mu;
  size_t d;
  // prec (q - mu)
  Vec grad(const Vec& q) const {
    Vec g(d, 0.0);
    for (size_t i = 0; i < d; ++i)
      for (size_t j = 0; j < d; ++j) g[i] += prec[i * d + j] * (q[j] - mu[j]);
    return g;
  }
  double log_density(const Vec& q) const {
    Vec g = grad(q);
    double s = 0.0;
    for (size_t i = 0; i < d; ++i) s += (q[i] - mu[i]) * g[i];
    return -0.5 * s;
  }
};

double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

void leapfrog(const Target& t, Vec& q, Vec& p, double step) {
  Vec g = t.grad(q);
  for (size_t i = 0; i < t.d; ++i) p[i] -= 0.5 * step * g[i];
  for (size_t i = 0; i < t.d; ++i) q[i] += step * p[i];
  g = t.grad(q);
  for (size_t i = 0; i < t.d; ++i) p[i] -= 0.5 * step * g[i];
}

struct Tree {
  Vec qm, pm, qp, pp, proposal;
  int64_t n_valid = 0;
  bool go_on = true;
  int64_t steps = 0;
};

bool no_u_turn(const Vec& qm, const Vec& pm, const Vec& qp, const Vec& pp) {
  double a = 0, b = 0;
  for (size_t i = 0; i < qm.size(); ++i) {
    a += (qp[i] - qm[i]) * pm[i];
    b += (qp[i] - qm[i]) * pp[i];
  }
  return a >= 0.0 && b >= 0.0;
}

Tree build_tree(const Target& t, std::mt19937_64& g, const Vec& q, const Vec& p, double log_u,
                double step, int64_t depth) {
  if (depth == 0) {
    Tree r;
    Vec q1 = q, p1 = p;
    leapfrog(t, q1, p1, step);
    double joint = t.log_density(q1) - 0.5 * dot(p1, p1);
    r.n_valid = log_u <= joint ? 1 : 0;
    r.go_on = std::isfinite(joint) && joint > log_u - 1000.0;
    r.steps = 1;
    r.qm = r.qp = r.proposal = q1;
    r.pm = r.pp = p1;
    return r;
  }
  Tree r = build_tree(t, g, q, p, log_u, step, depth - 1);
  if (!r.go_on) return r;
  Tree s = step < 0.0 ? build_tree(t, g, r.qm, r.pm, log_u, step, depth - 1)
                      : build_tree(t, g, r.qp, r.pp, log_u, step, depth - 1);
  if (step < 0.0) {
    r.qm = s.qm;
    r.pm = s.pm;
  } else {
    r.qp = s.qp;
    r.pp = s.pp;
  }
  int64_t n_total = r.n_valid + s.n_valid;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (uniform(g) * static_cast<double>(n_total) < static_cast<double>(s.n_valid))
    r.proposal = s.proposal;
  r.n_valid = n_total;
  r.go_on = s.go_on && no_u_turn(r.qm, r.pm, r.qp, r.pp);
  r.steps += s.steps;
  return r;
}

}  // namespace

int64_t nuts(std::mt19937_64& g, const std::vector<double>& prec, const std::vector<double>& mu,
             const std::vector<double>& q0, double eps, int64_t max_depth, int64_t n_iter,
             int64_t n_warmup, double* q_out, double* sum_q, double* sum_qq) {
  Target t{prec, mu, mu.size()};
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Vec q = q0, p0(t.d);
  int64_t n_leapfrog = 0;
  for (size_t i = 0; i < t.d; ++i) sum_q[i] = sum_qq[i] = 0.0;
  for (int64_t it = 1; it <= n_iter; ++it) {
    for (auto& v : p0) v = normal(g);
    double joint0 = t.log_density(q) - 0.5 * dot(p0, p0);
    double log_u = joint0 + std::log(1.0 - uniform(g));
    Vec qm = q, pm = p0, qp = q, pp = p0;
    int64_t n = 1;
    for (int64_t depth = 0; depth < max_depth; ++depth) {
      double step = uniform(g) < 0.5 ? -eps : eps;
      Tree tree = step < 0.0 ? build_tree(t, g, qm, pm, log_u, step, depth)
                             : build_tree(t, g, qp, pp, log_u, step, depth);
      if (step < 0.0) {
        qm = tree.qm;
        pm = tree.pm;
      } else {
        qp = tree.qp;
        pp = tree.pp;
      }
      if (tree.go_on && uniform(g) * static_cast<double>(n) < static_cast<double>(tree.n_valid))
        q = tree.proposal;
      n += tree.n_valid;
      n_leapfrog += tree.steps;
      if (!tree.go_on || !no_u_turn(qm, pm, qp, pp)) break;
    }
    if (it > n_warmup)
      for (size_t i = 0; i < t.d; ++i) {
        sum_q[i] += q[i];
        sum_qq[i] += q[i] * q[i];
      }
  }
  for (size_t i = 0; i < t.d; ++i) q_out[i] = q[i];
  return n_leapfrog;
}

double timeseries(const double* y, double alpha, const double* beta, double sigma, int64_t evals) {
  double total = 0.0;
  for (int64_t i = 0; i < evals; ++i) {
    const double a = alpha + 0.001 * static_cast<double>(i);
    double lp = 0.0;
    for (int t = 5; t < 200; ++t) {
      double mu = a;
      for (int k = 0; k < 5; ++k) mu = mu + beta[k] * y[t - k - 1];
      const double r = (y[t] - mu) / sigma;
      lp = lp - 0.5 * r * r - std::log(sigma);
    }
    total = total + lp;
  }
  return total;
}

SirResult gillespie_sir(std::mt19937_64& g, int64_t n, int64_t i0, double beta, double gamma) {
  std::exponential_distribution<double> exponential(1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int64_t s = n - i0, i = i0, r = 0, events = 0;
  double t = 0.0;
  while (i > 0) {
    const double infect =
        beta * static_cast<double>(s) * static_cast<double>(i) / static_cast<double>(n);
    const double recover = gamma * static_cast<double>(i);
    const double total = infect + recover;
    t = t + exponential(g) / total;
    if (uniform(g) * total < infect) {
      --s;
      ++i;
    } else {
      --i;
      ++r;
    }
    ++events;
  }
  return {s, i, r, events, t};
}

int64_t grid_paths(const bool* grid, int64_t i, int64_t j) {
  if (grid[i * 8 + j]) return 0;
  if (i == 7 && j == 7) return 1;
  int64_t n = 0;
  if (i < 7) n = n + grid_paths(grid, i + 1, j);
  if (j < 7) n = n + grid_paths(grid, i, j + 1);
  return n;
}

double nested_energy(const double* x, double width) {
  double e = 0.0;
  for (int i = 0; i < 32; ++i)
    for (int j = i + 1; j < 32; ++j) {
      const double d = (x[i] - x[j]) / width;
      e = e + std::exp(-0.5 * d * d);
    }
  return e;
}

}  // namespace users
