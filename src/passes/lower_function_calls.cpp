#include "passes/lower_function_calls.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ir/tail_call.h"
#include "passes/liveness.h"
#include "passes/result_names.h"
#include "passes/verify.h"

namespace ab {

std::set<std::string> reachable_from(const CallGraph& callees, const std::string& from) {
  std::set<std::string> seen{from};
  std::vector<std::string> work{from};
  while (!work.empty()) {
    std::string f = work.back();
    work.pop_back();
    if (auto it = callees.find(f); it != callees.end())
      for (const auto& g : it->second)
        if (seen.insert(g).second) work.push_back(g);
  }
  return seen;
}

const LoweredFunction* LoweringInfo::find(const std::string& name) const {
  for (const auto& f : funcs)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

std::string q(const std::string& f, const std::string& x) { return f + "." + x; }
std::string result_var(const std::string& f, size_t i) { return f + ".ret." + std::to_string(i); }

Pattern name_pattern(const std::string& n, SourceLoc loc) {
  Pattern p;
  p.name = n;
  p.loc = loc;
  return p;
}

Operand var_operand(const std::string& n, SourceLoc loc) {
  Operand o;
  o.is_var = true;
  o.name = n;
  o.loc = loc;
  return o;
}

Pattern qualify(const Pattern& p, const std::string& f) {
  Pattern out = p;
  if (!p.is_tuple) {
    out.name = q(f, p.name);
    return out;
  }
  for (auto& e : out.elems) e = qualify(e, f);
  return out;
}

Operand qualify(const Operand& o, const std::string& f) {
  Operand out = o;
  if (o.is_var) out.name = q(f, o.name);
  return out;
}

Instr copy_instr(Pattern out, Operand from, SourceLoc loc) {
  Instr in;
  in.kind = InstrKind::Copy;
  in.out = std::move(out);
  in.args.push_back(std::move(from));
  in.loc = loc;
  return in;
}

Instr pop_instr(const std::vector<std::string>& names, SourceLoc loc) {
  Instr in;
  in.kind = InstrKind::Pop;
  in.out.is_tuple = true;  // a pop writes nothing
  in.loc = loc;
  for (const auto& n : names) in.popped.push_back({n, loc});
  return in;
}

// Functions reachable from the entry, entry first.
std::vector<const Function*> reachable(const Module& m, const Function& entry) {
  std::vector<const Function*> out{&entry};
  for (size_t i = 0; i < out.size(); ++i)
    for (const auto& b : out[i]->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call)
          if (const Function* g = m.find_func(in.callee.name))
            if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  return out;
}

struct Shared {
  const Module& m;
  const TypeInfo* types;
  std::map<std::string, std::string> entry_label;  // function -> lowered entry label
  std::map<std::string, bool> needs_start;         // its entry needs a block of its own
  std::map<std::string, std::optional<Type>> var_types;
  std::vector<CallSite> calls;
  std::set<std::string> invariant;  // qualified parameters passed on unchanged (below)
};

// Parameters that keep one value per thread while their function is active:
// p of g is invariant when g never writes p and every call of g that can
// run while g is active (a call in a function g reaches, g included) is a
// call in g itself passing p on in p's own position. Such a call leaves p
// as it is, and a call from anywhere else finds no frame of g whose p it
// could change, so p needs no push at a call and no pop anywhere: it is a
// plain per-thread variable, written by the outside calls only. (A grid or
// a data array passed down a recursion is the usual case.)
std::set<std::string> invariant_params(const std::vector<const Function*>& funcs) {
  CallGraph callees;
  for (const Function* f : funcs)
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call) callees[f->name.name].insert(in.callee.name);
  auto reach = [&](const std::string& from) { return reachable_from(callees, from); };
  std::set<std::string> out;
  for (const Function* g : funcs) {
    const std::string& gname = g->name.name;
    const std::set<std::string> active = reach(gname);
    bool recursive = false;
    if (auto it = callees.find(gname); it != callees.end())
      for (const auto& c : it->second) recursive = recursive || reach(c).count(gname);
    if (!recursive) continue;  // pushes of its parameters are dropped later anyway
    VarSet written;
    for (const auto& b : g->blocks)
      for (const auto& in : b.instrs) instr_writes(in, written);
    std::vector<bool> ok(g->params.size(), true);
    for (size_t i = 0; i < ok.size(); ++i) ok[i] = !written.count(g->params[i].name.name);
    for (const Function* h : funcs) {
      if (!active.count(h->name.name)) continue;
      for (const auto& b : h->blocks)
        for (const auto& in : b.instrs) {
          if (in.kind != InstrKind::Call || in.callee.name != gname) continue;
          for (size_t i = 0; i < ok.size(); ++i)
            ok[i] = ok[i] && h == g && i < in.args.size() && in.args[i].is_var &&
                    in.args[i].name == g->params[i].name.name;
        }
    }
    for (size_t i = 0; i < ok.size(); ++i)
      if (ok[i]) out.insert(q(gname, g->params[i].name.name));
  }
  return out;
}

class FunctionLowering {
 public:
  FunctionLowering(Shared& s, const Function& f, bool halt_on_return, const LivenessInfo& live)
      : s_(s), f_(f), name_(f.name.name), halt_(halt_on_return), live_(live) {
    if (s.types) ft_ = &s.types->funcs.at(name_);
  }

