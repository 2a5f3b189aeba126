// The segment forms of the JIT (jit.h): the gather and dense loops over a
// chunk's lanes (GatherFn, DenseFn), the dense body run several times per
// lane (DenseMultiFn) or on one lane alone (DenseSoloFn), and what every
// form shares: the function's start, the slots' loads and stores, alias
// scopes and loop metadata.
#include "vm/jit/gen.h"

namespace ab::jit::detail {

using namespace llvm;

// A function `name` of segment s returning i64, with the segment's alias
// scopes; `dense`: lanes are positions in the dense arrays.
Function* Gen::start_function(const Segment& s, const std::string& name, bool dense,
                              std::initializer_list<Type*> params) {
  seg_ = &s;
  dense_ = dense;
  guard_writes_ = false;
  Function* fn = Function::Create(
      FunctionType::get(b_.getInt64Ty(), ArrayRef<Type*>(params.begin(), params.size()), false),
      Function::ExternalLinkage, name, m_);
  fn->addFnAttr(Attribute::NoUnwind);
  make_scopes(name, s.slots.size());
  return fn;
}

// The segment's ops once, on the values in cur_ (written_ says which slots
// they wrote; bad_ which checks failed).
void Gen::emit_ops(const Segment& s) {
  written_.assign(s.slots.size(), false);
  bad_ = b_.getFalse();
  for (const FOp& o : s.ops) compute(o);
}

// i1: the lane stays in the loop block (its branch condition, after the ops).
Value* Gen::stay_condition(const Segment& s) {
  Value* c = b_.CreateICmpNE(read(Arg{s.cond}), b_.getInt8(0));
  return s.stay_on_true ? c : b_.CreateNot(c);
}

// The dense body on lane 0 alone, in a loop (DenseSoloFn). The slots are
// read and written through memory each iteration; LLVM's loop passes keep
// them in registers (the alias scopes tell it nothing else touches them).
Function* Gen::dense_solo(const Segment& s, const std::string& name) {
  const size_t ns = s.slots.size();
  Type* i64 = b_.getInt64Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = start_function(s, name, true, {ptr, i64, ptr});
  auto arg = fn->arg_begin();
  Value* base = &*arg++;
  Value* limit = &*arg++;
  Value* active = &*arg++;

  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  BasicBlock* loop = BasicBlock::Create(ctx_, "iteration", fn);
  BasicBlock* left = BasicBlock::Create(ctx_, "left", fn);
  BasicBlock* exit = BasicBlock::Create(ctx_, "exit", fn);
  b_.SetInsertPoint(entry);
  load_bases(base);
  lane_ = b_.getInt64(0);
  b_.CreateBr(loop);

  b_.SetInsertPoint(loop);
  PHINode* k = b_.CreatePHI(i64, 2);
  k->addIncoming(b_.getInt64(0), entry);
  cur_.assign(ns, nullptr);
  old_.assign(ns, nullptr);
  emit_ops(s);  // no op may fail here
  Value* c = stay_condition(s);
  for (size_t i = 0; i < ns; ++i) {
    if (!written_[i] || s.slots[i].kind != SlotKind::Thread) continue;
    StoreInst* st = b_.CreateStore(cur_[i], address(static_cast<int32_t>(i)));
    tag(st, i);
  }
  Value* kn = b_.CreateAdd(k, b_.getInt64(1));
  BasicBlock* more = BasicBlock::Create(ctx_, "more", fn, left);
  k->addIncoming(kn, more);
  b_.CreateCondBr(c, more, left);
  b_.SetInsertPoint(more);
  b_.CreateCondBr(b_.CreateICmpSLT(kn, limit), loop, exit);

  b_.SetInsertPoint(left);
  StoreInst* st = b_.CreateStore(b_.getInt64(0), active);
  tag(st, ns);
  b_.CreateBr(exit);

  b_.SetInsertPoint(exit);
  b_.CreateRet(kn);
  return fn;
}

// The dense body s.copies times per lane (DenseMultiFn): the lane's values
// stay in registers from one iteration to the next; a lane that leaves is
// frozen by a select, as in the one-iteration form.
Function* Gen::dense_multi(const Segment& s, const std::string& name) {
  const size_t ns = s.slots.size();
  const int copies = s.copies;
  Type* i64 = b_.getInt64Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = start_function(s, name, true, {ptr, i64, ptr, ptr});
  auto arg = fn->arg_begin();
  Value* base = &*arg++;
  Value* n = &*arg++;
  Value* active = &*arg++;
  Value* counts = &*arg++;

  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  BasicBlock* loop = BasicBlock::Create(ctx_, "lane", fn);
  BasicBlock* exit = BasicBlock::Create(ctx_, "exit", fn);
  b_.SetInsertPoint(entry);
  load_bases(base);
  b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, exit);

