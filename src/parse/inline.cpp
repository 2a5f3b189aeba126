#include "parse/inline.h"

#include "parse/shipped.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace ab {

namespace {

// Every variable and label name of a function's blocks, and its parameters.
void function_names(const Function& f, std::set<std::string>& out) {
  for (const auto& p : f.params) out.insert(p.name.name);
  for (const auto& b : f.blocks) {
    out.insert(b.label.name);
    for (const auto& in : b.instrs) {
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) out.insert(l->name);
      for (const auto& a : in.args)
        if (a.is_var) out.insert(a.name);
    }
    if (b.term.kind == TermKind::Branch) out.insert(b.term.cond.name);
    for (const auto& v : b.term.values)
      if (v.is_var) out.insert(v.name);
  }
}

size_t result_count(const Function& g) {
  for (const auto& b : g.blocks)
    if (b.term.kind == TermKind::Return) return b.term.values.size();
  return 0;
}

// Joins `X: ... goto Y` with Y when X is Y's only predecessor and Y is not
// the entry: a copy's head, body and rest become one block again when its
// callee had one, so later passes (grad's one function per block, say) see
// the calling block whole. One pass: moving Y into X leaves every other
// block's predecessor count as it was, and X goes on with Y's terminator.
void merge_straight_lines(Function& f) {
  std::map<std::string, int> preds;
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < f.blocks.size(); ++k) {
    const Block& b = f.blocks[k];
    index[b.label.name] = k;
    if (b.term.kind == TermKind::Goto) ++preds[b.term.target.name];
    if (b.term.kind == TermKind::Branch) ++preds[b.term.target.name], ++preds[b.term.target2.name];
  }
  std::vector<bool> gone(f.blocks.size(), false);
  for (size_t x = 0; x < f.blocks.size(); ++x) {
    if (gone[x]) continue;
    Block& bx = f.blocks[x];
    while (bx.term.kind == TermKind::Goto && preds[bx.term.target.name] == 1) {
      auto it = index.find(bx.term.target.name);
      if (it == index.end() || it->second == 0 || it->second == x || gone[it->second]) break;
      Block& by = f.blocks[it->second];
      bx.instrs.insert(bx.instrs.end(), std::make_move_iterator(by.instrs.begin()),
                       std::make_move_iterator(by.instrs.end()));
      bx.term = std::move(by.term);
      gone[it->second] = true;
    }
  }
  size_t kept = 0;
  for (size_t k = 0; k < f.blocks.size(); ++k)
    if (!gone[k]) {
      if (kept != k) f.blocks[kept] = std::move(f.blocks[k]);
      ++kept;
    }
  f.blocks.resize(kept);
}

// The first call, in an inline function, through which that function
// reaches itself by calls of inline functions (null if none does).
const Instr* self_reaching_call(const Module& m, const Function& f) {
  std::set<std::string> seen;
  std::vector<const Function*> todo{&f};
  const Instr* first = nullptr;  // f's own call the search went through
  while (!todo.empty()) {
    const Function* g = todo.back();
    todo.pop_back();
    for (const auto& b : g->blocks)
      for (const auto& in : b.instrs) {
        if (in.kind != InstrKind::Call || in.grad) continue;
        const Function* h = m.find_func(in.callee.name);
        if (!h || !h->is_inline) continue;
        if (h == &f) return g == &f ? &in : first;
        if (!seen.insert(h->name.name).second) continue;
        if (g == &f) first = &in;
        todo.push_back(h);
      }
  }
  return nullptr;
}

class Inliner {
 public:
  Inliner(Module& m, Diagnostics& d) : m_(m), d_(d) {}

