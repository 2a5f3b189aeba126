// The reverse-mode rules, one per primitive whose ops.def row says Rule in
// its Grad column: rule_<Id> adds each active operand's share of the
// result's adjoint dy to that operand's adjoint (RuleCtx, internal.h). The
// table below is built from ops.def, so a row marked Rule without its
// function here does not compile, and a function here whose row says
// otherwise is unused (a warning); tests/unit/test_grad_rules.cpp sweeps it.
// Literals (flit) take the dtype of what they meet, and zeros the dtype they
// are given, so the rules differentiate f32 as well as f64 programs.
#include "ir/prim_types.h"
#include "passes/grad/internal.h"

namespace ab::gradient {

std::optional<int64_t> RuleCtx::axis(size_t rank) const {
  for (const auto& at : in.attrs)
    if (at.key == "axis") {
      int64_t k = at.lit.elems[0].i;
      return k < 0 ? k + static_cast<int64_t>(rank) : k;
    }
  return std::nullopt;
}

namespace {

using P = PrimId;

// ---- arithmetic ----
void rule_Add(RuleCtx& r) {
  r.give(0, r.dy);
  r.give(1, r.dy);
}
void rule_Sub(RuleCtx& r) {
  r.give(0, r.dy);
  if (r.active(1)) r.give(1, r.prim(P::Neg, {r.dy}));
}
void rule_Mul(RuleCtx& r) {
  if (r.active(0)) r.give(0, r.prim(P::Mul, {r.dy, r.arg(1)}));
  if (r.active(1)) r.give(1, r.prim(P::Mul, {r.dy, r.arg(0)}));
}
void rule_Div(RuleCtx& r) {
  std::string q = r.prim(P::Div, {r.dy, r.arg(1)});
  r.give(0, q);
  if (r.active(1)) r.give(1, r.prim(P::Neg, {r.prim(P::Mul, {q, r.y})}));
}
void rule_Mod(RuleCtx& r) {
  r.give(0, r.dy);
  if (r.active(1)) {
    std::string k = r.prim(P::Floor, {r.prim(P::Div, {r.arg(0), r.arg(1)})});
    r.give(1, r.prim(P::Neg, {r.prim(P::Mul, {r.dy, k})}));
  }
}
void rule_Neg(RuleCtx& r) { r.give(0, r.prim(P::Neg, {r.dy})); }
void rule_Abs(RuleCtx& r) {
  std::string neg = r.prim(P::Lt, {r.arg(0), flit(0.0)});
  std::string pos = r.prim(P::Gt, {r.arg(0), flit(0.0)});
  std::string sign =
      r.prim(P::Select, {neg, flit(-1.0), r.prim(P::Select, {pos, flit(1.0), flit(0.0)})});
  r.give(0, r.prim(P::Mul, {r.dy, sign}));
}
// Ties go to a.
void min_max(RuleCtx& r, PrimId a_wins) {
  std::string first = r.prim(a_wins, {r.arg(0), r.arg(1)});
  if (r.active(0)) r.give(0, r.prim(P::Select, {first, r.dy, flit(0.0)}));
  if (r.active(1)) r.give(1, r.prim(P::Select, {first, flit(0.0), r.dy}));
}
void rule_Min(RuleCtx& r) { min_max(r, P::Le); }
void rule_Max(RuleCtx& r) { min_max(r, P::Ge); }
void rule_Pow(RuleCtx& r) {
  if (r.active(0)) {
    std::string e = r.prim(P::Pow, {r.arg(0), r.prim(P::Sub, {r.arg(1), flit(1.0)})});
    r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Mul, {e, r.arg(1)})}));
  }
  if (r.active(1))
    r.give(1, r.prim(P::Mul, {r.dy, r.prim(P::Mul, {r.y, r.prim(P::Log, {r.arg(0)})})}));
}

