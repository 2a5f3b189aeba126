// Internals shared by the kernels_*.cpp files (not part of the kernel API):
// typed lane access templated on the Access mode, so that the hot scalar
// loops compile to straight loads and stores; per-lane event pointers for
// the slower paths; NumPy broadcast offset tables; thread-local scratch; and
// the dispatch from runtime access modes to template instances.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "vm/kernels/kernel.h"

namespace ab::kern {

using Bool8 = uint8_t;  // bool storage: one byte, 0 or 1

// ---- scalar-event lane access (E == 1), resolved at compile time ----------

template <Access A, class T>
struct Load;

template <class T>
struct Load<Access::Dense, T> {
  const T* p;
  explicit Load(const ArgView& v) : p(static_cast<const T*>(v.data)) {}
  T operator[](int64_t j) const { return p[j]; }
};

template <class T>
struct Load<Access::Shared, T> {
  T v;  // read once: the loop then sees a loop-invariant value
  explicit Load(const ArgView& a) : v(*static_cast<const T*>(a.data)) {}
  T operator[](int64_t) const { return v; }
};

template <class T>
struct Load<Access::Gather, T> {
  const T* p;
  const uint32_t* idx;
  explicit Load(const ArgView& v) : p(static_cast<const T*>(v.data)), idx(v.index) {}
  T operator[](int64_t j) const { return p[idx[j]]; }
};

template <Access A, class T>
struct Store;

template <class T>
struct Store<Access::Dense, T> {
  T* p;
  explicit Store(const OutView& v) : p(static_cast<T*>(v.data)) {}
  T& operator[](int64_t j) const { return p[j]; }
};

template <class T>
struct Store<Access::Gather, T> {
  T* p;
  const uint32_t* idx;
  explicit Store(const OutView& v) : p(static_cast<T*>(v.data)), idx(v.index) {}
  T& operator[](int64_t j) const { return p[idx[j]]; }
};

// ---- per-lane event pointers (any E), resolved at run time per lane -------

template <class T>
inline const T* lane_in(const ArgView& v, int64_t j, int64_t E) {
  return static_cast<const T*>(v.data) + lane_slot(v.access, v.index, j) * E;
}
template <class T>
inline T* lane_out(const OutView& v, int64_t j, int64_t E) {
  return static_cast<T*>(v.data) + lane_slot(v.access, v.index, j) * E;
}
inline const std::byte* lane_in_bytes(const ArgView& v, int64_t j, size_t event_bytes) {
  return static_cast<const std::byte*>(v.data) +
         static_cast<size_t>(lane_slot(v.access, v.index, j)) * event_bytes;
}
inline std::byte* lane_out_bytes(const OutView& v, int64_t j, size_t event_bytes) {
  return static_cast<std::byte*>(v.data) +
         static_cast<size_t>(lane_slot(v.access, v.index, j)) * event_bytes;
}

inline bool is_scalar(const TensorType* t) { return t->shape.empty(); }
inline size_t event_bytes(const TensorType& t) {
  return static_cast<size_t>(t.num_elements()) * dtype_size(t.dtype);
}

// True when result `o` is the same storage as operand `a` (exact alias).
inline bool aliases(const OutView& o, const ArgView& a) { return o.data == a.data && o.data; }

// ---- scratch ---------------------------------------------------------------

// Thread-local, grow-only, 64-byte aligned scratch; `slot` tells apart the
// buffers one kernel needs at the same time (0 <= slot < kScratchSlots).
constexpr int kScratchSlots = 6;
void* scratch_bytes(int slot, size_t bytes);
template <class T>
T* scratch(int slot, int64_t count) {
  return static_cast<T*>(scratch_bytes(slot, static_cast<size_t>(count) * sizeof(T)));
}

// ---- broadcasting ----------------------------------------------------------

// How an operand's event elements map to the result's elements k:
// element k*stride when table is null (stride 1: same shape, 0: one
// element), else table[k].
struct Bcast {
  int64_t stride = 1;
  const int64_t* table = nullptr;
  int64_t at(int64_t k) const { return table ? table[k] : k * stride; }
};
// Builds the map for operand shape `in` into result shape `out`; a table, if
// needed, goes into scratch `slot`.
Bcast make_bcast(std::span<const int64_t> in, std::span<const int64_t> out, int slot);

// ---- C++ types of dtypes ---------------------------------------------------

template <DType D>
struct CType;
template <>
struct CType<DType::Bool> {
  using type = Bool8;
};
template <>
struct CType<DType::I32> {
  using type = int32_t;
};
template <>
struct CType<DType::I64> {
  using type = int64_t;
};
template <>
struct CType<DType::F32> {
  using type = float;
};
template <>
struct CType<DType::F64> {
  using type = double;
};

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, Bool8>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else
    return DType::F64;
}

// ---- wrapping integer arithmetic (two's complement, no UB) ----------------

template <class T>
inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T>
inline T wrap_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U{0} - static_cast<U>(a));
}

// ---- runtime access modes -> template instances ----------------------------
//
// Pick<Impl>::run<N>(call, err) calls Impl::template scalar<A0, .., A(N-1), O>
// with the access modes of the first N operands and of result 0 (Dense or
// Gather), so each combination is its own tight loop.

template <class Impl, Access... Fixed>
struct Pick {
  template <int N>
  static bool run(const KernelCall& c, KernelError* e) {
    constexpr int I = static_cast<int>(sizeof...(Fixed));
    if constexpr (I == N) {
      if (c.outs[0].access == Access::Gather)
        return Impl::template scalar<Fixed..., Access::Gather>(c, e);
      return Impl::template scalar<Fixed..., Access::Dense>(c, e);
    } else {
      switch (c.args[I].access) {
        case Access::Dense:
          return Pick<Impl, Fixed..., Access::Dense>::template run<N>(c, e);
        case Access::Shared:
          return Pick<Impl, Fixed..., Access::Shared>::template run<N>(c, e);
        case Access::Gather:
          break;
      }
      return Pick<Impl, Fixed..., Access::Gather>::template run<N>(c, e);
    }
  }
};

inline bool fail(KernelError* err, int64_t lane, std::string message) {
  err->lane = lane;
  err->message = std::move(message);
  return false;
}

std::string format_number(double v);  // shortest text that reads back

}  // namespace ab::kern

namespace ab::kern {

// One kernel per primitive, named after its PrimId (kernel_Add, ...), defined
// in the kernels_*.cpp files; the X-macro makes a primitive without a kernel
// a link error.
#define AB_PRIM(id, ...) \
  bool kernel_##id(const KernelCall& call, KernelError* err);
#include "ir/ops.def"
#undef AB_PRIM

}  // namespace ab::kern
