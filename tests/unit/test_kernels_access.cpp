// Access modes (Dense / Shared / Gather operands, Dense / Gather results)
// and results that alias an operand in place (`n = sub(n, 1)`): every
// combination must give the per-lane answer and touch nothing else.
#include <algorithm>
#include <numeric>

#include "kernel_harness.h"

using namespace ab;
using namespace ab::test;

namespace {

const Access kIn[] = {Access::Dense, Access::Shared, Access::Gather};
const Access kOut[] = {Access::Dense, Access::Gather};

const char* name(Access a) {
  return a == Access::Dense ? "dense" : a == Access::Shared ? "shared" : "gather";
}

// Storage of one operand for n lanes whose logical lane values are
// `lane_value(j)`: Dense stores them in order, Shared stores lane 0's value
// (so lane_value must be constant), Gather scatters them into a bigger
// array through `index`.
template <class T>
struct Store {
  std::vector<T> data;
  std::vector<uint32_t> index;
};

template <class T, class F>
Store<T> layout(Access a, int64_t n, const std::vector<uint32_t>& index, F lane_value) {
  Store<T> s;
  if (a == Access::Dense) {
    for (int64_t j = 0; j < n; ++j) s.data.push_back(lane_value(j));
  } else if (a == Access::Shared) {
    s.data.push_back(lane_value(0));
  } else {
    s.data.assign(static_cast<size_t>(2 * n + 3), T(-999));
    for (int64_t j = 0; j < n; ++j) s.data[index[j]] = lane_value(j);
    s.index = index;
  }
  return s;
}

std::vector<uint32_t> scattered_lanes(int64_t n) {
  // A permutation into [0, 2n+3) with holes: lanes 0..n-1 -> 2n+2-2j.
  std::vector<uint32_t> idx;
  for (int64_t j = 0; j < n; ++j) idx.push_back(static_cast<uint32_t>(2 * n + 2 - 2 * j));
  return idx;
}

}  // namespace

TEST_CASE("scalar add/div/lt in every access combination") {
  const int64_t n = 37;  // not a multiple of any vector width
  const TensorType i64 = tt(DType::I64), boolean = tt(DType::Bool);
  auto idx = scattered_lanes(n);
  for (Access aa : kIn)
    for (Access ab_ : kIn)
      for (Access ao : kOut) {
        CAPTURE(name(aa));
        CAPTURE(name(ab_));
        CAPTURE(name(ao));
        auto av = [&](int64_t j) {
          return aa == Access::Shared ? int64_t(-17) : int64_t(j * 7 - 100);
        };
        auto bv = [&](int64_t j) {
          return ab_ == Access::Shared ? int64_t(5) : int64_t(j % 9 + 1);
        };
        Store<int64_t> a = layout<int64_t>(aa, n, idx, av);
        Store<int64_t> b = layout<int64_t>(ab_, n, idx, bv);
        ArgView args[2] = {{a.data.data(), aa, a.index.empty() ? nullptr : a.index.data(), &i64},
                           {b.data.data(), ab_, b.index.empty() ? nullptr : b.index.data(), &i64}};
        for (PrimId op : {PrimId::Add, PrimId::Div, PrimId::Lt}) {
          const TensorType& rt = op == PrimId::Lt ? boolean : i64;
          size_t width = dtype_size(rt.dtype);
          std::vector<unsigned char> out(static_cast<size_t>(2 * n + 3) * width, 0xCD);
          OutView o{out.data(), ao, ao == Access::Gather ? idx.data() : nullptr, &rt};
          PrimAttrs attrs;
          KernelCall call{n, args, 2, &o, 1, &attrs};
          KernelError err;
          REQUIRE(kernel_for(op)(call, &err));
          for (int64_t j = 0; j < n; ++j) {
            int64_t x = av(j), y = bv(j);
            size_t slot = ao == Access::Gather ? idx[j] : static_cast<size_t>(j);
            if (op == PrimId::Lt) {
              CHECK(out[slot] == (x < y ? 1 : 0));
            } else {
              int64_t got;
              std::memcpy(&got, out.data() + slot * 8, 8);
              int64_t want = op == PrimId::Add ? x + y : (x / y - ((x % y != 0 && x < 0) ? 1 : 0));
              CHECK(got == want);
            }
          }
          if (ao == Access::Gather) {  // the holes between lanes are untouched
            for (size_t s = 0; s < 2 * n + 3; ++s)
              if (std::find(idx.begin(), idx.end(), s) == idx.end()) CHECK(out[s * width] == 0xCD);
          }
        }
      }
}

