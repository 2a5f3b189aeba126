// Philox-4x32-10 known answers (Random123's published test vectors) and the
// statistical sanity of uniform / normal / split built on it (philox.h),
// plus the kernels' independence from lane, batch and layout.
#include <cmath>
#include <numbers>
#include <set>

#include "kernel_harness.h"
#include "vm/kernels/philox.h"

using namespace ab;
using namespace ab::test;

TEST_CASE("philox4x32-10 known-answer tests") {
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
        PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  // pi digits vector from the same suite
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("uniform: range, mean, variance, 53-bit resolution") {
  const int64_t N = 200000;
  std::vector<double> u(N);
  random_uniform(12345, u.data(), N);
  double sum = 0, sq = 0;
  bool fine_bits = false;
  int64_t outside = 0;
  for (double x : u) {
    outside += !(x >= 0.0 && x < 1.0);
    sum += x;
    sq += x * x;
    // a value with a bit below 2^-32 set proves more than 32 random bits
    double scaled = x * 4294967296.0;
    if (scaled != std::floor(scaled)) fine_bits = true;
  }
  double mean = sum / N, var = sq / N - mean * mean;
  CHECK(outside == 0);
  CHECK(mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(var == doctest::Approx(1.0 / 12).epsilon(0.02));
  CHECK(fine_bits);
}

TEST_CASE("normal: moments and no infinities") {
  const int64_t N = 200001;  // odd: the last element uses half a block
  std::vector<double> z(N);
  random_normal(-7, z.data(), N);
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
  int64_t infinite = 0;
  for (double x : z) {
    infinite += !std::isfinite(x);
    m1 += x;
    m2 += x * x;
    m3 += x * x * x;
    m4 += x * x * x * x;
  }
  CHECK(infinite == 0);
  m1 /= N;
  m2 /= N;
  m3 /= N;
  m4 /= N;
  CHECK(std::abs(m1) < 0.01);
  CHECK(m2 == doctest::Approx(1.0).epsilon(0.02));
  CHECK(std::abs(m3) < 0.03);
  CHECK(m4 == doctest::Approx(3.0).epsilon(0.05));
}

TEST_CASE("uniform and normal are pure functions of the key; shapes are prefixes") {
  std::vector<double> a(5), b(5), c(3);
  random_uniform(42, a.data(), 5);
  random_uniform(42, b.data(), 5);
  random_uniform(42, c.data(), 3);
  CHECK(a == b);
  CHECK(std::vector<double>(a.begin(), a.begin() + 3) == c);
  random_uniform(43, b.data(), 5);
  CHECK(a != b);
  std::vector<double> z(5);
  random_normal(42, z.data(), 5);
  CHECK(z != a);
}

TEST_CASE("split: deterministic, distinct, independent-looking children") {
  KeyPair p = random_split(0);
  KeyPair q = random_split(0);
  CHECK(p.first == q.first);
  CHECK(p.second == q.second);
  CHECK(p.first != p.second);
  // A tree of splits stays collision-free.
  std::set<int64_t> seen;
  std::vector<int64_t> frontier = {1};
  for (int depth = 0; depth < 12; ++depth) {
    std::vector<int64_t> next;
    for (int64_t k : frontier) {
      KeyPair kp = random_split(k);
      next.push_back(kp.first);
      next.push_back(kp.second);
    }
    for (int64_t k : next) seen.insert(k);
    frontier = std::move(next);
  }
  CHECK(seen.size() == (size_t{2} << 12) - 2);
  // Children's streams are uncorrelated with each other and the parent's.
  const int64_t N = 50000;
  std::vector<double> u0(N), u1(N), u2(N);
  random_uniform(99, u0.data(), N);
  KeyPair kids = random_split(99);
  random_uniform(kids.first, u1.data(), N);
  random_uniform(kids.second, u2.data(), N);
  auto corr = [&](const std::vector<double>& x, const std::vector<double>& y) {
    double sx = 0, sy = 0, sxy = 0, sxx = 0, syy = 0;
    for (int64_t i = 0; i < N; ++i) {
      sx += x[i];
      sy += y[i];
      sxy += x[i] * y[i];
      sxx += x[i] * x[i];
      syy += y[i] * y[i];
    }
    double cov = sxy / N - (sx / N) * (sy / N);
    return cov / std::sqrt((sxx / N - (sx / N) * (sx / N)) * (syy / N - (sy / N) * (sy / N)));
  };
  CHECK(std::abs(corr(u0, u1)) < 0.02);
  CHECK(std::abs(corr(u0, u2)) < 0.02);
  CHECK(std::abs(corr(u1, u2)) < 0.02);
}

TEST_CASE("random kernels: same key, same numbers, whatever the lane or layout") {
  PrimAttrs attrs;
  attrs.shape = Shape{3};
  std::vector<int64_t> keys = {5, 6, 5};
  auto r = run(PrimId::Uniform, 3, {dense(tt(DType::I64), keys)}, attrs);
  auto u = r.out<double>();
  CHECK(std::vector<double>(u.begin(), u.begin() + 3) ==
        std::vector<double>(u.begin() + 6, u.end()));
  std::vector<double> direct(3);
  random_uniform(6, direct.data(), 3);
  CHECK(std::vector<double>(u.begin() + 3, u.begin() + 6) == direct);
  auto g = run(PrimId::Uniform, 1, {gather(tt(DType::I64), keys, {1})}, attrs);
  CHECK(g.out<double>() == direct);
  auto s = run(PrimId::Normal, 2, {shared(tt(DType::I64), std::vector<int64_t>{6})}, attrs);
  std::vector<double> zn(3);
  random_normal(6, zn.data(), 3);
  auto sv = s.out<double>();
  CHECK(std::vector<double>(sv.begin(), sv.begin() + 3) == zn);
  CHECK(std::vector<double>(sv.begin() + 3, sv.end()) == zn);
  auto sp = run(PrimId::Split, 2, {dense(tt(DType::I64), std::vector<int64_t>{5, 6})});
  KeyPair k6 = random_split(6);
  CHECK(sp.out<int64_t>(0)[1] == k6.first);
  CHECK(sp.out<int64_t>(1)[1] == k6.second);
  auto scalar = run(PrimId::Uniform, 1, {dense(tt(DType::I64), std::vector<int64_t>{6})});
  CHECK(scalar.out<double>()[0] == direct[0]);
}

namespace {

// The scheme of philox.h written out one block at a time (random_block is
// the plain Philox-4x32-10): the batched generators must give these bits.
uint64_t join(uint32_t lo, uint32_t hi) { return (uint64_t{hi} << 32) | lo; }

std::vector<double> plain_uniform(int64_t key, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) {
    PhiloxCounter x = random_block(key, RandomDomain::Uniform, static_cast<uint64_t>(e / 2));
    uint64_t u = e % 2 == 0 ? join(x[0], x[1]) : join(x[2], x[3]);
    out[static_cast<size_t>(e)] = static_cast<double>(u >> 11) / 9007199254740992.0;
  }
  return out;
}

std::vector<double> plain_normal(int64_t key, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) {
    PhiloxCounter x = random_block(key, RandomDomain::Normal, static_cast<uint64_t>(e / 2));
    double u1 = static_cast<double>((join(x[0], x[1]) >> 11) + 1) / 9007199254740992.0;
    double u2 = static_cast<double>(join(x[2], x[3]) >> 11) / 9007199254740992.0;
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * std::numbers::pi * u2;
    out[static_cast<size_t>(e)] = e % 2 == 0 ? r * std::cos(theta) : r * std::sin(theta);
  }
  return out;
}

}  // namespace