  b_.SetInsertPoint(loop);
  PHINode* j = b_.CreatePHI(i64, 2);
  PHINode* count = b_.CreatePHI(i64, 2);
  std::vector<PHINode*> cnt(static_cast<size_t>(copies));
  j->addIncoming(b_.getInt64(0), entry);
  count->addIncoming(b_.getInt64(0), entry);
  for (auto& c : cnt) {
    c = b_.CreatePHI(i64, 2);
    c->addIncoming(b_.getInt64(0), entry);
  }
  lane_ = j;
  LoadInst* a = b_.CreateLoad(i64, b_.CreateGEP(i64, active, j));
  tag(a, ns);
  Value* act = b_.CreateICmpNE(a, b_.getInt64(0));
  cur_.assign(ns, nullptr);
  old_.assign(ns, nullptr);
  std::vector<bool> dirty(ns, false);
  std::vector<Value*> cnt_next(static_cast<size_t>(copies));
  for (int k = 0; k < copies; ++k) {
    // A vector compare's lanes are all ones: subtracting them counts (one instruction).
    cnt_next[k] = b_.CreateSub(cnt[k], b_.CreateSExt(act, i64));
    const std::vector<Value*> prev = cur_;  // the values at this iteration's start
    emit_ops(s);                            // no op may fail here
    Value* c = stay_condition(s);
    for (size_t i = 0; i < ns; ++i) {
      if (!written_[i] || s.slots[i].kind != SlotKind::Thread) continue;
      Value* o = prev[i] ? prev[i] : old_[i] ? old_[i] : load_slot(static_cast<int32_t>(i));
      if (!old_[i]) old_[i] = o;
      cur_[i] = b_.CreateSelect(act, cur_[i], o);
      dirty[i] = true;
    }
    act = b_.CreateAnd(act, c);
  }
  for (size_t i = 0; i < ns; ++i) {
    if (!dirty[i]) continue;
    StoreInst* st = b_.CreateStore(cur_[i], address(static_cast<int32_t>(i)));
    tag(st, i);
  }
  StoreInst* st = b_.CreateStore(b_.CreateZExt(act, i64), b_.CreateGEP(i64, active, j));
  tag(st, ns);
  Value* count_next = b_.CreateSub(count, b_.CreateSExt(act, i64));
  Value* jn = b_.CreateAdd(j, b_.getInt64(1));
  BasicBlock* loop_end = b_.GetInsertBlock();
  j->addIncoming(jn, loop_end);
  count->addIncoming(count_next, loop_end);
  for (int k = 0; k < copies; ++k) cnt[k]->addIncoming(cnt_next[k], loop_end);
  mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit), true);

  b_.SetInsertPoint(exit);
  PHINode* c = b_.CreatePHI(i64, 2);
  c->addIncoming(b_.getInt64(0), entry);
  c->addIncoming(count_next, loop_end);
  std::vector<PHINode*> cnt_out(static_cast<size_t>(copies));
  for (int k = 0; k < copies; ++k) {
    cnt_out[k] = b_.CreatePHI(i64, 2);
    cnt_out[k]->addIncoming(b_.getInt64(0), entry);
    cnt_out[k]->addIncoming(cnt_next[k], loop_end);
  }
  for (int k = 0; k < copies; ++k)
    b_.CreateStore(cnt_out[k], b_.CreateConstGEP1_64(i64, counts, static_cast<uint64_t>(k)));
  b_.CreateRet(c);
  return fn;
}

