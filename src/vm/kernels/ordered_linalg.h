// Float products whose rounding never depends on the batch.
//
// Every element of every product here is one chain of fused multiply-adds
// in index order: acc = 0; acc = fma(a[p], b[p], acc) for p = 0, 1, ..., k-1.
// However the work is tiled (lanes per tile, columns per vector, blocks of
// the inner dimension, which operand is packed, AVX-512, AVX2 or no vector
// unit at all), each element's chain is the same, so a thread's result is
// the same bits whether it is computed alone, with 3 other threads or with
// 10,000, on a shared matrix or on its own, on any host. That is what lets
// the VMs batch the threads of a shard into one product on a shared matrix
// and still promise outputs that do not depend on --threads, --lanes, shards
// or MPI ranks. fma is exact-then-rounded (IEEE 754), so the hardware
// instruction and libm's fma() agree to the last bit.
//
// Speed: on a batch the product is a register-tiled GEMM (6 x 32 doubles
// per tile with AVX-512, 4 x 12 with AVX2), the inner dimension blocked so
// that the packed operand stays in L2, and whichever operand is cheaper to
// pack is packed (a product of many lanes by a wide shared matrix packs the
// lanes' side).
#pragma once
#include <cstdint>

namespace ab::kern::ordered {

// C[i*rsc + j*csc] = sum over p of A[i*rsa + p*csa] * B[p*rsb + j*csb], for
// i < M, j < N, p < K (C must not overlap A or B). K = 0 gives zeros.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t rsa, int64_t csa, const T* B,
          int64_t rsb, int64_t csb, T* C, int64_t rsc, int64_t csc);

// y[i] = sum over p of A[i*lda + p] * x[p], i < m (y must not overlap A or x).
template <class T>
void gemv(int64_t m, int64_t k, const T* A, int64_t lda, const T* x, T* y);

// out[i] = sum over p of x[i][p] * y[i][p] for i < n (n <= 4 independent dot
// products, interleaved so that their chains overlap).
template <class T>
void dots(int n, int64_t k, const T* const* x, const T* const* y, T* out);

// Which instruction set the products run on here: "avx512", "avx2" or "scalar".
const char* isa();

// For tests: run the products on `name` ("avx512", "avx2", "scalar") from
// now on, in this process; false (nothing changed) if the host lacks it.
bool use_isa(const char* name);

}  // namespace ab::kern::ordered