  LoweredFunction run(std::vector<Block>& program) {
    LoweredFunction info;
    info.name = name_;
    for (const auto& p : f_.params) {
      info.params.push_back(q(name_, p.name.name));
      if (s_.invariant.count(info.params.back())) info.invariant.push_back(info.params.back());
    }
    size_t nres = result_count(f_).value_or(0);
    for (size_t i = 0; i < nres; ++i) info.results.push_back(result_var(name_, i));
    record_types();

    std::vector<size_t> first(f_.blocks.size()), last(f_.blocks.size());
    for (size_t bi = 0; bi < f_.blocks.size(); ++bi) {
      first[bi] = out_.size();
      lower_block(bi);
      last[bi] = out_.size() - 1;
    }
    insert_edge_pops(first, last);

    info.entry_label = s_.entry_label.at(name_);
    for (const auto& b : out_) info.labels.push_back(b.label.name);
    for (auto& b : out_) program.push_back(std::move(b));
    return info;
  }

 private:
  Shared& s_;
  const Function& f_;
  std::string name_;
  bool halt_;
  const LivenessInfo& live_;
  const FunctionTypes* ft_ = nullptr;
  std::vector<Block> out_;
  int tmp_ = 0;
  int call_ = 0;

  std::optional<Type> type_of(const std::string& unqualified) const {
    if (!ft_) return std::nullopt;
    auto it = ft_->vars.find(unqualified);
    if (it == ft_->vars.end()) return std::nullopt;
    return it->second;
  }

  void record_types() {
    for (const auto& b : f_.blocks) {
      VarSet vs;
      for (const auto& in : b.instrs) instr_reads(in, vs), instr_writes(in, vs);
      term_reads(b.term, vs);
      for (const auto& v : vs) s_.var_types[q(name_, v)] = type_of(v);
    }
    for (const auto& p : f_.params) s_.var_types[q(name_, p.name.name)] = type_of(p.name.name);
    size_t nres = result_count(f_).value_or(0);
    for (size_t i = 0; i < nres; ++i)
      s_.var_types[result_var(name_, i)] =
          ft_ && i < ft_->results.size() ? ft_->results[i] : std::nullopt;
  }

  std::string new_temp(const std::optional<Type>& t) {
    std::string n = name_ + ".tmp." + std::to_string(tmp_++);
    s_.var_types[n] = t;
    return n;
  }

  Block& cur() { return out_.back(); }
  // A lowered block of source block `source` (its label in the function).
  void open(const std::string& label, SourceLoc loc, const std::string& source) {
    Block b;
    b.label = {label, loc};
    b.origin.label = source;
    out_.push_back(std::move(b));
  }
  // Invariant parameters are never pushed, so never popped.
  void pop(const std::vector<std::string>& names, SourceLoc loc) {
    std::vector<std::string> kept;
    for (const auto& n : names)
      if (!s_.invariant.count(n)) kept.push_back(n);
    if (!kept.empty()) cur().instrs.push_back(pop_instr(kept, loc));
  }
  std::vector<std::string> qualified(const VarSet& vs) const {
    std::vector<std::string> out;
    for (const auto& v : vs) out.push_back(q(name_, v));
    return out;
  }

