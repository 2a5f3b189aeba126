// The rows of the users' benchmark suite (tools/bench/users.cpp): inputs, the runs of the
// VM and of the baselines, and the checks of their outputs.
#include <numeric>

#include "users_suite.h"

namespace users {

namespace {

std::vector<double> uniform_vector(std::mt19937_64& g, int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// Adaptive Simpson of sin over [a, a + L], a in [-1, 1], L in [1, 10], tol 1e-10: the
// VM against the same recursion in C++, bit for bit, and the exact cos(a) - cos(b).
Row row_simpson(const Ctx& c) {
  Row r;
  r.program = "simpson.ab";
  r.batch = c.quick ? 256 : 8192;
  r.name = "simpson_" + std::to_string(r.batch);
  r.step_unit = "calls of adapt";
  std::mt19937_64 g(101);
  std::vector<double> a = uniform_vector(g, r.batch, -1.0, 1.0), b(r.batch);
  std::vector<double> len = uniform_vector(g, r.batch, 1.0, 10.0);
  for (int64_t i = 0; i < r.batch; ++i) b[i] = a[i] + len[i];
  const double tol = 1e-10;
  const int64_t max_depth = 50;
  Inputs in;
  in.add(a, r.batch);
  in.add(b, r.batch);
  in.scalar(tol);
  in.scalar(max_depth);
  Outputs got = run_modes(c, r, in, c.reps);
  std::vector<SimpsonResult> want(r.batch);
  time_cpp(r, c.reps, kCppPlain, [&] {
    for (int64_t i = 0; i < r.batch; ++i) want[i] = simpson(a[i], b[i], tol, max_depth);
  });
  const double* integral = got[0].as<double>();
  const int64_t* calls = got[1].as<int64_t>();
  bool same = true;
  double err = 0;
  for (int64_t i = 0; i < r.batch; ++i) {
    same = same && integral[i] == want[i].integral && calls[i] == want[i].calls;
    err = std::max(err, std::fabs(integral[i] - (std::cos(a[i]) - std::cos(b[i]))));
    r.thread_steps += calls[i];
  }
  r.check("outputs equal the C++ baseline's bit for bit", same, same, 1);
  r.check("max |integral - (cos a - cos b)|", err <= 1e-8, err, 1e-8);
  return r;
}

// Dormand-Prince on y'' = -w^2 y, w in [0.5, 5], to t = 10 at tol 1e-8: bit for bit
// against C++, and within 1e-5 of the exact solution (relative to w).
Row row_dopri(const Ctx& c) {
  Row r;
  r.program = "dopri.ab";
  r.batch = c.quick ? 256 : 4096;
  r.name = "dopri_" + std::to_string(r.batch);
  r.step_unit = "steps tried";
  std::mt19937_64 g(103);
  std::vector<double> w = uniform_vector(g, r.batch, 0.5, 5.0);
  const double t_end = 10.0, tol = 1e-8, h0 = 0.01;
  Inputs in;
  in.add(w, r.batch);
  in.scalar(t_end);
  in.scalar(tol);
  in.scalar(h0);
  Outputs got = run_modes(c, r, in, c.reps);
  std::vector<DopriResult> want(r.batch);
  time_cpp(r, c.reps, kCppPlain, [&] {
    for (int64_t i = 0; i < r.batch; ++i) want[i] = dopri(w[i], t_end, tol, h0);
  });
  const double* y = got[0].as<double>();
  const int64_t* acc = got[1].as<int64_t>();
  const int64_t* rej = got[2].as<int64_t>();
  bool same = true;
  double err = 0;
  for (int64_t i = 0; i < r.batch; ++i) {
    same = same && y[2 * i] == want[i].y[0] && y[2 * i + 1] == want[i].y[1] &&
           acc[i] == want[i].accepted && rej[i] == want[i].rejected;
    double e0 = std::fabs(y[2 * i] - std::cos(w[i] * t_end));
    double e1 = std::fabs(y[2 * i + 1] + w[i] * std::sin(w[i] * t_end)) / w[i];
    err = std::max({err, e0, e1});
    r.thread_steps += acc[i] + rej[i];
  }
  r.check("outputs equal the C++ baseline's bit for bit", same, same, 1);
  r.check("max error against cos(w t), -w sin(w t) (velocity / w)", err <= 1e-5, err, 1e-5);
  return r;
}

// Gillespie's SSA, births at 10, deaths at 0.5 each, from 0: the population at t is
// Poisson with mean 20 (1 - exp(-0.5 t)).
Row row_gillespie(const Ctx& c) {
  Row r;
  r.program = "gillespie.ab";
  r.batch = c.quick ? 2048 : 16384;
  r.name = "gillespie_" + std::to_string(r.batch);
  r.step_unit = "events";
  const int64_t seed = 1, n0 = 0;
  const double b = 10.0, d = 0.5, t_end = c.quick ? 5.0 : 20.0;
  Inputs in;
  in.scalar(seed);
  in.scalar(b);
  in.scalar(d);
  in.scalar(n0);
  in.scalar(t_end);
  Outputs got = run_modes(c, r, in, c.reps);
  std::vector<SsaResult> want(r.batch);
  time_cpp(r, c.reps, kCppRandom, [&] {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < r.batch; ++i) want[i] = gillespie(g, b, d, n0, t_end);
  });
  Json np = run_numpy(c, r, "gillespie",
                      {{"batch", r.batch}, {"seed", seed}, {"b", b}, {"d", d}, {"n0", n0}, {"t_end", t_end}},
                      std::min(c.reps, 2));
  const int64_t* n = got[0].as<int64_t>();
  const int64_t* events = got[1].as<int64_t>();
  r.thread_steps = std::accumulate(events, events + r.batch, int64_t{0});
  double mean = b / d * (1.0 - std::exp(-d * t_end));
  std::vector<int64_t> cn(r.batch), ce(r.batch);
  for (int64_t i = 0; i < r.batch; ++i) cn[i] = want[i].n, ce[i] = want[i].events;
  double z_vm = z_known(moments(n, r.batch), mean, mean);
  double z_cpp = z_known(moments(cn.data(), r.batch), mean, mean);
  double z_np = z_known(from_json(np["n"]), mean, mean);
  double z_ev = z_two(moments(events, r.batch), moments(ce.data(), r.batch));
  double z_ev_np = z_two(moments(events, r.batch), from_json(np["events"]));
  r.check("VM: mean population vs the exact mean, in standard errors", z_vm <= kZ, z_vm, kZ);
  r.check("C++: mean population vs the exact mean", z_cpp <= kZ, z_cpp, kZ);
  r.check("NumPy: mean population vs the exact mean", z_np <= kZ, z_np, kZ);
  r.check("mean events, VM vs C++", z_ev <= kZ, z_ev, kZ);
  r.check("mean events, VM vs NumPy", z_ev_np <= kZ, z_ev_np, kZ);
  r.extra["exact_mean_population"] = mean;
  return r;
}

// Random walks to +-bound: the exit time has mean bound^2 and variance
// 2 bound^2 (bound^2 - 1) / 3; each side is reached with probability 1/2.
Row row_walk(const Ctx& c) {
  Row r;
  r.program = "walk.ab";
  r.batch = c.quick ? 2000 : 200000;
  r.name = "walk_" + std::to_string(r.batch);
  r.step_unit = "walk steps";
  const int64_t seed = 2, bound = c.quick ? 10 : 20;
  Inputs in;
  in.scalar(seed);
  in.scalar(bound);
  Outputs got = run_modes(c, r, in, c.reps);
  std::vector<WalkResult> want(r.batch);
  time_cpp(r, c.reps, kCppRandom, [&] {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < r.batch; ++i) want[i] = walk(g, bound);
  });
  Json np = run_numpy(c, r, "walk", {{"batch", r.batch}, {"seed", seed}, {"bound", bound}},
                      std::min(c.reps, 2));
  const int64_t* steps = got[0].as<int64_t>();
  const int64_t* x = got[1].as<int64_t>();
  r.thread_steps = std::accumulate(steps, steps + r.batch, int64_t{0});
  double n2 = static_cast<double>(bound * bound), var = 2.0 * n2 * (n2 - 1.0) / 3.0;
  std::vector<double> up(r.batch), cup(r.batch);
  std::vector<int64_t> cs(r.batch);
  for (int64_t i = 0; i < r.batch; ++i) {
    up[i] = x[i] > 0;
    cup[i] = want[i].x > 0;
    cs[i] = want[i].steps;
  }
  double z_vm = z_known(moments(steps, r.batch), n2, var);
  double z_cpp = z_known(moments(cs.data(), r.batch), n2, var);
  double z_np = z_known(from_json(np["steps"]), n2, var);
  double z_up = z_known(moments(up.data(), r.batch), 0.5, 0.25);
  double z_up_cpp = z_known(moments(cup.data(), r.batch), 0.5, 0.25);
  double z_up_np = z_known(from_json(np["x_positive"]), 0.5, 0.25);
  r.check("VM: mean steps vs bound^2, in standard errors", z_vm <= kZ, z_vm, kZ);
  r.check("C++: mean steps vs bound^2", z_cpp <= kZ, z_cpp, kZ);
  r.check("NumPy: mean steps vs bound^2", z_np <= kZ, z_np, kZ);
  r.check("VM: fraction ending at +bound vs 1/2", z_up <= kZ, z_up, kZ);
  r.check("C++: fraction ending at +bound vs 1/2", z_up_cpp <= kZ, z_up_cpp, kZ);
  r.check("NumPy: fraction ending at +bound vs 1/2", z_up_np <= kZ, z_up_np, kZ);
  r.extra["bound"] = bound;
  return r;
}

// Metropolis on a logistic regression with n = 100 observations of p = 5 (an intercept
// and four N(0, 1) covariates): per-chain means and acceptances of the VM against C++ and
// NumPy, as two-sample tests over the chains.
Row row_metropolis(const Ctx& c) {
  Row r;
  r.program = "metropolis.ab";
  r.batch = c.quick ? 256 : 1024;
  r.name = "metropolis_" + std::to_string(r.batch);
  r.step_unit = "iterations";
  const int64_t n = 100, p = 5, n_iter = c.quick ? 50 : 200, seed = 3;
  const double scale = 0.3, prior_sd = 5.0;
  const double beta_true[p] = {0.5, -1.0, 1.5, 0.0, 0.8};
  std::mt19937_64 g(107);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> X(n * p), y(n), beta0(p, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double eta = 0;
    for (int64_t j = 0; j < p; ++j) {
      X[i * p + j] = j == 0 ? 1.0 : z(g);
      eta += X[i * p + j] * beta_true[j];
    }
    y[i] = u(g) < 1.0 / (1.0 + std::exp(-eta)) ? 1.0 : 0.0;
  }
  Inputs in;
  in.add(X, 1, {n, p});
  in.add(y, 1, {n});
  in.add(beta0, 1, {p});
  in.scalar(seed);
  in.scalar(scale);
  in.scalar(prior_sd);
  in.scalar(n_iter);
  Outputs got = run_modes(c, r, in, c.reps);
  std::vector<double> cb(r.batch * p), cm(r.batch * p);
  std::vector<int64_t> ca(r.batch);
  time_cpp(r, c.reps, kCppRandom, [&] {
    std::mt19937_64 gc(seed);
    for (int64_t i = 0; i < r.batch; ++i)
      ca[i] = metropolis(gc, X, y, n, p, scale, prior_sd, n_iter, &cb[i * p], &cm[i * p]);
  });
  Json Xj = Json::array();
  for (int64_t i = 0; i < n; ++i) Xj.push_back(std::vector<double>(&X[i * p], &X[i * p + p]));
  Json np = run_numpy(c, r, "metropolis",
                      {{"batch", r.batch}, {"seed", seed}, {"n_iter", n_iter}, {"scale", scale},
                       {"prior_sd", prior_sd}, {"X", Xj}, {"y", y}},
                      std::min(c.reps, 2));
  r.thread_steps = r.batch * n_iter;
  const double* mean_beta = got[1].as<double>();
  const int64_t* acc = got[2].as<int64_t>();
  double z_cpp = 0, z_np = 0;
  for (int64_t j = 0; j < p; ++j) {
    Moments vm = moments(mean_beta + j, r.batch, p);
    z_cpp = std::max(z_cpp, z_two(vm, moments(&cm[j], r.batch, p)));
    z_np = std::max(z_np, z_two(vm, from_json(np["mean_beta" + std::to_string(j)])));
  }
  double za_cpp = z_two(moments(acc, r.batch), moments(ca.data(), r.batch));
  double za_np = z_two(moments(acc, r.batch), from_json(np["accepted"]));
  r.check("chain means of beta, VM vs C++ (max over the 5 coordinates)", z_cpp <= kZ, z_cpp, kZ);
  r.check("chain means of beta, VM vs NumPy (max over the 5 coordinates)", z_np <= kZ, z_np, kZ);
  r.check("accepted proposals, VM vs C++", za_cpp <= kZ, za_cpp, kZ);
  r.check("accepted proposals, VM vs NumPy", za_np <= kZ, za_np, kZ);
  r.extra["acceptance_rate"] =
      moments(acc, r.batch).mean / static_cast<double>(n_iter);
  return r;
}

// NUTS on the d = 10 Gaussian whose covariance is AR(1) with rho = 0.9 (unit variances):
// the chains' last states against N(0, Sigma) (means 0, variances 1), and the leapfrog
// steps per chain against C++'s.
Row row_nuts(const Ctx& c, int64_t chains) {
  Row r;
  r.program = "nuts_gauss.ab";
  r.batch = chains;
  r.name = "nuts_" + std::to_string(chains);
  r.step_unit = "leapfrog steps";
  const int64_t d = 10, seed = 4, max_depth = 8;
  const int64_t n_iter = c.quick ? 10 : 100, n_warmup = n_iter / 2;
  const double rho = 0.9, eps = 0.15, k = 1.0 / (1.0 - rho * rho);
  std::vector<double> prec(d * d, 0.0), mu(d, 0.0), q0(d, 0.0);
  for (int64_t i = 0; i < d; ++i) {
    prec[i * d + i] = k * (i == 0 || i == d - 1 ? 1.0 : 1.0 + rho * rho);
    if (i + 1 < d) prec[i * d + i + 1] = prec[(i + 1) * d + i] = -k * rho;
  }
  Inputs in;
  in.add(prec, 1, {d, d});
  in.add(mu, 1, {d});
  in.add(q0, 1, {d});
  in.scalar(seed);
  in.scalar(eps);
  in.scalar(max_depth);
  in.scalar(n_iter);
  in.scalar(n_warmup);
  int reps = chains >= 8192 ? 1 : c.reps;
  Outputs got = run_modes(c, r, in, reps);
  std::vector<double> cq(chains * d), csq(chains * d), csqq(chains * d);
  std::vector<int64_t> cl(chains);
  time_cpp(r, reps, kCppRandom, [&] {
    std::mt19937_64 g(seed);
    for (int64_t i = 0; i < chains; ++i)
      cl[i] = nuts(g, prec, mu, q0, eps, max_depth, n_iter, n_warmup, &cq[i * d], &csq[i * d],
                   &csqq[i * d]);
  });
  const double* q = got[0].as<double>();
  const int64_t* leapfrogs = got[3].as<int64_t>();
  r.thread_steps = std::accumulate(leapfrogs, leapfrogs + chains, int64_t{0});
  double zm = 0, zv = 0, zm_cpp = 0, zq = 0;
  for (int64_t j = 0; j < d; ++j) {
    Moments m = moments(q + j, chains, d), mc = moments(&cq[j], chains, d);
    zm = std::max(zm, z_known(m, 0.0, 1.0));
    zm_cpp = std::max(zm_cpp, z_known(mc, 0.0, 1.0));
    // the sample variance of n normal draws has standard error sqrt(2 / n)
    zv = std::max(zv, std::fabs(m.var - 1.0) / std::sqrt(2.0 / static_cast<double>(chains)));
    zq = std::max(zq, z_two(m, mc));
  }
  double zl = z_two(moments(leapfrogs, chains), moments(cl.data(), chains));
  r.check("VM: last states' means vs 0 (max over d, standard errors)", zm <= kZ, zm, kZ);
  r.check("VM: last states' variances vs 1 (max over d, standard errors)", zv <= kZ, zv, kZ);
  r.check("C++: last states' means vs 0", zm_cpp <= kZ, zm_cpp, kZ);
  r.check("last states' means, VM vs C++", zq <= kZ, zq, kZ);
  r.check("leapfrog steps per chain, VM vs C++", zl <= kZ, zl, kZ);
  r.extra["leapfrogs_per_iteration"] =
      static_cast<double>(r.thread_steps) / static_cast<double>(chains * n_iter);
  r.extra["iterations"] = n_iter;
  return r;
}

// The shapes of issue 34, each at 10,000 and 100,000 threads: programs in
// tools/bench/users/ (relative to programs/, where the suite looks).

// A row of those shapes: its program tools/bench/users/NAME.ab, its batch (256 with
// --quick) and its name NAME_batch.
Row shape_row(const Ctx& c, const std::string& name, int64_t threads, const char* unit) {
  Row r;
  r.program = "../tools/bench/users/" + name + ".ab";
  r.batch = c.quick ? 256 : threads;
  r.name = name + "_" + std::to_string(r.batch);
  r.step_unit = unit;
  return r;
}

// The VM's float results against the C++ baseline's: within 1e-12 relative (the check),
// and whether bit for bit (reported).
void check_close(Row& r, const double* got, const std::vector<double>& want) {
  bool same = true;
  double rel = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    same = same && got[i] == want[i];
    rel = std::max(rel, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  }
  r.check("outputs within 1e-12 of the C++ baseline's (relative)", rel <= 1e-12, rel, 1e-12);
  r.extra["bit_for_bit"] = same;
}

// The AR(5) log density (a loop over 200 time points holding a loop over 5 lags, indexed
// reads of per-thread y and beta), `evals` evaluations per thread: bit for bit against
// the same function in scalar C++.
Row row_timeseries(const Ctx& c, int64_t threads) {
  Row r = shape_row(c, "timeseries", threads, "inner iterations (lags)");
  const int64_t evals = c.quick ? 2 : threads >= 100000 ? 1 : 10;
  std::mt19937_64 g(107);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> y(r.batch * 200), alpha(r.batch), beta(r.batch * 5);
  for (auto& v : y) v = normal(g);
  for (auto& v : alpha) v = normal(g);
  for (auto& v : beta) v = 0.2 * normal(g);
  std::vector<double> sigma = uniform_vector(g, r.batch, 0.5, 2.0);
  Inputs in;
  in.add(y, r.batch, {200});
  in.add(alpha, r.batch);
  in.add(beta, r.batch, {5});
  in.add(sigma, r.batch);
  in.scalar(evals);
  int reps = threads >= 100000 ? 1 : c.reps;
  Outputs got = run_modes(c, r, in, reps);
  std::vector<double> want(r.batch);
  time_cpp(r, reps, kCppPlain, [&] {
    for (int64_t i = 0; i < r.batch; ++i)
      want[i] = timeseries(&y[i * 200], alpha[i], &beta[i * 5], sigma[i], evals);
  });
  r.thread_steps = r.batch * evals * 195 * 5;
  check_close(r, got[0].as<double>(), want);
  r.extra["evals_per_thread"] = evals;
  return r;
}

// The SIR epidemic's final susceptible count: its exact law, from the embedded jump chain
// (from (s, i) an infection with probability beta s / (beta s + gamma n), else a
// recovery), and the exact mean duration (each state visited adds 1 / its total rate).
struct SirExact {
  double mean_s, var_s, mean_t;
};
SirExact sir_exact(int64_t n, int64_t i0, double beta, double gamma) {
  std::vector<double> p((n + 1) * (n + 2), 0.0);  // p[s (n + 2) + i]: the chance to visit (s, i)
  auto at = [&](int64_t s, int64_t i) -> double& { return p[s * (n + 2) + i]; };
  at(n - i0, i0) = 1.0;
  SirExact e{0, 0, 0};
  double m2 = 0;
  for (int64_t s = n; s >= 0; --s) {
    for (int64_t i = n - s; i > 0; --i) {
      double q = at(s, i);
      if (q == 0.0) continue;
      double infect = beta * static_cast<double>(s * i) / static_cast<double>(n);
      double total = infect + gamma * static_cast<double>(i);
      e.mean_t += q / total;
      if (s > 0) at(s - 1, i + 1) += q * infect / total;
      at(s, i - 1) += q * (1.0 - infect / total);
    }
    e.mean_s += at(s, 0) * static_cast<double>(s);
    m2 += at(s, 0) * static_cast<double>(s * s);
  }
  e.var_s = m2 - e.mean_s * e.mean_s;
  return e;
}

// Gillespie's SSA of an SIR epidemic (n = 100 from 2 infected, beta 2, gamma 1: R0 = 2) until
// no one is infected, a `while i > 0` loop of random draws, threads ending after a few events
// (the epidemic dies out) or some 160: the final susceptibles of the VM, C++ and NumPy
// against their exact law, the mean duration of the VM against its exact value and C++'s
// and NumPy's, and every thread ending with i = 0 and s + r = n.
Row row_gillespie_sir(const Ctx& c, int64_t threads) {
  Row r = shape_row(c, "gillespie_sir", threads, "events");
  const int64_t seed = 5, n = 100, i0 = 2;
  const double beta = 2.0, gamma = 1.0;
  Inputs in;
  in.scalar(seed);
  in.scalar(n);
  in.scalar(i0);
  in.scalar(beta);
  in.scalar(gamma);
  int reps = threads >= 100000 ? 1 : c.reps;
  Outputs got = run_modes(c, r, in, reps);
  std::vector<SirResult> want(r.batch);
  time_cpp(r, reps, kCppRandom, [&] {
    std::mt19937_64 g(seed);
    for (int64_t k = 0; k < r.batch; ++k) want[k] = gillespie_sir(g, n, i0, beta, gamma);
  });
  Json np = run_numpy(
      c, r, "gillespie_sir",
      {{"batch", r.batch}, {"seed", seed}, {"n", n}, {"i0", i0}, {"beta", beta}, {"gamma", gamma}},
      std::min(reps, 2));
  const int64_t* s = got[0].as<int64_t>();
  const int64_t* i = got[1].as<int64_t>();
  const int64_t* rec = got[2].as<int64_t>();
  const int64_t* events = got[3].as<int64_t>();
  const double* t = got[4].as<double>();
  r.thread_steps = std::accumulate(events, events + r.batch, int64_t{0});
  bool closed = true;
  std::vector<int64_t> cs(r.batch);
  std::vector<double> ct(r.batch);
  for (int64_t k = 0; k < r.batch; ++k) {
    closed = closed && i[k] == 0 && s[k] + rec[k] == n && events[k] == 2 * (n - s[k]) - i0;
    cs[k] = want[k].s;
    ct[k] = want[k].t;
  }
  SirExact e = sir_exact(n, i0, beta, gamma);
  Moments mt = moments(t, r.batch);
  double z_vm = z_known(moments(s, r.batch), e.mean_s, e.var_s);
  double z_cpp = z_known(moments(cs.data(), r.batch), e.mean_s, e.var_s);
  double z_np = z_known(from_json(np["s"]), e.mean_s, e.var_s);
  double z_t = z_known(mt, e.mean_t, mt.var);
  double z_t_cpp = z_two(mt, moments(ct.data(), r.batch));
  double z_t_np = z_two(mt, from_json(np["t"]));
  r.check("VM: every thread ends with i = 0, s + r = n, events = 2 (n - s) - i0", closed, closed,
          1);
  r.check("VM: mean final susceptibles vs the exact mean, in standard errors", z_vm <= kZ, z_vm,
          kZ);
  r.check("C++: mean final susceptibles vs the exact mean", z_cpp <= kZ, z_cpp, kZ);
  r.check("NumPy: mean final susceptibles vs the exact mean", z_np <= kZ, z_np, kZ);
  r.check("VM: mean duration vs the exact mean (the VM's standard error)", z_t <= kZ, z_t, kZ);
  r.check("mean duration, VM vs C++", z_t_cpp <= kZ, z_t_cpp, kZ);
  r.check("mean duration, VM vs NumPy", z_t_np <= kZ, z_t_np, kZ);
  r.extra["exact_mean_susceptible"] = e.mean_s;
  r.extra["exact_mean_duration"] = e.mean_t;
  return r;
}

// Lattice paths through a per-thread 8 x 8 grid, each cell but the first and the last
// blocked with probability `blocked_fraction`: a plain recursion of two calls, against the
// same recursion in C++, exactly. The calls per thread fall fast with the fraction (about
// 2150 at 15%, 600 at 25%, 310 at 30%).
Row row_grid_paths(const Ctx& c, int64_t threads, double blocked_fraction) {
  Row r = shape_row(c, "grid_paths", threads, "calls of paths");
  std::mt19937_64 g(109);
  std::bernoulli_distribution blocked(blocked_fraction);
  std::vector<uint8_t> grid(r.batch * 64);
  for (int64_t i = 0; i < r.batch; ++i)
    for (int k = 0; k < 64; ++k) grid[i * 64 + k] = k != 0 && k != 63 && blocked(g);
  Inputs in;
  in.add_bool(grid, r.batch, {8, 8});
  int reps = threads >= 100000 ? 1 : c.reps;
  Outputs got = run_modes(c, r, in, reps);
  std::vector<int64_t> want(r.batch);
  time_cpp(r, reps, kCppPlain, [&] {
    for (int64_t i = 0; i < r.batch; ++i)
      want[i] = grid_paths(reinterpret_cast<const bool*>(&grid[i * 64]), 0, 0);
  });
  const int64_t* n = got[0].as<int64_t>();
  bool same = true;
  for (int64_t i = 0; i < r.batch; ++i) same = same && n[i] == want[i];
  // Calls: one per cell reached along every path prefix; counted in C++.
  int64_t calls = 0;
  std::function<void(const uint8_t*, int, int)> count = [&](const uint8_t* gr, int i, int j) {
    ++calls;
    if (gr[i * 8 + j] || (i == 7 && j == 7)) return;
    if (i < 7) count(gr, i + 1, j);
    if (j < 7) count(gr, i, j + 1);
  };
  for (int64_t i = 0; i < r.batch; ++i) count(&grid[i * 64], 0, 0);
  r.thread_steps = calls;
  r.check("path counts equal the C++ baseline's", same, same, 1);
  r.extra["blocked_fraction"] = blocked_fraction;
  return r;
}

// A loop inside a loop calling an inline function: the pairwise energy of 32 points per
// thread (496 pairs), against the same loops in C++.
Row row_nested_inline(const Ctx& c, int64_t threads) {
  Row r = shape_row(c, "nested_inline", threads, "pairs");
  std::mt19937_64 g(113);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(r.batch * 32);
  for (auto& v : x) v = normal(g);
  const double width = 0.7;
  Inputs in;
  in.add(x, r.batch, {32});
  in.scalar(width);
  int reps = threads >= 100000 ? 1 : c.reps;
  Outputs got = run_modes(c, r, in, reps);
  std::vector<double> want(r.batch);
  time_cpp(r, reps, kCppPlain, [&] {
    for (int64_t i = 0; i < r.batch; ++i) want[i] = nested_energy(&x[i * 32], width);
  });
  r.thread_steps = r.batch * 496;
  check_close(r, got[0].as<double>(), want);
  return r;
}

}  // namespace

