// The JIT's code generator (internal to src/vm/jit): class Gen builds the
// LLVM functions of one module from the segments jit.h describes. Its
// member functions live in one file per part:
//   emit_segment.cpp  the gather and dense loops (GatherFn, DenseFn,
//                     DenseMultiFn, DenseSoloFn) and the slot accessors
//   emit_block.cpp    a whole block (BlockFn): pushes, pops, its exit
//   emit_chain.cpp    the chain of whole blocks (ChainFn)
//   prims.cpp         one primitive on one lane's values (op())
//   emit_tensor.cpp   ops on tensors (one lane's events, in memory)
// engine.cpp holds the LLJIT, the code cache and compile().
// Only files compiled with AUTOBATCH_JIT (LLVM's headers) include this.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "vm/jit/jit.h"
#include "vm/jit/support.h"

namespace ab::jit::detail {

using llvm::BasicBlock;
using llvm::BranchInst;
using llvm::Function;
using llvm::Instruction;
using llvm::IRBuilder;
using llvm::LLVMContext;
using llvm::MDNode;
using llvm::Module;
using llvm::PHINode;
using llvm::Type;
using llvm::Value;

// Builds the functions of one module.
class Gen {
 public:
  Gen(LLVMContext& ctx, Module& m) : ctx_(ctx), m_(m), b_(ctx) {}

  // The forms of jit.h, each a function `name` of the module.
  Function* gather(const Segment& s, const std::string& name) { return emit(s, name, false); }
  Function* dense(const Segment& s, const std::string& name) { return emit(s, name, true); }
  Function* dense_solo(const Segment& s, const std::string& name);
  Function* dense_multi(const Segment& s, const std::string& name);
  Function* block(const Segment& s, const std::string& name);
  Function* chain(const std::vector<Segment>& blocks, const std::vector<uint32_t>& return_to,
                  uint32_t frames, const std::string& name, bool count_runs);

  size_t copy_sites_ = 0;  // the chain's call sites that jump to copies
  uint32_t chain_levels_ = kFlatLevels;  // levels of each of the chain's local stack arrays

 private:
  // Block form: one stack's pointers (see BlockFn).
  struct StackPtrs {
    Value* depth = nullptr;  // uint32_t per lane
    Value* rows = nullptr;   // Word* per level < kFlatLevels
    Value* ready = nullptr;  // uint32_t: rows allocated (read once: the code allocates none)
  };

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
    // alloca that LLVM keeps in a register), else null; per stack, the
    // base level of the lane's window of it (i64, 0: the whole stack).
    std::vector<Value*> slot_home, depth_home, buf_home, base_home;
  };

  // emit_segment.cpp: functions, loops and slots.
  Function* start_function(const Segment& s, const std::string& name, bool dense,
                           std::initializer_list<Type*> params);
  void emit_ops(const Segment& s);
  Value* stay_condition(const Segment& s);
  Function* emit(const Segment& s, const std::string& name, bool dense);
  Type* ty(DType d);
  Value* constant(const Arg& a);
  DType dtype_of(const Arg& a) const { return a.slot >= 0 ? seg_->slots[a.slot].dtype : a.dtype; }
  void tag(Instruction* in, size_t scope);
  Value* address(int32_t s);
  Value* load_slot(int32_t s);
  Value* read(const Arg& a);
  void mark_loop(BranchInst* back, bool vectorise);
  void make_scopes(const std::string& name, size_t ns);
  void load_bases(Value* base);