// ---- float math ----
void rule_Exp(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, r.y})); }
void rule_Log(RuleCtx& r) { r.give(0, r.prim(P::Div, {r.dy, r.arg(0)})); }
void rule_Log1p(RuleCtx& r) {
  r.give(0, r.prim(P::Div, {r.dy, r.prim(P::Add, {r.arg(0), flit(1.0)})}));
}
void rule_Expm1(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Add, {r.y, flit(1.0)})})); }
void rule_Sqrt(RuleCtx& r) { r.give(0, r.prim(P::Div, {r.prim(P::Mul, {r.dy, flit(0.5)}), r.y})); }
void rule_Sin(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Cos, {r.arg(0)})})); }
void rule_Cos(RuleCtx& r) {
  r.give(0, r.prim(P::Neg, {r.prim(P::Mul, {r.dy, r.prim(P::Sin, {r.arg(0)})})}));
}
void rule_Tan(RuleCtx& r) {
  std::string y2 = r.prim(P::Mul, {r.y, r.y});
  r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Add, {flit(1.0), y2})}));
}
void rule_Tanh(RuleCtx& r) {
  std::string y2 = r.prim(P::Mul, {r.y, r.y});
  r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Sub, {flit(1.0), y2})}));
}
void rule_Sigmoid(RuleCtx& r) {
  std::string s = r.prim(P::Mul, {r.y, r.prim(P::Sub, {flit(1.0), r.y})});
  r.give(0, r.prim(P::Mul, {r.dy, s}));
}
// erf' = 2/sqrt(pi) exp(-a^2); erfc' its negative.
void erf_rule(RuleCtx& r, double two_over_sqrt_pi) {
  std::string e = r.prim(P::Exp, {r.prim(P::Neg, {r.prim(P::Mul, {r.arg(0), r.arg(0)})})});
  std::string g = r.prim(P::Mul, {e, flit(two_over_sqrt_pi)});
  r.give(0, r.prim(P::Mul, {r.dy, g}));
}
void rule_Erf(RuleCtx& r) { erf_rule(r, 1.1283791670955126); }
void rule_Erfc(RuleCtx& r) { erf_rule(r, -1.1283791670955126); }

