#include "passes/liveness.h"

#include <map>

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
  std::map<std::string_view, size_t> index;
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

LivenessInfo compute_liveness(const std::vector<Block>& blocks, const VarSet& extra_live_at_exit) {
  size_t n = blocks.size();
  LivenessInfo info;
  info.live_in.resize(n);
  info.live_out.resize(n);
  info.instr_out.resize(n);
  info.term_in.resize(n);
  std::vector<std::vector<size_t>> succ = all_successors(blocks);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t bi = n; bi-- > 0;) {
      const Block& b = blocks[bi];
      VarSet out;
      for (size_t s : succ[bi]) out.insert(info.live_in[s].begin(), info.live_in[s].end());
      TermKind k = b.term.kind;
      if (k == TermKind::Halt || k == TermKind::Return || k == TermKind::IndirectGoto)
        out.insert(extra_live_at_exit.begin(), extra_live_at_exit.end());
      info.live_out[bi] = out;
      VarSet live = out;
      term_reads(b.term, live);
      info.term_in[bi] = live;
      info.instr_out[bi].assign(b.instrs.size(), {});
      for (size_t ii = b.instrs.size(); ii-- > 0;) {
        info.instr_out[bi][ii] = live;
        VarSet w;
        instr_writes(b.instrs[ii], w);
        for (const auto& v : w) live.erase(v);
        instr_reads(b.instrs[ii], live);
      }
      if (live != info.live_in[bi]) {
        info.live_in[bi] = std::move(live);
        changed = true;
      }
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
