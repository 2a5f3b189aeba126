#include "passes/grad.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/prim_types.h"
#include "parse/inline.h"
#include "passes/liveness.h"

namespace ab {

namespace {

Operand var(const std::string& name) {
  Operand o;
  o.is_var = true;
  o.name = name;
  return o;
}

Operand lit(Scalar v) {
  Operand o;
  o.is_var = false;
  o.lit.kind = v.kind;
  o.lit.elems = {v};
  return o;
}
Operand flit(double v) { return lit(Scalar::of_float(v)); }
Operand ilit(int64_t v) { return lit(Scalar::of_int(v)); }

Attr int_attr(const char* key, int64_t v) {
  Attr a;
  a.key = key;
  a.lit = ilit(v).lit;
  return a;
}

Attr shape_attr(const Shape& s) {
  Attr a;
  a.key = "shape";
  a.lit.kind = Scalar::Kind::Int;
  a.lit.is_tensor = true;
  a.lit.shape = {static_cast<int64_t>(s.size())};
  for (int64_t n : s) a.lit.elems.push_back(Scalar::of_int(n));
  return a;
}

Attr dtype_attr(DType d) {
  Attr a;
  a.key = "dtype";
  a.is_dtype = true;
  a.dtype = d;
  return a;
}

Pattern name_pattern(const std::string& n) {
  Pattern p;
  p.name = n;
  return p;
}

Pattern tuple_pattern(const std::vector<std::string>& names) {
  Pattern p;
  p.is_tuple = true;
  for (const auto& n : names) p.elems.push_back(name_pattern(n));
  return p;
}

bool has_float(const Type& t) {
  if (!t.is_tuple) return is_float(t.tensor.dtype);
  for (const auto& e : t.elems)
    if (has_float(e)) return true;
  return false;
}

std::string bits(const std::vector<bool>& mask) {
  std::string s;
  for (bool b : mask) s += b ? '1' : '0';
  return s;
}

// Primitives whose result carries no gradient even from a float operand.
bool no_gradient(PrimId p) {
  switch (p) {
    case PrimId::Floor:
    case PrimId::Ceil:
    case PrimId::Round:
    case PrimId::Eq:
    case PrimId::Ne:
    case PrimId::Lt:
    case PrimId::Le:
    case PrimId::Gt:
    case PrimId::Ge:
    case PrimId::And:
    case PrimId::Or:
    case PrimId::Not:
    case PrimId::Xor:
    case PrimId::IsNan:
    case PrimId::IsFinite:
    case PrimId::Size:
    case PrimId::Iota:
    case PrimId::Zeros:
    case PrimId::ThreadIndex:
    case PrimId::Progress:
      return true;
    default:
      return false;
  }
}

struct VjpInfo {
  std::string name;
  size_t results = 0;                // G's result count
  std::vector<bool> active_results;  // which take a cotangent argument
  std::vector<size_t> adjoint_params;  // the parameters whose adjoints follow the results
};

class Grad;

// Writes one generated function: its blocks, fresh names, and the adjoint
// rules of the instructions of one block of G.
class Writer {
 public:
  Writer(Grad& g, const Function& src, const FunctionTypes& ft, const std::set<std::string>& active,
         std::string name)
      : g_(g), src_(src), ft_(ft), active_(active) {
    fn_.name.name = std::move(name);
    fn_.loc = src.loc;
    new_block("entry");
  }

  Function take() { return std::move(fn_); }

  void new_block(const std::string& label) {
    Block b;
    b.label.name = label;
    fn_.blocks.push_back(std::move(b));
  }
  Block& cur() { return fn_.blocks.back(); }

  void param(const std::string& name) {
    Param p;
    p.name.name = name;
    fn_.params.push_back(p);
  }

  std::string fresh() { return "d." + std::to_string(++counter_); }

  std::string prim(const char* op, std::vector<Operand> args, std::vector<Attr> attrs = {}) {
    std::string out = fresh();
    Instr in;
    in.kind = InstrKind::Prim;
    in.prim = find_prim(op)->id;
    in.callee.name = op;
    in.args = std::move(args);
    in.attrs = std::move(attrs);
    in.out = name_pattern(out);
    in.loc = loc_;
    cur().instrs.push_back(std::move(in));
    return out;
  }
  std::string prim(const char* op, const std::string& a) { return prim(op, {var(a)}); }
  std::string prim(const char* op, const std::string& a, const std::string& b) {
    return prim(op, {var(a), var(b)});
  }
  void copy(Pattern out, Operand v) {
    Instr in;
    in.kind = InstrKind::Copy;
    in.out = std::move(out);
    in.args = {std::move(v)};
    in.loc = loc_;
    cur().instrs.push_back(std::move(in));
  }
  void call(Pattern out, const std::string& callee, std::vector<Operand> args) {
    Instr in;
    in.kind = InstrKind::Call;
    in.out = std::move(out);
    in.callee.name = callee;
    in.args = std::move(args);
    in.loc = loc_;
    cur().instrs.push_back(std::move(in));
  }

  // Zeros of type t.
  std::string zeros(const Type& t) {
    if (t.is_tuple) {
      std::vector<Operand> parts;
      for (const auto& e : t.elems) parts.push_back(var(zeros(e)));
      return prim("tuple", std::move(parts));
    }
    std::vector<Attr> attrs;
    if (!t.tensor.shape.empty()) attrs.push_back(shape_attr(t.tensor.shape));
    attrs.push_back(dtype_attr(t.tensor.dtype));
    return prim("zeros", {}, std::move(attrs));
  }

  // The leaves of a tuple value v of type t, one level down.
  std::vector<std::string> unpack(const std::string& v, const Type& t) {
    std::vector<std::string> names;
    for (size_t k = 0; k < t.elems.size(); ++k) names.push_back(fresh());
    copy(tuple_pattern(names), var(v));
    return names;
  }

