// Kernels of the linear-algebra primitives: dot, matvec, matmul, outer,
// transpose. This is where batching beats per-thread code: when the matrix
// of matvec/matmul is Shared (one value for every thread) and the other
// operand is per lane, all n lanes are one register-tiled product instead
// of n small ones. Integer operands (allowed: docs/language.md, "Integer and
// float semantics", says an integer dot wraps) use wrapping loops.
//
// Rounding: every float product goes through ordered_linalg.h, where each
// result element is one chain of fused multiply-adds in index order, on
// every path (shared matrix or per lane, one lane or thousands, AVX-512,
// AVX2 or none). A thread's result is therefore the same bits however the
// batch is split (--threads, --lanes, shards, MPI ranks) and whichever VM
// runs it.
#include "vm/kernels/elementwise_impl.h"
#include "vm/kernels/ordered_linalg.h"

namespace ab::kern {

namespace {

// Gathered lanes whose slots are consecutive (a chunk of threads that have
// kept together): their rows are already one [n, E] matrix.
inline bool consecutive(Access a, const uint32_t* index, int64_t n) {
  if (a != Access::Gather || n == 0) return false;
  for (int64_t j = 1; j < n; ++j)
    if (index[j] != index[0] + static_cast<uint32_t>(j)) return false;
  return true;
}

// The n lanes of `v` as one dense [n, E] block: the data itself when Dense
// or consecutive, else a copy in scratch `slot`.
template <class T>
const T* dense_lanes(const ArgView& v, int64_t n, int64_t E, int slot) {
  if (v.access == Access::Dense) return static_cast<const T*>(v.data);
  if (consecutive(v.access, v.index, n)) return lane_in<T>(v, 0, E);
  T* s = scratch<T>(slot, n * E);
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(s + j * E, lane_in<T>(v, j, E), static_cast<size_t>(E) * sizeof(T));
  return s;
}

// Where a [n, E] dense result can be computed: the result itself when it is
// Dense or consecutive and aliases no operand, else scratch `slot` (then
// scatter()).
template <class T>
T* dense_target(const OutView& o, const ArgView* operands, int nops, int64_t n, int64_t E,
                int slot) {
  bool direct = o.access == Access::Dense || consecutive(o.access, o.index, n);
  for (int i = 0; i < nops; ++i) direct = direct && !aliases(o, operands[i]);
  return direct ? lane_out<T>(o, 0, E) : scratch<T>(slot, n * E);
}

template <class T>
void scatter(const OutView& o, const T* src, int64_t n, int64_t E) {
  if (n == 0 || src == lane_out<T>(o, 0, E)) return;  // computed in place (dense_target)
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(lane_out<T>(o, j, E), src + j * E, static_cast<size_t>(E) * sizeof(T));
}

// ---- per-lane cores (result never aliases the operands) -------------------

template <class T>
void matvec_lane(const T* A, const T* x, T* y, int64_t m, int64_t k) {
  if constexpr (std::is_floating_point_v<T>) {
    ordered::gemv(m, k, A, k, x, y);
  } else {
    for (int64_t i = 0; i < m; ++i) {
      const T* row = A + i * k;
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc = wrap_add(acc, wrap_mul(row[p], x[p]));
      y[i] = acc;
    }
  }
}

template <class T>
void matmul_lane(const T* A, const T* B, T* C, int64_t m, int64_t k, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    ordered::gemm(m, n, k, A, k, 1, B, n, 1, C, n, 1);
  } else {
    for (int64_t i = 0; i < m; ++i) {
      T* c = C + i * n;
      for (int64_t q = 0; q < n; ++q) c[q] = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T a = A[i * k + p];
        const T* b = B + p * n;
        for (int64_t q = 0; q < n; ++q) c[q] = wrap_add(c[q], wrap_mul(a, b[q]));
      }
    }
  }
}

// ---- kernels ----------------------------------------------------------------

