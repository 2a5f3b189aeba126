// The primitives for simulations (docs/language.md, "Primitives"): the float math functions
// against the C library and Python's math module, the samplers' moments and
// probabilities over 10^5 seeded draws (deterministic: a seed gives the same
// numbers on every run, so these cannot flake), fold_in, the "shaped like"
// forms, the type rules' messages, and thread_index under every VM, lanes
// and threads (through the CLI).
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "cli_harness.h"
#include "kernel_harness.h"
#include "vm/kernels/philox.h"

using namespace ab;
using namespace ab::test;

namespace {

std::vector<double> apply1(PrimId op, const std::vector<double>& xs) {
  auto r = run(op, static_cast<int64_t>(xs.size()), {dense(tt(DType::F64), xs)});
  REQUIRE(r.ok);
  return r.out<double>();
}

// Sample moments.
struct Moments {
  double mean = 0, var = 0;
};
template <class T>
Moments moments(const std::vector<T>& v) {
  double s = 0, s2 = 0;
  for (T x : v) s += static_cast<double>(x);
  const double n = static_cast<double>(v.size()), m = s / n;
  for (T x : v) s2 += (static_cast<double>(x) - m) * (static_cast<double>(x) - m);
  return {m, s2 / (n - 1)};
}

constexpr int64_t kDraws = 100000;

}  // namespace

TEST_CASE("float math: the C library's values, and Python's math module's to an ulp or two") {
  const std::vector<double> xs = {0.5, 2.0, 4.5};
  struct Case {
    PrimId op;
    double (*c)(double);
    std::vector<double> python;  // math.<name>(x) for x in xs (asin, acos: x / 5 for 2, 4.5)
  };
  const std::vector<Case> cases = {
      {PrimId::Erf,
       [](double x) { return std::erf(x); },
       {0.5204998778130465, 0.9953222650189527, 0.9999999998033839}},
      {PrimId::Erfc,
       [](double x) { return std::erfc(x); },
       {0.4795001221869535, 0.004677734981047265, 1.9661604415428873e-10}},
      {PrimId::Lgamma,
       [](double x) { return std::lgamma(x); },
       {0.5723649429247004, 0.0, 2.453736570842443}},
      {PrimId::Log2, [](double x) { return std::log2(x); }, {-1.0, 1.0, 2.169925001442312}},
      {PrimId::Log10,
       [](double x) { return std::log10(x); },
       {-0.3010299956639812, 0.3010299956639812, 0.6532125137753437}},
      {PrimId::Cbrt,
       [](double x) { return std::cbrt(x); },
       {0.7937005259840998, 1.2599210498948734, 1.6509636244473134}},
      {PrimId::Sinh,
       [](double x) { return std::sinh(x); },
       {0.5210953054937474, 3.626860407847019, 45.003011151991785}},
      {PrimId::Cosh,
       [](double x) { return std::cosh(x); },
       {1.1276259652063807, 3.7621956910836314, 45.014120148530026}},
      {PrimId::Atan,
       [](double x) { return std::atan(x); },
       {0.4636476090008061, 1.1071487177940904, 1.3521273809209546}},
  };
  for (const Case& c : cases) {
    CAPTURE(prim_info(c.op).name);
    std::vector<double> got = apply1(c.op, xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      CHECK(got[i] == c.c(xs[i]));
      CHECK(got[i] == doctest::Approx(c.python[i]).epsilon(1e-15));
    }
  }
  const std::vector<double> unit = {0.5, 0.4, 0.9};
  std::vector<double> as = apply1(PrimId::Asin, unit), ac = apply1(PrimId::Acos, unit);
  const double py_asin[] = {0.5235987755982989, 0.41151684606748806, 1.1197695149986342};
  const double py_acos[] = {1.0471975511965979, 1.1592794807274085, 0.45102681179626236};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(as[i] == std::asin(unit[i]));
    CHECK(ac[i] == std::acos(unit[i]));
    CHECK(as[i] == doctest::Approx(py_asin[i]).epsilon(1e-15));
    CHECK(ac[i] == doctest::Approx(py_acos[i]).epsilon(1e-15));
  }
  // Edge values: poles, domains, signs.
  CHECK(apply1(PrimId::Lgamma, {0.0})[0] == INFINITY);
  CHECK(apply1(PrimId::Lgamma, {-2.0})[0] == INFINITY);
  CHECK(apply1(PrimId::Lgamma, {-0.5})[0] == doctest::Approx(1.265512123484645).epsilon(1e-15));
  CHECK(std::isnan(apply1(PrimId::Asin, {1.5})[0]));
  CHECK(apply1(PrimId::Cbrt, {-8.0})[0] == -2.0);
  CHECK(apply1(PrimId::Log2, {0.0})[0] == -INFINITY);
  // Two operands, broadcasting and f32.
  auto a2 = run(PrimId::Atan2, 2,
                {dense(tt(DType::F64), std::vector<double>{1.0, -0.0}),
                 shared(tt(DType::F64), std::vector<double>{-1.0})});
  CHECK(a2.out<double>() == std::vector<double>{2.356194490192345, -3.141592653589793});
  auto h = run(PrimId::Hypot, 1,
               {dense(tt(DType::F64, {2}), std::vector<double>{3e200, 3.0}),
                dense(tt(DType::F64), std::vector<double>{4e200})});
  CHECK(h.out<double>() == std::vector<double>{std::hypot(3e200, 4e200), std::hypot(3.0, 4e200)});
  CHECK(h.out<double>()[0] == doctest::Approx(5e200));
  auto f = run(PrimId::Erf, 1, {dense(tt(DType::F32), std::vector<float>{0.5f})});
  CHECK(f.types[0].dtype == DType::F32);
  CHECK(f.out<float>()[0] == std::erf(0.5f));
}

