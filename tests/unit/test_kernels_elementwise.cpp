// Elementwise kernels: the semantics of docs/language.md, "Integer and float semantics" at the
// edges (floor div/mod signs, wrapping at the integer bounds, errors and their lanes, NaN,
// rounding, casts, broadcasting, zero-size events).
#include <cmath>
#include <limits>

#include "kernel_harness.h"

using namespace ab;
using namespace ab::test;

namespace {
constexpr int64_t I64_MIN = std::numeric_limits<int64_t>::min();
constexpr int64_t I64_MAX = std::numeric_limits<int64_t>::max();
constexpr int32_t I32_MIN = std::numeric_limits<int32_t>::min();
constexpr int32_t I32_MAX = std::numeric_limits<int32_t>::max();
const double NaN = std::numeric_limits<double>::quiet_NaN();
const double Inf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("integer div and mod floor like Python, i64 and i32") {
  std::vector<int64_t> a = {7, -7, 7, -7, 0, 6, -6};
  std::vector<int64_t> b = {2, 2, -2, -2, 3, -3, 4};
  CHECK(binary<int64_t>(PrimId::Div, DType::I64, a, b) ==
        std::vector<int64_t>{3, -4, -4, 3, 0, -2, -2});
  CHECK(binary<int64_t>(PrimId::Mod, DType::I64, a, b) ==
        std::vector<int64_t>{1, 1, -1, -1, 0, 0, 2});
  std::vector<int32_t> a32 = {7, -7, 7, -7, -1};
  std::vector<int32_t> b32 = {2, 2, -2, -2, 5};
  CHECK(binary<int32_t>(PrimId::Div, DType::I32, a32, b32) ==
        std::vector<int32_t>{3, -4, -4, 3, -1});
  CHECK(binary<int32_t>(PrimId::Mod, DType::I32, a32, b32) ==
        std::vector<int32_t>{1, 1, -1, -1, 4});
}

TEST_CASE("div(MIN, -1) is MIN, mod(MIN, -1) is 0") {
  CHECK(binary<int64_t>(PrimId::Div, DType::I64, {I64_MIN}, {-1}) == std::vector<int64_t>{I64_MIN});
  CHECK(binary<int64_t>(PrimId::Mod, DType::I64, {I64_MIN}, {-1}) == std::vector<int64_t>{0});
  CHECK(binary<int32_t>(PrimId::Div, DType::I32, {I32_MIN}, {-1}) == std::vector<int32_t>{I32_MIN});
  CHECK(binary<int32_t>(PrimId::Mod, DType::I32, {I32_MIN}, {-1}) == std::vector<int32_t>{0});
  CHECK(binary<int64_t>(PrimId::Div, DType::I64, {I64_MIN}, {2}) ==
        std::vector<int64_t>{I64_MIN / 2});
}

TEST_CASE("float div is true division; float mod has the divisor's sign") {
  CHECK(binary<double>(PrimId::Div, DType::F64, {7, -7}, {2, 2}) == std::vector<double>{3.5, -3.5});
  auto m = binary<double>(PrimId::Mod, DType::F64, {7.5, -7.5, 7.5, -7.5, 6.0, -6.0, 1.0},
                          {2, 2, -2, -2, 3, 3, 0});
  CHECK(m[0] == 1.5);
  CHECK(m[1] == 0.5);
  CHECK(m[2] == -0.5);
  CHECK(m[3] == -1.5);
  CHECK((m[4] == 0.0 && !std::signbit(m[4])));
  CHECK((m[5] == 0.0 && !std::signbit(m[5])));  // zero takes the divisor's sign
  CHECK(std::isnan(m[6]));
  auto m32 = binary<float>(PrimId::Mod, DType::F32, {-1.0f, 3.0f}, {3.0f, -0.5f});
  CHECK(m32[0] == doctest::Approx(2.0f));
  CHECK((m32[1] == 0.0f && std::signbit(m32[1])));
  auto d0 = binary<double>(PrimId::Div, DType::F64, {1, -1, 0}, {0, 0, 0});
  CHECK(d0[0] == Inf);
  CHECK(d0[1] == -Inf);
  CHECK(std::isnan(d0[2]));
}

TEST_CASE("integer division and mod by zero fail at the first lane") {
  RunResult r = run(PrimId::Div, 5,
                    {dense(tt(DType::I64), std::vector<int64_t>{1, 2, 3, 4, 5}),
                     dense(tt(DType::I64), std::vector<int64_t>{1, 1, 0, 1, 0})});
  CHECK_FALSE(r.ok);
  CHECK(r.err.lane == 2);
  CHECK(r.err.message == "integer division by zero");
  RunResult m = run(PrimId::Mod, 3,
                    {dense(tt(DType::I32), std::vector<int32_t>{1, 2, 3}),
                     shared(tt(DType::I32), std::vector<int32_t>{0})});
  CHECK_FALSE(m.ok);
  CHECK(m.err.lane == 0);
  CHECK(m.err.message == "integer modulo by zero");
  // Vector events: the lane, not the element, is reported.
  RunResult v = run(PrimId::Div, 3,
                    {dense(tt(DType::I64, {2}), std::vector<int64_t>{1, 2, 3, 4, 5, 6}),
                     dense(tt(DType::I64, {2}), std::vector<int64_t>{1, 1, 1, 1, 1, 0})});
  CHECK_FALSE(v.ok);
  CHECK(v.err.lane == 2);
  RunResult g = run(PrimId::Div, 3,
                    {gather(tt(DType::I64, {2}), std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 1, 0}),
                     shared(tt(DType::I64, {2}), std::vector<int64_t>{1, 0})});
  CHECK_FALSE(g.ok);
  CHECK(g.err.lane == 0);
}

