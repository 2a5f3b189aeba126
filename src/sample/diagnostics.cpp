#include "sample/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ab::sample {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Split chains: each chain's first and last draws / 2 draws (an odd chain's
// middle draw is dropped), so 2 * chains chains of `n` draws, chain-major.
struct Split {
  std::vector<double> y;
  int64_t m = 0, n = 0;
};

Split split(const double* x, int64_t chains, int64_t draws) {
  Split s;
  s.n = draws / 2;
  s.m = 2 * chains;
  s.y.reserve(static_cast<size_t>(s.m * s.n));
  for (int64_t c = 0; c < chains; ++c) {
    const double* row = x + c * draws;
    s.y.insert(s.y.end(), row, row + s.n);
    s.y.insert(s.y.end(), row + (draws - s.n), row + draws);
  }
  return s;
}

// NaN where the diagnostics are not defined: too few draws, a non-finite
// draw, or all draws equal.
bool undefined(const std::vector<double>& y, int64_t n) {
  if (n < 3 || y.empty()) return true;
  for (double v : y)
    if (!std::isfinite(v)) return true;
  auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  return *lo == *hi;
}

double mean_of(const double* p, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += p[i];
  return s / static_cast<double>(n);
}

// Sample variance (n - 1 denominator).
double var_of(const double* p, int64_t n) {
  const double mu = mean_of(p, n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += (p[i] - mu) * (p[i] - mu);
  return s / static_cast<double>(n - 1);
}

// sqrt(var+ / W) of m chains of n draws.
double rhat_of(const Split& s) {
  if (undefined(s.y, s.n)) return kNaN;
  std::vector<double> means(static_cast<size_t>(s.m));
  double w = 0;
  for (int64_t c = 0; c < s.m; ++c) {
    means[static_cast<size_t>(c)] = mean_of(s.y.data() + c * s.n, s.n);
    w += var_of(s.y.data() + c * s.n, s.n);
  }
  w /= static_cast<double>(s.m);
  const double b_over_n = var_of(means.data(), s.m);  // B / n
  const double n = static_cast<double>(s.n);
  return std::sqrt(((n - 1) / n * w + b_over_n) / w);
}

// ESS of m chains of n draws: Geyer's initial positive sequence of the
// chains' mean autocorrelation, made monotone, as `posterior` computes it.
// Autocovariances (biased: divided by n) are computed lag by lag, only as
// far as the sequence goes.
double ess_of(const Split& s) {
  if (undefined(s.y, s.n)) return kNaN;
  const int64_t m = s.m, n = s.n;
  std::vector<double> centred(s.y.size()), means(static_cast<size_t>(m));
  for (int64_t c = 0; c < m; ++c) {
    const double mu = mean_of(s.y.data() + c * n, n);
    means[static_cast<size_t>(c)] = mu;
    for (int64_t i = 0; i < n; ++i) centred[c * n + i] = s.y[c * n + i] - mu;
  }
  auto acov_mean = [&](int64_t t) {  // the chains' mean autocovariance at lag t
    double total = 0;
    for (int64_t c = 0; c < m; ++c) {
      const double* p = centred.data() + c * n;
      double a = 0;
      for (int64_t i = 0; i + t < n; ++i) a += p[i] * p[i + t];
      total += a / static_cast<double>(n);
    }
    return total / static_cast<double>(m);
  };
  const double nd = static_cast<double>(n);
  const double acov0 = acov_mean(0);
  const double mean_var = acov0 * nd / (nd - 1);
  double var_plus = mean_var * (nd - 1) / nd;
  if (m > 1) var_plus += var_of(means.data(), m);
  std::vector<double> rho(static_cast<size_t>(n), 0.0);
  auto r = [&](int64_t t) -> double& { return rho[static_cast<size_t>(t)]; };
  auto rho_at = [&](int64_t t) { return 1 - (mean_var - acov_mean(t)) / var_plus; };
  int64_t t = 0;
  double even = 1, odd = rho_at(1);
  r(0) = even;
  r(1) = odd;
  while (t < n - 5 && !std::isnan(even + odd) && even + odd > 0) {
    t += 2;
    even = rho_at(t);
    odd = rho_at(t + 1);
    if (even + odd >= 0) {
      r(t) = even;
      r(t + 1) = odd;
    }
  }
  const int64_t max_t = t;
  if (even > 0) r(max_t) = even;
  for (t = 0; t <= max_t - 4;) {  // initial monotone sequence
    t += 2;
    if (r(t) + r(t + 1) > r(t - 2) + r(t - 1)) {
      r(t) = (r(t - 2) + r(t - 1)) / 2;
      r(t + 1) = r(t);
    }
  }
  const double draws = static_cast<double>(m) * nd;
  double tau = -1 + r(max_t);
  for (int64_t k = 0; k < max_t; ++k) tau += 2 * r(k);
  tau = std::max(tau, 1 / std::log10(draws));
  return draws / tau;
}

// The draws replaced by their normal scores (r - 3/8) / (S + 1/4), r the
// average rank among all S of them.
void rank_normalize(std::vector<double>& y) {
  const size_t s = y.size();
  std::vector<size_t> order(s);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
  std::vector<double> z(s);
  for (size_t i = 0; i < s;) {
    size_t j = i;
    while (j + 1 < s && y[order[j + 1]] == y[order[i]]) ++j;
    const double rank = (static_cast<double>(i + j) / 2) + 1;  // average of ranks i+1 .. j+1
    const double p = (rank - 0.375) / (static_cast<double>(s) + 0.25);
    for (size_t k = i; k <= j; ++k) z[order[k]] = normal_quantile(p);
    i = j + 1;
  }
  y = std::move(z);
}

Split normalized(Split s) {
  if (!undefined(s.y, s.n)) rank_normalize(s.y);
  return s;
}

// The quantile at p of draws already sorted, linear between order statistics.
double sorted_quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return kNaN;
  const double h = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::vector<double> sorted_copy(const std::vector<double>& y) {
  std::vector<double> s = y;
  std::sort(s.begin(), s.end());
  return s;
}

// ESS of the indicator draws x <= q.
double ess_below(const Split& s, double q) {
  Split ind = s;
  for (double& v : ind.y) v = v <= q ? 1.0 : 0.0;
  return ess_of(ind);
}

// The smaller ESS of the indicators at the split draws' 5% and 95% quantiles.
double tail_ess_of(const Split& s) {
  if (undefined(s.y, s.n)) return kNaN;
  const std::vector<double> sorted = sorted_copy(s.y);
  return std::min(ess_below(s, sorted_quantile(sorted, 0.05)),
                  ess_below(s, sorted_quantile(sorted, 0.95)));
}

// R-hat of the split draws `s`, given their rank-normalized form `z`: the
// larger of z's split R-hat and that of the folded draws |x - median|.
double rhat_of(const Split& s, const Split& z) {
  if (undefined(s.y, s.n)) return kNaN;
  const double bulk = rhat_of(z);
  const double med = sorted_quantile(sorted_copy(s.y), 0.5);
  Split folded = s;
  for (double& v : folded.y) v = std::fabs(v - med);
  const double tail = rhat_of(normalized(std::move(folded)));
  return std::max(bulk, tail);
}

double polynomial(const double* c, int k, double r) {  // c[0] + c[1] r + ... + c[k-1] r^(k-1)
  double v = c[k - 1];
  for (int i = k - 2; i >= 0; --i) v = v * r + c[i];
  return v;
}

}  // namespace

