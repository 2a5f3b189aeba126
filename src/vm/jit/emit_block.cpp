// The block form of the JIT (BlockFn in jit.h): a whole block that is not
// a loop, with the pushes and pops of full variables and its terminator, as
// one loop over the chunk's lane list; and the stack and frame operations
// it shares with the chain (emit_chain.cpp).
#include "vm/jit/gen.h"

namespace ab::jit::detail {

using namespace llvm;

// The block form (BlockFn): per lane of the list, the block's ops with the
// pushes and pops of full variables where they happen, then its exit.
Function* Gen::block(const Segment& s, const std::string& name) {
  Type* i64 = b_.getInt64Ty();
  Type* i32 = b_.getInt32Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = start_function(s, name, false, {ptr, ptr, i64, ptr, ptr, ptr});
  auto arg = fn->arg_begin();
  Value* base = &*arg++;
  Value* idx = &*arg++;
  Value* n = &*arg++;
  Value* out_a = &*arg++;
  Value* out_b = &*arg++;
  Value* done = &*arg++;

  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  BasicBlock* loop = BasicBlock::Create(ctx_, "lane", fn);
  BasicBlock* body = BasicBlock::Create(ctx_, "body", fn);
  BasicBlock* exit = BasicBlock::Create(ctx_, "exit", fn);
  b_.SetInsertPoint(entry);
  BlockCtx c = block_context(s, base);
  b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, exit);

  b_.SetInsertPoint(loop);
  PHINode* j = b_.CreatePHI(i64, 2);
  PHINode* acc = b_.CreatePHI(i64, 2);  // Branch: lanes taken; Call: deepest
  j->addIncoming(b_.getInt64(0), entry);
  acc->addIncoming(b_.getInt64(0), entry);
  lane_ = j;
  LoadInst* tl = b_.CreateLoad(i32, b_.CreateGEP(i32, idx, j));
  tag(tl, s.slots.size());
  slot_index_ = b_.CreateZExt(tl, i64);
  b_.CreateCondBr(block_check(c, nullptr), body, exit);

  b_.SetInsertPoint(body);
  std::vector<Value*> depths = stack_depths(c);
  block_ops(c);
  // A check that failed (a bad index): the lane's stacks go back to their
  // depths and the elements its sets wrote to their old values (block_check
  // made sure nothing else changed, gather_facts), and the lane is the
  // interpreter's, which reports the error, with the rest of the list.
  BasicBlock* failed = nullptr;
  if (may_have_failed()) {
    failed = BasicBlock::Create(ctx_, "failed", fn);
    BasicBlock* ok = BasicBlock::Create(ctx_, "checked", fn);
    b_.CreateCondBr(bad_, failed, ok);
    b_.SetInsertPoint(failed);
    undo_writes();
    restore_depths(depths);
    failed = b_.GetInsertBlock();  // the end of the failed path
    b_.SetInsertPoint(ok);
  }
  const size_t pcs = c.stacks.size() - 1;
  Value* acc_next = acc;
  switch (s.exit) {
    case Exit::Goto:
      break;
    case Exit::Branch: {
      Value* cv = b_.CreateZExt(b_.CreateICmpNE(read(Arg{s.cond}), b_.getInt8(0)), i64);
      b_.CreateStore(tl, b_.CreateGEP(i32, out_a, acc));
      b_.CreateStore(tl, b_.CreateGEP(i32, out_b, b_.CreateSub(j, acc)));
      acc_next = b_.CreateAdd(acc, cv);
      break;
    }
    case Exit::Call: {
      Value* d64 = b_.CreateZExt(push_frame(pcs, s.ret_pc), i64);
      acc_next = b_.CreateSelect(b_.CreateICmpUGT(d64, acc), d64, acc);
      break;
    }
    case Exit::Return:
      b_.CreateStore(pop_frame(pcs), b_.CreateGEP(i32, out_a, j));
      break;
  }
  store_written();
  Value* jn = b_.CreateAdd(j, b_.getInt64(1));
  BasicBlock* loop_end = b_.GetInsertBlock();
  j->addIncoming(jn, loop_end);
  acc->addIncoming(acc_next, loop_end);
  mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit), false);

  if (failed) {  // (the failed path's last block is still open)
    b_.SetInsertPoint(failed);
    b_.CreateBr(exit);
  }
  // From the entry (no lanes), a lane that needs a new row or failed a
  // check (j lanes done), or the end of the list.
  b_.SetInsertPoint(exit);
  PHINode* r = b_.CreatePHI(i64, 4);
  r->addIncoming(b_.getInt64(0), entry);
  r->addIncoming(acc, loop);
  r->addIncoming(acc_next, loop_end);
  PHINode* count = b_.CreatePHI(i64, 4);
  count->addIncoming(b_.getInt64(0), entry);
  count->addIncoming(j, loop);
  count->addIncoming(jn, loop_end);
  if (failed) {
    r->addIncoming(acc, failed);
    count->addIncoming(j, failed);
  }
  b_.CreateStore(count, done);
  b_.CreateRet(r);
  return fn;
}

