// The stack VM's execution planner (plan.h): the cost rule applied to each
// block's facts, and the report of the plan for -v, --stats and the APIs.
#include "vm/stack/plan.h"

#include "vm/tuning.h"

namespace ab::stack {

const char* exec_mode_name(ExecMode m) {
  switch (m) {
    case ExecMode::Interpreted:
      return "interpreted";
    case ExecMode::Segments:
      return "segments";
    case ExecMode::DenseLoop:
      return "dense_loop";
    case ExecMode::DenseChunks:
      return "dense_chunks";
    case ExecMode::WholeBlock:
      return "whole_block";
    case ExecMode::Chained:
      return "chained";
  }
  return "interpreted";
}

namespace {

std::string count(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Rule 4: segments where runs of compilable ops are long enough, else op at
// a time. `why` says why the block is not compiled in a larger form.
BlockPlan segments_or_interpreted(const BlockFacts& f, std::string why) {
  BlockPlan p;
  if (f.ops == 0) {
    p.reason = "no instructions: its terminator moves the threads on";
    return p;
  }
  if (f.segments > 0) {
    p.mode = ExecMode::Segments;
    p.reason = count(f.segment_ops, "instruction", "instructions") + " of " +
               std::to_string(f.ops) + " compiled in " + count(f.segments, "segment", "segments") +
               "; " + why;
    return p;
  }
  if (f.not_compiled.empty() && f.dense_blocker.empty())
    p.reason = count(f.ops, "instruction", "instructions") + ", too few in a row for a segment (" +
               std::to_string(kTuning.min_segment) + "); " + why;
  else
    p.reason = why + "; no run of " + std::to_string(kTuning.min_segment) +
               " or more compilable instructions";
  return p;
}

}  // namespace

std::vector<BlockPlan> plan_blocks(const std::vector<BlockFacts>& facts, const PlanOptions& o) {
  std::vector<BlockPlan> plan(facts.size());
  const bool counted = o.traced || o.stats || o.max_steps > 0;
  for (size_t b = 0; b < facts.size(); ++b) {
    const BlockFacts& f = facts[b];
    BlockPlan& p = plan[b];
    // 1. No JIT.
    if (!o.jit || !o.jit_available) {
      p.reason = !o.jit ? "--jit off: op at a time" : "this build has no JIT: op at a time";
      if (f.loop && o.persistent) p.reason += "; a chunk stays in the loop until its threads leave";
      continue;
    }
    // 2. Loop blocks under the persistent schedule.
    if (f.loop && o.persistent) {
      const std::string body = "loop body of " + count(f.ops, "instruction", "instructions");
      if (o.max_steps > 0) {
        p = segments_or_interpreted(
            f,
            "--max-steps counts every iteration per thread: a chunk stays in the loop, "
            "not compiled whole");
      } else if (!f.dense_form) {
        p = segments_or_interpreted(
            f, "a chunk stays in the loop, not compiled whole: " + f.dense_blocker);
      } else if (!f.dense_fails) {
        p.mode = ExecMode::DenseLoop;
        p.reason = body + ", every op compiles, none can fail: a window of " +
                   std::to_string(kTuning.chunk) + " threads refilled from the block's list";
        if (f.dense_copies > 1)
          p.reason += ", " + std::to_string(f.dense_copies) +
                      " iterations per call, a last thread alone without masks";
      } else {
        p.mode = ExecMode::DenseChunks;
        p.reason = body + ", every op compiles but '" + f.dense_fail_op +
                   "' can fail: a chunk at a time, rerun op at a time on a failed check";
      }
      continue;
    }
    // 3. Blocks compiled whole, in programs with calls.
    if (o.calls && o.whole_blocks && !f.loop && f.whole_form) {
      const std::string what = "program with calls, every op compiles, none can fail";
      if (o.persistent && !counted && o.chain) {
        p.mode = ExecMode::Chained;
        p.reason = what + ": threads run on alone through the blocks compiled whole";
      } else {
        p.mode = ExecMode::WholeBlock;
        p.reason = what + ": a chunk per call, not chained (" +
                   (!o.persistent ? std::string("--schedule min-pc")
                    : o.traced    ? std::string("traced")
                    : o.stats     ? std::string("--stats counts every block run")
                    : o.max_steps ? std::string("--max-steps counts every block run")
                                  : std::string("AUTOBATCH_JIT_CHAIN=0")) +
                   ")";
      }
      continue;
    }
    // 4. Segments or op at a time.
    std::string why;
    if (!f.not_compiled.empty())
      why = f.not_compiled;
    else if (f.loop)
      why = "a loop under --schedule min-pc runs one iteration per step";
    else if (!o.calls)
      why = "blocks are compiled whole only in programs with calls";
    else if (!o.whole_blocks)
      why = "AUTOBATCH_JIT_BLOCKS=0: no block compiled whole";
    else
      why = "not compiled whole: " + f.whole_blocker;
    p = segments_or_interpreted(f, why);
  }
  return plan;
}

std::vector<BlockExecution> execution_report(const std::vector<std::string>& block_names,
                                             const std::vector<SourceLoc>& locs,
                                             const std::vector<BlockPlan>& plan) {
  std::vector<BlockExecution> out;
  for (size_t b = 0; b < plan.size() && b < block_names.size(); ++b)
    out.push_back({block_names[b], exec_mode_name(plan[b].mode), plan[b].reason,
                   b < locs.size() ? locs[b] : SourceLoc{}});
  return out;
}

}  // namespace ab::stack
