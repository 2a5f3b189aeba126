// Type inference's whole-program driver: finding the entry, one node per
// variable, result and literal, the fixpoint over every constraint (the
// rules are in infer_rules.cpp), then the checks that need the final types
// and the TypeInfo handed to the later passes.
#include "passes/infer_types.h"

#include <cmath>
#include <functional>
#include <set>

#include "parse/syntax.h"
#include "passes/inference.h"
#include "passes/verify.h"
#include "support/strings.h"

namespace ab {

const Function* find_entry(const Module& m, const std::string& name, Diagnostics& diags) {
  // The functions a message lists: the file's own (not those it imports, nor
  // inline ones).
  std::vector<std::string> names;
  for (const auto& f : m.funcs)
    if (file_index(f.loc.line) == 0 && !f.is_inline) names.push_back(f.name.name);
  if (!name.empty()) {
    if (const Function* f = m.find_func(name)) return f;
    diags.error({}, "no function '" + name + "' to use as the entry" + did_you_mean(name, names) +
                        "; functions: " + join(names, ", "));
    return nullptr;
  }
  for (const auto& f : m.funcs)
    if (f.is_entry) return &f;
  if (const Function* f = m.find_func("main")) return f;
  if (m.funcs.size() == 1) return &m.funcs[0];
  std::vector<const Function*> roots = entry_candidates(m);
  if (roots.size() == 1) return roots[0];
  std::vector<std::string> listed;
  for (const Function* f : roots) listed.push_back(f->name.name);
  diags.error({}, "which function is the entry? " +
                      (roots.empty() ? "every function is called by another"
                                     : "no other function calls " + join(listed, ", ")) +
                      "; mark one 'entry func NAME(...)' or name it with --entry (functions: " +
                      join(names, ", ") + ")");
  return nullptr;
}

std::vector<const Function*> entry_candidates(const Module& m) {
  std::set<std::string> called;  // by another function
  for (const auto& f : m.funcs)
    for (const auto& b : f.blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && in.callee.name != f.name.name)
          called.insert(in.callee.name);
  std::vector<const Function*> out;
  for (const auto& f : m.funcs)
    if (!called.count(f.name.name) && f.name.name.rfind('_', 0) != 0 && !f.is_inline)
      out.push_back(&f);
  return out;
}

namespace infer {

TypeInfo Inference::run(const Function& entry,
                        const std::vector<std::optional<Type>>& entry_params) {
  build_nodes();
  size_t ei = index_of(entry);
  bool entry_known = true;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    int node = var_node(ei, entry.params[i].name.name);
    if (i < entry_params.size() && entry_params[i]) {
      IType t = from_type(*entry_params[i], Strength::Strong);
      IType j = nodes_[node];
      if (!join(j, t)) {
        d_.error(entry.params[i].name.loc, "parameter '" + entry.params[i].name.name +
                                               "' is declared " + describe(nodes_[node]) +
                                               " but the input is " + describe(t));
        j.state = IType::State::Error;
      }
      nodes_[node] = j;
      origin_[node] = "by the inputs";
    } else if (!entry.params[i].type) {
      entry_known = false;
    }
  }
  // Iterate to the fixpoint, then once more to report what the final
  // types make wrong.
  size_t limit = 64 + 8 * nodes_.size();
  for (size_t iter = 0; iter < limit; ++iter) {
    changed_ = false;
    sweep();
    if (!changed_) break;
  }
  reporting_ = true;
  sweep();
  for (const auto& report : pending_) report();
  for (size_t fi = 0; fi < m_.funcs.size(); ++fi)
    for (const auto& p : m_.funcs[fi].params)
      if (too_large(nodes_[var_node(fi, p.name.name)]))
        error(p.name.loc, "parameter '" + p.name.name +
                              "' has a type larger than the limit of 2^28 elements per thread");
  std::vector<std::string> reachable = reachable_from(entry);
  check_literals();
  if (entry_known) report_unknown(reachable);
  return collect(reachable);
}

void Inference::build_nodes() {
  size_t nf = m_.funcs.size();
  vars_.resize(nf);
  results_.resize(nf);
  operands_.resize(nf);
  returns_.resize(nf);
  for (size_t fi = 0; fi < nf; ++fi) {
    const Function& f = m_.funcs[fi];
    auto var = [&](const std::string& n) {
      auto it = vars_[fi].find(n);
      if (it != vars_[fi].end()) return it->second;
      int id = new_node();
      vars_[fi].emplace(n, id);
      return id;
    };
    for (const auto& p : f.params) {
      int id = var(p.name.name);
      if (p.type) {
        nodes_[id] = from_type(*p.type, Strength::Strong);
        origin_[id] = "by its annotation";
      }
    }
    size_t k = result_count(f).value_or(0);
    for (size_t r = 0; r < k; ++r) {
      int id = new_node();
      if (f.results_declared) {
        nodes_[id] = from_type(f.results[r], Strength::Strong);
        origin_[id] = "by the function's '->'";
      }
      results_[fi].push_back(id);
    }
    auto operand = [&](const Operand& o) {
      if (o.is_var) return var(o.name);
      int id = new_node(from_literal(o.lit));
      literals_.emplace_back(&o.lit, id);
      literal_locs_.push_back(o.loc);
      return id;
    };
    operands_[fi].resize(f.blocks.size());
    returns_[fi].resize(f.blocks.size());
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      const Block& b = f.blocks[bi];
      for (const auto& in : b.instrs) {
        std::vector<int> ids;
        for (const auto& a : in.args) ids.push_back(operand(a));
        operands_[fi][bi].push_back(ids);
        std::vector<const Pattern*> leaves;
        in.out.names(leaves);
        for (const Pattern* l : leaves) var(l->name);
      }
      if (b.term.kind == TermKind::Branch) var(b.term.cond.name);
      for (const auto& v : b.term.values) returns_[fi][bi].push_back(operand(v));
    }
  }
  build_deps();
}