  void lower_block(size_t bi) {
    const Block& b = f_.blocks[bi];
    std::string label = q(name_, b.label.name);
    if (bi == 0 && s_.needs_start.at(name_)) {
      // The caller's edge into the function gets a block of its own for
      // popping parameters that are never read.
      open(s_.entry_label.at(name_), b.label.loc, b.label.name);
      VarSet dead;
      for (const auto& p : f_.params)
        if (!live_.live_in[0].count(p.name.name)) dead.insert(p.name.name);
      pop(qualified(dead), b.label.loc);
      cur().term.kind = TermKind::Goto;
      cur().term.target = {label, b.label.loc};
      cur().term.loc = b.label.loc;
    }
    open(label, b.label.loc, b.label.name);
    if (bi == 0 && !s_.needs_start.at(name_)) {
      VarSet dead;
      for (const auto& p : f_.params)
        if (!live_.live_in[0].count(p.name.name)) dead.insert(p.name.name);
      pop(qualified(dead), b.label.loc);
    }
    for (size_t k = 0; k < b.instrs.size(); ++k) {
      const Instr& in = b.instrs[k];
      if (in.kind == InstrKind::Call) {
        if (lower_call(bi, k)) return;  // a tail call ended the block
      } else {
        lower_plain(bi, k);
      }
    }
    lower_terminator(bi);
  }

  // A primitive or copy. A variable it both reads and writes goes through a
  // temporary, so that its old value is popped only after it was read.
  void lower_plain(size_t bi, size_t k) {
    const Instr& in = f_.blocks[bi].instrs[k];
    const VarSet& lo = live_.instr_out[bi][k];
    VarSet reads, writes;
    instr_reads(in, reads);
    instr_writes(in, writes);
    Instr j = in;
    for (auto& a : j.args) a = qualify(a, name_);
    j.out = qualify(in.out, name_);
    std::vector<std::pair<std::string, std::string>> renamed;  // var -> temp
    std::function<void(Pattern&, const Pattern&)> rename = [&](Pattern& p, const Pattern& src) {
      if (src.is_tuple) {
        for (size_t i = 0; i < src.elems.size(); ++i) rename(p.elems[i], src.elems[i]);
        return;
      }
      if (reads.count(src.name)) {
        std::string t = new_temp(type_of(src.name));
        renamed.emplace_back(src.name, t);
        p.name = t;
      }
    };
    rename(j.out, in.out);
    cur().instrs.push_back(std::move(j));
    VarSet popped;
    for (const auto& [var, t] : renamed) {
      pop({q(name_, var)}, in.loc);
      popped.insert(var);
      cur().instrs.push_back(
          copy_instr(name_pattern(q(name_, var), in.loc), var_operand(t, in.loc), in.loc));
      pop({t}, in.loc);
    }
    VarSet dying;
    for (const auto& r : reads)
      if (!lo.count(r) && !popped.count(r)) dying.insert(r);
    for (const auto& w : writes)
      if (!lo.count(w)) dying.insert(w);
    pop(qualified(dying), in.loc);
  }