// The address of this lane's entry at `level` (i32) of stack k: in its
// row (the lane's check made sure the row exists).
Value* Gen::entry_address(size_t k, Value* level, bool pc) {
  Type* ptr = PointerType::get(ctx_, 0);
  Value* row =
      b_.CreateLoad(ptr, b_.CreateGEP(ptr, stacks_[k].rows, b_.CreateZExt(level, b_.getInt64Ty())));
  return b_.CreateGEP(pc ? b_.getInt32Ty() : b_.getInt64Ty(), row, slot_index_);
}

void Gen::put_word(size_t k, Value* level, Value* w, bool pc) {
  b_.CreateStore(w, entry_address(k, level, pc));
}

Value* Gen::get_word(size_t k, Value* level, bool pc) {
  return b_.CreateLoad(pc ? b_.getInt32Ty() : b_.getInt64Ty(), entry_address(k, level, pc));
}

// A value as the 8-byte word a stack holds (zero-extended), and back.
Value* Gen::to_word(Value* v, DType d) {
  Type* i64 = b_.getInt64Ty();
  switch (d) {
    case DType::F64:
      return b_.CreateBitCast(v, i64);
    case DType::F32:
      return b_.CreateZExt(b_.CreateBitCast(v, b_.getInt32Ty()), i64);
    case DType::I64:
      return v;
    default:
      return b_.CreateZExt(v, i64);
  }
}

Value* Gen::from_word(Value* w, DType d) {
  switch (d) {
    case DType::F64:
      return b_.CreateBitCast(w, b_.getDoubleTy());
    case DType::F32:
      return b_.CreateBitCast(b_.CreateTrunc(w, b_.getInt32Ty()), b_.getFloatTy());
    case DType::I64:
      return w;
    default:
      return b_.CreateTrunc(w, ty(d));
  }
}

