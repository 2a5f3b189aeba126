// The stackless VM (docs/engine.md, "The stackless VM", the seed's `stackless.execute`): runs the
// unlowered program for every thread at once.
//
// Each call frame holds a queue of (block, instruction, lanes) entries. A
// step takes the entry with the smallest block index (then the smallest
// instruction index), runs its instructions for exactly those lanes, each
// primitive as one kernel call over all of them, up to the end of the block
// or up to a call, and hands the lanes on by the terminator: entries that
// meet at one (block, instruction) merge. A `call` pushes a new frame whose
// threads are exactly the lanes that reached it; when that frame's queue is
// empty (every thread returned) its results are copied into the caller's
// pattern and the lanes queue again in the caller right after the call.
// Threads at different call depths are never batched together.
//
// Frames live on an explicit stack (no host recursion), so recursion as deep
// as --max-stack-depth allows cannot overflow the C++ stack. A frame's
// storage is sized by its own threads, not by the batch. Values that are the
// same in every thread of a frame are stored once (docs/language.md, "Shared values"): literals,
// inputs given with batch 1, arguments passed from such values, and
// variables assigned at one place only from such values (computed once per
// frame).
#pragma once
#include <string>

#include "ir/ir.h"
#include "ir/type_info.h"
#include "vm/run.h"

namespace ab {

// `types` must come from infer_types for this module and entry, with every
// type of the reachable functions known. `inputs`: one Array per entry
// parameter, batch `batch` or 1 (shared).
RunResult run_stackless(const Module& m, const TypeInfo& types, const std::string& entry,
                        const std::vector<Array>& inputs, int64_t batch, const RunOptions& opt);

}  // namespace ab
