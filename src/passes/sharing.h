// sharing: which variables hold the same value in every thread (docs/language.md, "Shared values"),
// so a VM can store and compute them once.
//
// What: a variable is shared when every thread holds the same value whenever
// it holds one. Each shared variable gets the identity of the value it holds
// (its "source"): a parameter given once (a root) is its own source; so is a
// variable written at exactly one place, by a primitive of shared operands
// (literals included). A variable whose every write copies the same source
// (or itself: the push of a recursive call's argument in a lowered program)
// shares that source, so a matrix passed down a recursion stays one matrix.
// Literals are sources by their text. An instruction runs once only if all
// its results are shared, so one that also writes a per-thread variable
// makes none of its results shared (retracted to a fixpoint).
//
// Works on any list of blocks: a lowered program (the stack VM: the roots
// are the inputs given with batch 1) or one source function (the stackless
// VM: the roots are the parameters, shared in a frame when the caller passed
// shared values, which that VM checks when the instruction runs). Call
// results are never shared.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

struct SharingInfo {
  // Every shared variable, with the identity of the value it holds.
  std::map<std::string, std::string> source;
  bool shared(const std::string& var) const { return source.count(var) > 0; }
};

// `params`: the names that hold a value before the first block runs (a
// program's inputs, a function's parameters); `roots`: which of them are
// shared (same length as params).
SharingInfo sharing(const std::vector<Block>& blocks, const std::vector<std::string>& params,
                    const std::vector<bool>& roots);

}  // namespace ab
