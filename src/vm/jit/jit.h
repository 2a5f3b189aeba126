// Block compilation for the stack VM: a run of a block's scalar
// elementwise instructions (a "segment") becomes one native loop over a
// chunk of lanes, compiled at run time with LLVM 15's ORC JIT. Values stay
// in registers from one instruction to the next; only what outlives the
// segment is stored.
//
// Two forms of a segment:
// - gather: lane j of a Thread slot lives at base[s][idx[j]] (the VM's
//   per-thread `top` arrays, through the chunk's lane list), a Scratch slot
//   at base[s][j], a Shared slot at base[s][0] (loaded once). Used for any
//   block; the loop stays scalar (AVX2 has no scatter) but fused.
// - dense: every Thread slot is a dense per-chunk array base[s][j]; lanes
//   with active[j] == 0 are frozen (their stores write the old value back),
//   and after the body active[j] keeps only the lanes whose branch condition
//   stays in the block. This is the body of a persistent loop (a block that
//   branches back to itself); with masks instead of branches and no
//   aliasing between slots, LLVM vectorises it (AVX2 where the host has it).
//   A Thread slot with `tensor` set is read only (get, size): its dense
//   array holds each lane's event address (the VM's per-thread tensor).
// A third form takes a whole block that is not a loop, pushes, pops and
// terminator included (BlockFn, below): recursion's short blocks.
//
// Arithmetic is exactly that of the kernels (src/vm/kernels_*.cpp): integers
// wrap, div/mod floor as Python does, float math calls the same C library
// functions, float min/max propagate NaN the same way. A check that fails
// (integer division or mod by zero, a cast of NaN or an out-of-range float
// to an integer) only raises a flag: the VM then restores the segment's
// outputs and runs the same instructions through the kernels, which report
// the exact error (lane and message) the interpreter gives.
//
// One LLJIT per process, created on first use (std::call_once) and safe to
// use from several threads (one VM run per thread); each program's code is
// one module with its own resource tracker, freed with its Code object.
// Without LLVM (AUTOBATCH_JIT off) available() is false and compile() fails.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/type.h"