  std::string add_values(const std::string& a, const std::string& b, const Type& t) {
    if (!t.is_tuple) return prim("add", a, b);
    std::vector<std::string> x = unpack(a, t), y = unpack(b, t);
    std::vector<Operand> parts;
    for (size_t k = 0; k < t.elems.size(); ++k)
      parts.push_back(var(add_values(x[k], y[k], t.elems[k])));
    return prim("tuple", std::move(parts));
  }

  // c (of shape `from`) summed down to `to`, the shape it was broadcast from.
  std::string unbroadcast(std::string c, Shape from, const Shape& to) {
    if (from == to) return c;
    if (to.empty()) return prim("sum", {var(c)});
    while (from.size() > to.size()) {
      c = prim("sum", {var(c)}, {int_attr("axis", 0)});
      from.erase(from.begin());
    }
    bool summed = false;
    for (size_t k = to.size(); k-- > 0;)
      if (to[k] == 1 && from[k] != 1) {
        c = prim("sum", {var(c)}, {int_attr("axis", static_cast<int64_t>(k))});
        summed = true;
      }
    return summed ? prim("reshape", {var(c)}, {shape_attr(to)}) : c;
  }

  // v, the result of reducing `full` over `axis` (or all axes), broadcast
  // back to `full`.
  std::string expand(const std::string& v, const Shape& full, std::optional<int64_t> axis) {
    if (full.empty()) return v;
    if (!axis) return prim("fill", {var(v)}, {shape_attr(full)});
    Shape keep = full;
    keep[static_cast<size_t>(*axis)] = 1;
    std::string r = prim("reshape", {var(v)}, {shape_attr(keep)});
    return prim("add", r, zeros(Type::tensor_of(DType::F64, full)));
  }

  // digamma(a), the derivative of lgamma, elementwise: reflection below
  // 1/2, six steps of the recurrence, then the asymptotic series.
  std::string digamma(const std::string& a) {
    std::string neg = prim("lt", {var(a), flit(0.5)});
    std::string z = prim("select", {var(neg), var(prim("sub", {flit(1.0), var(a)})), var(a)});
    std::string acc = prim("div", {flit(1.0), var(z)});
    std::string y = z;
    for (int k = 1; k < 6; ++k) {
      y = prim("add", {var(y), flit(1.0)});
      acc = prim("add", acc, prim("div", {flit(1.0), var(y)}));
    }
    y = prim("add", {var(y), flit(1.0)});
    std::string iy = prim("div", {flit(1.0), var(y)});
    std::string iy2 = prim("mul", iy, iy);
    std::string s = prim("mul", {var(iy2), flit(1.0 / 132)});
    for (double c : {1.0 / 240, 1.0 / 252, 1.0 / 120, 1.0 / 12})
      s = prim("mul", iy2, prim("sub", {flit(c), var(s)}));
    std::string psi = prim("sub", prim("log", y), prim("mul", {var(iy), flit(0.5)}));
    psi = prim("sub", prim("sub", psi, s), acc);
    std::string pi_a = prim("mul", {var(a), flit(3.141592653589793)});
    std::string refl = prim("div", {flit(3.141592653589793), var(prim("tan", pi_a))});
    return prim("select", {var(neg), var(prim("sub", psi, refl)), var(psi)});
  }

  // ---- versions and adjoints ----
  const Type& type_of_base(const std::string& base) const { return ft_.vars.at(base); }
  const Type& type_of(const std::string& version) const {
    return type_of_base(base_.count(version) ? base_.at(version) : version);
  }
  bool is_active(const Operand& o) const {
    return o.is_var && active_.count(base_.count(o.name) ? base_.at(o.name) : o.name);
  }
  std::string new_version(const std::string& base) {
    std::string v = base + ".v" + std::to_string(++counter_);
    base_[v] = base;
    cur_[base] = v;
    return v;
  }
  std::string version(const std::string& base) const {
    auto it = cur_.find(base);
    return it == cur_.end() ? base : it->second;
  }
  void start_version(const std::string& base) { cur_[base] = base; }

  // adj(v) += c, with c of v's type (summed down from `from` for a tensor).
  void accumulate(const std::string& v, std::string c, const Shape* from = nullptr) {
    const Type& t = type_of(v);
    if (from && !t.is_tuple) c = unbroadcast(c, *from, t.tensor.shape);
    auto it = adj_.find(v);
    if (it == adj_.end())
      adj_[v] = c;
    else
      it->second = add_values(it->second, c, t);
  }
  std::optional<std::string> adjoint(const std::string& v) const {
    auto it = adj_.find(v);
    if (it == adj_.end()) return std::nullopt;
    return it->second;
  }
  std::string adjoint_or_zeros(const std::string& v) {
    if (auto a = adjoint(v)) return *a;
    return zeros(type_of(v));
  }
  void set_adjoint(const std::string& v, const std::string& a) { adj_[v] = a; }

  // The cotangent a pattern of (renamed) leaves holds, of type t: nullopt
  // when no leaf has an adjoint.
  std::optional<std::string> pattern_adjoint(const Pattern& p, const Type& t) {
    if (!p.is_tuple) return adjoint(p.name);
    bool any = false;
    std::vector<const Pattern*> leaves;
    p.names(leaves);
    for (const Pattern* l : leaves) any |= adjoint(l->name).has_value();
    if (!any) return std::nullopt;
    std::vector<Operand> parts;
    for (size_t k = 0; k < p.elems.size(); ++k) {
      auto a = pattern_adjoint(p.elems[k], t.elems[k]);
      parts.push_back(var(a ? *a : zeros(t.elems[k])));
    }
    return prim("tuple", std::move(parts));
  }

