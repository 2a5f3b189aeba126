// The tuning constants, in one place: sizes and thresholds that trade speed
// against memory, compile time or responsiveness. None changes what a
// program computes; the planner's cost rule (vm/stack/plan.h), the run loop,
// the JIT and the passes that shape blocks for batching read them from
// kTuning. (The matrix products' tiles, src/vm/kernels/ordered_linalg_isa.inc, are
// fixed by the vector registers, not tuned.)
#pragma once
#include <cstdint>

namespace ab {

struct Tuning {
  // Threads a block runs together: a chunk's values stay in cache, and a
  // dense loop's window holds this many threads.
  int64_t chunk = 256;
  // Shortest run of consecutive compilable ops compiled as a segment: one
  // or two ops gain nothing over their kernels.
  int64_t min_segment = 3;
  // Largest event an elementwise op on tensors runs per lane, inline in a
  // segment; a larger one is called as its batched kernel, whose loop over
  // all the chunk's elements is vectorised (lane by lane, power_iteration's
  // f64[64] vectors ran 1.5x slower, nqueens's i64[9] 1.35x and
  // metropolis's f64[3] and f64[12] 1.2x; dopri's f64[2] gain inline).
  int64_t inline_elements = 4;
  // Iterations per call of a dense loop body that cannot fail: enough to
  // amortise the lanes' loads and stores, few enough to keep the code small
  // (more copies cost compile time: some 15 ms for 4, 30 ms for 8).
  int32_t copies_small_body = 4;   // bodies of at most small_body ops
  int32_t copies_medium_body = 2;  // bodies of at most medium_body ops (longer: 1)
  int32_t small_body = 8;
  int32_t medium_body = 16;
  int32_t max_copies = 8;  // at most (the size of the per-call step counts)
  // A dense window is compacted and refilled once 1/compact_fraction of its
  // threads have left: frozen threads cost a lane of the body per
  // iteration, compacting a move per thread and variable.
  int64_t compact_fraction = 4;
  // Width in bits of the vectors the compiled loops use on a CPU with
  // AVX-512 (LLVM's default there is 256, for the clock that 512-bit
  // instructions may cost): the walk's two Philox blocks per step ran
  // 1.4-1.9x faster at 512, and no row of the users' suite slower.
  int32_t vector_bits = 512;
  // Iterations per call of a dense body running one thread alone, at most
  // (the VM looks at cancel and progress in between).
  int64_t solo_burst = int64_t{1} << 20;
  // A lane's budget per call of the chain: the blocks a call or a backward
  // jump leads to that it may enter, so that a chunk's call stays within
  // some milliseconds.
  int64_t chain_budget = int64_t{1} << 12;
  // Words of the chain's local copies of a lane's stacks, all stacks
  // together (8 bytes each: 512 KiB of the native stack): each stack holds
  // this over the number of stacks levels, at most jit::kFlatLevels and at
  // least jit::kChainMinLevels (a deeper thread is interpreted).
  int64_t chain_stack_words = int64_t{1} << 16;
  // Budget used in the chain between looks at cancel and progress.
  int64_t chain_poll = int64_t{1} << 20;
  // Returns to more targets than this (rounds of one target each) go lane
  // by lane.
  int return_rounds = 8;
  // When the run is watched (cancel, progress, a time limit), every this
  // many steps each block with waiting threads runs once, whatever the
  // schedule prefers: a thread that never leaves a loop then cannot keep
  // the threads that left it from finishing (and being counted finished).
  int64_t sweep_steps = int64_t{1} << 16;
  // Lanes of the stack VM when the run does not say (--lanes): one per
  // thread, unless the threads' own variables take lane_bytes_min bytes or
  // more per lane and all lanes would take more than lane_bytes_budget.
  // Then the batch runs on budget / bytes lanes (at least min_auto_lanes,
  // a multiple of chunk), each taking the next input when its thread halts
  // (refill, --lanes's mode): a step's threads then find their variables in
  // cache, where rows over every lane of a large batch are spread over
  // megabytes (NUTS on f64[10] vectors at 8192 chains ran 2.7x faster on
  // 512 lanes). Scalar programs, whose lanes take a few words, keep one lane
  // per thread (and read their inputs in place), unless they recurse: every
  // level of a recursion adds a row over all lanes to each variable with a
  // stack, so their lanes follow the budget whatever their size (a grid
  // recursion at 100,000 threads: 2.7 s on a lane each, 1.2 s on 5,000).
  int64_t lane_bytes_min = 256;
  int64_t lane_bytes_budget = int64_t{1} << 20;
  int64_t min_auto_lanes = 256;
  // How many ops a random primitive counts as when a dense body's length
  // picks its copies: some sixty instructions of Philox (or a call), so its
  // loop is not copied (copies cost compile time and gain nothing on so
  // long a body).
  int32_t random_op_weight = 16;
  // The chain copies a callee's first blocks for each call site (fib's
  // `n <= 1` returns straight to its caller) when they are at most this
  // many blocks and instructions.
  int64_t chain_copy_blocks = 4;
  int64_t chain_copy_ops = 32;
  // if_convert (passes/if_convert.h): at most this many instructions per
  // arm of a branch turned into selects, and in a loop header rotated into
  // its latch (both arms run for every thread: longer arms cost more than
  // the divergence they remove).
  int64_t if_convert_arm = 16;
  int64_t if_convert_header = 8;
};

inline constexpr Tuning kTuning{};

}  // namespace ab
