// fuse_pop_push: stack optimization (docs/engine.md, "Passes"), the seed's
// `skip_push_mask`.
//
// `pop x` followed in the same block by a write of x, with no read of x in
// between (the writing instruction's own operands included), becomes one
// in-place update `x! = ...`: the top of x's stack is overwritten instead of
// popped and pushed again. Then a temporary that is written by one
// instruction and only copied by the next (`t = op(a)` then `x = t` or
// `x! = t`) is folded away: `x = op(a)` (kernels allow a result to alias an
// operand exactly, so `n! = sub(n, 1)` is safe). Declarations of variables
// no longer used are dropped.
#pragma once
#include "ir/ir.h"

namespace ab {

void fuse_pop_push(Program& p);

}  // namespace ab