  // The adjoint rules of one (renamed) instruction; `orig` is as written in G.
  bool backward(const Instr& orig, const Instr& in);

  void set_loc(SourceLoc l) { loc_ = l; }

 private:
  bool prim_backward(const Instr& orig, const Instr& in, const std::string& y,
                     const std::string& dy);

  Grad& g_;
  const Function& src_;
  const FunctionTypes& ft_;
  const std::set<std::string>& active_;
  Function fn_;
  int counter_ = 0;
  std::map<std::string, std::string> base_;  // version -> variable of G
  std::map<std::string, std::string> cur_;   // variable of G -> its current version
  std::map<std::string, std::string> adj_;   // version -> its adjoint so far
  SourceLoc loc_;
};

class Grad {
 public:
  Grad(const Module& m, const TypeInfo& types, Diagnostics& d) : m_(m), types_(types), d_(d) {}

  const VjpInfo* vjp(const Function& g, const std::vector<bool>& mask, SourceLoc why);
  void error(SourceLoc loc, const std::string& message) {
    d_.error(loc, "value_and_grad: " + message);
    failed_ = true;
  }
  std::vector<Function>& made() { return out_; }
  const Module& module() const { return m_; }
  const FunctionTypes& types_of(const Function& g) const { return types_.funcs.at(g.name.name); }

 private:
  bool check(const Function& g, const FunctionTypes& ft);
  std::set<std::string> activity(const Function& g, const FunctionTypes& ft,
                                 const std::vector<bool>& mask);
  void block_function(const Function& g, const FunctionTypes& ft, const VjpInfo& info,
                      const std::set<std::string>& active, const std::vector<VarSet>& live_in,
                      const std::vector<std::string>& names, size_t b, bool params_are_g);

  // `base` with its dots made underscores (a function's name has none: lowered
  // names are FUNCTION.VARIABLE), and a suffix if the module or this pass
  // already has that name.
  std::string unique_name(std::string base) {
    std::replace(base.begin(), base.end(), '.', '_');
    std::string n = base;
    for (int k = 2; m_.find_func(n) || !taken_.insert(n).second; ++k)
      n = base + "_" + std::to_string(k);
    return n;
  }

