// The reference interpreter (docs/language.md, "Reference semantics"): runs each thread alone, one
// after the other, with no batching. It is the definition of what a program means,
// and every batched VM is checked against it. It calls the same kernels as
// the batched VMs, with one lane.
//
// Calls keep an explicit stack of frames (no host recursion), so recursion
// as deep as --max-stack-depth allows cannot overflow the C++ stack.
#pragma once
#include <string>

#include "ir/ir.h"
#include "ir/type_info.h"
#include "vm/run.h"

namespace ab {

// `types` must come from infer_types for this module and entry, with every
// type of the reachable functions known.
RunResult run_reference(const Module& m, const TypeInfo& types, const std::string& entry,
                        const std::vector<Array>& inputs, int64_t batch, const RunOptions& opt);

}  // namespace ab
