// Reductions (all dims, axis, negative axis, wrap, NaN, empty) and the
// index/build kernels (get, set, size, reshape, zeros, fill, iota),
// including out-of-range indices and Python-style negative ones.
#include <cmath>
#include <limits>

#include "kernel_harness.h"

using namespace ab;
using namespace ab::test;

namespace {
PrimAttrs axis(int64_t k) {
  PrimAttrs a;
  a.axis = k;
  return a;
}
const double NaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("reductions over all event dims, per lane") {
  auto x =
      dense(tt(DType::I64, {2, 3}), std::vector<int64_t>{1, 2, 3, 4, 5, 6, -1, -2, -3, 0, 0, 7});
  CHECK(run(PrimId::Sum, 2, {x}).out<int64_t>() == std::vector<int64_t>{21, 1});
  CHECK(run(PrimId::Prod, 2, {x}).out<int64_t>() == std::vector<int64_t>{720, 0});
  CHECK(run(PrimId::ReduceMax, 2, {x}).out<int64_t>() == std::vector<int64_t>{6, 7});
  CHECK(run(PrimId::ReduceMin, 2, {x}).out<int64_t>() == std::vector<int64_t>{1, -3});
  auto f = dense(tt(DType::F64, {4}), std::vector<double>{1, 2, 3, 4, 1, NaN, 3, 4});
  auto mean = run(PrimId::Mean, 2, {f}).out<double>();
  CHECK(mean[0] == 2.5);
  CHECK(std::isnan(mean[1]));
  auto mx = run(PrimId::ReduceMax, 2, {f}).out<double>();
  CHECK(mx[0] == 4);
  CHECK(std::isnan(mx[1]));
  auto mn = run(PrimId::ReduceMin, 2, {f}).out<double>();
  CHECK(std::isnan(mn[1]));
  auto bools = dense(tt(DType::Bool, {3}), std::vector<uint8_t>{0, 0, 0, 0, 1, 0, 1, 1, 1});
  CHECK(run(PrimId::Any, 3, {bools}).out<uint8_t>() == std::vector<uint8_t>{0, 1, 1});
  CHECK(run(PrimId::All, 3, {bools}).out<uint8_t>() == std::vector<uint8_t>{0, 0, 1});
}

TEST_CASE("reductions over many lanes: each lane's own left-to-right sum, in any layout") {
  // 37 lanes (the kernel takes lanes eight at a time, then the rest one by
  // one) of 7 float elements whose sum depends on the order of the adds.
  const int64_t n = 37, E = 7;
  std::vector<double> v;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < E; ++k)
      v.push_back((k == 0 ? 1e16 : k == 2 ? -1e16 : 1.0) * (1.0 + 0.1 * static_cast<double>(j)));
  v[5 * E + 2] = NaN;  // one lane of the first group of eight
  std::vector<double> want_sum, want_max;
  for (int64_t j = 0; j < n; ++j) {
    double s = 0, m = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < E; ++k) {
      const double x = v[static_cast<size_t>(j * E + k)];
      s = s + x;
      m = (m >= x || m != m) ? m : x;
    }
    want_sum.push_back(s);
    want_max.push_back(m);
  }
  // The same events through a gather list, lanes in reverse order.
  std::vector<double> storage(static_cast<size_t>((n + 2) * E), -999.0);
  std::vector<uint32_t> index;
  for (int64_t j = 0; j < n; ++j) {
    const auto slot = static_cast<uint32_t>(n + 1 - j);
    index.push_back(slot);
    for (int64_t k = 0; k < E; ++k) storage[slot * E + k] = v[static_cast<size_t>(j * E + k)];
  }
  const TensorType t = tt(DType::F64, {E});
  for (const Operand& x : {dense(t, v), gather(t, storage, index)}) {
    auto sum = run(PrimId::Sum, n, {x}).out<double>();
    auto mx = run(PrimId::ReduceMax, n, {x}).out<double>();
    REQUIRE(sum.size() == static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const auto u = static_cast<size_t>(j);
      CAPTURE(j);
      if (j == 5) {
        CHECK(std::isnan(sum[u]));
        CHECK(std::isnan(mx[u]));
        continue;
      }
      CHECK(std::memcmp(&sum[u], &want_sum[u], sizeof(double)) == 0);
      CHECK(mx[u] == want_max[u]);
    }
  }
}

TEST_CASE("reductions wrap on integers") {
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto x = dense(tt(DType::I64, {2}), std::vector<int64_t>{big, 1});
  CHECK(run(PrimId::Sum, 1, {x}).out<int64_t>()[0] == std::numeric_limits<int64_t>::min());
  auto y = dense(tt(DType::I32, {3}), std::vector<int32_t>{65536, 65536, 3});
  CHECK(run(PrimId::Prod, 1, {y}).out<int32_t>()[0] == 0);
}

