// if_convert: small branches become `select`s, so a loop body becomes one
// block (docs/engine.md, "Passes"). Runs on the block form after type inference.
//
// What, in every function, repeated until nothing changes:
// - Diamond: `B: branch c, T, F` where T and F are reached only from B and
//   both end in `goto J` (J not B). Triangle: one of T, F is J itself. The
//   arms' instructions move to the end of B, every write renamed to a fresh
//   variable (`x_then1`, `x_else2`, ...: plain identifiers, unused in the
//   function, so the printed result parses back), then for each variable
//   written in an arm and live into J: `x = select(c, x_then, x_else)` (the
//   arm that does not write x contributes x itself, which must then be
//   defined on every path to B). B ends in `goto J`; T and F disappear.
// - Merge: `X: ... goto Y` where Y is reached only from X (and is not the
//   entry) and every instruction of Y is safe: Y's instructions are appended
//   to X and X takes Y's terminator.
// - Rotation (tail duplication of a loop header): `X: ... goto H` where H
//   has at most kMaxHeader instructions, all safe, and ends in a branch: H's
//   instructions are copied to the end of X and X takes H's branch. A
//   `while` loop's body then branches to itself; H goes once nothing jumps
//   to it.
// Blocks no longer reachable from the entry are dropped at the end.
//
// Safety: an arm executes for threads that would not have executed it, so
// every arm instruction must be a primitive or copy that cannot raise: no
// call, no `tuple`, no `div`/`mod` unless the divisor is a non-zero literal
// or the operands are floats, no integer `pow` unless the exponent is a
// non-negative literal, no `cast` from a float (or unknown) dtype to an
// integer, no `get`/`set` unless the index is a literal inside the known
// first dimension. Merging and rotation run nothing extra, but are limited to
// safe instructions so a runtime error still names the block it was written
// in.
//
// Bounds: at most kMaxArm instructions per arm, kMaxHeader in a rotated
// header. Variables selected at a join must have a known tensor type (not a
// tuple); otherwise that branch stays. The caller re-runs type inference on
// the result (the fresh variables take the types of the variables they
// stand for).
#pragma once
#include <map>
#include <set>
#include <string>

#include "ir/ir.h"
#include "ir/type.h"
#include "passes/infer_types.h"
#include "vm/tuning.h"

namespace ab {

constexpr size_t kMaxArm = static_cast<size_t>(kTuning.if_convert_arm);
constexpr size_t kMaxHeader = static_cast<size_t>(kTuning.if_convert_header);

// `var_types`: the inferred type of each variable of `f` (as in
// FunctionTypes::vars); unknown variables are treated conservatively.
// Returns whether anything changed.
bool if_convert_function(Function& f, const std::map<std::string, Type>& var_types);

// Whether instruction `in` may run for a thread that would not have run it
// (the safety rule above): from ops.def's Speculate column, and for an
// IfCannotFail primitive its operands.
bool speculatable(const Instr& in, const std::map<std::string, Type>& var_types);

// Every function of a verified module, with the types inference found.
bool if_convert(Module& m, const TypeInfo& types);

// Merge and rotation only, no selects, in the functions named by `funcs`:
// the shape the grad pass differentiates (grad.h, grad_reached). A select
// would run both arms, and its gradient would multiply the arm not taken by
// zero, which is NaN where that arm is not finite (log of a negative); merge
// and rotation run nothing extra. Returns whether anything changed (the
// types must then be inferred again).
bool shape_blocks(Module& m, const TypeInfo& types, const std::set<std::string>& funcs);

}  // namespace ab