  // emit_block.cpp: stacks, frames and whole blocks.
  Value* entry_address(size_t k, Value* level, bool pc);
  void put_word(size_t k, Value* level, Value* w, bool pc);
  Value* get_word(size_t k, Value* level, bool pc);
  Value* to_word(Value* v, DType d);
  Value* from_word(Value* w, DType d);
  void push(int32_t k, int32_t s);
  void pop(int32_t k, int32_t s);
  BlockCtx block_context(const Segment& s, Value* base);
  void restore(const BlockCtx& c);
  Value* block_check(const BlockCtx& c, Value* call_limit);
  void block_ops(const BlockCtx& c);
  Value* push_frame(size_t pcs, uint32_t ret_pc);
  Value* pop_frame(size_t pcs);
  void store_written();
  bool may_have_failed() const;
  std::vector<Value*> stack_depths(const BlockCtx& c);
  void restore_depths(const std::vector<Value*>& d);
  void undo_writes();
  Value* local_stack(size_t k) const;
  Value* local_entry(Value* buf, Value* i, bool pc);
  Value* load_depth(size_t k);
  void store_depth(size_t k, Value* d);

  // emit_chain.cpp
  void copy_rows(Value* buf, Value* rows, Value* d, bool pc, bool in);
  void copy_window(Value* buf, Value* rows, Value* head, Value* base, Value* d, bool pc, bool in);
  BasicBlock* edge_to_stop(BasicBlock* stop, PHINode* stop_pc, PHINode* stop_runs, uint32_t pc,
                           Value* r, Function* fn);

  // prims.cpp: the primitives.
  void compute(const FOp& o);  // op(o) into its outputs' values
  Value* op(const FOp& o);
  Value* scalar_op(const FOp& o, const std::vector<Value*>& v, DType d);
  // emit_tensor.cpp: ops on tensors in the gather form (false: o is not one).
  bool tensor_op(const FOp& o);
  Value* event(int32_t s);
  Value* element_index(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                       Value* k);
  template <class Body>
  void element_loop(int64_t count, Body body);
  void elementwise(const FOp& o);
  void get(const FOp& o);
  void set(const FOp& o);
  Value* index_offset(const FOp& o, size_t k, const std::vector<int64_t>& shape, int64_t row);
  // emit_segment.cpp: a gather segment with calls, phase by phase.
  Function* gather_phased(const Segment& s, const std::string& name);
  void store_phase(const Segment& s, bool last);
  Value* int_pow(Value* a, Value* b, const Arg& barg, DType d);
  Value* kernel_call(const char* name, Type* ret, std::vector<Value*> args);
  // prims_random.cpp: Philox and the samplers.
  Value* random(const FOp& o, const std::vector<Value*>& v);
  std::array<Value*, 4> philox(Value* key, Value* domain, Value* c0, Value* c1);
  std::pair<Value*, Value*> philox_words(Value* key, uint32_t domain, Value* c0, Value* c1);
  Value* join64(Value* lo, Value* hi);
  Value* unit_double(Value* bits64);
  void fail_if(Value* c) { bad_ = b_.CreateOr(bad_, c); }
  Value* to_bool(Value* i1) { return b_.CreateZExt(i1, b_.getInt8Ty()); }
  Value* libm(const char* name, DType d, std::vector<Value*> args);
  Value* intrinsic(llvm::Intrinsic::ID id, Value* x) { return b_.CreateUnaryIntrinsic(id, x); }
  Value* int_divmod(bool mod, Value* a, Value* bv, const Arg& barg, DType d);
  Value* cast(Value* x, DType from, DType to);

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
  std::vector<StackPtrs> stacks_;
  std::vector<Value*> slot_home_, depth_home_, buf_home_, base_home_;  // the chain's (BlockCtx)
  Value* lane_ = nullptr;                                  // j
  Value* slot_index_ = nullptr;                            // idx[j] (gather)
  Value* bad_ = nullptr;                                   // i1: a check failed in this lane
  // Block forms: a tensor's element is written only while no check has
  // failed (the lane must be left as it was for the interpreter).
  bool guard_writes_ = false;
  // Block forms: each element an in-place set wrote in this lane, its old
  // value, and whether it was written, so that a check failing after the
  // write puts it back (undo_writes) before the interpreter reruns the block.
  struct Undo {
    Value* at;
    Value* old;
    Value* wrote;  // i1
  };
  std::vector<Undo> undo_;
  Value* second_ = nullptr;  // op(): a second result (split's second key)
};

}  // namespace ab::jit::detail