TEST_CASE("integer add, sub, mul, neg, abs wrap at the bounds") {
  CHECK(binary<int64_t>(PrimId::Add, DType::I64, {I64_MAX, I64_MIN}, {1, -1}) ==
        std::vector<int64_t>{I64_MIN, I64_MAX});
  CHECK(binary<int64_t>(PrimId::Sub, DType::I64, {I64_MIN}, {1}) == std::vector<int64_t>{I64_MAX});
  CHECK(binary<int64_t>(PrimId::Mul, DType::I64, {I64_MAX, int64_t(1) << 62}, {2, 4}) ==
        std::vector<int64_t>{-2, 0});
  CHECK(binary<int32_t>(PrimId::Add, DType::I32, {I32_MAX}, {1}) == std::vector<int32_t>{I32_MIN});
  CHECK(binary<int32_t>(PrimId::Mul, DType::I32, {65536, I32_MIN}, {65536, -1}) ==
        std::vector<int32_t>{0, I32_MIN});
  CHECK(unary<int64_t>(PrimId::Neg, DType::I64, {I64_MIN, 5}) == std::vector<int64_t>{I64_MIN, -5});
  CHECK(unary<int32_t>(PrimId::Abs, DType::I32, {I32_MIN, -3, 4}) ==
        std::vector<int32_t>{I32_MIN, 3, 4});
  CHECK(unary<int64_t>(PrimId::Abs, DType::I64, {I64_MIN}) == std::vector<int64_t>{I64_MIN});
}

TEST_CASE("integer pow wraps; a negative exponent is an error") {
  CHECK(binary<int64_t>(PrimId::Pow, DType::I64, {2, 3, 0, -2, 2, 7}, {10, 0, 0, 3, 64, 1}) ==
        std::vector<int64_t>{1024, 1, 1, -8, 0, 7});
  CHECK(binary<int32_t>(PrimId::Pow, DType::I32, {3}, {21}) ==
        std::vector<int32_t>{static_cast<int32_t>(static_cast<uint32_t>(10460353203ull))});
  RunResult r = run(PrimId::Pow, 3,
                    {dense(tt(DType::I64), std::vector<int64_t>{2, 2, 2}),
                     dense(tt(DType::I64), std::vector<int64_t>{1, -1, -2})});
  CHECK_FALSE(r.ok);
  CHECK(r.err.lane == 1);
  CHECK(r.err.message == "integer pow with negative exponent -1");
  CHECK(binary<double>(PrimId::Pow, DType::F64, {2.0, 4.0}, {-1.0, 0.5}) ==
        std::vector<double>{0.5, 2.0});
}