// A gather segment with calls (FOp::Kind::Call): a loop over the lanes for
// each run of ops between calls, and each call once for all the lanes.
// What a phase writes is stored before the next call (temporaries too: a
// call or a later phase may read them); a later phase loads it again, and
// the values computed once for every thread (which a call may have just
// computed). Returns 1 as soon as a phase's check or a call fails.
Function* Gen::gather_phased(const Segment& s, const std::string& name) {
  const size_t ns = s.slots.size();
  Type* i64 = b_.getInt64Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = start_function(s, name, false, {ptr, ptr, i64});
  auto arg = fn->arg_begin();
  Value* base = &*arg++;
  Value* idx = &*arg++;
  Value* n = &*arg++;
  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  BasicBlock* failed = BasicBlock::Create(ctx_, "failed", fn);
  b_.SetInsertPoint(entry);
  load_bases(base);
  FunctionType* call_ty = FunctionType::get(i64, {ptr, ptr, i64}, false);
  for (size_t i = 0; i < s.ops.size();) {
    if (s.ops[i].kind == FOp::Kind::Call) {
      const uint64_t at = ns + 2 * static_cast<uint64_t>(s.ops[i].stack);
      Value* f = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, at));
      Value* ctx = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, at + 1));
      Value* r = b_.CreateCall(call_ty, f, {ctx, idx, n});
      BasicBlock* next = BasicBlock::Create(ctx_, "called", fn, failed);
      b_.CreateCondBr(b_.CreateICmpNE(r, b_.getInt64(0)), failed, next);
      b_.SetInsertPoint(next);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < s.ops.size() && s.ops[end].kind != FOp::Kind::Call) ++end;
    const bool last = end == s.ops.size();
    for (size_t k = 0; k < ns; ++k)
      if (s.slots[k].kind == SlotKind::Shared && !s.slots[k].tensor)
        shared_[k] = b_.CreateLoad(ty(s.slots[k].dtype), ptr_[k]);
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* loop = BasicBlock::Create(ctx_, "lane", fn, failed);
    BasicBlock* exit = BasicBlock::Create(ctx_, "phase_done", fn, failed);
    b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, exit);
    b_.SetInsertPoint(loop);
    PHINode* j = b_.CreatePHI(i64, 2);
    PHINode* bad_acc = b_.CreatePHI(b_.getInt8Ty(), 2);
    j->addIncoming(b_.getInt64(0), pre);
    bad_acc->addIncoming(b_.getInt8(0), pre);
    lane_ = j;
    LoadInst* t = b_.CreateLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), idx, j));
    tag(t, ns);
    slot_index_ = b_.CreateZExt(t, i64);
    cur_.assign(ns, nullptr);
    old_.assign(ns, nullptr);
    written_.assign(ns, false);
    bad_ = b_.getFalse();
    for (size_t k = i; k < end; ++k) compute(s.ops[k]);
    store_phase(s, last);
    Value* bad_next = b_.CreateOr(bad_acc, b_.CreateZExt(bad_, b_.getInt8Ty()));
    Value* jn = b_.CreateAdd(j, b_.getInt64(1));
    BasicBlock* latch = b_.GetInsertBlock();
    j->addIncoming(jn, latch);
    bad_acc->addIncoming(bad_next, latch);
    mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit), false);
    b_.SetInsertPoint(exit);
    PHINode* bad_out = b_.CreatePHI(b_.getInt8Ty(), 2);
    bad_out->addIncoming(b_.getInt8(0), pre);
    bad_out->addIncoming(bad_next, latch);
    BasicBlock* next = BasicBlock::Create(ctx_, "phase", fn, failed);
    b_.CreateCondBr(b_.CreateICmpNE(bad_out, b_.getInt8(0)), failed, next);
    b_.SetInsertPoint(next);
    i = end;
  }
  b_.CreateRet(b_.getInt64(0));
  b_.SetInsertPoint(failed);
  b_.CreateRet(b_.getInt64(1));
  return fn;
}

// The end of a lane in a phase of gather_phased: the values it wrote in
// registers go to memory (temporaries only if read later, when `last`).
void Gen::store_phase(const Segment& s, bool last) {
  for (size_t i = 0; i < s.slots.size(); ++i) {
    if (!written_[i]) continue;
    const Slot& sl = s.slots[i];
    if (sl.kind == SlotKind::Scratch && !sl.keep && last) continue;
    StoreInst* st = b_.CreateStore(cur_[i], address(static_cast<int32_t>(i)));
    tag(st, i);
  }
}