TEST_CASE("select in every access combination of its three operands") {
  const int64_t n = 11;
  const TensorType f64 = tt(DType::F64), boolean = tt(DType::Bool);
  auto idx = scattered_lanes(n);
  for (Access ac : kIn)
    for (Access aa : kIn)
      for (Access ab_ : kIn)
        for (Access ao : kOut) {
          auto cv = [&](int64_t j) { return uint8_t(ac == Access::Shared ? 1 : j % 3 == 0); };
          auto av = [&](int64_t j) { return aa == Access::Shared ? 0.5 : double(j); };
          auto bv = [&](int64_t j) { return ab_ == Access::Shared ? -0.5 : double(-j); };
          Store<uint8_t> c = layout<uint8_t>(ac, n, idx, cv);
          Store<double> a = layout<double>(aa, n, idx, av);
          Store<double> b = layout<double>(ab_, n, idx, bv);
          auto ix = [](const auto& s) { return s.index.empty() ? nullptr : s.index.data(); };
          ArgView args[3] = {{c.data.data(), ac, ix(c), &boolean},
                             {a.data.data(), aa, ix(a), &f64},
                             {b.data.data(), ab_, ix(b), &f64}};
          std::vector<double> out(static_cast<size_t>(2 * n + 3), 123.0);
          OutView o{out.data(), ao, ao == Access::Gather ? idx.data() : nullptr, &f64};
          PrimAttrs attrs;
          KernelCall call{n, args, 3, &o, 1, &attrs};
          KernelError err;
          REQUIRE(kernel_for(PrimId::Select)(call, &err));
          for (int64_t j = 0; j < n; ++j) {
            size_t slot = ao == Access::Gather ? idx[j] : static_cast<size_t>(j);
            CHECK(out[slot] == (cv(j) ? av(j) : bv(j)));
          }
        }
}

TEST_CASE("in place: n = sub(n, 1) through a gather list touches only active lanes") {
  const TensorType i64 = tt(DType::I64);
  std::vector<int64_t> n = {10, 20, 30, 40, 50, 60};
  std::vector<uint32_t> active = {5, 1, 3};
  std::vector<int64_t> one = {1};
  ArgView args[2] = {{n.data(), Access::Gather, active.data(), &i64},
                     {one.data(), Access::Shared, nullptr, &i64}};
  OutView o{n.data(), Access::Gather, active.data(), &i64};
  PrimAttrs attrs;
  KernelCall call{3, args, 2, &o, 1, &attrs};
  KernelError err;
  REQUIRE(kernel_for(PrimId::Sub)(call, &err));
  CHECK(n == std::vector<int64_t>{10, 19, 30, 39, 50, 59});
  // mul(n, n) in place: both operands alias the result
  args[1] = args[0];
  REQUIRE(kernel_for(PrimId::Mul)(call, &err));
  CHECK(n == std::vector<int64_t>{10, 361, 30, 1521, 50, 3481});
}

