// The JIT's plan for the stack VM: which ops compile, the gather segments,
// dense loop bodies and whole blocks of each block as jit::Segment, their
// compilation (src/vm/jit/jit.h), and binding compiled blocks to this run's
// arrays.
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

bool StackVM::scalar_leaf(int32_t l) const {
  const Leaf& x = leaves_[l];
  return x.type.shape.empty() && x.ebytes > 0;
}

DType StackVM::ref_dtype(const Ref& r) const { return ref_type(r).dtype; }

const TensorType& StackVM::ref_type(const Ref& r) const {
  return r.constant >= 0 ? constants_[r.constant].type : leaves_[r.leaf].type;
}

bool StackVM::compilable(const Op& op) const {
  if (op.kind == Op::Kind::Pop || op.shared || op.outs.empty()) return false;
  for (const auto& a : op.args)
    if (a.constant >= 0 ? !constants_[a.constant].type.shape.empty() : !scalar_leaf(a.leaf))
      return false;
  for (const auto& o : op.outs)
    if (!scalar_leaf(o.leaf) || leaves_[o.leaf].shared) return false;
  if (op.kind == Op::Kind::Copy) {
    if (op.outs.size() != op.args.size()) return false;
    for (size_t k = 0; k < op.outs.size(); ++k)
      if (ref_dtype(op.args[k]) != leaves_[op.outs[k].leaf].type.dtype) return false;
    return true;
  }
  // One result, or split's two keys (of one dtype).
  if (op.outs.size() != 1 && !(op.prim == PrimId::Split && op.outs.size() == 2)) return false;
  for (const auto& o : op.outs)
    if (leaves_[o.leaf].type.dtype != leaves_[op.outs[0].leaf].type.dtype) return false;
  std::vector<DType> ds;
  for (const auto& a : op.args) ds.push_back(ref_dtype(a));
  // A primitive that reads its thread (thread_index) gets the thread's input
  // row and the batch's first thread as operands (make_segment).
  if (prim_per_thread(op.prim)) ds = {DType::I64, DType::I64};
  return jit::supported(op.prim, ds, leaves_[op.outs[0].leaf].type.dtype);
}

StackVM::SegForm StackVM::seg_form(const Op& op) const {
  if (op.kind == Op::Kind::Pop) return SegForm::Call;
  const bool runs = op.kind == Op::Kind::Copy || op.fn;  // execute() can run it
  if (op.shared) return runs ? SegForm::Call : SegForm::None;
  // A random primitive in a gather segment calls its batched kernel, which
  // draws the chunk's Philox blocks vectorised across lanes: inline, each
  // lane would call the module's scalar Philox, about twice the time on
  // gillespie.ab. (Dense loops inline it vectorised with the body; whole
  // blocks and the chain inline it per lane: compilable().)
  if (op.kind == Op::Kind::Kernel && op.fn && prim_random(op.prim)) return SegForm::Call;
  if (compilable(op)) return SegForm::Lane;
  if (op.outs.empty()) return runs ? SegForm::Call : SegForm::None;
  bool inline_ok = true;
  for (const auto& o : op.outs) inline_ok = inline_ok && !leaves_[o.leaf].shared;
  if (op.kind == Op::Kind::Copy) {
    inline_ok = inline_ok && op.outs.size() == op.args.size();
    for (size_t k = 0; inline_ok && k < op.outs.size(); ++k)
      inline_ok = ref_type(op.args[k]) == leaves_[op.outs[k].leaf].type;
    return inline_ok ? SegForm::Tensor : SegForm::Call;
  }
  if (inline_ok && op.outs.size() == 1) {
    std::vector<TensorType> args;
    for (const auto& a : op.args) args.push_back(ref_type(a));
    const TensorType& out = leaves_[op.outs[0].leaf].type;
    const bool moves = op.prim == PrimId::Get || op.prim == PrimId::Set ||
                       op.prim == PrimId::Size || op.prim == PrimId::Reshape;
    // Elementwise: per lane only on small events (Tuning::inline_elements).
    if (jit::supported_tensor(op.prim, args, out) &&
        (moves || out.num_elements() <= kTuning.inline_elements))
      return SegForm::Tensor;
  }
  return runs ? SegForm::Call : SegForm::None;
}

