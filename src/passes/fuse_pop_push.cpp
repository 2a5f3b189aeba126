#include "passes/fuse_pop_push.h"

#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "passes/liveness.h"

namespace ab {
namespace {

bool reads_var(const Instr& in, const std::string& v) {
  for (const auto& a : in.args)
    if (a.is_var && a.name == v) return true;
  return false;
}

// The first leaf of `p` (in Pattern::names order) that writes v.
Pattern* written_leaf(Pattern& p, const std::string& v) {
  if (!p.is_tuple) return p.name == v ? &p : nullptr;
  for (auto& e : p.elems)
    if (Pattern* l = written_leaf(e, v)) return l;
  return nullptr;
}

void fuse_block(Block& b) {
  for (size_t i = 0; i < b.instrs.size(); ++i) {
    if (b.instrs[i].kind != InstrKind::Pop) continue;
    std::vector<NameRef> keep;
    for (const auto& name : b.instrs[i].popped) {
      bool fused = false;
      for (size_t j = i + 1; j < b.instrs.size(); ++j) {
        Instr& in = b.instrs[j];
        if (in.kind == InstrKind::Pop) {
          bool again = false;
          for (const auto& n : in.popped) again = again || n.name == name.name;
          if (again) break;
          continue;
        }
        if (reads_var(in, name.name)) break;
        if (Pattern* leaf = written_leaf(in.out, name.name)) {
          if (!leaf->in_place) {
            leaf->in_place = true;
            fused = true;
          }
          break;
        }
      }
      if (!fused) keep.push_back(name);
    }
    b.instrs[i].popped = std::move(keep);
  }
  std::vector<Instr> kept;
  for (auto& in : b.instrs)
    if (in.kind != InstrKind::Pop || !in.popped.empty()) kept.push_back(std::move(in));
  b.instrs = std::move(kept);
}

// `t = op(a)` then (pops of other variables) `x = t`, where t is read
// nowhere else: `x = op(a)`.
void fold_temporaries(Program& p) {
  std::map<std::string, int> uses;  // reads and pops of each variable
  std::set<std::string> outputs;
  for (const auto& o : p.outputs) outputs.insert(o.name);
  for (const auto& b : p.blocks) {
    for (const auto& in : b.instrs) {
      for (const auto& a : in.args)
        if (a.is_var) ++uses[a.name];
      for (const auto& n : in.popped) ++uses[n.name];
    }
    if (b.term.kind == TermKind::Branch) ++uses[b.term.cond.name];
  }
  std::map<std::string, StorageClass> cls;
  for (const auto& v : p.vars) cls[v.name.name] = v.storage;
  for (auto& b : p.blocks) {
    // The copies folded away, removed at the end (erasing each at once took
    // time quadratic in a long block).
    std::vector<bool> folded(b.instrs.size(), false);
    for (size_t i = 0; i < b.instrs.size(); ++i) {
      Instr& def = b.instrs[i];
      if (folded[i] || def.kind == InstrKind::Pop || def.out.is_tuple || def.out.in_place) continue;
      const std::string t = def.out.name;
      if (uses[t] != 1 || outputs.count(t) || cls[t] == StorageClass::Full) continue;
      // The next instruction that is not a pop must be the copy.
      size_t j = i + 1;
      bool clobbered = false;
      for (; j < b.instrs.size() && b.instrs[j].kind == InstrKind::Pop; ++j)
        for (const auto& n : b.instrs[j].popped) clobbered = clobbered || reads_var(def, n.name);
      if (clobbered || j == b.instrs.size()) continue;
      Instr& copy = b.instrs[j];
      if (copy.kind != InstrKind::Copy || copy.out.is_tuple || !copy.args[0].is_var ||
          copy.args[0].name != t)
        continue;
      Pattern dest = copy.out;
      def.out = dest;
      folded[j] = true;
      uses[t] = 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < b.instrs.size(); ++i)
      if (!folded[i]) {
        if (k != i) b.instrs[k] = std::move(b.instrs[i]);
        ++k;
      }
    b.instrs.resize(k);
  }
}

void drop_unused_declarations(Program& p) {
  // Views of the program's names (nothing changes them while this runs).
  std::unordered_set<std::string_view> used;
  for (const auto& i : p.inputs) used.insert(i.name);
  for (const auto& o : p.outputs) used.insert(o.name);
  std::vector<const Pattern*> leaves;
  for (const auto& b : p.blocks) {
    for (const auto& in : b.instrs) {
      for (const auto& a : in.args)
        if (a.is_var) used.insert(a.name);
      leaves.clear();
      in.out.names(leaves);
      for (const Pattern* l : leaves) used.insert(l->name);
      for (const auto& n : in.popped) used.insert(n.name);
    }
    if (b.term.kind == TermKind::Branch) used.insert(b.term.cond.name);
    for (const auto& v : b.term.values)
      if (v.is_var) used.insert(v.name);
  }
  std::vector<VarDecl> kept;
  for (auto& v : p.vars)
    if (used.count(v.name.name)) kept.push_back(std::move(v));
  p.vars = std::move(kept);
}

}  // namespace

void fuse_pop_push(Program& p) {
  for (auto& b : p.blocks) fuse_block(b);
  fold_temporaries(p);
  drop_unused_declarations(p);
}

}  // namespace ab