  const Module& m_;
  const TypeInfo& types_;
  std::set<std::string> taken_;  // names of the generated functions
  Diagnostics& d_;
  std::map<std::string, VjpInfo> made_;  // by "G|mask"
  std::vector<std::string> chain_;      // functions being differentiated, outermost first
  std::vector<Function> out_;
  bool failed_ = false;
};

bool Writer::backward(const Instr& orig, const Instr& in) {
  set_loc(in.loc);
  std::vector<const Pattern*> leaves;
  in.out.names(leaves);
  switch (in.kind) {
    case InstrKind::Pop:
      return true;
    case InstrKind::Copy: {
      if (!is_active(orig.args[0])) return true;
      auto c = pattern_adjoint(in.out, type_of(in.args[0].name));
      if (c) accumulate(in.args[0].name, *c);
      return true;
    }
    case InstrKind::Call: {
      std::vector<bool> mask(orig.args.size());
      bool any = false;
      for (size_t i = 0; i < orig.args.size(); ++i) any |= mask[i] = is_active(orig.args[i]);
      if (!any) return true;
      const Function* h = g_.module().find_func(orig.callee.name);
      const VjpInfo* info = g_.vjp(*h, mask, in.loc);
      if (!info) return false;
      set_loc(in.loc);
      // The cotangent of each result, from the pattern's adjoints.
      const FunctionTypes& ht = g_.types_of(*h);
      std::vector<std::optional<std::string>> cts(info->results);
      bool discarded = in.out.is_tuple && in.out.elems.empty();
      if (!discarded) {
        if (info->results == 1) {
          cts[0] = pattern_adjoint(in.out, *ht.results[0]);
        } else if (in.out.is_tuple) {
          for (size_t k = 0; k < info->results; ++k)
            cts[k] = pattern_adjoint(in.out.elems[k], *ht.results[k]);
        } else if (auto a = adjoint(in.out.name)) {
          std::vector<std::string> parts = unpack(*a, type_of(in.out.name));
          for (size_t k = 0; k < info->results; ++k) cts[k] = parts[k];
        }
      }
      bool seeded = false;
      for (size_t k = 0; k < info->results; ++k) seeded |= info->active_results[k] && cts[k];
      if (!seeded) return true;
      std::vector<Operand> args = in.args;
      for (size_t k = 0; k < info->results; ++k)
        if (info->active_results[k])
          args.push_back(var(cts[k] ? *cts[k] : zeros(*ht.results[k])));
      std::vector<std::string> outs;
      for (size_t k = 0; k < info->results; ++k) outs.push_back(fresh());
      std::vector<std::string> adjs;
      for (size_t k = 0; k < info->adjoint_params.size(); ++k) adjs.push_back(fresh());
      std::vector<std::string> all = outs;
      all.insert(all.end(), adjs.begin(), adjs.end());
      call(all.size() == 1 ? name_pattern(all[0]) : tuple_pattern(all), info->name,
           std::move(args));
      for (size_t k = 0; k < adjs.size(); ++k)
        accumulate(in.args[info->adjoint_params[k]].name, adjs[k]);
      return true;
    }
    case InstrKind::Prim:
      break;
  }
  if (leaves.empty()) return true;
  if (in.prim == PrimId::Tuple) {
    std::vector<std::optional<std::string>> parts(in.args.size());
    if (in.out.is_tuple) {
      for (size_t k = 0; k < in.args.size(); ++k)
        if (is_active(orig.args[k]))
          parts[k] = pattern_adjoint(in.out.elems[k], type_of(in.args[k].name));
    } else if (auto a = adjoint(in.out.name)) {
      std::vector<std::string> leaves = unpack(*a, type_of(in.out.name));
      for (size_t k = 0; k < in.args.size(); ++k) parts[k] = leaves[k];
    }
    for (size_t k = 0; k < in.args.size(); ++k)
      if (is_active(orig.args[k]) && parts[k]) accumulate(in.args[k].name, *parts[k]);
    return true;
  }
  bool reads_active = false;
  for (const auto& o : orig.args) reads_active |= is_active(o);
  auto dy = adjoint(in.out.name);
  if (!dy || !reads_active || no_gradient(in.prim)) return true;
  return prim_backward(orig, in, in.out.name, *dy);
}

bool Writer::prim_backward(const Instr& orig, const Instr& in, const std::string& y,
                           const std::string& dy) {
  const Shape ys = type_of(y).tensor.shape;
  const std::vector<Operand>& a = in.args;
  auto active = [&](size_t k) { return k < a.size() && is_active(orig.args[k]); };
  // Contributes c (of the result's shape) to operand k, summed to its shape.
  auto give = [&](size_t k, const std::string& c) {
    if (active(k)) accumulate(a[k].name, c, &ys);
  };
  auto give_shaped = [&](size_t k, const std::string& c) {  // c has operand k's shape
    if (active(k)) accumulate(a[k].name, c);
  };
  auto axis_of = [&](size_t rank) -> std::optional<int64_t> {
    for (const auto& at : in.attrs)
      if (at.key == "axis") {
        int64_t k = at.lit.elems[0].i;
        return k < 0 ? k + static_cast<int64_t>(rank) : k;
      }
    return std::nullopt;
  };
  const std::string A = a.empty() || !a[0].is_var ? "" : a[0].name;
  auto op = [&](size_t k) { return a[k]; };
  // v' M for v [m] and M [m, q], as a [1, m] x [m, q] product: no transposed
  // copy of M per thread, and a matrix shared by every thread (data) stays
  // shared, so one GEMM serves the lanes.
  auto vecmat = [&](const Operand& v, const Operand& M, int64_t m, int64_t q) {
    std::string row = prim("reshape", {v}, {shape_attr({1, m})});
    return prim("reshape", {var(prim("matmul", {var(row), M}))}, {shape_attr({q})});
  };
  switch (in.prim) {
    case PrimId::Add:
      give(0, dy), give(1, dy);
      return true;
    case PrimId::Sub:
      give(0, dy);
      if (active(1)) give(1, prim("neg", dy));
      return true;
    case PrimId::Mul:
      if (active(0)) give(0, prim("mul", {var(dy), op(1)}));
      if (active(1)) give(1, prim("mul", {var(dy), op(0)}));
      return true;
    case PrimId::Div: {
      std::string q = prim("div", {var(dy), op(1)});
      give(0, q);
      if (active(1)) give(1, prim("neg", prim("mul", q, y)));
      return true;
    }
    case PrimId::Mod:
      give(0, dy);
      if (active(1))
        give(1, prim("neg", prim("mul", dy, prim("floor", prim("div", {op(0), op(1)})))));
      return true;
    case PrimId::Neg:
      give(0, prim("neg", dy));
      return true;
    case PrimId::Abs: {
      std::string sign = prim("select", {var(prim("lt", {op(0), flit(0.0)})), flit(-1.0),
                                         var(prim("select", {var(prim("gt", {op(0), flit(0.0)})),
                                                             flit(1.0), flit(0.0)}))});
      give(0, prim("mul", dy, sign));
      return true;
    }
    case PrimId::Min:
    case PrimId::Max: {
      std::string first =
          prim(in.prim == PrimId::Min ? "le" : "ge", {op(0), op(1)});  // ties go to a
      if (active(0)) give(0, prim("select", {var(first), var(dy), flit(0.0)}));
      if (active(1)) give(1, prim("select", {var(first), flit(0.0), var(dy)}));
      return true;
    }
    case PrimId::Pow:
      if (active(0)) {
        std::string e = prim("pow", {op(0), var(prim("sub", {op(1), flit(1.0)}))});
        give(0, prim("mul", dy, prim("mul", {var(e), op(1)})));
      }
      if (active(1)) give(1, prim("mul", dy, prim("mul", y, prim("log", {op(0)}))));
      return true;
    case PrimId::Exp:
      give(0, prim("mul", dy, y));
      return true;
    case PrimId::Log:
      give(0, prim("div", {var(dy), op(0)}));
      return true;
    case PrimId::Log1p:
      give(0, prim("div", dy, prim("add", {op(0), flit(1.0)})));
      return true;
    case PrimId::Expm1:
      give(0, prim("mul", dy, prim("add", {var(y), flit(1.0)})));
      return true;
    case PrimId::Sqrt:
      give(0, prim("div", prim("mul", {var(dy), flit(0.5)}), y));
      return true;
    case PrimId::Sin:
      give(0, prim("mul", dy, prim("cos", {op(0)})));
      return true;
    case PrimId::Cos:
      give(0, prim("neg", prim("mul", dy, prim("sin", {op(0)}))));
      return true;
    case PrimId::Tan:
      give(0, prim("mul", dy, prim("add", {flit(1.0), var(prim("mul", y, y))})));
      return true;
    case PrimId::Tanh:
      give(0, prim("mul", dy, prim("sub", {flit(1.0), var(prim("mul", y, y))})));
      return true;
    case PrimId::Sigmoid:
      give(0, prim("mul", dy, prim("mul", y, prim("sub", {flit(1.0), var(y)}))));
      return true;
    case PrimId::Erf:
    case PrimId::Erfc: {
      std::string g = prim("mul", {var(prim("exp", prim("neg", prim("mul", {op(0), op(0)})))),
                                   flit(in.prim == PrimId::Erf ? 1.1283791670955126
                                                               : -1.1283791670955126)});
      give(0, prim("mul", dy, g));
      return true;
    }
    case PrimId::Lgamma:
      give(0, prim("mul", dy, digamma(A)));
      return true;
    case PrimId::Log2:
    case PrimId::Log10:
      give(0, prim("div", dy,
                   prim("mul", {op(0), flit(in.prim == PrimId::Log2 ? 0.6931471805599453
                                                                    : 2.302585092994046)})));
      return true;
    case PrimId::Cbrt:
      give(0, prim("div", dy, prim("mul", {flit(3.0), var(prim("mul", y, y))})));
      return true;
    case PrimId::Sinh:
      give(0, prim("mul", dy, prim("cosh", {op(0)})));
      return true;
    case PrimId::Cosh:
      give(0, prim("mul", dy, prim("sinh", {op(0)})));
      return true;
    case PrimId::Asin:
    case PrimId::Acos: {
      std::string r = prim("sqrt", {var(prim("sub", {flit(1.0), var(prim("mul", {op(0), op(0)}))}))});
      std::string c = prim("div", dy, r);
      give(0, in.prim == PrimId::Asin ? c : prim("neg", c));
      return true;
    }
    case PrimId::Atan:
      give(0, prim("div", dy, prim("add", {flit(1.0), var(prim("mul", {op(0), op(0)}))})));
      return true;
    case PrimId::Atan2: {  // atan2(p, q)
      std::string r = prim("add", prim("mul", {op(0), op(0)}), prim("mul", {op(1), op(1)}));
      if (active(0)) give(0, prim("mul", dy, prim("div", {op(1), var(r)})));
      if (active(1)) give(1, prim("neg", prim("mul", dy, prim("div", {op(0), var(r)}))));
      return true;
    }
    case PrimId::Hypot:
      if (active(0)) give(0, prim("mul", dy, prim("div", {op(0), var(y)})));
      if (active(1)) give(1, prim("mul", dy, prim("div", {op(1), var(y)})));
      return true;
    case PrimId::Select:
      if (active(1)) give(1, prim("select", {op(0), var(dy), flit(0.0)}));
      if (active(2)) give(2, prim("select", {op(0), flit(0.0), var(dy)}));
      return true;
    case PrimId::Cast:
      give_shaped(0, prim("cast", {var(dy)}, {dtype_attr(type_of(A).tensor.dtype)}));
      return true;
    case PrimId::Fill:
      give_shaped(0, ys.empty() ? dy : prim("sum", dy));
      return true;
    case PrimId::Stack:
      for (size_t k = 0; k < a.size(); ++k)
        if (active(k)) give_shaped(k, prim("get", {var(dy), ilit(static_cast<int64_t>(k))}));
      return true;
    case PrimId::Concat: {  // each operand's rows of the adjoint
      int64_t at = 0;
      for (size_t k = 0; k < a.size(); ++k) {
        // (an operand may be a literal, `concat([0.0], b)`: its rows are its own)
        const int64_t rows = a[k].is_var     ? type_of(a[k].name).tensor.shape[0]
                             : a[k].lit.is_tensor && !a[k].lit.shape.empty() ? a[k].lit.shape[0]
                                                                              : 1;
        if (active(k))
          give_shaped(k, prim("slice", {var(dy)}, {int_attr("start", at), int_attr("stop", at + rows)}));
        at += rows;
      }
      return true;
    }
    case PrimId::Sum:
    case PrimId::Mean:
    case PrimId::Prod:
    case PrimId::ReduceMax:
    case PrimId::ReduceMin: {
      const Shape xs = type_of(A).tensor.shape;
      std::optional<int64_t> axis = axis_of(xs.size());
      std::string g = expand(dy, xs, axis);
      if (in.prim == PrimId::Mean) {
        int64_t n = axis ? xs[static_cast<size_t>(*axis)] : num_elements(xs);
        g = prim("div", {var(g), flit(static_cast<double>(n))});
      } else if (in.prim == PrimId::Prod) {
        g = prim("mul", g, prim("div", {var(expand(y, xs, axis)), op(0)}));
      } else if (in.prim != PrimId::Sum) {  // ties share the gradient equally
        DType dt = type_of(A).tensor.dtype;
        std::string hit =
            prim("cast", {var(prim("eq", {op(0), var(expand(y, xs, axis))}))}, {dtype_attr(dt)});
        std::vector<Attr> at;
        if (axis) at.push_back(int_attr("axis", *axis));
        std::string count = expand(prim("sum", {var(hit)}, at), xs, axis);
        g = prim("mul", g, prim("div", hit, count));
      }
      give_shaped(0, g);
      return true;
    }
    case PrimId::Get: {
      if (!active(0)) return true;
      std::string x = a[0].name;
      std::string acc = adjoint_or_zeros(x);
      std::string old = prim("get", {var(acc), op(1)});
      set_adjoint(x, prim("set", {var(acc), op(1), var(prim("add", old, dy))}));
      return true;
    }
    case PrimId::Set: {
      if (active(0)) give_shaped(0, prim("set", {var(dy), op(1), flit(0.0)}));
      if (active(2)) {
        Shape row(ys.begin() + 1, ys.end());
        std::string r = prim("get", {var(dy), op(1)});
        accumulate(a[2].name, r, &row);
      }
      return true;
    }
    case PrimId::Slice: {  // the rows of dy added into the sliced rows
      const Shape xs = type_of(A).tensor.shape;
      auto b = slice_bounds(resolve_attrs(in), xs[0]);
      std::string acc = adjoint_or_zeros(A);
      for (int64_t r = b->first; r < b->second; ++r) {
        std::string row = prim("get", {var(dy), ilit(r - b->first)});
        std::string old = prim("get", {var(acc), ilit(r)});
        acc = prim("set", {var(acc), ilit(r), var(prim("add", old, row))});
      }
      set_adjoint(A, acc);
      return true;
    }
    case PrimId::Reshape: {
      const Shape xs = type_of(A).tensor.shape;
      give_shaped(0, xs.empty() ? prim("sum", dy) : prim("reshape", {var(dy)}, {shape_attr(xs)}));
      return true;
    }
    case PrimId::Transpose:
      give_shaped(0, prim("transpose", dy));
      return true;
    case PrimId::Dot:
      if (active(0)) give_shaped(0, prim("mul", {var(dy), op(1)}));
      if (active(1)) give_shaped(1, prim("mul", {var(dy), op(0)}));
      return true;
    case PrimId::Matvec:  // y = M v
      if (active(0)) give_shaped(0, prim("outer", {var(dy), op(1)}));
      if (active(1))
        give_shaped(1, vecmat(var(dy), op(0), ys[0], type_of(a[1].name).tensor.shape[0]));
      return true;
    case PrimId::Matmul:  // y = A B
      if (active(0)) give_shaped(0, prim("matmul", {var(dy), var(prim("transpose", {op(1)}))}));
      if (active(1)) give_shaped(1, prim("matmul", {var(prim("transpose", {op(0)})), var(dy)}));
      return true;
    case PrimId::Outer:  // y = a b'
      if (active(0)) give_shaped(0, prim("matvec", {var(dy), op(1)}));
      if (active(1)) give_shaped(1, vecmat(op(0), var(dy), ys[0], ys[1]));
      return true;
    default:
      break;
  }
  g_.error(orig.loc, "no gradient for '" + orig.callee.name + "' in '" + src_.name.name + "'");
  return false;
}

bool Grad::check(const Function& g, const FunctionTypes& ft) {
  bool ok = true;
  const std::string& gn = g.name.name;
  auto known = [&](const std::string& v, SourceLoc loc) {
    if (ft.vars.count(v)) return;
    error(loc, "the type of '" + v + "' in '" + gn +
                   "' is not known without the inputs; give the inputs, or annotate");
    ok = false;
  };
  for (const auto& p : g.params) known(p.name.name, p.name.loc);
  for (const auto& b : g.blocks) {
    for (const auto& in : b.instrs) {
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) known(l->name, in.loc);
      if (in.kind == InstrKind::Call && in.grad) {
        error(in.loc, "value_and_grad inside '" + gn +
                          "', a function being differentiated: gradients of gradients are not "
                          "supported");
        ok = false;
      } else if (in.kind == InstrKind::Prim &&
                 (prim_info(in.prim).effects & prim_effect::Random) != 0) {
        error(in.loc, "'" + in.callee.name + "' draws random numbers in '" + gn +
                          "', a function being differentiated; draw them outside and pass them "
                          "in as arguments");
        ok = false;
      }
    }
  }
  if (ft.results.size() > 0)
    for (const auto& r : ft.results)
      if (!r) {
        error(g.loc, "the result types of '" + gn + "' are not known without the inputs");
        return false;
      }
  return ok;
}

std::set<std::string> Grad::activity(const Function& g, const FunctionTypes& ft,
                                     const std::vector<bool>& mask) {
  std::set<std::string> a;
  for (size_t i = 0; i < g.params.size(); ++i)
    if (mask[i] && has_float(ft.vars.at(g.params[i].name.name))) a.insert(g.params[i].name.name);
  auto reads_active = [&](const Instr& in) {
    for (const auto& o : in.args)
      if (o.is_var && a.count(o.name)) return true;
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& b : g.blocks)
      for (const auto& in : b.instrs) {
        if (!reads_active(in)) continue;
        if (in.kind == InstrKind::Prim && no_gradient(in.prim)) continue;
        std::vector<const Pattern*> leaves;
        in.out.names(leaves);
        for (const Pattern* l : leaves)
          if (has_float(ft.vars.at(l->name)) && a.insert(l->name).second) changed = true;
      }
  }
  for (const auto& b : g.blocks)
    for (const auto& in : b.instrs) {
      if (in.kind != InstrKind::Prim || !reads_active(in)) continue;
      if (static_cast<size_t>(in.prim) >= all_prims().size()) {
        error(in.loc, "'" + in.callee.name + "' is a custom primitive without a gradient, and "
                          "its operands depend on the differentiated argument");
      } else if (in.prim == PrimId::Cast && !in.out.is_tuple &&
                 !has_float(ft.vars.at(in.out.name))) {
        error(in.loc, "casting a value that depends on the differentiated argument to " +
                          ft.vars.at(in.out.name).str() +
                          " loses its gradient; compute integers from values that do not "
                          "depend on it");
      }
    }
  return a;
}

