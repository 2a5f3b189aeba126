// Kernels of the float-math primitives (exp ... isfinite, erf ... hypot) and
// of `cast`.
// Float math follows the C library (IEEE 754); round is half to even.
// cast: float -> integer truncates toward zero and fails on NaN or a value
// out of range; integer -> narrower integer wraps (NumPy astype);
// bool -> number is 0/1; number -> bool is `!= 0` (NaN is true).
#include <cmath>

#include "vm/kernels/elementwise_impl.h"

namespace ab::kern {

namespace {

#define AB_FLOAT_OP(Name, expr)             \
  template <class T>                        \
  struct Name {                             \
    using R = T;                            \
    static constexpr bool kChecked = false; \
    static T apply(T x) { return expr; }    \
  };
AB_FLOAT_OP(ExpOp, std::exp(x))
AB_FLOAT_OP(LogOp, std::log(x))
AB_FLOAT_OP(Log1pOp, std::log1p(x))
AB_FLOAT_OP(Expm1Op, std::expm1(x))
AB_FLOAT_OP(SqrtOp, std::sqrt(x))
AB_FLOAT_OP(SinOp, std::sin(x))
AB_FLOAT_OP(CosOp, std::cos(x))
AB_FLOAT_OP(TanOp, std::tan(x))
AB_FLOAT_OP(TanhOp, std::tanh(x))
AB_FLOAT_OP(FloorOp, std::floor(x))
AB_FLOAT_OP(CeilOp, std::ceil(x))
AB_FLOAT_OP(RoundOp, std::nearbyint(x))  // default rounding mode: half to even
AB_FLOAT_OP(ErfOp, std::erf(x))
AB_FLOAT_OP(ErfcOp, std::erfc(x))
AB_FLOAT_OP(Log2Op, std::log2(x))
AB_FLOAT_OP(Log10Op, std::log10(x))
AB_FLOAT_OP(CbrtOp, std::cbrt(x))
AB_FLOAT_OP(SinhOp, std::sinh(x))
AB_FLOAT_OP(CoshOp, std::cosh(x))
AB_FLOAT_OP(AsinOp, std::asin(x))
AB_FLOAT_OP(AcosOp, std::acos(x))
AB_FLOAT_OP(AtanOp, std::atan(x))
#undef AB_FLOAT_OP

// lgamma_r: std::lgamma writes the global `signgam`, a data race between
// the threads that run shards.
template <class T>
struct LgammaOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T x) {
    int sign = 0;
    if constexpr (std::is_same_v<T, float>)
      return ::lgammaf_r(x, &sign);
    else
      return ::lgamma_r(x, &sign);
  }
};

template <class T>
struct Atan2Op {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T y, T x) { return std::atan2(y, x); }
};

template <class T>
struct HypotOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) { return std::hypot(a, b); }
};

// exp of a non-positive number only: no overflow for large |x|.
template <class T>
struct SigmoidOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T x) {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};

template <class T>
struct IsNanOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T x) { return std::isnan(x) ? 1 : 0; }
};

template <class T>
struct IsFiniteOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T x) { return std::isfinite(x) ? 1 : 0; }
};

template <class From, class To>
struct CastOp {
  using R = To;
  static constexpr bool kToBool = std::is_same_v<To, Bool8>;
  static constexpr bool kChecked =
      std::is_floating_point_v<From> && std::is_integral_v<To> && !kToBool;
  // Truncation of x fits To: the comparisons are exact in double, and false
  // for NaN.
  static bool ok(From x) {
    double d = static_cast<double>(x);
    if constexpr (std::is_same_v<To, int32_t>)
      return d > -2147483649.0 && d < 2147483648.0;
    else
      return d >= -9223372036854775808.0 && d < 9223372036854775808.0;
  }
  static std::string message(From x) {
    std::string to = dtype_name(dtype_of<To>());
    if (std::isnan(x)) return "cannot cast nan to " + to;
    return "cannot cast " + format_number(static_cast<double>(x)) + " to " + to + ": out of range";
  }
  static To apply(From x) {
    if constexpr (kToBool)
      return x != 0 ? 1 : 0;
    else
      return static_cast<To>(x);
  }
};

