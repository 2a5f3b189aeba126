// The stack VM's blocks as jit::Segment: the runs of compilable ops
// (find_segments), a run, a dense loop body or a whole block turned into a
// segment with its slots (make_segment), and the VM's side of a segment's
// batched call (seg_call).
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

// The VM's side of a segment's call (jit::CallFn): the op on the lanes, as
// the interpreter runs it; nonzero if it failed. A pop's error is kept in
// call_error_ (the segment is not rerun: the stack is unbalanced); any
// other failure is found again when the segment is rerun op at a time.
int64_t StackVM::seg_call(void* ctx, const uint32_t* idx, int64_t n) {
  const SegCall& c = *static_cast<const SegCall*>(ctx);
  StackVM& vm = *c.vm;
  const Op& op = vm.blocks_[c.block].ops[c.op];
  if (op.kind == Op::Kind::Pop) {
    vm.call_error_ = vm.pop(c.block, op, idx, n);
    return vm.call_error_ ? 1 : 0;
  }
  if (op.shared) {
    bool ready = true;
    for (const auto& o : op.outs) ready = ready && vm.leaves_[o.leaf].shared_ready;
    if (ready) return 0;
    if (vm.execute(c.block, op, nullptr, 1, idx)) return 1;
    for (const auto& o : op.outs) vm.leaves_[o.leaf].shared_ready = true;
    return 0;
  }
  return vm.execute(c.block, op, idx, n, idx) ? 1 : 0;
}

// ops [first, last) of block bi as a jit segment; slot_leaf gets each slot's
// leaf. With stack_leaf, the block form (jit::BlockFn): pops and the pushes
// of full variables are ops too, and stack_leaf gets each stack's leaf.
jit::Segment StackVM::make_segment(uint32_t bi, size_t first, size_t last, bool dense,
                                   std::vector<int32_t>& slot_leaf,
                                   std::vector<int32_t>* stack_leaf,
                                   std::vector<uint32_t>* call_ops) {
  const CBlock& cb = blocks_[bi];
  jit::Segment seg;
  std::map<int32_t, int32_t> slot_of;
  auto slot = [&](int32_t leaf) {
    auto it = slot_of.find(leaf);
    if (it != slot_of.end()) return it->second;
    jit::Slot sl;
    sl.keep = false;
    if (leaf == kRowLeaf || leaf == kFirstThreadLeaf) {  // thread_index's operands
      sl.dtype = DType::I64;
      sl.kind = leaf == kRowLeaf ? jit::SlotKind::Thread : jit::SlotKind::Shared;
    } else if (leaf <= kConstLeaf) {  // a tensor literal
      const TensorType& t = constants_[kConstLeaf - leaf].type;
      sl.dtype = t.dtype;
      sl.kind = jit::SlotKind::Shared;
      sl.tensor = true;
      sl.shape = t.shape;
    } else {
      const Leaf& l = leaves_[leaf];
      sl.dtype = l.type.dtype;
      sl.kind = l.shared         ? jit::SlotKind::Shared
                : l.in_scratch() ? jit::SlotKind::Scratch
                                 : jit::SlotKind::Thread;
      sl.tensor = !l.type.shape.empty();
      sl.shape = l.type.shape;
    }
    if (sl.kind == jit::SlotKind::Scratch && !dense && !stack_leaf) {
      // Kept if anything else in the block (or its branch) reads it.
      sl.keep = cb.term == TermKind::Branch && cb.cond == leaf;
      for (size_t i = 0; i < cb.ops.size() && !sl.keep; ++i)
        if (i < first || i >= last)
          for (const auto& a : cb.ops[i].args) sl.keep = sl.keep || a.leaf == leaf;
    }
    int32_t id = static_cast<int32_t>(seg.slots.size());
    seg.slots.push_back(sl);
    slot_leaf.push_back(leaf);
    slot_of[leaf] = id;
    return id;
  };
  auto arg = [&](const Ref& r) {
    jit::Arg a;
    if (r.constant >= 0 && !constants_[r.constant].type.shape.empty()) {
      a.slot = slot(kConstLeaf - r.constant);
    } else if (r.constant >= 0) {
      const Constant& c = constants_[r.constant];
      a.dtype = c.type.dtype;
      std::memcpy(&a.bits, c.data.data(), dtype_size(c.type.dtype));
    } else {
      a.slot = slot(r.leaf);
    }
    return a;
  };
  std::map<int32_t, int32_t> stack_of;
  auto stack_op = [&](jit::FOp::Kind kind, int32_t leaf) {
    auto it = stack_of.find(leaf);
    if (it == stack_of.end()) {
      it = stack_of.emplace(leaf, static_cast<int32_t>(stack_leaf->size())).first;
      stack_leaf->push_back(leaf);
    }
    jit::FOp f;
    f.kind = kind;
    f.stack = it->second;
    f.outs.push_back(slot(leaf));
    seg.ops.push_back(std::move(f));
  };
  const bool gather = !dense && !stack_leaf;
  for (size_t i = first; i < last; ++i) {
    const Op& op = cb.ops[i];
    if (gather && seg_form(op) == SegForm::Call) {  // the VM runs it for the lanes
      jit::FOp f;
      f.kind = jit::FOp::Kind::Call;
      f.stack = seg.calls++;
      f.fails = op_may_fail(op);
      if (call_ops) call_ops->push_back(static_cast<uint32_t>(i));
      seg.ops.push_back(std::move(f));
      continue;
    }
    if (op.kind == Op::Kind::Pop) {  // the block form only
      for (int32_t l : op.pops) stack_op(jit::FOp::Kind::Pop, l);
      continue;
    }
    if (op.shared) continue;  // dense: run once before the loop
    if (stack_leaf)
      for (const auto& o : op.outs)
        if (leaves_[o.leaf].full() && !o.in_place) stack_op(jit::FOp::Kind::Push, o.leaf);
    if (op.kind == Op::Kind::Copy) {
      for (size_t k = 0; k < op.outs.size(); ++k) {
        jit::FOp f;
        f.copy = true;
        f.args.push_back(arg(op.args[k]));
        f.outs.push_back(slot(op.outs[k].leaf));
        seg.ops.push_back(std::move(f));
      }
      continue;
    }
    jit::FOp f;
    f.prim = op.prim;
    for (const auto& a : op.args) f.args.push_back(arg(a));
    if (prim_per_thread(op.prim)) {  // thread_index: the lane's input row + first_thread
      f.args = {jit::Arg{slot(kRowLeaf)}, jit::Arg{slot(kFirstThreadLeaf)}};
    }
    for (const auto& o : op.outs) f.outs.push_back(slot(o.leaf));
    if (stack_leaf && op.prim == PrimId::Get && row_view(op, cb))
      seg.slots[f.outs[0]].view = true;  // read where it is (whole blocks only)
    f.cast_to = leaves_[op.outs[0].leaf].type.dtype;
    seg.ops.push_back(std::move(f));
  }
  if (dense) {
    seg.cond = slot(cb.cond);
    seg.stay_on_true = cb.self == 1;
  }
  if (stack_leaf) {
    seg.stacks = static_cast<int32_t>(stack_leaf->size());
    seg.pc = bi;
    seg.target = cb.t1;
    seg.target2 = cb.t2;
    switch (cb.term) {
      case TermKind::Branch:
        seg.exit = jit::Exit::Branch;
        seg.cond = slot(cb.cond);
        break;
      case TermKind::PushGoto:
        seg.exit = jit::Exit::Call;
        seg.ret_pc = cb.t1;
        seg.target = cb.t2;
        break;
      case TermKind::IndirectGoto:
        seg.exit = jit::Exit::Return;
        break;
      default:
        seg.exit = jit::Exit::Goto;
        break;
    }
  }
  return seg;
}

