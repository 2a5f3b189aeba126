// The stack VM: runs a lowered program for every thread at once.
//
// Each block keeps the list of threads waiting at it (and so a count); a
// step takes the waiting block with the smallest index (min-pc over the
// priority order block_order gave the program), runs all of the block's
// instructions on chunks of its threads (a chunk's values stay in cache),
// and moves each thread to the list of its next block by the terminator. A
// step therefore costs in proportion to the threads it advances, never to
// the whole batch, and finding the next block never scans the threads.
//
// Storage by class: `register` and `full` variables keep their current value
// (the top of the stack) in one array indexed by thread, so reading a full
// variable costs what reading a register does; a push moves the old top to
// that thread's spill stack, a pop brings it back. `temporary` values live in
// per-chunk scratch. A value that is the same in every thread (inputs
// given with batch 1, literals, and variables written at one place from
// such values only) is stored once and computed once, and kernels see
// it as Access::Shared — a matrix-vector product on a shared matrix is one
// GEMM over the chunk. Every thread has a program-counter stack whose bottom
// holds halt.
//
// Inputs are read in place when that is safe: a parameter no
// instruction writes (no output, in-place output or pop names it) keeps no
// copy; its storage is the caller's array (a batch-1 input: its one row; a
// batched input: all rows, when lane t runs input t, i.e. without refill
// lanes), if the array has the parameter's type and is aligned for it.
// Kernels and compiled code read it as any other variable. Otherwise each
// lane's value is copied in when its thread starts. RunResult::log says how
// many bytes were read in place.
//
// Execution core: with RunOptions::persistent (the default
// schedule) a block that branches back to itself keeps its chunk, iteration
// after iteration (one step each), until every thread has left; with
// RunOptions::jit the runs of scalar elementwise instructions of each block
// are compiled into native loops (src/vm/jit/jit.h), and a loop block made
// only of such instructions runs as a dense SIMD body over a window of up
// to 256 threads' gathered values, finished threads frozen by a mask; once
// a quarter of the window has left, their places go to threads still
// waiting at the block. A body that cannot fail runs several iterations per
// compiled call (values in registers between them).
// Everything else runs through the kernels, as with the JIT off.
//
// How each block runs is decided once, before the run, by the planner
// (src/vm/stack/plan.h: its modes and cost rule); RunResult::execution
// reports each block's mode and why (-v, --stats). Unless RunOptions::
// jit_wait (or the run counts steps), the run is tiered: it starts with
// every block interpreted while the JIT compiles the plan's code in the
// background, and switches the blocks to their modes at the first step
// boundary after the code is ready (docs/engine.md, "Tiered execution").
// The implementation is in src/vm/stack/, a file per responsibility
// (stack_vm_impl.h lists them).
//
// Threads not in a step's list are never touched, so values they hold never
// cause errors. With `lanes` > 0 (streaming mode) the run uses that many
// lanes and a lane whose thread halts takes the next unstarted input.
// Without it, a lane per thread, unless the threads' own variables are large
// (stack_auto_lanes, Tuning::lane_bytes_budget): then fewer lanes, refilled.
#pragma once
#include "ir/ir.h"
#include "ir/type_info.h"
#include "vm/run.h"

namespace ab {

// `types` from infer_program_types for this program (variables and literal
// operands).
RunResult run_stack(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
                    int64_t batch, const RunOptions& opt);

// The lanes a run of n threads gets without `lanes`, when each lane's own
// variables take bytes_per_lane bytes (Tuning::lane_bytes_budget's rule);
// `stacks`: the program has variables with stacks (recursion), whose levels
// multiply what a lane holds.
int64_t stack_auto_lanes(int64_t n, int64_t bytes_per_lane, bool stacks = false);

}  // namespace ab
