// Kernels of the comparisons (bool results), logic ops (bool operands) and
// `select`. Bool is one byte holding 0 or 1, and the kernels keep it so.
// select moves bits: it is instantiated per element width, not per dtype.
#include "vm/kernels/elementwise_impl.h"

namespace ab::kern {

namespace {

#define AB_CMP_OP(Name, expr)                               \
  template <class T>                                        \
  struct Name {                                             \
    using R = Bool8;                                        \
    static constexpr bool kChecked = false;                 \
    static Bool8 apply(T a, T b) { return (expr) ? 1 : 0; } \
  };
AB_CMP_OP(EqOp, a == b)
AB_CMP_OP(NeOp, a != b)
AB_CMP_OP(LtOp, a < b)
AB_CMP_OP(LeOp, a <= b)
AB_CMP_OP(GtOp, a > b)
AB_CMP_OP(GeOp, a >= b)
#undef AB_CMP_OP

// Operands are canonical bools (0/1), so bitwise ops are the logical ones.
template <class T>
struct AndOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T a, T b) { return a & b; }
};
template <class T>
struct OrOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T a, T b) { return a | b; }
};
template <class T>
struct XorOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T a, T b) { return a ^ b; }
};
template <class T>
struct NotOp {
  using R = Bool8;
  static constexpr bool kChecked = false;
  static Bool8 apply(T a) { return a ^ 1; }
};

// select(c, a, b) on elements of T's width.
template <class T>
struct Select {
  template <Access C, Access A, Access B, Access O>
  static bool scalar(const KernelCall& c, KernelError*) {
    Load<C, Bool8> cond(c.args[0]);
    Load<A, T> a(c.args[1]);
    Load<B, T> b(c.args[2]);
    Store<O, T> o(c.outs[0]);
    const int64_t n = c.n;
    for (int64_t j = 0; j < n; ++j) o[j] = cond[j] ? a[j] : b[j];
    return true;
  }

  static bool general(const KernelCall& c) {
    const ArgView &vc = c.args[0], &va = c.args[1], &vb = c.args[2];
    const OutView& vo = c.outs[0];
    const Shape& os = vo.type->shape;
    const int64_t E = vo.type->num_elements();
    const int64_t Ec = vc.type->num_elements(), Ea = va.type->num_elements(),
                  Eb = vb.type->num_elements();
    const Bcast bc = make_bcast(vc.type->shape, os, 0);
    const Bcast ba = make_bcast(va.type->shape, os, 1);
    const Bcast bb = make_bcast(vb.type->shape, os, 2);
    for (int64_t j = 0; j < c.n; ++j) {
      const Bool8* pc = lane_in<Bool8>(vc, j, Ec);
      const T* pa = lane_in<T>(va, j, Ea);
      const T* pb = lane_in<T>(vb, j, Eb);
      T* po = lane_out<T>(vo, j, E);
      for (int64_t k = 0; k < E; ++k) po[k] = pc[bc.at(k)] ? pa[ba.at(k)] : pb[bb.at(k)];
    }
    return true;
  }

  static bool run(const KernelCall& c, KernelError* err) {
    if (c.n == 0) return true;
    if (is_scalar(c.args[0].type) && is_scalar(c.args[1].type) && is_scalar(c.args[2].type))
      return Pick<Select>::template run<3>(c, err);
    if (flattenable(c)) return run_flat<Select, 3>(c, err, c.outs[0].type->num_elements());
    return general(c);
  }
};

}  // namespace

bool kernel_Eq(const KernelCall& c, KernelError* e) { return on_any<Binary, EqOp>(c, e); }
bool kernel_Ne(const KernelCall& c, KernelError* e) { return on_any<Binary, NeOp>(c, e); }
bool kernel_Lt(const KernelCall& c, KernelError* e) { return on_any<Binary, LtOp>(c, e); }
bool kernel_Le(const KernelCall& c, KernelError* e) { return on_any<Binary, LeOp>(c, e); }
bool kernel_Gt(const KernelCall& c, KernelError* e) { return on_any<Binary, GtOp>(c, e); }
bool kernel_Ge(const KernelCall& c, KernelError* e) { return on_any<Binary, GeOp>(c, e); }

bool kernel_And(const KernelCall& c, KernelError* e) {
  return Binary<AndOp<Bool8>, Bool8>::run(c, e);
}
bool kernel_Or(const KernelCall& c, KernelError* e) {
  return Binary<OrOp<Bool8>, Bool8>::run(c, e);
}
bool kernel_Xor(const KernelCall& c, KernelError* e) {
  return Binary<XorOp<Bool8>, Bool8>::run(c, e);
}
bool kernel_Not(const KernelCall& c, KernelError* e) {
  return Unary<NotOp<Bool8>, Bool8>::run(c, e);
}

bool kernel_Select(const KernelCall& c, KernelError* e) {
  switch (dtype_size(c.args[1].type->dtype)) {
    case 1:
      return Select<uint8_t>::run(c, e);
    case 4:
      return Select<uint32_t>::run(c, e);
    case 8:
      return Select<uint64_t>::run(c, e);
  }
  return bad_dtype(c, e);
}

}  // namespace ab::kern
