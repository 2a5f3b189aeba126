// Philox-4x32-10 and the key -> numbers scheme described in philox.h.
#include "vm/philox.h"

#include <cmath>
#include <numbers>

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

void random_uniform(int64_t key, double* out, int64_t count) {
  for (int64_t e = 0; e < count; e += 2) {
    PhiloxCounter x = random_block(key, RandomDomain::Uniform, static_cast<uint64_t>(e / 2));
    out[e] = static_cast<double>(join64(x[0], x[1]) >> 11) * kTwoPow53Inv;
    if (e + 1 < count) out[e + 1] = static_cast<double>(join64(x[2], x[3]) >> 11) * kTwoPow53Inv;
  }
}

void random_normal(int64_t key, double* out, int64_t count) {
  for (int64_t e = 0; e < count; e += 2) {
    PhiloxCounter x = random_block(key, RandomDomain::Normal, static_cast<uint64_t>(e / 2));
    double u1 = static_cast<double>((join64(x[0], x[1]) >> 11) + 1) * kTwoPow53Inv;  // (0, 1]
    double u2 = static_cast<double>(join64(x[2], x[3]) >> 11) * kTwoPow53Inv;        // [0, 1)
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * std::numbers::pi * u2;
    out[e] = r * std::cos(theta);
    if (e + 1 < count) out[e + 1] = r * std::sin(theta);
  }
}

KeyPair random_split(int64_t key) {
  PhiloxCounter x = random_block(key, RandomDomain::Split, 0);
  return {static_cast<int64_t>(join64(x[0], x[1])), static_cast<int64_t>(join64(x[2], x[3]))};
}

}  // namespace ab
