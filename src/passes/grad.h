// grad: reverse-mode gradients (docs/language.md, "Gradients").
//
// What: every `lp, g = value_and_grad(F, x, a, ...)` of a typed source module
// becomes `lp, g = call F_vjp10..(x, a, ..., 1.0)`, a function this pass
// generates, with the vector-Jacobian functions of everything F calls.
//
// How: `G_vjpM` (M: which of G's parameters are differentiated, 1 or 0 per
// parameter) runs G forward and then backward, and returns G's results and the
// adjoints of the parameters M marks. Its arguments are G's, then one
// cotangent per result that depends on them. One generated function per basic
// block of G (`G_vjpM_LABEL`; the entry block's is `G_vjpM` itself) runs the
// block's instructions, calls the function of the block the terminator goes
// to, and on the way back runs the block's adjoint rules: the call stack is
// the tape, so a loop of n iterations is a recursion n deep and every
// thread's values stay on its own stack. A call of a helper H in G runs H
// forward, and in the backward sweep calls H_vjpM (which runs H forward
// again). Within a block every write gets a version of its own (`x.v3`), so
// the adjoint rules read the values as they were. A generated name that
// the module already has gets a suffix (`_2`).
//
// Activity: a variable depends on the differentiated parameters when an
// operand of an instruction writing it does (a fixpoint, per variable).
// Comparisons, logic, floor/ceil/round and integers carry no gradient.
// Errors (at the construct's line): recursion among the differentiated
// functions, random numbers, a float that depends on x cast to an integer, a
// custom primitive fed by x, value_and_grad inside a differentiated function,
// and types the inputs do not fix.
//
// Rules: what the pass does with each primitive is ops.def's Grad column;
// the reverse-mode rule of each marked Rule is rule_<Id> in
// grad/rules.cpp. They write IR through typed helpers keyed by PrimId, and
// the zeros they make take the dtype of the value they pair with, so f32
// programs differentiate as f64 ones do.
//
// Files (src/passes/grad/, one per job; grad/internal.h lists them):
// activity, legality, rules, the block transform, the driver, the builder.
#pragma once
#include <set>
#include <string>

#include "ir/ir.h"
#include "ir/type_info.h"
#include "support/diag.h"

namespace ab {

// Expands every value_and_grad call of the functions `types` covers; adds the
// generated functions to `m`. Returns whether there was any (the types must
// then be inferred again).
bool grad(Module& m, const TypeInfo& types, Diagnostics& diags);

// Whether any function of `m` calls value_and_grad.
bool has_grad_calls(const Module& m);

// The functions a value_and_grad call of `m` differentiates: each F named by
// one, and every function those call. The pipeline merges and rotates their
// blocks before grad (if_convert.h, shape_blocks), so that a loop's body is
// one block that branches to itself: its gradient is then one call per
// iteration, not one per block of the loop (a `for` loop's header, body and
// step), and a recursion as deep as the trip count.
std::set<std::string> grad_reached(const Module& m);

}  // namespace ab
