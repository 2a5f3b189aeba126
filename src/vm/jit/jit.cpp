// LLVM code generation for fused segments (see jit.h). Compiled with LLVM's
// headers only when AUTOBATCH_JIT is set; otherwise the JIT reports itself
// unavailable.
#include "vm/jit/jit.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#ifdef AUTOBATCH_JIT
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#endif

namespace ab::jit {

namespace {

bool is_int(DType d) { return d == DType::I32 || d == DType::I64; }

// The divisor of a div/mod when it is a constant: its value.
bool constant_divisor(const Arg& a, int64_t* v) {
  if (a.slot >= 0) return false;
  if (a.dtype == DType::I64)
    *v = static_cast<int64_t>(a.bits);
  else if (a.dtype == DType::I32)
    *v = static_cast<int32_t>(static_cast<uint32_t>(a.bits));
  else
    return false;
  return true;
}

}  // namespace

bool supported(PrimId op, const std::vector<DType>& args, DType out) {
  if (args.empty()) return false;
  DType d = args[0];
  for (DType a : args)
    if (a != d && op != PrimId::Select) return false;
  switch (op) {
    case PrimId::Add:
    case PrimId::Sub:
    case PrimId::Mul:
    case PrimId::Div:
    case PrimId::Mod:
    case PrimId::Min:
    case PrimId::Max:
      return args.size() == 2 && d != DType::Bool && out == d;
    case PrimId::Neg:
    case PrimId::Abs:
      return args.size() == 1 && d != DType::Bool && out == d;
    case PrimId::Pow:
      return args.size() == 2 && is_float(d) && out == d;  // integer pow: the kernel
    case PrimId::Exp:
    case PrimId::Log:
    case PrimId::Log1p:
    case PrimId::Expm1:
    case PrimId::Sqrt:
    case PrimId::Sin:
    case PrimId::Cos:
    case PrimId::Tan:
    case PrimId::Tanh:
    case PrimId::Sigmoid:
    case PrimId::Floor:
    case PrimId::Ceil:
    case PrimId::Round:
      return args.size() == 1 && is_float(d) && out == d;
    case PrimId::IsNan:
    case PrimId::IsFinite:
      return args.size() == 1 && is_float(d) && out == DType::Bool;
    case PrimId::Eq:
    case PrimId::Ne:
    case PrimId::Lt:
    case PrimId::Le:
    case PrimId::Gt:
    case PrimId::Ge:
      return args.size() == 2 && out == DType::Bool;
    case PrimId::And:
    case PrimId::Or:
    case PrimId::Xor:
      return args.size() == 2 && d == DType::Bool && out == DType::Bool;
    case PrimId::Not:
      return args.size() == 1 && d == DType::Bool && out == DType::Bool;
    case PrimId::Select:
      return args.size() == 3 && args[0] == DType::Bool && args[1] == args[2] && out == args[1];
    case PrimId::Cast:
      return args.size() == 1;
    default:
      return false;
  }
}

bool may_fail(const FOp& op, const std::vector<Slot>& slots) {
  if (op.copy || op.kind != FOp::Kind::Compute) return false;
  if (op.prim == PrimId::Div || op.prim == PrimId::Mod) {
    DType d = op.args[0].slot >= 0 ? slots[op.args[0].slot].dtype : op.args[0].dtype;
    if (!is_int(d)) return false;
    int64_t v = 0;
    return !constant_divisor(op.args[1], &v) || v == 0;
  }
  if (op.prim == PrimId::Cast) {
    DType d = op.args[0].slot >= 0 ? slots[op.args[0].slot].dtype : op.args[0].dtype;
    return is_float(d) && is_int(op.cast_to);
  }
  return false;
}

#ifndef AUTOBATCH_JIT

bool available() { return false; }

std::shared_ptr<const Code> compile(const std::vector<Segment>&, const std::vector<Segment>&,
                                    const std::vector<Segment>&, const std::vector<uint32_t>*,
                                    std::string* error, bool* cached) {
  *cached = false;
  *error = "this build has no JIT (configure with LLVM 15: llvm-15-dev)";
  return nullptr;
}

#else

namespace {

using namespace llvm;
using llvm::Function;
using llvm::Module;
using llvm::Type;
using llvm::Value;

struct Engine {
  std::unique_ptr<orc::LLJIT> jit;
  std::string error;
};

Engine& engine() {
  static Engine e;
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    InitializeNativeTargetAsmParser();
    auto jtmb = orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      e.error = toString(jtmb.takeError());
      return;
    }
    jtmb->setCodeGenOptLevel(CodeGenOpt::Default);
    auto jit = orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      e.error = toString(jit.takeError());
      return;
    }
    // The C library's math functions resolve to this process's libm: the
    // same functions the kernels call.
    auto gen = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*jit)->getDataLayout().getGlobalPrefix());
    if (!gen) {
      e.error = toString(gen.takeError());
      return;
    }
    (*jit)->getMainJITDylib().addGenerator(std::move(*gen));
    e.jit = std::move(*jit);
  });
  return e;
}

class LlvmCode : public Code {
 public:
  orc::ResourceTrackerSP tracker;
  ~LlvmCode() override {
    if (tracker) consumeError(tracker->remove());
  }
};

// The chain copies a callee's first blocks for each call site when they are
// at most this many blocks and instructions (see Gen::chain).
constexpr size_t kCopyBlocks = 4;
constexpr size_t kCopyOps = 32;

// Builds the functions of one module.
class Gen {
 public:
  Gen(LLVMContext& ctx, Module& m) : ctx_(ctx), m_(m), b_(ctx) {}

  Function* gather(const Segment& s, const std::string& name) { return emit(s, name, false); }
  Function* dense(const Segment& s, const std::string& name) { return emit(s, name, true); }

  // A function `name` of segment s returning i64, with the segment's alias
  // scopes; `dense`: lanes are positions in the dense arrays.
  Function* start_function(const Segment& s, const std::string& name, bool dense,
                           std::initializer_list<Type*> params) {
    seg_ = &s;
    dense_ = dense;
    Function* fn = Function::Create(
        FunctionType::get(b_.getInt64Ty(), ArrayRef<Type*>(params.begin(), params.size()), false),
        Function::ExternalLinkage, name, m_);
    fn->addFnAttr(Attribute::NoUnwind);
    make_scopes(name, s.slots.size());
    return fn;
  }

  // The segment's ops once, on the values in cur_ (written_ says which slots
  // they wrote; bad_ which checks failed).
  void emit_ops(const Segment& s) {
    written_.assign(s.slots.size(), false);
    bad_ = b_.getFalse();
    for (const FOp& o : s.ops) {
      cur_[o.outs[0]] = op(o);
      written_[o.outs[0]] = true;
    }
  }

  // i1: the lane stays in the loop block (its branch condition, after the ops).
  Value* stay_condition(const Segment& s) {
    Value* c = b_.CreateICmpNE(read(Arg{s.cond}), b_.getInt8(0));
    return s.stay_on_true ? c : b_.CreateNot(c);
  }