// Whether op may report an error (a pop of an empty stack aside: an
// unbalanced program, which the call reports itself): ops.def's Fails
// column, narrowed by the operands' dtypes as jit::may_fail narrows it (a
// segment that may fail saves its outputs on every run).
bool StackVM::op_may_fail(const Op& op) const {
  if (op.kind != Op::Kind::Kernel || !prim_may_fail(op.prim)) return false;
  if (op.args.empty() || op.outs.empty()) return true;
  const DType d = ref_dtype(op.args[0]);
  const bool int_operand = d == DType::I32 || d == DType::I64;
  switch (op.prim) {
    case PrimId::Div:
    case PrimId::Mod:
    case PrimId::Pow:
      return int_operand;
    case PrimId::Cast: {
      const DType to = leaves_[op.outs[0].leaf].type.dtype;
      return is_float(d) && (to == DType::I32 || to == DType::I64);
    }
    default:
      return true;
  }
}

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

// A full variable whose stack compiled blocks push and pop: a scalar of at
// most one 8-byte word.
bool StackVM::word_stack(int32_t l) const {
  const Leaf& x = leaves_[l];
  return x.full() && scalar_leaf(l) && x.words == 1 &&
         (x.ebytes == 1 || x.ebytes == 4 || x.ebytes == 8);
}

// Whether block bi can be compiled whole (jit::BlockFn): ending in goto,
// branch, push_goto or indirect_goto, every op compilable (or a read by
// index, whole_index), every pushed or popped variable a word_stack. (Ops
// that can fail are checked on the segment: gather_facts.) A loop block
// compiled whole runs in the chain only, when it is nested in a loop.
bool StackVM::block_form(const CBlock& cb) const {
  switch (cb.term) {
    case TermKind::Branch:
      if (!scalar_leaf(cb.cond)) return false;
      break;
    case TermKind::Goto:  // (with no instructions: a jump within the chain)
    case TermKind::PushGoto:
    case TermKind::IndirectGoto:
      break;
    default:
      return false;
  }
  for (const auto& op : cb.ops) {
    if (op.kind == Op::Kind::Pop) {
      for (int32_t l : op.pops)
        if (!word_stack(l)) return false;
      continue;
    }
    if (shared_done(op)) continue;  // computed before the run (precompute_shared)
    if (!compilable(op) && !whole_index(op, cb)) return false;
    for (const auto& o : op.outs)
      if (leaves_[o.leaf].full() && !o.in_place && !word_stack(o.leaf)) return false;
  }
  return true;
}

void* StackVM::thread_operand(int32_t l) {
  if (l == kRowLeaf) return lane_input_.data();
  return &opt_.first_thread;
}

// Compiled blocks: each one's base (jit.h, BlockFn), for this run's arrays.
void StackVM::bind_blocks() {
  for (CBlock& cb : blocks_)
    for (Seg& s : cb.segs) {
      for (auto [k, l] : s.thread_operands) s.base[k] = thread_operand(l);
      for (size_t c = 0; c < s.calls.size(); ++c) {
        s.calls[c].vm = this;
        s.base[s.call_base + 2 * c] = reinterpret_cast<void*>(&StackVM::seg_call);
        s.base[s.call_base + 2 * c + 1] = &s.calls[c];
      }
    }
  for (CBlock& cb : blocks_) {
    if (cb.mode != ExecMode::WholeBlock && cb.mode != ExecMode::Chained) continue;
    auto& base = cb.block_base;
    base.clear();
    for (int32_t l : cb.block_slots) {
      if (l == kRowLeaf || l == kFirstThreadLeaf) {
        base.push_back(thread_operand(l));
        continue;
      }
      if (l <= kConstLeaf) {  // a tensor literal (get, size)
        base.push_back(const_cast<std::byte*>(constants_[kConstLeaf - l].data.data()));
        continue;
      }
      Leaf& x = leaves_[l];
      base.push_back(x.in_scratch() ? x.scratch.data() : x.top.data());
    }
    for (int32_t l : cb.block_stacks) {
      Leaf& x = leaves_[l];
      base.push_back(x.depth.data());
      base.push_back(const_cast<uint64_t**>(x.below.rows()));
      base.push_back(const_cast<uint32_t*>(x.below.ready_ptr()));
    }
    base.push_back(pc_depth_.data());
    base.push_back(const_cast<uint32_t**>(pcs_.rows()));
    base.push_back(const_cast<uint32_t*>(pcs_.ready_ptr()));
  }
  chain_bases_.clear();
  for (uint32_t b : chain_blocks_) {
    chain_bases_.push_back(blocks_[b].block_base.data());
    // Every row the chain can use, made now: a thread in the chain stops
    // before a level without its row, and each stop costs a block
    // interpreted and a step.
    for (int32_t l : blocks_[b].block_stacks) leaves_[l].below.make_flat_rows();
    pcs_.make_flat_rows();
  }
}

