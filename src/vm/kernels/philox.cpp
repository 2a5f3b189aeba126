// Philox-4x32-10 and the key -> numbers scheme described in philox.h.
//
// Speed: the kernels ask for many blocks at once (one or more per lane).
// philox_many computes them kGroup at a time, the group's whole state in
// registers for all ten rounds (never a pass over memory per round): with
// AVX-512 or AVX2 intrinsics when the CPU has them (checked at run time; the
// build does not assume -march=native), else one block at a time. Only the integer
// rounds are vectorised, so both paths give the same bits; the floating-point
// steps (the 53-bit conversions, normal's log, sqrt, cos and sin) are the
// scalar libm calls of the definition, in the same order.
#include "vm/kernels/philox.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ab {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void philox_round(PhiloxCounter& c, const PhiloxKey& k) {
  uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
  uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
  uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

inline uint64_t join64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;  // 2^-53

// u < 2^54 as a double, exactly: through int64 (one instruction; a uint64
// conversion must also handle the top bit).
inline double small_to_double(uint64_t u) { return static_cast<double>(static_cast<int64_t>(u)); }

// Up to kBatch blocks in structure-of-arrays form: inputs key k0/k1 and
// counter words c0/c1 (c2 = 0, c3 = the domain); outputs x0..x3.
constexpr int kGroup = 8;
constexpr int kBatch = 64;
struct Batch {
  alignas(64) uint32_t k0[kBatch], k1[kBatch], c0[kBatch], c1[kBatch];
  alignas(64) uint32_t x0[kBatch], x1[kBatch], x2[kBatch], x3[kBatch];
};

// Blocks [0, n) of `b`, n a multiple of kGroup: the portable form.
void philox_many_plain(Batch& b, int n, uint32_t domain) {
  for (int i = 0; i < n; ++i) {
    PhiloxCounter c = {b.c0[i], b.c1[i], 0u, domain};
    c = philox4x32_10(c, {b.k0[i], b.k1[i]});
    b.x0[i] = c[0];
    b.x1[i] = c[1];
    b.x2[i] = c[2];
    b.x3[i] = c[3];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AB_PHILOX_AVX2 1
// The same with AVX2, two vectors of four blocks per word at a time. Each
// 32-bit word sits in the low half of a 64-bit lane: _mm256_mul_epu32
// multiplies exactly those halves into the full 64-bit product, so the high
// halves may hold anything (they never reach a result; the stores keep the
// low halves).
__attribute__((target("avx2"))) inline __m256i load_words(const uint32_t* p) {
  return _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx2"))) inline void store_words(uint32_t* p, __m256i v) {
  const __m256i low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, low_halves)));
}

__attribute__((target("avx2"))) void philox_many_avx2(Batch& b, int n, uint32_t domain) {
  constexpr int V = kGroup / 4;
  const __m256i m0 = _mm256_set1_epi64x(kMul0), m1 = _mm256_set1_epi64x(kMul1);
  const __m256i w0 = _mm256_set1_epi64x(kWeyl0), w1 = _mm256_set1_epi64x(kWeyl1);
  for (int g = 0; g < n; g += kGroup) {
    __m256i a0[V], a1[V], a2[V], a3[V], k0[V], k1[V];
    for (int v = 0; v < V; ++v) {
      const int o = g + 4 * v;
      a0[v] = load_words(b.c0 + o);
      a1[v] = load_words(b.c1 + o);
      a2[v] = _mm256_setzero_si256();
      a3[v] = _mm256_set1_epi64x(domain);
      k0[v] = load_words(b.k0 + o);
      k1[v] = load_words(b.k1 + o);
    }
    for (int r = 0; r < 10; ++r) {
      for (int v = 0; v < V; ++v) {
        __m256i p0 = _mm256_mul_epu32(a0[v], m0), p1 = _mm256_mul_epu32(a2[v], m1);
        a0[v] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), a1[v]), k0[v]);
        a2[v] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), a3[v]), k1[v]);
        a1[v] = p1;
        a3[v] = p0;
        k0[v] = _mm256_add_epi64(k0[v], w0);
        k1[v] = _mm256_add_epi64(k1[v], w1);
      }
    }
    for (int v = 0; v < V; ++v) {
      const int o = g + 4 * v;
      store_words(b.x0 + o, a0[v]);
      store_words(b.x1 + o, a1[v]);
      store_words(b.x2 + o, a2[v]);
      store_words(b.x3 + o, a3[v]);
    }
  }
}

