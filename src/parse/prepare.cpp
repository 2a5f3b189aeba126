#include "parse/prepare.h"

#include "ir/ops.h"

namespace ab::syntax {

using EK = Expr::Kind;
using SK = Stmt::Kind;

std::optional<Literal> fold_literal(const Expr& e, std::pair<SourceLoc, std::string>* bad) {
  if (e.kind == EK::Lit) return e.lit;
  if (e.kind == EK::Unary && e.op == "-") {
    std::optional<Literal> l = fold_literal(e.args[0]);
    if (!l || l->is_tensor || l->kind == Scalar::Kind::Bool) return std::nullopt;
    Scalar& s = l->elems[0];
    if (s.kind == Scalar::Kind::Int)
      s.i = static_cast<int64_t>(0ULL - static_cast<uint64_t>(s.i));
    else
      s.f = -s.f;
    return l;
  }
  if (e.kind == EK::Tensor && e.args.empty()) {
    Literal out;
    out.is_tensor = true;
    out.shape = {0};
    return out;
  }
  if (e.kind == EK::Tensor) {
    std::vector<Literal> elems;
    for (const auto& a : e.args) {
      auto l = fold_literal(a, bad);
      if (!l) return std::nullopt;
      elems.push_back(std::move(*l));
    }
    Literal out;
    out.is_tensor = true;
    out.shape.push_back(static_cast<int64_t>(elems.size()));
    const Literal& first = elems.front();
    if (first.is_tensor) out.shape.insert(out.shape.end(), first.shape.begin(), first.shape.end());
    bool any_float = false, any_bool = false, any_num = false;
    for (size_t i = 0; i < elems.size(); ++i) {
      const Literal& l = elems[i];
      if (l.is_tensor != first.is_tensor || l.shape != first.shape) {
        if (bad && bad->second.empty())
          *bad = {e.args[i].loc,
                  "ragged tensor literal: every row must have the same length and depth"};
        return std::nullopt;
      }
      for (const auto& s : l.elems) {
        any_float |= s.kind == Scalar::Kind::Float;
        any_bool |= s.kind == Scalar::Kind::Bool;
        any_num |= s.kind != Scalar::Kind::Bool;
        out.elems.push_back(s);
      }
    }
    if (any_bool && any_num) {
      if (bad && bad->second.empty()) *bad = {e.loc, "tensor literal mixes booleans and numbers"};
      return std::nullopt;
    }
    out.kind = any_bool ? Scalar::Kind::Bool : any_float ? Scalar::Kind::Float : Scalar::Kind::Int;
    return out;
  }
  return std::nullopt;
}

// ---- the constants `pi` and `e` ----
// A variable of the function (a parameter, or a name anything in it assigns)
// shadows a constant of the same name in the whole function.

void assigned_names(const Body& body, std::set<std::string>& out) {
  for (const auto& s : body) {
    std::vector<const Pattern*> leaves;
    s.pat.names(leaves);
    for (const Pattern* l : leaves) out.insert(l->name);
    if (s.kind == SK::IndexAssign || s.kind == SK::For) out.insert(s.target.name);
    for (const auto& arm : s.arms) assigned_names(arm.body, out);
    assigned_names(s.else_body, out);
    assigned_names(s.body, out);
  }
}

namespace {

void substitute_constants(Expr& e, const std::set<std::string>& shadowed) {
  if (e.kind == EK::Var && (e.name == "pi" || e.name == "e") && !shadowed.count(e.name)) {
    e.kind = EK::Lit;
    e.lit = Literal{};
    e.lit.kind = Scalar::Kind::Float;
    e.lit.elems = {Scalar::of_float(e.name == "pi" ? 3.141592653589793 : 2.718281828459045)};
    return;
  }
  for (auto& a : e.args) substitute_constants(a, shadowed);
}

}  // namespace

void substitute_constants(Body& body, const std::set<std::string>& shadowed) {
  for (auto& s : body) {
    for (auto& e : s.exprs) substitute_constants(e, shadowed);
    for (auto& arm : s.arms) {
      substitute_constants(arm.cond, shadowed);
      substitute_constants(arm.body, shadowed);
    }
    substitute_constants(s.else_body, shadowed);
    substitute_constants(s.body, shadowed);
  }
}

// ---- how many results each function gives ----
// What `return g(x)` needs before any body is lowered.

bool is_module_call(const Expr& e, const File& f) {
  if (e.kind != EK::Call || (!e.explicit_call && find_prim(e.name))) return false;
  for (const auto& item : f.items)
    if (item.kind == Item::Kind::Func && item.func.header.name.name == e.name) return true;
  return false;
}

namespace {

void returns_of(const Body& body, std::vector<const Stmt*>& out) {
  for (const auto& s : body) {
    if (s.kind == SK::Return) out.push_back(&s);
    for (const auto& arm : s.arms) returns_of(arm.body, out);
    returns_of(s.else_body, out);
    returns_of(s.body, out);
  }
}

}  // namespace

std::map<std::string, size_t> result_arities(const File& f) {
  std::map<std::string, size_t> known;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& item : f.items) {
      if (item.kind != Item::Kind::Func) continue;
      const Function& h = item.func.header;
      if (known.count(h.name.name)) continue;
      std::optional<size_t> k;
      if (h.results_declared) k = h.results.size();
      std::vector<const Stmt*> rets;
      returns_of(item.func.body, rets);
      if (rets.empty()) k = 0;
      for (size_t i = 0; i < rets.size() && !k; ++i) {
        const Stmt& r = *rets[i];
        if (r.exprs.size() == 1 && is_module_call(r.exprs[0], f)) {
          auto it = known.find(r.exprs[0].name);
          if (it != known.end()) k = it->second;
        } else {
          k = r.exprs.size();
        }
      }
      if (k) {
        known[h.name.name] = *k;
        changed = true;
      }
    }
  }
  return known;
}

}  // namespace ab::syntax