  // Returns true when the call was a tail call that ended the block.
  bool lower_call(size_t bi, size_t k) {
    const Block& b = f_.blocks[bi];
    const Instr& in = b.instrs[k];
    const Function& g = *s_.m.find_func(in.callee.name);
    const std::string gname = g.name.name;
    const VarSet& lo = live_.instr_out[bi][k];
    VarSet reads, writes;
    instr_reads(in, reads);
    instr_writes(in, writes);
    bool self = gname == name_;
    bool tail = is_tail_self_call(f_, bi, k);
    // Caller variables that die here: read and not live after, or about to
    // be overwritten by the results.
    VarSet dying;
    for (const auto& r : reads)
      if (!lo.count(r) || writes.count(r)) dying.insert(r);

    std::vector<std::string> params;
    for (const auto& p : g.params) params.push_back(q(gname, p.name.name));
    // 1. An argument that reads one of the callee's own parameter variables
    //    (a call of the function itself) is copied first only when the
    //    pushes below would change it before it is read: when it reads the
    //    parameter of an earlier position (already pushed), or the parameter
    //    of its own position that dies here (popped just before its push).
    //    A dying parameter passed on in its own position needs nothing at
    //    all: the caller's value simply becomes the callee's.
    auto position = [&](const std::string& v) {
      auto it = std::find(params.begin(), params.end(), v);
      return it == params.end() ? std::string::npos : static_cast<size_t>(it - params.begin());
    };
    std::vector<Operand> argv;
    std::vector<std::string> temps;
    std::vector<bool> passed_on(in.args.size(), false);
    for (size_t i = 0; i < in.args.size(); ++i) {
      Operand o = qualify(in.args[i], name_);
      size_t j = o.is_var ? position(o.name) : std::string::npos;
      bool dies = j != std::string::npos && self && dying.count(g.params[j].name.name);
      if (j == i && dies) {
        passed_on[i] = true;
      } else if (j != std::string::npos && (j < i || (j == i && dies))) {
        std::string t = new_temp(s_.var_types[o.name]);
        cur().instrs.push_back(copy_instr(name_pattern(t, in.args[i].loc), o, in.loc));
        temps.push_back(t);
        o = var_operand(t, in.args[i].loc);
      }
      argv.push_back(o);
    }
    // 2. Push the arguments; a caller parameter that dies here is popped
    //    just before the push onto the same stack (fused later into `p! =`).
    VarSet popped;
    for (size_t i = 0; i < params.size() && i < argv.size(); ++i) {
      const std::string& pname = g.params[i].name.name;
      if (self && s_.invariant.count(params[i])) {  // the callee's value is the caller's
        popped.insert(pname);
        continue;
      }
      if (passed_on[i]) {
        popped.insert(pname);
        continue;
      }
      if (self && dying.count(pname) && !popped.count(pname)) {
        pop({params[i]}, in.loc);
        popped.insert(pname);
      }
      cur().instrs.push_back(copy_instr(name_pattern(params[i], in.loc), argv[i], in.loc));
    }
    // 3. The other caller variables that die here, and the temporaries.
    VarSet rest;
    for (const auto& d : dying)
      if (!popped.count(d)) rest.insert(d);
    pop(qualified(rest), in.loc);
    pop(temps, in.loc);

    if (tail) {
      cur().term.kind = TermKind::Goto;
      cur().term.target = {s_.entry_label.at(gname), in.loc};
      cur().term.loc = in.loc;
      return true;
    }
    std::string ret = q(name_, b.label.name) + "." + std::to_string(++call_);
    cur().term.kind = TermKind::PushGoto;
    cur().term.target = {ret, in.loc};
    cur().term.target2 = {s_.entry_label.at(gname), in.loc};
    cur().term.loc = in.callee.loc;  // errors at the call point at the callee's name
    CallSite site{name_, gname, {}};
    for (const auto& v : lo)
      if (!writes.count(v) && !s_.invariant.count(q(name_, v)))
        site.live_across.insert(q(name_, v));
    s_.calls.push_back(std::move(site));

    open(ret, in.loc, b.label.name);
    size_t nres = result_count(g).value_or(0);
    std::vector<std::string> results;
    for (size_t i = 0; i < nres; ++i) results.push_back(result_var(gname, i));
    bool discarded = in.out.is_tuple && in.out.elems.empty();
    if (!discarded && nres > 0) {
      Pattern out = qualify(in.out, name_);
      if (nres == 1) {
        cur().instrs.push_back(copy_instr(out, var_operand(results[0], in.loc), in.loc));
      } else if (out.is_tuple && out.elems.size() == nres) {
        for (size_t i = 0; i < nres; ++i)
          cur().instrs.push_back(copy_instr(out.elems[i], var_operand(results[i], in.loc), in.loc));
      } else {
        // One name bound to all the results: pack them.
        Instr pack;
        pack.kind = InstrKind::Prim;
        pack.prim = PrimId::Tuple;
        pack.callee = {"tuple", in.loc};
        pack.out = out;
        pack.loc = in.loc;
        for (const auto& r : results) pack.args.push_back(var_operand(r, in.loc));
        cur().instrs.push_back(std::move(pack));
      }
    }
    pop(results, in.loc);
    VarSet dead_defs;
    for (const auto& w : writes)
      if (!lo.count(w)) dead_defs.insert(w);
    pop(qualified(dead_defs), in.loc);
    return false;
  }

  void lower_terminator(size_t bi) {
    const Terminator& t = f_.blocks[bi].term;
    Terminator lt = t;
    if (t.kind == TermKind::Branch) {
      lt.cond.name = q(name_, t.cond.name);
      lt.target2.name = q(name_, t.target2.name);
    }
    if (t.kind == TermKind::Branch || t.kind == TermKind::Goto)
      lt.target.name = q(name_, t.target.name);
    if (t.kind == TermKind::Return) {
      for (size_t i = 0; i < t.values.size(); ++i)
        cur().instrs.push_back(copy_instr(name_pattern(result_var(name_, i), t.values[i].loc),
                                          qualify(t.values[i], name_), t.loc));
      pop(qualified(live_.term_in[bi]), t.loc);
      lt = Terminator{};
      lt.kind = halt_ ? TermKind::Halt : TermKind::IndirectGoto;
      lt.loc = t.loc;
    }
    cur().term = lt;
  }

