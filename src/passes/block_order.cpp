#include "passes/block_order.h"

#include <algorithm>

namespace ab {

static bool runs_primitive(const Block& b) {
  for (const auto& in : b.instrs)
    if (in.kind == InstrKind::Prim || in.kind == InstrKind::Call) return true;
  return false;
}

void order_blocks(Program& p) {
  if (p.blocks.size() < 2) return;
  std::stable_partition(p.blocks.begin() + 1, p.blocks.end(), [](const Block& b) { return !runs_primitive(b); });
}

}  // namespace ab