TEST_CASE("float math type rules: float operands, equal dtypes") {
  auto t = [](PrimId op, std::vector<Type> args) { return prim_result_type(op, args, {}); };
  Type f64 = Type::scalar(DType::F64), f32 = Type::scalar(DType::F32),
       i64 = Type::scalar(DType::I64);
  CHECK(t(PrimId::Erf, {i64}).error ==
        "'erf' needs a float operand, got i64; convert it with "
        "cast(x, dtype=f64)");
  CHECK(t(PrimId::Atan2, {f64, i64}).error.find("'atan2' needs a float operand, got i64") == 0);
  CHECK(t(PrimId::Hypot, {f64, f32}).error.find("different dtypes f64 and f32") !=
        std::string::npos);
  CHECK(*t(PrimId::Atan2, {Type::tensor_of(DType::F32, {3}), f32}).type ==
        Type::tensor_of(DType::F32, {3}));
}

TEST_CASE("exponential: mean 1, variance 1, positive; shape= or shaped like a value") {
  PrimAttrs attrs;
  attrs.shape = Shape{kDraws};
  auto r = run(PrimId::Exponential, 1, {dense(tt(DType::I64), std::vector<int64_t>{2024})}, attrs);
  std::vector<double> x = r.out<double>();
  int64_t negative = 0;
  for (double v : x) negative += !(v >= 0 && std::isfinite(v));
  CHECK(negative == 0);
  Moments m = moments(x);
  const double se = 1.0 / std::sqrt(static_cast<double>(kDraws));
  CHECK(std::abs(m.mean - 1.0) < 5 * se);
  CHECK(std::abs(m.var - 1.0) < 5 * std::sqrt(8.0) * se);  // var of the variance: (m4 - 1)/n = 8/n
  // Shaped like a second operand (its dtype and values do not matter).
  auto like = run(PrimId::Exponential, 1,
                  {dense(tt(DType::I64), std::vector<int64_t>{2024}),
                   dense(tt(DType::I32, {2, 2}), std::vector<int32_t>{9, 9, 9, 9})});
  REQUIRE(like.types[0] == tt(DType::F64, {2, 2}));
  CHECK(like.out<double>() == std::vector<double>(x.begin(), x.begin() + 4));
  auto n = run(PrimId::Normal, 1,
               {dense(tt(DType::I64), std::vector<int64_t>{5}),
                dense(tt(DType::F64, {3}), std::vector<double>{0, 0, 0})});
  std::vector<double> direct(3);
  random_normal(5, direct.data(), 3);
  CHECK(n.out<double>() == direct);
  auto u = run(PrimId::Uniform, 1,
               {dense(tt(DType::I64), std::vector<int64_t>{5}),
                dense(tt(DType::Bool, {3}), std::vector<uint8_t>{1, 0, 1})});
  random_uniform(5, direct.data(), 3);
  CHECK(u.out<double>() == direct);
  PrimAttrs both;
  both.shape = Shape{3};
  PrimTypeResult bad =
      prim_result_type(PrimId::Uniform, {Type::scalar(DType::I64), Type::scalar(DType::F64)}, both);
  CHECK(bad.error == "'uniform' takes its shape from shape= or from a second operand, not both");
}

