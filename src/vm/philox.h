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
// A shape's numbers are a prefix of a bigger shape's numbers under one key;
// use split to get independent streams.
#pragma once
#include <array>
#include <cstdint>

namespace ab {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox-4x32 bijection with 10 rounds.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

enum class RandomDomain : uint32_t { Uniform = 0, Normal = 1, Split = 2 };

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

}  // namespace ab
