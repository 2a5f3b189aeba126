// allocation_strategy: the cheapest sound storage class for every variable
// of a lowered program (docs/language.md, "Storage classes").
//
//   null       never read: writes are dropped.
//   temporary  lives inside one block (never live into or out of a block):
//              the VM keeps it in scratch memory for the block's lanes.
//   register   one value per thread: not live across any call that may
//              write it, so its stack would never hold two live values.
//   full       a stack per thread: live across a call whose callee can reach
//              (through the call graph, transitively) the variable's own
//              function, i.e. a recursive activation may overwrite it.
//
// A call can only write variables of the functions it can reach, because
// every variable belongs to one function (its qualified name says which), so
// the write set of a call is the variables of the functions reachable from
// its callee. Pops of variables that are not `full` are no-ops and are
// removed. Sets each declaration's class; nothing else changes.
#pragma once
#include "ir/ir.h"
#include "ir/lowered_names.h"
#include "passes/lower_function_calls.h"

namespace ab {

void allocation_strategy(Program& p, const LoweringInfo& info);

}  // namespace ab
