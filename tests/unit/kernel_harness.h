// Test helper: runs one kernel on small hand-written operands. Operands are
// given as flat value lists with an access mode; result types come from
// prim_result_type (so every kernel test also exercises the type rule), and
// results are Dense over n lanes unless a test builds its own views.
#pragma once
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "ir/prim_types.h"
#include "vm/kernels/kernel.h"

namespace ab::test {

inline TensorType tt(DType d, Shape s = {}) { return TensorType{d, std::move(s)}; }

struct Operand {
  TensorType type;
  Access access = Access::Dense;
  std::vector<unsigned char> bytes;
  std::vector<uint32_t> index;

  template <class T>
  static Operand make(TensorType t, Access a, const std::vector<T>& values,
                      std::vector<uint32_t> index = {}) {
    Operand o;
    o.type = std::move(t);
    o.access = a;
    o.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(o.bytes.data(), values.data(), o.bytes.size());
    o.index = std::move(index);
    return o;
  }
  ArgView view() const {
    return ArgView{bytes.empty() ? nullptr : bytes.data(), access,
                   index.empty() ? nullptr : index.data(), &type};
  }
};

// Lane j's event is values[j*E ...].
template <class T>
Operand dense(TensorType t, const std::vector<T>& values) {
  return Operand::make(std::move(t), Access::Dense, values);
}
// One event for every lane.
template <class T>
Operand shared(TensorType t, const std::vector<T>& values) {
  return Operand::make(std::move(t), Access::Shared, values);
}
// Lane j's event is storage[index[j]*E ...].
template <class T>
Operand gather(TensorType t, const std::vector<T>& storage, std::vector<uint32_t> index) {
  return Operand::make(std::move(t), Access::Gather, storage, std::move(index));
}

struct RunResult {
  bool ok = false;
  KernelError err;
  std::vector<TensorType> types;
  std::vector<std::vector<unsigned char>> outs;

  template <class T>
  std::vector<T> out(size_t k = 0) const {
    std::vector<T> v(outs[k].size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), outs[k].data(), outs[k].size());
    return v;
  }
};

// Types the call with prim_result_type, runs the kernel on n lanes with
// Dense results, and returns them.
inline RunResult run(PrimId op, int64_t n, const std::vector<Operand>& args,
                     const PrimAttrs& attrs = {}) {
  std::vector<Type> arg_types;
  for (const auto& a : args) arg_types.push_back(Type{false, a.type, {}});
  PrimTypeResult tr = prim_result_type(op, arg_types, attrs);
  REQUIRE_MESSAGE(tr.ok(), tr.error);
  RunResult r;
  tr.type->leaves(r.types);
  std::vector<ArgView> views;
  for (const auto& a : args) views.push_back(a.view());
  std::vector<OutView> outs;
  r.outs.resize(r.types.size());
  for (size_t k = 0; k < r.types.size(); ++k) {
    r.outs[k].assign(
        static_cast<size_t>(n * r.types[k].num_elements()) * dtype_size(r.types[k].dtype),
        0xAB);  // garbage: kernels must write every result element
    outs.push_back(OutView{r.outs[k].empty() ? nullptr : r.outs[k].data(), Access::Dense, nullptr,
                           &r.types[k]});
  }
  KernelFn fn = kernel_for(op);
  REQUIRE(static_cast<bool>(fn));
  KernelCall call{n,
                  views.data(),
                  static_cast<int>(views.size()),
                  outs.data(),
                  static_cast<int>(outs.size()),
                  &attrs};
  r.ok = fn(call, &r.err);
  return r;
}

// A scalar f64/i64/... binary op on n Dense lanes.
template <class T, class R = T>
std::vector<R> binary(PrimId op, DType d, const std::vector<T>& a, const std::vector<T>& b) {
  RunResult r = run(op, static_cast<int64_t>(a.size()), {dense(tt(d), a), dense(tt(d), b)});
  REQUIRE_MESSAGE(r.ok, r.err.message);
  return r.out<R>();
}

template <class T, class R = T>
std::vector<R> unary(PrimId op, DType d, const std::vector<T>& a) {
  RunResult r = run(op, static_cast<int64_t>(a.size()), {dense(tt(d), a)});
  REQUIRE_MESSAGE(r.ok, r.err.message);
  return r.out<R>();
}

// Bit-exact float comparison that treats NaN == NaN and -0 != +0.
template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || (a != a && b != b);
}

}  // namespace ab::test
