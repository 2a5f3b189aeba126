// The scalar kernels compiled code calls (kernels/scalar.h).
#include "vm/kernels/scalar.h"

#include <cmath>

#include "vm/kernels/philox.h"

extern "C" {
// lgamma_r, as the lgamma kernel (std::lgamma writes the global signgam).
double ab_scalar_lgamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}
float ab_scalar_lgammaf(float x) {
  int sign = 0;
  return ::lgammaf_r(x, &sign);
}
double ab_scalar_normal(int64_t key) { return ab::random_normal_one(key); }
double ab_scalar_gamma(int64_t key, double alpha) { return ab::random_gamma(key, 0, alpha); }
int64_t ab_scalar_poisson(int64_t key, double lam) { return ab::random_poisson(key, 0, lam); }
}

namespace ab {

std::span<const ScalarFunction> scalar_functions() {
  static const ScalarFunction kFunctions[] = {
      {"ab_scalar_lgamma", reinterpret_cast<void*>(&ab_scalar_lgamma)},
      {"ab_scalar_lgammaf", reinterpret_cast<void*>(&ab_scalar_lgammaf)},
      {"ab_scalar_normal", reinterpret_cast<void*>(&ab_scalar_normal)},
      {"ab_scalar_gamma", reinterpret_cast<void*>(&ab_scalar_gamma)},
      {"ab_scalar_poisson", reinterpret_cast<void*>(&ab_scalar_poisson)},
  };
  return kFunctions;
}

}  // namespace ab
