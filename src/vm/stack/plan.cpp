// The stack VM's execution planner (plan.h): the cost rule applied to each
// block's facts, and the report of the plan for -v, --stats and the APIs.
#include "vm/stack/plan.h"

#include <algorithm>

#include "vm/jit/jit.h"
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

// ", none can fail", or which op can and what a failed check does.
std::string fail_note(const BlockFacts& f) {
  if (f.whole_fail_op.empty()) return ", none can fail";
  return " ('" + f.whole_fail_op + "' can fail: the interpreter reruns the block and reports it)";
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

// Where the chain stops paying: `out`, the first block that is not chained
// in a function that runs many times per thread while others are chained
// (-1: none); and `keep`, per block, whether it may stay chained all the
// same. The functions are found from the blocks calls enter (and block 0,
// the entry): each one's blocks are those reached by gotos, branches and
// calls' return blocks. A function is hot when it is on a cycle of calls, or
// called from a hot one. A block stays chained when its function and every
// function it calls are chained whole and one of them recurses: a thread
// then enters the chain once per call and does the call's whole work there,
// a recursion (a gradient's loop, which the grad pass makes a recursion,
// called from a sampler's tree). A loop alone does not keep a function
// chained: nuts.ab's draw of a momentum, ten iterations per call, was
// slower entered from its caller each time than as segments.
struct ChainCut {
  int64_t out = -1;
  std::vector<bool> keep;
};

ChainCut chain_cut(const std::vector<BlockFacts>& facts, const std::vector<BlockPlan>& plan,
                   const std::vector<int64_t>& comp) {
  ChainCut cut;
  const size_t n = facts.size();
  bool chained = false;
  for (const BlockPlan& p : plan) chained = chained || p.mode == ExecMode::Chained;
  if (!chained || n == 0) return cut;
  std::vector<uint32_t> entries{0};
  for (const BlockFacts& f : facts)
    if (f.callee >= 0 && static_cast<size_t>(f.callee) < n)
      entries.push_back(static_cast<uint32_t>(f.callee));
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  // Each function's blocks, and the functions it calls (by index in entries).
  std::vector<std::vector<uint32_t>> blocks(entries.size());
  std::vector<std::vector<size_t>> calls(entries.size());
  for (size_t e = 0; e < entries.size(); ++e) {
    std::vector<bool> seen(n, false);
    std::vector<uint32_t> todo{entries[e]};
    seen[entries[e]] = true;
    while (!todo.empty()) {
      const uint32_t b = todo.back();
      todo.pop_back();
      blocks[e].push_back(b);
      if (facts[b].callee >= 0) {
        auto it = std::lower_bound(entries.begin(), entries.end(),
                                   static_cast<uint32_t>(facts[b].callee));
        if (it != entries.end() && *it == facts[b].callee)
          calls[e].push_back(static_cast<size_t>(it - entries.begin()));
      }
      for (uint32_t t : facts[b].next)
        if (t < n && !seen[t]) {
          seen[t] = true;
          todo.push_back(t);
        }
    }
  }
  // reach[e]: the functions e's calls lead to, directly or not.
  std::vector<std::vector<bool>> reach(entries.size(), std::vector<bool>(entries.size(), false));
  for (size_t e = 0; e < entries.size(); ++e) {
    std::vector<size_t> todo = calls[e];
    while (!todo.empty()) {
      const size_t g = todo.back();
      todo.pop_back();
      if (reach[e][g]) continue;
      reach[e][g] = true;
      for (size_t h : calls[g]) todo.push_back(h);
    }
  }
  const size_t m = entries.size();
  std::vector<bool> hot(m), full(m, true), loops(m, false);
  for (size_t e = 0; e < m; ++e) {
    hot[e] = reach[e][e];
    for (size_t r = 0; r < m && !hot[e]; ++r) hot[e] = reach[r][r] && reach[r][e];
    for (uint32_t b : blocks[e]) {
      full[e] = full[e] && plan[b].mode == ExecMode::Chained;
      loops[e] = loops[e] || facts[b].loop || comp[b] >= 0;
    }
    if (hot[e] && !full[e] && cut.out < 0)
      for (uint32_t b : blocks[e])
        if (plan[b].mode != ExecMode::Chained) {
          cut.out = b;
          break;
        }
  }
  if (cut.out < 0) return cut;
  cut.keep.assign(n, false);
  for (size_t e = 0; e < m; ++e) {
    bool closed = full[e], recursive = reach[e][e];
    for (size_t g = 0; g < m; ++g)
      if (reach[e][g]) {
        closed = closed && full[g];
        recursive = recursive || reach[g][g];
      }
    if (closed && recursive)
      for (uint32_t b : blocks[e]) cut.keep[b] = true;
  }
  return cut;
}

// Per block, the cycle of two or more blocks of its own function it lies on
// (gotos, branches and calls' return blocks; a loop block's edge to itself
// does not count), or -1: a loop body's blocks, and a loop nested in another
// loop.
std::vector<int64_t> loop_components(const std::vector<BlockFacts>& facts) {
  std::vector<std::vector<uint32_t>> next;
  for (const BlockFacts& f : facts) next.push_back(f.next);
  return jit::cycle_components(next);
}

}  // namespace

