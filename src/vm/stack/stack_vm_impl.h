// The stack VM's internals (the interface is vm/stack/stack_vm.h, which describes
// the design): the compiled form of blocks (ops, segments, dense loops,
// blocks compiled whole), the storage of variables (leaves), and the class
// StackVM whose member functions are defined by responsibility in this
// folder: storage.cpp (storage plan), compile.cpp (IR to ops), lanes.cpp
// (lanes and stacks), interpreter.cpp, loops.cpp (persistent and dense
// loops), dispatch.cpp (compiled and chained blocks), scheduler.cpp (the run
// loop and the order of blocks), and for compiled code jit_ops.cpp (which ops
// compile, in which form), jit_segments.cpp (blocks as jit::Segment),
// jit_plan.cpp (each block's facts and the plan) and jit_build.cpp
// (compiling, wiring the code to the blocks). Functions called per lane stay
// inline here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/lowered_names.h"
#include "ir/type_info.h"
#include "passes/sharing.h"
#include "support/env_options.h"
#include "support/log.h"
#include "vm/coalesce.h"
#include "vm/jit/jit.h"
#include "vm/kernels/kernel.h"
#include "vm/lane_stack.h"
#include "vm/literal.h"
#include "vm/run.h"
#include "vm/slots.h"
#include "vm/stack/plan.h"
#include "vm/tuning.h"