// The full variable in slot s pushes its top on stack k: one more level;
// the old top goes below (a lane's first value has nothing below it).
void Gen::push(int32_t k, int32_t s) {
  Value* w = to_word(read(Arg{s}), seg_->slots[s].dtype);
  Value* d = load_depth(static_cast<size_t>(k));
  store_depth(static_cast<size_t>(k), b_.CreateAdd(d, b_.getInt64(1)));
  if (Value* buf = local_stack(static_cast<size_t>(k))) {  // entry d is level d - 1
    b_.CreateStore(w, local_entry(buf, d, false));
    return;
  }
  Function* fn = b_.GetInsertBlock()->getParent();
  BasicBlock* spill = BasicBlock::Create(ctx_, "spill", fn);
  BasicBlock* done = BasicBlock::Create(ctx_, "pushed", fn);
  b_.CreateCondBr(b_.CreateICmpNE(d, b_.getInt64(0)), spill, done);
  b_.SetInsertPoint(spill);
  put_word(static_cast<size_t>(k), b_.CreateSub(d, b_.getInt64(1)), w, false);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

// Slot s's full variable pops stack k: the value below becomes the top
// (none below: the top keeps its old bits, as in the interpreter).
void Gen::pop(int32_t k, int32_t s) {
  Value* old = read(Arg{s});
  Value* d = b_.CreateSub(load_depth(static_cast<size_t>(k)), b_.getInt64(1));
  store_depth(static_cast<size_t>(k), d);
  if (Value* buf = local_stack(static_cast<size_t>(k))) {  // entry 0 exists: no branch
    Value* v =
        from_word(b_.CreateLoad(b_.getInt64Ty(), local_entry(buf, d, false)), seg_->slots[s].dtype);
    // Below entry 0 there is a value when the lane's window starts above
    // level 0 (the depth is the base plus d).
    Value* below = b_.CreateICmpNE(d, b_.getInt64(0));
    if (static_cast<size_t>(k) < base_home_.size() && base_home_[k])
      below = b_.CreateOr(below, b_.CreateICmpNE(base_home_[k], b_.getInt64(0)));
    cur_[s] = b_.CreateSelect(below, v, old);
    written_[s] = true;
    return;
  }
  Function* fn = b_.GetInsertBlock()->getParent();
  BasicBlock* before = b_.GetInsertBlock();
  BasicBlock* fill = BasicBlock::Create(ctx_, "fill", fn);
  BasicBlock* done = BasicBlock::Create(ctx_, "popped", fn);
  b_.CreateCondBr(b_.CreateICmpNE(d, b_.getInt64(0)), fill, done);
  b_.SetInsertPoint(fill);
  Value* v = from_word(get_word(static_cast<size_t>(k), b_.CreateSub(d, b_.getInt64(1)), false),
                       seg_->slots[s].dtype);
  BasicBlock* fill_end = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  PHINode* p = b_.CreatePHI(old->getType(), 2);
  p->addIncoming(old, before);
  p->addIncoming(v, fill_end);
  cur_[s] = p;
  written_[s] = true;
}

// Loads block s's slots and stacks from `base` (see BlockFn) at the
// insertion point; the block's alias scopes are the current ones.
Gen::BlockCtx Gen::block_context(const Segment& s, Value* base) {
  seg_ = &s;
  guard_writes_ = true;
  const size_t ns = s.slots.size();
  Type* i32 = b_.getInt32Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  load_bases(base);
  const size_t nst = static_cast<size_t>(s.stacks) + 1;
  auto at = [&](size_t i) { return b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, i)); };
  BlockCtx c;
  c.seg = &s;
  c.stacks.assign(nst, {});
  for (size_t k = 0; k < nst; ++k) {
    const size_t e = ns + 3 * k;
    c.stacks[k] = {at(e), at(e + 1), b_.CreateLoad(i32, at(e + 2))};
  }
  // Per stack: whether the block touches it, its pushes, and the depth its
  // pops need on entry (one more than the pushes less the pops before each).
  std::vector<int32_t> net(nst, 0);
  c.pushes.assign(nst, 0);
  c.need.assign(nst, 0);
  c.used.assign(nst, false);
  for (const FOp& o : s.ops) {
    if (o.kind == FOp::Kind::Compute) continue;
    const size_t k = static_cast<size_t>(o.stack);
    c.used[k] = true;
    if (o.kind == FOp::Kind::Push) {
      ++c.pushes[k];
      ++net[k];
    } else {
      c.need[k] = std::max(c.need[k], 1 - net[k]--);
    }
  }
  c.ptr = ptr_;
  c.shared = shared_;
  c.scope = scope_;
  c.noalias = noalias_;
  stacks_ = c.stacks;
  slot_home_.clear();
  depth_home_.clear();
  buf_home_.clear();
  base_home_.clear();
  return c;
}