const VjpInfo* Grad::vjp(const Function& g, const std::vector<bool>& mask, SourceLoc why) {
  if (std::find(chain_.begin(), chain_.end(), g.name.name) != chain_.end()) {
    error(why, "'" + g.name.name + "' is called recursively from '" + chain_.back() +
                   "'; recursion cannot be differentiated (write it as a loop)");
    return nullptr;
  }
  const std::string key = g.name.name + "|" + bits(mask);
  if (auto it = made_.find(key); it != made_.end()) return &it->second;
  auto ft_it = types_.funcs.find(g.name.name);
  if (ft_it == types_.funcs.end()) {
    error(why, "the types of '" + g.name.name + "' are not known");
    return nullptr;
  }
  const FunctionTypes& ft = ft_it->second;
  chain_.push_back(g.name.name);
  struct PopChain {
    std::vector<std::string>& c;
    ~PopChain() { c.pop_back(); }
  } pop{chain_};
  bool was_failed = failed_;
  failed_ = false;
  if (!check(g, ft)) return nullptr;
  std::set<std::string> active = activity(g, ft, mask);
  if (failed_) return nullptr;
  failed_ = was_failed;

  const std::string name = unique_name(g.name.name + "_vjp" + bits(mask));
  VjpInfo info;
  info.name = name;
  info.results = ft.results.size();
  info.active_results.assign(info.results, false);
  for (const auto& b : g.blocks)
    if (b.term.kind == TermKind::Return)
      for (size_t k = 0; k < b.term.values.size() && k < info.results; ++k)
        if (b.term.values[k].is_var && active.count(b.term.values[k].name))
          info.active_results[k] = true;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) info.adjoint_params.push_back(i);

  BlockLiveness bl = compute_block_liveness(g.blocks);
  std::vector<VarSet> live_in;
  for (const auto& l : bl.live_in) live_in.push_back(l.names(bl.vars));
  bool entry_reentered = false;
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (size_t s : successors(g.blocks, b)) entry_reentered |= s == 0;
  std::vector<std::string> names;
  for (size_t b = 0; b < g.blocks.size(); ++b)
    names.push_back(b == 0 && !entry_reentered ? name
                                               : unique_name(name + "_" + g.blocks[b].label.name));
  const VjpInfo& stored = made_[key] = info;
  for (size_t b = 0; b < g.blocks.size() && !failed_; ++b)
    block_function(g, ft, stored, active, live_in, names, b, b == 0 && !entry_reentered);
  if (failed_) return nullptr;
  if (entry_reentered) {
    // The entry block is a loop head: its function takes its live variables,
    // and this one G's parameters.
    Writer w(*this, g, ft, active, name);
    std::vector<Operand> args;
    std::vector<std::string> outs;
    for (const auto& p : g.params) w.param(p.name.name);
    for (const auto& v : live_in[0]) args.push_back(var(v));
    for (size_t k = 0; k < info.results; ++k) outs.push_back("r." + std::to_string(k));
    for (size_t k = 0; k < info.results; ++k)
      if (info.active_results[k]) {
        w.param("ct." + std::to_string(k));
        args.push_back(var("ct." + std::to_string(k)));
      }
    std::vector<Operand> ret;
    for (const auto& o : outs) ret.push_back(var(o));
    for (const auto& v : live_in[0])
      if (active.count(v)) {
        outs.push_back("a." + v);
        w.set_adjoint(v, "a." + v);
      }
    w.call(outs.size() == 1 ? name_pattern(outs[0]) : tuple_pattern(outs), names[0],
           std::move(args));
    for (size_t i : info.adjoint_params) ret.push_back(var(w.adjoint_or_zeros(g.params[i].name.name)));
    w.cur().term.kind = TermKind::Return;
    w.cur().term.values = std::move(ret);
    out_.push_back(w.take());
  }
  return &made_.at(key);
}