  // The dense body on lane 0 alone, in a loop (DenseSoloFn). The slots are
  // read and written through memory each iteration; LLVM's loop passes keep
  // them in registers (the alias scopes tell it nothing else touches them).
  Function* dense_solo(const Segment& s, const std::string& name) {
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
  Function* dense_multi(const Segment& s, const std::string& name) {
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

  // The block form (BlockFn): per lane of the list, the block's ops with the
  // pushes and pops of full variables where they happen, then its exit.
  Function* block(const Segment& s, const std::string& name) {
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
    block_ops(c);
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

    // From the entry (no lanes), a lane that needs a new row (j lanes done),
    // or the end of the list.
    b_.SetInsertPoint(exit);
    PHINode* r = b_.CreatePHI(i64, 3);
    r->addIncoming(b_.getInt64(0), entry);
    r->addIncoming(acc, loop);
    r->addIncoming(acc_next, loop_end);
    PHINode* count = b_.CreatePHI(i64, 3);
    count->addIncoming(b_.getInt64(0), entry);
    count->addIncoming(j, loop);
    count->addIncoming(jn, loop_end);
    b_.CreateStore(count, done);
    b_.CreateRet(r);
    return fn;
  }

  // The chain (ChainFn): every block of `blocks` in one function. A lane
  // goes from block to block as code written for one thread does: a goto,
  // branch or call jumps straight to its target's code, and each return
  // has its own switch over the blocks calls return to (so the CPU
  // predicts each jump on its own). Every block's code starts by counting
  // the lane's budget and checking its stacks.
  Function* chain(const std::vector<Segment>& blocks, const std::vector<uint32_t>& return_to,
                 uint32_t frames, const std::string& name) {
    Type* i64 = b_.getInt64Ty();
    Type* i32 = b_.getInt32Ty();
    Type* ptr = PointerType::get(ctx_, 0);
    // The function for one lane (its slot index and first block), called per
    // lane of the list by the ChainFn below: kept apart so that the list's
    // loop takes no registers from the lane's values. It returns the budget
    // it used times 2^32 plus its out_pc. Only `bases` and the slot index
    // stay live throughout: what the lane's exit needs besides (the VM's
    // arrays) is loaded again there, so the hot path keeps its registers.
    Function* fn =
        Function::Create(FunctionType::get(i64, {ptr, i64, i64, ptr}, false),
                         Function::InternalLinkage, name + ".lane", m_);
    fn->addFnAttr(Attribute::NoUnwind);
    fn->addFnAttr(Attribute::NoInline);
    Function* outer = Function::Create(
        FunctionType::get(i64, {ptr, ptr, i64, i64, ptr, ptr}, false), Function::ExternalLinkage,
        name, m_);
    outer->addFnAttr(Attribute::NoUnwind);
    auto arg = fn->arg_begin();
    Value* bases = &*arg++;
    slot_index_ = &*arg++;
    Value* start = &*arg++;
    Value* limits = &*arg++;
    lane_ = b_.getInt64(0);  // (a whole block writes its temporaries before reading them)

    BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
    BasicBlock* stop = BasicBlock::Create(ctx_, "stop", fn);
    BasicBlock* next = BasicBlock::Create(ctx_, "next", fn);
    b_.SetInsertPoint(entry);
    Value* budget = b_.CreateLoad(i64, limits);
    Value* start_pc = b_.CreateTrunc(start, i32);
    std::vector<BlockCtx> ctx;
    for (size_t k = 0; k < blocks.size(); ++k) {
      seg_ = &blocks[k];
      dense_ = false;
      make_scopes(name + "." + std::to_string(k), blocks[k].slots.size());
      Value* base = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, bases, k));
      ctx.push_back(block_context(blocks[k], base));
    }
    // One home per variable (each Thread slot's and each stack's depth, by
    // the variable it is), loaded when a lane starts and stored when it
    // leaves: from block to block its values stay in registers.
    struct Home {
      Value* at = nullptr;   // the alloca
      Value* mem = nullptr;  // the VM's per-lane array
      Type* type = nullptr;
      Type* reg = nullptr;  // the alloca's type, if wider (a depth: i64, so no index widens it)
      bool written = false;  // stored back (a variable no block writes may be a read-only input)
      size_t blk = 0, pos = 0;  // mem is entry `pos` of block blk's base
    };
    std::map<int32_t, Home> tops, depths;  // by variable; depths[-1]: the pc stack
    // Each stack's entries, while the lane is in the chain: a local array
    // (kFlatLevels words; entry i+off is row level i, off = 1 for a
    // variable's stack, whose push at depth 0 writes a dummy entry 0, and 0
    // for the pc stack), copied in when the lane starts and back when it
    // leaves. A push or pop is then one access at a fixed offset from the
    // frame, with no row table and no lane index.
    std::map<int32_t, Value*> bufs;
    std::map<int32_t, StackPtrs> stack_of;  // by variable: one set of pointers for every block
    std::map<int32_t, std::pair<size_t, size_t>> rows_at;  // by variable: its rows' (blk, pos)
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Segment& s = blocks[k];
      BlockCtx& c = ctx[k];
      for (size_t st = 0; st < c.stacks.size(); ++st) {
        const bool pc = st + 1 == c.stacks.size();
        if (!pc && st >= s.stack_var.size()) continue;
        c.stacks[st].ready = b_.getInt32(kFlatLevels);  // the VM makes every row first
        const int32_t var = pc ? -1 : s.stack_var[st];
        if (!stack_of.count(var)) rows_at[var] = {k, s.slots.size() + 3 * st + 1};
        c.stacks[st] = stack_of.emplace(var, c.stacks[st]).first->second;
      }
      c.slot_home.assign(s.slots.size(), nullptr);
      c.depth_home.assign(c.stacks.size(), nullptr);
      c.buf_home.assign(c.stacks.size(), nullptr);
      for (size_t i = 0; i < s.slots.size(); ++i) {
        if (s.slots[i].kind != SlotKind::Thread || i >= s.slot_var.size()) continue;
        Home& h = tops[s.slot_var[i]];
        if (!h.at) {
          h.type = ty(s.slots[i].dtype);
          h.at = b_.CreateAlloca(h.type);
          h.mem = c.ptr[i];
          h.blk = k;
          h.pos = i;
        }
        c.slot_home[i] = h.at;
      }
      for (const FOp& o : s.ops)
        if (o.kind != FOp::Kind::Push && static_cast<size_t>(o.outs[0]) < s.slot_var.size() &&
            s.slots[o.outs[0]].kind == SlotKind::Thread)
          tops[s.slot_var[o.outs[0]]].written = true;
      for (size_t st = 0; st < c.stacks.size(); ++st) {
        const bool pc = st + 1 == c.stacks.size();
        if (!pc && st >= s.stack_var.size()) continue;
        const int32_t var = pc ? -1 : s.stack_var[st];
        Home& h = depths[var];
        if (!h.at) {
          h.type = i32;
          h.reg = i64;
          h.at = b_.CreateAlloca(i64);
          h.mem = c.stacks[st].depth;
          h.blk = k;
          h.pos = s.slots.size() + 3 * st;
          h.written = true;
          bufs[var] = b_.CreateAlloca(ArrayType::get(pc ? i32 : i64, kFlatLevels + 1));
        }
        c.depth_home[st] = h.at;
        c.buf_home[st] = bufs[var];
      }
    }
    // A call needs fewer frames than the pc stack's rows and the bound (a
    // constant: one register fewer on the hot path).
    Value* call_limit = b_.getInt64(std::min<uint32_t>(frames, kFlatLevels));
    // Entry pos of block blk's base, loaded again (volatile: not merged with
    // the entry's load, which would keep the pointer live all the way).
    auto reload = [&](size_t blk, size_t pos) {
      LoadInst* base = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, bases, blk));
      base->setVolatile(true);
      LoadInst* p = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, pos));
      p->setVolatile(true);
      return p;
    };
    auto homes = [&](bool load) {
      for (auto* m : {&tops, &depths})
        for (auto& [v, h] : *m) {
          if (!load && !h.written) continue;
          Value* mem = b_.CreateGEP(h.type, load ? h.mem : reload(h.blk, h.pos), slot_index_);
          if (load) {
            Value* v = b_.CreateLoad(h.type, mem);
            b_.CreateStore(h.reg ? b_.CreateZExt(v, h.reg) : v, h.at);
          } else if (h.written) {
            Value* v = b_.CreateLoad(h.reg ? h.reg : h.type, h.at);
            b_.CreateStore(h.reg ? b_.CreateTrunc(v, h.type) : v, mem);
          }
        }
    };

    // Per block: its entry (the budget, counted down at the blocks calls
    // and backward jumps lead to: a lane that has used it stops there), its
    // check and its body.
    std::map<uint32_t, size_t> at;  // pc -> k
    std::vector<BasicBlock*> enter(blocks.size()), check(blocks.size());
    std::vector<PHINode*> runs(blocks.size());
    for (size_t k = 0; k < blocks.size(); ++k) {
      at[blocks[k].pc] = k;
      enter[k] = BasicBlock::Create(ctx_, "enter", fn, stop);
      check[k] = BasicBlock::Create(ctx_, "check", fn, stop);
      b_.SetInsertPoint(enter[k]);
      runs[k] = b_.CreatePHI(i64, 2);
    }
    b_.SetInsertPoint(stop);
    PHINode* stop_pc = b_.CreatePHI(i32, 4);
    PHINode* stop_runs = b_.CreatePHI(i64, 4);
    // An edge to block `pc` with the lane's runs so far: its code, or stop.
    auto edge = [&](Value* pc, Value* r) {
      BasicBlock* e = BasicBlock::Create(ctx_, "edge", fn, stop);
      IRBuilder<> eb(e);
      auto* c = dyn_cast<ConstantInt>(pc);
      auto it = c ? at.find(static_cast<uint32_t>(c->getZExtValue())) : at.end();
      if (it != at.end()) {
        eb.CreateBr(enter[it->second]);
        runs[it->second]->addIncoming(r, e);
      } else {
        eb.CreateBr(stop);
        stop_pc->addIncoming(pc, e);
        stop_runs->addIncoming(r, e);
      }
      return e;
    };

    b_.SetInsertPoint(entry);
    homes(true);
    // A lane whose stacks go deeper than the rows the code addresses is
    // the interpreter's (stuck at its first block); else its entries are
    // copied to the local arrays.
    BasicBlock* too_deep = BasicBlock::Create(ctx_, "too_deep", fn);
    {
      Value* fits = b_.getTrue();
      for (auto& [v, buf] : bufs) {
        Value* d = b_.CreateLoad(i64, depths.at(v).at);
        fits = b_.CreateAnd(fits, b_.CreateICmpULE(d, b_.getInt64(kFlatLevels + (v < 0 ? 0 : 1))));
      }
      BasicBlock* copy = BasicBlock::Create(ctx_, "copy_in", fn, stop);
      b_.CreateCondBr(fits, copy, too_deep);
      b_.SetInsertPoint(too_deep);
      b_.CreateRet(b_.CreateZExt(b_.CreateOr(start_pc, b_.getInt32(kChainStuck)), i64));
      b_.SetInsertPoint(copy);
      for (auto& [v, buf] : bufs)
        copy_rows(buf, stack_of.at(v).rows, b_.CreateLoad(i64, depths.at(v).at), v < 0, true);
    }
    {
      BasicBlock* other = BasicBlock::Create(ctx_, "edge", fn, stop);
      SwitchInst* first = b_.CreateSwitch(start_pc, other, static_cast<unsigned>(blocks.size()));
      for (size_t k = 0; k < blocks.size(); ++k)
        first->addCase(b_.getInt32(blocks[k].pc), edge(b_.getInt32(blocks[k].pc), budget));
      IRBuilder<> eb(other);
      eb.CreateBr(stop);
      stop_pc->addIncoming(start_pc, other);
      stop_runs->addIncoming(budget, other);
    }

    // The blocks calls return to, in the chain.
    std::set<uint32_t> returns_to;
    for (uint32_t r : return_to)
      if (at.count(r)) returns_to.insert(r);

    // The blocks whose entry looks at the budget: those calls go to and
    // those a goto or branch reaches from a block not before them. Every
    // endless path goes through one of them again and again: without calls
    // a thread returns finitely often, and without returns and such jumps
    // its pc only grows.
    std::set<uint32_t> counted;
    for (const Segment& s : blocks) {
      if (s.exit == Exit::Call) counted.insert(s.target);
      if ((s.exit == Exit::Goto || s.exit == Exit::Branch) && s.target <= s.pc)
        counted.insert(s.target);
      if (s.exit == Exit::Branch && s.target2 <= s.pc) counted.insert(s.target2);
    }

    // Copies of a callee's first blocks, one set per call site. At a call
    // whose callee starts with a few blocks (joined by gotos and branches,
    // none ending in a call) at least one of which returns, such
    // as fib's `n <= 1` case, the call jumps to a copy of those blocks made
    // for that call site: a return there goes straight to the block the
    // call returns to (the frame the call pushed is the one it pops), with
    // no switch on the popped pc, and LLVM sees the pushed values come back.
    // A copy's path that leaves them goes on in the shared code. No copy
    // ends in a call, so every call of a recursion reaches a copy. A loop
    // within a copy looks at the budget as the shared code does (the same
    // blocks, by pc, are counted).
    struct Copy {
      size_t k = 0;  // the block copied
      BasicBlock* enter = nullptr;
      BasicBlock* check = nullptr;
      PHINode* runs = nullptr;
    };
    using CopySet = std::map<uint32_t, Copy>;                  // by pc
    std::map<std::pair<uint32_t, uint32_t>, CopySet> copies;  // by (callee, return block)
    for (const Segment& s : blocks) {
      if (s.exit != Exit::Call || !at.count(s.target)) continue;
      auto key = std::make_pair(s.target, s.ret_pc);
      if (copies.count(key)) continue;
      std::vector<uint32_t> todo{s.target};
      std::set<uint32_t> region;
      size_t ops = 0;
      bool returns = false, fits = true;
      while (!todo.empty() && fits) {
        const uint32_t pc = todo.back();
        todo.pop_back();
        auto it = at.find(pc);
        if (region.count(pc) || it == at.end()) continue;
        const Segment& b = blocks[it->second];
        if (b.exit == Exit::Call) continue;
        region.insert(pc);
        ops += b.ops.size();
        fits = region.size() <= kCopyBlocks && ops <= kCopyOps;
        returns = returns || b.exit == Exit::Return;
        if (b.exit == Exit::Goto || b.exit == Exit::Branch) todo.push_back(b.target);
        if (b.exit == Exit::Branch) todo.push_back(b.target2);
      }
      if (!fits || !returns) continue;
      CopySet& set = copies[key];
      for (uint32_t pc : region) {
        Copy c;
        c.k = at.at(pc);
        c.enter = BasicBlock::Create(ctx_, "copy_enter", fn, stop);
        c.check = BasicBlock::Create(ctx_, "copy_check", fn, stop);
        b_.SetInsertPoint(c.enter);
        c.runs = b_.CreatePHI(i64, 2);
        set[pc] = c;
      }
    }
    auto copy_edge = [&](Copy& c, Value* r) {
      BasicBlock* e = BasicBlock::Create(ctx_, "edge", fn, stop);
      IRBuilder<> eb(e);
      eb.CreateBr(c.enter);
      c.runs->addIncoming(r, e);
      return e;
    };

    std::vector<std::pair<BasicBlock*, Value*>> stuck;  // (a stuck block, the lane's runs)
    std::vector<uint32_t> stuck_pc;                      // its out_pc
    // Block k's code from `enter` (whose PHI `runs` has the lane's budget
    // left): the budget, `check`, the body and the exit. `set` is the copy
    // set it belongs to (a goto or branch to a block of the set stays in
    // it, and a return goes to `ret_to`), or null for the shared code.
    auto emit = [&](size_t k, BasicBlock* enter_k, PHINode* runs_k, BasicBlock* check_k,
                    CopySet* set, uint32_t ret_to) {
      const Segment& s = blocks[k];
      auto go = [&](uint32_t pc, Value* r) {
        if (set) {
          auto it = set->find(pc);
          if (it != set->end()) return copy_edge(it->second, r);
        }
        return edge(b_.getInt32(pc), r);
      };
      restore(ctx[k]);
      b_.SetInsertPoint(enter_k);
      if (counted.count(s.pc))
        b_.CreateCondBr(b_.CreateICmpNE(runs_k, b_.getInt64(0)), check_k,
                        edge_to_stop(stop, stop_pc, stop_runs, s.pc, runs_k, fn));
      else
        b_.CreateBr(check_k);
      BasicBlock* body = BasicBlock::Create(ctx_, "body", fn, stop);
      b_.SetInsertPoint(check_k);
      // Stuck: out[j] says so here, off the path the lane takes on.
      BasicBlock* stuck_k = BasicBlock::Create(ctx_, "stuck", fn, stop);
      b_.CreateCondBr(block_check(ctx[k], call_limit), body, stuck_k);
      IRBuilder<>(stuck_k).CreateBr(next);
      stuck.push_back({stuck_k, runs_k});
      stuck_pc.push_back(s.pc | kChainStuck);
      b_.SetInsertPoint(body);
      block_ops(ctx[k]);
      const size_t pcs = ctx[k].stacks.size() - 1;
      Value* r1 = counted.count(s.pc) ? b_.CreateSub(runs_k, b_.getInt64(1)) : runs_k;
      Value* cond = nullptr;
      Value* popped = nullptr;
      switch (s.exit) {
        case Exit::Goto:
          break;
        case Exit::Branch:
          cond = b_.CreateICmpNE(read(Arg{s.cond}), b_.getInt8(0));
          break;
        case Exit::Call:
          push_frame(pcs, s.ret_pc);
          break;
        case Exit::Return:
          popped = pop_frame(pcs);
          break;
      }
      store_written();
      switch (s.exit) {
        case Exit::Goto:
          b_.CreateBr(go(s.target, r1));
          break;
        case Exit::Call: {  // (the frame is pushed above)
          auto it = copies.find({s.target, s.ret_pc});
          b_.CreateBr(it != copies.end() ? copy_edge(it->second.at(s.target), r1)
                                         : edge(b_.getInt32(s.target), r1));
          break;
        }
        case Exit::Branch: {
          BasicBlock* yes = go(s.target, r1);
          b_.CreateCondBr(cond, yes, go(s.target2, r1));
          break;
        }
        case Exit::Return: {
          if (set) {  // the frame popped is the one the call site pushed
            b_.CreateBr(edge(b_.getInt32(ret_to), r1));
            break;
          }
          SwitchInst* back = b_.CreateSwitch(popped, edge(popped, r1),
                                             static_cast<unsigned>(returns_to.size()));
          for (uint32_t t : returns_to) back->addCase(b_.getInt32(t), edge(b_.getInt32(t), r1));
          break;
        }
      }
    };
    for (size_t k = 0; k < blocks.size(); ++k) emit(k, enter[k], runs[k], check[k], nullptr, 0);
    copy_sites_ = copies.size();
    for (auto& [key, set] : copies)
      for (auto& [pc, c] : set) emit(c.k, c.enter, c.runs, c.check, &set, key.second);

    // Leaves the chain at stop_pc (a block outside it, halt, or out of budget).
    b_.SetInsertPoint(stop);
    b_.CreateBr(next);

    // A lane's end (from `stop` or a stuck block): its homes back to the
    // VM's arrays.
    b_.SetInsertPoint(next);
    PHINode* ran = b_.CreatePHI(i64, 1 + stuck.size());
    PHINode* out_pc = b_.CreatePHI(i32, 1 + stuck.size());
    ran->addIncoming(stop_runs, stop);
    out_pc->addIncoming(stop_pc, stop);
    for (size_t i = 0; i < stuck.size(); ++i) {
      ran->addIncoming(stuck[i].second, stuck[i].first);
      out_pc->addIncoming(b_.getInt32(stuck_pc[i]), stuck[i].first);
    }
    Value* used = b_.CreateSub(budget, ran);
    homes(false);
    for (auto& [v, buf] : bufs) {
      const auto& [blk, pos] = rows_at.at(v);
      copy_rows(buf, reload(blk, pos), b_.CreateLoad(i64, depths.at(v).at), v < 0, false);
    }
    b_.CreateRet(b_.CreateOr(b_.CreateShl(used, 32), b_.CreateZExt(out_pc, i64)));

    // The ChainFn: the lane function per lane of the list.
    {
      auto oa = outer->arg_begin();
      Value* o_bases = &*oa++;
      Value* o_idx = &*oa++;
      Value* o_n = &*oa++;
      Value* o_start = &*oa++;
      Value* o_out = &*oa++;
      Value* o_limits = &*oa++;
      BasicBlock* o_entry = BasicBlock::Create(ctx_, "entry", outer);
      BasicBlock* o_lane = BasicBlock::Create(ctx_, "lane", outer);
      BasicBlock* o_exit = BasicBlock::Create(ctx_, "exit", outer);
      b_.SetInsertPoint(o_entry);
      b_.CreateCondBr(b_.CreateICmpSGT(o_n, b_.getInt64(0)), o_lane, o_exit);
      b_.SetInsertPoint(o_lane);
      PHINode* j = b_.CreatePHI(i64, 2);
      PHINode* total = b_.CreatePHI(i64, 2);
      j->addIncoming(b_.getInt64(0), o_entry);
      total->addIncoming(b_.getInt64(0), o_entry);
      Value* slot = b_.CreateZExt(b_.CreateLoad(i32, b_.CreateGEP(i32, o_idx, j)), i64);
      Value* got = b_.CreateCall(fn, {o_bases, slot, o_start, o_limits});
      b_.CreateStore(b_.CreateTrunc(got, i32), b_.CreateGEP(i32, o_out, j));
      Value* jn = b_.CreateAdd(j, b_.getInt64(1));
      Value* tn = b_.CreateAdd(total, b_.CreateLShr(got, 32));
      j->addIncoming(jn, o_lane);
      total->addIncoming(tn, o_lane);
      mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(jn, o_n), o_lane, o_exit), false);
      b_.SetInsertPoint(o_exit);
      PHINode* r = b_.CreatePHI(i64, 2);
      r->addIncoming(b_.getInt64(0), o_entry);
      r->addIncoming(tn, o_lane);
      b_.CreateRet(r);
    }
    return outer;
  }

  // Copies this lane's entries of a stack at depth d (i32) between its rows
  // and the chain's local array `buf` (in: to the array). The pc stack's
  // levels are 0 .. d-1 at entries 0 .. d-1; a variable's, 0 .. d-2 at
  // entries 1 .. d-1 (its top is not on the stack).
  void copy_rows(Value* buf, Value* rows, Value* d, bool pc, bool in) {
    Type* i64 = b_.getInt64Ty();
    Type* w = pc ? b_.getInt32Ty() : i64;
    Type* ptr = PointerType::get(ctx_, 0);
    Function* fn = b_.GetInsertBlock()->getParent();
    BasicBlock* before = b_.GetInsertBlock();
    BasicBlock* loop = BasicBlock::Create(ctx_, in ? "copy_in" : "copy_out", fn);
    BasicBlock* done = BasicBlock::Create(ctx_, "copied", fn);
    const int64_t off = pc ? 0 : 1;
    Value* count = b_.CreateSub(b_.CreateZExt(d, i64), b_.getInt64(static_cast<uint64_t>(off)));
    b_.CreateCondBr(b_.CreateICmpSGT(count, b_.getInt64(0)), loop, done);
    b_.SetInsertPoint(loop);
    PHINode* level = b_.CreatePHI(i64, 2);
    level->addIncoming(b_.getInt64(0), before);
    Value* row = b_.CreateLoad(ptr, b_.CreateGEP(ptr, rows, level));
    Value* mem = b_.CreateGEP(w, row, slot_index_);
    Value* local = b_.CreateInBoundsGEP(
        ArrayType::get(w, kFlatLevels + 1), buf,
        {b_.getInt64(0), b_.CreateAdd(level, b_.getInt64(static_cast<uint64_t>(off)))});
    if (in)
      b_.CreateStore(b_.CreateLoad(w, mem), local);
    else
      b_.CreateStore(b_.CreateLoad(w, local), mem);
    Value* next = b_.CreateAdd(level, b_.getInt64(1));
    level->addIncoming(next, loop);
    mark_loop(b_.CreateCondBr(b_.CreateICmpSLT(next, count), loop, done), false);
    b_.SetInsertPoint(done);
  }

  // An edge into `stop` for a lane whose budget ran out at block pc.
  BasicBlock* edge_to_stop(BasicBlock* stop, PHINode* stop_pc, PHINode* stop_runs, uint32_t pc,
                           Value* r, Function* fn) {
    BasicBlock* e = BasicBlock::Create(ctx_, "spent", fn, stop);
    IRBuilder<> eb(e);
    eb.CreateBr(stop);
    stop_pc->addIncoming(b_.getInt32(pc), e);
    stop_runs->addIncoming(r, e);
    return e;
  }

 private:
  LLVMContext& ctx_;
  Module& m_;
  IRBuilder<> b_;
  // Per function:
  const Segment* seg_ = nullptr;
  bool dense_ = false;
  std::vector<Value*> ptr_;     // each slot's base pointer
  std::vector<Value*> shared_;  // Shared slots' values
  std::vector<Value*> cur_;     // each slot's value in this lane
  std::vector<Value*> old_;     // each Thread slot's value at the lane's start (dense)
  std::vector<bool> written_;
  std::vector<MDNode*> scope_, noalias_;

  // Block form: one stack's pointers (see BlockFn).
  struct StackPtrs {
    Value* depth = nullptr;  // uint32_t per lane
    Value* rows = nullptr;   // Word* per level < kFlatLevels
    Value* ready = nullptr;  // uint32_t: rows allocated (read once: the code allocates none)
  };
  std::vector<StackPtrs> stacks_;
  std::vector<Value*> slot_home_, depth_home_, buf_home_;  // the chain's (BlockCtx)

 public:
  size_t copy_sites_ = 0;  // the chain's call sites that jump to copies

 private:

  // The address of this lane's entry at `level` (i32) of stack k: in its
  // row (the lane's check made sure the row exists).
  Value* entry_address(size_t k, Value* level, bool pc) {
    Type* ptr = PointerType::get(ctx_, 0);
    Value* row = b_.CreateLoad(
        ptr, b_.CreateGEP(ptr, stacks_[k].rows, b_.CreateZExt(level, b_.getInt64Ty())));
    return b_.CreateGEP(pc ? b_.getInt32Ty() : b_.getInt64Ty(), row, slot_index_);
  }
  void put_word(size_t k, Value* level, Value* w, bool pc) {
    b_.CreateStore(w, entry_address(k, level, pc));
  }
  Value* get_word(size_t k, Value* level, bool pc) {
    return b_.CreateLoad(pc ? b_.getInt32Ty() : b_.getInt64Ty(), entry_address(k, level, pc));
  }
  // A value as the 8-byte word a stack holds (zero-extended), and back.
  Value* to_word(Value* v, DType d) {
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
  Value* from_word(Value* w, DType d) {
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
  void push(int32_t k, int32_t s) {
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
  void pop(int32_t k, int32_t s) {
    Value* old = read(Arg{s});
    Value* d = b_.CreateSub(load_depth(static_cast<size_t>(k)), b_.getInt64(1));
    store_depth(static_cast<size_t>(k), d);
    if (Value* buf = local_stack(static_cast<size_t>(k))) {  // entry 0 exists: no branch
      Value* v = from_word(b_.CreateLoad(b_.getInt64Ty(), local_entry(buf, d, false)),
                           seg_->slots[s].dtype);
      cur_[s] = b_.CreateSelect(b_.CreateICmpNE(d, b_.getInt64(0)), v, old);
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

  // One block of the block form, as set up in a function's entry: its
  // segment, slots' pointers, alias scopes and stacks, and what its check
  // needs per stack (the pc stack last).
  struct BlockCtx {
    const Segment* seg = nullptr;
    std::vector<Value*> ptr, shared;
    std::vector<MDNode*> scope, noalias;
    std::vector<StackPtrs> stacks;
    std::vector<int32_t> pushes, need;
    std::vector<bool> used;
    // The chain: per Thread slot and per stack, the variable's home (an
    // alloca that LLVM keeps in a register), else null.
    std::vector<Value*> slot_home, depth_home, buf_home;
  };

  // Loads block s's slots and stacks from `base` (see BlockFn) at the
  // insertion point; the block's alias scopes are the current ones.
  BlockCtx block_context(const Segment& s, Value* base) {
    seg_ = &s;
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
    return c;
  }

  // Makes block c the one the code being generated works on.
  void restore(const BlockCtx& c) {
    seg_ = c.seg;
    dense_ = false;
    ptr_ = c.ptr;
    shared_ = c.shared;
    scope_ = c.scope;
    noalias_ = c.noalias;
    stacks_ = c.stacks;
    slot_home_ = c.slot_home;
    depth_home_ = c.depth_home;
    buf_home_ = c.buf_home;
  }

  // i1, before the lane changes anything: its stacks hold what the block
  // pops, and every level it will touch has its row (a variable stack at
  // depth d with p pushes here touches levels up to d + p - 2; the pc
  // stack, level d for a call and d - 1 for a return); with call_limit
  // (i64: the smaller of the pc stack's rows and the frames allowed), a
  // call needs fewer frames than that instead. If not, the lane is the
  // interpreter's, which makes rows, goes deeper than the rows go, and
  // reports a pop of an empty stack or the stack bound.
  Value* block_check(const BlockCtx& c, Value* call_limit) {
    const Segment& s = *c.seg;
    Type* i64 = b_.getInt64Ty();
    const size_t nst = c.stacks.size();
    const size_t pcs = nst - 1;
    Value* ok = b_.getTrue();
    for (size_t k = 0; k < nst; ++k) {
      const bool pc = k == pcs;
      if (pc ? (s.exit != Exit::Call && s.exit != Exit::Return) : !c.used[k]) continue;
      if (pc && s.exit == Exit::Return && local_stack(k)) continue;  // the array holds it
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
        Value* lhs =
            b_.CreateAdd(d, b_.getInt64(static_cast<uint64_t>(static_cast<int64_t>(extra))));
        ok = b_.CreateAnd(ok, b_.CreateICmpSLE(lhs, b_.CreateZExt(c.stacks[k].ready, i64)));
      }
      if (!pc && c.need[k] > 0)
        ok = b_.CreateAnd(ok, b_.CreateICmpUGE(d, b_.getInt64(static_cast<uint64_t>(c.need[k]))));
    }
    return ok;
  }

  // Block c's ops on this lane, with its pushes and pops.
  void block_ops(const BlockCtx& c) {
    const size_t ns = c.seg->slots.size();
    cur_.assign(ns, nullptr);
    old_.assign(ns, nullptr);
    written_.assign(ns, false);
    bad_ = b_.getFalse();
    for (const FOp& o : c.seg->ops) {
      if (o.kind == FOp::Kind::Push) {
        push(o.stack, o.outs[0]);
      } else if (o.kind == FOp::Kind::Pop) {
        pop(o.stack, o.outs[0]);
      } else {
        cur_[o.outs[0]] = op(o);
        written_[o.outs[0]] = true;
      }
    }
  }

  // A call's new frame on the pc stack (stack pcs), returning to ret_pc;
  // returns the depth before it (i64).
  Value* push_frame(size_t pcs, uint32_t ret_pc) {
    Value* d = load_depth(pcs);
    if (Value* buf = local_stack(pcs))
      b_.CreateStore(b_.getInt32(ret_pc), local_entry(buf, d, true));
    else
      put_word(pcs, d, b_.getInt32(ret_pc), true);
    store_depth(pcs, b_.CreateAdd(d, b_.getInt64(1)));
    return d;
  }

  // A return: pops the pc stack; returns the block to go back to (i32).
  Value* pop_frame(size_t pcs) {
    Type* i32 = b_.getInt32Ty();
    Value* d = b_.CreateSub(load_depth(pcs), b_.getInt64(1));
    store_depth(pcs, d);
    if (Value* buf = local_stack(pcs)) return b_.CreateLoad(i32, local_entry(buf, d, true));
    return get_word(pcs, d, true);
  }

  // The Thread slots the block wrote, back to memory.
  void store_written() {
    for (size_t i = 0; i < written_.size(); ++i) {
      if (!written_[i] || seg_->slots[i].kind != SlotKind::Thread) continue;
      StoreInst* st = b_.CreateStore(cur_[i], address(static_cast<int32_t>(i)));
      tag(st, i);
    }
  }

  Value* lane_ = nullptr;        // j
  Value* slot_index_ = nullptr;  // idx[j] (gather)
  Value* bad_ = nullptr;         // i1: a check failed in this lane

  Type* ty(DType d) {
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

  Value* constant(const Arg& a) {
    switch (a.dtype) {
      case DType::Bool:
        return b_.getInt8(static_cast<uint8_t>(a.bits));
      case DType::I32:
        return b_.getInt32(static_cast<uint32_t>(a.bits));
      case DType::I64:
        return b_.getInt64(a.bits);
      case DType::F32:
        return ConstantFP::get(ctx_,
                               APFloat(APFloat::IEEEsingle(), APInt(32, a.bits & 0xffffffffu)));
      case DType::F64:
        return ConstantFP::get(ctx_, APFloat(APFloat::IEEEdouble(), APInt(64, a.bits)));
    }
    return nullptr;
  }

  DType dtype_of(const Arg& a) const { return a.slot >= 0 ? seg_->slots[a.slot].dtype : a.dtype; }

  void tag(Instruction* in, size_t scope) {
    in->setMetadata(LLVMContext::MD_alias_scope, scope_[scope]);
    in->setMetadata(LLVMContext::MD_noalias, noalias_[scope]);
  }

  // The chain's local array for stack k (null outside the chain), and
  // its entry i (i32).
  Value* local_stack(size_t k) const {
    return k < buf_home_.size() ? buf_home_[k] : nullptr;
  }
  Value* local_entry(Value* buf, Value* i, bool pc) {
    Type* w = pc ? b_.getInt32Ty() : b_.getInt64Ty();
    return b_.CreateInBoundsGEP(ArrayType::get(w, kFlatLevels + 1), buf,
                                {b_.getInt64(0), b_.CreateZExt(i, b_.getInt64Ty())});
  }

  // This lane's depth of stack k (i64): in its home in the chain (an i64),
  // else in the VM's per-lane array (uint32_t).
  Value* load_depth(size_t k) {
    if (k < depth_home_.size() && depth_home_[k])
      return b_.CreateLoad(b_.getInt64Ty(), depth_home_[k]);
    Value* at = b_.CreateGEP(b_.getInt32Ty(), stacks_[k].depth, slot_index_);
    return b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), at), b_.getInt64Ty());
  }
  void store_depth(size_t k, Value* d) {
    if (k < depth_home_.size() && depth_home_[k]) {
      b_.CreateStore(d, depth_home_[k]);
      return;
    }
    Value* at = b_.CreateGEP(b_.getInt32Ty(), stacks_[k].depth, slot_index_);
    b_.CreateStore(b_.CreateTrunc(d, b_.getInt32Ty()), at);
  }

  Value* address(int32_t s) {
    if (static_cast<size_t>(s) < slot_home_.size() && slot_home_[s]) return slot_home_[s];
    const Slot& sl = seg_->slots[s];
    Value* i = (!dense_ && sl.kind == SlotKind::Thread) ? slot_index_ : lane_;
    return b_.CreateGEP(ty(sl.dtype), ptr_[s], i);
  }

  Value* load_slot(int32_t s) {
    LoadInst* l = b_.CreateLoad(ty(seg_->slots[s].dtype), address(s));
    tag(l, static_cast<size_t>(s));
    return l;
  }

  Value* read(const Arg& a) {
    if (a.slot < 0) return constant(a);
    const Slot& sl = seg_->slots[a.slot];
    if (sl.kind == SlotKind::Shared) return shared_[a.slot];
    if (!cur_[a.slot]) {
      cur_[a.slot] = load_slot(a.slot);
      old_[a.slot] = cur_[a.slot];
    }
    return cur_[a.slot];
  }

  void fail_if(Value* c) { bad_ = b_.CreateOr(bad_, c); }

  Value* to_bool(Value* i1) { return b_.CreateZExt(i1, b_.getInt8Ty()); }

  Value* libm(const char* name, DType d, std::vector<Value*> args) {
    std::string n = name;
    if (d == DType::F32) n += "f";
    std::vector<Type*> ts(args.size(), ty(d));
    FunctionCallee f = m_.getOrInsertFunction(n, FunctionType::get(ty(d), ts, false));
    CallInst* c = b_.CreateCall(f, args);
    // Exactly the C library's function: no folding or rewriting as a builtin.
    c->addFnAttr(Attribute::NoBuiltin);
    c->addFnAttr(Attribute::WillReturn);
    c->addFnAttr(Attribute::NoUnwind);
    c->setOnlyReadsMemory();  // errno is not observed
    return c;
  }

  Value* intrinsic(Intrinsic::ID id, Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

  Value* int_divmod(bool mod, Value* a, Value* bv, const Arg& barg, DType d) {
    Type* t = ty(d);
    int64_t c = 0;
    if (constant_divisor(barg, &c) && c > 0 && (c & (c - 1)) == 0) {
      // As the kernels: floor division by 2^k is a shift, mod a mask.
      if (mod) return b_.CreateAnd(a, ConstantInt::get(t, static_cast<uint64_t>(c - 1)));
      return b_.CreateAShr(a, ConstantInt::get(t, static_cast<uint64_t>(__builtin_ctzll(c))));
    }
    Value* zero = ConstantInt::get(t, 0);
    Value* one = ConstantInt::get(t, 1);
    Value* is0 = b_.CreateICmpEQ(bv, zero);
    Value* m1 = b_.CreateICmpEQ(bv, ConstantInt::getSigned(t, -1));
    fail_if(is0);
    Value* safe = b_.CreateSelect(b_.CreateOr(is0, m1), one, bv);
    Value* r = b_.CreateSRem(a, safe);
    Value* adj =
        b_.CreateAnd(b_.CreateICmpNE(r, zero),
                     b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(bv, zero)));
    if (mod) return b_.CreateSelect(adj, b_.CreateAdd(r, bv), r);  // b == -1: r is 0
    Value* q = b_.CreateSDiv(a, safe);
    q = b_.CreateSelect(adj, b_.CreateSub(q, one), q);
    return b_.CreateSelect(m1, b_.CreateSub(zero, a), q);
  }

  Value* cast(Value* x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::Bool) {
      Value* nz = is_float(from) ? b_.CreateFCmpUNE(x, ConstantFP::get(ty(from), 0.0))
                                 : b_.CreateICmpNE(x, ConstantInt::get(ty(from), 0));
      return to_bool(nz);
    }
    if (from == DType::Bool)
      return is_float(to) ? b_.CreateUIToFP(x, ty(to)) : b_.CreateZExt(x, ty(to));
    if (is_int(from) && is_int(to)) return b_.CreateSExtOrTrunc(x, ty(to));
    if (is_int(from)) return b_.CreateSIToFP(x, ty(to));
    if (is_float(to)) return b_.CreateFPCast(x, ty(to));
    // float -> integer: truncation must fit (false for NaN), as CastOp::ok.
    Value* dd = from == DType::F32 ? b_.CreateFPExt(x, b_.getDoubleTy()) : x;
    auto c = [&](double v) { return ConstantFP::get(b_.getDoubleTy(), v); };
    Value* ok = to == DType::I32 ? b_.CreateAnd(b_.CreateFCmpOGT(dd, c(-2147483649.0)),
                                                b_.CreateFCmpOLT(dd, c(2147483648.0)))
                                 : b_.CreateAnd(b_.CreateFCmpOGE(dd, c(-9223372036854775808.0)),
                                                b_.CreateFCmpOLT(dd, c(9223372036854775808.0)));
    fail_if(b_.CreateNot(ok));
    Value* safe = b_.CreateSelect(ok, x, ConstantFP::get(ty(from), 0.0));
    return b_.CreateFPToSI(safe, ty(to));
  }

  Value* op(const FOp& o) {
    if (o.copy) return read(o.args[0]);
    DType d = dtype_of(o.args[0]);
    std::vector<Value*> v;
    for (const Arg& a : o.args) v.push_back(read(a));
    bool f = is_float(d);
    switch (o.prim) {
      case PrimId::Add:
        return f ? b_.CreateFAdd(v[0], v[1]) : b_.CreateAdd(v[0], v[1]);
      case PrimId::Sub:
        return f ? b_.CreateFSub(v[0], v[1]) : b_.CreateSub(v[0], v[1]);
      case PrimId::Mul:
        return f ? b_.CreateFMul(v[0], v[1]) : b_.CreateMul(v[0], v[1]);
      case PrimId::Div:
        return f ? b_.CreateFDiv(v[0], v[1]) : int_divmod(false, v[0], v[1], o.args[1], d);
      case PrimId::Mod: {
        if (!f) return int_divmod(true, v[0], v[1], o.args[1], d);
        Value* zero = ConstantFP::get(ty(d), 0.0);
        Value* r = libm("fmod", d, {v[0], v[1]});
        Value* adj = b_.CreateICmpNE(b_.CreateFCmpOLT(r, zero), b_.CreateFCmpOLT(v[1], zero));
        Value* nonzero = b_.CreateSelect(adj, b_.CreateFAdd(r, v[1]), r);
        Value* signed_zero = b_.CreateBinaryIntrinsic(Intrinsic::copysign, zero, v[1]);
        return b_.CreateSelect(b_.CreateFCmpUNE(r, zero), nonzero, signed_zero);
      }
      case PrimId::Neg:
        return f ? b_.CreateFNeg(v[0]) : b_.CreateSub(ConstantInt::get(ty(d), 0), v[0]);
      case PrimId::Abs:
        if (f) return intrinsic(Intrinsic::fabs, v[0]);
        return b_.CreateSelect(b_.CreateICmpSLT(v[0], ConstantInt::get(ty(d), 0)),
                               b_.CreateSub(ConstantInt::get(ty(d), 0), v[0]), v[0]);
      case PrimId::Min:
      case PrimId::Max: {
        bool mn = o.prim == PrimId::Min;
        if (!f)
          return b_.CreateSelect(mn ? b_.CreateICmpSLT(v[0], v[1]) : b_.CreateICmpSGT(v[0], v[1]),
                                 v[0], v[1]);
        Value* c = mn ? b_.CreateFCmpOLE(v[0], v[1]) : b_.CreateFCmpOGE(v[0], v[1]);
        return b_.CreateSelect(b_.CreateOr(c, b_.CreateFCmpUNO(v[0], v[0])), v[0], v[1]);
      }
      case PrimId::Pow:
        return libm("pow", d, {v[0], v[1]});
      case PrimId::Exp:
        return libm("exp", d, {v[0]});
      case PrimId::Log:
        return libm("log", d, {v[0]});
      case PrimId::Log1p:
        return libm("log1p", d, {v[0]});
      case PrimId::Expm1:
        return libm("expm1", d, {v[0]});
      case PrimId::Sin:
        return libm("sin", d, {v[0]});
      case PrimId::Cos:
        return libm("cos", d, {v[0]});
      case PrimId::Tan:
        return libm("tan", d, {v[0]});
      case PrimId::Tanh:
        return libm("tanh", d, {v[0]});
      case PrimId::Sqrt:
        return intrinsic(Intrinsic::sqrt, v[0]);
      case PrimId::Floor:
        return intrinsic(Intrinsic::floor, v[0]);
      case PrimId::Ceil:
        return intrinsic(Intrinsic::ceil, v[0]);
      case PrimId::Round:
        return intrinsic(Intrinsic::nearbyint, v[0]);
      case PrimId::Sigmoid: {
        Value* one = ConstantFP::get(ty(d), 1.0);
        Value* pos = b_.CreateFDiv(one, b_.CreateFAdd(one, libm("exp", d, {b_.CreateFNeg(v[0])})));
        Value* e = libm("exp", d, {v[0]});
        Value* neg = b_.CreateFDiv(e, b_.CreateFAdd(one, e));
        return b_.CreateSelect(b_.CreateFCmpOGE(v[0], ConstantFP::get(ty(d), 0.0)), pos, neg);
      }
      case PrimId::IsNan:
        return to_bool(b_.CreateFCmpUNO(v[0], v[0]));
      case PrimId::IsFinite:
        return to_bool(
            b_.CreateFCmpOLT(intrinsic(Intrinsic::fabs, v[0]), ConstantFP::getInfinity(ty(d))));
      case PrimId::Eq:
        return to_bool(f ? b_.CreateFCmpOEQ(v[0], v[1]) : b_.CreateICmpEQ(v[0], v[1]));
      case PrimId::Ne:
        return to_bool(f ? b_.CreateFCmpUNE(v[0], v[1]) : b_.CreateICmpNE(v[0], v[1]));
      case PrimId::Lt:
        return to_bool(f                  ? b_.CreateFCmpOLT(v[0], v[1])
                       : d == DType::Bool ? b_.CreateICmpULT(v[0], v[1])
                                          : b_.CreateICmpSLT(v[0], v[1]));
      case PrimId::Le:
        return to_bool(f                  ? b_.CreateFCmpOLE(v[0], v[1])
                       : d == DType::Bool ? b_.CreateICmpULE(v[0], v[1])
                                          : b_.CreateICmpSLE(v[0], v[1]));
      case PrimId::Gt:
        return to_bool(f                  ? b_.CreateFCmpOGT(v[0], v[1])
                       : d == DType::Bool ? b_.CreateICmpUGT(v[0], v[1])
                                          : b_.CreateICmpSGT(v[0], v[1]));
      case PrimId::Ge:
        return to_bool(f                  ? b_.CreateFCmpOGE(v[0], v[1])
                       : d == DType::Bool ? b_.CreateICmpUGE(v[0], v[1])
                                          : b_.CreateICmpSGE(v[0], v[1]));
      case PrimId::And:
        return b_.CreateAnd(v[0], v[1]);
      case PrimId::Or:
        return b_.CreateOr(v[0], v[1]);
      case PrimId::Xor:
        return b_.CreateXor(v[0], v[1]);
      case PrimId::Not:
        return b_.CreateXor(v[0], b_.getInt8(1));
      case PrimId::Select:
        return b_.CreateSelect(b_.CreateICmpNE(v[0], b_.getInt8(0)), v[1], v[2]);
      case PrimId::Cast:
        return cast(v[0], d, o.cast_to);
      default:
        return nullptr;  // not reached: supported() said no
    }
  }

  // The loop whose back edge is `back` is never unrolled, and vectorised only
  // if `vectorise` (otherwise LLVM is told not to).
  void mark_loop(BranchInst* back, bool vectorise) {
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
  void make_scopes(const std::string& name, size_t ns) {
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
  void load_bases(Value* base) {
    const size_t ns = seg_->slots.size();
    Type* ptr = PointerType::get(ctx_, 0);
    ptr_.assign(ns, nullptr);
    shared_.assign(ns, nullptr);
    for (size_t i = 0; i < ns; ++i) {
      ptr_[i] = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, base, i));
      if (seg_->slots[i].kind == SlotKind::Shared)
        shared_[i] = b_.CreateLoad(ty(seg_->slots[i].dtype), ptr_[i]);
    }
  }

  Function* emit(const Segment& s, const std::string& name, bool dense) {
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
};

std::atomic<uint64_t> module_counter{0};

// What identifies a module: every segment, field by field.
std::string cache_key(const std::vector<Segment>& gather, const std::vector<Segment>& dense,
                      const std::vector<Segment>& blocks, const std::vector<uint32_t>* chain) {
  std::string k(1, chain ? 'c' : '-');
  if (chain) {
    k.append(reinterpret_cast<const char*>(chain->data()), chain->size() * sizeof(uint32_t));
    k.push_back(';');
  }
  auto num = [&](uint64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const auto* list : {&gather, &dense, &blocks}) {
    num(list->size());
    for (const Segment& s : *list) {
      num(s.slots.size());
      for (const Slot& sl : s.slots)
        num(static_cast<uint64_t>(sl.dtype) | static_cast<uint64_t>(sl.kind) << 8 |
            static_cast<uint64_t>(sl.keep) << 16);
      num(s.ops.size());
      for (const FOp& o : s.ops) {
        num(static_cast<uint64_t>(o.copy) | static_cast<uint64_t>(o.prim) << 8 |
            static_cast<uint64_t>(o.cast_to) << 24 | static_cast<uint64_t>(o.kind) << 32);
        num(static_cast<uint64_t>(static_cast<int64_t>(o.stack)));
        num(o.args.size());
        for (const Arg& a : o.args) {
          num(static_cast<uint64_t>(static_cast<int64_t>(a.slot)));
          num(static_cast<uint64_t>(a.dtype));
          num(a.bits);
        }
        num(o.outs.size());
        for (int32_t x : o.outs) num(static_cast<uint64_t>(x));
      }
      num(static_cast<uint64_t>(static_cast<int64_t>(s.cond)));
      num(s.stay_on_true);
      num(static_cast<uint64_t>(static_cast<int64_t>(s.copies)));
      num(static_cast<uint64_t>(s.exit) | static_cast<uint64_t>(s.ret_pc) << 8);
      num(static_cast<uint64_t>(s.stacks));
      num(static_cast<uint64_t>(s.pc) | static_cast<uint64_t>(s.target) << 32);
      num(static_cast<uint64_t>(s.target2));
      for (const auto* v : {&s.slot_var, &s.stack_var}) {
        num(v->size());
        for (int32_t x : *v) num(static_cast<uint64_t>(static_cast<int64_t>(x)));
      }
    }
  }
  return k;
}

std::shared_ptr<const Code> compile_module(const std::vector<Segment>& gather,
                                           const std::vector<Segment>& dense,
                                           const std::vector<Segment>& blocks,
                                           const std::vector<uint32_t>* chain,
                                           uint32_t chain_frames, std::string* error);

}  // namespace