// Why op does not compile in a gather segment ("" when it does), for the
// plan's reasons.
std::string StackVM::not_compiled(const Op& op) const {
  if (seg_form(op) != SegForm::None) return "";
  const std::string name =
      "op '" + std::string(op.kind == Op::Kind::Copy ? "copy" : prim_info(op.prim).name) + "'";
  return name + " has no kernel to call";
}

// Why op does not compile per lane, in the forms that keep a lane's values
// in registers (dense loops, whole blocks): "" when it does.
std::string StackVM::per_lane_blocker(const Op& op) const {
  if (compilable(op)) return "";
  if (op.kind == Op::Kind::Pop)
    return "the pop of '" + leaves_[op.pops.front()].var +
           "' is compiled only in a whole block or as a call from a segment";
  const std::string name =
      "op '" + std::string(op.kind == Op::Kind::Copy ? "copy" : prim_info(op.prim).name) + "'";
  if (op.shared) return name + " computes a value shared by every thread (once, op at a time)";
  if (op.outs.empty()) return name + " has no result";
  const bool is_call = seg_form(op) == SegForm::Call;
  const std::string tensors =
      is_call ? " is called as its batched kernel: compiled only in segments"
              : " on tensors is compiled only in segments (events in memory)";
  for (const auto& a : op.args)
    if (a.constant >= 0 ? !constants_[a.constant].type.shape.empty() : !scalar_leaf(a.leaf))
      return name + tensors;
  for (const auto& o : op.outs)
    if (!scalar_leaf(o.leaf)) return name + tensors;
  if (is_custom_prim(op.prim)) return name + " is called as its kernel: compiled only in segments";
  if (op.outs.size() != 1 && op.kind != Op::Kind::Copy && op.prim != PrimId::Split)
    return name + " with several results is not compiled";
  std::string types;
  for (const auto& a : op.args)
    types += std::string(types.empty() ? "" : ", ") + dtype_name(ref_dtype(a));
  return name + " on " + (types.empty() ? std::string("no operands") : types) + " is not compiled";
}

// An op a dense loop body compiles although it reads a tensor: get (one
// element, by a per-thread index) or size of a tensor that nothing in the
// block writes (an input, a variable set before the loop, a literal). The
// body reads the element in place through the lane's event address (the
// window holds addresses, not copies); a bad index raises the body's flag,
// and the interpreter reruns that iteration and reports it.
bool StackVM::dense_read(const Op& op, const CBlock& cb) const {
  return index_read(op, cb, false) && !leaves_[op.outs[0].leaf].full();
}