namespace ab::stack {

// Short names for the tuning constants (vm/tuning.h) the code uses most.
constexpr int64_t kChunk = kTuning.chunk;
constexpr int32_t kMaxCopies = kTuning.max_copies;
constexpr uint32_t kHalt = UINT32_MAX;  // a return to no block: the thread is done

// One tensor leaf of one variable, stored by its class.
struct Leaf {
  std::string var;
  StorageClass cls = StorageClass::Register;
  bool shared = false;
  bool shared_ready = false;
  bool borrowed = false;  // `top` is the caller's input array, read in place (never written)
  TensorType type;
  size_t ebytes = 0;
  Buffer top;                  // register/full: one event per lane; shared: one event
  Buffer scratch;              // temporary/null: one event per lane of a chunk
  PoolVector<uint32_t> depth;  // full: stack depth per thread (the top included)
  LaneStack<uint64_t> below;   // full: the values below the top, in 8-byte words
  size_t words = 0;            // words per event
  bool full() const { return cls == StorageClass::Full && !shared; }
  bool in_scratch() const {
    return !shared && (cls == StorageClass::Temporary || cls == StorageClass::Null);
  }
};

struct Ref {
  int32_t leaf = -1;      // a variable's leaf, or
  int32_t constant = -1;  // a literal
};

struct Out {
  int32_t leaf;
  bool in_place;
};

struct Op {
  enum class Kind : uint8_t { Kernel, Copy, Pop };
  Kind kind = Kind::Kernel;
  KernelFn fn = nullptr;
  PrimId prim = PrimId::Tuple;
  PrimAttrs attrs;
  std::vector<Ref> args;
  std::vector<Out> outs;
  std::vector<int32_t> pops;
  bool shared = false;  // computes values stored once: runs once
  SourceLoc loc;
};

// An op that a compiled segment hands back to the VM for its lanes
// (jit::CallFn's context): a batched kernel, a pop, a value computed once.
struct SegCall {
  class StackVM* vm = nullptr;  // bound per run (bind_blocks)
  uint32_t block = 0;
  uint32_t op = 0;  // the op's index in the block
};

// A run of a block's ops compiled into one native loop (gather form).
struct Seg {
  size_t first = 0, last = 0;  // ops [first, last)
  jit::GatherFn fn = nullptr;
  // Per slot: where its values live; then two entries per call (jit.h,
  // CallFn: StackVM::seg_call and its SegCall), bound per run.
  std::vector<void*> base;
  std::vector<SegCall> calls;
  size_t call_base = 0;  // the index in base of the first call's entries
  std::vector<int32_t> spills;  // full leaves pushed by the segment's ops: spilled before it
  std::vector<int32_t> thread_out, scratch_out;  // leaves written (saved if it may fail)
  std::vector<int32_t> popped;  // leaves popped (their depths saved too if it may fail)
  // (slot, kRowLeaf or kFirstThreadLeaf): thread_index's operands, bound per run
  std::vector<std::pair<size_t, int32_t>> thread_operands;
  bool may_fail = false;
};

// A block that branches to itself, compiled whole in the dense form.
struct DenseLoop {
  jit::DenseFn fn = nullptr;
  jit::DenseMultiFn multi = nullptr;  // `copies` iterations per call (bodies that cannot fail)
  jit::DenseSoloFn solo = nullptr;    // a window of one lane, until it leaves (the same bodies)
  int32_t copies = 1;
  std::vector<int32_t> slot_leaf;  // per slot: its leaf
  std::vector<jit::SlotKind> kind;
  std::vector<bool> written;
  // Per slot: a per-thread tensor the body reads by index (get, size): its
  // dense array holds each window lane's event address, not a value.
  std::vector<bool> tensor;
  bool may_fail = false;
};

struct CBlock {
  std::vector<Op> ops;
  std::vector<Seg> segs;
  std::vector<int32_t> seg_at;  // per op: the segment starting there, or -1
  int32_t self = -1;            // Branch to itself: 1 if it stays on true, 0 on false
  // A branch on an i64 comparison whose bool is a temporary, made by the
  // block's last op: the terminator compares and splits in one pass and
  // the op is not run (fused_cmp: its PrimId; cmp_a, cmp_b: its operands).
  bool fused_cmp = false;
  PrimId cmp = PrimId::Eq;
  Ref cmp_a, cmp_b;
  DenseLoop dense;
  // The whole block compiled (jit::BlockFn, for blocks that are not loops):
  // its slots' and stacks' leaves; block_base is bound per run (bind_blocks).
  jit::BlockFn block_fn = nullptr;
  std::vector<int32_t> block_slots, block_stacks;
  std::vector<void*> block_base;
  // How the block runs (the plan's mode), and whether a chunk stays in it
  // until its threads leave (a loop block under the persistent schedule).
  ExecMode mode = ExecMode::Interpreted;
  bool persistent_loop = false;
  TermKind term = TermKind::Halt;
  int32_t cond = -1;  // Branch: the condition's leaf (or constant, negative - 2)
  uint32_t t1 = 0, t2 = 0;
  int64_t prims = 0;
  SourceLoc term_loc;
};

struct Constant {
  TensorType type;
  Buffer data;
};

// The code each form of a block would compile, gathered with the block's
// facts before the plan picks one (jit_plan.cpp, jit_segments.cpp).
struct Candidates {
  std::vector<Seg> segs;  // gather segments (not compiled yet)
  jit::Segment dense;     // loop blocks of the dense form
  std::vector<int32_t> dense_slots;
  jit::Segment whole;  // blocks of the whole form
  std::vector<int32_t> whole_slots, whole_stacks;
  bool minor_blocker = false;  // BlockFacts::not_compiled names a pop or a shared op
};

static_assert(LaneStack<uint64_t>::kFlat == jit::kFlatLevels);

class StackVM {
 public:
  StackVM(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
          int64_t n_inputs, const RunOptions& opt)
      : p_(p), inputs_(inputs), n_inputs_(n_inputs), opt_(opt) {
    lanes_ = opt.lanes > 0 ? std::min<int64_t>(opt.lanes, n_inputs) : n_inputs;
    for (size_t i = 0; i < p.blocks.size(); ++i)
      label_index_[p.blocks[i].label.name] = static_cast<uint32_t>(i);
    analyze_sharing();
    make_leaves(types);
    compile(types);
    precompute_shared();
    plan();
  }

  RunResult run();