Function* Gen::emit(const Segment& s, const std::string& name, bool dense) {
  if (!dense && s.calls > 0) return gather_phased(s, name);
  const size_t ns = s.slots.size();
  Type* i64 = b_.getInt64Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = dense ? start_function(s, name, true, {ptr, i64, ptr, ptr})
                       : start_function(s, name, false, {ptr, ptr, i64});
  auto arg = fn->arg_begin();
  Value* base = &*arg++;
  Value* idx = dense ? nullptr : &*arg++;
  Value* n = &*arg++;
  Value* active = dense ? &*arg++ : nullptr;
  Value* failed = dense ? &*arg++ : nullptr;

  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  BasicBlock* loop = BasicBlock::Create(ctx_, "lane", fn);
  BasicBlock* exit = BasicBlock::Create(ctx_, "exit", fn);
  b_.SetInsertPoint(entry);
  load_bases(base);
  b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, exit);

  b_.SetInsertPoint(loop);
  PHINode* j = b_.CreatePHI(i64, 2);
  PHINode* bad_acc = b_.CreatePHI(b_.getInt8Ty(), 2);
  PHINode* count = dense ? b_.CreatePHI(i64, 2) : nullptr;
  j->addIncoming(b_.getInt64(0), entry);
  bad_acc->addIncoming(b_.getInt8(0), entry);
  if (count) count->addIncoming(b_.getInt64(0), entry);
  lane_ = j;
  Value* act = nullptr;
  if (dense) {
    LoadInst* a = b_.CreateLoad(i64, b_.CreateGEP(i64, active, j));
    tag(a, ns);
    act = b_.CreateICmpNE(a, b_.getInt64(0));
  } else {
    LoadInst* t = b_.CreateLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), idx, j));
    tag(t, ns);
    slot_index_ = b_.CreateZExt(t, i64);
  }
  cur_.assign(ns, nullptr);
  old_.assign(ns, nullptr);
  emit_ops(s);
  Value* stay = nullptr;
  if (dense) {
    stay = b_.CreateAnd(act, stay_condition(s));
    bad_ = b_.CreateAnd(bad_, act);
  }
  for (size_t i = 0; i < ns; ++i) {
    if (!written_[i]) continue;
    const Slot& sl = s.slots[i];
    if (sl.kind == SlotKind::Scratch && !sl.keep) continue;
    Value* v = cur_[i];
    if (dense && sl.kind == SlotKind::Thread) {
      Value* o = old_[i] ? old_[i] : load_slot(static_cast<int32_t>(i));
      v = b_.CreateSelect(act, v, o);
    }
    StoreInst* st = b_.CreateStore(v, address(static_cast<int32_t>(i)));
    tag(st, i);
  }
  Value* bad_next = b_.CreateOr(bad_acc, b_.CreateZExt(bad_, b_.getInt8Ty()));
  Value* count_next = nullptr;
  if (dense) {
    StoreInst* st = b_.CreateStore(b_.CreateZExt(stay, i64), b_.CreateGEP(i64, active, j));
    tag(st, ns);
    count_next = b_.CreateAdd(count, b_.CreateZExt(stay, i64));
  }
  Value* jn = b_.CreateAdd(j, b_.getInt64(1));
  BasicBlock* loop_end = b_.GetInsertBlock();
  j->addIncoming(jn, loop_end);
  bad_acc->addIncoming(bad_next, loop_end);
  if (count) count->addIncoming(count_next, loop_end);
  // The gather form cannot use SIMD (no scatter on AVX2): keep it a plain
  // loop, which also keeps compile time low. The dense form vectorises.
  mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(jn, n), loop, exit), dense);

  b_.SetInsertPoint(exit);
  PHINode* bad_out = b_.CreatePHI(b_.getInt8Ty(), 2);
  bad_out->addIncoming(b_.getInt8(0), entry);
  bad_out->addIncoming(bad_next, loop_end);
  PHINode* c = nullptr;
  if (dense) {
    c = b_.CreatePHI(i64, 2);
    c->addIncoming(b_.getInt64(0), entry);
    c->addIncoming(count_next, loop_end);
  }
  Value* bad64 = b_.CreateZExt(bad_out, i64);
  if (dense) {
    b_.CreateStore(bad64, failed);
    b_.CreateRet(c);
  } else {
    b_.CreateRet(bad64);
  }
  return fn;
}

Type* Gen::ty(DType d) {
  switch (d) {
    case DType::Bool:
      return b_.getInt8Ty();
    case DType::I32:
      return b_.getInt32Ty();
    case DType::I64:
      return b_.getInt64Ty();
    case DType::F32:
      return b_.getFloatTy();
    case DType::F64:
      return b_.getDoubleTy();
  }
  return b_.getInt64Ty();
}