double quantile(std::vector<double> pooled, double p) {
  std::sort(pooled.begin(), pooled.end());
  return sorted_quantile(pooled, p);
}

double normal_quantile(double p) {
  // Wichura (1988), Algorithm AS 241, PPND16: coefficients from the constant term up.
  static const double a[8] = {3.387132872796366608,  133.14166789178437745,
                              1971.5909503065514427, 13731.693765509461125,
                              45921.953931549871457, 67265.770927008700853,
                              33430.575583588128105, 2509.0809287301226727};
  static const double b[8] = {1.0,
                              42.313330701600911252,
                              687.1870074920579083,
                              5394.1960214247511077,
                              21213.794301586595867,
                              39307.89580009271061,
                              28729.085735721942674,
                              5226.495278852545925};
  static const double c[8] = {1.42343711074968357734,  4.6303378461565452959,
                              5.7694972214606914055,   3.64784832476320460504,
                              1.27045825245236838258,  0.24178072517745061177,
                              0.0227238449892691845833, 7.7454501427834140764e-4};
  static const double d[8] = {1.0,
                              2.05319162663775882187,
                              1.6763848301838038494,
                              0.68976733498510000455,
                              0.14810397642748007459,
                              0.0151986665636164571966,
                              5.475938084995344946e-4,
                              1.05075007164441684324e-9};
  static const double e[8] = {6.6579046435011037772,   5.4637849111641143699,
                              1.7848265399172913358,   0.29656057182850489123,
                              0.026532189526576123093, 0.0012426609473880784386,
                              2.71155556874348757815e-5, 2.01033439929228813265e-7};
  static const double f[8] = {1.0,
                              0.59983220655588793769,
                              0.13692988092273580531,
                              0.0148753612908506148525,
                              7.868691311456132591e-4,
                              1.8463183175100546818e-5,
                              1.4215117583164458887e-7,
                              2.04426310338993978564e-15};
  if (!(p > 0 && p < 1)) return p == 0 ? -INFINITY : p == 1 ? INFINITY : kNaN;
  const double q = p - 0.5;
  if (std::fabs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q * polynomial(a, 8, r) / polynomial(b, 8, r);
  }
  double r = std::sqrt(-std::log(q < 0 ? p : 1 - p));
  double x;
  if (r <= 5) {
    r -= 1.6;
    x = polynomial(c, 8, r) / polynomial(d, 8, r);
  } else {
    r -= 5;
    x = polynomial(e, 8, r) / polynomial(f, 8, r);
  }
  return q < 0 ? -x : x;
}

