// programs/nuts.ab, the No-U-Turn Sampler (Hoffman & Gelman 2014, Algorithm
// 3, slice sampling), run through the built CLI (AUTOBATCH_BINARY):
//
// - 1000 chains on a correlated 10-dimensional Gaussian under --vm stack: the
//   pooled mean and covariance of the draws after warm-up must match the
//   target within a few Monte-Carlo standard errors, and the tree depths and
//   leapfrog counts must be consistent with the tree-doubling rules;
// - a max_depth that bites: no tree is deeper than it;
// - the stack, stackless and reference VMs give the same outputs on a small
//   run, and so does the program after `autobatch lower`.
//
// The program's results, per chain (see the header of programs/nuts.ab):
//   0 q f64[d]         the last state
//   1 sum_q f64[d]     sum of the draws after warm-up
//   2 sum_qq f64[d,d]  sum of outer(q, q) over the same draws
//   3 depth_min  4 depth_max  5 depth_sum  (tree depths over all iterations)
//   6 n_leapfrog  7 n_divergent  8 accept_sum
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kProgram = std::string(AUTOBATCH_SOURCE_DIR) + "/programs/nuts.ab";

// A fresh directory for one test's files, removed at the end.
struct WorkDir {
  fs::path path;
  WorkDir() {
    std::string tmpl = (fs::temp_directory_path() / "ab_nuts_test_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

struct Run {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// Runs the CLI with `args`; stdout and stderr go to files in `dir` (the
// outputs of 1000 chains are a few megabytes) and are read back.
Run run_cli(const WorkDir& dir, const std::vector<std::string>& args) {
  ab_test::Proc p = ab_test::run_binary(dir.path, args, std::nullopt, 1800);
  REQUIRE_FALSE(p.timed_out);
  return Run{p.code, p.out, p.err, p.seconds};
}

// Runs and parses {"outputs": [...]}; fails the test on a non-zero exit.
json run_outputs(const WorkDir& dir, const std::vector<std::string>& args,
                 double* seconds = nullptr) {
  Run r = run_cli(dir, args);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  if (seconds) *seconds = r.seconds;
  json j = json::parse(r.out);
  REQUIRE(j.contains("outputs"));
  REQUIRE(j["outputs"].size() == 9);
  return j["outputs"];
}

using Matrix = std::vector<std::vector<double>>;

// Gauss-Jordan inverse with partial pivoting (the matrices here are small
// and well conditioned).
Matrix inverse(Matrix a) {
  const size_t n = a.size();
  Matrix inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(inv[c], inv[piv]);
    const double d = a[c][c];
    for (size_t k = 0; k < n; ++k) a[c][k] /= d, inv[c][k] /= d;
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t k = 0; k < n; ++k) a[r][k] -= f * a[c][k], inv[r][k] -= f * inv[c][k];
    }
  }
  return inv;
}

// splitmix64: the test's own deterministic generator for starting points.
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

// The 10-dimensional target. Correlations come from one factor with
// loadings l_i from 0.70 to 0.95, corr_ij = l_i l_j in [0.51, 0.88]; the
// standard deviations range over 0.5 .. 2 (log-spaced, shuffled), so the
// covariance has condition number ~127 (eigenvalues 0.087 .. 11.0).
struct Target {
  static constexpr int d = 10;
  Matrix cov, prec;
  std::vector<double> mu, sd;
  Target() {
    const int perm[d] = {0, 5, 2, 7, 4, 9, 1, 6, 3, 8};
    std::vector<double> load(d);
    sd.resize(d);
    mu.resize(d);
    for (int i = 0; i < d; ++i) {
      load[i] = 0.70 + 0.25 * i / (d - 1);
      sd[i] = 0.5 * std::pow(4.0, perm[i] / double(d - 1));
      mu[i] = 2.0 * std::sin(i + 1.0);
    }
    cov.assign(d, std::vector<double>(d));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) cov[i][j] = (i == j ? 1.0 : load[i] * load[j]) * sd[i] * sd[j];
    prec = inverse(cov);
    // P Sigma = I to rounding: the inverse is what the sampler is given.
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        double s = 0;
        for (int k = 0; k < d; ++k) s += prec[i][k] * cov[k][j];
        REQUIRE(std::fabs(s - (i == j ? 1.0 : 0.0)) < 1e-12);
      }
  }

  // Inputs for `chains` chains: the shared precision matrix and mean (batch
  // 1), starting points overdispersed around the mean (mu_i + 2 sd_i U(-1,1),
  // uncorrelated: the target's correlations have to be found by sampling),
  // one key per chain, and the shared sampler settings.
  json inputs(int chains, double eps, int max_depth, int n_warmup, int n_samples,
              uint64_t seed) const {
    SplitMix rng{seed};
    json q0 = json::array(), keys = json::array();
    for (int c = 0; c < chains; ++c) {
      json q = json::array();
      for (int i = 0; i < d; ++i) q.push_back(mu[i] + 2.0 * sd[i] * (2.0 * rng.uniform() - 1.0));
      q0.push_back(q);
      keys.push_back(static_cast<int64_t>(seed * 100000 + c));
    }
    return json{{"prec", json::array({prec})},
                {"mu", json::array({mu})},
                {"q0", q0},
                {"key", keys},
                {"eps", eps},
                {"max_depth", max_depth},
                {"n_warmup", n_warmup},
                {"n_samples", n_samples}};
  }
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

