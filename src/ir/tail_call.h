// Which calls are tail self-calls: `out = call f(...)` as the last
// instruction of a block of f itself whose `return` gives back exactly the
// call's results, in order, each variable once. The call-lowering pass turns
// them into jumps (the stack VM), and the stackless VM and the reference
// interpreter reuse the caller's frame for them, so that in every VM such a
// call takes no stack and an endless one runs until --max-steps,
// --time-limit or Ctrl-C.
#pragma once
#include <cstddef>

#include "ir/ir.h"

namespace ab {

bool is_tail_self_call(const Function& f, size_t block, size_t instr);

}  // namespace ab