// The nodes each constraint reads or writes, in sweep order (each block's
// instructions, then its terminator): what the rules of infer_rules.cpp
// touch.
void Inference::build_deps() {
  std::vector<const Pattern*> leaves;
  for (size_t fi = 0; fi < m_.funcs.size(); ++fi) {
    const Function& f = m_.funcs[fi];
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      const Block& b = f.blocks[bi];
      for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
        const Instr& in = b.instrs[ii];
        std::vector<int> deps = operands_[fi][bi][ii];
        const PrimInfo* info = nullptr;
        bool touches = in.kind == InstrKind::Copy;
        if (in.kind == InstrKind::Prim) {
          info = find_prim(in.callee.name);
          touches = info != nullptr;
        } else if (in.kind == InstrKind::Call) {
          if (const Function* callee = m_.find_func(in.callee.name)) {
            touches = true;
            size_t ci = index_of(*callee);
            const size_t nops = deps.size();
            for (size_t i = 0; i < nops && i < callee->params.size(); ++i)
              deps.push_back(var_node(ci, callee->params[i].name.name));
            deps.insert(deps.end(), results_[ci].begin(), results_[ci].end());
          }
        }
        if (!touches) deps.clear();  // the rule does nothing: a pop, an unknown callee
        leaves.clear();
        if (touches) in.out.names(leaves);
        for (const Pattern* l : leaves) deps.push_back(var_node(fi, l->name));
        deps_.push_back(std::move(deps));
        prim_info_.push_back(info);
      }
      std::vector<int> deps;
      if (b.term.kind == TermKind::Branch) deps.push_back(var_node(fi, b.term.cond.name));
      if (b.term.kind == TermKind::Return) {
        deps = returns_[fi][bi];
        deps.insert(deps.end(), results_[fi].begin(), results_[fi].end());
      }
      deps_.push_back(std::move(deps));
      prim_info_.push_back(nullptr);
    }
  }
  started_.assign(deps_.size(), -1);
  reports_.assign(deps_.size(), false);
}

bool Inference::due(size_t k) {
  if (started_[k] >= 0 && !(reporting_ && reports_[k])) {
    bool dirty = false;
    for (int n : deps_[k]) dirty = dirty || version_[static_cast<size_t>(n)] > started_[k];
    if (!dirty) return false;
  }
  started_[k] = clock_;
  return true;
}