template <class From>
bool cast_from(const KernelCall& c, KernelError* e) {
  switch (c.outs[0].type->dtype) {
    case DType::Bool:
      return Unary<CastOp<From, Bool8>, From>::run(c, e);
    case DType::I32:
      return Unary<CastOp<From, int32_t>, From>::run(c, e);
    case DType::I64:
      return Unary<CastOp<From, int64_t>, From>::run(c, e);
    case DType::F32:
      return Unary<CastOp<From, float>, From>::run(c, e);
    case DType::F64:
      return Unary<CastOp<From, double>, From>::run(c, e);
  }
  return bad_dtype(c, e);
}

}  // namespace

bool kernel_Exp(const KernelCall& c, KernelError* e) { return on_float<Unary, ExpOp>(c, e); }
bool kernel_Log(const KernelCall& c, KernelError* e) { return on_float<Unary, LogOp>(c, e); }
bool kernel_Log1p(const KernelCall& c, KernelError* e) { return on_float<Unary, Log1pOp>(c, e); }
bool kernel_Expm1(const KernelCall& c, KernelError* e) { return on_float<Unary, Expm1Op>(c, e); }
bool kernel_Sqrt(const KernelCall& c, KernelError* e) { return on_float<Unary, SqrtOp>(c, e); }
bool kernel_Sin(const KernelCall& c, KernelError* e) { return on_float<Unary, SinOp>(c, e); }
bool kernel_Cos(const KernelCall& c, KernelError* e) { return on_float<Unary, CosOp>(c, e); }
bool kernel_Tan(const KernelCall& c, KernelError* e) { return on_float<Unary, TanOp>(c, e); }
bool kernel_Tanh(const KernelCall& c, KernelError* e) { return on_float<Unary, TanhOp>(c, e); }
bool kernel_Sigmoid(const KernelCall& c, KernelError* e) {
  return on_float<Unary, SigmoidOp>(c, e);
}
bool kernel_Floor(const KernelCall& c, KernelError* e) { return on_float<Unary, FloorOp>(c, e); }
bool kernel_Ceil(const KernelCall& c, KernelError* e) { return on_float<Unary, CeilOp>(c, e); }
bool kernel_Round(const KernelCall& c, KernelError* e) { return on_float<Unary, RoundOp>(c, e); }
bool kernel_IsNan(const KernelCall& c, KernelError* e) { return on_float<Unary, IsNanOp>(c, e); }
bool kernel_IsFinite(const KernelCall& c, KernelError* e) {
  return on_float<Unary, IsFiniteOp>(c, e);
}

bool kernel_Erf(const KernelCall& c, KernelError* e) { return on_float<Unary, ErfOp>(c, e); }
bool kernel_Erfc(const KernelCall& c, KernelError* e) { return on_float<Unary, ErfcOp>(c, e); }
bool kernel_Lgamma(const KernelCall& c, KernelError* e) { return on_float<Unary, LgammaOp>(c, e); }
bool kernel_Log2(const KernelCall& c, KernelError* e) { return on_float<Unary, Log2Op>(c, e); }
bool kernel_Log10(const KernelCall& c, KernelError* e) { return on_float<Unary, Log10Op>(c, e); }
bool kernel_Cbrt(const KernelCall& c, KernelError* e) { return on_float<Unary, CbrtOp>(c, e); }
bool kernel_Sinh(const KernelCall& c, KernelError* e) { return on_float<Unary, SinhOp>(c, e); }
bool kernel_Cosh(const KernelCall& c, KernelError* e) { return on_float<Unary, CoshOp>(c, e); }
bool kernel_Asin(const KernelCall& c, KernelError* e) { return on_float<Unary, AsinOp>(c, e); }
bool kernel_Acos(const KernelCall& c, KernelError* e) { return on_float<Unary, AcosOp>(c, e); }
bool kernel_Atan(const KernelCall& c, KernelError* e) { return on_float<Unary, AtanOp>(c, e); }
bool kernel_Atan2(const KernelCall& c, KernelError* e) { return on_float<Binary, Atan2Op>(c, e); }
bool kernel_Hypot(const KernelCall& c, KernelError* e) { return on_float<Binary, HypotOp>(c, e); }

bool kernel_Cast(const KernelCall& c, KernelError* e) {
  switch (c.args[0].type->dtype) {
    case DType::Bool:
      return cast_from<Bool8>(c, e);
    case DType::I32:
      return cast_from<int32_t>(c, e);
    case DType::I64:
      return cast_from<int64_t>(c, e);
    case DType::F32:
      return cast_from<float>(c, e);
    case DType::F64:
      return cast_from<double>(c, e);
  }
  return bad_dtype(c, e);
}

}  // namespace ab::kern