// The runs of block bi's compilable ops long enough to compile (ops [first,
// last) and the full variables each pushes; not yet compiled).
std::vector<Seg> StackVM::find_segments(uint32_t bi) const {
  const CBlock& cb = blocks_[bi];
  std::vector<Seg> out;
  size_t i = 0;
  const size_t end = cb.ops.size() - (cb.fused_cmp ? 1 : 0);  // the branch compares
  while (i < end) {
    if (seg_form(cb.ops[i]) == SegForm::None) {
      ++i;
      continue;
    }
    Seg s;
    s.first = i;
    // The segment's pushes happen before it runs (s.spills), so a full
    // variable it pushes must not be written (or popped) earlier in it:
    // the push would save the value from before that write.
    std::set<int32_t> written;
    for (; i < end && seg_form(cb.ops[i]) != SegForm::None; ++i) {
      const Op& op = cb.ops[i];
      bool early = false;
      for (const auto& o : op.outs)
        if (leaves_[o.leaf].full() && !o.in_place && written.count(o.leaf)) early = true;
      if (early) break;
      if (op.kind == Op::Kind::Pop) written.insert(op.pops.begin(), op.pops.end());
      for (const auto& o : cb.ops[i].outs) {
        written.insert(o.leaf);
        if (leaves_[o.leaf].full() && !o.in_place) s.spills.push_back(o.leaf);
      }
    }
    s.last = i;
    // A run shorter than min_segment gains little over its kernels, but when
    // it is the whole block (every instruction compiles) it is compiled all
    // the same: the block then has no instruction left to the interpreter.
    const bool whole = s.first == 0 && s.last == end;
    if (static_cast<int64_t>(s.last - s.first) >= kTuning.min_segment || whole)
      out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ab::stack
