// block_order: the scheduling priority of blocks (docs/engine.md, "Passes" and "The stack VM").
//
// The stack VM's min-pc policy runs, at each step, the waiting block with
// the smallest index; this pass decides those indices by reordering the
// program's blocks: the entry block stays first, then, stably, blocks that
// run no primitive (only copies and pops: call returns, pops on an edge)
// come ahead of the rest. Running those cheap blocks first lets threads
// catch up and merge with others before the expensive blocks run (the
// seed's select_block_priority).
//
// First, a block that does nothing but `goto` (an edge block whose pops
// allocation removed) is bypassed: whatever jumped to it jumps straight to
// its target, and it is dropped. The program's first block always stays.
#pragma once
#include "ir/ir.h"

namespace ab {

void block_order(Program& p);

}  // namespace ab
