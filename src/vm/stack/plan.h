// The stack VM's execution planner: for every block, one decision of how it
// runs (ExecMode) and why, made once before the run from the block's
// contents (BlockFacts, gathered by jit_plan.cpp), the run's options
// (PlanOptions) and the cost rule below. The run follows the plan: the JIT
// compiles what it names and the scheduler dispatches each block by its mode
// (a tiered run, before its code is ready, every block op at a time).
//
// Cost rule, block by block (the first case that applies decides):
//  1. Without the JIT (--jit off, or a build without LLVM) nothing is
//     compiled: interpreted (op at a time through the kernels).
//  2. A loop block (it branches to itself) under the persistent schedule and
//     without --max-steps (a dense body counts no steps per thread): inside
//     another loop (a cycle of blocks holding it) and compiled whole,
//     chained with that loop (each thread runs the nest alone); else in the
//     dense form when every op but those computing shared values compiles,
//     none pushes a stack and the condition is a scalar: dense_loop when the
//     body cannot fail (a window of threads gathered into dense arrays and
//     refilled from the block's list; a short body runs several iterations
//     per call and a thread left alone runs without masks), dense_chunks when
//     it can (one chunk at a time; a failed check reruns that chunk op at a
//     time, which reports the error). A body that draws random numbers and
//     calls a C function is not vectorised by LLVM: segments instead, whose
//     batched kernels draw for the chunk. A loop that cannot be dense but
//     compiles whole is chained.
//  3. A block that is not a loop, whose every op compiles (an op that can
//     fail included: the lane is left to the interpreter as it was) and
//     whose stacks hold one-word scalars, in a program with calls (its
//     blocks run once per call, so many times per thread) or on a loop of
//     several blocks that draws no random numbers: chained (threads run on
//     alone through the blocks compiled whole, calls and returns included)
//     under the persistent schedule unless traced or bounded (--trace,
//     --max-steps), whole_block otherwise (in programs with calls).
//     Outside loops, without calls, a block runs about once per thread and
//     its compilation (full code generation) would not repay itself.
//     A loop nest is chained whole or not at all. The chain pays only where
//     threads stay in it: a thread that reaches a block outside it leaves,
//     and entering again copies every level of its stacks. So when a block
//     that is not compiled whole lies in a function that runs many times per
//     thread (a recursive function, or one called from it), the blocks of
//     such functions are not chained: each is whole_block (on mergesort.ab,
//     whose merge worked on a tensor, the chain took twice the time), unless
//     the function and every function it calls are chained whole and one of
//     them recurses: a thread then enters the chain once per call and does
//     the call's whole recursion there (a gradient's loop, a recursion after
//     the grad pass, called from a sampler's tree that is not compiled
//     whole).
//  4. Otherwise runs of at least Tuning::min_segment consecutive compilable
//     ops are compiled as segments (a shorter run gains nothing over its
//     kernels), and so is a block whose every op compiles, however short;
//     the rest run op at a time; with no segment, interpreted.
//
// Per lane or batched: in a segment every op compiles. Ops on scalars run
// per lane with their values in registers; ops on tensors that touch each
// element once (elementwise on events of at most Tuning::inline_elements,
// copy, get, set, size, reshape) run per lane inline over the lane's
// event, which is the kernel's work without its call and layout dispatch
// (a larger elementwise op is called as its kernel, vectorised over the
// chunk); the others (reductions, linear algebra,
// categorical, random numbers (scalar ones too: the kernel draws the
// chunk's Philox blocks vectorised across lanes), the builders, primitives
// registered by an embedder), a pop and a value computed once for every
// thread are called from the compiled loop for all the segment's lanes at
// once: the batched kernel, where a shared matrix is one GEMM over the
// chunk, which code run lane by lane cannot match. The forms of rules 2
// and 3 run lane by lane throughout and keep scalar values in registers.
// The dense form (rule 2) takes scalar ops and reads of a tensor by index;
// the whole form (rule 3, and loops chained) also takes in-place sets and
// the gather form's tensor ops on the lane's events in memory (copies,
// zeros, get, set, size, reshape, elementwise on at most
// Tuning::inline_elements elements), except that a block with an op that
// can fail writes no per-thread tensor whole (its rerun must find it as it
// was). A block with batched calls, or a tensor that a call saves, runs as
// segments. A reduction of a scalar and a scalar zeros compile per lane as
// the kernels' one-element result. --stats changes nothing here (the chain
// counts its work when asked).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "vm/trace.h"

