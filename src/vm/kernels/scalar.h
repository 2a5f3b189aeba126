// Scalar forms of kernels that compiled code calls (ops.def's Jit column
// "Kernel"): one element, exactly the kernel's arithmetic. C linkage, so the
// JIT registers each under its plain name (scalar_functions) and calls it
// by that name.
#pragma once
#include <cstdint>
#include <span>

extern "C" {
double ab_scalar_lgamma(double x);
float ab_scalar_lgammaf(float x);
// normal(key) with a scalar shape.
double ab_scalar_normal(int64_t key);
// Element 0 of gamma(key, alpha) and poisson(key, lam); the caller checks
// the parameter first (the kernel's error).
double ab_scalar_gamma(int64_t key, double alpha);
int64_t ab_scalar_poisson(int64_t key, double lam);
}

namespace ab {

struct ScalarFunction {
  const char* name;
  void* address;
};
// Every function above, for the JIT's symbol table.
std::span<const ScalarFunction> scalar_functions();

// The parameter ranges the gamma and poisson kernels accept.
constexpr double kMaxPoissonRate = 1e15;

}  // namespace ab