TEST_CASE("reductions along an axis, negative axis from the end") {
  // one lane of i64[2,3,2]
  std::vector<int64_t> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  auto x = shared(tt(DType::I64, {2, 3, 2}), v);
  auto s0 = run(PrimId::Sum, 2, {x}, axis(0));
  CHECK(s0.types[0] == tt(DType::I64, {3, 2}));
  CHECK(s0.out<int64_t>() == std::vector<int64_t>{6, 8, 10, 12, 14, 16, 6, 8, 10, 12, 14, 16});
  auto s1 = run(PrimId::Sum, 1, {x}, axis(1));
  CHECK(s1.out<int64_t>() == std::vector<int64_t>{6, 9, 24, 27});
  auto sm = run(PrimId::ReduceMax, 1, {x}, axis(-1));
  CHECK(sm.types[0] == tt(DType::I64, {2, 3}));
  CHECK(sm.out<int64_t>() == std::vector<int64_t>{1, 3, 5, 7, 9, 11});
  auto m = run(PrimId::Mean, 1, {shared(tt(DType::F32, {2, 2}), std::vector<float>{1, 2, 3, 5})},
               axis(-2));
  CHECK(m.out<float>() == std::vector<float>{2, 3.5f});
}

TEST_CASE("reductions of zero elements") {
  auto e = dense(tt(DType::F64, {0}), std::vector<double>{});
  CHECK(run(PrimId::Sum, 2, {e}).out<double>() == std::vector<double>{0, 0});
  CHECK(run(PrimId::Prod, 2, {e}).out<double>() == std::vector<double>{1, 1});
  CHECK(std::isnan(run(PrimId::Mean, 1, {e}).out<double>()[0]));
  auto eb = dense(tt(DType::Bool, {0}), std::vector<uint8_t>{});
  CHECK(run(PrimId::Any, 1, {eb}).out<uint8_t>()[0] == 0);
  CHECK(run(PrimId::All, 1, {eb}).out<uint8_t>()[0] == 1);
  auto s = run(PrimId::Sum, 1, {dense(tt(DType::I64, {2, 0}), std::vector<int64_t>{})}, axis(1));
  CHECK(s.out<int64_t>() == std::vector<int64_t>{0, 0});
}

