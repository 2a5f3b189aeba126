// The transform: G_vjpM, one generated function per basic block of G, each
// running its block forward (every write a new version), calling the
// function of the block its terminator goes to, then running the block's
// adjoint rules backward (passes/grad.h has the scheme).
#include <algorithm>

#include "passes/grad/internal.h"

namespace ab::gradient {

namespace {
std::string mask_bits(const std::vector<bool>& mask) {
  std::string s;
  for (bool b : mask) s += b ? '1' : '0';
  return s;
}
}  // namespace

void Writer::accumulate(const std::string& v, std::string c, const Shape* from) {
  const Type& t = type_of(v);
  if (from && !t.is_tuple) c = unbroadcast(c, *from, t.tensor.shape);
  auto it = adj_.find(v);
  if (it == adj_.end())
    adj_[v] = c;
  else
    it->second = add_values(it->second, c, t);
}

std::optional<std::string> Writer::pattern_adjoint(const Pattern& p, const Type& t) {
  if (!p.is_tuple) return adjoint(p.name);
  bool any = false;
  std::vector<const Pattern*> leaves;
  p.names(leaves);
  for (const Pattern* l : leaves) any |= adjoint(l->name).has_value();
  if (!any) return std::nullopt;
  std::vector<Arg> parts;
  for (size_t k = 0; k < p.elems.size(); ++k) {
    auto a = pattern_adjoint(p.elems[k], t.elems[k]);
    parts.emplace_back(a ? *a : zeros(t.elems[k]));
  }
  return prim(PrimId::Tuple, std::move(parts));
}

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
        if (info->active_results[k]) args.push_back(var(cts[k] ? *cts[k] : zeros(*ht.results[k])));
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
  const GradKind kind = prim_grad(in.prim);
  if (kind == GradKind::Leaves) {  // tuple: each operand its part of the cotangent
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
  if (!dy || !reads_active || kind == GradKind::Zero) return true;
  if (Rule rule = rule_of(in.prim)) {
    RuleCtx ctx(*this, orig, in, *dy);
    rule(ctx);
    return true;
  }
  // (legality reports the primitives without a rule before this runs)
  g_.error(orig.loc, "internal error: no gradient for '" + orig.callee.name + "' in '" +
                         src_.name.name + "'");
  return false;
}

std::string Grad::unique_name(std::string base) {
  // `base` with its dots made underscores (a function's name has none:
  // lowered names are FUNCTION.VARIABLE), and a suffix if the module or this
  // pass already has that name.
  std::replace(base.begin(), base.end(), '.', '_');
  std::string n = base;
  for (int k = 2; m_.find_func(n) || !taken_.insert(n).second; ++k)
    n = base + "_" + std::to_string(k);
  return n;
}

const VjpInfo* Grad::vjp(const Function& g, const std::vector<bool>& mask, SourceLoc why) {
  if (std::find(chain_.begin(), chain_.end(), g.name.name) != chain_.end()) {
    recursion_error(g.name.name, why);
    return nullptr;
  }
  const std::string key = g.name.name + "|" + mask_bits(mask);
  if (auto it = made_.find(key); it != made_.end()) return &it->second;
  auto ft_it = types_.funcs.find(g.name.name);
  if (ft_it == types_.funcs.end()) {
    unknown_types_error(g.name.name, why);
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
  std::set<std::string> active = active_variables(g, ft, mask);
  check_active(g, ft, active);
  if (failed_) return nullptr;
  failed_ = was_failed;

  const std::string name = unique_name(g.name.name + "_vjp" + mask_bits(mask));
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
    for (size_t i : info.adjoint_params)
      ret.push_back(var(w.adjoint_or_zeros(g.params[i].name.name)));
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

}  // namespace ab::gradient