void Grad::block_function(const Function& g, const FunctionTypes& ft, const VjpInfo& info,
                          const std::set<std::string>& active, const std::vector<VarSet>& live_in,
                          const std::vector<std::string>& names, size_t b, bool params_are_g) {
  const Block& blk = g.blocks[b];
  Writer w(*this, g, ft, active, names[b]);
  if (params_are_g) {
    for (const auto& p : g.params) w.param(p.name.name), w.start_version(p.name.name);
  } else {
    for (const auto& v : live_in[b]) w.param(v), w.start_version(v);
  }
  std::vector<Operand> cts;
  for (size_t k = 0; k < info.results; ++k)
    if (info.active_results[k]) {
      w.param("ct." + std::to_string(k));
      cts.push_back(var("ct." + std::to_string(k)));
    }
  // Forward: G's instructions, every write a new version.
  std::vector<std::pair<const Instr*, Instr>> done;
  for (const auto& in : blk.instrs) {
    Instr r = in;
    for (auto& o : r.args)
      if (o.is_var) o.name = w.version(o.name);
    std::vector<Pattern*> stack{&r.out};
    while (!stack.empty()) {
      Pattern* p = stack.back();
      stack.pop_back();
      if (!p->is_tuple) {
        p->name = w.new_version(p->name);
        continue;
      }
      for (auto& e : p->elems) stack.push_back(&e);
    }
    w.cur().instrs.push_back(r);
    done.emplace_back(&in, std::move(r));
  }
  // The rest of G from here, called; or G's return.
  const Terminator& t = blk.term;
  w.set_loc(t.loc);
  std::vector<Operand> results;
  if (t.kind == TermKind::Return) {
    for (const auto& v : t.values) results.push_back(v.is_var ? var(w.version(v.name)) : v);
    for (size_t k = 0; k < t.values.size() && k < info.results; ++k)
      if (info.active_results[k] && t.values[k].is_var && active.count(t.values[k].name))
        w.accumulate(w.version(t.values[k].name), "ct." + std::to_string(k));
  } else {
    std::vector<std::string> labels{t.target.name};
    if (t.kind == TermKind::Branch) labels.push_back(t.target2.name);
    VarSet out_active;
    std::vector<size_t> succ;
    for (const auto& l : labels) {
      size_t s = 0;
      while (g.blocks[s].label.name != l) ++s;
      succ.push_back(s);
      for (const auto& v : live_in[s])
        if (active.count(v)) out_active.insert(v);
    }
    if (t.kind == TermKind::Branch) {
      w.cur().term.kind = TermKind::Branch;
      w.cur().term.cond.name = w.version(t.cond.name);
      w.cur().term.target.name = "to.0";
      w.cur().term.target2.name = "to.1";
    }
    for (size_t j = 0; j < succ.size(); ++j) {
      if (t.kind == TermKind::Branch) w.new_block("to." + std::to_string(j));
      const size_t s = succ[j];
      std::vector<Operand> args;
      std::vector<std::string> outs;
      for (const auto& v : live_in[s]) args.push_back(var(w.version(v)));
      args.insert(args.end(), cts.begin(), cts.end());
      for (size_t k = 0; k < info.results; ++k) outs.push_back("r." + std::to_string(k));
      for (const auto& v : live_in[s])
        if (active.count(v)) outs.push_back(w.version(v) + ".a");
      w.call(outs.size() == 1 ? name_pattern(outs[0]) : tuple_pattern(outs), names[s],
             std::move(args));
      for (const auto& v : out_active)
        if (!live_in[s].count(v))
          w.copy(name_pattern(w.version(v) + ".a"), var(w.zeros(ft.vars.at(v))));
      if (t.kind == TermKind::Branch) {
        w.cur().term.kind = TermKind::Goto;
        w.cur().term.target.name = "back";
      }
    }
    if (t.kind == TermKind::Branch) w.new_block("back");
    for (const auto& v : out_active) w.set_adjoint(w.version(v), w.version(v) + ".a");
    for (size_t k = 0; k < info.results; ++k) results.push_back(var("r." + std::to_string(k)));
  }
  // Backward: the adjoint rules, last instruction first.
  for (auto it = done.rbegin(); it != done.rend(); ++it)
    if (!w.backward(*it->first, it->second)) return;
  w.set_loc(t.loc);
  if (params_are_g) {
    for (size_t i : info.adjoint_params)
      results.push_back(var(w.adjoint_or_zeros(g.params[i].name.name)));
  } else {
    for (const auto& v : live_in[b])
      if (active.count(v)) results.push_back(var(w.adjoint_or_zeros(v)));
  }
  w.cur().term.kind = TermKind::Return;
  w.cur().term.values = std::move(results);
  w.cur().term.target = {};
  out_.push_back(w.take());
}

}  // namespace