 private:
  const Program& p_;
  const std::vector<Array>& inputs_;
  int64_t n_inputs_;
  RunOptions opt_;
  int64_t lanes_ = 0;
  // The most lanes a chunk can hold: a temporary's scratch (and the copy
  // kept of a segment's outputs) has a row per lane of the chunk, so a
  // run of 4 chains keeps 4 rows of a data-sized temporary, not kChunk.
  int64_t chunk_lanes() const { return std::clamp<int64_t>(lanes_, 1, kChunk); }
  // The bytes a segment keeps of leaf l's outputs for a chunk (run_seg):
  // a row per lane, rounded up to 8 so that the next leaf's rows, of any
  // dtype, stay aligned.
  size_t saved_stride(int32_t l) const {
    return (leaves_[l].ebytes * static_cast<size_t>(chunk_lanes()) + 7) & ~size_t{7};
  }
  std::string lanes_note_;  // for the log: the lanes chosen (stack_auto_lanes), if fewer
  std::map<std::string, uint32_t> label_index_;
  std::map<std::string, bool> shared_var_;
  std::map<std::string, std::vector<int32_t>> var_leaves_;
  std::map<std::string, uint32_t> slots_leaf_count_;  // variable -> its leaves
  int64_t in_place_bytes_ = 0;  // the bytes of inputs read in place (not copied)
  std::vector<Leaf> leaves_;
  std::vector<Constant> constants_;
  std::vector<CBlock> blocks_;
  std::vector<PoolVector<uint32_t>> wait_;
  std::vector<uint64_t> bits_;
  // The depth order (a program with calls, the persistent schedule): the
  // deepest frames run first, and of them the smallest block, on the
  // threads at that depth only; a thread that returns waits in its
  // caller's frame until every deeper thread has returned, so returns
  // and the callers' next blocks run together (the stackless VM's order,
  // with each frame's threads found by depth). wait_hi_/wait_lo_: the
  // deepest and shallowest depth in each block's list (hints: take_block
  // reads the depths themselves).
  bool depth_order_ = false;
  std::vector<uint32_t> wait_hi_, wait_lo_;
  // In the depth order, a block's threads that a step left waiting (not the
  // deepest) move from wait_[b] into held_[b], one bucket per depth in
  // ascending order, so a later step takes the deepest bucket without
  // scanning the others again: each thread is sorted once per arrival.
  // A block's threads are those of wait_[b] and of held_[b].
  struct DepthBucket {
    uint32_t depth;
    PoolVector<uint32_t> lanes;
  };
  std::vector<std::vector<DepthBucket>> held_;
  std::vector<PoolVector<uint32_t>> spare_;  // emptied buckets' storage, reused
  bool waiting(uint32_t b) const { return !wait_[b].empty() || !held_[b].empty(); }
  void hold(uint32_t b, uint32_t t, uint32_t d, size_t& hint);
  // The order within a depth (persistent schedule): a block waits while
  // a block whose threads may still join it holds threads at the same
  // depth, and a loop header while its loop does (threads going round
  // again wait for those still in the previous iteration: the lowered
  // program has no join after an `if` whose arms both go back to the
  // header). before_[b]: those blocks (bitset). cand_: next_block's
  // scratch.
  std::vector<std::vector<uint64_t>> before_;
  mutable std::vector<uint64_t> cand_;
  void find_loops();
  LaneStack<uint32_t> pcs_;        // program counters: where each frame returns
  PoolVector<uint32_t> pc_depth_;  // per lane: frames, counting the halt at the bottom
  PoolVector<int64_t> lane_input_;
  std::vector<int64_t> thread_ids_;  // thread_index's operand: lane -> its thread
  std::vector<Array> outputs_;
  int64_t next_input_ = 0;
  int64_t live_ = 0;
  int64_t peak_depth_ = 0;
  int64_t step_ = 0;
  int64_t check_at_ = INT64_MAX;  // the step after which checkpoint() runs
  bool cancelled_ = false;
  // The sweep (Tuning::sweep_steps): when due, the blocks with waiting
  // threads each run once (sweep_, popped from the back), and a persistent
  // loop that is running parks its threads at its block (yield_) so that
  // they can.
  int64_t sweep_at_ = kTuning.sweep_steps;
  std::vector<uint32_t> sweep_;
  bool yield_ = false;
  std::vector<RunningThread> running_;  // at a stop: the first threads still running
  // Utilization (docs/engine.md, "Traces and statistics"): a persistent
  // loop's step could have run the threads not finished, less those that
  // left the loop while it runs (parked_: they wait at its exit to run on
  // together, where min-pc would have run them already), at most a chunk.
  int64_t parked_ = 0;
  int64_t loop_could() const { return std::min(live_ - parked_, rounds_ ? live_ : kChunk); }
  bool rounds_ = false;  // run_loop_rounds: a step is a round over all the loop's threads
  bool tracing_ = false;
  // The run counts its steps (--stats, --trace, --max-steps), so its code
  // is compiled before it starts, never tiered: counts must not depend on
  // when the code is ready.
  bool counts_steps() const {
    return opt_.stats || (opt_.trace && opt_.trace->on()) || opt_.max_steps > 0;
  }
  std::vector<uint32_t> trace_threads_, trace_depths_;
  PoolVector<int64_t> lane_steps_;    // --max-steps: blocks the lane's thread started
  std::vector<RuntimeError> failed_;  // --on-error record: the failed threads
  int64_t fail_pos_ = 0;              // execute's failing lane (an index into its list)
  std::vector<int32_t> full_leaves_, output_leaves_;
  std::vector<std::pair<size_t, int32_t>> input_leaves_;  // (input, leaf)
  // The JIT's code for this program (null: interpreted), and per-run buffers
  // of the compiled paths.
  std::shared_ptr<const jit::Code> code_;
  bool cached_ = false;
  std::string jit_log_;
  // Tiered execution (RunOptions::jit_wait false, docs/engine.md): the code
  // compiling in the background. While `tier_`, every block runs
  // interpreted (CBlock::mode) and the plan keeps the modes it chose; at the
  // first step boundary after the code is ready (code_due) the run switches
  // the blocks to them (switch_to_code). `tiered_`: the run started so.
  std::shared_ptr<const jit::Pending> pending_;
  bool tiered_ = false, tier_ = false;
  int64_t switched_at_ = -1;  // the step at which the code came in (tiered)
  // What install_code wires to the compiled functions, kept from build_jit:
  // per gather function its (block, segment), per dense body its block, its
  // slots' leaves and its segment, the blocks compiled whole, and counts for
  // the log.
  struct Wiring {
    std::vector<std::pair<uint32_t, size_t>> gather;
    std::vector<uint32_t> dense, whole;
    std::vector<std::vector<int32_t>> dense_slots;
    std::vector<jit::Segment> dense_segs;
    bool chain = false;
    std::string what;  // "N of M instructions fused into ..."
  } wiring_;
  std::vector<BlockPlan> plan_;                // per block: how it runs, and why
  std::vector<std::byte> saved_;               // a segment's outputs, while it may fail
  std::vector<uint32_t> saved_depth_;          // and the depths of the stacks it pops
  std::optional<RuntimeError> call_error_;     // an error a segment's call reports itself
  std::vector<std::vector<uint64_t>> dense_;   // a dense loop's Thread slots
  std::vector<std::vector<uint64_t>> backup_;  // the same at the iteration's start
  std::vector<void*> dense_base_;
  // The chain (jit::ChainFn): its blocks (those compiled whole, in the order
  // compiled) and their bases for this run. Whether a run chains is
  // the plan's choice (ExecMode::Chained).
  std::vector<uint32_t> chain_blocks_;
  std::vector<void* const*> chain_bases_;
  int64_t chain_calls_ = 0, chain_runs_ = 0, chain_stuck_ = 0, chain_spent_ = 0;  // for the log
  int64_t chain_poll_at_ = kTuning.chain_poll;  // chain_runs_ at which run_chain polls
  std::vector<int64_t> chain_counts_;  // --stats: the chain's runs per block (jit.h, kChainCounts)
  uint32_t ids_[kChunk];
  jit::ActiveWord active_[kChunk];
  jit::ActiveWord active_backup_[kChunk];

