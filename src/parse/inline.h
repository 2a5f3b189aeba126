// inline_calls: every call of an `inline func` becomes a copy of its blocks
// (docs/language.md, "Inline functions"). Runs in the front end, after
// to_blocks and before verify, so each copy gets its own types: a function
// the language keeps monomorphic can be used at several shapes when inline
// (the shipped library's log densities, for instance).
//
// How: the calling block is split at the call; the callee's variables and
// labels are renamed `iK_NAME` (K the expansion's number, unused names of
// the caller), its parameters are assigned from the arguments, and each
// `return` becomes copies into the call's pattern and a jump to the rest of
// the calling block. Inline functions called from inline functions are
// expanded in turn; one that reaches itself is an error. Then every block
// that jumps to a block only it reaches is joined with it, so a call of a
// one-block inline function leaves the calling block one block.
#pragma once
#include "ir/ir.h"
#include "support/diag.h"

namespace ab {

void inline_calls(Module& m, Diagnostics& d);

}  // namespace ab