// get or size with a scalar result from a tensor operand (a literal, or a
// variable the block neither pops nor writes; with in_place_sets, one it
// writes by in-place sets, when no call saves it), scalar indices.
bool StackVM::index_read(const Op& op, const CBlock& cb, bool in_place_sets) const {
  if (op.kind != Op::Kind::Kernel || op.shared || op.outs.size() != 1) return false;
  if (op.prim != PrimId::Get && op.prim != PrimId::Size) return false;
  const int32_t out = op.outs[0].leaf;
  if (!scalar_leaf(out) || leaves_[out].shared) return false;
  const Ref& x = op.args[0];
  if (ref_type(x).shape.empty()) return false;
  if (x.constant < 0) {
    const Leaf& l = leaves_[x.leaf];
    if (l.in_scratch() || l.ebytes == 0) return false;
    for (const auto& other : cb.ops) {
      for (int32_t p : other.pops)
        if (p == x.leaf) return false;
      for (const auto& o : other.outs)
        if (o.leaf == x.leaf &&
            !(in_place_sets && other.kind == Op::Kind::Kernel && other.prim == PrimId::Set &&
              !other.args.empty() && other.args[0].leaf == x.leaf && !l.full()))
          return false;
    }
  }
  for (size_t a = 1; a < op.args.size(); ++a)
    if (op.args[a].constant >= 0 ? !ref_type(op.args[a]).shape.empty()
                                 : !scalar_leaf(op.args[a].leaf))
      return false;
  std::vector<TensorType> args;
  for (const auto& a : op.args) args.push_back(ref_type(a));
  return jit::supported_tensor(op.prim, args, leaves_[out].type);
}

// An op the whole form (jit::BlockFn, the chain) compiles although it
// reads or writes a tensor: a read as dense_read, its result possibly a
// variable that calls save (pushed); or x = set(x, i, v) in place, a scalar
// v into an element of x, a per-thread tensor (an input or a variable) that
// nothing pushes. Tensors stay in memory (each lane's event); a bad index
// raises the block's flag before anything is written (gather_facts).
bool StackVM::whole_index(const Op& op, const CBlock& cb) const {
  if (op.kind != Op::Kind::Kernel || op.shared || op.outs.size() != 1) return false;
  if (op.prim == PrimId::Get || op.prim == PrimId::Size) return index_read(op, cb, true);
  if (op.prim != PrimId::Set || op.args.size() != 3) return false;
  const int32_t x = op.outs[0].leaf;
  if (op.args[0].constant >= 0 || op.args[0].leaf != x) return false;
  const Leaf& l = leaves_[x];
  if (l.shared || l.in_scratch() || l.ebytes == 0 || l.full()) return false;
  // The index a scalar; the value a scalar, or a row from a literal or a
  // per-thread variable in memory.
  const Ref& i = op.args[1];
  if (i.constant >= 0 ? !ref_type(i).shape.empty() : !scalar_leaf(i.leaf)) return false;
  const Ref& v = op.args[2];
  if (v.constant < 0 && !scalar_leaf(v.leaf)) {
    const Leaf& lv = leaves_[v.leaf];
    if (lv.shared || lv.in_scratch() || lv.ebytes == 0 || lv.full()) return false;
  }
  std::vector<TensorType> args;
  for (const auto& a : op.args) args.push_back(ref_type(a));
  return jit::supported_tensor(op.prim, args, l.type);
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
    // of the same stack would overwrite; and it writes an element of a
    // tensor only if no check has failed, so no check may come after.
    if (!fails.empty()) {
      std::set<int32_t> popped;
      bool written = false;
      for (const auto& fo : c.whole.ops) {
        if (fo.kind == jit::FOp::Kind::Pop) popped.insert(fo.stack);
        if (fo.kind == jit::FOp::Kind::Push && popped.count(fo.stack))
          f.whole_blocker = "op '" + fails + "' can fail in a block that pops and then pushes";
        if (written && jit::may_fail(fo, c.whole.slots))
          f.whole_blocker = "op '" + fails + "' can fail after an element of a tensor is set";
        if (fo.kind == jit::FOp::Kind::Compute && !fo.copy && fo.prim == PrimId::Set)
          written = true;
      }
    }
    f.whole_fail_op = fails;
  }
  f.whole_form = f.whole_blocker.empty();
}

