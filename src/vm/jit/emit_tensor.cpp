// Ops on tensors (jit.h, Slot::tensor) in the gather form: one lane's
// events, read and written in memory at base[s] + the lane's slot times the
// event's elements (in the dense form, get and size read a per-thread
// tensor through the event address its window holds for each lane). An
// elementwise primitive runs Gen::scalar_op on each element, so it computes
// exactly what the scalar code and the kernels compute; NumPy broadcasting
// maps each result element to the operand's.
// Copies, reshape, get, set and size move elements as the kernels of
// src/vm/kernels/index.cpp do. A bad index only raises the flag (the VM
// then reruns the segment through the kernels, which report the error); the
// code reads or writes row 0 instead, so it never leaves the event.
#include "vm/jit/gen.h"

namespace ab::jit::detail {

using namespace llvm;

// Where the current lane's event of slot s starts.
Value* Gen::event(int32_t s) {
  const Slot& sl = seg_->slots[s];
  if (sl.view) return cur_[s];  // the row's address, set by get
  if (dense_ && sl.kind == SlotKind::Thread) {
    // The dense form's window holds each lane's event address (read only).
    LoadInst* a = b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), ptr_[s], lane_));
    tag(a, static_cast<size_t>(s));
    return b_.CreateIntToPtr(a, PointerType::get(ctx_, 0));
  }
  Value* i = sl.kind == SlotKind::Shared   ? b_.getInt64(0)
             : sl.kind == SlotKind::Thread ? slot_index_
                                           : lane_;
  return b_.CreateGEP(ty(sl.dtype), ptr_[s], b_.CreateMul(i, b_.getInt64(sl.elems())));
}

// The element of an operand of shape `from` that element k of a result of
// shape `to` reads (NumPy broadcasting).
Value* Gen::element_index(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                          Value* k) {
  if (from == to) return k;
  int64_t n = 1;
  for (int64_t d : from) n *= d;
  if (n == 1) return b_.getInt64(0);
  const size_t off = to.size() - from.size();
  Value* at = b_.getInt64(0);
  int64_t to_stride = 1, from_stride = 1;
  for (size_t i = to.size(); i-- > 0;) {
    if (i >= off) {
      const int64_t d = from[i - off];
      if (d != 1) {
        Value* coord = b_.CreateURem(b_.CreateUDiv(k, b_.getInt64(to_stride)), b_.getInt64(to[i]));
        at = b_.CreateAdd(at, b_.CreateMul(coord, b_.getInt64(from_stride)));
      }
      from_stride *= d;
    }
    to_stride *= to[i];
  }
  return at;
}

// body(k) for k in [0, count), as a loop; bad_ carries the checks across
// its iterations.
template <class Body>
void Gen::element_loop(int64_t count, Body body) {
  if (count <= 0) return;
  if (count == 1) {
    body(b_.getInt64(0));
    return;
  }
  Function* fn = b_.GetInsertBlock()->getParent();
  BasicBlock* pre = b_.GetInsertBlock();
  BasicBlock* loop = BasicBlock::Create(ctx_, "element", fn);
  BasicBlock* done = BasicBlock::Create(ctx_, "elements_done", fn);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  PHINode* k = b_.CreatePHI(b_.getInt64Ty(), 2);
  PHINode* bad = b_.CreatePHI(b_.getInt1Ty(), 2);
  k->addIncoming(b_.getInt64(0), pre);
  bad->addIncoming(bad_, pre);
  bad_ = bad;
  body(k);
  Value* kn = b_.CreateAdd(k, b_.getInt64(1));
  BasicBlock* latch = b_.GetInsertBlock();
  k->addIncoming(kn, latch);
  bad->addIncoming(bad_, latch);
  Value* after = bad_;
  b_.CreateCondBr(b_.CreateICmpSLT(kn, b_.getInt64(count)), loop, done);
  b_.SetInsertPoint(done);
  bad_ = after;
}

