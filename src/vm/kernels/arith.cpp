// Kernels of the arithmetic primitives (add sub mul div mod neg abs min max
// pow): the semantics of docs/language.md, "Integer and float semantics". Integers wrap (computed
// in unsigned arithmetic, so there is no undefined behaviour); div and mod floor as Python does;
// division or mod by zero and negative integer exponents are errors.
#include <bit>
#include <cmath>

#include "vm/kernels/elementwise_impl.h"

namespace ab::kern {

namespace {

template <class T>
struct AddOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return wrap_add(a, b);
    else
      return a + b;
  }
};

template <class T>
struct SubOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return wrap_sub(a, b);
    else
      return a - b;
  }
};

template <class T>
struct MulOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return wrap_mul(a, b);
    else
      return a * b;
  }
};

// Integers: Python's a // b (floor); div(MIN, -1) wraps to MIN. Floats: a / b.
template <class T>
struct DivOp {
  using R = T;
  static constexpr bool kChecked = std::is_integral_v<T>;
  static bool ok(T, T b) { return b != 0; }
  static std::string message(T, T) { return "integer division by zero"; }
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return wrap_neg(a);  // MIN / -1 overflows in C++
      T q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    } else {
      return a / b;
    }
  }
};

// The result has the divisor's sign (Python %, NumPy mod); float mod by 0
// is NaN, as fmod gives.
template <class T>
struct ModOp {
  using R = T;
  static constexpr bool kChecked = std::is_integral_v<T>;
  static bool ok(T, T b) { return b != 0; }
  static std::string message(T, T) { return "integer modulo by zero"; }
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return 0;  // MIN % -1 overflows in C++
      T r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    } else {
      T r = std::fmod(a, b);
      if (r != 0) {
        if ((r < 0) != (b < 0)) r += b;
      } else {
        r = std::copysign(T(0), b);
      }
      return r;
    }
  }
};

// NaN in either operand gives NaN (NumPy minimum/maximum).
template <class T>
struct MinOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return a < b ? a : b;
    else
      return (a <= b || a != a) ? a : b;
  }
};

template <class T>
struct MaxOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return a > b ? a : b;
    else
      return (a >= b || a != a) ? a : b;
  }
};

template <class T>
struct PowOp {
  using R = T;
  static constexpr bool kChecked = std::is_integral_v<T>;
  static bool ok(T, T b) { return b >= 0; }
  static std::string message(T, T b) {
    return "integer pow with negative exponent " + std::to_string(b);
  }
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      U base = static_cast<U>(a), result = 1;
      for (U e = static_cast<U>(b); e; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(a, b);
    }
  }
};

template <class T>
struct NegOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a) {
    if constexpr (std::is_integral_v<T>)
      return wrap_neg(a);
    else
      return -a;
  }
};

// abs(MIN) wraps to MIN.
template <class T>
struct AbsOp {
  using R = T;
  static constexpr bool kChecked = false;
  static T apply(T a) {
    if constexpr (std::is_integral_v<T>)
      return a < 0 ? wrap_neg(a) : a;
    else
      return std::fabs(a);
  }
};

// div/mod of integers by a Shared positive power of two 2^k, the common
// `div(n, 2)` / `mod(n, 2)`: an arithmetic shift floors exactly as Python's
// //, and masking gives the non-negative remainder that % gives for a
// positive divisor. Native code compiles these literals to shifts too.
template <class T, bool kMod>
struct Pow2DivMod {
  template <Access A, Access O>
  static bool scalar(const KernelCall& c, KernelError*) {
    Load<A, T> a(c.args[0]);
    Store<O, T> o(c.outs[0]);
    const T b = *static_cast<const T*>(c.args[1].data);
    const int shift = std::countr_zero(static_cast<std::make_unsigned_t<T>>(b));
    const T mask = b - 1;
    const int64_t n = c.n;
    if constexpr (kMod) {
      for (int64_t j = 0; j < n; ++j) o[j] = a[j] & mask;
    } else {
      for (int64_t j = 0; j < n; ++j) o[j] = a[j] >> shift;
    }
    return true;
  }
};

template <class T>
bool shared_pow2_divisor(const KernelCall& c) {
  const ArgView& b = c.args[1];
  if (b.access != Access::Shared || !is_scalar(b.type) || !is_scalar(c.args[0].type)) return false;
  T v = *static_cast<const T*>(b.data);
  return v > 0 && (v & (v - 1)) == 0;
}

template <bool kMod>
bool div_or_mod(const KernelCall& c, KernelError* e) {
  if (c.n > 0) {
    if (c.args[0].type->dtype == DType::I64 && shared_pow2_divisor<int64_t>(c))
      return Pick<Pow2DivMod<int64_t, kMod>>::template run<1>(c, e);
    if (c.args[0].type->dtype == DType::I32 && shared_pow2_divisor<int32_t>(c))
      return Pick<Pow2DivMod<int32_t, kMod>>::template run<1>(c, e);
  }
  if constexpr (kMod)
    return on_numeric<Binary, ModOp>(c, e);
  else
    return on_numeric<Binary, DivOp>(c, e);
}

}  // namespace

bool kernel_Add(const KernelCall& c, KernelError* e) { return on_numeric<Binary, AddOp>(c, e); }
bool kernel_Sub(const KernelCall& c, KernelError* e) { return on_numeric<Binary, SubOp>(c, e); }
bool kernel_Mul(const KernelCall& c, KernelError* e) { return on_numeric<Binary, MulOp>(c, e); }
bool kernel_Div(const KernelCall& c, KernelError* e) { return div_or_mod<false>(c, e); }
bool kernel_Mod(const KernelCall& c, KernelError* e) { return div_or_mod<true>(c, e); }
bool kernel_Min(const KernelCall& c, KernelError* e) { return on_numeric<Binary, MinOp>(c, e); }
bool kernel_Max(const KernelCall& c, KernelError* e) { return on_numeric<Binary, MaxOp>(c, e); }
bool kernel_Pow(const KernelCall& c, KernelError* e) { return on_numeric<Binary, PowOp>(c, e); }
bool kernel_Neg(const KernelCall& c, KernelError* e) { return on_numeric<Unary, NegOp>(c, e); }
bool kernel_Abs(const KernelCall& c, KernelError* e) { return on_numeric<Unary, AbsOp>(c, e); }

}  // namespace ab::kern
