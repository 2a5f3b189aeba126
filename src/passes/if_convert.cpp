// if_convert: branches to selects, block merging and loop rotation (see
// if_convert.h). Each round recomputes the analyses, then converts every
// branch it can (or merges or rotates once): a function with n sequential
// ifs takes a few rounds, not n.
#include "passes/if_convert.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "passes/infer_types.h"
#include "passes/liveness.h"

namespace ab {

namespace {

using TypeMap = std::map<std::string, Type>;

std::optional<DType> operand_dtype(const Operand& o, const TypeMap& types) {
  if (!o.is_var) {
    if (o.lit.kind == Scalar::Kind::Float) return DType::F64;  // some float dtype
    if (o.lit.kind == Scalar::Kind::Bool) return DType::Bool;
    return std::nullopt;  // an integer literal may still become a float
  }
  auto it = types.find(o.name);
  if (it == types.end() || it->second.is_tuple) return std::nullopt;
  return it->second.tensor.dtype;
}

bool float_operands(const Instr& in, const TypeMap& types) {
  for (const auto& a : in.args)
    if (auto d = operand_dtype(a, types); d && is_float(*d)) return true;
  return false;
}

// Every element of a literal satisfies `pred` (integers only; a float
// literal makes the operation a float one, which cannot fail).
template <class Pred>
bool literal_all(const Operand& o, Pred pred) {
  if (o.is_var) return false;
  if (o.lit.kind == Scalar::Kind::Float) return true;
  if (o.lit.kind != Scalar::Kind::Int || o.lit.elems.empty()) return false;
  for (const auto& e : o.lit.elems)
    if (!pred(e.i)) return false;
  return true;
}

// get(x, i1, ..., ik) or set(x, i1, ..., ik, v): every index a literal
// within its dimension of x.
bool index_in_range(const Instr& in, const TypeMap& types) {
  const size_t last = in.prim == PrimId::Set ? in.args.size() - 1 : in.args.size();
  if (in.args.size() < 2 || last < 2 || !in.args[0].is_var) return false;
  auto it = types.find(in.args[0].name);
  if (it == types.end() || it->second.is_tuple) return false;
  const Shape& shape = it->second.tensor.shape;
  if (last - 1 > shape.size()) return false;
  for (size_t a = 1; a < last; ++a) {
    const Operand& i = in.args[a];
    if (i.is_var || i.lit.is_tensor || i.lit.kind != Scalar::Kind::Int || i.lit.elems.size() != 1)
      return false;
    const int64_t d = shape[a - 1], v = i.lit.elems[0].i;
    if (v < -d || v >= d) return false;
  }
  return true;
}

// The instruction can run for any thread without raising (or having an
// effect beyond its destinations).
// Whether a primitive that ops.def marks IfCannotFail cannot fail on these
// operands: each such primitive has its rule here.
bool cannot_fail(const Instr& in, const TypeMap& types) {
  switch (in.prim) {
    case PrimId::Div:
    case PrimId::Mod:
      return float_operands(in, types) || literal_all(in.args[1], [](int64_t v) { return v != 0; });
    case PrimId::Pow:
      return float_operands(in, types) || literal_all(in.args[1], [](int64_t v) { return v >= 0; });
    case PrimId::Cast: {
      std::optional<DType> to = resolve_attrs(in).dtype;
      if (!to) return false;
      if (is_float(*to) || *to == DType::Bool) return true;
      std::optional<DType> from = operand_dtype(in.args[0], types);
      return from && !is_float(*from);
    }
    case PrimId::Get:
    case PrimId::Set:
      return index_in_range(in, types);
    default:
      return false;  // a new IfCannotFail primitive needs its rule here
  }
}

// Whether `in` may run for a thread that would not have run it: ops.def's
// Speculate column (custom primitives: never).
bool is_safe(const Instr& in, const TypeMap& types) {
  if (in.kind == InstrKind::Copy) return true;
  if (in.kind != InstrKind::Prim) return false;  // calls, pops
  switch (prim_speculate(in.prim)) {
    case Speculate::Always:
      return true;
    case Speculate::Never:
      return false;
    case Speculate::IfCannotFail:
      return cannot_fail(in, types);
  }
  return false;
}

bool all_safe(const Block& b, const TypeMap& types) {
  for (const auto& in : b.instrs)
    if (!is_safe(in, types)) return false;
  return true;
}

void leaves(const Pattern& p, std::vector<Pattern*>& out) {
  if (!p.is_tuple) {
    out.push_back(const_cast<Pattern*>(&p));
    return;
  }
  for (const auto& e : p.elems) leaves(e, out);
}

class Converter {
 public:
  Converter(Function& f, const TypeMap& types, bool selects)
      : f_(f), types_(types), selects_(selects) {
    for (const auto& p : f.params) used_.insert(p.name.name);
    for (const auto& b : f.blocks) {
      for (const auto& in : b.instrs) {
        instr_reads(in, used_);
        instr_writes(in, used_);
      }
      term_reads(b.term, used_);
    }
  }

