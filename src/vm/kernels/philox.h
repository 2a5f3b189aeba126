// Counter-based random numbers: Philox-4x32-10 (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011) and the scheme that turns a
// program's i64 key into numbers. Every random value is a pure function of
// (key, position), so the same key gives the same numbers in every VM, at
// every batch size and under every schedule; no generator state exists.
//
// The scheme (fixed: changing it changes every program's output):
// - The 64-bit key k becomes the Philox key {lo32(k), hi32(k)}.
// - A Philox block is keyed by that key and indexed by the counter
//   {lo32(b), hi32(b), 0, domain}, where b is the block number and domain
//   separates the uses of one key: 0 uniform, 1 normal, 2 split.
// - uniform(key, shape): element e (C order) comes from block b = e / 2;
//   the block's words x0..x3 give two 64-bit integers u = x1:x0 (e even)
//   and u = x3:x2 (e odd), and the element is (u >> 11) * 2^-53, in [0, 1)
//   with 53 random bits.
// - normal(key, shape): element e comes from block b = e / 2 of domain 1;
//   two 53-bit uniforms are formed as above, u1 = ((x1:x0 >> 11) + 1) * 2^-53
//   in (0, 1] (so log(u1) is finite) and u2 = (x3:x2 >> 11) * 2^-53, and
//   Box-Muller gives r = sqrt(-2 log u1), z = r cos(2 pi u2) for even e and
//   r sin(2 pi u2) for odd e.
// - split(key) -> (k1, k2): the block with counter {0, 0, 0, 2}; k1 = x1:x0,
//   k2 = x3:x2 (as two's-complement i64).
// - exponential(key, shape): element e is -log1p(-u), u the element e of
//   uniform's scheme in domain 3.
// - bernoulli(key, p): element e is u < p[e], u as uniform's in domain 6
//   (p <= 0 or NaN: false; p >= 1: true).
// - categorical(key, logits): result element e (the logits' row e along the
//   last axis, K entries) takes u as uniform's element e in domain 7; with
//   w_k = exp(l_k - max l), the result is the first k whose running sum
//   w_0 + ... + w_k exceeds u * (w_0 + ... + w_{K-1}).
// - gamma and poisson draw a variable number of uniforms per element: the
//   stream of element e reads blocks j = 0, 1, ... with counter
//   {j, lo32(e), hi32(e), domain} (4 gamma, 5 poisson), each block giving
//   x1:x0 then x3:x2 as 53-bit uniforms u in [0, 1), in that order.
//   A standard normal from a stream is sqrt(-2 log(1 - u1)) cos(2 pi u2).
//   gamma(alpha >= 1): Marsaglia and Tsang (2000): d = alpha - 1/3,
//   c = 1/sqrt(9d); repeat: x = normal (again while v = 1 + c x <= 0),
//   v = v^3, u = next; accept d v if u < 1 - 0.0331 x^4 or
//   log u < x^2/2 + d (1 - v + log v). gamma(alpha < 1) = gamma(alpha + 1)
//   * (1 - u)^(1/alpha), u drawn after it.
//   poisson(lam): 0 for lam = 0; for lam < 10 the least k with
//   u_0 u_1 ... u_k <= exp(-lam); for lam >= 10 Hoermann's PTRS (1993), two
//   uniforms per try, as NumPy's legacy generator does.
// - fold_in(key, x): the block under key with counter {lo32(x), hi32(x), 0,
//   8}; the new key is x1:x0.
// A shape's numbers are a prefix of a bigger shape's numbers under one key;
// use split or fold_in to get independent streams.
#pragma once
#include <array>
#include <cstdint>

namespace ab {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox-4x32 bijection with 10 rounds.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

enum class RandomDomain : uint32_t {
  Uniform = 0,
  Normal = 1,
  Split = 2,
  Exponential = 3,
  Gamma = 4,
  Poisson = 5,
  Bernoulli = 6,
  Categorical = 7,
  FoldIn = 8,
};

// The four words of block `block` of `domain` under the i64 key `key`.
PhiloxCounter random_block(int64_t key, RandomDomain domain, uint64_t block);

// Fill out[0..count) with the elements of uniform(key) / normal(key) for a
// shape of `count` elements.
void random_uniform(int64_t key, double* out, int64_t count);
void random_normal(int64_t key, double* out, int64_t count);

struct KeyPair {
  int64_t first, second;
};
KeyPair random_split(int64_t key);

// The same for `lanes` keys at once (what the kernels call; the blocks of
// all lanes are computed several at a time): out[j][0..count) receives the
// numbers of keys[j]; first[j], second[j] the children of keys[j]. The
// outputs may not overlap the keys.
void random_uniform_lanes(const int64_t* keys, double* const* out, int64_t count, int64_t lanes);
void random_normal_lanes(const int64_t* keys, double* const* out, int64_t count, int64_t lanes);
void random_split_lanes(const int64_t* keys, int64_t* first, int64_t* second, int64_t lanes);
// uniform's scheme in another domain (exponential, bernoulli, categorical
// draw their uniforms so), and exponential itself.
void random_uniform_domain_lanes(const int64_t* keys, double* const* out, int64_t count,
                                 int64_t lanes, RandomDomain domain);
void random_exponential_lanes(const int64_t* keys, double* const* out, int64_t count,
                              int64_t lanes);

int64_t random_fold_in(int64_t key, int64_t x);
// normal(key) of a scalar shape (element 0), as random_normal_lanes gives it.
double random_normal_one(int64_t key);

// One element's draw: element `element` of gamma(key, alpha) (alpha > 0,
// finite) and of poisson(key, lam) (0 <= lam, finite).
double random_gamma(int64_t key, int64_t element, double alpha);
int64_t random_poisson(int64_t key, int64_t element, double lam);

}  // namespace ab