TEST_CASE("min and max propagate NaN") {
  auto mn = binary<double>(PrimId::Min, DType::F64, {1, NaN, 2, -Inf}, {NaN, 1, 3, 0});
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mn[1]));
  CHECK(mn[2] == 2);
  CHECK(mn[3] == -Inf);
  auto mx = binary<float>(PrimId::Max, DType::F32, {1, std::nanf(""), 2}, {std::nanf(""), 1, 3});
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 3);
  CHECK(binary<int64_t>(PrimId::Max, DType::I64, {I64_MIN, 5}, {0, -5}) ==
        std::vector<int64_t>{0, 5});
}

TEST_CASE("float math") {
  CHECK(unary<double>(PrimId::Round, DType::F64, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6}) ==
        std::vector<double>{0, 2, 2, -0.0, -2, 2, -3});
  CHECK(unary<float>(PrimId::Round, DType::F32, {0.5f, 1.5f, 2.5f}) == std::vector<float>{0, 2, 2});
  CHECK(unary<double>(PrimId::Floor, DType::F64, {-1.5, 1.5}) == std::vector<double>{-2, 1});
  CHECK(unary<double>(PrimId::Ceil, DType::F64, {-1.5, 1.5}) == std::vector<double>{-1, 2});
  auto s = unary<double>(PrimId::Sigmoid, DType::F64, {0, 1000, -1000, 2, -2});
  CHECK(s[0] == 0.5);
  CHECK(s[1] == 1.0);
  CHECK(s[2] == 0.0);
  CHECK(s[3] == doctest::Approx(1 / (1 + std::exp(-2.0))));
  CHECK(s[4] == doctest::Approx(1 - s[3]));
  CHECK(!std::isnan(unary<float>(PrimId::Sigmoid, DType::F32, {-200.0f})[0]));
  CHECK(unary<double>(PrimId::Log1p, DType::F64, {1e-20})[0] == 1e-20);
  CHECK(unary<double>(PrimId::Expm1, DType::F64, {1e-20})[0] == 1e-20);
  auto lg = unary<double>(PrimId::Log, DType::F64, {0, -1, 1});
  CHECK(lg[0] == -Inf);
  CHECK(std::isnan(lg[1]));
  CHECK(lg[2] == 0);
  CHECK(unary<double>(PrimId::Sqrt, DType::F64, {4})[0] == 2);
  CHECK(unary<double>(PrimId::Exp, DType::F64, {0})[0] == 1);
  CHECK(unary<double>(PrimId::Sin, DType::F64, {0})[0] == 0);
  CHECK(unary<double>(PrimId::Cos, DType::F64, {0})[0] == 1);
  CHECK(unary<double>(PrimId::Tan, DType::F64, {0})[0] == 0);
  CHECK(unary<double>(PrimId::Tanh, DType::F64, {1e9})[0] == 1);
  CHECK(unary<double, uint8_t>(PrimId::IsNan, DType::F64, {NaN, 1, Inf}) ==
        std::vector<uint8_t>{1, 0, 0});
  CHECK(unary<double, uint8_t>(PrimId::IsFinite, DType::F64, {NaN, 1, Inf, -Inf}) ==
        std::vector<uint8_t>{0, 1, 0, 0});
}

TEST_CASE("compare and logic") {
  CHECK(binary<int64_t, uint8_t>(PrimId::Lt, DType::I64, {1, 2, 3}, {2, 2, 2}) ==
        std::vector<uint8_t>{1, 0, 0});
  CHECK(binary<int64_t, uint8_t>(PrimId::Le, DType::I64, {1, 2, 3}, {2, 2, 2}) ==
        std::vector<uint8_t>{1, 1, 0});
  CHECK(binary<int32_t, uint8_t>(PrimId::Gt, DType::I32, {1, 2, 3}, {2, 2, 2}) ==
        std::vector<uint8_t>{0, 0, 1});
  CHECK(binary<int32_t, uint8_t>(PrimId::Ge, DType::I32, {1, 2, 3}, {2, 2, 2}) ==
        std::vector<uint8_t>{0, 1, 1});
  CHECK(binary<double, uint8_t>(PrimId::Eq, DType::F64, {NaN, 1, -0.0}, {NaN, 1, 0.0}) ==
        std::vector<uint8_t>{0, 1, 1});
  CHECK(binary<double, uint8_t>(PrimId::Ne, DType::F64, {NaN, 1}, {NaN, 2}) ==
        std::vector<uint8_t>{1, 1});
  CHECK(binary<uint8_t>(PrimId::Lt, DType::Bool, {0, 1, 0}, {1, 0, 0}) ==
        std::vector<uint8_t>{1, 0, 0});
  std::vector<uint8_t> a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
  CHECK(binary<uint8_t>(PrimId::And, DType::Bool, a, b) == std::vector<uint8_t>{0, 0, 0, 1});
  CHECK(binary<uint8_t>(PrimId::Or, DType::Bool, a, b) == std::vector<uint8_t>{0, 1, 1, 1});
  CHECK(binary<uint8_t>(PrimId::Xor, DType::Bool, a, b) == std::vector<uint8_t>{0, 1, 1, 0});
  CHECK(unary<uint8_t>(PrimId::Not, DType::Bool, {0, 1}) == std::vector<uint8_t>{1, 0});
}