// The same with AVX-512: eight blocks per vector, V vectors (8 V blocks)
// at a time, so that V chains of dependent rounds overlap.
// GCC 12 warns, wrongly, that the AVX-512 intrinsics read an uninitialised
// value (its _mm512_undefined_* placeholders; GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline __m512i load_words8(const uint32_t* p) {
  return _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
__attribute__((target("avx512f"))) inline void store_words8(uint32_t* p, __m512i v) {
  // the low half of each 64-bit lane
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi64_epi32(v));
}

template <int V>
__attribute__((target("avx512f"))) void philox_group_avx512(Batch& b, int g, uint32_t domain) {
  const __m512i m0 = _mm512_set1_epi64(kMul0), m1 = _mm512_set1_epi64(kMul1);
  const __m512i w0 = _mm512_set1_epi64(kWeyl0), w1 = _mm512_set1_epi64(kWeyl1);
  __m512i a0[V], a1[V], a2[V], a3[V], k0[V], k1[V];
  for (int v = 0; v < V; ++v) {
    const int o = g + 8 * v;
    a0[v] = load_words8(b.c0 + o);
    a1[v] = load_words8(b.c1 + o);
    a2[v] = _mm512_setzero_si512();
    a3[v] = _mm512_set1_epi64(domain);
    k0[v] = load_words8(b.k0 + o);
    k1[v] = load_words8(b.k1 + o);
  }
  for (int r = 0; r < 10; ++r) {
    for (int v = 0; v < V; ++v) {
      __m512i p0 = _mm512_mul_epu32(a0[v], m0), p1 = _mm512_mul_epu32(a2[v], m1);
      a0[v] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p1, 32), a1[v]), k0[v]);
      a2[v] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p0, 32), a3[v]), k1[v]);
      a1[v] = p1;
      a3[v] = p0;
      k0[v] = _mm512_add_epi64(k0[v], w0);
      k1[v] = _mm512_add_epi64(k1[v], w1);
    }
  }
  for (int v = 0; v < V; ++v) {
    const int o = g + 8 * v;
    store_words8(b.x0 + o, a0[v]);
    store_words8(b.x1 + o, a1[v]);
    store_words8(b.x2 + o, a2[v]);
    store_words8(b.x3 + o, a3[v]);
  }
}

__attribute__((target("avx512f"))) void philox_many_avx512(Batch& b, int n, uint32_t domain) {
  int g = 0;
  for (; g + 32 <= n; g += 32) philox_group_avx512<4>(b, g, domain);
  for (; g < n; g += kGroup) philox_group_avx512<1>(b, g, domain);
}
#pragma GCC diagnostic pop
#endif

void philox_many(Batch& b, int n, uint32_t domain) {
#ifdef AB_PHILOX_AVX2
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return philox_many_avx512(b, n, domain);
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return philox_many_avx2(b, n, domain);
#endif
  philox_many_plain(b, n, domain);
}