bool available() { return engine().jit != nullptr; }

std::shared_ptr<const Code> compile(const std::vector<Segment>& gather,
                                    const std::vector<Segment>& dense,
                                    const std::vector<Segment>& blocks,
                                    const std::vector<uint32_t>* chain, uint32_t chain_frames,
                                    std::string* error, bool* cached) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Code> > cache;
  std::string key = cache_key(gather, dense, blocks, chain);
  if (chain) key += "f" + std::to_string(chain_frames);
  // One compilation at a time; a second run of the same program waits for the first's code.
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  *cached = it != cache.end();
  if (*cached) return it->second;
  std::shared_ptr<const Code> code =
      compile_module(gather, dense, blocks, chain, chain_frames, error);
  if (code) cache.emplace(std::move(key), code);
  return code;
}

namespace {

// Modules without a dense loop: instruction selection by FastISel (opt level
// None) and a short pass pipeline. On programs/nuts.ab (22 segments) this
// takes the JIT from 75-90 ms of CPU to about 9; the segments' share of run
// time is small (measured with callgrind on nuts and random_walk: fewer
// instructions in total, compile included). Knobs for experiments:
// AUTOBATCH_JIT_LIGHT_CG=none|less|default, AUTOBATCH_JIT_LIGHT_PIPELINE=<new
// pass manager pipeline text, e.g. default<O1>>.
CodeGenOpt::Level codegen_level(bool light) {
  if (!light) return CodeGenOpt::Default;
  const char* v = std::getenv("AUTOBATCH_JIT_LIGHT_CG");
  std::string s = v ? v : "none";
  if (s == "less") return CodeGenOpt::Less;
  if (s == "default") return CodeGenOpt::Default;
  return CodeGenOpt::None;
}
std::string light_pipeline() {
  const char* v = std::getenv("AUTOBATCH_JIT_LIGHT_PIPELINE");
  if (v && *v) return v;
  return "function(sroa,early-cse,instcombine,simplifycfg)";
}

std::shared_ptr<const Code> compile_module(const std::vector<Segment>& gather,
                                           const std::vector<Segment>& dense,
                                           const std::vector<Segment>& blocks,
                                           const std::vector<uint32_t>* chain,
                                           uint32_t chain_frames, std::string* error) {
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  const double cpu0 = cpu_ms();
  auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  };
  Engine& e = engine();
  double t_init = ms();
  if (!e.jit) {
    *error = "LLVM could not be initialised: " + e.error;
    return nullptr;
  }
  auto ctx = std::make_unique<LLVMContext>();
  // Two modules, each with its own code generation: the segments and loop
  // bodies (m), and the blocks compiled whole (mb). Modules of gather
  // segments only (no dense loop) get cheap code generation (see
  // codegen_level); the whole blocks always get the full one, which makes
  // their loops about twice as fast (fib) and costs little, their code being
  // short.
  auto m = std::make_unique<Module>("autobatch", *ctx);
  auto mb = std::make_unique<Module>("autobatch_blocks", *ctx);
  const bool light = dense.empty();
  auto machine = [&](CodeGenOpt::Level level) -> std::unique_ptr<TargetMachine> {
    auto jtmb = orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      *error = toString(jtmb.takeError());
      return nullptr;
    }
    jtmb->setCodeGenOptLevel(level);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      *error = toString(tm.takeError());
      return nullptr;
    }
    return std::move(*tm);
  };
  std::unique_ptr<TargetMachine> tm = machine(codegen_level(light));
  std::unique_ptr<TargetMachine> tmb = blocks.empty() ? nullptr : machine(CodeGenOpt::Default);
  if (!tm || (!blocks.empty() && !tmb)) return nullptr;
  for (Module* x : {m.get(), mb.get()}) {
    x->setDataLayout(e.jit->getDataLayout());
    x->setTargetTriple(tm->getTargetTriple().str());
  }
  const std::string prefix = "ab" + std::to_string(module_counter++) + "_";
  std::vector<std::string> gnames, dnames, mnames, snames, bnames;
  std::string cname;
  size_t copy_sites = 0;
  {
    Gen gb(*ctx, *mb);
    for (size_t i = 0; i < blocks.size() && !chain; ++i) {
      bnames.push_back(prefix + "b" + std::to_string(i));
      gb.block(blocks[i], bnames.back());
    }
    if (chain && !blocks.empty()) {
      cname = prefix + "chain";
      gb.chain(blocks, *chain, chain_frames, cname);
      copy_sites = gb.copy_sites_;
    }
    Gen g(*ctx, *m);
    for (size_t i = 0; i < gather.size(); ++i) {
      gnames.push_back(prefix + "g" + std::to_string(i));
      g.gather(gather[i], gnames.back());
    }
    for (size_t i = 0; i < dense.size(); ++i) {
      dnames.push_back(prefix + "d" + std::to_string(i));
      g.dense(dense[i], dnames.back());
      mnames.push_back(dense[i].copies > 1 ? prefix + "m" + std::to_string(i) : "");
      if (!mnames.back().empty()) g.dense_multi(dense[i], mnames.back());
      snames.push_back(dense[i].copies > 1 ? prefix + "s" + std::to_string(i) : "");
      if (!snames.back().empty()) g.dense_solo(dense[i], snames.back());
    }
  }
  const std::string cpu = tm->getTargetCPU().str();
  const std::string features = tm->getTargetFeatureString().str();
  for (Module* x : {m.get(), mb.get()})
    for (Function& f : *x) {
      if (f.isDeclaration()) continue;
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
    }
  for (Module* x : {m.get(), mb.get()}) {
    std::string verr;
    raw_string_ostream vs(verr);
    if (verifyModule(*x, &vs)) {
      *error = "internal error: generated code does not verify: " + vs.str();
      return nullptr;
    }
  }
  double t_gen = ms();
  // The IR passes: O2 for loop bodies (to vectorise them), else a short pipeline.
  auto optimise = [&](Module& x, TargetMachine* t, bool short_pipeline) {
    LoopAnalysisManager lam;
    FunctionAnalysisManager fam;
    CGSCCAnalysisManager cgam;
    ModuleAnalysisManager mam;
    PassBuilder pb(t);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    if (short_pipeline) {
      ModulePassManager mpm;
      if (auto err = pb.parsePassPipeline(mpm, light_pipeline())) {
        *error = "internal error: " + toString(std::move(err));
        return false;
      }
      mpm.run(x, mam);
    } else {
      pb.buildPerModuleDefaultPipeline(OptimizationLevel::O2).run(x, mam);
    }
    return true;
  };
  if (!optimise(*m, tm.get(), light)) return nullptr;
  if (tmb && !optimise(*mb, tmb.get(), true)) return nullptr;
  double t_opt = ms();
  // AUTOBATCH_JIT_DUMP=1 prints the optimised modules (to see what vectorised).
  if (const char* dump = std::getenv("AUTOBATCH_JIT_DUMP"); dump && *dump == '1') {
    m->print(errs(), nullptr);
    if (tmb) mb->print(errs(), nullptr);
  }
  // Machine code with each module's own target machine (its opt level), then
  // linked into the session as objects.
  auto code = std::make_unique<LlvmCode>();
  code->tracker = e.jit->getMainJITDylib().createResourceTracker();
  std::vector<std::pair<Module*, TargetMachine*> > units{{m.get(), tm.get()}};
  if (tmb) units.push_back({mb.get(), tmb.get()});
  for (auto [x, t] : units) {
    auto object = orc::SimpleCompiler(*t)(*x);
    if (!object) {
      *error = toString(object.takeError());
      return nullptr;
    }
    if (auto err = e.jit->addObjectFile(code->tracker, std::move(*object))) {
      *error = toString(std::move(err));
      return nullptr;
    }
  }
  // One lookup for every function: the module is compiled once, as a whole.
  orc::SymbolLookupSet names;
  for (const auto* list : {&gnames, &dnames, &mnames, &snames, &bnames})
    for (const auto& n : *list)
      if (!n.empty()) names.add(e.jit->mangleAndIntern(n));
  if (!cname.empty()) names.add(e.jit->mangleAndIntern(cname));
  auto syms = e.jit->getExecutionSession().lookup(
      orc::makeJITDylibSearchOrder(&e.jit->getMainJITDylib()), std::move(names));
  if (!syms) {
    *error = toString(syms.takeError());
    return nullptr;
  }
  auto address = [&](const std::string& n) {
    return (*syms)[e.jit->mangleAndIntern(n)].getAddress();
  };
  for (const auto& n : gnames) code->gather.push_back(reinterpret_cast<GatherFn>(address(n)));
  for (const auto& n : bnames) code->block.push_back(reinterpret_cast<BlockFn>(address(n)));
  if (!cname.empty()) code->chain = reinterpret_cast<ChainFn>(address(cname));
  code->chain_copy_sites = copy_sites;
  for (const auto& n : dnames) code->dense.push_back(reinterpret_cast<DenseFn>(address(n)));
  for (const auto& n : mnames)
    code->dense_multi.push_back(n.empty() ? nullptr : reinterpret_cast<DenseMultiFn>(address(n)));
  for (const auto& n : snames)
    code->dense_solo.push_back(n.empty() ? nullptr : reinterpret_cast<DenseSoloFn>(address(n)));
  code->seconds = ms() / 1e3;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%.1f ms of CPU; IR %.1f ms, optimise %.1f ms, machine code %.1f ms",
                cpu_ms() - cpu0, t_gen - t_init, t_opt - t_gen, ms() - t_opt);
  code->detail = buf;
  return code;
}

}  // namespace

#endif

}  // namespace ab::jit