double split_rhat_basic(const double* x, int64_t chains, int64_t draws) {
  return rhat_of(split(x, chains, draws));
}

double rhat(const double* x, int64_t chains, int64_t draws) {
  const Split s = split(x, chains, draws);
  return rhat_of(s, normalized(s));
}

double ess_basic(const double* x, int64_t chains, int64_t draws) {
  return ess_of(split(x, chains, draws));
}

double ess_bulk(const double* x, int64_t chains, int64_t draws) {
  return ess_of(normalized(split(x, chains, draws)));
}

double ess_tail(const double* x, int64_t chains, int64_t draws) {
  return tail_ess_of(split(x, chains, draws));
}

Summary summarize(const double* x, int64_t chains, int64_t draws) {
  Summary r;
  const int64_t total = chains * draws;
  if (total == 0) {
    r.mean = r.mcse = r.sd = r.q5 = r.q50 = r.q95 = r.ess_bulk = r.ess_tail = r.rhat = kNaN;
    return r;
  }
  r.mean = mean_of(x, total);
  r.sd = total > 1 ? std::sqrt(var_of(x, total)) : kNaN;
  std::vector<double> pooled(x, x + total);  // sorted once for the three quantiles
  std::sort(pooled.begin(), pooled.end());
  r.q5 = sorted_quantile(pooled, 0.05);
  r.q50 = sorted_quantile(pooled, 0.5);
  r.q95 = sorted_quantile(pooled, 0.95);
  // The chains split once, and rank-normalized once for the bulk ESS and R-hat.
  const Split s = split(x, chains, draws);
  const Split z = normalized(s);
  r.mcse = r.sd / std::sqrt(ess_of(s));
  r.ess_bulk = ess_of(z);
  r.ess_tail = tail_ess_of(s);
  r.rhat = rhat_of(s, z);
  return r;
}

}  // namespace ab::sample
