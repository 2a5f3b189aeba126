// The per-thread C++ baselines of the users' benchmark suite (tools/bench/users.cpp):
// each program of the suite as a user would write it in plain C++, one thread after the
// other (a loop or a recursion per thread, std::mt19937_64 for random numbers), compiled
// with the same flags as the library.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace users {

// Adaptive Simpson of sin over [a, b] (programs/simpson.ab, the same operations in the
// same order): the integral and the number of calls of the recursive step.
struct SimpsonResult {
  double integral;
  int64_t calls;
};
SimpsonResult simpson(double a, double b, double tol, int64_t max_depth);

// Dormand-Prince 5(4) on y'' = -w^2 y from [1, 0] (programs/dopri.ab, the same
// operations in the same order): the final state and the accepted and rejected steps.
struct DopriResult {
  std::array<double, 2> y;
  int64_t accepted, rejected;
};
DopriResult dopri(double w, double t_end, double tol, double h0);

// Gillespie's SSA of the birth-death process (programs/gillespie.ab): the population at
// t_end and the number of events.
struct SsaResult {
  int64_t n, events;
};
SsaResult gillespie(std::mt19937_64& g, double b, double d, int64_t n0, double t_end);

// A symmetric random walk to +-bound (programs/walk.ab): the steps and the final position.
struct WalkResult {
  int64_t steps, x;
};
WalkResult walk(std::mt19937_64& g, int64_t bound);

// Random-walk Metropolis on the logistic-regression posterior (programs/metropolis.ab):
// X row-major n x p, y of n. Fills beta (the last state) and mean_beta (the mean over the
// iterations after n_iter / 2) of p each; returns the accepted proposals.
int64_t metropolis(std::mt19937_64& g, const std::vector<double>& X, const std::vector<double>& y,
                   int64_t n, int64_t p, double scale, double prior_sd, int64_t n_iter,
                   double* beta, double* mean_beta);

// NUTS (programs/nuts_gauss.ab's algorithm) on the Gaussian with precision prec (d x d,
// row-major) and mean mu, from q0. Fills q (the last state), sum_q and sum_qq (over the
// iterations after n_warmup); returns the leapfrog steps taken.
int64_t nuts(std::mt19937_64& g, const std::vector<double>& prec, const std::vector<double>& mu,
             const std::vector<double>& q0, double eps, int64_t max_depth, int64_t n_iter,
             int64_t n_warmup, double* q, double* sum_q, double* sum_qq);

// The AR(5) log density of tools/bench/users/timeseries.ab (the same operations in the
// same order) on y[200], evaluated `evals` times with alpha + 0.001 i; their sum.
double timeseries(const double* y, double alpha, const double* beta, double sigma, int64_t evals);

// Gillespie's SSA of the SIR epidemic of tools/bench/users/gillespie_sir.ab (the same
// rates, computed in the same order): population n from i0 infected, until none is infected.
struct SirResult {
  int64_t s, i, r, events;
  double t;
};
SirResult gillespie_sir(std::mt19937_64& g, int64_t n, int64_t i0, double beta, double gamma);

// The monotone paths through an 8 x 8 grid avoiding blocked cells
// (tools/bench/users/grid_paths.ab): the same plain recursion.
int64_t grid_paths(const bool* grid, int64_t i, int64_t j);

// The pairwise energy of 32 points through exp(-d^2 / 2) (tools/bench/users/nested_inline.ab).
double nested_energy(const double* x, double width);

}  // namespace users