TEST_CASE("in place on dense and vector events") {
  const TensorType v3 = tt(DType::F64, {3}), s = tt(DType::F64);
  std::vector<double> x = {1, 2, 3, 4, 5, 6};
  std::vector<double> two = {2};
  PrimAttrs attrs;
  KernelError err;
  {  // flattened dense path
    ArgView args[2] = {{x.data(), Access::Dense, nullptr, &v3},
                       {two.data(), Access::Shared, nullptr, &s}};
    OutView o{x.data(), Access::Dense, nullptr, &v3};
    KernelCall call{2, args, 2, &o, 1, &attrs};
    REQUIRE(kernel_for(PrimId::Mul)(call, &err));
    CHECK(x == std::vector<double>{2, 4, 6, 8, 10, 12});
  }
  {  // general path: gathered vector events, broadcast partner [1]
    const TensorType v1 = tt(DType::F64, {1});
    std::vector<uint32_t> active = {1};
    std::vector<double> d = {0.5, 100};
    ArgView args[2] = {{x.data(), Access::Gather, active.data(), &v3},
                       {d.data(), Access::Dense, nullptr, &v1}};
    OutView o{x.data(), Access::Gather, active.data(), &v3};
    KernelCall call{1, args, 2, &o, 1, &attrs};
    REQUIRE(kernel_for(PrimId::Add)(call, &err));
    CHECK(x == std::vector<double>{2, 4, 6, 8.5, 10.5, 12.5});
  }
  {  // unary in place, gathered vector events
    std::vector<uint32_t> active = {0};
    ArgView args[1] = {{x.data(), Access::Gather, active.data(), &v3}};
    OutView o{x.data(), Access::Gather, active.data(), &v3};
    KernelCall call{1, args, 1, &o, 1, &attrs};
    REQUIRE(kernel_for(PrimId::Neg)(call, &err));
    CHECK(x == std::vector<double>{-2, -4, -6, 8.5, 10.5, 12.5});
  }
}

TEST_CASE("in place: select, cast to the same dtype, sum of a scalar, split") {
  const TensorType i64 = tt(DType::I64), b = tt(DType::Bool);
  PrimAttrs attrs;
  KernelError err;
  std::vector<int64_t> v = {1, 2, 3};
  std::vector<uint8_t> c = {1, 0, 1};
  std::vector<int64_t> z = {0};
  ArgView sel[3] = {{c.data(), Access::Dense, nullptr, &b},
                    {z.data(), Access::Shared, nullptr, &i64},
                    {v.data(), Access::Dense, nullptr, &i64}};
  OutView o{v.data(), Access::Dense, nullptr, &i64};
  KernelCall call{3, sel, 3, &o, 1, &attrs};
  REQUIRE(kernel_for(PrimId::Select)(call, &err));
  CHECK(v == std::vector<int64_t>{0, 2, 0});

  attrs.dtype = DType::I64;
  ArgView one[1] = {{v.data(), Access::Dense, nullptr, &i64}};
  KernelCall cast{3, one, 1, &o, 1, &attrs};
  REQUIRE(kernel_for(PrimId::Cast)(cast, &err));
  CHECK(v == std::vector<int64_t>{0, 2, 0});
  attrs = {};
  KernelCall sum{3, one, 1, &o, 1, &attrs};
  REQUIRE(kernel_for(PrimId::Sum)(sum, &err));
  CHECK(v == std::vector<int64_t>{0, 2, 0});

  // key, sub = split(key) and sub, key = split(key): the key is read first.
  std::vector<int64_t> keys = {7, 8}, sub(2), keys2 = {7, 8}, sub2(2);
  ArgView k[1] = {{keys.data(), Access::Dense, nullptr, &i64}};
  OutView outs[2] = {{keys.data(), Access::Dense, nullptr, &i64},
                     {sub.data(), Access::Dense, nullptr, &i64}};
  KernelCall split{2, k, 1, outs, 2, &attrs};
  REQUIRE(kernel_for(PrimId::Split)(split, &err));
  ArgView k2[1] = {{keys2.data(), Access::Dense, nullptr, &i64}};
  OutView outs2[2] = {{sub2.data(), Access::Dense, nullptr, &i64},
                      {keys2.data(), Access::Dense, nullptr, &i64}};
  KernelCall split2{2, k2, 1, outs2, 2, &attrs};
  REQUIRE(kernel_for(PrimId::Split)(split2, &err));
  CHECK(keys == sub2);
  CHECK(sub == keys2);
  CHECK(keys[0] != 7);
}

TEST_CASE("tuple has no kernel") { CHECK_FALSE(static_cast<bool>(kernel_for(PrimId::Tuple))); }

TEST_CASE("every other primitive has a kernel") {
  for (const PrimInfo& p : all_prims()) {
    CAPTURE(p.name);
    if (p.id != PrimId::Tuple) CHECK(static_cast<bool>(kernel_for(p.id)));
  }
}
