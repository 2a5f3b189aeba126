// Kernels of the reductions (sum prod reduce_max reduce_min mean any all),
// over every event dimension or over `axis` (negative counts from the end).
// Each lane reduces its own event sequentially in element order, so a
// thread's result never depends on the batch or the schedule. Integer sum
// and prod wrap; float max/min propagate NaN; mean is sum / count in the
// operand's dtype.
#include <cmath>
#include <limits>

#include "vm/kernels/elementwise_impl.h"

namespace ab::kern {

namespace {

template <class T>
struct SumR {
  static T init() { return T(0); }
  static T step(T acc, T x) {
    if constexpr (std::is_integral_v<T>)
      return wrap_add(acc, x);
    else
      return acc + x;
  }
  static T finish(T acc, int64_t) { return acc; }
};

template <class T>
struct ProdR {
  static T init() { return T(1); }
  static T step(T acc, T x) {
    if constexpr (std::is_integral_v<T>)
      return wrap_mul(acc, x);
    else
      return acc * x;
  }
  static T finish(T acc, int64_t) { return acc; }
};

template <class T>
struct MaxR {
  static T init() {
    if constexpr (std::is_integral_v<T>)
      return std::numeric_limits<T>::min();
    else
      return -std::numeric_limits<T>::infinity();
  }
  static T step(T acc, T x) {
    if constexpr (std::is_integral_v<T>)
      return acc > x ? acc : x;
    else
      return (acc >= x || acc != acc) ? acc : x;  // NaN sticks
  }
  static T finish(T acc, int64_t) { return acc; }
};

template <class T>
struct MinR {
  static T init() {
    if constexpr (std::is_integral_v<T>)
      return std::numeric_limits<T>::max();
    else
      return std::numeric_limits<T>::infinity();
  }
  static T step(T acc, T x) {
    if constexpr (std::is_integral_v<T>)
      return acc < x ? acc : x;
    else
      return (acc <= x || acc != acc) ? acc : x;
  }
  static T finish(T acc, int64_t) { return acc; }
};

template <class T>
struct MeanR {
  static T init() { return T(0); }
  static T step(T acc, T x) { return acc + x; }
  static T finish(T acc, int64_t count) { return acc / static_cast<T>(count); }  // 0/0: NaN
};

template <class T>
struct AnyR {
  static T init() { return 0; }
  static T step(T acc, T x) { return acc | x; }
  static T finish(T acc, int64_t) { return acc; }
};

template <class T>
struct AllR {
  static T init() { return 1; }
  static T step(T acc, T x) { return acc & x; }
  static T finish(T acc, int64_t) { return acc; }
};

template <class Op, class T>
struct Reduce {
  static bool run(const KernelCall& c, KernelError*) {
    if (c.n == 0) return true;
    const ArgView& vx = c.args[0];
    const OutView& vo = c.outs[0];
    const Shape& xs = vx.type->shape;
    const int64_t Ex = num_elements(xs), Eo = vo.type->num_elements();
    // The event as [outer, len, inner]; the result as [outer, inner].
    int64_t outer = 1, len = Ex, inner = 1;
    if (c.attrs->axis) {
      auto rank = static_cast<int64_t>(xs.size());
      int64_t k = normalize_axis(*c.attrs->axis, rank).value_or(0);
      outer = 1;
      for (int64_t d = 0; d < k; ++d) outer *= xs[d];
      len = xs[k];
      inner = 1;
      for (int64_t d = k + 1; d < rank; ++d) inner *= xs[d];
    }
    // A result can only alias its operand when both are scalars; every
    // path below reads a lane's operand before writing its result then.
    int64_t j = 0;
    if (outer == 1 && inner == 1 && len > 1) {
      // A whole event to one value, kLanes lanes side by side: each lane
      // still adds its own elements in order (the same bits as one lane at
      // a time), but the lanes' chains of dependent steps overlap instead
      // of each waiting on the latency of the one before.
      constexpr int64_t kLanes = 8;
      for (; j + kLanes <= c.n; j += kLanes) {
        const T* p[kLanes];
        T acc[kLanes];
        for (int64_t g = 0; g < kLanes; ++g) {
          p[g] = lane_in<T>(vx, j + g, Ex);
          acc[g] = Op::init();
        }
        for (int64_t l = 0; l < len; ++l)
          for (int64_t g = 0; g < kLanes; ++g) acc[g] = Op::step(acc[g], p[g][l]);
        for (int64_t g = 0; g < kLanes; ++g) *lane_out<T>(vo, j + g, Eo) = Op::finish(acc[g], len);
      }
    }
    for (; j < c.n; ++j) {
      const T* px = lane_in<T>(vx, j, Ex);
      T* po = lane_out<T>(vo, j, Eo);
      for (int64_t o = 0; o < outer; ++o) {
        const T* base = px + o * len * inner;
        for (int64_t i = 0; i < inner; ++i) {
          T acc = Op::init();
          for (int64_t l = 0; l < len; ++l) acc = Op::step(acc, base[l * inner + i]);
          po[o * inner + i] = Op::finish(acc, len);
        }
      }
    }
    return true;
  }
};

}  // namespace

bool kernel_Sum(const KernelCall& c, KernelError* e) { return on_numeric<Reduce, SumR>(c, e); }
bool kernel_Prod(const KernelCall& c, KernelError* e) { return on_numeric<Reduce, ProdR>(c, e); }
bool kernel_ReduceMax(const KernelCall& c, KernelError* e) {
  return on_numeric<Reduce, MaxR>(c, e);
}
bool kernel_ReduceMin(const KernelCall& c, KernelError* e) {
  return on_numeric<Reduce, MinR>(c, e);
}
bool kernel_Mean(const KernelCall& c, KernelError* e) { return on_float<Reduce, MeanR>(c, e); }
bool kernel_Any(const KernelCall& c, KernelError* e) {
  return Reduce<AnyR<Bool8>, Bool8>::run(c, e);
}
bool kernel_All(const KernelCall& c, KernelError* e) {
  return Reduce<AllR<Bool8>, Bool8>::run(c, e);
}

}  // namespace ab::kern