TEST_CASE("select, scalar and broadcast") {
  RunResult r = run(PrimId::Select, 3,
                    {dense(tt(DType::Bool), std::vector<uint8_t>{1, 0, 1}),
                     dense(tt(DType::F64), std::vector<double>{1, 2, 3}),
                     shared(tt(DType::F64), std::vector<double>{-1})});
  REQUIRE(r.ok);
  CHECK(r.out<double>() == std::vector<double>{1, -1, 3});
  // c: bool[2,1], a: i32[3], b: i32 scalar -> i32[2,3], one lane
  RunResult g = run(PrimId::Select, 1,
                    {dense(tt(DType::Bool, {2, 1}), std::vector<uint8_t>{1, 0}),
                     dense(tt(DType::I32, {3}), std::vector<int32_t>{1, 2, 3}),
                     dense(tt(DType::I32), std::vector<int32_t>{9})});
  REQUIRE(g.ok);
  CHECK(g.out<int32_t>() == std::vector<int32_t>{1, 2, 3, 9, 9, 9});
  RunResult bits = run(PrimId::Select, 2,
                       {dense(tt(DType::Bool), std::vector<uint8_t>{0, 1}),
                        dense(tt(DType::Bool), std::vector<uint8_t>{1, 1}),
                        dense(tt(DType::Bool), std::vector<uint8_t>{0, 0})});
  CHECK(bits.out<uint8_t>() == std::vector<uint8_t>{0, 1});
}

TEST_CASE("cast") {
  PrimAttrs to;
  to.dtype = DType::I64;
  RunResult r = run(PrimId::Cast, 6,
                    {dense(tt(DType::F64), std::vector<double>{1.9, -1.9, 0.5, -0.0, 9.2e18,
                                                               -9.223372036854775808e18})},
                    to);
  REQUIRE(r.ok);
  CHECK(r.out<int64_t>() == std::vector<int64_t>{1, -1, 0, 0, 9200000000000000000, I64_MIN});
  RunResult nan =
      run(PrimId::Cast, 3, {dense(tt(DType::F64), std::vector<double>{1, NaN, Inf})}, to);
  CHECK_FALSE(nan.ok);
  CHECK(nan.err.lane == 1);
  CHECK(nan.err.message == "cannot cast nan to i64");
  RunResult big = run(PrimId::Cast, 1,
                      {dense(tt(DType::F64), std::vector<double>{9.223372036854775808e18})}, to);
  CHECK_FALSE(big.ok);
  CHECK(big.err.message == "cannot cast 9223372036854775808 to i64: out of range");
  to.dtype = DType::I32;
  RunResult i32 =
      run(PrimId::Cast, 3,
          {dense(tt(DType::F32), std::vector<float>{2147483520.0f, -2147483648.0f, 2.5f})}, to);
  REQUIRE(i32.ok);
  CHECK(i32.out<int32_t>() == std::vector<int32_t>{2147483520, I32_MIN, 2});
  RunResult i32o =
      run(PrimId::Cast, 2,
          {dense(tt(DType::F64), std::vector<double>{-2147483648.9, -2147483649.0})}, to);
  CHECK_FALSE(i32o.ok);
  CHECK(i32o.err.lane == 1);
  RunResult inf32 = run(PrimId::Cast, 1, {dense(tt(DType::F64), std::vector<double>{-Inf})}, to);
  CHECK_FALSE(inf32.ok);
  // Narrowing integers wraps (NumPy astype).
  RunResult nar =
      run(PrimId::Cast, 2,
          {dense(tt(DType::I64), std::vector<int64_t>{(int64_t(1) << 32) + 5, -1})}, to);
  CHECK(nar.out<int32_t>() == std::vector<int32_t>{5, -1});
  to.dtype = DType::Bool;
  RunResult tb =
      run(PrimId::Cast, 4, {dense(tt(DType::F64), std::vector<double>{0.0, -0.0, NaN, 0.1})}, to);
  CHECK(tb.out<uint8_t>() == std::vector<uint8_t>{0, 0, 1, 1});
  RunResult ib = run(PrimId::Cast, 3, {dense(tt(DType::I32), std::vector<int32_t>{0, -7, 2})}, to);
  CHECK(ib.out<uint8_t>() == std::vector<uint8_t>{0, 1, 1});
  to.dtype = DType::F64;
  RunResult bf = run(PrimId::Cast, 2, {dense(tt(DType::Bool), std::vector<uint8_t>{1, 0})}, to);
  CHECK(bf.out<double>() == std::vector<double>{1.0, 0.0});
  to.dtype = DType::F32;
  RunResult ff = run(PrimId::Cast, 2, {dense(tt(DType::F64), std::vector<double>{1e300, 0.1})}, to);
  CHECK(ff.out<float>() == std::vector<float>{std::numeric_limits<float>::infinity(), 0.1f});
}

