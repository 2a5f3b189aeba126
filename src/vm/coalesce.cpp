#include "vm/coalesce.h"

#include <cstdint>
#include <vector>

#include "passes/liveness.h"

namespace ab {
namespace {

// A set of variables by number, one bit each.
struct VarBits {
  std::vector<uint64_t> w;
  explicit VarBits(size_t n = 0) : w((n + 63) / 64, 0) {}
  bool has(size_t i) const { return (w[i >> 6] >> (i & 63)) & 1; }
  void set(size_t i) { w[i >> 6] |= uint64_t{1} << (i & 63); }
  void reset(size_t i) { w[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  // Adds o's members; whether any was new.
  bool merge(const VarBits& o) {
    bool grew = false;
    for (size_t k = 0; k < w.size(); ++k) {
      uint64_t n = w[k] | o.w[k];
      grew = grew || n != w[k];
      w[k] = n;
    }
    return grew;
  }
  template <class F>
  void each(F&& f) const {
    for (size_t k = 0; k < w.size(); ++k)
      for (uint64_t x = w[k]; x != 0; x &= x - 1)
        f(k * 64 + static_cast<size_t>(__builtin_ctzll(x)));
  }
};

// One instruction's variables, by number.
struct InstrAccess {
  std::vector<size_t> reads, writes;
  bool pop = false;
  bool copy = false;  // `x = y`: writes {x}, reads {y}
};

}  // namespace

std::map<std::string, std::string> coalesce_copies(
    const Program& p, const std::function<bool(const std::string&)>& eligible,
    const std::function<bool(const std::string&, const std::string&)>& compatible) {
  std::map<std::string, size_t> id;
  std::vector<std::string> names;
  auto var = [&](const std::string& n) {
    auto [it, fresh] = id.emplace(n, names.size());
    if (fresh) names.push_back(n);
    return it->second;
  };
  for (const auto& v : p.vars) var(v.name.name);

  // What each instruction and terminator reads and writes (passes/liveness:
  // the same definitions every liveness computation uses).
  const size_t nb = p.blocks.size();
  std::vector<std::vector<InstrAccess>> acc(nb);
  std::vector<std::vector<size_t>> term_uses(nb);
  auto ids = [&](const VarSet& s, std::vector<size_t>& out) {
    for (const auto& n : s) out.push_back(var(n));
  };
  for (size_t b = 0; b < nb; ++b) {
    for (const Instr& in : p.blocks[b].instrs) {
      InstrAccess a;
      a.pop = in.kind == InstrKind::Pop;
      if (!a.pop) {
        VarSet r, w;
        instr_reads(in, r);
        instr_writes(in, w);
        ids(r, a.reads);
        ids(w, a.writes);
        a.copy = in.kind == InstrKind::Copy && !in.out.is_tuple && a.reads.size() == 1 &&
                 a.writes.size() == 1;
      }
      acc[b].push_back(std::move(a));
    }
    VarSet t;
    term_reads(p.blocks[b].term, t);
    if (p.blocks[b].term.kind == TermKind::Halt)
      for (const auto& o : p.outputs) t.insert(o.name);
    ids(t, term_uses[b]);
  }
  const size_t nv = names.size();

  // The control flow: a call goes into its callee (not to its return label
  // directly), and every return may go to every return label.
  std::vector<std::vector<size_t>> succ = all_successors(p.blocks);
  std::vector<size_t> returns;
  for (size_t b = 0; b < nb; ++b)
    if (p.blocks[b].term.kind == TermKind::PushGoto && succ[b].size() == 2) {  // return, callee
      returns.push_back(succ[b].front());
      succ[b] = {succ[b].back()};
    }
  for (size_t b = 0; b < nb; ++b)
    if (p.blocks[b].term.kind == TermKind::IndirectGoto) succ[b] = returns;

  // Live variables: a backward fixpoint, block by block.
  auto live_out_of = [&](size_t b, const std::vector<VarBits>& live_in) {
    VarBits out(nv);
    for (size_t s : succ[b]) out.merge(live_in[s]);
    for (size_t v : term_uses[b]) out.set(v);  // read before leaving: live at the block's end
    return out;
  };
  auto step_back = [](const InstrAccess& a, VarBits& live) {
    if (a.pop) return;
    for (size_t w : a.writes) live.reset(w);
    for (size_t r : a.reads) live.set(r);
  };
  std::vector<VarBits> live_in(nb, VarBits(nv));
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      VarBits live = live_out_of(b, live_in);
      for (size_t i = acc[b].size(); i-- > 0;) step_back(acc[b][i], live);
      changed = live_in[b].merge(live) || changed;
    }
  }

  // Interference among the eligible variables.
  std::vector<bool> ok(nv);
  for (size_t v = 0; v < nv; ++v) ok[v] = eligible(names[v]);
  std::vector<VarBits> clash(nv, VarBits(nv));
  auto edge = [&](size_t x, size_t y) {
    if (x == y || !ok[x] || !ok[y]) return;
    clash[x].set(y);
    clash[y].set(x);
  };
  for (size_t b = 0; b < nb; ++b) {
    VarBits live = live_out_of(b, live_in);
    for (size_t i = acc[b].size(); i-- > 0;) {
      const InstrAccess& a = acc[b][i];
      if (a.pop) continue;
      for (size_t d : a.writes) {
        if (!ok[d]) continue;
        live.each([&](size_t v) {
          if (!(a.copy && v == a.reads[0])) edge(d, v);
        });
        for (size_t d2 : a.writes) edge(d, d2);
        if (!a.copy)
          for (size_t r : a.reads) edge(d, r);
      }
      step_back(a, live);
    }
  }

  // Merge along copies, in program order, while the merged sets stay free
  // of interference.
  std::vector<size_t> root(nv);
  std::vector<std::vector<size_t>> members(nv);
  for (size_t v = 0; v < nv; ++v) {
    root[v] = v;
    members[v] = {v};
  }
  for (size_t b = 0; b < nb; ++b)
    for (const InstrAccess& a : acc[b]) {
      if (!a.copy) continue;
      size_t d = a.writes[0], s = a.reads[0];
      if (!ok[d] || !ok[s] || root[d] == root[s] || !compatible(names[d], names[s])) continue;
      size_t rd = root[d], rs = root[s];
      bool free = true;
      for (size_t m : members[rs]) free = free && !clash[rd].has(m);
      if (!free) continue;
      for (size_t m : members[rs]) {
        root[m] = rd;
        members[rd].push_back(m);
      }
      members[rs].clear();
      clash[rd].merge(clash[rs]);
    }

  std::map<std::string, std::string> out;
  for (size_t v = 0; v < nv; ++v)
    if (root[v] != v) out[names[v]] = names[root[v]];
  return out;
}

}  // namespace ab
