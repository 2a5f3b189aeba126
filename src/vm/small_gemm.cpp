// See small_gemm.h. The AVX-512 code is compiled for that target only
// (function attributes) and chosen at run time, so the build stays baseline
// x86-64.
#include "vm/small_gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AB_SMALL_GEMM 1
#endif

namespace ab::kern {

#ifdef AB_SMALL_GEMM
namespace {

constexpr int64_t kCols = 32;  // columns of a tile: four vectors of eight doubles
constexpr int kRows = 6;       // lanes of a tile: 6 x 4 accumulators, 4 of B, 1 of X

bool host_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// Y[r][j .. j+31] for R lanes: sum over p of X[r][p] * B[p][j ..], B = A^T
// packed with rows of width ldb (a multiple of 32, zero past m). `mask`:
// the columns of each of the four vectors that exist in Y.
template <int R>
__attribute__((target("avx512f"))) void tile(int64_t k, const double* X, int64_t ldx,
                                             const double* B, int64_t ldb, double* Y,
                                             int64_t ldy, const __mmask8* mask) {
  __m512d acc[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_setzero_pd();
  for (int64_t p = 0; p < k; ++p) {
    const double* b = B + p * ldb;
    const __m512d b0 = _mm512_loadu_pd(b), b1 = _mm512_loadu_pd(b + 8),
                  b2 = _mm512_loadu_pd(b + 16), b3 = _mm512_loadu_pd(b + 24);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512d x = _mm512_set1_pd(X[r * ldx + p]);
      acc[r][0] = _mm512_fmadd_pd(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_pd(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_pd(x, b2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_pd(x, b3, acc[r][3]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
      if (mask[c]) _mm512_mask_storeu_pd(Y + r * ldy + 8 * c, mask[c], acc[r][c]);
}

template <int R>
__attribute__((target("avx512f"))) void row_tiles(int64_t m, int64_t k, const double* X,
                                                  int64_t ldx, const double* B, int64_t ldb,
                                                  double* Y, int64_t ldy) {
  for (int64_t j = 0; j < m; j += kCols) {
    __mmask8 mask[4];
    for (int c = 0; c < 4; ++c) {
      const int64_t left = m - j - 8 * c;
      mask[c] = left >= 8 ? __mmask8{0xff}
                          : left <= 0 ? __mmask8{0} : static_cast<__mmask8>((1u << left) - 1);
    }
    tile<R>(k, X, ldx, B + j, ldb, Y + j, ldy, mask);
  }
}

}  // namespace

bool small_gemm_fits(int64_t m, int64_t k) {
  return m > 0 && k > 0 && m * k <= kSmallGemmMax && host_has_avx512();
}

bool small_gemm_nt(int64_t n, int64_t m, int64_t k, const double* X, int64_t ldx, const double* A,
                   int64_t lda, double* Y, int64_t ldy, double* pack) {
  if (!small_gemm_fits(m, k)) return false;
  const int64_t ldb = (m + kCols - 1) / kCols * kCols;
  for (int64_t p = 0; p < k; ++p) {
    double* row = pack + p * ldb;
    for (int64_t j = 0; j < m; ++j) row[j] = A[j * lda + p];
    for (int64_t j = m; j < ldb; ++j) row[j] = 0.0;
  }
  // Lanes outer, columns inner: a tile's six rows of X stay in L1 while
  // every column of the result is made.
  int64_t i = 0;
  for (; i + kRows <= n; i += kRows)
    row_tiles<kRows>(m, k, X + i * ldx, ldx, pack, ldb, Y + i * ldy, ldy);
  for (; i < n; ++i) row_tiles<1>(m, k, X + i * ldx, ldx, pack, ldb, Y + i * ldy, ldy);
  return true;
}

#else

bool small_gemm_fits(int64_t, int64_t) { return false; }
bool small_gemm_nt(int64_t, int64_t, int64_t, const double*, int64_t, const double*, int64_t,
                   double*, int64_t, double*) {
  return false;
}

#endif

}  // namespace ab::kern