// ---- reading and writing places ----
IType Inference::read(const Slot& s) const {
  if (!s.is_tuple) return nodes_[s.node];
  IType t;
  t.state = IType::State::Known;
  t.is_tuple = true;
  for (const auto& e : s.elems) t.elems.push_back(read(e));
  return t;
}

void Inference::write(const Slot& s, const IType& t, const SourceLoc& loc) {
  if (!s.is_tuple) {
    if (t.state == IType::State::Unknown) {
      // Unknown because of a reported error: so is what it flows into.
      if (t.tainted) taint(s);
      return;
    }
    IType& before = nodes_[s.node];
    IType j = before;
    if (!join(j, t)) {
      j = before;
      j.tainted = true;
    }
    if (j != before) {
      // Where its type came from: the first write, or the one that
      // changed what literals alone had made it (t = 0, then t = t + 1.0).
      bool retyped = before.is_leaf() && j.is_leaf() && before.strength == Strength::Weak &&
                     (j.dtype != before.dtype || j.strength != before.strength);
      before = std::move(j);
      changed_ = true;
      touched(s.node);
      if (origin_[s.node].empty() || (retyped && origin_loc_[s.node].known())) {
        origin_[s.node] = "at line " + std::to_string(local_line(loc.line));
        origin_loc_[s.node] = loc;
      }
    }
    return;
  }
  if (!t.known() || !t.is_tuple || t.elems.size() != s.elems.size()) {
    if (t.tainted)
      for (const auto& e : s.elems) taint(e);
    return;
  }
  for (size_t i = 0; i < s.elems.size(); ++i) write(s.elems[i], t.elems[i], loc);
}

void Inference::taint(const Slot& s) {
  if (s.is_tuple) {
    for (const auto& e : s.elems) taint(e);
  } else if (!nodes_[s.node].tainted) {
    nodes_[s.node].tainted = true;
    changed_ = true;
    touched(s.node);
  }
}

// Both places get the join of their types; `what` explains a conflict.
void Inference::equate(const Slot& a, const Slot& b, const SourceLoc& loc,
                       MessageFn what) {
  IType ta = read(a), tb = read(b);
  IType j = ta;
  if (!join(j, tb)) {
    if (!any_taint(ta) && !any_taint(tb)) error(loc, what(ta, tb));
    taint(a);
    taint(b);
    return;
  }
  write(a, j, loc);
  write(b, j, loc);
}

// A computed value flows into a place (one way).
void Inference::assign(const Slot& dest, const IType& value, const SourceLoc& loc,
                       MessageFn what) {
  IType td = read(dest);
  IType j = td;
  if (!join(j, value)) {
    if (!any_taint(td) && !any_taint(value)) error(loc, what(td, value));
    taint(dest);
    return;
  }
  write(dest, j, loc);
}

Slot Inference::pattern_slot(size_t fi, const Pattern& p) const {
  if (!p.is_tuple) return node_slot(var_node(fi, p.name));
  Slot s;
  s.is_tuple = true;
  for (const auto& e : p.elems) s.elems.push_back(pattern_slot(fi, e));
  return s;
}

Slot Inference::results_slot(size_t callee) const {
  const auto& r = results_[callee];
  if (r.size() == 1) return node_slot(r[0]);
  Slot s;
  s.is_tuple = true;
  for (int n : r) s.elems.push_back(node_slot(n));
  return s;
}

// ---- one pass over every constraint ----
void Inference::sweep() {
  size_t k = 0;  // the constraint's number
  for (size_t fi = 0; fi < m_.funcs.size(); ++fi) {
    const Function& f = m_.funcs[fi];
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      const Block& b = f.blocks[bi];
      for (size_t ii = 0; ii < b.instrs.size(); ++ii, ++k) {
        if (!due(k)) continue;
        reports_here_ = false;
        inlined_at_ = b.instrs[ii].inlined_at;
        instr(fi, b.instrs[ii], operands_[fi][bi][ii], prim_info_[k]);
        inlined_at_ = SourceLoc{};
        reports_[k] = reports_here_;
      }
      if (due(k)) terminator(fi, b.term, returns_[fi][bi]);
      ++k;
    }
  }
}

