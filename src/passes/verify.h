// verify: structural checks that need no types (docs/engine.md, "Passes").
//
// Functions: unique names; unique parameters and labels; branch/goto targets
// exist; callees exist and get the right number of arguments; call patterns
// bind as many values as the callee returns; returns agree with `->` and
// with each other; primitives exist, with the right arity and attributes;
// lowered-only forms (`pop`, `x!`, push_goto, indirect_goto, halt, dotted
// names) are rejected; and no variable is read unless it is defined on every
// path to the read (a forward "must be defined" dataflow fixpoint, so loops
// are covered).
// Lowered programs: declared variables, existing labels, no source-only
// forms. Definedness is not checked there: stacks make it path-dependent.
//
// Every independent problem is reported; nothing is mutated.
#pragma once
#include "ir/ir.h"
#include "support/diag.h"

namespace ab {

void verify(const Module& m, Diagnostics& diags);

// How many values a function returns, if its `->` or its returns say so
// (nullopt when it has neither, or they disagree).
std::optional<size_t> result_count(const Function& f);

}  // namespace ab