// digamma(a), the derivative of lgamma, elementwise: reflection below 1/2,
// six steps of the recurrence, then the asymptotic series.
std::string digamma(RuleCtx& r, const std::string& a) {
  std::string neg = r.prim(P::Lt, {a, flit(0.5)});
  std::string z = r.prim(P::Select, {neg, r.prim(P::Sub, {flit(1.0), a}), a});
  std::string acc = r.prim(P::Div, {flit(1.0), z});
  std::string y = z;
  for (int k = 1; k < 6; ++k) {
    y = r.prim(P::Add, {y, flit(1.0)});
    acc = r.prim(P::Add, {acc, r.prim(P::Div, {flit(1.0), y})});
  }
  y = r.prim(P::Add, {y, flit(1.0)});
  std::string iy = r.prim(P::Div, {flit(1.0), y});
  std::string iy2 = r.prim(P::Mul, {iy, iy});
  std::string s = r.prim(P::Mul, {iy2, flit(1.0 / 132)});
  for (double c : {1.0 / 240, 1.0 / 252, 1.0 / 120, 1.0 / 12})
    s = r.prim(P::Mul, {iy2, r.prim(P::Sub, {flit(c), s})});
  // (iy/2 written before log y: the order this rule's IR has always had)
  std::string half_iy = r.prim(P::Mul, {iy, flit(0.5)});
  std::string psi = r.prim(P::Sub, {r.prim(P::Log, {y}), half_iy});
  psi = r.prim(P::Sub, {r.prim(P::Sub, {psi, s}), acc});
  std::string pi_a = r.prim(P::Mul, {a, flit(3.141592653589793)});
  std::string refl = r.prim(P::Div, {flit(3.141592653589793), r.prim(P::Tan, {pi_a})});
  return r.prim(P::Select, {neg, r.prim(P::Sub, {psi, refl}), psi});
}
void rule_Lgamma(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, digamma(r, r.name(0))})); }
void log_base(RuleCtx& r, double ln_base) {
  r.give(0, r.prim(P::Div, {r.dy, r.prim(P::Mul, {r.arg(0), flit(ln_base)})}));
}
void rule_Log2(RuleCtx& r) { log_base(r, 0.6931471805599453); }
void rule_Log10(RuleCtx& r) { log_base(r, 2.302585092994046); }
void rule_Cbrt(RuleCtx& r) {
  std::string y2 = r.prim(P::Mul, {r.y, r.y});
  r.give(0, r.prim(P::Div, {r.dy, r.prim(P::Mul, {flit(3.0), y2})}));
}
void rule_Sinh(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Cosh, {r.arg(0)})})); }
void rule_Cosh(RuleCtx& r) { r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Sinh, {r.arg(0)})})); }
// asin' = 1/sqrt(1 - a^2); acos' its negative.
std::string asin_grad(RuleCtx& r) {
  std::string a2 = r.prim(P::Mul, {r.arg(0), r.arg(0)});
  std::string root = r.prim(P::Sqrt, {r.prim(P::Sub, {flit(1.0), a2})});
  return r.prim(P::Div, {r.dy, root});
}
void rule_Asin(RuleCtx& r) { r.give(0, asin_grad(r)); }
void rule_Acos(RuleCtx& r) { r.give(0, r.prim(P::Neg, {asin_grad(r)})); }
void rule_Atan(RuleCtx& r) {
  std::string a2 = r.prim(P::Mul, {r.arg(0), r.arg(0)});
  r.give(0, r.prim(P::Div, {r.dy, r.prim(P::Add, {flit(1.0), a2})}));
}
void rule_Atan2(RuleCtx& r) {  // atan2(p, q)
  // (q*q written first: the order this rule's IR has always had)
  std::string q2 = r.prim(P::Mul, {r.arg(1), r.arg(1)});
  std::string p2 = r.prim(P::Mul, {r.arg(0), r.arg(0)});
  std::string n = r.prim(P::Add, {p2, q2});
  if (r.active(0)) r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Div, {r.arg(1), n})}));
  if (r.active(1))
    r.give(1, r.prim(P::Neg, {r.prim(P::Mul, {r.dy, r.prim(P::Div, {r.arg(0), n})})}));
}
void rule_Hypot(RuleCtx& r) {
  if (r.active(0)) r.give(0, r.prim(P::Mul, {r.dy, r.prim(P::Div, {r.arg(0), r.y})}));
  if (r.active(1)) r.give(1, r.prim(P::Mul, {r.dy, r.prim(P::Div, {r.arg(1), r.y})}));
}

// ---- choose, convert, build ----
void rule_Select(RuleCtx& r) {
  if (r.active(1)) r.give(1, r.prim(P::Select, {r.arg(0), r.dy, flit(0.0)}));
  if (r.active(2)) r.give(2, r.prim(P::Select, {r.arg(0), flit(0.0), r.dy}));
}
void rule_Cast(RuleCtx& r) {
  r.give_shaped(0, r.prim(P::Cast, {r.dy}, {dtype_attr(r.type(0).tensor.dtype)}));
}
void rule_Fill(RuleCtx& r) { r.give_shaped(0, r.ys.empty() ? r.dy : r.prim(P::Sum, {r.dy})); }
void rule_Stack(RuleCtx& r) {
  for (size_t k = 0; k < r.in.args.size(); ++k)
    if (r.active(k)) r.give_shaped(k, r.prim(P::Get, {r.dy, ilit(static_cast<int64_t>(k))}));
}
void rule_Concat(RuleCtx& r) {  // each operand's rows of the adjoint
  int64_t at = 0;
  for (size_t k = 0; k < r.in.args.size(); ++k) {
    // (an operand may be a literal, `concat([0.0], b)`: its rows are its own)
    const Operand& a = r.arg(k);
    const int64_t rows = a.is_var                                  ? r.type(k).tensor.shape[0]
                         : a.lit.is_tensor && !a.lit.shape.empty() ? a.lit.shape[0]
                                                                   : 1;
    if (r.active(k))
      r.give_shaped(k,
                    r.prim(P::Slice, {r.dy}, {int_attr("start", at), int_attr("stop", at + rows)}));
    at += rows;
  }
}