  // ---- storage.cpp -------------------------------------------------
  void analyze_sharing();
  std::set<std::string> written_vars() const;
  const Array* borrowable_input(const std::string& var, const TensorType& tt, bool shared,
                                const std::set<std::string>& written) const;
  size_t var_leaf_count(const std::string& var) const;
  void make_leaves(const FunctionTypes& types);
  std::map<std::string, std::string> storage_aliases(const Slots& slots) const;

  // ---- compile.cpp -------------------------------------------------
  void flatten(const Pattern& p, std::vector<Out>& out) const;
  Ref constant(const Literal& lit, const std::optional<Type>& t);
  void compile(const FunctionTypes& types);
  bool same_storage(const Op& op) const;
  bool cmp_operand(const Ref& r, bool allow_constant) const;
  void fuse_compare(CBlock& cb);
  void fold_set_copies(CBlock& cb) const;

  // ---- lanes.cpp ---------------------------------------------------
  void set_shared_inputs();
  void precompute_shared();
  bool shared_done(const Op& op) const;
  void find_start_leaves();
  void start_all_lanes();
  void start_lane(uint32_t t, int64_t input);
  RuntimeError error_at(uint32_t block, SourceLoc loc, uint32_t lane, std::string msg) const;
  uint32_t push_frames(const uint32_t* idx, int64_t n, uint32_t ret);
  std::optional<RuntimeError> called(uint32_t b, uint32_t* idx, int64_t n, uint32_t deepest);
  void returned(const uint32_t* idx, const uint32_t* rets, int64_t n);
  void halt_lanes(const uint32_t* lanes, int64_t n);
  std::optional<RuntimeError> too_deep(uint32_t b, uint32_t* idx, int64_t& n);
  std::optional<RuntimeError> count_steps(uint32_t b, uint32_t* lanes, int64_t& n);
  void halt(uint32_t t);
  void release(uint32_t t);
  void store_outputs(uint32_t t) { store_outputs(&t, 1); }
  void store_outputs(const uint32_t* lanes, int64_t n);