bool has_grad_calls(const Module& m) {
  for (const auto& f : m.funcs)
    for (const auto& b : f.blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && in.grad) return true;
  return false;
}

bool grad(Module& m, const TypeInfo& types, Diagnostics& diags) {
  if (!has_grad_calls(m)) return false;
  Grad g(m, types, diags);
  struct Edit {
    Instr* in;
    const VjpInfo* info;
  };
  std::vector<Edit> edits;
  for (auto& f : m.funcs) {
    auto ft = types.funcs.find(f.name.name);
    if (ft == types.funcs.end()) continue;  // not reachable from the entry
    for (size_t bi = 0; bi < f.blocks.size(); ++bi)
      for (size_t ii = 0; ii < f.blocks[bi].instrs.size(); ++ii) {
        Instr& in = f.blocks[bi].instrs[ii];
        if (in.kind != InstrKind::Call || !in.grad) continue;
        const Function* callee = m.find_func(in.callee.name);
        const auto& x = ft->second.operand_types[bi][ii][0];
        if (!x || x->is_tuple || !is_float(x->tensor.dtype)) {
          diags.error(in.args[0].loc,
                      "value_and_grad differentiates with respect to its second argument, which "
                      "must be an f64 or f32 scalar or tensor; here it is " +
                          (x ? x->str() : std::string("of a type not known without the inputs")));
          continue;
        }
        const FunctionTypes& ct = types.funcs.at(callee->name.name);
        if (ct.results.size() != 1 || !ct.results[0] || ct.results[0]->is_tuple ||
            !ct.results[0]->tensor.shape.empty() || !is_float(ct.results[0]->tensor.dtype)) {
          diags.error(in.callee.loc, "value_and_grad needs '" + callee->name.name +
                                         "' to return one f64 scalar" +
                                         (ct.results.size() == 1 && ct.results[0]
                                              ? "; it returns " + ct.results[0]->str()
                                              : std::string()));
          continue;
        }
        std::vector<bool> mask(callee->params.size(), false);
        mask[0] = true;
        if (const VjpInfo* info = g.vjp(*callee, mask, in.loc)) edits.push_back({&in, info});
      }
  }
  if (diags.has_errors()) return true;
  for (const Edit& e : edits) {
    e.in->grad = false;
    e.in->callee.name = e.info->name;
    if (e.info->active_results[0]) e.in->args.push_back(flit(1.0));
  }
  // A generated function of one block without calls (a straight-line
  // function's whole gradient, or the last block's part of a longer one) is
  // expanded where it is called, as an inline function is: a leapfrog step
  // then computes its gradient in its own block, without a call.
  // Expanding one may leave its caller (another generated function) straight
  // in turn, hence the rounds.
  std::set<std::string> generated;
  for (auto& fn : g.made()) {
    generated.insert(fn.name.name);
    m.funcs.push_back(std::move(fn));
  }
  for (;;) {
    std::set<std::string> expanded;
    for (auto& fn : m.funcs) {
      if (!generated.count(fn.name.name) || fn.blocks.size() != 1) continue;
      const auto& body = fn.blocks[0].instrs;
      if (std::any_of(body.begin(), body.end(),
                      [](const Instr& in) { return in.kind == InstrKind::Call; }))
        continue;
      fn.is_inline = true;
      expanded.insert(fn.name.name);
    }
    if (expanded.empty()) break;
    inline_calls(m, diags);
    m.funcs.erase(std::remove_if(m.funcs.begin(), m.funcs.end(),
                                 [&](const Function& f) { return expanded.count(f.name.name); }),
                  m.funcs.end());
    for (const auto& n : expanded) generated.erase(n);
  }
  return true;
}

}  // namespace ab
