// The library's matrix products (src/vm/kernels/ordered_linalg.h) against
// OpenBLAS's dgemm on the shapes a batched matvec on a shared matrix takes:
// Y[n, m] = X[n, k] * A^T for n lanes. Prints one JSON line per shape (best
// of 7 repetitions, microseconds, GFLOP/s) and whether both agree within
// 1e-12 relative (they round differently: ours is one fma chain per
// element in index order whatever n, OpenBLAS's order depends on its
// blocking). Build: cmake -DAUTOBATCH_BENCH=ON, target gemm_bench; run with
// OPENBLAS_NUM_THREADS=1 (one core each).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "vm/kernels/ordered_linalg.h"

int main() {
  using Clock = std::chrono::steady_clock;
  struct Shape {
    long n, m, k;
  };
  const Shape shapes[] = {{1024, 256, 256}, {4096, 64, 64}, {1024, 64, 64}, {256, 32, 32},
                          {1024, 8, 8},     {16384, 3, 3},  {4, 434, 4},    {4, 5000, 24},
                          {64, 200, 5},     {16, 1000, 50}, {8, 256, 256}};
  for (const Shape& s : shapes) {
    std::vector<double> X(s.n * s.k), A(s.m * s.k), Yb(s.n * s.m), Yo(s.n * s.m);
    for (size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.1 * double(i));
    for (size_t i = 0; i < A.size(); ++i) A[i] = std::cos(0.3 * double(i));
    const long reps = std::max(3L, 300000000L / (s.n * s.m * s.k + 1000));
    double blas = 1e30, ours = 1e30;
    for (int t = 0; t < 7; ++t) {
      auto a = Clock::now();
      for (long r = 0; r < reps; ++r)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.n), int(s.m), int(s.k), 1.0,
                    X.data(), int(s.k), A.data(), int(s.k), 0.0, Yb.data(), int(s.m));
      auto b = Clock::now();
      for (long r = 0; r < reps; ++r)
        ab::kern::ordered::gemm<double>(s.n, s.m, s.k, X.data(), s.k, 1, A.data(), 1, s.k,
                                        Yo.data(), s.m, 1);
      auto c = Clock::now();
      blas = std::min(blas, std::chrono::duration<double>(b - a).count() / double(reps));
      ours = std::min(ours, std::chrono::duration<double>(c - b).count() / double(reps));
    }
    bool agree = true;
    for (size_t i = 0; i < Yb.size(); ++i)
      agree = agree && std::fabs(Yb[i] - Yo[i]) <= 1e-12 * (1 + std::fabs(Yb[i]));
    const double flop = 2.0 * double(s.n) * double(s.m) * double(s.k);
    std::printf(
        "{\"n\": %ld, \"m\": %ld, \"k\": %ld, \"isa\": \"%s\", \"openblas_us\": %.2f, "
        "\"ordered_us\": %.2f, \"ratio\": %.2f, \"ordered_gflops\": %.1f, \"agree\": %s}\n",
        s.n, s.m, s.k, ab::kern::ordered::isa(), blas * 1e6, ours * 1e6, ours / blas,
        flop / ours / 1e9, agree ? "true" : "false");
  }
}