TEST_CASE("batched generators: bit-identical to the scheme computed block by block") {
  // Keys with both halves in use, negative ones, and enough lanes and
  // elements to fill several batches with a partial one at the end.
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < 150; ++j) keys.push_back(j * 0x9E3779B97F4A7C15LL ^ (j - 75));
  for (int64_t count : {1, 2, 3, 16, 131}) {
    std::vector<std::vector<double>> u(keys.size(), std::vector<double>(count)), z = u;
    std::vector<double*> pu, pz;
    for (size_t j = 0; j < keys.size(); ++j) pu.push_back(u[j].data()), pz.push_back(z[j].data());
    const int64_t lanes = static_cast<int64_t>(keys.size());
    random_uniform_lanes(keys.data(), pu.data(), count, lanes);
    random_normal_lanes(keys.data(), pz.data(), count, lanes);
    for (size_t j = 0; j < keys.size(); ++j) {
      INFO("key " << keys[j] << ", count " << count);
      CHECK(u[j] == plain_uniform(keys[j], count));
      CHECK(z[j] == plain_normal(keys[j], count));
    }
  }
  std::vector<int64_t> first(keys.size()), second(keys.size());
  random_split_lanes(keys.data(), first.data(), second.data(), static_cast<int64_t>(keys.size()));
  for (size_t j = 0; j < keys.size(); ++j) {
    PhiloxCounter x = random_block(keys[j], RandomDomain::Split, 0);
    CHECK(first[j] == static_cast<int64_t>(join(x[0], x[1])));
    CHECK(second[j] == static_cast<int64_t>(join(x[2], x[3])));
  }
}