namespace ab::stack {

enum class ExecMode : uint8_t {
  Interpreted,  // op at a time through the kernels, no compiled code
  Segments,     // runs of ops compiled into gather loops, the rest op at a time
  DenseLoop,    // a loop block's body compiled whole, on a refilled window of threads
  DenseChunks,  // the same, one chunk at a time (the body may fail)
  WholeBlock,   // the block compiled whole (jit::BlockFn), a chunk per call
  Chained,      // compiled whole into the chain (jit::ChainFn)
};

// The name --stats and the APIs use ("interpreted", "segments", ...).
const char* exec_mode_name(ExecMode m);

struct BlockPlan {
  ExecMode mode = ExecMode::Interpreted;
  std::string reason;  // a short sentence for the user
};

// What the planner needs to know of one block (jit_plan.cpp gathers it;
// the compile facts only when the JIT is on and available).
struct BlockFacts {
  size_t ops = 0;          // ops the block runs (copies coalesced away excluded)
  bool loop = false;       // branches to itself on a per-thread condition
  bool fused_cmp = false;  // its branch compares and splits in one pass
  bool draws = false;      // it draws random numbers
  // Why some op does not compile ("op 'matmul' on tensors is not compiled"),
  // "" when every op does.
  std::string not_compiled;
  // Dense form (loop blocks): possible, and whether the body may fail (the
  // op that can, by name, in dense_fails).
  bool dense_form = false;
  std::string dense_blocker;  // why not, when not ("" when dense_form)
  bool dense_fails = false;
  std::string dense_fail_op;
  int32_t dense_copies = 1;  // iterations per call of a body that cannot fail
  // The body draws random numbers and calls a C function (so LLVM does not
  // vectorise it): its draws would run lane by lane.
  bool dense_scalar_draws = false;
  // Whole form (not loops): possible (jit::BlockFn), or why not.
  bool whole_form = false;
  std::string whole_blocker;
  std::string whole_fail_op;  // an op of the whole form that can fail ("" when none)
  // Segments: the runs of compilable ops long enough to compile.
  size_t segments = 0;
  size_t segment_ops = 0;
  // Its place in the control flow, for the chain's rule: the blocks its
  // threads go to next within its function (goto and branch targets, a
  // call's return block), the block a call enters (-1: no call), its name.
  std::vector<uint32_t> next;
  int64_t callee = -1;
  std::string name;
};

struct PlanOptions {
  bool jit = true;            // --jit (RunOptions::jit)
  bool jit_available = true;  // this build has the JIT
  bool persistent = true;     // the persistent schedule
  bool traced = false;
  bool stats = false;
  int64_t max_steps = 0;
  bool calls = false;        // the program has calls (push_goto)
  bool whole_blocks = true;  // developer switch (EnvOptions::jit_blocks)
  bool chain = true;         // developer switch (EnvOptions::jit_chain)
};

// One plan per block, by the cost rule above.
std::vector<BlockPlan> plan_blocks(const std::vector<BlockFacts>& facts, const PlanOptions& o);

// What the run reports: each block's name with its plan's mode and reason.
std::vector<BlockExecution> execution_report(const std::vector<std::string>& block_names,
                                             const std::vector<SourceLoc>& locs,
                                             const std::vector<BlockPlan>& plan);

}  // namespace ab::stack