  // Variables alive at the end of a block but dead on one of its edges are
  // popped on that edge: at the start of the successor when it has no other
  // predecessor, otherwise in a block of their own.
  void insert_edge_pops(const std::vector<size_t>& first, const std::vector<size_t>& last) {
    size_t nb = f_.blocks.size();
    std::map<std::string, size_t> index;
    for (size_t bi = 0; bi < nb; ++bi) index.emplace(f_.blocks[bi].label.name, bi);
    std::vector<std::set<size_t>> preds(nb);
    const std::vector<std::vector<size_t>> succ = all_successors(f_.blocks);
    for (size_t bi = 0; bi < nb; ++bi)
      for (size_t s : succ[bi]) preds[s].insert(bi);
    std::vector<Block> extra;
    std::vector<std::pair<size_t, Instr>> prepend;  // lowered block index, pops
    for (size_t bi = 0; bi < nb; ++bi) {
      Block& lb = out_[last[bi]];
      if (lb.term.kind != TermKind::Branch && lb.term.kind != TermKind::Goto) continue;
      if (lb.term.kind == TermKind::Goto && lb.term.target.name == s_.entry_label.at(name_) &&
          f_.blocks[bi].term.kind == TermKind::Return)
        continue;  // a tail call: its pops are already done
      for (NameRef* target : {&lb.term.target, &lb.term.target2}) {
        if (lb.term.kind == TermKind::Goto && target == &lb.term.target2) break;
        const std::string& src_label = target == &lb.term.target ? f_.blocks[bi].term.target.name
                                                                 : f_.blocks[bi].term.target2.name;
        size_t si = index.at(src_label);
        VarSet dead;
        for (const auto& v : live_.term_in[bi])
          if (!live_.live_in[si].count(v)) dead.insert(v);
        if (dead.empty()) continue;
        size_t npred = preds[si].size() + (si == 0 ? 1 : 0);
        if (npred == 1) {
          prepend.emplace_back(first[si], pop_instr(qualified(dead), lb.term.loc));
        } else {
          Block e;
          e.label = {q(name_, f_.blocks[bi].label.name) + ".to." + src_label, lb.term.loc};
          e.instrs.push_back(pop_instr(qualified(dead), lb.term.loc));
          e.term.kind = TermKind::Goto;
          e.term.target = {target->name, lb.term.loc};
          e.term.loc = lb.term.loc;
          target->name = e.label.name;
          bool exists = false;
          for (const auto& x : extra) exists = exists || x.label.name == e.label.name;
          if (!exists) extra.push_back(std::move(e));
        }
      }
    }
    for (auto& [bi, pops] : prepend) {
      auto& instrs = out_[bi].instrs;
      // After the entry's own pops of unread parameters, before the rest.
      instrs.insert(instrs.begin(), std::move(pops));
    }
    for (auto& e : extra) out_.push_back(std::move(e));
  }
};

}  // namespace

