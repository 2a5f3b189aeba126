// The stack VM's plan: each block's facts (gather_facts: what each form
// would compile, and what it costs) and the cost rule applied to them
// (plan(), vm/stack/plan.h).
#include <cstdio>
#include <set>

#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

namespace {

// Iterations per call of a compiled loop body of `ops` instructions that
// cannot fail: enough to amortise the lanes' loads and stores, few enough to
// keep the code small (collatz under callgrind: 99.7M instructions in the
// body with 1, 83.6M with 2, 72.7M with 4, 69.3M with 8; 4 copies cost 15 ms
// more of compilation, 8 copies 30 ms); Tuning has the numbers.
int32_t loop_copies(size_t ops) {
  const int32_t copies = ops <= static_cast<size_t>(kTuning.small_body) ? kTuning.copies_small_body
                         : ops <= static_cast<size_t>(kTuning.medium_body)
                             ? kTuning.copies_medium_body
                             : 1;
  return std::clamp(copies, 1, kMaxCopies);
}

}  // namespace

namespace {

// The first op of seg that can fail, by name ("" when none can).
std::string failing_op(const jit::Segment& seg) {
  for (const auto& f : seg.ops)
    if (jit::may_fail(f, seg.slots)) return f.copy ? "copy" : prim_info(f.prim).name;
  return "";
}

}  // namespace

// Block bi's facts for the planner and the code each form would compile
// (the plan then picks one).
void StackVM::gather_facts(uint32_t bi, BlockFacts& f, Candidates& c) {
  const CBlock& cb = blocks_[bi];
  for (const auto& op : cb.ops) {
    std::string why = not_compiled(op);
    // The first op that breaks a segment, pops and shared values last.
    const bool minor = op.kind == Op::Kind::Pop || op.shared;
    if (!why.empty() && (f.not_compiled.empty() || (!minor && c.minor_blocker))) {
      f.not_compiled = why;
      c.minor_blocker = minor;
    }
  }
  c.segs = find_segments(bi);
  for (const Seg& s : c.segs) f.segment_ops += s.last - s.first;
  f.segments = c.segs.size();
  if (cb.self >= 0) {
    // The dense form: every op but those computing shared values compiles,
    // none pushes, the condition is a scalar.
    if (!scalar_leaf(cb.cond)) f.dense_blocker = "its condition is not a scalar";
    for (const auto& op : cb.ops) {
      if (op.shared || !f.dense_blocker.empty()) continue;
      if (!compilable(op) && !dense_read(op, cb)) f.dense_blocker = per_lane_blocker(op);
      for (const auto& o : op.outs)
        if (leaves_[o.leaf].full() && !o.in_place && f.dense_blocker.empty())
          f.dense_blocker = "it pushes the stack of '" + leaves_[o.leaf].var + "'";
    }
    f.dense_form = f.dense_blocker.empty();
    if (f.dense_form) {
      c.dense = make_segment(bi, 0, cb.ops.size(), true, c.dense_slots);
      f.dense_fail_op = failing_op(c.dense);
      f.dense_fails = !f.dense_fail_op.empty();
      // A random primitive weighs as Tuning::random_op_weight ops.
      size_t weight = 0;
      for (const auto& op : c.dense.ops)
        weight += !op.copy && prim_random(op.prim) ? kTuning.random_op_weight : 1;
      f.dense_copies = f.dense_fails ? 1 : loop_copies(weight);
      c.dense.copies = f.dense_copies;
      bool draws = false, calls = false;
      for (const auto& op : c.dense.ops) {
        draws = draws || (!op.copy && prim_random(op.prim));
        calls = calls || jit::calls_c(op, c.dense.slots);
      }
      f.dense_scalar_draws = draws && calls;
    }
  }
  f.whole_blocker = whole_blocker(cb);
  if (f.whole_blocker.empty()) {
    c.whole = make_segment(bi, 0, cb.ops.size(), false, c.whole_slots, &c.whole_stacks);
    const std::string fails = failing_op(c.whole);
    // A lane whose check fails leaves the compiled block as it found it, so
    // that the interpreter can run the block for it and report the error:
    // the compiled code puts its stacks' depths back (what a pop read stays
    // below the top, what a push wrote above it), which a push after a pop
    // of the same stack would overwrite; and it writes a tensor only if no
    // check has failed, keeping a written element's old value to put back
    // if a later check fails (x[i] = x[j]; x[j] = t), but not a written
    // row's, so no check may come after a set of a row.
    if (!fails.empty()) {
      std::set<int32_t> popped;
      bool written = false;
      for (const auto& fo : c.whole.ops) {
        if (fo.kind == jit::FOp::Kind::Pop) popped.insert(fo.stack);
        if (fo.kind == jit::FOp::Kind::Push && popped.count(fo.stack))
          f.whole_blocker = "op '" + fails + "' can fail in a block that pops and then pushes";
        if (written && jit::may_fail(fo, c.whole.slots))
          f.whole_blocker = "op '" + fails + "' can fail after a row of a tensor is set";
        // A per-thread tensor written whole (a copy, elementwise, an
        // out-of-place set: whole_tensor) is not put back: with a check
        // anywhere in the block, the rerun could read it changed.
        if (fo.kind == jit::FOp::Kind::Compute && !fo.outs.empty()) {
          const jit::Slot& o = c.whole.slots[fo.outs[0]];
          const bool in_place_set = !fo.copy && fo.prim == PrimId::Set &&
                                    fo.args[0].slot == fo.outs[0];
          if (o.tensor && !o.view && o.kind != jit::SlotKind::Scratch && !in_place_set)
            f.whole_blocker = "op '" + fails + "' can fail in a block that writes the tensor '" +
                              leaves_[c.whole_slots[fo.outs[0]]].var + "' whole";
        }
        if (fo.kind == jit::FOp::Kind::Compute && !fo.copy && fo.prim == PrimId::Set) {
          // set(x, i1, ..., ik, v) writes the elements of x[i1, ..., ik].
          const jit::Slot& x = c.whole.slots[fo.args[0].slot];
          const size_t k = fo.args.size() - 2;
          int64_t lead = 1;
          for (size_t d = 0; d < k && d < x.shape.size(); ++d) lead *= x.shape[d];
          written = written || (lead > 0 && x.elems() / lead > 1);
        }
      }
    }
    f.whole_fail_op = fails;
  }
  f.whole_form = f.whole_blocker.empty();
}