  // ---- interpreter.cpp ---------------------------------------------
  int64_t compare_split(const CBlock& cb, const uint32_t* idx, int64_t n, uint32_t* yes,
                        uint32_t* no) const;
  void spill(Leaf& l, const uint32_t* idx, int64_t n);
  std::optional<RuntimeError> pop(uint32_t b, const Op& op, const uint32_t* idx, int64_t n);
  static void copy_lanes(const ArgView& src, const OutView& dst, int64_t n, size_t eb);
  std::optional<RuntimeError> run_op(uint32_t b, Op& op, uint32_t* idx, int64_t& n);
  void push_copy8(Leaf& l, const ArgView& src, const uint32_t* idx, int64_t n);
  std::optional<RuntimeError> retry(uint32_t b, const Op& op, uint32_t* idx, int64_t& n,
                                    RuntimeError e);
  void drop(uint32_t* idx, int64_t& n, int64_t j, RuntimeError e, bool scratch);
  std::optional<RuntimeError> execute(uint32_t b, const Op& op, const uint32_t* idx, int64_t n,
                                      const uint32_t* lanes, int64_t off = 0);
  std::optional<RuntimeError> interpret(uint32_t b, uint32_t* idx, int64_t n);
  std::optional<RuntimeError> run_ops(uint32_t b, uint32_t* idx, int64_t& n);
  std::optional<RuntimeError> run_seg(uint32_t b, const Seg& s, uint32_t* idx, int64_t& n);

  // ---- loops.cpp ---------------------------------------------------
  std::optional<RuntimeError> run_loop(uint32_t b, const uint32_t* idx, int64_t n, bool counted);
  std::optional<RuntimeError> run_loop_rounds(uint32_t b, PoolVector<uint32_t>& cur);
  PoolVector<uint32_t> round_next_, round_out_;  // run_loop_rounds' lists
  std::optional<RuntimeError> run_dense_loop(uint32_t b, uint32_t* idx, int64_t n);

  // ---- dispatch.cpp ------------------------------------------------
  std::optional<RuntimeError> run_block(uint32_t b, uint32_t* idx, int64_t n, int64_t* done);
  std::optional<RuntimeError> run_chain(uint32_t b, uint32_t* idx, int64_t n);
  std::optional<RuntimeError> run_chunk(uint32_t b, uint32_t* idx, int64_t n);

  // ---- scheduler.cpp -----------------------------------------------
  std::optional<RuntimeError> begin_step(uint32_t b, uint32_t* lanes, int64_t& n,
                                         bool chunk = false);
  std::optional<RuntimeError> checkpoint(uint32_t b, uint32_t lane);
  std::optional<RuntimeError> cancelled(uint32_t b, uint32_t lane);
  void note_running(uint32_t b, uint32_t lane);
  void trace_step(uint32_t b, const uint32_t* lanes, int64_t n, int64_t could);

