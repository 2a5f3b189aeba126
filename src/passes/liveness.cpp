#include "passes/liveness.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "ir/printer.h"
#include "support/strings.h"

namespace ab {

void instr_reads(const Instr& in, VarSet& out) {
  for (const auto& a : in.args)
    if (a.is_var) out.insert(a.name);
}

void instr_writes(const Instr& in, VarSet& out) {
  std::vector<const Pattern*> leaves;
  in.out.names(leaves);
  for (const Pattern* l : leaves) out.insert(l->name);
}

void term_reads(const Terminator& t, VarSet& out) {
  if (t.kind == TermKind::Branch) out.insert(t.cond.name);
  for (const auto& v : t.values)
    if (v.is_var) out.insert(v.name);
}

std::vector<size_t> successors(const std::vector<Block>& blocks, size_t b) {
  std::vector<size_t> out;
  auto add = [&](const std::string& label) {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].label.name == label) {
        out.push_back(i);
        return;
      }
  };
  const Terminator& t = blocks[b].term;
  switch (t.kind) {
    case TermKind::Branch:
      add(t.target.name);
      add(t.target2.name);
      break;
    case TermKind::Goto:
      add(t.target.name);
      break;
    case TermKind::PushGoto:
      add(t.target.name);
      add(t.target2.name);
      break;
    case TermKind::Return:
    case TermKind::IndirectGoto:
    case TermKind::Halt:
      break;
  }
  return out;
}

std::vector<std::vector<size_t>> all_successors(const std::vector<Block>& blocks) {
  std::unordered_map<std::string_view, size_t> index;  // a label's first block
  index.reserve(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) index.emplace(blocks[i].label.name, i);
  std::vector<std::vector<size_t>> out(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    auto add = [&](const std::string& label) {
      auto it = index.find(label);
      if (it != index.end()) out[b].push_back(it->second);
    };
    const Terminator& t = blocks[b].term;
    switch (t.kind) {
      case TermKind::Branch:
      case TermKind::PushGoto:
        add(t.target.name);
        add(t.target2.name);
        break;
      case TermKind::Goto:
        add(t.target.name);
        break;
      case TermKind::Return:
      case TermKind::IndirectGoto:
      case TermKind::Halt:
        break;
    }
  }
  return out;
}

VarIndex::VarIndex(const std::vector<Block>& blocks, const VarSet& extra)
    : VarIndex(blocks, std::vector<std::string_view>(extra.begin(), extra.end())) {}

VarIndex::VarIndex(const std::vector<Block>& blocks, const std::vector<std::string_view>& extra) {
  // Each name once (hashed), then only the distinct names sorted.
  std::unordered_set<std::string_view> seen(extra.begin(), extra.end());
  std::vector<const Pattern*> leaves;
  for (const auto& b : blocks) {
    for (const auto& in : b.instrs) {
      for (const auto& a : in.args)
        if (a.is_var) seen.insert(a.name);
      leaves.clear();
      in.out.names(leaves);
      for (const Pattern* l : leaves) seen.insert(l->name);
      for (const auto& n : in.popped) seen.insert(n.name);
    }
    if (b.term.kind == TermKind::Branch) seen.insert(b.term.cond.name);
    for (const auto& v : b.term.values)
      if (v.is_var) seen.insert(v.name);
  }
  std::vector<std::string_view> all(seen.begin(), seen.end());
  std::sort(all.begin(), all.end());
  names_.assign(all.begin(), all.end());
  rebuild();
}

void VarIndex::rebuild() {
  ids_.clear();
  ids_.reserve(names_.size());
  for (size_t i = 0; i < names_.size(); ++i) ids_.emplace(names_[i], static_cast<int>(i));
}

VarSet LiveBits::names(const VarIndex& vars) const {
  VarSet out;
  for_each([&](int id) { out.insert(out.end(), vars.name(id)); });  // ids come in name order
  return out;
}

namespace {

// Each instruction's written and read variables as ids, and the
// terminator's reads: looked up once, used by every round of the fixpoint.
// One array per block: instruction ii writes ids[at[2ii] .. at[2ii+1]) and
// reads ids[at[2ii+1] .. at[2ii+2]).
struct BlockFacts {
  std::vector<int> ids;
  std::vector<uint32_t> at;
  std::vector<int> term_reads;
  bool exits = false;  // halt, return or indirect_goto: the extra variables are live out
  size_t size() const { return at.size() / 2; }
  std::span<const int> writes(size_t ii) const { return part(2 * ii); }
  std::span<const int> reads(size_t ii) const { return part(2 * ii + 1); }
  std::span<const int> part(size_t k) const {
    return std::span<const int>(ids).subspan(at[k], at[k + 1] - at[k]);
  }
};

std::vector<BlockFacts> block_facts(const std::vector<Block>& blocks, const VarIndex& vars) {
  std::vector<BlockFacts> out(blocks.size());
  std::vector<const Pattern*> leaves;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Block& b = blocks[bi];
    BlockFacts& f = out[bi];
    f.at.reserve(2 * b.instrs.size() + 1);
    for (const Instr& in : b.instrs) {
      f.at.push_back(static_cast<uint32_t>(f.ids.size()));
      leaves.clear();
      in.out.names(leaves);
      for (const Pattern* l : leaves) f.ids.push_back(vars.find(l->name));
      f.at.push_back(static_cast<uint32_t>(f.ids.size()));
      for (const auto& a : in.args)
        if (a.is_var) f.ids.push_back(vars.find(a.name));
    }
    f.at.push_back(static_cast<uint32_t>(f.ids.size()));
    if (b.term.kind == TermKind::Branch) f.term_reads.push_back(vars.find(b.term.cond.name));
    for (const auto& v : b.term.values)
      if (v.is_var) f.term_reads.push_back(vars.find(v.name));
    TermKind k = b.term.kind;
    f.exits = k == TermKind::Halt || k == TermKind::Return || k == TermKind::IndirectGoto;
  }
  return out;
}

