// The chain form of the JIT (ChainFn in jit.h): every block of a program
// with calls in one function, a lane running from block to block as code
// written for one thread does, with its variables and stack entries in
// registers and local arrays while it stays in the chain.
#include <map>
#include <optional>
#include <set>

#include "vm/jit/gen.h"
#include "vm/tuning.h"

namespace ab::jit::detail {

using namespace llvm;

namespace {

// The chain copies a callee's first blocks for each call site when they are
// at most this many blocks and instructions (see Gen::chain; vm/tuning.h).
constexpr size_t kCopyBlocks = static_cast<size_t>(kTuning.chain_copy_blocks);
constexpr size_t kCopyOps = static_cast<size_t>(kTuning.chain_copy_ops);

}  // namespace

// The chain (ChainFn): every block of `blocks` in one function. A lane
// goes from block to block as code written for one thread does: a goto,
// branch or call jumps straight to its target's code, and each return
// has its own switch over the blocks calls return to (so the CPU
// predicts each jump on its own). Every block's code starts by counting
// the lane's budget and checking its stacks.
Function* Gen::chain(const std::vector<Segment>& blocks, const std::vector<uint32_t>& return_to,
                     uint32_t frames, const std::string& name, bool count_runs) {
  Type* i64 = b_.getInt64Ty();
  Type* i32 = b_.getInt32Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  // The function for one lane (its slot index and first block), called per
  // lane of the list by the ChainFn below: kept apart so that the list's
  // loop takes no registers from the lane's values. It returns the budget
  // it used times 2^32 plus its out_pc. Only `bases` and the slot index
  // stay live throughout: what the lane's exit needs besides (the VM's
  // arrays) is loaded again there, so the hot path keeps its registers.
  Function* fn = Function::Create(FunctionType::get(i64, {ptr, i64, i64, ptr}, false),
                                  Function::InternalLinkage, name + ".lane", m_);
  fn->addFnAttr(Attribute::NoUnwind);
  fn->addFnAttr(Attribute::NoInline);
  Function* outer = Function::Create(FunctionType::get(i64, {ptr, ptr, i64, i64, ptr, ptr}, false),
                                     Function::ExternalLinkage, name, m_);
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
    Type* reg = nullptr;      // the alloca's type, if wider (a depth: i64, so no index widens it)
    bool written = false;     // stored back (a variable no block writes may be a read-only input)
    size_t blk = 0, pos = 0;  // mem is entry `pos` of block blk's base
  };
  std::map<int32_t, Home> tops, depths;  // by variable; depths[-1]: the pc stack
  // Each stack's entries, while the lane is in the chain: a local array
  // (chain_levels_ + 1 words; entry i+off is row level i, off = 1 for a
  // variable's stack, whose push at depth 0 writes a dummy entry 0, and 0
  // for the pc stack), copied in when the lane starts and back when it
  // leaves. A push or pop is then one access at a fixed offset from the
  // frame, with no row table and no lane index.
  std::map<int32_t, Value*> bufs;
  std::map<int32_t, StackPtrs> stack_of;  // by variable: one set of pointers for every block
  std::map<int32_t, std::pair<size_t, size_t>> rows_at;  // by variable: its rows' (blk, pos)
  // The variable whose stack is block k's stack st: -1 for the pc stack
  // (the last), none for a stack the block does not name.
  auto stack_var = [&](size_t k, size_t st) -> std::optional<int32_t> {
    if (st + 1 == ctx[k].stacks.size()) return -1;
    if (st < blocks[k].stack_var.size()) return blocks[k].stack_var[st];
    return std::nullopt;
  };
  // The levels each local array holds: Tuning::chain_stack_words over the
  // number of stacks, within [kChainMinLevels, kFlatLevels].
  {
    std::set<int32_t> vars;
    for (size_t k = 0; k < blocks.size(); ++k)
      for (size_t st = 0; st < ctx[k].stacks.size(); ++st)
        if (auto v = stack_var(k, st)) vars.insert(*v);
    const int64_t each =
        kTuning.chain_stack_words / std::max<int64_t>(1, static_cast<int64_t>(vars.size()));
    chain_levels_ = static_cast<uint32_t>(
        std::clamp<int64_t>(each, int64_t{kChainMinLevels}, int64_t{kFlatLevels}));
  }
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Segment& s = blocks[k];
    BlockCtx& c = ctx[k];
    for (size_t st = 0; st < c.stacks.size(); ++st) {
      const std::optional<int32_t> at = stack_var(k, st);
      if (!at) continue;
      const int32_t var = *at;
      // (The VM makes every row first; a push past the local arrays stops.)
      c.stacks[st].ready = b_.getInt32(chain_levels_);
      if (!stack_of.count(var)) rows_at[var] = {k, s.slots.size() + 3 * st + 1};
      c.stacks[st] = stack_of.emplace(var, c.stacks[st]).first->second;
    }
    c.slot_home.assign(s.slots.size(), nullptr);
    c.depth_home.assign(c.stacks.size(), nullptr);
    c.buf_home.assign(c.stacks.size(), nullptr);
    for (size_t i = 0; i < s.slots.size(); ++i) {
      // (A tensor stays in memory: get and size read the lane's event.)
      if (s.slots[i].kind != SlotKind::Thread || s.slots[i].tensor || i >= s.slot_var.size())
        continue;
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
    for (const FOp& o : s.ops) {
      if (o.kind == FOp::Kind::Push) continue;
      for (int32_t out : o.outs)  // (split writes two)
        if (static_cast<size_t>(out) < s.slot_var.size() && s.slots[out].kind == SlotKind::Thread &&
            !s.slots[out].tensor)  // (a tensor is written in memory: set)
          tops[s.slot_var[out]].written = true;
    }
    for (size_t st = 0; st < c.stacks.size(); ++st) {
      const std::optional<int32_t> at = stack_var(k, st);
      if (!at) continue;
      const int32_t var = *at;
      const bool pc = var < 0;
      Home& h = depths[var];
      if (!h.at) {
        h.type = i32;
        h.reg = i64;
        h.at = b_.CreateAlloca(i64);
        h.mem = c.stacks[st].depth;
        h.blk = k;
        h.pos = s.slots.size() + 3 * st;
        h.written = true;
        bufs[var] = b_.CreateAlloca(ArrayType::get(pc ? i32 : i64, chain_levels_ + 1));
      }
      c.depth_home[st] = h.at;
      c.buf_home[st] = bufs[var];
    }
  }
  // A call needs fewer frames than the pc stack's rows and the bound (a
  // constant: one register fewer on the hot path).
  Value* call_limit = b_.getInt64(std::min<uint32_t>(frames, chain_levels_));
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
  // --stats (kChainCounts): per block, the lane's entries into it from
  // within the chain (its first block is the VM's step), in registers until
  // the lane leaves. A lane stuck at a block it entered is counted there:
  // the interpreter runs the block for it within the same step.
  // And the lane's deepest pc stack after a call (the peak stack depth
  // --stats reports), also in a register until it leaves.
  std::vector<Value*> entered;
  Value* peak = nullptr;
  if (count_runs) {
    IRBuilder<> eb(entry, entry->begin());
    for (size_t k = 0; k < blocks.size(); ++k) entered.push_back(eb.CreateAlloca(i64));
    peak = eb.CreateAlloca(i64);
    for (Value* a : entered) eb.CreateStore(eb.getInt64(0), a);
    eb.CreateStore(eb.getInt64(0), peak);
  }
  auto count_entry = [&](IRBuilder<>& eb, size_t k, int64_t by) {
    if (entered.empty()) return;
    Value* was = eb.CreateLoad(i64, entered[k]);
    eb.CreateStore(eb.CreateAdd(was, eb.getInt64(static_cast<uint64_t>(by))), entered[k]);
  };
  auto edge = [&](Value* pc, Value* r, bool first = false) {
    BasicBlock* e = BasicBlock::Create(ctx_, "edge", fn, stop);
    IRBuilder<> eb(e);
    auto* c = dyn_cast<ConstantInt>(pc);
    auto it = c ? at.find(static_cast<uint32_t>(c->getZExtValue())) : at.end();
    if (it != at.end()) {
      if (!first) count_entry(eb, it->second, 1);
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

  // Each stack's window. A lane's stack that fits in its local array is
  // held there whole (base 0). A deeper one keeps its levels below a base
  // in the VM's stack and brings half an array's worth above it (for a
  // variable's stack, from the level below the base: its entry 0), so a
  // recursion thousands of levels deep stays in compiled code. The lane
  // stops when it fills the array or would pop a variable below the base
  // (the interpreter runs that one block), or when it returns through the
  // pc window's entry 0, which holds kWindowMark in place of its frame
  // (the lane leaves with that frame's return block, as a return in the
  // chain does, with no check on the hot path); the next step brings a new
  // window. While in the chain its depth homes hold depths within the
  // window. A lane whose window would pass the frames allowed is the
  // interpreter's (stuck at its first block).
  std::map<int32_t, Value*> window;  // by variable: its base level (i64)
  Value* mark_below = nullptr;       // the return block kWindowMark stands for (i32)
  BasicBlock* too_deep = BasicBlock::Create(ctx_, "too_deep", fn);
  {
    Value* fits = b_.getTrue();
    const uint64_t half = chain_levels_ / 2;
    for (auto& [v, buf] : bufs) {
      const bool pc = v < 0;
      Value* d = b_.CreateLoad(i64, depths.at(v).at);
      Value* deep = b_.CreateICmpUGT(d, b_.getInt64(chain_levels_ + (pc ? 0 : 1)));
      Value* base = b_.CreateSelect(deep, b_.CreateSub(d, b_.getInt64(half)), b_.getInt64(0));
      window[v] = base;
      if (pc)
        fits = b_.CreateAnd(fits, b_.CreateOr(b_.CreateNot(deep),
                                              b_.CreateICmpULE(b_.CreateAdd(d, b_.getInt64(half)),
                                                               b_.getInt64(frames))));
      b_.CreateStore(b_.CreateSub(d, base), depths.at(v).at);
    }
    for (size_t k = 0; k < blocks.size(); ++k) {
      ctx[k].base_home.assign(ctx[k].stacks.size(), nullptr);
      for (size_t st = 0; st < ctx[k].stacks.size(); ++st)
        if (auto v = stack_var(k, st)) ctx[k].base_home[st] = window.at(*v);
    }
    BasicBlock* copy = BasicBlock::Create(ctx_, "copy_in", fn, stop);
    b_.CreateCondBr(fits, copy, too_deep);
    b_.SetInsertPoint(too_deep);
    b_.CreateRet(b_.CreateZExt(b_.CreateOr(start_pc, b_.getInt32(kChainStuck)), i64));
    b_.SetInsertPoint(copy);
    for (auto& [v, buf] : bufs) {
      const auto& [blk, pos] = rows_at.at(v);
      copy_window(buf, stack_of.at(v).rows, reload(blk, pos + 1), window.at(v),
                  b_.CreateLoad(i64, depths.at(v).at), v < 0, true);
    }
    Value* entry0 = local_entry(bufs.at(-1), b_.getInt64(0), true);
    mark_below = b_.CreateLoad(i32, entry0);
    b_.CreateStore(b_.CreateSelect(b_.CreateICmpNE(window.at(-1), b_.getInt64(0)),
                                   b_.getInt32(kWindowMark), mark_below),
                   entry0);
  }
  // Loops: a cycle of blocks entered (from outside it) at one block only,
  // its header, is entered there only in this code too, so that LLVM sees a
  // loop it can optimise (values it computes once, induction variables); a
  // lane that starts inside such a loop (after a pause or a block left to
  // the interpreter) runs a copy of the loop's other blocks (`resume`,
  // below) until it reaches the header.
  std::vector<int64_t> cycle;
  std::vector<bool> header;
  {
    std::vector<std::vector<uint32_t>> next(blocks.size());
    std::vector<bool> outside(blocks.size(), false);  // entered from outside its cycle
    auto link = [&](size_t k, uint32_t pc) {
      auto it = at.find(pc);
      if (it != at.end()) next[k].push_back(static_cast<uint32_t>(it->second));
    };
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Segment& s = blocks[k];
      if (s.exit == Exit::Goto || s.exit == Exit::Branch) link(k, s.target);
      if (s.exit == Exit::Branch) link(k, s.target2);
      if (s.exit == Exit::Call) {
        link(k, s.ret_pc);
        if (auto it = at.find(s.target); it != at.end()) outside[it->second] = true;
      }
    }
    for (uint32_t r : return_to)
      if (auto it = at.find(r); it != at.end()) outside[it->second] = true;
    cycle = cycle_components(next);
    for (size_t k = 0; k < blocks.size(); ++k)
      for (uint32_t t : next[k])
        if (cycle[t] >= 0 && cycle[t] != cycle[k]) outside[t] = true;
    header.assign(blocks.size(), false);
    std::map<int64_t, int> headers;  // per cycle: its blocks entered from outside
    for (size_t k = 0; k < blocks.size(); ++k)
      if (cycle[k] >= 0 && outside[k]) ++headers[cycle[k]];
    for (size_t k = 0; k < blocks.size(); ++k)
      if (cycle[k] >= 0) header[k] = outside[k] || headers[cycle[k]] != 1;
  }
  auto resumed = [&](size_t k) { return cycle[k] >= 0 && !header[k]; };
  SwitchInst* first = nullptr;
  {
    BasicBlock* other = BasicBlock::Create(ctx_, "edge", fn, stop);
    first = b_.CreateSwitch(start_pc, other, static_cast<unsigned>(blocks.size()));
    for (size_t k = 0; k < blocks.size(); ++k)
      if (!resumed(k))
        first->addCase(b_.getInt32(blocks[k].pc), edge(b_.getInt32(blocks[k].pc), budget, true));
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
  using CopySet = std::map<uint32_t, Copy>;                 // by pc
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
      fits = fits && cycle[it->second] < 0;  // (a loop is entered at its header only)
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
    count_entry(eb, c.k, 1);
    eb.CreateBr(c.enter);
    c.runs->addIncoming(r, e);
    return e;
  };

  // The resume copies: per cycle with one header, its other blocks; a goto
  // or branch to one of them stays in the copy, to the header goes to the
  // shared code. The entry switch sends a lane starting at one of them there.
  std::map<int64_t, CopySet> resume;
  for (size_t k = 0; k < blocks.size(); ++k) {
    if (!resumed(k)) continue;
    Copy c;
    c.k = k;
    c.enter = BasicBlock::Create(ctx_, "resume_enter", fn, stop);
    c.check = BasicBlock::Create(ctx_, "resume_check", fn, stop);
    b_.SetInsertPoint(c.enter);
    c.runs = b_.CreatePHI(i64, 2);
    resume[cycle[k]][blocks[k].pc] = c;
  }
  for (auto& [cyc, set] : resume)
    for (auto& [pc, c] : set) {
      BasicBlock* e = BasicBlock::Create(ctx_, "edge", fn, stop);
      IRBuilder<> eb(e);
      eb.CreateBr(c.enter);
      c.runs->addIncoming(budget, e);
      first->addCase(b_.getInt32(pc), e);
    }

  std::vector<std::pair<BasicBlock*, Value*>> stuck;  // (a stuck block, the lane's runs)
  std::vector<uint32_t> stuck_pc;                     // its out_pc
  // Block k's code from `enter` (whose PHI `runs` has the lane's budget
  // left): the budget, `check`, the body and the exit. `set` is the copy
  // set it belongs to (a goto or branch to a block of the set stays in
  // it, and a return goes to `ret_to`), or null for the shared code.
  auto emit = [&](size_t k, BasicBlock* enter_k, PHINode* runs_k, BasicBlock* check_k, CopySet* set,
                  uint32_t ret_to) {
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
    if (counted.count(s.pc)) {
      // Out of budget: the lane stops before the block, which a later step
      // runs (so its entry is not counted here).
      BasicBlock* spent = edge_to_stop(stop, stop_pc, stop_runs, s.pc, runs_k, fn);
      IRBuilder<> sb(spent->getTerminator());
      count_entry(sb, k, -1);
      b_.CreateCondBr(b_.CreateICmpNE(runs_k, b_.getInt64(0)), check_k, spent);
    } else
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
    std::vector<Value*> depths = stack_depths(ctx[k]);
    block_ops(ctx[k]);
    // A failed check (a bad index): the stacks' depths back and the
    // elements its sets wrote (its slots' values are not stored yet, its
    // calls and returns not made): stuck here, the interpreter runs the
    // block and reports the error.
    if (may_have_failed()) {
      BasicBlock* failed = BasicBlock::Create(ctx_, "failed", fn, stop);
      BasicBlock* ok = BasicBlock::Create(ctx_, "checked", fn, stop);
      b_.CreateCondBr(bad_, failed, ok);
      b_.SetInsertPoint(failed);
      undo_writes();
      restore_depths(depths);
      b_.CreateBr(stuck_k);
      b_.SetInsertPoint(ok);
    }
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
        if (peak) {
          Value* d = b_.CreateAdd(load_depth(pcs), window.at(-1));
          Value* was = b_.CreateLoad(i64, peak);
          b_.CreateStore(b_.CreateSelect(b_.CreateICmpUGT(d, was), d, was), peak);
        }
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
        SwitchInst* back =
            b_.CreateSwitch(popped, edge(popped, r1), static_cast<unsigned>(returns_to.size()));
        for (uint32_t t : returns_to) back->addCase(b_.getInt32(t), edge(b_.getInt32(t), r1));
        break;
      }
    }
  };
  for (size_t k = 0; k < blocks.size(); ++k) emit(k, enter[k], runs[k], check[k], nullptr, 0);
  copy_sites_ = copies.size();
  for (auto& [key, set] : copies)
    for (auto& [pc, c] : set) emit(c.k, c.enter, c.runs, c.check, &set, key.second);
  for (auto& [cyc, set] : resume)
    for (auto& [pc, c] : set) emit(c.k, c.enter, c.runs, c.check, &set, 0);

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
  // A return through the pc window's mark: on to the frame's return block.
  Value* leave_pc =
      b_.CreateSelect(b_.CreateICmpEQ(out_pc, b_.getInt32(kWindowMark)), mark_below, out_pc);
  // The windows back to the VM's stacks, and the depths with their bases.
  for (auto& [v, buf] : bufs) {
    const auto& [blk, pos] = rows_at.at(v);
    Value* d = b_.CreateLoad(i64, depths.at(v).at);
    copy_window(buf, reload(blk, pos), reload(blk, pos + 1), window.at(v), d, v < 0, false);
    b_.CreateStore(b_.CreateAdd(d, window.at(v)), depths.at(v).at);
  }
  homes(false);
  if (!entered.empty()) {
    Value* counts = b_.CreateIntToPtr(
        b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, limits, 1)), ptr);
    for (size_t k = 0; k < blocks.size(); ++k) {
      Value* at_k = b_.CreateConstGEP1_64(i64, counts, k);
      b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64, at_k), b_.CreateLoad(i64, entered[k])), at_k);
    }
    Value* at_peak = b_.CreateConstGEP1_64(i64, counts, blocks.size());
    Value* was = b_.CreateLoad(i64, at_peak);
    Value* mine = b_.CreateLoad(i64, peak);
    b_.CreateStore(b_.CreateSelect(b_.CreateICmpUGT(mine, was), mine, was), at_peak);
  }
  b_.CreateRet(b_.CreateOr(b_.CreateShl(used, 32), b_.CreateZExt(leave_pc, i64)));

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
void Gen::copy_rows(Value* buf, Value* rows, Value* d, bool pc, bool in) {
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
      ArrayType::get(w, chain_levels_ + 1), buf,
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

// Copies this lane's window of a stack between the VM's stack and the
// chain's local array `buf`: with base 0 (i64) the whole stack at depth d
// (copy_rows); else entries 0 .. d-1 of the array, at levels base .. (the
// pc stack, whose entry 0, the mark, is not copied back) or base-1 .. (a
// variable's), through ab_chain_window, which reaches levels of any
// depth. `head`: the stack's LaneStack::Head.
void Gen::copy_window(Value* buf, Value* rows, Value* head, Value* base, Value* d, bool pc,
                      bool in) {
  Type* i64 = b_.getInt64Ty();
  Type* ptr = PointerType::get(ctx_, 0);
  Function* fn = b_.GetInsertBlock()->getParent();
  BasicBlock* whole = BasicBlock::Create(ctx_, "whole", fn);
  BasicBlock* part = BasicBlock::Create(ctx_, "window", fn);
  BasicBlock* done = BasicBlock::Create(ctx_, "windowed", fn);
  b_.CreateCondBr(b_.CreateICmpEQ(base, b_.getInt64(0)), whole, part);
  b_.SetInsertPoint(whole);
  copy_rows(buf, rows, d, pc, in);
  b_.CreateBr(done);
  b_.SetInsertPoint(part);
  FunctionCallee f = m_.getOrInsertFunction(
      pc ? "ab_chain_window32" : "ab_chain_window64",
      FunctionType::get(b_.getVoidTy(), {ptr, i64, i64, i64, ptr, i64}, false));
  Value* level = pc ? base : b_.CreateSub(base, b_.getInt64(1));
  Value* from = buf;
  if (pc && !in) {  // entry 0 is the mark: its level is as it was
    level = b_.CreateAdd(level, b_.getInt64(1));
    d = b_.CreateSelect(b_.CreateICmpEQ(d, b_.getInt64(0)), d, b_.CreateSub(d, b_.getInt64(1)));
    from = local_entry(buf, b_.getInt64(1), true);
  }
  b_.CreateCall(f, {head, slot_index_, level, d, from, b_.getInt64(in ? 1 : 0)});
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

// An edge into `stop` for a lane whose budget ran out at block pc.
BasicBlock* Gen::edge_to_stop(BasicBlock* stop, PHINode* stop_pc, PHINode* stop_runs, uint32_t pc,
                              Value* r, Function* fn) {
  BasicBlock* e = BasicBlock::Create(ctx_, "spent", fn, stop);
  IRBuilder<> eb(e);
  eb.CreateBr(stop);
  stop_pc->addIncoming(b_.getInt32(pc), e);
  stop_runs->addIncoming(r, e);
  return e;
}

}  // namespace ab::jit::detail
