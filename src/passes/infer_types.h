// infer_types: whole-program type inference (docs/language.md, "Type inference" and "Literals and
// dtypes").
//
// What: every variable, parameter, result and literal of the functions gets
// one type, from the entry's input types (or annotations) flowing through
// primitives, copies, calls and returns. Functions are monomorphic.
//
// How: a fixpoint over a lattice per tensor leaf: unknown < weak < strong.
// A *weak* dtype comes only from literals (int, float or bool kind; an int
// literal may still become any numeric dtype, a float literal any float
// dtype); a *strong* dtype comes from inputs, annotations and primitives with
// fixed result dtypes. Copies, call arguments/parameters, returns/results and
// tuple patterns are equalities and propagate both ways; a primitive joins
// the dtypes of the operands that must agree (and of its destination, when
// its result dtype follows them), pushes the join back into them, and
// computes its result with the primitive's type rule. So `k = 0` followed by
// `k = add(a, k)` with `a: i32` makes `k` (and the literal) i32. What stays
// weak defaults to i64 / f64 / bool.
//
// Limits: recursion that never reaches a base case leaves types unknown,
// which is reported naming the variable. Types of unreachable code are
// inferred as far as their own sources allow.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/prim_types.h"
#include "ir/type_info.h"
#include "support/diag.h"

namespace ab {

// `entry_params` gives the entry's parameter types where known (inputs);
// missing ones come from annotations or stay unknown. When every entry
// parameter is known, a type left unknown in a reachable function is an
// error; otherwise it is reported as depending on the inputs.
TypeInfo infer_types(const Module& m, const std::string& entry,
                     const std::vector<std::optional<Type>>& entry_params, Diagnostics& diags);

// The entry function (docs/language.md, "Modules and functions"): `name` if
// given; else the function written `entry func`; else `main`; else the only
// function; else the only entry candidate.
const Function* find_entry(const Module& m, const std::string& name, Diagnostics& diags);

// The functions that may be the entry without being named: those no other
// function of the module calls (a function calling itself still counts),
// except names that start with '_' (helpers, by convention).
std::vector<const Function*> entry_candidates(const Module& m);

}  // namespace ab