// ---- after the fixpoint ----
std::vector<std::string> Inference::reachable_from(const Function& entry) const {
  std::vector<std::string> out{entry.name.name};
  std::set<std::string> seen{entry.name.name};
  for (size_t i = 0; i < out.size(); ++i) {
    const Function* f = m_.find_func(out[i]);
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && m_.find_func(in.callee.name) &&
            seen.insert(in.callee.name).second)
          out.push_back(in.callee.name);
  }
  return out;
}

void Inference::check_literals() {
  for (size_t i = 0; i < literals_.size(); ++i) {
    const IType& t = nodes_[literals_[i].second];
    if (!t.is_leaf()) continue;
    for (const Scalar& s : literals_[i].first->elems) {
      if (s.kind != Scalar::Kind::Int) continue;
      if (t.dtype == DType::I32 && (s.i < INT32_MIN || s.i > INT32_MAX)) {
        error(literal_locs_[i], "the literal " + std::to_string(s.i) + " does not fit in i32");
        break;
      }
    }
  }
}

void Inference::report_unknown(const std::vector<std::string>& reachable) {
  for (const auto& name : reachable) {
    const Function* f = m_.find_func(name);
    size_t fi = index_of(*f);
    // The first place each variable is written, to point at.
    std::map<std::string, std::pair<SourceLoc, const Instr*>> defs;
    for (const auto& p : f->params) defs.emplace(p.name.name, std::make_pair(p.name.loc, nullptr));
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs) {
        std::vector<const Pattern*> leaves;
        in.out.names(leaves);
        for (const Pattern* l : leaves) defs.emplace(l->name, std::make_pair(l->loc, &in));
      }
    for (const auto& [var, def] : defs) {
      const IType& t = nodes_[var_node(fi, var)];
      if (t.state != IType::State::Unknown || t.tainted) continue;
      std::string msg = "cannot determine the type of '" + var + "' in '" + name + "'";
      if (def.second && def.second->kind == InstrKind::Call)
        msg += ": it comes from '" + def.second->callee.name +
               "', whose results never get a type (does its recursion reach a base case?)";
      inlined_at_ = def.second ? def.second->inlined_at : SourceLoc{};
      error(def.first, msg);
      inlined_at_ = SourceLoc{};
    }
  }
}

TypeInfo Inference::collect(const std::vector<std::string>& reachable) const {
  TypeInfo info;
  info.reachable = reachable;
  auto opt = [&](int n) -> std::optional<Type> {
    if (!complete(nodes_[n])) return std::nullopt;
    return to_type(nodes_[n]);
  };
  for (size_t fi = 0; fi < m_.funcs.size(); ++fi) {
    const Function& f = m_.funcs[fi];
    FunctionTypes ft;
    for (const auto& p : f.params) ft.params.push_back(opt(var_node(fi, p.name.name)));
    for (int r : results_[fi]) ft.results.push_back(opt(r));
    for (const auto& [name, n] : vars_[fi])
      if (auto t = opt(n)) ft.vars.emplace(name, *t);
    ft.operand_types.resize(f.blocks.size());
    ft.return_types.resize(f.blocks.size());
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      for (const auto& ids : operands_[fi][bi]) {
        std::vector<std::optional<Type>> ts;
        for (int n : ids) ts.push_back(opt(n));
        ft.operand_types[bi].push_back(ts);
      }
      for (int n : returns_[fi][bi]) ft.return_types[bi].push_back(opt(n));
    }
    info.funcs.emplace(f.name.name, std::move(ft));
  }
  return info;
}

}  // namespace infer

TypeInfo infer_types(const Module& m, const std::string& entry,
                     const std::vector<std::optional<Type>>& entry_params, Diagnostics& diags) {
  const Function* f = m.find_func(entry);
  if (!f) {
    diags.error({}, "no function '" + entry + "'");
    return {};
  }
  return infer::Inference(m, diags).run(*f, entry_params);
}

}  // namespace ab
