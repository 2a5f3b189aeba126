// The reference interpreter for lowered programs: one thread at a time, each
// with its own variable stacks and program-counter stack, exactly as the
// lowered form defines them (a write to a `full` variable pushes, `x! =`
// overwrites the top, `pop` pops; other classes hold one value;
// `push_goto`/`indirect_goto` push and pop the program-counter stack, whose
// bottom holds `halt`). It checks lowering independently of batching.
#pragma once
#include "ir/ir.h"
#include "ir/type_info.h"
#include "vm/run.h"

namespace ab {

// `types` from infer_program_types for this program.
RunResult run_reference_program(const Program& p, const FunctionTypes& types,
                                const std::vector<Array>& inputs, int64_t batch,
                                const RunOptions& opt);

}  // namespace ab