  bool run() {
    bool any = false;
    for (int round = 0; round < 10000; ++round) {
      analyse();
      if (!((selects_ && convert()) || merge() || rotate())) break;
      drop_unreachable();
      any = true;
    }
    return any;
  }

 private:
  Function& f_;
  TypeMap types_;
  bool selects_;  // diamonds and triangles become selects (else merge and rotate only)
  VarSet used_;
  int fresh_ = 0;
  // Analyses of the current blocks.
  std::unordered_map<std::string, size_t> index_;  // label -> block (the last of a label)
  std::vector<int> preds_;
  BlockLiveness live_;                               // at block boundaries, as bits
  std::vector<std::optional<LiveBits>> defined_out_;  // nullopt: not reached yet
  std::vector<bool> rewritten_;                      // [block]: converted this round

  void analyse() {
    const auto& bs = f_.blocks;
    index_.clear();
    for (size_t i = 0; i < bs.size(); ++i) index_[bs[i].label.name] = i;
    preds_.assign(bs.size(), 0);
    preds_[0] = 1;  // the function's callers
    const std::vector<std::vector<size_t>> succ = all_successors(bs);
    for (size_t i = 0; i < bs.size(); ++i)
      for (size_t s : succ[i]) ++preds_[s];
    live_ = compute_block_liveness(bs, succ);
    const size_t nv = live_.vars.size();
    // Variables defined on every path to the end of each block. Only a
    // variable live into some block is ever asked about (a select's operand
    // at a join), so the sets hold only those: temporaries and the renamed
    // arm values would make them grow with the function. Blocks are visited
    // in order, each from its predecessors' latest sets, so a chain of n
    // blocks settles in one sweep, not n.
    LiveBits universe(nv);
    for (const auto& s : live_.live_in) universe |= s;
    std::vector<LiveBits> gen(bs.size(), LiveBits(nv));
    std::vector<const Pattern*> leaves;
    for (size_t i = 0; i < bs.size(); ++i) {
      for (const auto& ins : bs[i].instrs) {
        leaves.clear();
        ins.out.names(leaves);
        for (const Pattern* l : leaves) gen[i].set(live_.vars.find(l->name));
      }
      gen[i] &= universe;
    }
    LiveBits params(nv);
    for (const auto& p : f_.params)
      if (int id = live_.vars.find(p.name.name); universe.test(id)) params.set(id);
    std::vector<std::vector<size_t>> preds(bs.size());
    for (size_t i = 0; i < bs.size(); ++i)
      for (size_t s : succ[i])
        if (s != 0) preds[s].push_back(i);  // the entry starts from the parameters only
    defined_out_.assign(bs.size(), std::nullopt);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < bs.size(); ++i) {
        std::optional<LiveBits> in;
        if (i == 0) in = params;
        for (size_t p : preds[i]) {
          if (!defined_out_[p]) continue;  // not reached yet
          if (!in)
            in = *defined_out_[p];
          else
            *in &= *defined_out_[p];
        }
        if (!in) continue;
        *in |= gen[i];
        if (defined_out_[i] != in) {
          defined_out_[i] = std::move(in);
          changed = true;
        }
      }
    }
  }

  bool live_into(size_t block, const std::string& v) const {
    return live_.live_in[block].test(live_.vars.find(v));
  }
  bool defined_at_end(size_t block, const std::string& v) const {
    return defined_out_[block]->test(live_.vars.find(v));
  }