template <class T>
bool dot_impl(const KernelCall& c) {
  const ArgView &vx = c.args[0], &vy = c.args[1];
  const int64_t k = vx.type->shape[0];
  if constexpr (std::is_floating_point_v<T>) {
    // Four lanes at a time (four chains that overlap), each its own chain.
    for (int64_t j = 0; j < c.n; j += 4) {
      const int lanes = c.n - j < 4 ? static_cast<int>(c.n - j) : 4;
      const T* x[4];
      const T* y[4];
      T acc[4];
      for (int i = 0; i < lanes; ++i) {
        x[i] = lane_in<T>(vx, j + i, k);
        y[i] = lane_in<T>(vy, j + i, k);
      }
      ordered::dots(lanes, k, x, y, acc);
      for (int i = 0; i < lanes; ++i) *lane_out<T>(c.outs[0], j + i, 1) = acc[i];
    }
  } else {
    for (int64_t j = 0; j < c.n; ++j) {
      const T* x = lane_in<T>(vx, j, k);
      const T* y = lane_in<T>(vy, j, k);
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc = wrap_add(acc, wrap_mul(x[p], y[p]));
      *lane_out<T>(c.outs[0], j, 1) = acc;
    }
  }
  return true;
}

template <class T>
bool matvec_impl(const KernelCall& c) {
  const ArgView &va = c.args[0], &vx = c.args[1];
  const OutView& vo = c.outs[0];
  const int64_t n = c.n, m = va.type->shape[0], k = va.type->shape[1];
  if (n == 0 || m == 0) return true;
  if constexpr (std::is_floating_point_v<T>) {
    if (va.access == Access::Shared && vx.access != Access::Shared) {
      // Y[n, m] = X[n, k] * A^T: every lane in one product.
      const T* X = dense_lanes<T>(vx, n, k, 0);
      T* Y = dense_target<T>(vo, c.args, 2, n, m, 1);
      ordered::gemm(n, m, k, X, k, 1, static_cast<const T*>(va.data), 1, k, Y, m, 1);
      scatter(vo, Y, n, m);
      return true;
    }
  }
  T* y = scratch<T>(2, m);
  for (int64_t j = 0; j < n; ++j) {
    matvec_lane(lane_in<T>(va, j, m * k), lane_in<T>(vx, j, k), y, m, k);
    std::memcpy(lane_out<T>(vo, j, m), y, static_cast<size_t>(m) * sizeof(T));
  }
  return true;
}

template <class T>
bool matmul_impl(const KernelCall& c) {
  const ArgView &va = c.args[0], &vb = c.args[1];
  const OutView& vo = c.outs[0];
  const int64_t n = c.n, m = va.type->shape[0], k = va.type->shape[1], q = vb.type->shape[1];
  const int64_t Ea = m * k, Eb = k * q, Ec = m * q;
  if (n == 0 || Ec == 0) return true;
  if constexpr (std::is_floating_point_v<T>) {
    if (va.access == Access::Shared && vb.access != Access::Shared) {
      // C' = A * B' with B' = [B_0 | B_1 | ...] (k x n*q): pack, one product, unpack.
      const int64_t wide = n * q;
      T* Bp = scratch<T>(0, k * wide);
      for (int64_t j = 0; j < n; ++j) {
        const T* b = lane_in<T>(vb, j, Eb);
        for (int64_t p = 0; p < k; ++p)
          std::memcpy(Bp + p * wide + j * q, b + p * q, static_cast<size_t>(q) * sizeof(T));
      }
      T* Cp = scratch<T>(1, m * wide);
      ordered::gemm(m, wide, k, static_cast<const T*>(va.data), k, 1, Bp, wide, 1, Cp, wide, 1);
      for (int64_t j = 0; j < n; ++j) {
        T* out = lane_out<T>(vo, j, Ec);
        for (int64_t i = 0; i < m; ++i)
          std::memcpy(out + i * q, Cp + i * wide + j * q, static_cast<size_t>(q) * sizeof(T));
      }
      return true;
    }
    if (vb.access == Access::Shared && va.access != Access::Shared) {
      // The lanes' A stacked are one [n*m, k] matrix: C' = A' * B.
      const T* Ap = dense_lanes<T>(va, n, Ea, 0);
      T* Cp = dense_target<T>(vo, c.args, 2, n, Ec, 1);
      ordered::gemm(n * m, q, k, Ap, k, 1, static_cast<const T*>(vb.data), q, 1, Cp, q, 1);
      scatter(vo, Cp, n, Ec);
      return true;
    }
  }
  T* tmp = scratch<T>(2, Ec);
  for (int64_t j = 0; j < n; ++j) {
    matmul_lane(lane_in<T>(va, j, Ea), lane_in<T>(vb, j, Eb), tmp, m, k, q);
    std::memcpy(lane_out<T>(vo, j, Ec), tmp, static_cast<size_t>(Ec) * sizeof(T));
  }
  return true;
}