  // ---- jit_ops.cpp, jit_segments.cpp, jit_plan.cpp, jit_build.cpp ----
  bool scalar_leaf(int32_t l) const;
  DType ref_dtype(const Ref& r) const;
  const TensorType& ref_type(const Ref& r) const;
  bool compilable(const Op& op) const;
  // How an op compiles in a gather segment: per lane on scalars (Lane, as
  // compilable), inline on tensors (Tensor), or handed back to the VM for
  // the segment's lanes (Call: a batched kernel, a custom primitive, a pop,
  // a value computed once for every thread).
  enum class SegForm : uint8_t { None, Lane, Tensor, Call };
  SegForm seg_form(const Op& op) const;
  bool op_may_fail(const Op& op) const;
  std::string per_lane_blocker(const Op& op) const;
  bool dense_read(const Op& op, const CBlock& cb) const;
  bool index_read(const Op& op, const CBlock& cb, bool in_place_sets) const;
  static int64_t seg_call(void* ctx, const uint32_t* idx, int64_t n);
  jit::Segment make_segment(uint32_t bi, size_t first, size_t last, bool dense,
                            std::vector<int32_t>& slot_leaf,
                            std::vector<int32_t>* stack_leaf = nullptr,
                            std::vector<uint32_t>* call_ops = nullptr);
  bool word_stack(int32_t l) const;
  bool block_form(const CBlock& cb) const;
  bool whole_index(const Op& op, const CBlock& cb) const;
  bool whole_tensor(const Op& op) const;
  bool row_view(const Op& op, const CBlock& cb) const;
  bool view_leaf(int32_t leaf, const CBlock& cb) const;
  void bind_blocks();
  std::string not_compiled(const Op& op) const;
  std::vector<Seg> find_segments(uint32_t bi) const;
  std::string whole_blocker(const CBlock& cb) const;
  void gather_facts(uint32_t bi, BlockFacts& f, Candidates& c);
  void plan();
  // thread_index's operands in compiled code, in place of leaves: each
  // thread's input row (lane_input_, per thread slot) and the batch's first
  // thread (opt_.first_thread).
  static constexpr int32_t kRowLeaf = -2, kFirstThreadLeaf = -3;
  // A tensor literal in a gather segment: the slot of constant c is keyed
  // kConstLeaf - c (a Shared slot whose base is the constant's data).
  static constexpr int32_t kConstLeaf = -16;
  void* thread_operand(int32_t l);
  void build_jit(std::vector<Candidates>& cand);
  void install_code(const std::shared_ptr<const jit::Code>& code, const std::string& error);
  // Tiered: whether the run switches to the compiled code now (at a step
  // boundary): the code is ready, or (RunOptions::jit_switch_at, tests) the
  // step has come.
  bool code_due() const {
    return opt_.jit_switch_at >= 0 ? step_ >= opt_.jit_switch_at : pending_->ready();
  }
  void switch_to_code();

  // ---- called per lane or per op: inline -------------------------------
  void push_lane(uint32_t block, uint32_t t) { append_lanes(block, &t, 1); }
  void append_lanes(uint32_t block, const uint32_t* lanes, int64_t n) {
    if (n == 0) return;
    auto& w = wait_[block];
    if (depth_order_) note_depths(block, !waiting(block), lanes, n);
    w.insert(w.end(), lanes, lanes + n);
    bits_[block >> 6] |= uint64_t{1} << (block & 63);
  }
  void note_depths(uint32_t block, bool first, const uint32_t* lanes, int64_t n) {
    uint32_t hi = first ? 0 : wait_hi_[block], lo = first ? UINT32_MAX : wait_lo_[block];
    const uint32_t* depth = pc_depth_.data();
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t d = depth[lanes[j]];
      hi = std::max(hi, d);
      lo = std::min(lo, d);
    }
    wait_hi_[block] = hi;
    wait_lo_[block] = lo;
  }
  uint32_t next_block() const;
  bool has_calls() const {
    for (const CBlock& cb : blocks_)
      if (cb.term == TermKind::PushGoto) return true;
    return false;
  }
  void take_block(uint32_t b, PoolVector<uint32_t>& cur);
  bool joins_all(uint32_t b) const;
  // `off`: the first lane's position in the chunk (where its temporaries are).
  ArgView view(const Ref& r, const uint32_t* idx, int64_t off = 0) const {
    if (r.constant >= 0) {
      const Constant& c = constants_[r.constant];
      return ArgView{c.data.data(), Access::Shared, nullptr, &c.type};
    }
    const Leaf& l = leaves_[r.leaf];
    if (l.shared) return ArgView{l.top.data(), Access::Shared, nullptr, &l.type};
    if (l.in_scratch())
      return ArgView{l.scratch.data() + off * l.ebytes, Access::Dense, nullptr, &l.type};
    return ArgView{l.top.data(), Access::Gather, idx, &l.type};
  }
  OutView out_view(const Out& o, const uint32_t* idx, int64_t off = 0) {
    Leaf& l = leaves_[o.leaf];
    if (l.shared) return OutView{l.top.data(), Access::Dense, nullptr, &l.type};
    if (l.in_scratch())
      return OutView{l.scratch.data() + off * l.ebytes, Access::Dense, nullptr, &l.type};
    return OutView{l.top.data(), Access::Gather, idx, &l.type};
  }
  template <typename F>
  static void by_size(size_t eb, F&& f) {
    if (eb == 8)
      f(uint64_t{});
    else if (eb == 4)
      f(uint32_t{});
    else
      f(uint8_t{});
  }
};

}  // namespace ab::stack
