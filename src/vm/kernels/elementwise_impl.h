// Internal: the loop skeletons of elementwise kernels, shared by the
// kernels_*.cpp files that define elementwise primitives. An operation is a
// small struct: result type R, apply(x[, y]) and, when it can fail,
// kChecked = true with ok(...) and message(...).
//
// Paths, fastest first:
// 1. scalar events: one loop per combination of access modes (Pick), the
//    shape the hot integer loops of branchy programs take;
// 2. no broadcasting and dense storage: the same loop over n*E elements;
// 2b. (binary) operands of the result's shape or one scalar per lane, in any
//    storage: per lane, a plain loop over the event;
// 3. anything else (NumPy broadcasting, gathered events): per-lane event
//    pointers with per-element offsets.
#pragma once
#include "vm/kernels/kernel_impl.h"

// The build targets baseline x86-64 (SSE2: two doubles per instruction).
// The elementwise loops also get a copy compiled for AVX2 (four), chosen
// once at load time on CPUs that have it (function multiversioning, GCC and
// clang). The results are the same bits: IEEE operations round alike in
// both, and neither copy contracts a * b + c into an FMA. Not in sanitized
// builds, whose instrumentation may run before the load-time choice can.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AB_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(AB_SANITIZED)
#define AB_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AB_AVX2_CLONES
#endif

namespace ab::kern {

// Path 2 applies: every result and operand dense with the result's shape,
// or a shared scalar.
inline bool flattenable(const KernelCall& c) {
  if (c.outs[0].access != Access::Dense) return false;
  const Shape& s = c.outs[0].type->shape;
  for (int i = 0; i < c.nargs; ++i) {
    const ArgView& a = c.args[i];
    bool ok = (a.access == Access::Dense && a.type->shape == s) ||
              (a.access == Access::Shared && a.type->shape.empty());
    if (!ok) return false;
  }
  return true;
}

// Runs Impl's scalar path over n*E elements; a failing element's lane is
// reported as its lane.
template <class Impl, int N>
bool run_flat(const KernelCall& c, KernelError* err, int64_t E) {
  KernelCall flat = c;
  flat.n = c.n * E;
  if (Pick<Impl>::template run<N>(flat, err)) return true;
  err->lane /= E;
  return false;
}

template <class Op, class T>
struct Unary {
  using R = typename Op::R;

  template <Access A, Access O>
  AB_AVX2_CLONES static bool scalar(const KernelCall& c, KernelError* err) {
    Load<A, T> a(c.args[0]);
    Store<O, R> o(c.outs[0]);
    const int64_t n = c.n;
    if constexpr (Op::kChecked) {
      for (int64_t j = 0; j < n; ++j) {
        T x = a[j];
        if (!Op::ok(x)) [[unlikely]]
          return fail(err, j, Op::message(x));
        o[j] = Op::apply(x);
      }
    } else {
      for (int64_t j = 0; j < n; ++j) o[j] = Op::apply(a[j]);
    }
    return true;
  }

  static bool general(const KernelCall& c, KernelError* err) {
    const ArgView& va = c.args[0];
    const OutView& vo = c.outs[0];
    const int64_t E = vo.type->num_elements();
    for (int64_t j = 0; j < c.n; ++j) {
      const T* pa = lane_in<T>(va, j, E);
      R* po = lane_out<R>(vo, j, E);
      for (int64_t k = 0; k < E; ++k) {
        T x = pa[k];
        if constexpr (Op::kChecked) {
          if (!Op::ok(x)) return fail(err, j, Op::message(x));
        }
        po[k] = Op::apply(x);
      }
    }
    return true;
  }

  static bool run(const KernelCall& c, KernelError* err) {
    if (c.n == 0) return true;
    if (is_scalar(c.args[0].type)) return Pick<Unary>::template run<1>(c, err);
    if (flattenable(c)) return run_flat<Unary, 1>(c, err, c.outs[0].type->num_elements());
    return general(c, err);
  }
};

template <class Op, class T>
struct Binary {
  using R = typename Op::R;

  template <Access A, Access B, Access O>
  AB_AVX2_CLONES static bool scalar(const KernelCall& c, KernelError* err) {
    Load<A, T> a(c.args[0]);
    Load<B, T> b(c.args[1]);
    Store<O, R> o(c.outs[0]);
    const int64_t n = c.n;
    if constexpr (Op::kChecked) {
      for (int64_t j = 0; j < n; ++j) {
        T x = a[j], y = b[j];
        if (!Op::ok(x, y)) [[unlikely]]
          return fail(err, j, Op::message(x, y));
        o[j] = Op::apply(x, y);
      }
    } else {
      for (int64_t j = 0; j < n; ++j) o[j] = Op::apply(a[j], b[j]);
    }
    return true;
  }