void Gen::elementwise(const FOp& o) {
  const Slot& out = seg_->slots[o.outs[0]];
  Value* po = event(o.outs[0]);
  const DType d = dtype_of(o.args[0]);
  const size_t n = o.args.size();
  std::vector<Value*> at(n, nullptr), scalar(n, nullptr);
  for (size_t a = 0; a < n; ++a) {
    const Arg& x = o.args[a];
    if (x.slot >= 0 && seg_->slots[x.slot].tensor)
      at[a] = event(x.slot);
    else
      scalar[a] = read(x);  // once, before the loop
  }
  element_loop(out.elems(), [&](Value* k) {
    std::vector<Value*> v(n);
    for (size_t a = 0; a < n; ++a) {
      if (!at[a]) {
        v[a] = scalar[a];
        continue;
      }
      const Slot& sl = seg_->slots[o.args[a].slot];
      Type* t = ty(sl.dtype);
      v[a] = b_.CreateLoad(t, b_.CreateGEP(t, at[a], element_index(sl.shape, out.shape, k)));
    }
    b_.CreateStore(scalar_op(o, v, d), b_.CreateGEP(ty(out.dtype), po, k));
  });
}

// The element offset that get or set reads or writes: operands 1 .. k
// index x's leading dimensions (Python's negative indices); an index out of
// range raises the flag and gives offset 0.
Value* Gen::index_offset(const FOp& o, size_t k, const std::vector<int64_t>& shape, int64_t row) {
  Value* at = b_.getInt64(0);
  Value* ok = b_.getTrue();
  for (size_t d = 0; d < k; ++d) {
    const int64_t dim = shape[d];
    Value* i = b_.CreateSExtOrTrunc(read(o.args[1 + d]), b_.getInt64Ty());
    Value* r = b_.CreateSelect(b_.CreateICmpSLT(i, b_.getInt64(0)),
                               b_.CreateAdd(i, b_.getInt64(dim)), i);
    ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSGE(r, b_.getInt64(0)),
                                       b_.CreateICmpSLT(r, b_.getInt64(dim))));
    at = d == 0 ? r : b_.CreateAdd(b_.CreateMul(at, b_.getInt64(dim)), r);
  }
  fail_if(b_.CreateNot(ok));
  return b_.CreateSelect(ok, b_.CreateMul(at, b_.getInt64(row)), b_.getInt64(0));
}

// The leading elements that k indices select among, and the elements of
// each selection.
static std::pair<int64_t, int64_t> lead_and_row(const Slot& x, size_t k) {
  int64_t lead = 1;
  for (size_t d = 0; d < k; ++d) lead *= x.shape[d];
  return {lead, lead ? x.elems() / lead : 0};
}

void Gen::get(const FOp& o) {
  const Slot& x = seg_->slots[o.args[0].slot];
  const Slot& out = seg_->slots[o.outs[0]];
  const size_t nk = o.args.size() - 1;
  const auto lr = lead_and_row(x, nk);
  const int64_t lead = lr.first, row = lr.second;
  Value* off = index_offset(o, nk, x.shape, row);
  Type* t = ty(x.dtype);
  if (lead == 0) {  // every index fails
    if (!out.tensor) {
      cur_[o.outs[0]] = Constant::getNullValue(t);
      written_[o.outs[0]] = true;
    } else if (out.view) {
      cur_[o.outs[0]] = event(o.args[0].slot);  // (an empty row: never read)
    }
    return;
  }
  Value* src = b_.CreateGEP(t, event(o.args[0].slot), off);
  if (out.view) {  // the row where it is: nothing in the block writes the source
    cur_[o.outs[0]] = src;
  } else if (!out.tensor) {
    cur_[o.outs[0]] = b_.CreateLoad(t, src);
    written_[o.outs[0]] = true;
  } else if (row) {
    b_.CreateMemCpy(event(o.outs[0]), MaybeAlign(), src, MaybeAlign(),
                    static_cast<uint64_t>(row) * dtype_size(x.dtype));
  }
}