const std::vector<RowSpec>& row_table() {
  static const std::vector<RowSpec> rows = {
      {"simpson", row_simpson},
      {"dopri", row_dopri},
      {"gillespie", row_gillespie},
      {"walk", row_walk},
      {"metropolis", row_metropolis},
      {"nuts_1024", [](const Ctx& c) { return row_nuts(c, c.quick ? 64 : 1024); }},
      {"nuts_8192", [](const Ctx& c) { return row_nuts(c, c.quick ? 128 : 8192); }},
      {"nuts_65536", [](const Ctx& c) { return row_nuts(c, c.quick ? 256 : 65536); }},
      {"timeseries_10000", [](const Ctx& c) { return row_timeseries(c, 10000); }},
      {"timeseries_100000", [](const Ctx& c) { return row_timeseries(c, 100000); }},
      {"gillespie_sir_10000", [](const Ctx& c) { return row_gillespie_sir(c, 10000); }},
      {"gillespie_sir_100000", [](const Ctx& c) { return row_gillespie_sir(c, 100000); }},
      // 15% of the cells blocked; 25% at 100,000 threads, where 15% (2150 calls per thread)
      // takes 27-35 s per mode but the stackless one.
      {"grid_paths_10000", [](const Ctx& c) { return row_grid_paths(c, 10000, 0.15); }},
      {"grid_paths_100000", [](const Ctx& c) { return row_grid_paths(c, 100000, 0.25); }},
      {"nested_inline_10000", [](const Ctx& c) { return row_nested_inline(c, 10000); }},
      {"nested_inline_100000", [](const Ctx& c) { return row_nested_inline(c, 100000); }},
  };
  return rows;
}

}  // namespace users