  // Each operand has the result's shape or is one scalar per lane (a tensor
  // scaled by a per-thread number): per lane, a plain loop over the event
  // that the compiler vectorises (no broadcast index per element).
  static bool lanewise_applies(const KernelCall& c) {
    const Shape& os = c.outs[0].type->shape;
    for (int i = 0; i < 2; ++i) {
      const Shape& s = c.args[i].type->shape;
      if (!(s == os || s.empty())) return false;
    }
    return true;
  }

  template <bool ScalarA, bool ScalarB>
  AB_AVX2_CLONES static bool lanewise(const KernelCall& c, KernelError* err) {
    const ArgView& va = c.args[0];
    const ArgView& vb = c.args[1];
    const OutView& vo = c.outs[0];
    const int64_t E = vo.type->num_elements();
    for (int64_t j = 0; j < c.n; ++j) {
      const T* pa = lane_in<T>(va, j, ScalarA ? 1 : E);
      const T* pb = lane_in<T>(vb, j, ScalarB ? 1 : E);
      R* po = lane_out<R>(vo, j, E);
      if constexpr (Op::kChecked) {
        for (int64_t k = 0; k < E; ++k) {
          T x = ScalarA ? pa[0] : pa[k], y = ScalarB ? pb[0] : pb[k];
          if (!Op::ok(x, y)) return fail(err, j, Op::message(x, y));
          po[k] = Op::apply(x, y);
        }
      } else if constexpr (ScalarA) {
        const T x = pa[0];
        for (int64_t k = 0; k < E; ++k) po[k] = Op::apply(x, pb[k]);
      } else if constexpr (ScalarB) {
        const T y = pb[0];
        for (int64_t k = 0; k < E; ++k) po[k] = Op::apply(pa[k], y);
      } else {
        for (int64_t k = 0; k < E; ++k) po[k] = Op::apply(pa[k], pb[k]);
      }
    }
    return true;
  }

  static bool general(const KernelCall& c, KernelError* err) {
    const ArgView& va = c.args[0];
    const ArgView& vb = c.args[1];
    const OutView& vo = c.outs[0];
    const Shape& os = vo.type->shape;
    const int64_t E = vo.type->num_elements();
    const int64_t Ea = va.type->num_elements(), Eb = vb.type->num_elements();
    const Bcast ba = make_bcast(va.type->shape, os, 0);
    const Bcast bb = make_bcast(vb.type->shape, os, 1);
    for (int64_t j = 0; j < c.n; ++j) {
      const T* pa = lane_in<T>(va, j, Ea);
      const T* pb = lane_in<T>(vb, j, Eb);
      R* po = lane_out<R>(vo, j, E);
      for (int64_t k = 0; k < E; ++k) {
        T x = pa[ba.at(k)], y = pb[bb.at(k)];
        if constexpr (Op::kChecked) {
          if (!Op::ok(x, y)) return fail(err, j, Op::message(x, y));
        }
        po[k] = Op::apply(x, y);
      }
    }
    return true;
  }

  static bool run(const KernelCall& c, KernelError* err) {
    if (c.n == 0) return true;
    if (is_scalar(c.args[0].type) && is_scalar(c.args[1].type))
      return Pick<Binary>::template run<2>(c, err);
    if (flattenable(c)) return run_flat<Binary, 2>(c, err, c.outs[0].type->num_elements());
    if (lanewise_applies(c)) {
      if (is_scalar(c.args[0].type)) return lanewise<true, false>(c, err);
      if (is_scalar(c.args[1].type)) return lanewise<false, true>(c, err);
      return lanewise<false, false>(c, err);
    }
    return general(c, err);
  }
};

inline bool bad_dtype(const KernelCall& c, KernelError* err) {
  return fail(err, 0,
              std::string("internal: no kernel for dtype ") +
                  dtype_name(c.nargs ? c.args[0].type->dtype : DType::F64));
}

// Dispatch on the first operand's dtype to Skel<Op<T>, T>.
template <template <class, class> class Skel, template <class> class Op>
bool on_numeric(const KernelCall& c, KernelError* err) {
  switch (c.args[0].type->dtype) {
    case DType::I32:
      return Skel<Op<int32_t>, int32_t>::run(c, err);
    case DType::I64:
      return Skel<Op<int64_t>, int64_t>::run(c, err);
    case DType::F32:
      return Skel<Op<float>, float>::run(c, err);
    case DType::F64:
      return Skel<Op<double>, double>::run(c, err);
    default:
      return bad_dtype(c, err);
  }
}

template <template <class, class> class Skel, template <class> class Op>
bool on_float(const KernelCall& c, KernelError* err) {
  switch (c.args[0].type->dtype) {
    case DType::F32:
      return Skel<Op<float>, float>::run(c, err);
    case DType::F64:
      return Skel<Op<double>, double>::run(c, err);
    default:
      return bad_dtype(c, err);
  }
}

template <template <class, class> class Skel, template <class> class Op>
bool on_any(const KernelCall& c, KernelError* err) {
  if (c.args[0].type->dtype == DType::Bool) return Skel<Op<Bool8>, Bool8>::run(c, err);
  return on_numeric<Skel, Op>(c, err);
}

}  // namespace ab::kern