void Gen::set(const FOp& o) {
  const Slot& x = seg_->slots[o.args[0].slot];
  const size_t nk = o.args.size() - 2;
  const int64_t elems = x.elems();
  const auto lr = lead_and_row(x, nk);
  const int64_t lead = lr.first, row = lr.second;
  Value* off = index_offset(o, nk, x.shape, row);
  Type* t = ty(x.dtype);
  Value* po = event(o.outs[0]);
  if (o.args[0].slot != o.outs[0] && elems)  // in place: no copy
    b_.CreateMemMove(po, MaybeAlign(), event(o.args[0].slot), MaybeAlign(),
                     static_cast<uint64_t>(elems) * dtype_size(x.dtype));
  if (lead == 0) return;
  Value* dst = b_.CreateGEP(t, po, off);
  const Arg& v = o.args.back();
  const std::vector<int64_t> row_shape(x.shape.begin() + static_cast<long>(nk), x.shape.end());
  // Block forms: written only if no check has failed (this one included),
  // so that a failed lane is left as it was (StackVM::gather_facts); one
  // element's old value is kept, for a check that fails later (undo_writes).
  // The flag is kept aside: the element loop carries its own.
  BasicBlock* after = nullptr;
  BasicBlock* skip = nullptr;
  Value* bad = bad_;
  Value* old = nullptr;
  if (guard_writes_) {
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* write = BasicBlock::Create(ctx_, "set", fn);
    after = BasicBlock::Create(ctx_, "set_done", fn);
    skip = b_.GetInsertBlock();
    b_.CreateCondBr(bad_, after, write);
    b_.SetInsertPoint(write);
    if (row == 1) old = b_.CreateLoad(t, dst);
  }
  if (v.slot >= 0 && seg_->slots[v.slot].tensor) {
    const Slot& vs = seg_->slots[v.slot];
    Value* pv = event(v.slot);
    element_loop(row, [&](Value* k) {
      Value* e = b_.CreateLoad(t, b_.CreateGEP(t, pv, element_index(vs.shape, row_shape, k)));
      b_.CreateStore(e, b_.CreateGEP(t, dst, k));
    });
  } else {
    Value* sv = read(v);
    element_loop(row, [&](Value* k) { b_.CreateStore(sv, b_.CreateGEP(t, dst, k)); });
  }
  if (after) {
    BasicBlock* wrote = b_.GetInsertBlock();
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
    bad_ = bad;
    if (old) {
      PHINode* o = b_.CreatePHI(t, 2);
      o->addIncoming(PoisonValue::get(t), skip);
      o->addIncoming(old, wrote);
      PHINode* w = b_.CreatePHI(b_.getInt1Ty(), 2);
      w->addIncoming(b_.getFalse(), skip);
      w->addIncoming(b_.getTrue(), wrote);
      undo_.push_back({dst, o, w});
    }
  }
}

bool Gen::tensor_op(const FOp& o) {
  if (o.kind != FOp::Kind::Compute) return false;
  bool any = false;
  for (int32_t s : o.outs) any = any || seg_->slots[s].tensor;
  for (const Arg& a : o.args) any = any || (a.slot >= 0 && seg_->slots[a.slot].tensor);
  if (!any) return false;
  const int32_t out = o.outs[0];
  const Slot& os = seg_->slots[out];
  if (o.copy || o.prim == PrimId::Reshape) {  // the same elements
    const Arg& a = o.args[0];
    if (a.slot == out) return true;
    if (!os.tensor) {  // a one-element tensor to a scalar
      cur_[out] = b_.CreateLoad(ty(os.dtype), event(a.slot));
      written_[out] = true;
    } else if (a.slot < 0 || !seg_->slots[a.slot].tensor) {  // a scalar to a one-element tensor
      b_.CreateStore(read(a), event(out));
    } else if (os.elems()) {
      b_.CreateMemMove(event(out), MaybeAlign(), event(a.slot), MaybeAlign(),
                       static_cast<uint64_t>(os.elems()) * dtype_size(os.dtype));
    }
    return true;
  }
  switch (o.prim) {
    case PrimId::Get:
      get(o);
      break;
    case PrimId::Set:
      set(o);
      break;
    case PrimId::Size:
      cur_[out] = b_.getInt64(static_cast<uint64_t>(seg_->slots[o.args[0].slot].elems()));
      written_[out] = true;
      break;
    case PrimId::Zeros:
      if (os.elems())
        b_.CreateMemSet(event(out), b_.getInt8(0),
                        static_cast<uint64_t>(os.elems()) * dtype_size(os.dtype), MaybeAlign());
      break;
    default:
      elementwise(o);
      break;
  }
  return true;
}

}  // namespace ab::jit::detail