// Runs every block (lane j < lanes, block number < ceil(count / 2)) of
// `domain` through philox_many, kBatch at a time, and hands each finished
// block to emit(lane, block, batch, slot).
template <class Emit>
void for_each_block(const int64_t* keys, int64_t lanes, int64_t count, RandomDomain domain,
                    Emit emit) {
  const int64_t per_lane = (count + 1) / 2;
  if (per_lane <= 0) return;
  Batch b;
  if (per_lane == 1) {  // one block per lane (scalar draws, split): plain loops
    for (int64_t j0 = 0; j0 < lanes; j0 += kBatch) {
      const int n = static_cast<int>(std::min<int64_t>(kBatch, lanes - j0));
      const int whole = (n + kGroup - 1) / kGroup * kGroup;
      for (int s = 0; s < whole; ++s) {
        const uint64_t k = s < n ? static_cast<uint64_t>(keys[j0 + s]) : 0;
        b.k0[s] = static_cast<uint32_t>(k);
        b.k1[s] = static_cast<uint32_t>(k >> 32);
        b.c0[s] = b.c1[s] = 0;
      }
      philox_many(b, whole, static_cast<uint32_t>(domain));
      for (int s = 0; s < n; ++s) emit(j0 + s, int64_t{0}, b, s);
    }
    return;
  }
  // Blocks go in lane-major order: the batch holds kBatch consecutive
  // (lane, block) pairs starting at (j, blk).
  int64_t j = 0, blk = 0;
  while (j < lanes) {
    const int64_t j_start = j, blk_start = blk;
    int n = 0;
    for (; n < kBatch && j < lanes; ++n) {
      const uint64_t k = static_cast<uint64_t>(keys[j]);
      b.k0[n] = static_cast<uint32_t>(k);
      b.k1[n] = static_cast<uint32_t>(k >> 32);
      b.c0[n] = static_cast<uint32_t>(blk);
      b.c1[n] = static_cast<uint32_t>(static_cast<uint64_t>(blk) >> 32);
      if (++blk == per_lane) blk = 0, ++j;
    }
    const int whole = (n + kGroup - 1) / kGroup * kGroup;
    for (int s = n; s < whole; ++s) b.k0[s] = b.k1[s] = b.c0[s] = b.c1[s] = 0;
    philox_many(b, whole, static_cast<uint32_t>(domain));
    int64_t ej = j_start, eb = blk_start;
    for (int s = 0; s < n; ++s) {
      emit(ej, eb, b, s);
      if (++eb == per_lane) eb = 0, ++ej;
    }
  }
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  philox_round(counter, key);
  for (int r = 1; r < 10; ++r) {
    key[0] += kWeyl0;
    key[1] += kWeyl1;
    philox_round(counter, key);
  }
  return counter;
}

PhiloxCounter random_block(int64_t key, RandomDomain domain, uint64_t block) {
  uint64_t k = static_cast<uint64_t>(key);
  PhiloxKey pk = {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
  PhiloxCounter c = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u,
                     static_cast<uint32_t>(domain)};
  return philox4x32_10(c, pk);
}

void random_uniform_lanes(const int64_t* keys, double* const* out, int64_t count, int64_t lanes) {
  for_each_block(keys, lanes, count, RandomDomain::Uniform,
                 [&](int64_t j, int64_t blk, const Batch& b, int s) {
                   double* o = out[j] + 2 * blk;
                   o[0] = small_to_double(join64(b.x0[s], b.x1[s]) >> 11) * kTwoPow53Inv;
                   if (2 * blk + 1 < count)
                     o[1] = small_to_double(join64(b.x2[s], b.x3[s]) >> 11) * kTwoPow53Inv;
                 });
}

void random_normal_lanes(const int64_t* keys, double* const* out, int64_t count, int64_t lanes) {
  for_each_block(
      keys, lanes, count, RandomDomain::Normal, [&](int64_t j, int64_t blk, const Batch& b, int s) {
        double* o = out[j] + 2 * blk;
        double u1 = small_to_double((join64(b.x0[s], b.x1[s]) >> 11) + 1) * kTwoPow53Inv;  // (0, 1]
        double u2 = small_to_double(join64(b.x2[s], b.x3[s]) >> 11) * kTwoPow53Inv;        // [0, 1)
        double r = std::sqrt(-2.0 * std::log(u1));
        double theta = 2.0 * std::numbers::pi * u2;
        o[0] = r * std::cos(theta);
        if (2 * blk + 1 < count) o[1] = r * std::sin(theta);
      });
}

void random_split_lanes(const int64_t* keys, int64_t* first, int64_t* second, int64_t lanes) {
  for_each_block(keys, lanes, 1, RandomDomain::Split,
                 [&](int64_t j, int64_t, const Batch& b, int s) {
                   first[j] = static_cast<int64_t>(join64(b.x0[s], b.x1[s]));
                   second[j] = static_cast<int64_t>(join64(b.x2[s], b.x3[s]));
                 });
}

void random_uniform_domain_lanes(const int64_t* keys, double* const* out, int64_t count,
                                 int64_t lanes, RandomDomain domain) {
  for_each_block(keys, lanes, count, domain, [&](int64_t j, int64_t blk, const Batch& b, int s) {
    double* o = out[j] + 2 * blk;
    o[0] = small_to_double(join64(b.x0[s], b.x1[s]) >> 11) * kTwoPow53Inv;
    if (2 * blk + 1 < count) o[1] = small_to_double(join64(b.x2[s], b.x3[s]) >> 11) * kTwoPow53Inv;
  });
}