namespace ab::jit {

// Whether this build has the JIT (and LLVM initialised on this host).
bool available();

enum class SlotKind : uint8_t {
  Thread,   // a per-thread variable (gather: through idx; dense: a chunk array)
  Scratch,  // a temporary of the chunk, lane j at j
  Shared,   // one value for every lane; read only
};

struct Slot {
  DType dtype = DType::I64;
  SlotKind kind = SlotKind::Thread;
  bool keep = true;  // a Scratch slot written here that is read after the segment
  // A tensor of this event shape (C order). Gather form: its lanes' events
  // are base[s][i * elems ...]; compiled code reads and writes them in
  // memory, never in registers. Dense form: read only (get, size), a Thread
  // slot's dense array holding each lane's event address.
  bool tensor = false;
  // Block forms: a Scratch tensor that a get of a row writes and only gets
  // and sizes read (StackVM::row_view). It has no memory of its own: its
  // event is the address of that row in the source's event.
  bool view = false;
  std::vector<int64_t> shape;
  int64_t elems() const {
    int64_t e = 1;
    for (int64_t d : shape) e *= d;
    return e;
  }
};

struct Arg {
  int32_t slot = -1;  // a slot, or (slot < 0) a constant:
  DType dtype = DType::I64;
  uint64_t bits = 0;  // the constant's bytes, little-endian
};

// Block form: how a whole block ends (its terminator).
enum class Exit : uint8_t {
  Goto,    // every lane goes on to one block (the VM moves the list)
  Branch,  // lanes split on the bool slot `cond`
  Call,    // push_goto: each lane pushes `ret_pc` on its pc stack
  Return,  // indirect_goto: each lane pops its pc stack
};

// The VM's per-lane stacks (vm/lane_stack.h) hold their first kFlatLevels
// levels in rows the compiled code addresses directly. The chain holds at
// most that many levels of each stack, fewer when it has many stacks
// (Tuning::chain_stack_words), never fewer than kChainMinLevels.
constexpr uint32_t kFlatLevels = 2048;
constexpr uint32_t kChainMinLevels = 256;

// Gather form: an op that compiled code hands back to the VM for all the
// segment's lanes at once (a batched kernel, a pop, a value computed once
// for every thread). base[slots + 2c] is this function and base[slots + 2c
// + 1] its context, for the segment's c-th call; it returns nonzero if it
// failed (the VM then restores the segment's outputs and reruns it op at a
// time, or reports the error the call kept).
using CallFn = int64_t (*)(void* ctx, const uint32_t* idx, int64_t n);

struct FOp {
  // Push and Pop (block form only): the full variable whose top is slot
  // outs[0] pushes its top onto stack `stack` (the op writing its new top
  // follows) or pops the stack into its top. Call (gather form only): the
  // segment's call `stack` (CallFn above); `fails`: it may fail. The values
  // compiled code holds are in memory before a call and read again after it.
  enum class Kind : uint8_t { Compute, Push, Pop, Call };
  Kind kind = Kind::Compute;
  int32_t stack = -1;
  bool fails = false;
  bool copy = false;  // out[0] = args[0]
  PrimId prim = PrimId::Add;
  DType cast_to = DType::I64;  // Cast only
  std::vector<Arg> args;
  std::vector<int32_t> outs;
};

struct Segment {
  std::vector<Slot> slots;
  std::vector<FOp> ops;
  // Gather form only: the number of Call ops (numbered 0, 1, ...).
  int32_t calls = 0;
  // Dense form only: the branch condition's slot and the value that stays.
  int32_t cond = -1;
  bool stay_on_true = true;
  // Dense form only: > 1 also compiles a DenseMultiFn running the body this
  // many times per lane (values in registers between iterations). Only for
  // bodies where no op may fail.
  int32_t copies = 1;
  // Block form only: how the block ends, the stacks its Push and Pop ops
  // use, and (Call) the block the new frame returns to.
  Exit exit = Exit::Goto;
  int32_t stacks = 0;
  uint32_t ret_pc = 0;
  // Block form, for the chain (ChainFn): the block's own index (its pc) and
  // where it goes: Goto, `target`; Branch, `target` if the condition holds,
  // else `target2`; Call, the callee `target`.
  uint32_t pc = 0;
  uint32_t target = 0, target2 = 0;
  // Block form, with compile()'s `chain`: part of the chain (else a BlockFn
  // of its own, a block run a chunk per call while others are chained).
  bool chained = true;
  // Block form, for the chain: which variable each slot and each stack is
  // (the same number in every block for the same storage), so that the
  // chain keeps one value per variable in registers from block to block.
  std::vector<int32_t> slot_var, stack_var;
};

// Whether `op` with these operand dtypes (all scalar) can be compiled.
bool supported(PrimId op, const std::vector<DType>& args, DType out);
// Whether `op` on these operand and result types (at least one a tensor)
// compiles inline in the gather form, as a loop over the event: the
// elementwise primitives (NumPy broadcasting), get, set, size and reshape.
// The other primitives are called as their batched kernel (FOp::Kind::Call).
bool supported_tensor(PrimId op, const std::vector<TensorType>& args, const TensorType& out);
// Whether an op may fail at run time (and so needs the restore path).
bool may_fail(const FOp& op, const std::vector<Slot>& slots);
// Per node of a graph (next[v]: v's successors), the number of the cycle of
// two or more nodes it lies on (its strongly connected component; edges from
// a node to itself do not count), or -1.
std::vector<int64_t> cycle_components(const std::vector<std::vector<uint32_t>>& next);
// Whether an op compiles to a call of a C function (the C library's math,
// the scalar samplers of normal, gamma, poisson, exponential's log1p): a
// loop body holding one is not vectorised by LLVM, so it runs lane by lane.
bool calls_c(const FOp& op, const std::vector<Slot>& slots);

// Returns 0, or 1 if some lane's check failed.
using GatherFn = int64_t (*)(void* const* base, const uint32_t* idx, int64_t n);
// The active mask of a dense body: one word per lane, 1 (active) or 0. A
// word as wide as the values keeps the mask in the vector registers the
// values use (a byte mask costs a pack and an unpack per operation on AVX2).
using ActiveWord = int64_t;
// Returns the number of lanes still active; *failed = 1 if an active lane's
// check failed (then the outputs are unspecified).
using DenseFn = int64_t (*)(void* const* base, int64_t n, ActiveWord* active, int64_t* failed);

// Runs `copies` iterations of a dense body (the Segment's) on every lane:
// a lane whose branch condition leaves the block in iteration k is frozen
// from then on. counts[k] (k < copies) = the lanes active entering iteration
// k. Returns the number of lanes still active. No op may fail.
using DenseMultiFn = int64_t (*)(void* const* base, int64_t n, ActiveWord* active, int64_t* counts);

// A window of one lane (lane 0 of the dense arrays): up to `limit` (>= 1)
// iterations of the body, stopping after the one whose branch condition
// leaves the block; its values stay in registers throughout (no mask, no
// select), as in code written for one thread. Returns the iterations run;
// active[0] = 0 if the lane left. No op may fail.
using DenseSoloFn = int64_t (*)(void* const* base, int64_t limit, ActiveWord* active);

// Block form: a whole block that is not a loop (its ops, the pushes and pops
// of full variables, its terminator) as one loop over the chunk's lane list,
// for recursion, whose blocks are short. Slots as in the gather form; after
// the slots, base holds three entries per stack k < stacks and then three
// for the pc stack: the per-lane depth (uint32_t*), the rows of the first
// kFlatLevels levels (Word* const*: uint64_t words of variables, uint32_t
// pcs) and the number of rows allocated (const uint32_t*). The code touches
// rows only: it stops before the first lane that would need a row not yet
// allocated (*done = the lanes run, in list order; the VM interprets the
// rest). No op may fail. Returns, by exit, for the lanes run: Branch, the
// number whose condition holds (listed in out_a, the others in out_b); Call,
// the deepest pc depth before the push; Return, 0, each lane's return block
// in out_a[j]; Goto, 0.
using BlockFn = int64_t (*)(void* const* base, const uint32_t* idx, int64_t n, uint32_t* out_a,
                            uint32_t* out_b, int64_t* done);

// The chain (persistent schedule, programs with calls): every block compiled
// whole, in one function. Each lane of the list starts at block `start` and
// runs on, block after block, as code written for one thread would, until
// it reaches a block that is not in the chain (out_pc[j] = that block's
// index; the halt mark UINT32_MAX when its last frame returned), has
// entered limits[0] blocks that a call or a backward jump leads to (the
// budget: every endless path passes such blocks; out_pc[j] = the next
// block), or fails a block's check before changing anything in it
// (out_pc[j] = that block | kChainStuck: it would go deeper than
// Code::chain_levels, pop an empty stack, or, calling, already has the
// `chain_frames` frames given to compile(); the VM interprets that block
// for it). The VM makes all kFlatLevels rows of every stack the chain uses
// before calling it. A lane whose stack is deeper than Code::chain_levels
// (L) when it starts holds a window of it instead: its levels from D - L/2
// on (D, its depth), read and written back through the stack's own get/put
// (ab_chain_window32/64), so the chain runs L/2 levels above and below
// where it started; the pc stack's lowest entry in the window is then
// kWindowMark, and a lane that returns to it leaves with the block it
// really returns to. A lane is stuck at `start` only when that window's top
// would pass `chain_frames`. A call whose callee starts with a few blocks
// that may return (fib's `n <= 1`) jumps to a copy of them made for that
// call site, whose return goes straight back there. While in the chain, a
// lane's stack entries live in local arrays, copied from and back to the
// rows when it starts and leaves. bases[k]: the base (BlockFn) of the k-th
// block given to compile(). Returns the budget used, over all lanes.
constexpr uint32_t kChainStuck = 0x80000000u;
// The chain's return block for a frame below a lane's window of its pc
// stack (emit_chain.cpp): never a block index, never seen by the VM.
constexpr uint32_t kWindowMark = 0x7ffffffeu;
// Or'ed into compile()'s chain_frames: the chain counts, per block, the
// times lanes went on into it from another block of the chain (a lane's
// first block is the VM's step), and adds them to the int64_t array whose
// address is limits[1] (in the order of the blocks given to compile()),
// and raises the entry after them to the deepest pc stack a call of a lane
// left behind: --stats, which counts the work and the peak stack depth of
// every mode.
constexpr uint32_t kChainCounts = 0x80000000u;
using ChainFn = int64_t (*)(void* const* const* bases, const uint32_t* idx, int64_t n,
                            int64_t start, uint32_t* out_pc, const int64_t* limits);

class Code {
 public:
  virtual ~Code() = default;
  std::vector<GatherFn> gather;           // one per requested gather segment
  std::vector<DenseFn> dense;             // one per requested dense segment
  std::vector<DenseMultiFn> dense_multi;  // per dense segment: null unless copies > 1
  std::vector<DenseSoloFn> dense_solo;    // per dense segment: null unless copies > 1
  std::vector<BlockFn> block;             // one per requested block
  ChainFn chain = nullptr;                // the requested blocks chained (if asked for)
  size_t chain_copy_sites = 0;            // calls that jump to copies of the callee's first blocks
  uint32_t chain_levels = kFlatLevels;    // levels the chain holds of each stack (<= kFlatLevels)
  double seconds = 0;                     // wall time of code generation and compilation
  std::string detail;                     // where that time went
};

// Compiles every segment into one module at O2 for the host CPU (so with
// AVX2 where the host has it). Null and *error set if LLVM fails (the VM then
// interprets). The code is cached for the process, keyed by the segments: a
// program run again (benchmarks, a batch sharded over threads) compiles once
// (*cached tells; `seconds` is then the first compilation's). With `chain`
// (the blocks that calls return to, in the whole program), the `blocks`
// marked `chained` become one ChainFn, the others a BlockFn each (in
// Code::block, in their order); a thread
// with `chain_frames` frames (the stack bound, --max-stack-depth) is stuck
// at a call, a constant in the code.
std::shared_ptr<const Code> compile(const std::vector<Segment>& gather,
                                    const std::vector<Segment>& dense,
                                    const std::vector<Segment>& blocks,
                                    const std::vector<uint32_t>* chain, uint32_t chain_frames,
                                    std::string* error, bool* cached);

// A compilation on the JIT's background thread (compile_in_background):
// ready() once it has finished, then code(), null if LLVM failed (error()).
class Pending {
 public:
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // Blocks until ready().
  void wait() const {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return ready(); });
  }
  // After ready().
  const std::shared_ptr<const Code>& code() const { return code_; }
  const std::string& error() const { return error_; }

  // The compiler's side: the result, once.
  void finish(std::shared_ptr<const Code> code, std::string error) {
    {
      std::lock_guard<std::mutex> lock(m_);
      code_ = std::move(code);
      error_ = std::move(error);
      ready_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }

 private:
  std::atomic<bool> ready_{false};
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const Code> code_;
  std::string error_;
};