// Why block_form(cb) is false ("" when it is true).
std::string StackVM::whole_blocker(const CBlock& cb) const {
  if (block_form(cb)) return "";
  if (cb.term == TermKind::Halt || cb.term == TermKind::Return) return "it ends its threads";
  if (cb.term == TermKind::Branch && !scalar_leaf(cb.cond)) return "its condition is not a scalar";
  for (const auto& op : cb.ops) {
    if (op.kind == Op::Kind::Pop) {
      for (int32_t l : op.pops)
        if (!word_stack(l))
          return "the stack of '" + leaves_[l].var + "' is not of one-word scalars";
      continue;
    }
    if (shared_done(op)) continue;
    if (!compilable(op) && !whole_index(op, cb)) return per_lane_blocker(op);
    for (const auto& o : op.outs)
      if (leaves_[o.leaf].full() && !o.in_place && !word_stack(o.leaf))
        return "the stack of '" + leaves_[o.leaf].var + "' is not of one-word scalars";
  }
  return "not of the whole form";
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
  for (const auto& cb : blocks_) po.calls = po.calls || cb.term == TermKind::PushGoto;
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

// Compiles the code the plan picked (segments, dense loop bodies, blocks
// compiled whole or chained) and keeps it. If LLVM fails, every block is
// interpreted and the plan says so.
void StackVM::build_jit(std::vector<Candidates>& cand) {
  std::vector<jit::Segment> gsegs, dsegs;
  std::vector<std::pair<uint32_t, size_t>> gwhere;  // (block, segment)
  std::vector<uint32_t> dwhere;
  std::vector<std::vector<int32_t>> dslots;
  size_t nops = 0, fused = 0;
  std::vector<jit::Segment> bsegs;
  std::vector<uint32_t> bwhere;
  bool chain = false;
  for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
    CBlock& cb = blocks_[bi];
    Candidates& c = cand[bi];
    cb.seg_at.assign(cb.ops.size(), -1);
    nops += cb.ops.size();
    switch (cb.mode) {
      case ExecMode::WholeBlock:
      case ExecMode::Chained:
        chain = chain || cb.mode == ExecMode::Chained;
        c.whole.slot_var = c.whole_slots;
        c.whole.stack_var = c.whole_stacks;
        cb.block_slots = std::move(c.whole_slots);
        cb.block_stacks = std::move(c.whole_stacks);
        fused += cb.ops.size();
        bsegs.push_back(std::move(c.whole));
        bwhere.push_back(bi);
        continue;
      case ExecMode::DenseLoop:
      case ExecMode::DenseChunks:
        dsegs.push_back(std::move(c.dense));
        dslots.push_back(std::move(c.dense_slots));
        dwhere.push_back(bi);
        // A body that may fail reruns a chunk op at a time: with segments.
        if (cb.mode == ExecMode::DenseLoop) continue;
        break;
      case ExecMode::Segments:
        break;
      case ExecMode::Interpreted:
        continue;
    }
    for (Seg& s : c.segs) {
      fused += s.last - s.first;
      std::vector<int32_t> sl;
      std::vector<uint32_t> call_ops;
      jit::Segment seg = make_segment(bi, s.first, s.last, false, sl, nullptr, &call_ops);
      for (size_t k = 0; k < seg.slots.size(); ++k) {
        if (sl[k] == kRowLeaf || sl[k] == kFirstThreadLeaf) {  // bound per run (bind_blocks)
          s.thread_operands.push_back({k, sl[k]});
          s.base.push_back(nullptr);
          continue;
        }
        if (sl[k] <= kConstLeaf) {
          s.base.push_back(const_cast<std::byte*>(constants_[kConstLeaf - sl[k]].data.data()));
          continue;
        }
        const Leaf& l = leaves_[sl[k]];
        s.base.push_back(const_cast<std::byte*>(
            seg.slots[k].kind == jit::SlotKind::Scratch ? l.scratch.data() : l.top.data()));
      }
      s.call_base = s.base.size();
      for (uint32_t op : call_ops) {  // bound per run (bind_blocks)
        s.calls.push_back(SegCall{nullptr, bi, op});
        s.base.push_back(nullptr);
        s.base.push_back(nullptr);
      }
      for (const auto& f : seg.ops) s.may_fail = s.may_fail || jit::may_fail(f, seg.slots);
      // What the segment writes, to restore if it fails (values computed
      // once for every thread are not restored: they are written once).
      // Only values the rerun reads before writing them need it: a leaf
      // that some op reads before (or as) the segment first writes it.
      // Nor does a leaf the segment only updates in place by `x = set(x, i,
      // v)`: the rerun writes the same rows again (a chain's draws, a
      // buffer of thousands of rows, are not copied at every step).
      std::set<int32_t> written, read_first, set_in_place, read_otherwise;
      for (size_t i = s.first; i < s.last; ++i) {
        const Op& op = cb.ops[i];
        for (size_t k = 0; k < op.args.size(); ++k) {
          const auto& a = op.args[k];
          if (a.leaf < 0) continue;
          if (!written.count(a.leaf)) read_first.insert(a.leaf);
          const bool in_place = op.kind != Op::Kind::Pop && op.prim == PrimId::Set && k == 0 &&
                                op.outs.size() == 1 && op.outs[0].leaf == a.leaf;
          (in_place ? set_in_place : read_otherwise).insert(a.leaf);
        }
        for (const auto& o : op.outs) written.insert(o.leaf);
      }
      for (int32_t l : set_in_place)
        if (!read_otherwise.count(l)) read_first.erase(l);
      for (size_t i = s.first; i < s.last; ++i) {
        const Op& op = cb.ops[i];
        if (op.kind == Op::Kind::Pop) {  // undone by its tops and depths
          for (int32_t l : op.pops) {
            if (std::find(s.popped.begin(), s.popped.end(), l) == s.popped.end())
              s.popped.push_back(l);
            if (std::find(s.thread_out.begin(), s.thread_out.end(), l) == s.thread_out.end())
              s.thread_out.push_back(l);
          }
          continue;
        }
        if (op.shared) continue;
        for (const auto& o : op.outs) {
          const Leaf& l = leaves_[o.leaf];
          if (l.shared || !read_first.count(o.leaf)) continue;
          std::vector<int32_t>& dst = l.in_scratch() ? s.scratch_out : s.thread_out;
          if (std::find(dst.begin(), dst.end(), o.leaf) == dst.end()) dst.push_back(o.leaf);
        }
      }
      cb.seg_at[s.first] = static_cast<int32_t>(cb.segs.size());
      gwhere.push_back({bi, cb.segs.size()});
      cb.segs.push_back(std::move(s));
      gsegs.push_back(std::move(seg));
    }
  }
  if (gsegs.empty() && dsegs.empty() && bsegs.empty()) {
    jit_log_ = "jit: nothing to compile";
    return;
  }
  std::vector<uint32_t> return_to;  // the blocks calls return to
  for (const auto& cb : blocks_)
    if (cb.term == TermKind::PushGoto) return_to.push_back(cb.t1);
  std::sort(return_to.begin(), return_to.end());
  return_to.erase(std::unique(return_to.begin(), return_to.end()), return_to.end());
  auto frames = static_cast<uint32_t>(
      std::clamp<int64_t>(opt_.max_stack_depth, 0, int64_t{jit::kFlatLevels}));
  if (chain && opt_.stats) frames |= jit::kChainCounts;  // --stats counts the chain's runs
  char line[192];
  std::snprintf(line, sizeof line,
                "%zu of %zu instructions fused into %zu segments and %zu blocks, "
                "%zu loop blocks compiled whole",
                fused, nops, gsegs.size(), bsegs.size(), dsegs.size());
  wiring_.what = line;
  wiring_.gather = std::move(gwhere);
  wiring_.dense = std::move(dwhere);
  wiring_.dense_slots = std::move(dslots);
  wiring_.whole = std::move(bwhere);
  wiring_.chain = chain;
  wiring_.dense_segs = dsegs;
  // Tiered (docs/engine.md, "Tiered execution"): unless the run counts its
  // steps (which must not depend on when the code is ready), it starts at
  // once, interpreted, and switches when the code compiled in the background
  // is ready; code already in the cache comes in before the first step.
  if (!opt_.jit_wait && !counts_steps()) {
    auto pending = jit::compile_in_background(gsegs, dsegs, bsegs, chain ? &return_to : nullptr,
                                              frames, &cached_);
    if (pending->ready() && opt_.jit_switch_at < 0) {
      install_code(pending->code(), pending->error());
      return;
    }
    pending_ = std::move(pending);
    tiered_ = tier_ = true;
    for (CBlock& cb : blocks_) cb.mode = ExecMode::Interpreted;
    return;
  }
  std::string err;
  auto code =
      jit::compile(gsegs, dsegs, bsegs, chain ? &return_to : nullptr, frames, &err, &cached_);
  install_code(code, err);
}