void random_exponential_lanes(const int64_t* keys, double* const* out, int64_t count,
                              int64_t lanes) {
  random_uniform_domain_lanes(keys, out, count, lanes, RandomDomain::Exponential);
  for (int64_t j = 0; j < lanes; ++j)
    for (int64_t e = 0; e < count; ++e) out[j][e] = -std::log1p(-out[j][e]);
}

double random_normal_one(int64_t key) {
  const PhiloxCounter x = random_block(key, RandomDomain::Normal, 0);
  double u1 = small_to_double((join64(x[0], x[1]) >> 11) + 1) * kTwoPow53Inv;  // (0, 1]
  double u2 = small_to_double(join64(x[2], x[3]) >> 11) * kTwoPow53Inv;        // [0, 1)
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 2.0 * std::numbers::pi * u2;
  return r * std::cos(theta);
}

int64_t random_fold_in(int64_t key, int64_t x) {
  uint64_t k = static_cast<uint64_t>(key), v = static_cast<uint64_t>(x);
  PhiloxCounter c = philox4x32_10({static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32), 0u,
                                   static_cast<uint32_t>(RandomDomain::FoldIn)},
                                  {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)});
  return static_cast<int64_t>(join64(c[0], c[1]));
}

namespace {

// The uniforms of one element's stream (philox.h).
class Stream {
 public:
  Stream(int64_t key, RandomDomain domain, int64_t element) : domain_(domain) {
    uint64_t k = static_cast<uint64_t>(key), e = static_cast<uint64_t>(element);
    key_ = {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
    e_lo_ = static_cast<uint32_t>(e);
    e_hi_ = static_cast<uint32_t>(e >> 32);
  }
  double next() {  // in [0, 1)
    if (have_second_) {
      have_second_ = false;
      return second_;
    }
    PhiloxCounter c = philox4x32_10({block_++, e_lo_, e_hi_, static_cast<uint32_t>(domain_)}, key_);
    second_ = small_to_double(join64(c[2], c[3]) >> 11) * kTwoPow53Inv;
    have_second_ = true;
    return small_to_double(join64(c[0], c[1]) >> 11) * kTwoPow53Inv;
  }
  double normal() {
    double u1 = next(), u2 = next();
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  RandomDomain domain_;
  PhiloxKey key_;
  uint32_t e_lo_ = 0, e_hi_ = 0, block_ = 0;
  double second_ = 0;
  bool have_second_ = false;
};

double gamma_at_least_one(Stream& s, double alpha) {
  const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = s.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = s.next();
    double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double log_gamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace

double random_gamma(int64_t key, int64_t element, double alpha) {
  Stream s(key, RandomDomain::Gamma, element);
  if (alpha >= 1.0) return gamma_at_least_one(s, alpha);
  double g = gamma_at_least_one(s, alpha + 1.0);
  return g * std::pow(1.0 - s.next(), 1.0 / alpha);
}

int64_t random_poisson(int64_t key, int64_t element, double lam) {
  if (lam == 0.0) return 0;
  Stream s(key, RandomDomain::Poisson, element);
  if (lam < 10.0) {
    const double limit = std::exp(-lam);
    int64_t k = 0;
    double p = s.next();
    while (p > limit) {
      ++k;
      p *= s.next();
    }
    return k;
  }
  // PTRS: transformed rejection with squeeze (W. Hoermann, "The transformed
  // rejection method for generating Poisson random variables", 1993).
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = s.next() - 0.5, v = s.next();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<int64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
        -lam + k * loglam - log_gamma(k + 1.0))
      return static_cast<int64_t>(k);
  }
}

void random_uniform(int64_t key, double* out, int64_t count) {
  random_uniform_lanes(&key, &out, count, 1);
}

void random_normal(int64_t key, double* out, int64_t count) {
  random_normal_lanes(&key, &out, count, 1);
}

KeyPair random_split(int64_t key) {
  KeyPair kp;
  random_split_lanes(&key, &kp.first, &kp.second, 1);
  return kp;
}

}  // namespace ab