TEST_CASE("broadcasting: scalar with vector, [2,1] with [3]") {
  RunResult r = run(PrimId::Add, 2,
                    {dense(tt(DType::I64), std::vector<int64_t>{10, 20}),
                     dense(tt(DType::I64, {3}), std::vector<int64_t>{1, 2, 3, 4, 5, 6})});
  REQUIRE(r.ok);
  CHECK(r.types[0] == tt(DType::I64, {3}));
  CHECK(r.out<int64_t>() == std::vector<int64_t>{11, 12, 13, 24, 25, 26});
  RunResult b = run(PrimId::Sub, 2,
                    {dense(tt(DType::F64, {2, 1}), std::vector<double>{10, 20, 30, 40}),
                     shared(tt(DType::F64, {3}), std::vector<double>{1, 2, 3})});
  REQUIRE(b.ok);
  CHECK(b.out<double>() == std::vector<double>{9, 8, 7, 19, 18, 17, 29, 28, 27, 39, 38, 37});
  // [3,1] with [1,2] -> [3,2], gathered lanes
  RunResult g = run(PrimId::Mul, 2,
                    {gather(tt(DType::I32, {3, 1}), std::vector<int32_t>{0, 0, 0, 1, 2, 3}, {1, 0}),
                     dense(tt(DType::I32, {1, 2}), std::vector<int32_t>{1, 10, 2, 20})});
  REQUIRE(g.ok);
  CHECK(g.out<int32_t>() == std::vector<int32_t>{1, 10, 2, 20, 3, 30, 0, 0, 0, 0, 0, 0});
  // same-shape vectors, dense: the flattened path
  RunResult f = run(PrimId::Max, 2,
                    {dense(tt(DType::F64, {2}), std::vector<double>{1, 5, NaN, 0}),
                     shared(tt(DType::F64), std::vector<double>{2})});
  auto fv = f.out<double>();
  CHECK(fv[0] == 2);
  CHECK(fv[1] == 5);
  CHECK(std::isnan(fv[2]));
  CHECK(fv[3] == 2);
}

TEST_CASE("zero-size events and zero lanes") {
  RunResult r = run(PrimId::Add, 3,
                    {dense(tt(DType::F64, {0}), std::vector<double>{}),
                     shared(tt(DType::F64), std::vector<double>{1})});
  CHECK(r.ok);
  CHECK(r.outs[0].empty());
  RunResult d = run(PrimId::Div, 2,
                    {dense(tt(DType::I64, {2, 0}), std::vector<int64_t>{}),
                     dense(tt(DType::I64, {1}), std::vector<int64_t>{0, 0})});
  CHECK(d.ok);  // no elements, so no division by zero
  RunResult z = run(PrimId::Div, 0,
                    {dense(tt(DType::I64), std::vector<int64_t>{}),
                     shared(tt(DType::I64), std::vector<int64_t>{0})});
  CHECK(z.ok);
}