Lowered lower_function_calls(const Module& m, const std::string& entry, const TypeInfo* types,
                             const std::map<std::string, LivenessInfo>* liveness) {
  Lowered result;
  const Function* ef = m.find_func(entry);
  if (!ef) return result;
  std::vector<const Function*> funcs = reachable(m, *ef);
  Shared s{m, types, {}, {}, {}, {}, invariant_params(funcs)};
  bool entry_called = false;
  // Each function's liveness: the liveness pass's when it ran, else computed
  // here, once per function.
  std::map<std::string, LivenessInfo> computed;
  std::vector<const LivenessInfo*> lives;
  for (const Function* f : funcs) {
    const LivenessInfo* cached = nullptr;
    if (liveness)
      if (auto it = liveness->find(f->name.name); it != liveness->end()) cached = &it->second;
    lives.push_back(cached ? cached : &(computed[f->name.name] = compute_liveness(f->blocks)));
  }
  for (size_t fi = 0; fi < funcs.size(); ++fi) {
    const Function* f = funcs[fi];
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && in.callee.name == entry) entry_called = true;
    // A function whose entry block is also a loop target and has parameters
    // it never reads gets a separate first block for popping them.
    const LivenessInfo& live = *lives[fi];
    bool entry_has_preds = false;
    for (const auto& succ : all_successors(f->blocks))
      for (size_t sidx : succ) entry_has_preds = entry_has_preds || sidx == 0;
    bool dead_params = false;
    for (const auto& p : f->params)
      dead_params = dead_params || !live.live_in[0].count(p.name.name);
    bool start = entry_has_preds && dead_params;
    s.needs_start[f->name.name] = start;
    s.entry_label[f->name.name] =
        q(f->name.name, f->blocks[0].label.name) + (start ? ".params" : "");
  }
  Program p;
  p.entry = {entry, ef->name.loc};
  for (size_t fi = 0; fi < funcs.size(); ++fi) {
    bool halt = funcs[fi] == ef && !entry_called;
    result.info.funcs.push_back(FunctionLowering(s, *funcs[fi], halt, *lives[fi]).run(p.blocks));
  }
  for (const auto& prm : ef->params) p.inputs.push_back({q(entry, prm.name.name), prm.name.loc});
  for (const auto& r : result.info.find(entry)->results) p.outputs.push_back({r, ef->loc});
  // The lowered program keeps the entry's result names (they name its outputs).
  std::vector<std::string> names = result_names(m, *ef);
  if (names.size() == p.outputs.size() &&
      std::any_of(names.begin(), names.end(), [](const auto& n) { return !n.empty(); }))
    p.output_names = std::move(names);
  result.info.calls = std::move(s.calls);

  // Declarations, in order of first appearance.
  std::vector<std::string> order;
  std::set<std::string> seen;
  auto note = [&](const std::string& n) {
    if (seen.insert(n).second) order.push_back(n);
  };
  for (const auto& i : p.inputs) note(i.name);
  for (const auto& b : p.blocks) {
    for (const auto& in : b.instrs) {
      for (const auto& a : in.args)
        if (a.is_var) note(a.name);
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) note(l->name);
      for (const auto& n : in.popped) note(n.name);
    }
    if (b.term.kind == TermKind::Branch) note(b.term.cond.name);
  }
  for (const auto& o : p.outputs) note(o.name);
  for (const auto& n : order) {
    VarDecl d;
    d.name = {n, {}};
    auto it = s.var_types.find(n);
    if (it != s.var_types.end()) d.type = it->second;
    d.storage = StorageClass::Full;
    p.vars.push_back(std::move(d));
  }
  result.module.program = std::move(p);
  result.module.source = m.source;
  return result;
}

// ---- the stack-discipline checker ------------------------------------------

namespace {

// Variables are numbered by VarIndex (in name order) and a path's stack
// depths are one vector of counts, so following an edge copies a vector, not
// a map of names.
class DisciplineChecker {
 public:
  DisciplineChecker(const Program& p, const LoweringInfo& info, bool declared, Diagnostics& d)
      : p_(p), info_(info), d_(d) {
    for (size_t i = 0; i < p.blocks.size(); ++i) index_[p.blocks[i].label.name] = i;
    std::vector<std::string_view> extra;
    for (const auto& v : p.vars) extra.push_back(v.name.name);
    for (const auto& f : info.funcs) {
      extra.insert(extra.end(), f.params.begin(), f.params.end());
      extra.insert(extra.end(), f.results.begin(), f.results.end());
      entries_[f.entry_label] = &f;  // the last of a label, as a scan would find
    }
    vars_ = VarIndex(p.blocks, extra);
    tracked_.assign(vars_.size(), !declared);
    if (declared)
      for (const auto& v : p.vars) tracked_[static_cast<size_t>(vars_.find(v.name.name))] =
          v.storage == StorageClass::Full;
    for (const auto& f : info.funcs)  // never pushed nor popped
      for (const auto& v : f.invariant) tracked_[static_cast<size_t>(vars_.find(v))] = false;
  }

  void run() {
    for (const auto& f : info_.funcs) check(f);
  }

 private:
  using State = std::vector<int>;  // [variable id]: depth relative to the call
  const Program& p_;
  const LoweringInfo& info_;
  Diagnostics& d_;
  std::unordered_map<std::string_view, size_t> index_;
  std::unordered_map<std::string_view, const LoweredFunction*> entries_;
  VarIndex vars_;
  std::vector<bool> tracked_;  // [variable id]