// The plan (vm/stack/plan.h): each block's facts, the cost rule, and the
// code of the forms it picked, compiled.
void StackVM::plan() {
  PlanOptions po;
  po.jit = opt_.jit;
  po.jit_available = opt_.jit && jit::available();  // (asks LLVM: not with --jit off)
  po.persistent = opt_.persistent;
  po.traced = opt_.trace && opt_.trace->on();
  po.stats = opt_.stats != nullptr;
  po.max_steps = opt_.max_steps;
  po.calls = has_calls();
  po.whole_blocks = env_options().jit_blocks;
  po.chain = env_options().jit_chain;
  std::vector<BlockFacts> facts(blocks_.size());
  std::vector<Candidates> cand;
  const bool compiling = po.jit && po.jit_available;
  if (compiling) cand.resize(blocks_.size());
  for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
    const CBlock& cb = blocks_[bi];
    facts[bi].ops = cb.ops.size();
    facts[bi].loop = cb.self >= 0;
    facts[bi].fused_cmp = cb.fused_cmp;
    for (const auto& op : cb.ops)
      facts[bi].draws = facts[bi].draws || (op.kind == Op::Kind::Kernel && prim_random(op.prim));
    facts[bi].name = p_.blocks[bi].label.name;
    switch (cb.term) {
      case TermKind::Goto:
        facts[bi].next = {cb.t1};
        break;
      case TermKind::Branch:
        facts[bi].next = {cb.t1, cb.t2};
        break;
      case TermKind::PushGoto:  // t1: where the call returns, t2: the callee
        facts[bi].next = {cb.t1};
        facts[bi].callee = cb.t2;
        break;
      default:
        break;
    }
    if (compiling) gather_facts(bi, facts[bi], cand[bi]);
  }
  plan_ = plan_blocks(facts, po);
  for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
    blocks_[bi].mode = plan_[bi].mode;
    blocks_[bi].persistent_loop = facts[bi].loop && po.persistent;
  }
  if (!po.jit_available && po.jit) jit_log_ = "jit: off (this build has no JIT)";
  if (compiling) build_jit(cand);
}

}  // namespace ab::stack
