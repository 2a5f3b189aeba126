#include "passes/block_order.h"

#include <algorithm>
#include <map>
#include <string>

namespace ab {

static bool runs_primitive(const Block& b) {
  for (const auto& in : b.instrs)
    if (in.kind == InstrKind::Prim || in.kind == InstrKind::Call) return true;
  return false;
}

// Bypasses blocks that only jump, following chains of them.
static void bypass_empty_jumps(Program& p) {
  std::map<std::string, std::string> target;
  for (size_t i = 1; i < p.blocks.size(); ++i) {
    const Block& b = p.blocks[i];
    if (b.instrs.empty() && b.term.kind == TermKind::Goto && b.term.target.name != b.label.name)
      target[b.label.name] = b.term.target.name;
  }
  if (target.empty()) return;
  auto resolve = [&](std::string label) {
    for (size_t hops = 0; hops <= target.size(); ++hops) {
      auto it = target.find(label);
      if (it == target.end()) return label;
      label = it->second;
    }
    return label;  // a cycle of empty jumps: leave it
  };
  for (auto& b : p.blocks) {
    Terminator& t = b.term;
    if (t.kind == TermKind::Branch || t.kind == TermKind::Goto)
      t.target.name = resolve(t.target.name);
    if (t.kind == TermKind::Branch) t.target2.name = resolve(t.target2.name);
    if (t.kind == TermKind::PushGoto) {
      t.target.name = resolve(t.target.name);
      t.target2.name = resolve(t.target2.name);
    }
  }
  std::vector<Block> kept;
  for (size_t i = 0; i < p.blocks.size(); ++i)
    if (i == 0 || !target.count(p.blocks[i].label.name) ||
        resolve(p.blocks[i].label.name) == p.blocks[i].label.name)
      kept.push_back(std::move(p.blocks[i]));
  p.blocks = std::move(kept);
}

void block_order(Program& p) {
  bypass_empty_jumps(p);
  if (p.blocks.size() < 2) return;
  std::stable_partition(p.blocks.begin() + 1, p.blocks.end(),
                        [](const Block& b) { return !runs_primitive(b); });
}

}  // namespace ab