  int id(const std::string& v) const { return vars_.find(v); }
  bool tracked(int v) const { return tracked_[static_cast<size_t>(v)]; }

  void fail(const LoweredFunction& f, const std::string& label, const std::string& msg) {
    d_.error({}, "stack discipline of '" + f.name + "' broken in block '" + label + "': " + msg);
  }

  struct Item {
    const std::string* label;
    State st;
  };

  void check(const LoweredFunction& f) {
    State start(vars_.size(), 0);
    for (const auto& prm : f.params)
      if (tracked(id(prm))) start[static_cast<size_t>(id(prm))] = 1;
    std::vector<std::optional<State>> seen(p_.blocks.size());
    std::vector<Item> work;
    work.push_back({&f.entry_label, std::move(start)});
    size_t errors_before = d_.error_count();
    while (!work.empty() && d_.error_count() == errors_before) {
      const std::string& label = *work.back().label;
      State st = std::move(work.back().st);
      work.pop_back();
      auto bi = index_.find(label);
      if (bi == index_.end()) {
        fail(f, label, "no such block");
        return;
      }
      std::optional<State>& was = seen[bi->second];
      if (was) {
        if (*was != st) fail(f, label, "the stack depths differ between the paths into it");
        continue;
      }
      was = st;
      const Block& b = p_.blocks[bi->second];
      auto need = [&](const std::string& name, const char* what) {
        int v = id(name);
        if (tracked(v) && st[static_cast<size_t>(v)] < 1)
          fail(f, label, std::string(what) + " of '" + name + "' with an empty stack");
      };
      auto add = [&](const std::string& name, int delta) {
        int v = id(name);
        if (tracked(v)) st[static_cast<size_t>(v)] += delta;
      };
      std::vector<const Pattern*> leaves;
      for (const auto& in : b.instrs) {
        if (in.kind == InstrKind::Pop) {
          for (const auto& n : in.popped) {
            need(n.name, "pop");
            add(n.name, -1);
          }
          continue;
        }
        for (const auto& a : in.args)
          if (a.is_var) need(a.name, "read");
        leaves.clear();
        in.out.names(leaves);
        for (const Pattern* l : leaves) {
          if (!tracked(id(l->name))) continue;
          if (l->in_place)
            need(l->name, "in-place update");
          else
            add(l->name, 1);
        }
      }
      const Terminator& t = b.term;
      switch (t.kind) {
        case TermKind::Branch:
          need(t.cond.name, "read");
          work.push_back({&t.target.name, st});
          work.push_back({&t.target2.name, std::move(st)});
          break;
        case TermKind::Goto:
          work.push_back({&t.target.name, std::move(st)});
          break;
        case TermKind::PushGoto: {
          auto g = entries_.find(t.target2.name);
          if (g == entries_.end()) {
            fail(f, label, "push_goto to '" + t.target2.name + "', which is no function's entry");
            break;
          }
          for (const auto& prm : g->second->params) {
            need(prm, "call with a missing argument: parameter");
            add(prm, -1);
          }
          for (const auto& r : g->second->results) add(r, 1);
          work.push_back({&t.target.name, std::move(st)});
          break;
        }
        case TermKind::IndirectGoto:
        case TermKind::Halt:
        case TermKind::Return: {
          State want(vars_.size(), 0);
          for (const auto& r : f.results)
            if (tracked(id(r))) want[static_cast<size_t>(id(r))] = 1;
          if (st != want) {
            // In name order: the depths that differ, then the results missing.
            std::string diff;
            for (size_t v = 0; v < st.size(); ++v)
              if (st[v] != 0 && st[v] != want[v])
                diff += " " + vars_.name(static_cast<int>(v)) + "=" + std::to_string(st[v]);
            for (size_t v = 0; v < st.size(); ++v)
              if (want[v] != 0 && st[v] == 0) diff += " " + vars_.name(static_cast<int>(v)) + "=0";
            fail(f, label,
                 "at the return, stack depths (relative to the call) are" + diff +
                     " (parameters must end at 0, results at 1, all else 0)");
          }
          break;
        }
      }
    }
  }
};

}  // namespace

void check_stack_discipline(const Program& p, const LoweringInfo& info, bool declared_classes,
                            Diagnostics& diags) {
  DisciplineChecker(p, info, declared_classes, diags).run();
}

}  // namespace ab