// Makes block c the one the code being generated works on.
void Gen::restore(const BlockCtx& c) {
  seg_ = c.seg;
  dense_ = false;
  guard_writes_ = true;
  ptr_ = c.ptr;
  shared_ = c.shared;
  scope_ = c.scope;
  noalias_ = c.noalias;
  stacks_ = c.stacks;
  slot_home_ = c.slot_home;
  depth_home_ = c.depth_home;
  buf_home_ = c.buf_home;
  base_home_ = c.base_home;
}

// i1, before the lane changes anything: its stacks hold what the block
// pops, and every level it will touch has its row (a variable stack at
// depth d with p pushes here touches levels up to d + p - 2; the pc
// stack, level d for a call and d - 1 for a return); with call_limit
// (i64: the smaller of the pc stack's rows and the frames allowed), a
// call needs fewer frames than that instead. If not, the lane is the
// interpreter's, which makes rows, goes deeper than the rows go, and
// reports a pop of an empty stack or the stack bound.
Value* Gen::block_check(const BlockCtx& c, Value* call_limit) {
  const Segment& s = *c.seg;
  Type* i64 = b_.getInt64Ty();
  const size_t nst = c.stacks.size();
  const size_t pcs = nst - 1;
  Value* ok = b_.getTrue();
  for (size_t k = 0; k < nst; ++k) {
    const bool pc = k == pcs;
    if (pc ? (s.exit != Exit::Call && s.exit != Exit::Return) : !c.used[k]) continue;
    // The array holds the frame a return pops: at worst the mark a window
    // puts below its frames (emit_chain.cpp, kWindowMark).
    if (pc && s.exit == Exit::Return && local_stack(k)) continue;
    Value* d = load_depth(k);
    if (pc && call_limit && s.exit == Exit::Call) {
      ok = b_.CreateAnd(ok, b_.CreateICmpSLT(d, call_limit));
      continue;
    }
    // touched < ready, as d + extra <= ready (all values small: no
    // overflow). In the chain's local arrays a pop touches no row: only
    // the levels pushed must have rows, for when the lane leaves.
    int32_t extra = pc ? (s.exit == Exit::Call ? 1 : 0) : c.pushes[k] - 1;
    if (pc || c.pushes[k] > 0 || !local_stack(k)) {
      Value* lhs = b_.CreateAdd(d, b_.getInt64(static_cast<uint64_t>(static_cast<int64_t>(extra))));
      ok = b_.CreateAnd(ok, b_.CreateICmpSLE(lhs, b_.CreateZExt(c.stacks[k].ready, i64)));
    }
    if (!pc && c.need[k] > 0)
      ok = b_.CreateAnd(ok, b_.CreateICmpUGE(d, b_.getInt64(static_cast<uint64_t>(c.need[k]))));
  }
  return ok;
}

// Block c's ops on this lane, with its pushes and pops.
void Gen::block_ops(const BlockCtx& c) {
  const size_t ns = c.seg->slots.size();
  cur_.assign(ns, nullptr);
  old_.assign(ns, nullptr);
  written_.assign(ns, false);
  bad_ = b_.getFalse();
  undo_.clear();
  for (const FOp& o : c.seg->ops) {
    if (o.kind == FOp::Kind::Push) {
      push(o.stack, o.outs[0]);
    } else if (o.kind == FOp::Kind::Pop) {
      pop(o.stack, o.outs[0]);
    } else {
      compute(o);
    }
  }
}

// A call's new frame on the pc stack (stack pcs), returning to ret_pc;
// returns the depth before it (i64).
Value* Gen::push_frame(size_t pcs, uint32_t ret_pc) {
  Value* d = load_depth(pcs);
  if (Value* buf = local_stack(pcs))
    b_.CreateStore(b_.getInt32(ret_pc), local_entry(buf, d, true));
  else
    put_word(pcs, d, b_.getInt32(ret_pc), true);
  store_depth(pcs, b_.CreateAdd(d, b_.getInt64(1)));
  return d;
}

