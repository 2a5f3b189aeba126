// lower_function_calls: functions and calls become one flat program with
// explicit stacks (docs/engine.md, "Passes"), the seed system's calling sequence.
//
// Names: a function's variable x becomes `f.x`, its label L `f.L`; its
// results are `f.ret.0`, `f.ret.1`, ...; temporaries the pass makes are
// `f.tmp.N`; the block a call returns to is `f.L.N`; a block that only pops
// on one control-flow edge is `f.B.to.S`. User names never contain '.', so
// none of these collide with them.
//
// Semantics of the result (every variable is `full` here; allocation
// demotes): a write pushes, `pop x` pops, `x! = ...` overwrites the top.
//   call:   out = call g(a, b)   becomes
//             [copies of arguments that are g's own parameter variables]
//             g.p = a ; g.q = b                 push the arguments
//             pop <caller variables that die here>
//             push_goto f.L.N, g.entry
//           f.L.N:
//             out = g.ret.0 ; pop g.ret.0        take the results
//   return: return v   becomes   f.ret.0 = v ; pop <the rest> ; indirect_goto
//           (`halt` in the entry function when nothing calls it).
// Variables are popped as soon as they die, on the control-flow edge where
// they die if it is an edge, so every path through a function body pops its
// parameters once, pushes its results once and leaves every other stack as it
// found it (checked by check_stack_discipline). An instruction that writes a
// variable it reads goes through a temporary (`t = op(x)`, `pop x`, `x = t`),
// which fuse_pop_push then folds back into `x! = op(x)`. A call to the
// function itself whose results are returned unchanged (a tail self-call)
// becomes a plain `goto` to the entry.
//
// A parameter that a recursion only passes on unchanged, in its own position,
// and that nothing else can change while the function is active (`invariant`)
// is neither pushed nor popped: one value per thread serves every level.
//
// Only the functions reachable from the entry are lowered.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/infer_types.h"
#include "passes/liveness.h"
#include "support/diag.h"

namespace ab {

// What the later passes and the stack-discipline checker need to know about
// the functions inside the flat program.
struct LoweredFunction {
  std::string name;
  std::string entry_label;
  std::vector<std::string> params;   // qualified
  std::vector<std::string> invariant;  // params never pushed nor popped (invariant_params)
  std::vector<std::string> results;  // qualified
  std::vector<std::string> labels;   // every lowered block of this function
};

struct CallSite {
  std::string caller;
  std::string callee;
  std::set<std::string> live_across;  // caller variables (qualified) live across the call
};

// Which functions each function calls directly, by name.
using CallGraph = std::map<std::string, std::set<std::string>>;
// The functions `from` can reach through calls, itself included.
std::set<std::string> reachable_from(const CallGraph& callees, const std::string& from);

struct LoweringInfo {
  std::vector<LoweredFunction> funcs;
  std::vector<CallSite> calls;
  const LoweredFunction* find(const std::string& name) const;
};

struct Lowered {
  Module module;  // module.program holds the flat program
  LoweringInfo info;
};

// `types` may be null (or incomplete): variable declarations then carry the
// types that are known. `liveness` (may be null), per function of `m`: the
// liveness pass's results, used instead of computing them again.
Lowered lower_function_calls(const Module& m, const std::string& entry, const TypeInfo* types,
                             const std::map<std::string, LivenessInfo>* liveness = nullptr);

// Checks the stack discipline of a lowered program (all variables treated as
// `full`, or only those declared full when `declared_classes` is set): on
// every path through each function body, its parameters are popped once,
// its results pushed once, and every other stack is unchanged; no pop or read
// of an empty stack. Problems go to `diags`.
void check_stack_discipline(const Program& p, const LoweringInfo& info, bool declared_classes,
                            Diagnostics& diags);

}  // namespace ab