TEST_CASE("gamma: mean and variance alpha, for alpha below, at and above 1; f32") {
  for (double alpha : {0.3, 1.0, 2.5, 30.0}) {
    CAPTURE(alpha);
    auto r = run(PrimId::Gamma, 1,
                 {dense(tt(DType::I64), std::vector<int64_t>{77}),
                  dense(tt(DType::F64, {kDraws}), std::vector<double>(kDraws, alpha))});
    REQUIRE(r.ok);
    std::vector<double> x = r.out<double>();
    int64_t bad = 0;
    for (double v : x) bad += !(v >= 0 && std::isfinite(v));
    CHECK(bad == 0);
    Moments m = moments(x);
    const double n = static_cast<double>(kDraws);
    // Standard errors: mean sqrt(alpha/n); variance alpha sqrt((2 + 6/alpha)/n).
    CHECK(std::abs(m.mean - alpha) < 5 * std::sqrt(alpha / n));
    CHECK(std::abs(m.var - alpha) < 5 * alpha * std::sqrt((2 + 6 / alpha) / n));
  }
  auto f = run(PrimId::Gamma, 2,
               {dense(tt(DType::I64), std::vector<int64_t>{3, 4}),
                shared(tt(DType::F32, {2}), std::vector<float>{0.5f, 8.0f})});
  REQUIRE(f.types[0] == tt(DType::F32, {2}));
  CHECK(f.out<float>()[3] == static_cast<float>(random_gamma(4, 1, 8.0)));
  // Element e of a lane is the element-e draw of its key, whatever the layout.
  CHECK(f.out<float>()[0] == static_cast<float>(random_gamma(3, 0, 0.5)));
}

