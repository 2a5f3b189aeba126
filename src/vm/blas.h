// BLAS for the linalg kernels: OpenBLAS (libopenblas.so.0), loaded with
// dlopen on first use rather than linked. A linked OpenBLAS starts its pool
// of worker threads in its library constructor, before main, and they spin
// on a core for about 0.1 s although the library never uses them (it calls
// BLAS from its own threads, one BLAS thread each). Loaded later, it reads
// OPENBLAS_NUM_THREADS first, which the CLI sets to 1 (src/cli/main.cpp).
#pragma once
#include <cstdint>

namespace ab::blas {

// Row-major C[M,N] = op(A) * op(B) (beta = 0), and y = A x. The first call
// loads OpenBLAS (once per process, thread-safe) and makes it
// single-threaded; if it cannot be loaded, every call throws
// std::runtime_error naming the library and dlerror's text.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double* C, int64_t ldc);
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float* C, int64_t ldc);
void gemv(int64_t M, int64_t N, const double* A, const double* x, double* y);
void gemv(int64_t M, int64_t N, const float* A, const float* x, float* y);

}  // namespace ab::blas