// Tree statistics of every chain against the tree-doubling rules: the
// first doubling always runs and the tree stops at max_depth, so every
// iteration's depth is in [1, max_depth]; a tree of depth D takes at least
// one leapfrog step per doubling and at most 2^D - 1 steps.
void check_tree_statistics(const json& out, int max_depth, int n_iter) {
  const size_t chains = out[0].size();
  for (size_t c = 0; c < chains; ++c) {
    const int64_t dmin = out[3][c], dmax = out[4][c], dsum = out[5][c], steps = out[6][c];
    INFO("chain " << c << ": depth_min " << dmin << ", depth_max " << dmax << ", depth_sum " << dsum
                  << ", n_leapfrog " << steps);
    REQUIRE(dmin >= 1);
    REQUIRE(dmin <= dmax);
    REQUIRE(dmax <= max_depth);
    REQUIRE(dsum >= dmin * n_iter);
    REQUIRE(dsum <= dmax * n_iter);
    REQUIRE(steps >= dsum);
    REQUIRE(steps <= n_iter * ((int64_t{1} << dmax) - 1));
    const int64_t divergent = out[7][c];
    REQUIRE(divergent >= 0);
    REQUIRE(divergent <= steps);
    const double accept = out[8][c].get<double>() / n_iter;
    REQUIRE(accept > 0.0);
    REQUIRE(accept <= 1.0);
  }
}

// Pooled mean over chains of per-chain values, and its standard error from
// their spread across the chains.
struct Pooled {
  double mean = 0, se = 0, sd = 0;
};
Pooled pool(const std::vector<double>& v) {
  const double n = static_cast<double>(v.size());
  Pooled p;
  for (double x : v) p.mean += x;
  p.mean /= n;
  double ss = 0;
  for (double x : v) ss += (x - p.mean) * (x - p.mean);
  p.sd = std::sqrt(ss / (n - 1));
  p.se = p.sd / std::sqrt(n);
  return p;
}

}  // namespace