// The compiled functions wired to the blocks the plan compiles, and each
// block switched to its planned mode: before the run, or (tiered) at a step
// boundary, where every thread waits in a block's list and every value is
// in its variable (no dense window, no chain under way), so that the
// compiled modes find the state they expect (bind_blocks then binds them to
// this run's arrays). If LLVM failed (null code), every block is
// interpreted and the plan says so.
void StackVM::install_code(const std::shared_ptr<const jit::Code>& code, const std::string& error) {
  if (!code) {
    jit_log_ = "jit: " + error + "; interpreting";
    for (size_t b = 0; b < blocks_.size(); ++b) {
      blocks_[b].seg_at.clear();
      blocks_[b].mode = plan_[b].mode = ExecMode::Interpreted;
      plan_[b].reason = "the JIT failed (" + error + "): op at a time";
    }
    return;
  }
  code_ = code;
  const Wiring& w = wiring_;
  if (w.chain) {
    chain_blocks_ = w.whole;
  } else {
    for (size_t k = 0; k < w.whole.size(); ++k) blocks_[w.whole[k]].block_fn = code_->block[k];
  }
  for (size_t k = 0; k < w.gather.size(); ++k)
    blocks_[w.gather[k].first].segs[w.gather[k].second].fn = code_->gather[k];
  size_t max_slots = 0;
  for (size_t k = 0; k < w.dense.size(); ++k) {
    const jit::Segment& seg = w.dense_segs[k];
    DenseLoop& d = blocks_[w.dense[k]].dense;
    d.fn = code_->dense[k];
    d.multi = code_->dense_multi[k];
    d.solo = code_->dense_solo[k];
    d.copies = seg.copies;
    d.slot_leaf = w.dense_slots[k];
    d.kind.clear();
    d.tensor.clear();
    for (size_t s = 0; s < seg.slots.size(); ++s) {
      d.kind.push_back(seg.slots[s].kind);
      d.tensor.push_back(seg.slots[s].tensor && seg.slots[s].kind == jit::SlotKind::Thread);
    }
    d.written.assign(d.slot_leaf.size(), false);
    d.may_fail = false;
    for (const auto& f : seg.ops) {
      for (int32_t o : f.outs) d.written[o] = true;
      d.may_fail = d.may_fail || jit::may_fail(f, seg.slots);
    }
    max_slots = std::max(max_slots, d.slot_leaf.size());
  }
  dense_.assign(max_slots, std::vector<uint64_t>(kChunk));
  for (size_t b = 0; b < blocks_.size(); ++b) blocks_[b].mode = plan_[b].mode;
  char line[64];
  std::snprintf(line, sizeof line, ", in %.1f ms (", code_->seconds * 1e3);
  jit_log_ = "jit: " + w.what + line + code_->detail + (cached_ ? "; cached)" : ")");
  size_t multi = 0;
  for (const auto& seg : w.dense_segs) multi += seg.copies > 1;
  if (multi)
    jit_log_ += "; " + std::to_string(multi) + " loop blocks run several iterations per call";
  if (w.chain)
    jit_log_ += "; the " + std::to_string(w.whole.size()) + " blocks compiled whole are chained (" +
                std::to_string(code_->chain_copy_sites) +
                " call sites jump to copies of their callee's first blocks)";
}

}  // namespace ab::stack