TEST_CASE("poisson: mean and variance lam, probabilities, both algorithms") {
  for (double lam : {0.5, 4.0, 9.99, 10.0, 37.5, 1000.0}) {
    CAPTURE(lam);
    auto r = run(PrimId::Poisson, 1,
                 {dense(tt(DType::I64), std::vector<int64_t>{-5}),
                  dense(tt(DType::F64, {kDraws}), std::vector<double>(kDraws, lam))});
    REQUIRE(r.ok);
    std::vector<int64_t> k = r.out<int64_t>();
    Moments m = moments(k);
    const double n = static_cast<double>(kDraws);
    CHECK(std::abs(m.mean - lam) < 5 * std::sqrt(lam / n));
    CHECK(std::abs(m.var - lam) < 5 * lam * std::sqrt((2 + 1 / lam) / n));
    // The frequency of every value near the mean against the pmf.
    std::map<int64_t, int64_t> count;
    for (int64_t v : k) ++count[v];
    CHECK(count.begin()->first >= 0);
    for (int64_t v = static_cast<int64_t>(lam) - 2; v <= static_cast<int64_t>(lam) + 2; ++v) {
      if (v < 0) continue;
      CAPTURE(v);
      const double pmf = std::exp(v * std::log(lam) - lam - std::lgamma(v + 1.0));
      const double freq = static_cast<double>(count[v]) / n;
      CHECK(std::abs(freq - pmf) < 5 * std::sqrt(pmf * (1 - pmf) / n) + 1e-9);
    }
  }
  auto zero = run(PrimId::Poisson, 3,
                  {dense(tt(DType::I64), std::vector<int64_t>{1, 2, 3}),
                   shared(tt(DType::F32), std::vector<float>{0.0f})});
  CHECK(zero.types[0] == tt(DType::I64));
  CHECK(zero.out<int64_t>() == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("gamma and poisson: bad parameters are runtime errors naming the first failing lane") {
  auto g = run(PrimId::Gamma, 3,
               {shared(tt(DType::I64), std::vector<int64_t>{1}),
                dense(tt(DType::F64), std::vector<double>{1.0, 0.0, -1.0})});
  CHECK_FALSE(g.ok);
  CHECK(g.err.lane == 1);
  CHECK(g.err.message == "'gamma' needs a finite alpha > 0, got 0");
  auto p = run(PrimId::Poisson, 3,
               {shared(tt(DType::I64), std::vector<int64_t>{1}),
                dense(tt(DType::F64), std::vector<double>{1.0, 2.0, NAN})});
  CHECK_FALSE(p.ok);
  CHECK(p.err.lane == 2);
  CHECK(p.err.message == "'poisson' needs 0 <= lam <= 1e15, got nan");
}

TEST_CASE("bernoulli: frequency p; p <= 0 never, p >= 1 always") {
  auto r = run(PrimId::Bernoulli, 1,
               {dense(tt(DType::I64), std::vector<int64_t>{8}),
                dense(tt(DType::F64, {kDraws}), std::vector<double>(kDraws, 0.3))});
  REQUIRE(r.types[0] == tt(DType::Bool, {kDraws}));
  std::vector<uint8_t> b = r.out<uint8_t>();
  Moments m = moments(b);
  CHECK(std::abs(m.mean - 0.3) < 5 * std::sqrt(0.3 * 0.7 / kDraws));
  auto edges = run(PrimId::Bernoulli, 2,
                   {dense(tt(DType::I64), std::vector<int64_t>{1, 2}),
                    shared(tt(DType::F32, {3}), std::vector<float>{0.0f, 1.0f, -2.0f})});
  CHECK(edges.out<uint8_t>() == std::vector<uint8_t>{0, 1, 0, 0, 1, 0});
}

TEST_CASE("categorical: frequencies softmax(logits), -inf never drawn, one draw per row") {
  // Weights 1, 2, 3 and 0: probabilities 1/6, 2/6, 3/6, 0.
  std::vector<double> logits;
  const int64_t rows = kDraws;
  for (int64_t r = 0; r < rows; ++r)
    for (double l : {0.0, std::log(2.0), std::log(3.0), -HUGE_VAL}) logits.push_back(l + 100.0);
  auto r = run(
      PrimId::Categorical, 1,
      {dense(tt(DType::I64), std::vector<int64_t>{11}), dense(tt(DType::F64, {rows, 4}), logits)});
  REQUIRE(r.types[0] == tt(DType::I64, {rows}));
  std::vector<int64_t> k = r.out<int64_t>();
  int64_t count[4] = {0, 0, 0, 0};
  for (int64_t v : k) {
    REQUIRE(v >= 0);
    REQUIRE(v < 4);
    ++count[v];
  }
  CHECK(count[3] == 0);
  for (int i = 0; i < 3; ++i) {
    const double p = (i + 1) / 6.0, freq = static_cast<double>(count[i]) / rows;
    CHECK(std::abs(freq - p) < 5 * std::sqrt(p * (1 - p) / rows));
  }
  auto bad = run(PrimId::Categorical, 2,
                 {dense(tt(DType::I64), std::vector<int64_t>{1, 2}),
                  dense(tt(DType::F64, {2}), std::vector<double>{0.0, 1.0, -INFINITY, -INFINITY})});
  CHECK_FALSE(bad.ok);
  CHECK(bad.err.lane == 1);
  CHECK(bad.err.message == "'categorical' needs at least one finite logit in each row");
  PrimTypeResult scalar = prim_result_type(
      PrimId::Categorical, {Type::scalar(DType::I64), Type::scalar(DType::F64)}, {});
  CHECK(scalar.error.find("need a last axis of at least one category") != std::string::npos);
}

TEST_CASE("sampler type rules: an i64 key, a float parameter") {
  Type i64 = Type::scalar(DType::I64), i32 = Type::scalar(DType::I32);
  Type f64v = Type::tensor_of(DType::F64, {3});
  CHECK(prim_result_type(PrimId::Gamma, {i32, f64v}, {})
            .error.find("the key of 'gamma' must be an i64 scalar, got i32") == 0);
  CHECK(prim_result_type(PrimId::Poisson, {i64, Type::tensor_of(DType::I64, {3})}, {}).error ==
        "the rate lam of 'poisson' must be a float (f32 or f64), got i64[3]; convert it with "
        "cast(x, dtype=f64)");
  CHECK(*prim_result_type(PrimId::Poisson, {i64, f64v}, {}).type ==
        Type::tensor_of(DType::I64, {3}));
  CHECK(*prim_result_type(PrimId::Bernoulli, {i64, f64v}, {}).type ==
        Type::tensor_of(DType::Bool, {3}));
  CHECK(prim_result_type(PrimId::FoldIn, {i64, Type::scalar(DType::F64)}, {})
            .error.find("the value 'fold_in' folds into the key must be an i32 or i64 scalar") ==
        0);
  CHECK(*prim_result_type(PrimId::FoldIn, {i64, i32}, {}).type == i64);
  CHECK(*prim_result_type(PrimId::ThreadIndex, {}, {}).type == i64);
}

TEST_CASE("fold_in: deterministic, distinct per value, independent of split's keys") {
  CHECK(random_fold_in(3, 7) == random_fold_in(3, 7));
  std::set<int64_t> keys;
  for (int64_t i = -500; i < 10000; ++i) keys.insert(random_fold_in(42, i));
  KeyPair kids = random_split(42);
  keys.insert(kids.first);
  keys.insert(kids.second);
  keys.insert(42);
  CHECK(keys.size() == 10500 + 3);
  // Uniforms of fold_in(k, i) across i: mean 1/2, no correlation between neighbours.
  const int64_t N = 20000;
  std::vector<double> u(N);
  for (int64_t i = 0; i < N; ++i) random_uniform(random_fold_in(9, i), &u[i], 1);
  Moments m = moments(u);
  CHECK(std::abs(m.mean - 0.5) < 5 * std::sqrt(1.0 / 12 / N));
  double c = 0;
  for (int64_t i = 1; i < N; ++i) c += (u[i] - 0.5) * (u[i - 1] - 0.5);
  CHECK(std::abs(c / (N - 1) / (1.0 / 12)) < 5 / std::sqrt(static_cast<double>(N)));
  // i32 and i64 values fold alike.
  auto r = run(PrimId::FoldIn, 2,
               {shared(tt(DType::I64), std::vector<int64_t>{5}),
                dense(tt(DType::I32), std::vector<int32_t>{-1, 6})});
  CHECK(r.out<int64_t>() == std::vector<int64_t>{random_fold_in(5, -1), random_fold_in(5, 6)});
}

TEST_CASE("thread_index and the samplers: the same outputs under every VM, lanes and threads") {
  namespace fs = std::filesystem;
  const std::string prog = R"(func main(seed: i64, lam: f64) {
  i = thread_index()
  key = fold_in(seed, i)
  steps = 0
  while uniform(key) > 0.2 {
    key, k = split(key)
    steps = steps + poisson(k, lam)
  }
  j = thread_index()
  return i, j, steps, gamma(key, [lam, 1.0]), categorical(key, [0.0, lam]), exponential(key, [lam])
}
)";
  const fs::path dir = fs::temp_directory_path() / ("ab_samplers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "p.ab") << prog; }
  std::string lam = "[";
  for (int t = 0; t < 37; ++t) lam += (t ? ", " : "") + std::to_string(0.5 + t % 5);
  const std::string inputs = R"({"seed": 3, "lam": )" + lam + "]}";
  auto go = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", (dir / "p.ab").string(), "--inputs", inputs};
    args.insert(args.end(), extra.begin(), extra.end());
    return ab_test::run_binary(dir, args, std::nullopt, 120);
  };
  ab_test::Proc ref = go({"--vm", "reference"});
  REQUIRE(ref.code == 0);
  std::string iota = "[";
  for (int t = 0; t < 37; ++t) iota += (t ? ", " : "") + std::to_string(t);
  iota += "]";
  CHECK(ref.out.rfind("{\"outputs\": [" + iota + ", " + iota + ", ", 0) == 0);
  for (const char* vm : {"stack", "stackless", "reference"})
    for (std::vector<std::string> extra : {std::vector<std::string>{},
                                           {"--lanes", "4"},
                                           {"--threads", "3"},
                                           {"--threads", "2", "--lanes", "5"},
                                           {"--schedule", "min-pc"},
                                           {"--jit", "off"}}) {
      CAPTURE(vm);
      CAPTURE(extra.size() > 1 ? extra[0] + " " + extra[1] : std::string());
      extra.push_back("--vm");
      extra.push_back(vm);
      ab_test::Proc p = go(extra);
      CHECK(p.code == 0);
      CHECK(p.out == ref.out);
    }
  // The lowered program too.
  ab_test::Proc low =
      ab_test::run_binary(dir, {"lower", (dir / "p.ab").string()}, std::nullopt, 60);
  REQUIRE(low.code == 0);
  { std::ofstream(dir / "l.ab") << low.out; }
  ab_test::Proc lowered = ab_test::run_binary(
      dir, {"run", (dir / "l.ab").string(), "--inputs", "[3, " + lam + "]]", "--lanes", "3"},
      std::nullopt, 120);
  CHECK(lowered.code == 0);
  CHECK(lowered.out == ref.out);
  std::error_code ec;
  fs::remove_all(dir, ec);
}