// The block-level fixpoint: live-in = use ∪ (live-out \ def), from each
// block's upward-exposed reads (use) and writes (def). The least fixpoint,
// as the instruction-by-instruction iteration finds.
void solve(const std::vector<Block>& blocks, const std::vector<std::vector<size_t>>& succ,
           const std::vector<BlockFacts>& facts, const LiveBits& extra, BlockLiveness& out) {
  size_t n = blocks.size(), nv = out.vars.size();
  std::vector<LiveBits> use(n, LiveBits(nv)), def(n, LiveBits(nv));
  for (size_t bi = 0; bi < n; ++bi) {
    const BlockFacts& f = facts[bi];
    for (int r : f.term_reads) use[bi].set(r);
    for (size_t ii = f.size(); ii-- > 0;) {
      for (int w : f.writes(ii)) use[bi].reset(w), def[bi].set(w);
      for (int r : f.reads(ii)) use[bi].set(r);
    }
  }
  out.live_in.assign(n, LiveBits(nv));
  out.live_out.assign(n, LiveBits(nv));
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t bi = n; bi-- > 0;) {
      LiveBits live(nv);
      for (size_t s : succ[bi]) live |= out.live_in[s];
      if (facts[bi].exits) live |= extra;
      out.live_out[bi] = live;
      live.subtract(def[bi]) |= use[bi];
      if (live != out.live_in[bi]) {
        out.live_in[bi] = std::move(live);
        changed = true;
      }
    }
  }
}

LiveBits bits_of(const VarSet& s, const VarIndex& vars) {
  LiveBits out(vars.size());
  for (const auto& v : s) out.set(vars.find(v));
  return out;
}

}  // namespace

BlockLiveness compute_block_liveness(const std::vector<Block>& blocks,
                                     const VarSet& extra_live_at_exit) {
  return compute_block_liveness(blocks, all_successors(blocks), extra_live_at_exit);
}

BlockLiveness compute_block_liveness(const std::vector<Block>& blocks,
                                     const std::vector<std::vector<size_t>>& succ,
                                     const VarSet& extra_live_at_exit) {
  BlockLiveness out;
  out.vars = VarIndex(blocks, extra_live_at_exit);
  solve(blocks, succ, block_facts(blocks, out.vars), bits_of(extra_live_at_exit, out.vars), out);
  return out;
}

LivenessInfo compute_liveness(const std::vector<Block>& blocks, const VarSet& extra_live_at_exit) {
  BlockLiveness bl;
  bl.vars = VarIndex(blocks, extra_live_at_exit);
  const std::vector<BlockFacts> facts = block_facts(blocks, bl.vars);
  solve(blocks, all_successors(blocks), facts, bits_of(extra_live_at_exit, bl.vars), bl);
  // The sets, and one walk back through each block for its instructions.
  size_t n = blocks.size();
  LivenessInfo info;
  info.live_in.resize(n);
  info.live_out.resize(n);
  info.instr_out.resize(n);
  info.term_in.resize(n);
  for (size_t bi = 0; bi < n; ++bi) {
    info.live_in[bi] = bl.live_in[bi].names(bl.vars);
    info.live_out[bi] = bl.live_out[bi].names(bl.vars);
    const BlockFacts& f = facts[bi];
    LiveBits live = bl.live_out[bi];
    for (int r : f.term_reads) live.set(r);
    info.term_in[bi] = live.names(bl.vars);
    info.instr_out[bi].resize(f.size());
    for (size_t ii = f.size(); ii-- > 0;) {
      info.instr_out[bi][ii] = live.names(bl.vars);
      for (int w : f.writes(ii)) live.reset(w);
      for (int r : f.reads(ii)) live.set(r);
    }
  }
  return info;
}

static std::string set_str(const VarSet& s) {
  return s.empty() ? "-" : join(std::vector<std::string>(s.begin(), s.end()), ", ");
}

static std::string blocks_with_liveness(const std::vector<Block>& blocks, const VarSet& extra) {
  LivenessInfo info = compute_liveness(blocks, extra);
  std::string out;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Block& b = blocks[bi];
    out += b.label.name + ":  # live-in: " + set_str(info.live_in[bi]) + "\n";
    for (size_t ii = 0; ii < b.instrs.size(); ++ii)
      out += "  " + print_instr(b.instrs[ii]) + "  # live-out: " + set_str(info.instr_out[bi][ii]) +
             "\n";
    out += "  " + print_terminator(b.term) + "  # live-out: " + set_str(info.live_out[bi]) + "\n";
  }
  return out;
}

std::string print_liveness(const Module& m) {
  if (m.program) {
    std::string text = print_program(*m.program);
    // Replace the body with the annotated one.
    size_t open = text.find("{\n");
    VarSet outs;
    for (const auto& o : m.program->outputs) outs.insert(o.name);
    return text.substr(0, open + 2) + blocks_with_liveness(m.program->blocks, outs) + "}\n";
  }
  std::string out;
  for (size_t i = 0; i < m.funcs.size(); ++i) {
    if (i) out += "\n";
    out +=
        print_signature(m.funcs[i]) + " {\n" + blocks_with_liveness(m.funcs[i].blocks, {}) + "}\n";
  }
  return out;
}

}  // namespace ab