  std::optional<size_t> target(const NameRef& label) const {
    auto it = index_.find(label.name);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  std::string fresh(const std::string& var, const char* arm) {
    for (;;) {
      std::string name = var + "_" + arm + std::to_string(++fresh_);
      if (used_.insert(name).second) return name;
    }
  }

  // Appends `arm`'s instructions to `out` with every write renamed; returns
  // the renaming (variable -> its value at the end of the arm).
  std::map<std::string, std::string> append_renamed(const Block& arm, const char* tag,
                                                    std::vector<Instr>& out) {
    std::map<std::string, std::string> ren;
    for (Instr in : arm.instrs) {
      for (auto& a : in.args)
        if (a.is_var)
          if (auto it = ren.find(a.name); it != ren.end()) a.name = it->second;
      std::vector<Pattern*> ls;
      leaves(in.out, ls);
      for (Pattern* l : ls) {
        auto it = ren.find(l->name);
        if (it == ren.end()) {
          std::string n = fresh(l->name, tag);
          if (auto t = types_.find(l->name); t != types_.end()) types_[n] = t->second;
          it = ren.emplace(l->name, n).first;
        }
        l->name = it->second;
      }
      out.push_back(std::move(in));
    }
    return ren;
  }

  bool is_arm(size_t a, size_t b) const {
    const Block& arm = f_.blocks[a];
    return a != 0 && a != b && preds_[a] == 1 && arm.term.kind == TermKind::Goto &&
           arm.instrs.size() <= kMaxArm && all_safe(arm, types_);
  }

  bool selectable(const std::string& v) const {
    auto it = types_.find(v);
    return it != types_.end() && !it->second.is_tuple;
  }

  // Every diamond and triangle convertible on this round's analyses, in
  // block order. A conversion leaves the analyses of the blocks it did not
  // rewrite valid: the arms it consumes had the branch as their only
  // predecessor, and the join keeps its live-in and defined sets. A diamond
  // touching a rewritten block, or one that becomes convertible only
  // through a later conversion, waits for the next round.
  bool convert() {
    rewritten_.assign(f_.blocks.size(), false);
    bool any = false;
    for (size_t b = 0; b < f_.blocks.size(); ++b) any = try_convert(b) || any;
    return any;
  }

  bool try_convert(size_t b) {
    const Block& B = f_.blocks[b];
    if (B.term.kind != TermKind::Branch || !defined_out_[b]) return false;
    auto t = target(B.term.target), e = target(B.term.target2);
    if (!t || !e || *t == *e) return false;
    auto goto_of = [&](size_t a) { return target(f_.blocks[a].term.target); };
    // The arms (nullopt: that side goes straight to the join) and the join.
    std::optional<size_t> then_arm, else_arm, join;
    if (is_arm(*t, b) && is_arm(*e, b) && goto_of(*t) == goto_of(*e)) {
      then_arm = t, else_arm = e, join = goto_of(*t);
    } else if (is_arm(*t, b) && goto_of(*t) == e) {
      then_arm = t, join = e;
    } else if (is_arm(*e, b) && goto_of(*e) == t) {
      else_arm = e, join = t;
    } else {
      return false;
    }
    if (!join || *join == b || *join == then_arm || *join == else_arm) return false;
    // A block rewritten earlier this round has stale analyses: next round.
    for (auto x : {std::optional<size_t>(b), then_arm, else_arm, join})
      if (x && rewritten_[*x]) return false;
    const std::string& cond = B.term.cond.name;
    auto ct = types_.find(cond);
    if (ct == types_.end() || !(ct->second == Type::scalar(DType::Bool))) return false;

    // What each arm writes, and which of those the join needs.
    VarSet written;
    for (auto arm : {then_arm, else_arm})
      if (arm)
        for (const auto& in : f_.blocks[*arm].instrs) instr_writes(in, written);
    std::vector<std::string> joined;
    for (const auto& v : written)
      if (live_into(*join, v)) joined.push_back(v);
    for (const auto& v : joined) {
      if (!selectable(v)) return false;
      // An arm that does not write v passes on v's value from before B.
      if (!defined_at_end(b, v)) {
        VarSet wt, we;
        if (then_arm)
          for (const auto& in : f_.blocks[*then_arm].instrs) instr_writes(in, wt);
        if (else_arm)
          for (const auto& in : f_.blocks[*else_arm].instrs) instr_writes(in, we);
        if (!wt.count(v) || !we.count(v)) return false;
      }
    }

    Block nb = B;
    std::map<std::string, std::string> rt, re;
    if (then_arm) rt = append_renamed(f_.blocks[*then_arm], "then", nb.instrs);
    if (else_arm) re = append_renamed(f_.blocks[*else_arm], "else", nb.instrs);
    // The condition itself last: the other selects read it.
    std::stable_partition(joined.begin(), joined.end(),
                          [&](const std::string& v) { return v != cond; });
    for (const auto& v : joined) {
      auto value = [&](const std::map<std::string, std::string>& ren) {
        Operand o;
        auto it = ren.find(v);
        o.name = it == ren.end() ? v : it->second;
        o.loc = B.term.loc;
        return o;
      };
      Instr sel;
      sel.kind = InstrKind::Prim;
      sel.prim = PrimId::Select;
      sel.callee = {"select", B.term.loc};
      Operand c;
      c.name = cond;
      c.loc = B.term.cond.loc;
      sel.args = {c, value(rt), value(re)};
      sel.out.name = v;
      sel.out.loc = B.term.loc;
      sel.loc = B.term.loc;
      nb.instrs.push_back(std::move(sel));
    }
    nb.term = Terminator{};
    nb.term.kind = TermKind::Goto;
    nb.term.target = {f_.blocks[*join].label.name, B.term.loc};
    nb.term.loc = B.term.loc;
    f_.blocks[b] = std::move(nb);
    rewritten_[b] = true;
    return true;
  }

  // X: ... goto Y, Y reached only from X: one block.
  bool merge() {
    for (size_t x = 0; x < f_.blocks.size(); ++x) {
      Block& X = f_.blocks[x];
      if (X.term.kind != TermKind::Goto) continue;
      auto y = target(X.term.target);
      if (!y || *y == x || *y == 0 || preds_[*y] != 1) continue;
      if (!all_safe(f_.blocks[*y], types_)) continue;
      // Absorb the whole chain X -> Y -> Z ... at once (one round per chain,
      // not per block): each absorbed block had X's chain as its only
      // predecessor, so preds_ stays right for what follows.
      std::vector<bool> absorbed(f_.blocks.size(), false);
      absorbed[x] = true;
      while (y && !absorbed[*y] && *y != 0 && preds_[*y] == 1 && all_safe(f_.blocks[*y], types_)) {
        absorbed[*y] = true;
        const Block& Y = f_.blocks[*y];
        X.instrs.insert(X.instrs.end(), Y.instrs.begin(), Y.instrs.end());
        X.term = Y.term;
        y = X.term.kind == TermKind::Goto ? target(X.term.target) : std::nullopt;
      }
      return true;
    }
    return false;
  }

  // X: ... goto H, H a small safe test that branches: X tests and branches
  // itself.
  bool rotate() {
    for (size_t x = 0; x < f_.blocks.size(); ++x) {
      Block& X = f_.blocks[x];
      if (X.term.kind != TermKind::Goto) continue;
      auto h = target(X.term.target);
      if (!h || *h == x) continue;
      const Block& H = f_.blocks[*h];
      if (H.term.kind != TermKind::Branch || H.instrs.size() > kMaxHeader || !all_safe(H, types_))
        continue;
      X.instrs.insert(X.instrs.end(), H.instrs.begin(), H.instrs.end());
      X.term = H.term;
      return true;
    }
    return false;
  }

  void drop_unreachable() {
    auto& bs = f_.blocks;
    const std::vector<std::vector<size_t>> succ = all_successors(bs);
    std::vector<bool> seen(bs.size(), false);
    std::vector<size_t> work = {0};
    seen[0] = true;
    while (!work.empty()) {
      size_t i = work.back();
      work.pop_back();
      for (size_t s : succ[i])
        if (!seen[s]) seen[s] = true, work.push_back(s);
    }
    std::vector<Block> kept;
    for (size_t i = 0; i < bs.size(); ++i)
      if (seen[i]) kept.push_back(std::move(bs[i]));
    bs = std::move(kept);
  }
};

}  // namespace

bool speculatable(const Instr& in, const std::map<std::string, Type>& var_types) {
  return is_safe(in, var_types);
}

bool if_convert_function(Function& f, const TypeMap& var_types) {
  if (f.blocks.empty()) return false;
  return Converter(f, var_types, true).run();
}

bool shape_blocks(Module& m, const TypeInfo& types, const std::set<std::string>& funcs) {
  bool any = false;
  for (auto& f : m.funcs) {
    if (!funcs.count(f.name.name) || f.blocks.empty()) continue;
    auto it = types.funcs.find(f.name.name);
    static const TypeMap kNone;
    any = Converter(f, it == types.funcs.end() ? kNone : it->second.vars, false).run() || any;
  }
  return any;
}

bool if_convert(Module& m, const TypeInfo& types) {
  bool any = false;
  for (auto& f : m.funcs) {
    auto it = types.funcs.find(f.name.name);
    static const TypeMap kNone;
    any = if_convert_function(f, it == types.funcs.end() ? kNone : it->second.vars) || any;
  }
  return any;
}

}  // namespace ab