// A return: pops the pc stack; returns the block to go back to (i32).
Value* Gen::pop_frame(size_t pcs) {
  Type* i32 = b_.getInt32Ty();
  Value* d = b_.CreateSub(load_depth(pcs), b_.getInt64(1));
  store_depth(pcs, d);
  if (Value* buf = local_stack(pcs)) return b_.CreateLoad(i32, local_entry(buf, d, true));
  return get_word(pcs, d, true);
}

// Whether the block's code so far may have raised the flag (a check).
bool Gen::may_have_failed() const {
  return !llvm::isa<llvm::Constant>(bad_) || !llvm::cast<llvm::Constant>(bad_)->isZeroValue();
}

// The depths of the stacks block c pushes or pops, before its ops; and
// those depths put back (a failed check: what the ops pushed lies above the
// top again, what they popped is still below it).
std::vector<Value*> Gen::stack_depths(const BlockCtx& c) {
  std::vector<Value*> d(c.stacks.size(), nullptr);
  for (size_t k = 0; k + 1 < c.stacks.size(); ++k)
    if (c.used[k]) d[k] = load_depth(k);
  return d;
}

void Gen::restore_depths(const std::vector<Value*>& d) {
  for (size_t k = 0; k < d.size(); ++k)
    if (d[k]) store_depth(k, d[k]);
}

// A failed check: the elements the block's sets wrote in this lane get
// their old values back, the last written first (two sets of one element).
// Adds blocks: the failed path goes on from the insertion point.
void Gen::undo_writes() {
  Function* fn = b_.GetInsertBlock()->getParent();
  for (auto u = undo_.rbegin(); u != undo_.rend(); ++u) {
    BasicBlock* put = BasicBlock::Create(ctx_, "undo", fn);
    BasicBlock* next = BasicBlock::Create(ctx_, "undone", fn);
    b_.CreateCondBr(u->wrote, put, next);
    b_.SetInsertPoint(put);
    b_.CreateStore(u->old, u->at);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
}

// The Thread slots the block wrote, back to memory.
void Gen::store_written() {
  for (size_t i = 0; i < written_.size(); ++i) {
    if (!written_[i] || seg_->slots[i].kind != SlotKind::Thread) continue;
    StoreInst* st = b_.CreateStore(cur_[i], address(static_cast<int32_t>(i)));
    tag(st, i);
  }
}

// The chain's local array for stack k (null outside the chain), and
// its entry i (i32).
Value* Gen::local_stack(size_t k) const { return k < buf_home_.size() ? buf_home_[k] : nullptr; }

Value* Gen::local_entry(Value* buf, Value* i, bool pc) {
  Type* w = pc ? b_.getInt32Ty() : b_.getInt64Ty();
  return b_.CreateInBoundsGEP(ArrayType::get(w, chain_levels_ + 1), buf,
                              {b_.getInt64(0), b_.CreateZExt(i, b_.getInt64Ty())});
}

// This lane's depth of stack k (i64): in its home in the chain (an i64),
// else in the VM's per-lane array (uint32_t).
Value* Gen::load_depth(size_t k) {
  if (k < depth_home_.size() && depth_home_[k])
    return b_.CreateLoad(b_.getInt64Ty(), depth_home_[k]);
  Value* at = b_.CreateGEP(b_.getInt32Ty(), stacks_[k].depth, slot_index_);
  return b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), at), b_.getInt64Ty());
}

void Gen::store_depth(size_t k, Value* d) {
  if (k < depth_home_.size() && depth_home_[k]) {
    b_.CreateStore(d, depth_home_[k]);
    return;
  }
  Value* at = b_.CreateGEP(b_.getInt32Ty(), stacks_[k].depth, slot_index_);
  b_.CreateStore(b_.CreateTrunc(d, b_.getInt32Ty()), at);
}

}  // namespace ab::jit::detail
