// Which ops the JIT compiles for the stack VM, and in which form: per lane
// in registers or as a batched call in a gather segment, reads by index in
// dense loops and whole blocks, the ops that may fail, and whether a block
// compiles whole (with the reasons the plan reports when it does not).
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

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
                       op.prim == PrimId::Size || op.prim == PrimId::Reshape ||
                       op.prim == PrimId::Zeros;
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
    if (!compilable(op) && !whole_index(op, cb) && !whole_tensor(op)) return false;
    for (const auto& o : op.outs)
      if (leaves_[o.leaf].full() && !o.in_place && !word_stack(o.leaf)) return false;
  }
  return true;
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
    if (l.ebytes == 0) return false;
    if (l.in_scratch()) {
      // A temporary only as a row read in place (whole forms: row_view,
      // which made sure its get is all that writes it).
      if (!in_place_sets || !view_leaf(x.leaf, cb)) return false;
    } else {
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
// variable that calls save (pushed); or x = set(x, i, ..., v) in place, a
// scalar v into an element of x, a per-thread tensor (an input or a variable) that
// nothing pushes. Tensors stay in memory (each lane's event); a bad index
// raises the block's flag before anything is written (gather_facts).
bool StackVM::whole_index(const Op& op, const CBlock& cb) const {
  if (op.kind != Op::Kind::Kernel || op.shared || op.outs.size() != 1) return false;
  if (op.prim == PrimId::Get && !scalar_leaf(op.outs[0].leaf)) return row_view(op, cb);
  if (op.prim == PrimId::Get || op.prim == PrimId::Size) return index_read(op, cb, true);
  if (op.prim != PrimId::Set || op.args.size() < 3) return false;
  const int32_t x = op.outs[0].leaf;
  if (op.args[0].constant >= 0 || op.args[0].leaf != x) return false;
  const Leaf& l = leaves_[x];
  if (l.shared || l.in_scratch() || l.ebytes == 0 || l.full()) return false;
  // The indices scalars; the value a scalar, or a row from a literal or a
  // per-thread variable in memory.
  for (size_t a = 1; a + 1 < op.args.size(); ++a) {
    const Ref& i = op.args[a];
    if (i.constant >= 0 ? !ref_type(i).shape.empty() : !scalar_leaf(i.leaf)) return false;
  }
  const Ref& v = op.args.back();
  if (v.constant < 0 && !scalar_leaf(v.leaf)) {
    const Leaf& lv = leaves_[v.leaf];
    if (lv.shared || lv.in_scratch() || lv.ebytes == 0 || lv.full()) return false;
  }
  std::vector<TensorType> args;
  for (const auto& a : op.args) args.push_back(ref_type(a));
  return jit::supported_tensor(op.prim, args, l.type);
}

// An op on small tensors that the whole form (jit::BlockFn, the chain)
// compiles as the gather form does (SegForm::Tensor: a copy, zeros, get
// (a row copied, where row_view does not apply), set, size or reshape, or
// an elementwise primitive of at most
// Tuning::inline_elements elements), each lane's events in memory:
// vector arithmetic on a model's parameters, an adjoint's accumulation. Its
// results are temporaries (block-local, written before they are read) or
// per-thread variables; one that calls save is pushed only as a one-word
// scalar (block_form). A block that may fail writes no per-thread tensor
// this way (gather_facts): its rerun must find them as they were.
bool StackVM::whole_tensor(const Op& op) const {
  if (op.kind == Op::Kind::Pop || op.shared || op.outs.empty()) return false;
  return seg_form(op) == SegForm::Tensor;
}

// `t = get(x, i)` taking a row of x (`grid[i][j]` is get(get(grid, i), j))
// in a block compiled whole, as a view (jit::Slot::view): t a temporary of
// the block that only gets and sizes read; x a literal, a per-thread or
// shared tensor that nothing in the block writes or pops, or itself such a
// view; i a scalar. The row is then read where it is, never copied.
bool StackVM::row_view(const Op& op, const CBlock& cb) const {
  if (op.kind != Op::Kind::Kernel || op.shared || op.prim != PrimId::Get || op.outs.size() != 1 ||
      op.args.size() != 2)
    return false;
  const int32_t t = op.outs[0].leaf;
  const Leaf& lt = leaves_[t];
  if (!lt.in_scratch() || lt.type.shape.empty() || lt.ebytes == 0) return false;
  const Ref& i = op.args[1];
  if (i.constant >= 0 ? !ref_type(i).shape.empty() : !scalar_leaf(i.leaf)) return false;
  const Ref& x = op.args[0];
  if (ref_type(x).shape.empty()) return false;
  if (cb.term == TermKind::Branch && cb.cond == t) return false;
  for (const auto& other : cb.ops) {
    if (&other == &op) continue;
    for (int32_t p : other.pops)
      if (p == t || (x.constant < 0 && p == x.leaf)) return false;
    for (const auto& o : other.outs)
      if (o.leaf == t) return false;
    for (size_t a = 0; a < other.args.size(); ++a)
      if (other.args[a].constant < 0 && other.args[a].leaf == t &&
          (a != 0 || other.kind != Op::Kind::Kernel ||
           (other.prim != PrimId::Get && other.prim != PrimId::Size)))
        return false;
  }
  if (x.constant < 0) {
    const Leaf& lx = leaves_[x.leaf];
    if (lx.ebytes == 0) return false;
    if (lx.in_scratch()) {
      if (!view_leaf(x.leaf, cb)) return false;
    } else {
      for (const auto& other : cb.ops)
        for (const auto& o : other.outs)
          if (o.leaf == x.leaf) return false;
    }
  }
  std::vector<TensorType> args;
  for (const auto& a : op.args) args.push_back(ref_type(a));
  return jit::supported_tensor(op.prim, args, lt.type);
}

// Whether temporary `leaf` is a view in block cb: written by a row_view.
bool StackVM::view_leaf(int32_t leaf, const CBlock& cb) const {
  for (const auto& op : cb.ops)
    for (const auto& o : op.outs)
      if (o.leaf == leaf) return row_view(op, cb);
  return false;
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
    if (!compilable(op) && !whole_index(op, cb) && !whole_tensor(op)) return per_lane_blocker(op);
    for (const auto& o : op.outs)
      if (leaves_[o.leaf].full() && !o.in_place && !word_stack(o.leaf))
        return "the stack of '" + leaves_[o.leaf].var + "' is not of one-word scalars";
  }
  return "not of the whole form";
}

}  // namespace ab::stack