// Statistical check. The tolerances come from the Monte-Carlo error,
// measured across chains:
//
// Chain c keeps N draws x_c1..x_cN after W warm-up iterations and reports
// their sum and the sum of their outer products. From these the test forms
// per-chain estimates
//     m_c = (1/N) sum_t x_ct                      (of mu)
//     T_c = (1/N) sum_t (x_ct - mu)(x_ct - mu)'   (of Sigma)
//         = sum_qq/N - mu m_c' - m_c mu' + mu mu'.
// The chains are independent (each has its own key) and, after warm-up,
// stationary, so the (m_c, T_c) are i.i.d. across the C chains with means mu
// and Sigma, however strongly the draws within a chain are autocorrelated:
// the autocorrelation only widens the spread of m_c and T_c, and that
// spread is measured directly. Each pooled estimate (the average over
// chains) therefore has standard error s/sqrt(C), s the sample standard
// deviation of the per-chain values across chains (the batch-means
// estimator with one batch per chain; equivalently an effective sample
// size ESS_i = C Sigma_ii / s_i^2 for the mean of coordinate i). By the
// central limit theorem over C = 1000 chains each z = (pooled - target)/SE
// is close to N(0, 1). The check is |z| < 5 for the 10 means (P(|z| > 5) =
// 5.7e-7 per entry) and |z| < 6 for the 55 covariance entries: a chain's
// T_c is a sum of squares over only ~6 effective draws, skewed to the
// right, so its mean and spread across chains move together and z has a
// heavier lower tail than N(0, 1) (over 24 runs with other seeds its spread
// was ~1.2 and the largest |z| of a run 3.9). The seed is fixed, so the
// test is deterministic; the margin matters when the program or the random
// number scheme changes.
//
// Warm-up: the chains start at mu_i + 2 sd_i U(-1, 1), uncorrelated: wider
// than the target along most directions and much narrower along the slow
// factor direction (variance ~1.7 there against 11), so the warm-up has to
// build the correlations up. Measured with 4000 chains averaging 3 draws
// each after W iterations, the covariance entries fall short of Sigma by
// ~27 of their SEs at W = 0, ~8 at W = 3, ~1.5 at W = 6 and are within
// noise from W = 10 on (the deficit shrinks ~4x every 3 iterations), so
// after W = 15 what is left is a small fraction of this test's SE. The
// start distribution is symmetric about mu, so it does not bias the means.
//
// Power: a sampler that does not move, or that mixes badly, would widen the
// SEs and could hide behind them, so the test also requires an ESS of at
// least N/10 per chain for each coordinate and tolerances that are tight in
// absolute terms: 5 SE under 0.1 sd_i for the means (it is ~0.065 sd here)
// and 6 SE under 0.15 sd_i sd_j for the covariances (~0.1 here). Wrong
// programs fail: a kinetic energy 0.45 p.p instead of 0.5 p.p (|z| 8.6),
// a subtree merge that always keeps the second half (|z| 22), or a top level
// that accepts proposals from a subtree that made a U-turn (|z| 42).
//
// Cost: 1000 chains x 50 iterations (W = 15, N = 35) with eps = 0.4 (the
// leapfrog is stable below 2 sqrt(lambda_min(Sigma)) = 0.59; mean acceptance
// ~0.77, mean tree depth ~3.1, ~9 leapfrog steps per iteration, about 450k
// leapfrog steps in all). The run takes ~0.8 s in a Release build and
// ~13 s in the Debug + ASan build (measured on a shared, busy 2-core
// machine; the whole file ~17 s there); more iterations would tighten the
// tolerances but cost proportionally more under ASan.
TEST_CASE(
    "nuts: 1000 chains on a correlated 10-d Gaussian recover its mean and covariance (stack VM)") {
  const Target t;
  const int d = Target::d, C = 1000, W = 15, N = 35, max_depth = 10;
  const double eps = 0.4;
  const double kMeanSE = 5.0, kCovSE = 6.0;  // tolerances in standard errors
  WorkDir dir;
  write_file(dir.file("in.json"), t.inputs(C, eps, max_depth, W, N, 1).dump());
  double seconds = 0;
  const json out = run_outputs(
      dir, {"run", kProgram, "--inputs", dir.file("in.json"), "--vm", "stack"}, &seconds);
  MESSAGE("nuts: 1000 chains x " << W + N << " iterations, --vm stack: " << seconds << " s");
  REQUIRE(out[1].size() == static_cast<size_t>(C));

  check_tree_statistics(out, max_depth, W + N);
  int64_t divergent = 0, depth_sum = 0, steps = 0;
  double accept = 0;
  for (int c = 0; c < C; ++c) {
    divergent += out[7][c].get<int64_t>();
    depth_sum += out[5][c].get<int64_t>();
    steps += out[6][c].get<int64_t>();
    accept += out[8][c].get<double>();
  }
  const double iters = double(C) * (W + N);
  MESSAGE("mean tree depth " << depth_sum / iters << ", leapfrog steps per iteration "
                             << steps / iters << ", mean acceptance statistic " << accept / iters);
  CHECK(divergent == 0);        // eps is well inside the stable range
  CHECK(accept / iters > 0.5);  // and the energy error is small

  // Per-chain estimates.
  std::vector<std::vector<double>> m(C, std::vector<double>(d));
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < d; ++i) m[c][i] = out[1][c][i].get<double>() / N;

  double worst_z = 0, min_ess = 1e300, widest_mean = 0, widest_cov = 0;
  for (int i = 0; i < d; ++i) {
    std::vector<double> v(C);
    for (int c = 0; c < C; ++c) v[c] = m[c][i];
    const Pooled p = pool(v);
    const double z = (p.mean - t.mu[i]) / p.se;
    const double ess_per_chain = t.cov[i][i] / (p.sd * p.sd);
    worst_z = std::max(worst_z, std::fabs(z));
    min_ess = std::min(min_ess, ess_per_chain);
    INFO("mean[" << i << "] = " << p.mean << " vs " << t.mu[i] << ", SE " << p.se << ", z " << z
                 << ", ESS per chain " << ess_per_chain << " of " << N);
    CHECK(std::fabs(z) < kMeanSE);
    widest_mean = std::max(widest_mean, kMeanSE * p.se / t.sd[i]);
    CHECK(kMeanSE * p.se < 0.1 * t.sd[i]);
    CHECK(ess_per_chain > N / 10.0);
  }
  for (int i = 0; i < d; ++i)
    for (int j = i; j < d; ++j) {
      std::vector<double> v(C);
      for (int c = 0; c < C; ++c)
        v[c] = out[2][c][i][j].get<double>() / N - t.mu[i] * m[c][j] - m[c][i] * t.mu[j] +
               t.mu[i] * t.mu[j];
      const Pooled p = pool(v);
      const double z = (p.mean - t.cov[i][j]) / p.se;
      worst_z = std::max(worst_z, std::fabs(z));
      INFO("cov[" << i << "][" << j << "] = " << p.mean << " vs " << t.cov[i][j] << ", SE " << p.se
                  << ", z " << z);
      CHECK(std::fabs(z) < kCovSE);
      widest_cov = std::max(widest_cov, kCovSE * p.se / (t.sd[i] * t.sd[j]));
      CHECK(kCovSE * p.se < 0.15 * t.sd[i] * t.sd[j]);
    }
  MESSAGE("largest |z| over the 65 mean and covariance entries: "
          << worst_z << "; smallest ESS per chain " << min_ess << " of " << N
          << "; widest tolerance: means " << widest_mean << " sd, covariances " << widest_cov
          << " sd_i sd_j");
}