// compile() on the process's background thread, for tiered runs (the stack
// VM interprets while the code compiles, docs/engine.md, "Tiered
// execution"): returns at once. Code in the cache gives a Pending that is
// ready already (*cached = true); a module being compiled for another run
// (the same key) is shared, not compiled twice. The finished code goes into
// the cache whether or not anyone still waits for it, so a run that ended
// before it was ready leaves it to the next run of the program. The thread
// is started on first use and lives as long as the process: its owner, a
// static object, is destroyed at exit after it has joined the thread (a
// compilation already started is finished, the queued ones are dropped);
// in a child made by fork() the queue starts empty, and if a thread was
// compiling at the fork the child compiles nothing (LLVM's locks may be held
// by a thread it does not have): its runs are interpreted.
std::shared_ptr<const Pending> compile_in_background(const std::vector<Segment>& gather,
                                                     const std::vector<Segment>& dense,
                                                     const std::vector<Segment>& blocks,
                                                     const std::vector<uint32_t>* chain,
                                                     uint32_t chain_frames, bool* cached);

// Whether a compilation is queued or under way (in the background or for
// another run): a process that exits now waits for it in its exit handlers.
// The CLI then ends with std::_Exit once its outputs are flushed.
bool compiling();

// Tests only: while held, the background thread starts no compilation (a
// run meanwhile finishes interpreted, as if the compiler were slow);
// releasing it lets the queue go on. (AUTOBATCH_JIT_DELAY_MS delays each
// background compilation instead, for a whole process.)
void hold_background(bool hold);
// Blocks until no compilation is queued or under way (tests, and
// autobatch::wait_for_background_compiles before a process exits).
void wait_idle();

}  // namespace ab::jit