TEST_CASE("div and mod by a shared power of two (shift path) agree with the general path") {
  std::vector<int64_t> a = {7, -7, 0, -1, 1, I64_MIN, I64_MAX, -8, 8, -9};
  for (int64_t d : {int64_t(1), int64_t(2), int64_t(8), int64_t(1) << 62}) {
    CAPTURE(d);
    std::vector<int64_t> ds(a.size(), d);
    auto fast_div =
        run(PrimId::Div, static_cast<int64_t>(a.size()),
            {dense(tt(DType::I64), a), shared(tt(DType::I64), std::vector<int64_t>{d})});
    auto fast_mod =
        run(PrimId::Mod, static_cast<int64_t>(a.size()),
            {dense(tt(DType::I64), a), shared(tt(DType::I64), std::vector<int64_t>{d})});
    CHECK(fast_div.out<int64_t>() == binary<int64_t>(PrimId::Div, DType::I64, a, ds));
    CHECK(fast_mod.out<int64_t>() == binary<int64_t>(PrimId::Mod, DType::I64, a, ds));
  }
  std::vector<int32_t> a32 = {7, -7, I32_MIN, I32_MAX, -1};
  auto d32 = run(PrimId::Div, 5,
                 {dense(tt(DType::I32), a32), shared(tt(DType::I32), std::vector<int32_t>{4})});
  CHECK(d32.out<int32_t>() == std::vector<int32_t>{1, -2, I32_MIN / 4, I32_MAX / 4, -1});
  auto m32 = run(PrimId::Mod, 5,
                 {gather(tt(DType::I32), a32, {4, 3, 2, 1, 0}),
                  shared(tt(DType::I32), std::vector<int32_t>{4})});
  CHECK(m32.out<int32_t>() == std::vector<int32_t>{3, 3, 0, 1, 3});
  // negative powers of two and zero still take the general path
  CHECK(run(PrimId::Div, 1,
            {dense(tt(DType::I64), std::vector<int64_t>{-7}),
             shared(tt(DType::I64), std::vector<int64_t>{-2})})
            .out<int64_t>()[0] == 3);
  CHECK_FALSE(run(PrimId::Mod, 1,
                  {dense(tt(DType::I64), std::vector<int64_t>{-7}),
                   shared(tt(DType::I64), std::vector<int64_t>{0})})
                  .ok);
}

TEST_CASE("broadcasting of rank-3 and rank-2 events against an index-by-index reference") {
  // a: [2,1,3], b: [4,1] -> [2,4,3]; two lanes, a gathered, b dense
  std::vector<int64_t> a(2 * 6), b(2 * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int64_t>(i * 10);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int64_t>(i);
  auto r = run(PrimId::Sub, 2,
               {gather(tt(DType::I64, {2, 1, 3}), a, {1, 0}), dense(tt(DType::I64, {4, 1}), b)});
  REQUIRE(r.ok);
  CHECK(r.types[0] == tt(DType::I64, {2, 4, 3}));
  auto got = r.out<int64_t>();
  for (int64_t lane = 0; lane < 2; ++lane) {
    int64_t slot = lane == 0 ? 1 : 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 3; ++k) {
          int64_t want = a[slot * 6 + i * 3 + k] - b[lane * 4 + j];
          CHECK(got[lane * 24 + i * 12 + j * 3 + k] == want);
        }
  }
}

TEST_CASE("set with a value broadcast along an inner dimension") {
  // x: [2,2,3], x[1] = v with v: [2,1]
  std::vector<double> x(12, 0.0);
  auto r =
      run(PrimId::Set, 1,
          {dense(tt(DType::F64, {2, 2, 3}), x), shared(tt(DType::I64), std::vector<int64_t>{1}),
           shared(tt(DType::F64, {2, 1}), std::vector<double>{5, 6})});
  REQUIRE(r.ok);
  CHECK(r.out<double>() == std::vector<double>{0, 0, 0, 0, 0, 0, 5, 5, 5, 6, 6, 6});
}