  void run(Function& f) {
    names_.clear();
    function_names(f, names_);
    int expansions = 0;
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      for (size_t i = 0; i < f.blocks[b].instrs.size(); ++i) {
        const Instr& in = f.blocks[b].instrs[i];
        if (in.kind != InstrKind::Call || in.grad) continue;
        const Function* g = m_.find_func(in.callee.name);
        if (!g || !g->is_inline || !fits(in, *g)) continue;  // verify reports a misfit
        if (++expansions > kMaxExpansions) {
          d_.error(in.loc, "inlining makes more than " + std::to_string(kMaxExpansions) +
                               " copies in function '" + f.name.name + "' (here, of '" +
                               g->name.name + "'); declare some of its helpers plain `func`");
          return;
        }
        expand(f, b, i, *g);
        break;  // the rest of the block moved to a block after the copy
      }
    }
    if (expansions > 0) merge_straight_lines(f);  // the blocks the copies split
  }

 private:
  static constexpr int kMaxExpansions = 10000;

  // The call's pattern takes the callee's results as a call's would.
  static bool fits(const Instr& in, const Function& g) {
    if (in.args.size() != g.params.size()) return false;
    size_t k = result_count(g);
    if (in.out.is_tuple && in.out.elems.empty()) return true;  // discarded
    if (k == 0) return false;
    if (k >= 2 && in.out.is_tuple && in.out.elems.size() != k) return false;
    return true;
  }

  std::string fresh(const std::string& n) {
    std::string s = prefix_ + n;
    std::replace(s.begin(), s.end(), '.', '_');
    while (names_.count(s)) s += "_";
    names_.insert(s);
    return s;
  }

  void expand(Function& f, size_t b, size_t i, const Function& g) {
    prefix_ = "i" + std::to_string(++count_) + "_";
    std::map<std::string, std::string> var, label;
    std::set<std::string> gnames;
    function_names(g, gnames);
    for (const auto& b2 : g.blocks) label[b2.label.name] = "";
    for (const auto& n : gnames)
      if (!label.count(n)) var[n] = fresh(n);
    for (auto& [from, to] : label) to = fresh(from);
    const std::string cont = fresh("ret");
    auto rename_operand = [&](Operand& o) {
      if (o.is_var) o.name = var.at(o.name);
    };
    std::vector<Pattern*> stack;
    auto rename_pattern = [&](Pattern& p) {
      stack.assign(1, &p);
      while (!stack.empty()) {
        Pattern* q = stack.back();
        stack.pop_back();
        if (!q->is_tuple) q->name = var.at(q->name);
        for (auto& e : q->elems) stack.push_back(&e);
      }
    };

    Block& caller = f.blocks[b];
    const Instr call = caller.instrs[i];
    Block rest;
    rest.label.name = cont;
    rest.label.loc = call.loc;
    rest.origin = caller.origin;
    rest.instrs.assign(caller.instrs.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                       caller.instrs.end());
    rest.term = caller.term;
    caller.instrs.resize(i);
    for (size_t k = 0; k < g.params.size(); ++k) {
      Instr copy;
      copy.kind = InstrKind::Copy;
      copy.out.name = var.at(g.params[k].name.name);
      copy.out.loc = call.loc;
      copy.args = {call.args[k]};
      copy.loc = call.loc;
      caller.instrs.push_back(std::move(copy));
    }
    caller.term = Terminator{};
    caller.term.kind = TermKind::Goto;
    caller.term.target.name = label.at(g.blocks.front().label.name);
    caller.term.loc = call.loc;

    std::vector<Block> body;
    for (Block nb : g.blocks) {
      nb.label.name = label.at(nb.label.name);
      for (auto& in : nb.instrs) {
        for (auto& a : in.args) rename_operand(a);
        if (in.kind == InstrKind::Pop) continue;
        rename_pattern(in.out);
      }
      Terminator& t = nb.term;
      if (t.kind == TermKind::Branch) {
        t.cond.name = var.at(t.cond.name);
        t.target.name = label.at(t.target.name);
        t.target2.name = label.at(t.target2.name);
      } else if (t.kind == TermKind::Goto) {
        t.target.name = label.at(t.target.name);
      } else if (t.kind == TermKind::Return) {
        for (auto& v : t.values) rename_operand(v);
        bind_results(nb, call, t.values, t.loc);
        t = Terminator{};
        t.kind = TermKind::Goto;
        t.target.name = cont;
        t.loc = nb.instrs.empty() ? call.loc : nb.instrs.back().loc;
      }
      body.push_back(std::move(nb));
    }
    // Library code copied into the user's: its errors are the user call's
    // (an inner call's copy keeps the outermost user call).
    const SourceLoc at = call.inlined_at.known() ? call.inlined_at : call.loc;
    if (shipped(g.loc) && !shipped(at))
      for (Block& nb : body)
        for (Instr& in : nb.instrs)
          if (!in.inlined_at.known()) in.inlined_at = at;
    body.push_back(std::move(rest));
    f.blocks.insert(f.blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1,
                    std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
  }

  bool shipped(const SourceLoc& loc) const { return in_shipped_file(m_.source, loc); }

  // The returned values into the call's pattern.
  static void bind_results(Block& nb, const Instr& call, const std::vector<Operand>& values,
                           SourceLoc loc) {
    const Pattern& out = call.out;
    if (out.is_tuple && out.elems.empty()) return;
    auto copy = [&](const Pattern& p, const Operand& v) {
      Instr c;
      c.kind = InstrKind::Copy;
      c.out = p;
      c.args = {v};
      c.loc = loc;
      nb.instrs.push_back(std::move(c));
    };
    if (values.size() == 1) {
      copy(out, values[0]);
    } else if (out.is_tuple) {
      for (size_t k = 0; k < values.size(); ++k) copy(out.elems[k], values[k]);
    } else {
      Instr t;
      t.kind = InstrKind::Prim;
      t.prim = PrimId::Tuple;
      t.callee.name = "tuple";
      t.out = out;
      t.args = values;
      t.loc = loc;
      nb.instrs.push_back(std::move(t));
    }
  }

  Module& m_;
  Diagnostics& d_;
  std::set<std::string> names_;  // of the function being expanded
  std::string prefix_;
  int count_ = 0;
};

}  // namespace

void inline_calls(Module& m, Diagnostics& d) {
  if (std::none_of(m.funcs.begin(), m.funcs.end(), [](const Function& f) { return f.is_inline; }))
    return;
  // An inline function that reaches itself would expand without end.
  bool cycles = false;
  for (const auto& f : m.funcs)
    if (f.is_inline)
      if (const Instr* call = self_reaching_call(m, f)) {
        d.error(call->loc, "inline function '" + f.name.name +
                               "' expands without end; an inline function cannot reach itself");
        cycles = true;
      }
  if (cycles) return;
  Inliner in(m, d);
  for (auto& f : m.funcs)
    if (!f.is_inline) in.run(f);
}

}  // namespace ab