// With max_depth = 2 most trees on this target would go deeper, so the
// bound decides: every depth is 1 or 2, some chain reaches 2, and no
// iteration takes more than 2^2 - 1 = 3 leapfrog steps.
TEST_CASE("nuts: max_depth bounds the tree depth") {
  const Target t;
  WorkDir dir;
  const int W = 2, N = 6, max_depth = 2;
  write_file(dir.file("in.json"), t.inputs(16, 0.4, max_depth, W, N, 2).dump());
  const json out = run_outputs(dir, {"run", kProgram, "--inputs", dir.file("in.json")});
  check_tree_statistics(out, max_depth, W + N);
  int64_t deepest = 0;
  for (const auto& x : out[4]) deepest = std::max(deepest, x.get<int64_t>());
  CHECK(deepest == max_depth);
}

// The three VMs, refill mode and the lowered program give the same outputs.
// Today the VMs agree bit for bit: the precision matrix reaches leapfrog
// through build_tree's parameters, which are written at several call sites,
// so the stack VM stores it per thread and multiplies per lane, as the
// others do. docs/language.md, "Reference semantics" allows a blocked kernel (one GEMM over the
// lanes for a shared matrix) to round differently, so floats are compared to 1e-12
// relative (absolute below 1) and integers exactly; a GEMM's rounding
// differences stay ~1e-15 relative over these few iterations, since the
// leapfrog map of a Gaussian is linear and stable. The lowered program runs
// the same operations in the same VM, so it must agree exactly.
TEST_CASE("nuts: stack, stackless and reference VMs, refill mode and the lowered program agree") {
  const Target t;
  WorkDir dir;
  write_file(dir.file("in.json"), t.inputs(8, 0.4, 10, 3, 6, 3).dump());
  const std::string in = dir.file("in.json");
  const json ref = run_outputs(dir, {"run", kProgram, "--inputs", in, "--vm", "reference"});

  auto same = [](const json& a, const json& b, auto&& self) -> void {
    REQUIRE(a.type() == b.type());
    if (a.is_array()) {
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) self(a[i], b[i], self);
    } else if (a.is_number_float()) {
      const double x = a.get<double>(), y = b.get<double>();
      CHECK(std::fabs(x - y) <= 1e-12 * std::max({1.0, std::fabs(x), std::fabs(y)}));
    } else {
      CHECK(a == b);
    }
  };
  for (const char* vm : {"stack", "stackless"}) {
    INFO("--vm " << vm << " against --vm reference");
    const json o = run_outputs(dir, {"run", kProgram, "--inputs", in, "--vm", vm});
    same(o, ref, same);
    if (o != ref)
      MESSAGE("--vm " << vm << " differs from the reference within the rounding tolerance");
  }

  // Refill mode: 8 chains on 3 lanes, each lane taking the next chain when
  // its chain halts, gives the outputs of the plain run.
  const json stack = run_outputs(dir, {"run", kProgram, "--inputs", in, "--vm", "stack"});
  same(run_outputs(dir, {"run", kProgram, "--inputs", in, "--vm", "stack", "--lanes", "3"}), stack,
       same);

  // `autobatch lower` without inputs prints a program that runs again.
  Run lowered = run_cli(dir, {"lower", kProgram});
  INFO("stderr: " << lowered.err);
  REQUIRE(lowered.code == 0);
  write_file(dir.file("L.ab"), lowered.out);
  const json low = run_outputs(dir, {"run", dir.file("L.ab"), "--inputs", in, "--vm", "stack"});
  CHECK(low == stack);
}
