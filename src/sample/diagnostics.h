// Convergence diagnostics of Markov chains, as Stan's `stansummary` and the
// R package `posterior` report them (Vehtari, Gelman, Simpson, Carpenter and
// Bürkner, "Rank-normalization, folding, and localization: an improved R-hat
// for assessing convergence of MCMC", Bayesian Analysis 2021):
//
//   split R-hat        chains cut in halves; the potential scale reduction
//                      sqrt(var+ / W) of the halves
//   rank-normalized    the draws replaced by z = Phi^-1((r - 3/8) / (S + 1/4)),
//                      r their rank among all S draws (ties: average rank)
//   R-hat              max(split R-hat of the rank-normalized draws, split
//                      R-hat of the rank-normalized folded draws |x - median|)
//   ESS                M N / tau over the M split chains of N draws, tau from
//                      Geyer's initial positive and monotone sequences of
//                      the chains' mean autocorrelations
//   bulk ESS           ESS of the rank-normalized split draws
//   tail ESS           min of the ESS of the indicators x <= q05 and x <= q95
//   MCSE               sd / sqrt(ESS of the split draws themselves)
//   quantiles          of all draws pooled, linear between order statistics
//                      (NumPy's default and R's type 7)
//
// A quantity whose draws are all equal, or with fewer than 3 draws per split
// chain, has NaN for R-hat and the ESS (and MCSE), as `posterior` gives NA.
// Draws are chain-major: x[c * draws + i] is draw i of chain c.
#pragma once
#include <cstdint>
#include <vector>

namespace ab::sample {

struct Summary {
  double mean = 0, mcse = 0, sd = 0;
  double q5 = 0, q50 = 0, q95 = 0;
  double ess_bulk = 0, ess_tail = 0;
  double rhat = 0;
};

// Every column of the summary for one quantity: `chains` chains of `draws`
// draws each.
Summary summarize(const double* x, int64_t chains, int64_t draws);

// The pieces, on the same layout (exposed for tests and for the sampler's
// warnings).
double split_rhat_basic(const double* x, int64_t chains, int64_t draws);  // no ranks
double rhat(const double* x, int64_t chains, int64_t draws);
double ess_basic(const double* x, int64_t chains, int64_t draws);  // of the split draws
double ess_bulk(const double* x, int64_t chains, int64_t draws);
double ess_tail(const double* x, int64_t chains, int64_t draws);

// The pooled draws' quantile at p in [0, 1], linear between order statistics.
double quantile(std::vector<double> pooled, double p);

// Phi^-1(p) for p in (0, 1): Wichura's algorithm AS 241 (about 1e-16
// relative).
double normal_quantile(double p);

}  // namespace ab::sample