// ---- reductions: dy broadcast back over what was reduced ----
void rule_Sum(RuleCtx& r) {
  const Type& x = r.type(0);
  r.give_shaped(0, r.w.expand(r.dy, x.tensor.shape, r.axis(x.tensor.shape.size()), x.tensor.dtype));
}
void rule_Mean(RuleCtx& r) {
  const Shape xs = r.type(0).tensor.shape;
  const std::optional<int64_t> axis = r.axis(xs.size());
  std::string g = r.w.expand(r.dy, xs, axis, r.type(0).tensor.dtype);
  int64_t n = axis ? xs[static_cast<size_t>(*axis)] : num_elements(xs);
  r.give_shaped(0, r.prim(P::Div, {g, flit(static_cast<double>(n))}));
}
void rule_Prod(RuleCtx& r) {
  const Shape xs = r.type(0).tensor.shape;
  const DType dt = r.type(0).tensor.dtype;
  const std::optional<int64_t> axis = r.axis(xs.size());
  std::string g = r.w.expand(r.dy, xs, axis, dt);
  std::string ratio = r.prim(P::Div, {r.w.expand(r.y, xs, axis, dt), r.arg(0)});
  r.give_shaped(0, r.prim(P::Mul, {g, ratio}));
}
// reduce_max, reduce_min: ties share the gradient equally.
void extremum(RuleCtx& r) {
  const Shape xs = r.type(0).tensor.shape;
  const DType dt = r.type(0).tensor.dtype;
  const std::optional<int64_t> axis = r.axis(xs.size());
  std::string g = r.w.expand(r.dy, xs, axis, dt);
  std::string eq = r.prim(P::Eq, {r.arg(0), r.w.expand(r.y, xs, axis, dt)});
  std::string hit = r.prim(P::Cast, {eq}, {dtype_attr(dt)});
  std::vector<Attr> at;
  if (axis) at.push_back(int_attr("axis", *axis));
  std::string count = r.w.expand(r.prim(P::Sum, {hit}, at), xs, axis, dt);
  r.give_shaped(0, r.prim(P::Mul, {g, r.prim(P::Div, {hit, count})}));
}
void rule_ReduceMax(RuleCtx& r) { extremum(r); }
void rule_ReduceMin(RuleCtx& r) { extremum(r); }

// ---- indexing ----
// get(x, i1, ..., ik) and set(x, i1, ..., ik, v): the indices are operands
// 1 .. k.
std::vector<Arg> indexed(RuleCtx& r, const std::string& x, size_t k) {
  std::vector<Arg> a{x};
  for (size_t i = 1; i <= k; ++i) a.push_back(r.arg(i));
  return a;
}
void rule_Get(RuleCtx& r) {  // dy added into x's adjoint at the indices
  if (!r.active(0)) return;
  const size_t k = r.in.args.size() - 1;
  const std::string& x = r.name(0);
  std::string acc = r.w.adjoint_or_zeros(x);
  std::string old = r.prim(P::Get, indexed(r, acc, k));
  std::vector<Arg> put = indexed(r, acc, k);
  put.push_back(r.prim(P::Add, {old, r.dy}));
  r.w.set_adjoint(x, r.prim(P::Set, std::move(put)));
}
void rule_Set(RuleCtx& r) {  // y = x with x[i1, ..., ik] = v
  const size_t k = r.in.args.size() - 2;
  if (r.active(0)) {
    std::vector<Arg> cleared = indexed(r, r.dy, k);
    cleared.push_back(flit(0.0));
    r.give_shaped(0, r.prim(P::Set, std::move(cleared)));
  }
  if (r.active(k + 1)) {
    Shape row(r.ys.begin() + static_cast<long>(k), r.ys.end());
    std::string v = r.prim(P::Get, indexed(r, r.dy, k));
    r.w.accumulate(r.name(k + 1), v, &row);
  }
}
void rule_Slice(RuleCtx& r) {  // the rows of dy added into the sliced rows
  const Shape xs = r.type(0).tensor.shape;
  auto b = slice_bounds(resolve_attrs(r.in), xs[0]);
  std::string acc = r.w.adjoint_or_zeros(r.name(0));
  for (int64_t i = b->first; i < b->second; ++i) {
    std::string row = r.prim(P::Get, {r.dy, ilit(i - b->first)});
    std::string old = r.prim(P::Get, {acc, ilit(i)});
    acc = r.prim(P::Set, {acc, ilit(i), r.prim(P::Add, {old, row})});
  }
  r.w.set_adjoint(r.name(0), acc);
}
void rule_Reshape(RuleCtx& r) {
  const Shape xs = r.type(0).tensor.shape;
  r.give_shaped(0,
                xs.empty() ? r.prim(P::Sum, {r.dy}) : r.prim(P::Reshape, {r.dy}, {shape_attr(xs)}));
}