template <class T>
bool outer_impl(const KernelCall& c) {
  const ArgView &vx = c.args[0], &vy = c.args[1];
  const int64_t m = vx.type->shape[0], q = vy.type->shape[0];
  for (int64_t j = 0; j < c.n; ++j) {
    const T* x = lane_in<T>(vx, j, m);
    const T* y = lane_in<T>(vy, j, q);
    T* out = lane_out<T>(c.outs[0], j, m * q);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < q; ++p) {
        if constexpr (std::is_integral_v<T>)
          out[i * q + p] = wrap_mul(x[i], y[p]);
        else
          out[i * q + p] = x[i] * y[p];
      }
  }
  return true;
}

template <class W>
bool transpose_impl(const KernelCall& c) {
  const ArgView& va = c.args[0];
  const OutView& vo = c.outs[0];
  const int64_t m = va.type->shape[0], q = va.type->shape[1], E = m * q;
  if (E == 0) return true;
  const bool in_place = aliases(vo, va);
  W* tmp = in_place ? scratch<W>(2, E) : nullptr;
  for (int64_t j = 0; j < c.n; ++j) {
    const W* a = lane_in<W>(va, j, E);
    W* out = lane_out<W>(vo, j, E);
    W* dst = in_place ? tmp : out;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < q; ++p) dst[p * m + i] = a[i * q + p];
    if (in_place) std::memcpy(out, tmp, static_cast<size_t>(E) * sizeof(W));
  }
  return true;
}

template <template <class> class F>
bool on_linalg_dtype(const KernelCall& c, KernelError* e) {
  if (c.n == 0) return true;
  switch (c.args[0].type->dtype) {
    case DType::I32:
      return F<int32_t>::run(c);
    case DType::I64:
      return F<int64_t>::run(c);
    case DType::F32:
      return F<float>::run(c);
    case DType::F64:
      return F<double>::run(c);
    default:
      return bad_dtype(c, e);
  }
}

template <class T>
struct DotK {
  static bool run(const KernelCall& c) { return dot_impl<T>(c); }
};
template <class T>
struct MatvecK {
  static bool run(const KernelCall& c) { return matvec_impl<T>(c); }
};
template <class T>
struct MatmulK {
  static bool run(const KernelCall& c) { return matmul_impl<T>(c); }
};
template <class T>
struct OuterK {
  static bool run(const KernelCall& c) { return outer_impl<T>(c); }
};

}  // namespace

bool kernel_Dot(const KernelCall& c, KernelError* e) { return on_linalg_dtype<DotK>(c, e); }
bool kernel_Matvec(const KernelCall& c, KernelError* e) { return on_linalg_dtype<MatvecK>(c, e); }
bool kernel_Matmul(const KernelCall& c, KernelError* e) { return on_linalg_dtype<MatmulK>(c, e); }
bool kernel_Outer(const KernelCall& c, KernelError* e) { return on_linalg_dtype<OuterK>(c, e); }

bool kernel_Transpose(const KernelCall& c, KernelError*) {
  if (c.n == 0) return true;
  switch (dtype_size(c.args[0].type->dtype)) {
    case 1:
      return transpose_impl<uint8_t>(c);
    case 4:
      return transpose_impl<uint32_t>(c);
    default:
      return transpose_impl<uint64_t>(c);
  }
}

}  // namespace ab::kern
