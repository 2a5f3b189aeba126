// A GEMM of its own for the commonest batched product: matvec with a small
// shared matrix (y = A x for every lane, A m x k with m * k <= kSmallGemmMax),
// on hosts with AVX-512. OpenBLAS packs both operands and zeroes the result
// on every call; for these sizes that is a fifth of the time. Here A^T is
// packed once per call (it is small) and the lanes' rows are read in place,
// six lanes by 32 columns at a time in 24 vector registers, each result
// summed in index order with fused multiply-adds (as OpenBLAS's kernels do:
// the two agree to the last bit on the sizes tested).
#pragma once
#include <cstdint>

namespace ab::kern {

constexpr int64_t kSmallGemmMax = 64 * 64;

// Row-major Y[n, m] = X[n, k] * A^T with A row-major [m, k]; row strides ldx,
// lda, ldy. Returns false, computing nothing, unless the host has AVX-512F
// and 0 < m * k <= kSmallGemmMax (the caller then uses BLAS). `pack` holds
// at least k * (m rounded up to 32) doubles.
bool small_gemm_nt(int64_t n, int64_t m, int64_t k, const double* X, int64_t ldx, const double* A,
                   int64_t lda, double* Y, int64_t ldy, double* pack);

// Whether small_gemm_nt runs on this host for an m x k matrix.
bool small_gemm_fits(int64_t m, int64_t k);

}  // namespace ab::kern