// ---- linear algebra ----
// v' M for v [m] and M [m, q], as a [1, m] x [m, q] product: no transposed
// copy of M per thread, and a matrix shared by every thread (data) stays
// shared, so one GEMM serves the lanes.
std::string vecmat(RuleCtx& r, const Arg& v, const Arg& m_, int64_t m, int64_t q) {
  std::string row = r.prim(P::Reshape, {v}, {shape_attr({1, m})});
  return r.prim(P::Reshape, {r.prim(P::Matmul, {row, m_})}, {shape_attr({q})});
}
void rule_Transpose(RuleCtx& r) { r.give_shaped(0, r.prim(P::Transpose, {r.dy})); }
void rule_Dot(RuleCtx& r) {
  if (r.active(0)) r.give_shaped(0, r.prim(P::Mul, {r.dy, r.arg(1)}));
  if (r.active(1)) r.give_shaped(1, r.prim(P::Mul, {r.dy, r.arg(0)}));
}
void rule_Matvec(RuleCtx& r) {  // y = M v
  if (r.active(0)) r.give_shaped(0, r.prim(P::Outer, {r.dy, r.arg(1)}));
  if (r.active(1)) r.give_shaped(1, vecmat(r, r.dy, r.arg(0), r.ys[0], r.type(1).tensor.shape[0]));
}
void rule_Matmul(RuleCtx& r) {  // y = A B
  if (r.active(0)) r.give_shaped(0, r.prim(P::Matmul, {r.dy, r.prim(P::Transpose, {r.arg(1)})}));
  if (r.active(1)) r.give_shaped(1, r.prim(P::Matmul, {r.prim(P::Transpose, {r.arg(0)}), r.dy}));
}
void rule_Outer(RuleCtx& r) {  // y = a b'
  if (r.active(0)) r.give_shaped(0, r.prim(P::Matvec, {r.dy, r.arg(1)}));
  if (r.active(1)) r.give_shaped(1, vecmat(r, r.arg(0), r.dy, r.ys[0], r.ys[1]));
}

// The table, in PrimId order, from ops.def's Grad column.
#define AB_GRAD_Rule(id) &rule_##id
#define AB_GRAD_Zero(id) nullptr
#define AB_GRAD_Leaves(id) nullptr
#define AB_GRAD_Random(id) nullptr
#define AB_GRAD_None(id) nullptr
constexpr Rule kRules[] = {
#define AB_PRIM(id, name, lo, hi, attrs, group, kind, dtypes, effects, speculate, jit, symbol, \
                grad, doc)                                                                     \
  AB_GRAD_##grad(id),
#include "ir/ops.def"
#undef AB_PRIM
};
#undef AB_GRAD_Rule
#undef AB_GRAD_Zero
#undef AB_GRAD_Leaves
#undef AB_GRAD_Random
#undef AB_GRAD_None
static_assert(std::size(kRules) == kBuiltinPrimCount);

}  // namespace

Rule rule_of(PrimId id) {
  const auto i = static_cast<size_t>(id);
  return i < std::size(kRules) ? kRules[i] : nullptr;
}

}  // namespace ab::gradient