TEST_CASE("get: rows, negative indices wrap, out of range fails at the right lane") {
  auto x = shared(tt(DType::F64, {4}), std::vector<double>{10, 11, 12, 13});
  auto r = run(PrimId::Get, 4, {x, dense(tt(DType::I64), std::vector<int64_t>{0, 3, -1, -4})});
  REQUIRE(r.ok);
  CHECK(r.out<double>() == std::vector<double>{10, 13, 13, 10});
  auto bad = run(PrimId::Get, 4, {x, dense(tt(DType::I64), std::vector<int64_t>{0, 1, 4, -5})});
  CHECK_FALSE(bad.ok);
  CHECK(bad.err.lane == 2);
  CHECK(bad.err.message == "index 4 is out of range for 'get' on a dimension of size 4");
  auto neg = run(PrimId::Get, 2, {x, dense(tt(DType::I32), std::vector<int32_t>{1, -5})});
  CHECK_FALSE(neg.ok);
  CHECK(neg.err.lane == 1);
  CHECK(neg.err.message == "index -5 is out of range for 'get' on a dimension of size 4");
  // matrix rows per lane, i32 index, bool and f32 widths
  auto m =
      dense(tt(DType::I32, {2, 3}), std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto rows = run(PrimId::Get, 2, {m, dense(tt(DType::I32), std::vector<int32_t>{1, 0})});
  CHECK(rows.types[0] == tt(DType::I32, {3}));
  CHECK(rows.out<int32_t>() == std::vector<int32_t>{4, 5, 6, 7, 8, 9});
  auto bsel = run(PrimId::Get, 1,
                  {shared(tt(DType::Bool, {2}), std::vector<uint8_t>{0, 1}),
                   shared(tt(DType::I64), std::vector<int64_t>{-1})});
  CHECK(bsel.out<uint8_t>() == std::vector<uint8_t>{1});
  auto empty = run(PrimId::Get, 1,
                   {shared(tt(DType::F64, {0}), std::vector<double>{}),
                    shared(tt(DType::I64), std::vector<int64_t>{0})});
  CHECK_FALSE(empty.ok);
  auto zero_rows = run(PrimId::Get, 2,
                       {dense(tt(DType::F64, {3, 0}), std::vector<double>{}),
                        dense(tt(DType::I64), std::vector<int64_t>{2, -3})});
  CHECK(zero_rows.ok);
}

TEST_CASE("set: copy with one row replaced; negative index; out of range") {
  auto x = dense(tt(DType::I64, {3}), std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  auto r = run(PrimId::Set, 2,
               {x, dense(tt(DType::I64), std::vector<int64_t>{0, -1}),
                dense(tt(DType::I64), std::vector<int64_t>{-7, -8})});
  REQUIRE(r.ok);
  CHECK(r.out<int64_t>() == std::vector<int64_t>{-7, 2, 3, 4, 5, -8});
  auto bad = run(PrimId::Set, 2,
                 {x, dense(tt(DType::I32), std::vector<int32_t>{2, 3}),
                  shared(tt(DType::I64), std::vector<int64_t>{0})});
  CHECK_FALSE(bad.ok);
  CHECK(bad.err.lane == 1);
  CHECK(bad.err.message == "index 3 is out of range for 'set' on a dimension of size 3");
  // rows of a matrix, value broadcast from a scalar and from a [1] row
  auto m = shared(tt(DType::F32, {2, 2}), std::vector<float>{1, 2, 3, 4});
  auto rb = run(PrimId::Set, 1,
                {m, shared(tt(DType::I64), std::vector<int64_t>{1}),
                 shared(tt(DType::F32), std::vector<float>{9})});
  CHECK(rb.out<float>() == std::vector<float>{1, 2, 9, 9});
  auto rr = run(PrimId::Set, 1,
                {m, shared(tt(DType::I64), std::vector<int64_t>{0}),
                 shared(tt(DType::F32, {2}), std::vector<float>{7, 8})});
  CHECK(rr.out<float>() == std::vector<float>{7, 8, 3, 4});
}

TEST_CASE("set in place through a gather list") {
  const TensorType v = tt(DType::I64, {3}), s = tt(DType::I64);
  std::vector<int64_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<uint32_t> active = {2, 0};
  std::vector<int64_t> i = {1}, val = {0, -1};
  ArgView args[3] = {{x.data(), Access::Gather, active.data(), &v},
                     {i.data(), Access::Shared, nullptr, &s},
                     {val.data(), Access::Dense, nullptr, &s}};
  OutView o{x.data(), Access::Gather, active.data(), &v};
  PrimAttrs attrs;
  KernelCall call{2, args, 3, &o, 1, &attrs};
  KernelError err;
  REQUIRE(kernel_for(PrimId::Set)(call, &err));
  CHECK(x == std::vector<int64_t>{1, -1, 3, 4, 5, 6, 7, 0, 9});
}

TEST_CASE("size, reshape, zeros, fill, iota") {
  auto sz = run(PrimId::Size, 2, {dense(tt(DType::Bool, {3, 4}), std::vector<uint8_t>(24, 0))});
  CHECK(sz.out<int64_t>() == std::vector<int64_t>{12, 12});
  auto sz0 = run(PrimId::Size, 1, {dense(tt(DType::F64, {0, 4}), std::vector<double>{})});
  CHECK(sz0.out<int64_t>() == std::vector<int64_t>{0});

  PrimAttrs shape;
  shape.shape = Shape{3, -1};
  auto rs = run(PrimId::Reshape, 2,
                {gather(tt(DType::F64, {2, 3}),
                        std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 0})},
                shape);
  CHECK(rs.types[0] == tt(DType::F64, {3, 2}));
  CHECK(rs.out<double>() == std::vector<double>{7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6});
  shape.shape = Shape{2};
  auto rd = run(PrimId::Reshape, 2,
                {dense(tt(DType::I32, {1, 2}), std::vector<int32_t>{1, 2, 3, 4})}, shape);
  CHECK(rd.out<int32_t>() == std::vector<int32_t>{1, 2, 3, 4});

  PrimAttrs z;
  z.shape = Shape{2};
  z.dtype = DType::I32;
  CHECK(run(PrimId::Zeros, 2, {}, z).out<int32_t>() == std::vector<int32_t>{0, 0, 0, 0});
  CHECK(run(PrimId::Zeros, 3, {}).out<double>() == std::vector<double>{0, 0, 0});

  PrimAttrs fs;
  fs.shape = Shape{2, 2};
  auto fl = run(PrimId::Fill, 2, {dense(tt(DType::F64), std::vector<double>{1.5, -2})}, fs);
  CHECK(fl.out<double>() == std::vector<double>{1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2});
  fs.shape = Shape{3};
  auto fb = run(PrimId::Fill, 1, {shared(tt(DType::Bool), std::vector<uint8_t>{1})}, fs);
  CHECK(fb.out<uint8_t>() == std::vector<uint8_t>{1, 1, 1});

  PrimAttrs n;
  n.n = 4;
  CHECK(run(PrimId::Iota, 2, {}, n).out<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3});
  n.n = 0;
  CHECK(run(PrimId::Iota, 2, {}, n).outs[0].empty());
}
