// Copy coalescing for the stack VM's storage: register variables of a
// lowered program that a copy joins (`x = y`) and that never hold different
// values at the same time get one storage, so the copy between them is no
// work at all. A call's arguments and results are such copies: in
// `q, p = call step(A, q, p, eps)` the caller's q, the callee's parameter q
// and its result can share one f64[256] per thread.
//
// Two variables may share storage when neither is written while the other
// holds a value still to be read (they do not interfere), the copies between
// them aside. Liveness is computed over the lowered control flow with a
// call's callee among its successors and every `indirect_goto` going to
// every return label (more paths than any run takes, so more interference,
// never less). An instruction other than a copy is also taken to interfere
// its outputs with its operands, so no kernel gets an output that is one of
// its inputs unless the program wrote it so.
//
// The program text, the lowered listing and every other VM are unchanged:
// this only decides which variables the stack VM stores together.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "ir/ir.h"

namespace ab {

// Per variable merged with another: the variable whose storage it uses.
// Only variables `eligible` accepts take part, and two are merged only if
// `compatible` accepts them (same leaves and types).
std::map<std::string, std::string> coalesce_copies(
    const Program& p, const std::function<bool(const std::string&)>& eligible,
    const std::function<bool(const std::string&, const std::string&)>& compatible);

}  // namespace ab