Value* Gen::constant(const Arg& a) {
  switch (a.dtype) {
    case DType::Bool:
      return b_.getInt8(static_cast<uint8_t>(a.bits));
    case DType::I32:
      return b_.getInt32(static_cast<uint32_t>(a.bits));
    case DType::I64:
      return b_.getInt64(a.bits);
    case DType::F32:
      return ConstantFP::get(ctx_, APFloat(APFloat::IEEEsingle(), APInt(32, a.bits & 0xffffffffu)));
    case DType::F64:
      return ConstantFP::get(ctx_, APFloat(APFloat::IEEEdouble(), APInt(64, a.bits)));
  }
  return nullptr;
}

void Gen::tag(Instruction* in, size_t scope) {
  in->setMetadata(LLVMContext::MD_alias_scope, scope_[scope]);
  in->setMetadata(LLVMContext::MD_noalias, noalias_[scope]);
}

Value* Gen::address(int32_t s) {
  if (static_cast<size_t>(s) < slot_home_.size() && slot_home_[s]) return slot_home_[s];
  const Slot& sl = seg_->slots[s];
  Value* i = (!dense_ && sl.kind == SlotKind::Thread) ? slot_index_ : lane_;
  return b_.CreateGEP(ty(sl.dtype), ptr_[s], i);
}

Value* Gen::load_slot(int32_t s) {
  LoadInst* l = b_.CreateLoad(ty(seg_->slots[s].dtype), address(s));
  tag(l, static_cast<size_t>(s));
  return l;
}

Value* Gen::read(const Arg& a) {
  if (a.slot < 0) return constant(a);
  const Slot& sl = seg_->slots[a.slot];
  if (sl.kind == SlotKind::Shared) return shared_[a.slot];
  if (!cur_[a.slot]) {
    cur_[a.slot] = load_slot(a.slot);
    old_[a.slot] = cur_[a.slot];
  }
  return cur_[a.slot];
}

// The loop whose back edge is `back` is never unrolled, and vectorised only
// if `vectorise` (otherwise LLVM is told not to).
void Gen::mark_loop(BranchInst* back, bool vectorise) {
  std::vector<Metadata*> ops{nullptr};
  if (!vectorise)
    ops.push_back(MDNode::get(ctx_, {MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                     ConstantAsMetadata::get(b_.getFalse())}));
  ops.push_back(MDNode::get(ctx_, {MDString::get(ctx_, "llvm.loop.unroll.disable")}));
  MDNode* loop_id = MDNode::getDistinct(ctx_, ops);
  loop_id->replaceOperandWith(0, loop_id);
  back->setMetadata(LLVMContext::MD_loop, loop_id);
}

// Alias scopes: one per slot, then the lane list / active mask.
void Gen::make_scopes(const std::string& name, size_t ns) {
  MDBuilder md(ctx_);
  MDNode* domain = md.createAnonymousAliasScopeDomain(name);
  std::vector<Metadata*> scopes;
  for (size_t i = 0; i <= ns; ++i) scopes.push_back(md.createAnonymousAliasScope(domain));
  scope_.assign(ns + 1, nullptr);
  noalias_.assign(ns + 1, nullptr);
  for (size_t i = 0; i <= ns; ++i) {
    scope_[i] = MDNode::get(ctx_, {scopes[i]});
    std::vector<Metadata*> others;
    for (size_t k = 0; k <= ns; ++k)
      if (k != i) others.push_back(scopes[k]);
    noalias_[i] = MDNode::get(ctx_, others);
  }
}

// Each slot's base pointer (base[s]) and the Shared slots' values.
void Gen::load_bases(Value* base) {
  const size_t ns = seg_->slots.size();
  Type* ptr = PointerType::get(ctx_, 0);
  ptr_.assign(ns, nullptr);
  shared_.assign(ns, nullptr);
  for (size_t i = 0; i < ns; ++i) {
    ptr_[i] = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, i));
    if (seg_->slots[i].kind == SlotKind::Shared && !seg_->slots[i].tensor)
      shared_[i] = b_.CreateLoad(ty(seg_->slots[i].dtype), ptr_[i]);
  }
}

}  // namespace ab::jit::detail