std::vector<BlockPlan> plan_blocks(const std::vector<BlockFacts>& facts, const PlanOptions& o) {
  std::vector<BlockPlan> plan(facts.size());
  // Traces and --max-steps see every block run by every thread: no chain.
  // (--stats counts the chain's work without changing the plan.)
  const bool counted = o.traced || o.max_steps > 0;
  const bool can_chain = o.persistent && !counted && o.chain && o.whole_blocks;
  const std::vector<int64_t> comp = loop_components(facts);
  // Loops that draw random numbers: in a program without calls they are not
  // chained, where each thread would draw alone (segments draw for the
  // chunk, vectorised: 1.3x faster on random_walk.ab).
  std::vector<bool> comp_draws(facts.size(), false);
  for (size_t b = 0; b < facts.size(); ++b)
    if (comp[b] >= 0 && facts[b].draws) comp_draws[static_cast<size_t>(comp[b])] = true;
  // What a block in a loop nest gets when its nest cannot be chained (rules
  // 2 to 4 without the nest's case), filled in as the plan is made.
  std::vector<BlockPlan> unnested(facts.size());
  std::vector<bool> nest(facts.size(), false);
  for (size_t b = 0; b < facts.size(); ++b) {
    const BlockFacts& f = facts[b];
    BlockPlan& p = plan[b];
    // 1. No JIT.
    if (!o.jit || !o.jit_available) {
      p.reason = !o.jit ? "--jit off: op at a time" : "this build has no JIT: op at a time";
      if (f.loop && o.persistent) p.reason += "; a chunk stays in the loop until its threads leave";
      continue;
    }
    // 2. Loop blocks under the persistent schedule: in a loop nest (rule 3)
    // chained; else the dense forms.
    const bool nested = comp[b] >= 0 && can_chain && f.whole_form &&
                        (o.calls || !comp_draws[static_cast<size_t>(comp[b])]);
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
      } else if (f.dense_scalar_draws && f.segments > 0) {
        p = segments_or_interpreted(
            f,
            "a chunk stays in the loop, not compiled whole: the body draws random numbers and "
            "calls a C function, which keeps its code from being vectorised, so its draws would "
            "run lane by lane; in segments the batched kernels draw them for the chunk");
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
      if (nested) {
        unnested[b] = p;
        nest[b] = true;
        p.mode = ExecMode::Chained;
        p.reason = body + " inside another loop, every op compiles" + fail_note(f) +
                   ": chained with the loop around it, threads run the nest alone";
      } else if (!f.dense_form && f.whole_form && can_chain && o.max_steps == 0) {
        // Not dense (a tensor written, a push), but whole: each thread runs
        // the loop alone in the chain.
        unnested[b] = p;
        nest[b] = true;
        p.mode = ExecMode::Chained;
        p.reason = body + ", every op compiles" + fail_note(f) +
                   ", not in the dense form (" + f.dense_blocker +
                   "): chained, threads run the loop alone";
      }
      continue;
    }
    // 3. Blocks compiled whole: in programs with calls, and in loop nests
    // (chained only).
    if (nested && !o.calls) {
      unnested[b] = segments_or_interpreted(
          f, "blocks are compiled whole only in programs with calls and in loops of several "
             "blocks");
      nest[b] = true;
      p.mode = ExecMode::Chained;
      p.reason = "in a loop of several blocks, every op compiles" + fail_note(f) +
                 ": threads run on alone through the blocks compiled whole";
      continue;
    }
    if (o.calls && o.whole_blocks && !f.loop && f.whole_form && (f.ops > 0 || can_chain)) {
      const std::string what = "program with calls, every op compiles" + fail_note(f);
      if (o.persistent && !counted && o.chain) {
        p.mode = ExecMode::Chained;
        p.reason = what + ": threads run on alone through the blocks compiled whole";
      } else {
        p.mode = ExecMode::WholeBlock;
        p.reason = what + ": a chunk per call, not chained (" +
                   (!o.persistent ? std::string("--schedule min-pc")
                    : o.traced    ? std::string("traced")
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
    else if (!o.calls && comp[b] >= 0 && !f.whole_form)
      why = "in a loop of several blocks, not compiled whole: " + f.whole_blocker;
    else if (!o.calls)
      why = "blocks are compiled whole only in programs with calls";
    else if (!o.whole_blocks)
      why = "AUTOBATCH_JIT_BLOCKS=0: no block compiled whole";
    else
      why = "not compiled whole: " + f.whole_blocker;
    p = segments_or_interpreted(f, why);
  }
  // A loop nest is chained only whole: a block of it left out would make
  // every thread leave the chain and enter it again at each iteration.
  for (size_t b = 0; b < facts.size(); ++b) {
    if (comp[b] < 0 || plan[b].mode == ExecMode::Chained) continue;
    for (size_t x = 0; x < facts.size(); ++x)
      if (comp[x] == comp[b] && nest[x] && plan[x].mode == ExecMode::Chained) {
        plan[x] = unnested[x];
        plan[x].reason += "; not chained with its loop: block '" + facts[b].name +
                          "' of the loop is not compiled whole";
      }
  }
  // The chain's rule (plan.h, rule 3).
  if (const ChainCut cut = chain_cut(facts, plan, comp); cut.out >= 0) {
    const int64_t out = cut.out;
    const std::string why =
        "; not chained: block '" + facts[out].name +
        "', in a function that runs many times per thread, is not compiled whole (threads "
        "would leave the chain there and enter it again, copying their stacks)";
    for (size_t b = 0; b < plan.size(); ++b) {
      BlockPlan& p = plan[b];
      if (p.mode != ExecMode::Chained) continue;
      if (cut.keep[b]) {
        p.reason += "; chained though block '" + facts[out].name +
                    "' is not: its function and all it calls are chained, and recurse, so a "
                    "thread enters the chain once per call";
        continue;
      }
      if (nest[b] || facts[b].ops == 0) {
        p = nest[b] ? unnested[b] : segments_or_interpreted(facts[b], "");
        p.reason += why;
        continue;
      }
      p.mode = ExecMode::WholeBlock;
      p.reason = "program with calls, every op compiles" + fail_note(facts[b]) +
                 ": a chunk per call" + why;
    }
  }
  return plan;
}

std::vector<BlockExecution> execution_report(const std::vector<std::string>& block_names,
                                             const std::vector<SourceLoc>& locs,
                                             const std::vector<BlockPlan>& plan) {
  std::vector<BlockExecution> out;
  for (size_t b = 0; b < plan.size() && b < block_names.size(); ++b)
    out.push_back({block_names[b], exec_mode_name(plan[b].mode), plan[b].reason,
                   b < locs.size() ? locs[b] : SourceLoc{}, {}});
  return out;
}

}  // namespace ab::stack
