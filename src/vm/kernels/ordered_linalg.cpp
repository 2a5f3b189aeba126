// See ordered_linalg.h. The products are written once
// (ordered_linalg_isa.inc) and compiled three times: for AVX-512, for AVX2
// with FMA (function attributes, so the build stays baseline x86-64), and
// without a vector unit (libm's fma); the first the host runs is chosen once.
#include "vm/kernels/ordered_linalg.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AB_ORDERED_X86 1
#endif

namespace ab::kern::ordered {

namespace {

// Per OS thread: the packed operand, and a result computed transposed.
template <class T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}
template <class T>
T* pack_buffer(int64_t n) {
  thread_local std::vector<T> buf;
  return grow(buf, n);
}
template <class T>
T* out_buffer(int64_t n) {
  thread_local std::vector<T> buf;
  return grow(buf, n);
}

}  // namespace

// ---- no vector unit: "vectors" of one element, libm's fma -----------------
namespace scalar {
#define AB_TGT
template <class T>
struct Ops {
  using V = T;
  static constexpr int W = 1;
  static V zero() { return T(0); }
  static V load(const T* p) { return *p; }
  static void store(T* p, V v) { *p = v; }
  static V set1(T x) { return x; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V load_n(const T* p, int k) { return k ? *p : T(0); }
  static void store_n(T* p, V v, int k) {
    if (k) *p = v;
  }
};
constexpr int kRowsWide = 4, kVecsWide = 4, kRowsNarrow = 4;
#include "vm/kernels/ordered_linalg_isa.inc"
#undef AB_TGT
}  // namespace scalar

#ifdef AB_ORDERED_X86
// ---- AVX2 with FMA -----------------------------------------------------------
namespace avx2 {
#define AB_TGT __attribute__((target("avx2,fma")))
#define AB_OP AB_TGT __attribute__((always_inline)) static inline
template <class T>
struct Ops;
template <>
struct Ops<double> {
  using V = __m256d;
  static constexpr int W = 4;
  AB_OP V zero() { return _mm256_setzero_pd(); }
  AB_OP V load(const double* p) { return _mm256_loadu_pd(p); }
  AB_OP void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  AB_OP V set1(double x) { return _mm256_set1_pd(x); }
  AB_OP V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  AB_OP __m256i mask(int k) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(k), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  AB_OP V load_n(const double* p, int k) { return _mm256_maskload_pd(p, mask(k)); }
  AB_OP void store_n(double* p, V v, int k) { _mm256_maskstore_pd(p, mask(k), v); }
};
template <>
struct Ops<float> {
  using V = __m256;
  static constexpr int W = 8;
  AB_OP V zero() { return _mm256_setzero_ps(); }
  AB_OP V load(const float* p) { return _mm256_loadu_ps(p); }
  AB_OP void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  AB_OP V set1(float x) { return _mm256_set1_ps(x); }
  AB_OP V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  AB_OP __m256i mask(int k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  AB_OP V load_n(const float* p, int k) { return _mm256_maskload_ps(p, mask(k)); }
  AB_OP void store_n(float* p, V v, int k) { _mm256_maskstore_ps(p, mask(k), v); }
};
// 16 registers: 4 x 3 accumulators, 3 of B, 1 broadcast.
constexpr int kRowsWide = 4, kVecsWide = 3, kRowsNarrow = 8;
#include "vm/kernels/ordered_linalg_isa.inc"
#undef AB_OP
#undef AB_TGT
}  // namespace avx2

// ---- AVX-512 -----------------------------------------------------------------
namespace avx512 {
#define AB_TGT __attribute__((target("avx512f,avx2,fma")))
#define AB_OP AB_TGT __attribute__((always_inline)) static inline
template <class T>
struct Ops;
template <>
struct Ops<double> {
  using V = __m512d;
  static constexpr int W = 8;
  AB_OP V zero() { return _mm512_setzero_pd(); }
  AB_OP V load(const double* p) { return _mm512_loadu_pd(p); }
  AB_OP void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  AB_OP V set1(double x) { return _mm512_set1_pd(x); }
  AB_OP V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  AB_OP __mmask8 mask(int k) { return static_cast<__mmask8>((1u << k) - 1); }
  AB_OP V load_n(const double* p, int k) { return _mm512_maskz_loadu_pd(mask(k), p); }
  AB_OP void store_n(double* p, V v, int k) { _mm512_mask_storeu_pd(p, mask(k), v); }
};
template <>
struct Ops<float> {
  using V = __m512;
  static constexpr int W = 16;
  AB_OP V zero() { return _mm512_setzero_ps(); }
  AB_OP V load(const float* p) { return _mm512_loadu_ps(p); }
  AB_OP void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  AB_OP V set1(float x) { return _mm512_set1_ps(x); }
  AB_OP V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  AB_OP __mmask16 mask(int k) { return static_cast<__mmask16>((1u << k) - 1); }
  AB_OP V load_n(const float* p, int k) { return _mm512_maskz_loadu_ps(mask(k), p); }
  AB_OP void store_n(float* p, V v, int k) { _mm512_mask_storeu_ps(p, mask(k), v); }
};
// 32 registers: 6 x 4 accumulators, 4 of B, 1 broadcast.
constexpr int kRowsWide = 6, kVecsWide = 4, kRowsNarrow = 8;
#include "vm/kernels/ordered_linalg_isa.inc"
#undef AB_OP
#undef AB_TGT
}  // namespace avx512
#endif

namespace {

enum class Isa { Scalar, Avx2, Avx512 };

bool host_has(Isa isa) {
#ifdef AB_ORDERED_X86
  switch (isa) {
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default:
      return true;
  }
#else
  return isa == Isa::Scalar;
#endif
}

std::atomic<Isa>& chosen() {
  static std::atomic<Isa> isa{host_has(Isa::Avx512) ? Isa::Avx512
                              : host_has(Isa::Avx2) ? Isa::Avx2
                                                    : Isa::Scalar};
  return isa;
}

Isa host_isa() { return chosen().load(std::memory_order_relaxed); }

}  // namespace

const char* isa() {
  switch (host_isa()) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    default:
      return "scalar";
  }
}

bool use_isa(const char* name) {
  const std::string n = name;
  const Isa isa = n == "avx512" ? Isa::Avx512 : n == "avx2" ? Isa::Avx2 : Isa::Scalar;
  if ((n != "avx512" && n != "avx2" && n != "scalar") || !host_has(isa)) return false;
  chosen().store(isa);
  return true;
}

#ifdef AB_ORDERED_X86
#define AB_DISPATCH(call)  \
  switch (host_isa()) {    \
    case Isa::Avx512:      \
      return avx512::call; \
    case Isa::Avx2:        \
      return avx2::call;   \
    default:               \
      return scalar::call; \
  }
#else
#define AB_DISPATCH(call) return scalar::call;
#endif

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t rsa, int64_t csa, const T* B,
          int64_t rsb, int64_t csb, T* C, int64_t rsc, int64_t csc) {
  AB_DISPATCH(gemm_impl<T>(M, N, K, A, rsa, csa, B, rsb, csb, C, rsc, csc))
}

template <class T>
void gemv(int64_t m, int64_t k, const T* A, int64_t lda, const T* x, T* y) {
  AB_DISPATCH(gemv_impl<T>(m, k, A, lda, x, y))
}

template <class T>
void dots(int n, int64_t k, const T* const* x, const T* const* y, T* out) {
  AB_DISPATCH(dots_impl<T>(n, k, x, y, out))
}

#undef AB_DISPATCH

template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, int64_t,
                           const double*, int64_t, int64_t, double*, int64_t, int64_t);
template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*,
                          int64_t, int64_t, float*, int64_t, int64_t);
template void gemv<double>(int64_t, int64_t, const double*, int64_t, const double*, double*);
template void gemv<float>(int64_t, int64_t, const float*, int64_t, const float*, float*);
template void dots<double>(int, int64_t, const double* const*, const double* const*, double*);
template void dots<float>(int, int64_t, const float* const*, const float* const*, float*);

}  // namespace ab::kern::ordered
