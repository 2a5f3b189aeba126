#include "vm/stack_vm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "ir/lowered_names.h"
#include "ir/printer.h"
#include "passes/sharing.h"
#include "support/log.h"
#include "vm/coalesce.h"
#include "vm/jit/jit.h"
#include "vm/kernel.h"
#include "vm/lane_stack.h"
#include "vm/literal.h"
#include "vm/slots.h"

namespace ab {

namespace {

constexpr int64_t kChunk = 256;
constexpr uint32_t kHalt = UINT32_MAX;
// Iterations per call of a compiled loop body running one thread alone, at
// most (the VM looks at cancel and progress in between).
constexpr int64_t kSoloBurst = int64_t{1} << 20;
constexpr int32_t kMaxCopies = 8;  // iterations per call of a compiled loop body, at most
// A lane's budget per call of the chain (the VM looks at cancel and progress
// in between): the blocks a call or a backward jump leads to that it may
// enter, some thousands of calls or loop iterations, so that a chunk's call
// stays within some milliseconds.
constexpr int64_t kChainBudget = int64_t{1} << 12;
constexpr int64_t kChainPoll = int64_t{1} << 20;  // budget used in the chain between polls

// Iterations per call of a compiled loop body of `ops` instructions that
// cannot fail: enough to amortise the lanes' loads and stores, few enough to
// keep the code small (collatz under callgrind: 99.7M instructions in the
// body with 1, 83.6M with 2, 72.7M with 4, 69.3M with 8; 4 copies cost 15 ms
// more of compilation, 8 copies 30 ms). AUTOBATCH_JIT_COPIES=K overrides, for
// experiments.
int32_t loop_copies(size_t ops) {
  if (const char* v = std::getenv("AUTOBATCH_JIT_COPIES"); v && *v)
    return std::clamp(std::atoi(v), 1, kMaxCopies);
  return ops <= 8 ? 4 : ops <= 16 ? 2 : 1;
}

// One tensor leaf of one variable, stored by its class.
struct Leaf {
  std::string var;
  StorageClass cls = StorageClass::Register;
  bool shared = false;
  bool shared_ready = false;
  bool borrowed = false;  // `top` is the caller's input array, read in place (never written)
  TensorType type;
  size_t ebytes = 0;
  Buffer top;                   // register/full: one event per lane; shared: one event
  Buffer scratch;               // temporary/null: one event per lane of a chunk
  PoolVector<uint32_t> depth;   // full: stack depth per thread (the top included)
  LaneStack<uint64_t> below;    // full: the values below the top, in 8-byte words
  size_t words = 0;             // words per event
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

// A run of a block's ops compiled into one native loop (gather form).
struct Seg {
  size_t first = 0, last = 0;  // ops [first, last)
  jit::GatherFn fn = nullptr;
  std::vector<void*> base;      // per slot: where its values live
  std::vector<int32_t> spills;  // full leaves pushed by the segment's ops: spilled before it
  std::vector<int32_t> thread_out, scratch_out;  // leaves written (saved if it may fail)
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
  bool chained = false;  // compiled whole into the chain instead (jit::ChainFn)
  std::vector<int32_t> block_slots, block_stacks;
  std::vector<void*> block_base;
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
    if (opt.jit) build_jit();
  }

  RunResult run() {
    RunResult res;
    // Outputs: one Array per output leaf, a row per input.
    std::vector<TensorType> out_types;
    for (const auto& o : p_.outputs)
      for (int32_t l : var_leaves_.at(o.name)) out_types.push_back(leaves_[l].type);
    for (const auto& t : out_types) outputs_.emplace_back(t, n_inputs_);

    size_t nb = p_.blocks.size();
    wait_.assign(nb, {});
    bits_.assign((nb + 63) / 64, 0);
    pcs_.init(static_cast<size_t>(lanes_), 1);
    pc_depth_.assign(static_cast<size_t>(lanes_), 0);
    lane_input_.assign(static_cast<size_t>(lanes_), 0);
    set_shared_inputs();
    if (opt_.max_steps > 0) lane_steps_.assign(static_cast<size_t>(lanes_), 0);
    start_all_lanes();
    bind_blocks();
    live_ = lanes_;
    peak_depth_ = lanes_ > 0 ? 1 : 0;  // the entry function's frame
    tracing_ = opt_.trace && opt_.trace->on();
    check_at_ = next_check(opt_, 0);
    if (tracing_) {
      // Threads are numbered by input, also under --lanes.
      std::vector<std::string> names;
      for (const auto& b : p_.blocks) names.push_back(b.label.name);
      opt_.trace->header("stack", n_inputs_, names);
    }
    if (opt_.stats) {
      std::vector<std::string> names;
      for (const auto& b : p_.blocks) names.push_back(b.label.name);
      opt_.stats->init(names);
    }
    PoolVector<uint32_t> cur;
    res.log = jit_log_;
    if (in_place_bytes_ > 0)
      res.log += (res.log.empty() ? "" : "; ") + std::string("inputs read in place: ") +
                 std::to_string(in_place_bytes_) + " bytes";
    if (opt_.stats && code_) opt_.stats->seconds["jit"] += cached_ ? 0.0 : code_->seconds;
    while (live_ > 0) {
      uint32_t b = next_block();
      if (b == kHalt) break;  // every remaining thread is stuck (cannot happen in a sound program)
      cur.swap(wait_[b]);
      wait_[b].clear();
      bits_[b >> 6] &= ~(uint64_t{1} << (b & 63));
      if (opt_.persistent && blocks_[b].self >= 0) {
        const DenseLoop& d = blocks_[b].dense;
        // The dense form counts no steps per thread: not with --max-steps.
        const bool dense = d.fn && opt_.max_steps == 0;
        if (dense && !d.may_fail) {
          // A window of threads loops in the block, refilled from the list.
          res.error = run_dense_loop(b, cur.data(), static_cast<int64_t>(cur.size()));
          if (res.error) break;
          continue;
        }
        // Each chunk loops in the block until all its threads have left.
        for (size_t s = 0; s < cur.size() && !res.error; s += kChunk) {
          int64_t n = std::min<int64_t>(kChunk, static_cast<int64_t>(cur.size() - s));
          res.error =
              dense ? run_dense_loop(b, cur.data() + s, n) : run_loop(b, cur.data() + s, n, false);
        }
        if (res.error) break;
        continue;
      }
      int64_t total = static_cast<int64_t>(cur.size());
      res.error = begin_step(b, cur.data(), total);
      for (int64_t s = 0; s < total && !res.error; s += kChunk) {
        int64_t n = std::min<int64_t>(kChunk, total - s);
        res.error = run_chunk(b, cur.data() + s, n);
      }
      if (res.error) break;
    }
    res.steps = step_;
    if (chain_calls_ > 0)
      res.log += "; chain: " + std::to_string(chain_calls_) + " calls, " +
                 std::to_string(chain_runs_) + " calls and loop iterations run by threads alone, " +
                 std::to_string(chain_stuck_) + " blocks left to the interpreter, " +
                 std::to_string(chain_spent_) + " threads paused after " +
                 std::to_string(kChainBudget) + " calls and loop iterations";
    res.cancelled = cancelled_;
    res.finished = next_input_ - live_;
    if (opt_.stats)
      opt_.stats->peak_stack_depth = std::max(opt_.stats->peak_stack_depth, peak_depth_);
    if (!res.error) {
      res.outputs = std::move(outputs_);
      res.failed = std::move(failed_);
      finish_failed(res.outputs, res.failed);
    }
    return res;
  }

 private:
  const Program& p_;
  const std::vector<Array>& inputs_;
  int64_t n_inputs_;
  RunOptions opt_;
  int64_t lanes_ = 0;
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
  LaneStack<uint32_t> pcs_;         // program counters: where each frame returns
  PoolVector<uint32_t> pc_depth_;   // per lane: frames, counting the halt at the bottom
  PoolVector<int64_t> lane_input_;
  std::vector<int64_t> thread_ids_;  // thread_index's operand: lane -> its thread
  std::vector<Array> outputs_;
  int64_t next_input_ = 0;
  int64_t live_ = 0;
  int64_t peak_depth_ = 0;
  int64_t step_ = 0;
  int64_t check_at_ = INT64_MAX;  // the step after which checkpoint() runs
  bool cancelled_ = false;
  bool tracing_ = false;
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
  std::vector<uint64_t> saved_;                // a segment's outputs, while it may fail
  std::vector<std::vector<uint64_t>> dense_;   // a dense loop's Thread slots
  std::vector<std::vector<uint64_t>> backup_;  // the same at the iteration's start
  std::vector<void*> dense_base_;
  // The chain (jit::ChainFn): its blocks (those compiled whole, in the order
  // compiled) and their bases for this run. Whether a run chains is
  // build_jit's choice (CBlock::chained).
  std::vector<uint32_t> chain_blocks_;
  std::vector<void* const*> chain_bases_;
  int64_t chain_calls_ = 0, chain_runs_ = 0, chain_stuck_ = 0, chain_spent_ = 0;  // for the log
  int64_t chain_poll_at_ = kChainPoll;  // chain_runs_ at which run_chain polls
  uint32_t ids_[kChunk];
  jit::ActiveWord active_[kChunk];
  jit::ActiveWord active_backup_[kChunk];

  // ---- set-up ---------------------------------------------------------

  // Which variables hold one value for every thread (passes/sharing): the
  // roots are the inputs given with batch 1.
  void analyze_sharing() {
    std::vector<std::string> params;
    std::vector<bool> roots;
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      params.push_back(p_.inputs[i].name);
      roots.push_back(i < inputs_.size() && inputs_[i].batch == 1);
    }
    SharingInfo info = sharing(p_.blocks, params, roots);
    for (const auto& v : p_.vars) shared_var_[v.name.name] = info.shared(v.name.name);
    if (log_enabled(LogLevel::Debug)) {
      std::string names;
      for (const auto& [v, src] : info.source) names += " " + v;
      log_debug("stack VM: " + std::to_string(info.source.size()) + " of " +
                std::to_string(p_.vars.size()) + " variables shared:" + names);
    }
  }

  // The variables some instruction writes: an output (in place or not) or a
  // pop. (Terminators write no variable; a push happens only where a full
  // variable is written.)
  std::set<std::string> written_vars() const {
    std::set<std::string> w;
    auto add = [&w](const Pattern& pt, auto& self) -> void {
      if (!pt.is_tuple) {
        w.insert(pt.name);
        return;
      }
      for (const auto& e : pt.elems) self(e, self);
    };
    for (const auto& b : p_.blocks)
      for (const auto& in : b.instrs) {
        if (in.kind == InstrKind::Pop)
          for (const auto& n : in.popped) w.insert(n.name);
        else
          add(in.out, add);
      }
    return w;
  }

  // Inputs read in place (issue 12: a large input is not copied). A leaf of
  // an entry parameter that no instruction writes needs no storage of its
  // own: its `top` borrows the caller's array. A shared leaf (batch-1 input)
  // borrows the one row; a per-thread leaf borrows the whole batch when
  // lane t always runs input t, that is without refill lanes (lanes_ ==
  // n_inputs_: start_lane gives lane t input t and no lane is restarted), so
  // the gathers by lane read row t. The array must have the leaf's type and
  // be aligned for its dtype (kernels and the JIT read it typed); otherwise,
  // and with refill lanes, the input is copied per lane as before.
  const Array* borrowable_input(const std::string& var, const TensorType& tt, bool shared,
                                const std::set<std::string>& written) const {
    if (written.count(var)) return nullptr;
    for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) {
      if (p_.inputs[i].name != var) continue;
      const Array& a = inputs_[i];
      // One leaf per parameter: a tuple parameter's leaves are not one array.
      if (var_leaf_count(var) != 1) return nullptr;
      if (a.type.dtype != tt.dtype || a.event_size() != tt.num_elements()) return nullptr;
      size_t ebytes = static_cast<size_t>(tt.num_elements()) * dtype_size(tt.dtype);
      int64_t rows = shared ? 1 : n_inputs_;
      if (shared ? a.batch != 1 : (a.batch != n_inputs_ || lanes_ != n_inputs_)) return nullptr;
      if (a.byte_size() < ebytes * static_cast<size_t>(rows) || !a.data.data()) return nullptr;
      if (reinterpret_cast<uintptr_t>(a.data.data()) % dtype_size(tt.dtype) != 0) return nullptr;
      return &a;
    }
    return nullptr;
  }

  size_t var_leaf_count(const std::string& var) const {
    auto it = slots_leaf_count_.find(var);
    return it == slots_leaf_count_.end() ? 0 : it->second;
  }

  void make_leaves(const FunctionTypes& types) {
    std::vector<std::string> inputs;
    for (const auto& i : p_.inputs) inputs.push_back(i.name);
    Slots slots = compile_slots(p_.blocks, inputs, types, &p_.vars);
    for (size_t s = 0; s < p_.vars.size(); ++s)
      slots_leaf_count_[p_.vars[s].name.name] = slots.leaf_count[s];
    const std::set<std::string> written = written_vars();
    const std::map<std::string, std::string> alias = storage_aliases(slots);
    for (size_t s = 0; s < p_.vars.size(); ++s) {
      const VarDecl& v = p_.vars[s];
      if (alias.count(v.name.name)) continue;
      std::vector<int32_t> ids;
      for (uint32_t j = 0; j < slots.leaf_count[s]; ++j) {
        const TensorType& tt = slots.leaf_types[slots.first_leaf[s] + j];
        Leaf l;
        l.var = v.name.name;
        l.cls = v.storage;
        l.shared = shared_var_[v.name.name];
        l.type = tt;
        l.ebytes = static_cast<size_t>(tt.num_elements()) * dtype_size(tt.dtype);
        l.words = (l.ebytes + 7) / 8;
        const Array* in = l.in_scratch() ? nullptr : borrowable_input(l.var, tt, l.shared, written);
        if (in) {
          l.top = Buffer::borrow(in->data.data(), in->byte_size());
          l.borrowed = true;
          in_place_bytes_ += static_cast<int64_t>(in->byte_size());
          if (l.full()) {
            l.depth.assign(static_cast<size_t>(lanes_), 0);
            l.below.init(static_cast<size_t>(lanes_), l.words);
          }
        } else if (l.shared) {
          l.top.resize(l.ebytes);
        } else if (l.in_scratch()) {
          l.scratch.resize(l.ebytes * kChunk);
        } else {
          l.top.resize(l.ebytes * static_cast<size_t>(lanes_));
          if (l.full()) {
            l.depth.assign(static_cast<size_t>(lanes_), 0);
            l.below.init(static_cast<size_t>(lanes_), l.words);
          }
        }
        ids.push_back(static_cast<int32_t>(leaves_.size()));
        leaves_.push_back(std::move(l));
      }
      var_leaves_[v.name.name] = std::move(ids);
    }
    for (const auto& [v, rep] : alias) var_leaves_[v] = var_leaves_.at(rep);
    if (!alias.empty() && log_enabled(LogLevel::Debug)) {
      std::string names;
      for (const auto& [v, rep] : alias) names += " " + v + "->" + rep;
      log_debug("stack VM: " + std::to_string(alias.size()) + " variables share storage:" + names);
    }
  }

  // Register variables joined by copies that can share one storage
  // (vm/coalesce.h): each thread's own, neither an input nor an output, with
  // the same leaves.
  std::map<std::string, std::string> storage_aliases(const Slots& slots) const {
    // AUTOBATCH_COALESCE=0: every variable its own storage (for experiments).
    const char* env = std::getenv("AUTOBATCH_COALESCE");
    if (env && std::string(env) == "0") return {};
    std::set<std::string> ends;
    for (const auto& i : p_.inputs) ends.insert(i.name);
    for (const auto& o : p_.outputs) ends.insert(o.name);
    // Slot s of a declared variable is declaration s (compile_slots).
    auto eligible = [&](const std::string& v) {
      auto it = slots.index.find(v);
      if (it == slots.index.end() || it->second >= p_.vars.size() || ends.count(v)) return false;
      auto sh = shared_var_.find(v);
      return p_.vars[it->second].storage == StorageClass::Register &&
             (sh == shared_var_.end() || !sh->second);
    };
    auto compatible = [&](const std::string& a, const std::string& b) {
      uint32_t sa = slots.at(a), sb = slots.at(b);
      if (slots.leaf_count[sa] != slots.leaf_count[sb]) return false;
      for (uint32_t j = 0; j < slots.leaf_count[sa]; ++j)
        if (!(slots.leaf_types[slots.first_leaf[sa] + j] ==
              slots.leaf_types[slots.first_leaf[sb] + j]))
          return false;
      return true;
    };
    return coalesce_copies(p_, eligible, compatible);
  }

  void flatten(const Pattern& p, std::vector<Out>& out) const {
    if (p.is_tuple) {
      for (const auto& e : p.elems) flatten(e, out);
      return;
    }
    for (int32_t l : var_leaves_.at(p.name)) out.push_back({l, p.in_place});
  }

  Ref constant(const Literal& lit, const std::optional<Type>& t) {
    Value v = literal_constant(lit, t);
    constants_.push_back({v.type, std::move(v.data)});
    return Ref{-1, static_cast<int32_t>(constants_.size() - 1)};
  }

  void compile(const FunctionTypes& types) {
    for (size_t bi = 0; bi < p_.blocks.size(); ++bi) {
      const Block& b = p_.blocks[bi];
      CBlock cb;
      for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
        const Instr& in = b.instrs[ii];
        Op op;
        op.loc = in.kind == InstrKind::Prim ? in.callee.loc : in.loc;
        if (in.kind == InstrKind::Pop) {
          op.kind = Op::Kind::Pop;
          for (const auto& n : in.popped)
            for (int32_t l : var_leaves_.at(n.name))
              if (leaves_[l].full()) op.pops.push_back(l);
          if (!op.pops.empty()) cb.ops.push_back(std::move(op));
          continue;
        }
        for (size_t a = 0; a < in.args.size(); ++a) {
          const Operand& o = in.args[a];
          if (o.is_var) {
            for (int32_t l : var_leaves_.at(o.name)) op.args.push_back(Ref{l, -1});
          } else {
            op.args.push_back(constant(o.lit, types.operand_types[bi][ii][a]));
          }
        }
        flatten(in.out, op.outs);
        bool is_kernel = in.kind == InstrKind::Prim && in.prim != PrimId::Tuple;
        op.kind = is_kernel ? Op::Kind::Kernel : Op::Kind::Copy;
        if (is_kernel) {
          op.fn = kernel_for(in.prim);
          op.prim = in.prim;
          op.attrs = resolve_attrs(in);
        }
        if (in.kind == InstrKind::Prim) ++cb.prims;
        if (in.kind == InstrKind::Copy && same_storage(op)) continue;  // coalesced: no work
        op.shared = !op.outs.empty();
        for (const auto& o : op.outs) op.shared = op.shared && leaves_[o.leaf].shared;
        cb.ops.push_back(std::move(op));
      }
      const Terminator& t = b.term;
      cb.term = t.kind;
      cb.term_loc = t.loc;
      if (t.kind == TermKind::Branch) {
        cb.cond = var_leaves_.at(t.cond.name).front();
        cb.t1 = label_index_.at(t.target.name);
        cb.t2 = label_index_.at(t.target2.name);
        // A loop block: with the persistent schedule its chunk stays until it leaves.
        if ((cb.t1 == bi) != (cb.t2 == bi) && !leaves_[cb.cond].shared)
          cb.self = cb.t1 == bi ? 1 : 0;
        if (cb.self < 0) fuse_compare(cb);
      } else if (t.kind == TermKind::Goto) {
        cb.t1 = label_index_.at(t.target.name);
      } else if (t.kind == TermKind::PushGoto) {
        cb.t1 = label_index_.at(t.target.name);   // where to return
        cb.t2 = label_index_.at(t.target2.name);  // the callee
      }
      blocks_.push_back(std::move(cb));
    }
  }

  // A copy whose every value already lies where it goes (its variables share
  // storage). Not a copy into a full variable: that pushes (`x = x` saves x).
  bool same_storage(const Op& op) const {
    if (op.args.size() != op.outs.size()) return false;
    for (size_t k = 0; k < op.args.size(); ++k)
      if (op.args[k].leaf < 0 || op.args[k].leaf != op.outs[k].leaf ||
          leaves_[op.outs[k].leaf].full())
        return false;
    return true;
  }

  // Whether r is an i64 scalar read from each thread's own variable or a
  // literal: what a fused compare reads.
  bool cmp_operand(const Ref& r, bool allow_constant) const {
    if (r.constant >= 0) {
      const Constant& c = constants_[r.constant];
      return allow_constant && c.type.dtype == DType::I64 && c.type.shape.empty();
    }
    const Leaf& l = leaves_[r.leaf];
    return !l.shared && !l.in_scratch() && l.type.dtype == DType::I64 && l.type.shape.empty();
  }

  void fuse_compare(CBlock& cb) {
    if (cb.ops.empty()) return;
    const Op& op = cb.ops.back();
    const Leaf& c = leaves_[cb.cond];
    bool is_cmp = op.prim == PrimId::Eq || op.prim == PrimId::Ne || op.prim == PrimId::Lt ||
                  op.prim == PrimId::Le || op.prim == PrimId::Gt || op.prim == PrimId::Ge;
    if (op.kind != Op::Kind::Kernel || !is_cmp || op.shared || op.outs.size() != 1 ||
        op.args.size() != 2 || op.outs[0].leaf != cb.cond || c.shared || !c.in_scratch())
      return;
    if (!cmp_operand(op.args[0], false) || !cmp_operand(op.args[1], true)) return;
    cb.fused_cmp = true;
    cb.cmp = op.prim;
    cb.cmp_a = op.args[0];
    cb.cmp_b = op.args[1];
  }

  // The fused compare and split: lane j to yes or no by a[t] CMP b.
  int64_t compare_split(const CBlock& cb, const uint32_t* idx, int64_t n, uint32_t* yes,
                        uint32_t* no) const {
    const int64_t* a = reinterpret_cast<const int64_t*>(leaves_[cb.cmp_a.leaf].top.data());
    int64_t ny = 0;
    auto split = [&](auto cmp) {
      if (cb.cmp_b.constant >= 0) {
        int64_t k;
        std::memcpy(&k, constants_[cb.cmp_b.constant].data.data(), sizeof k);
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          yes[ny] = t;
          no[j - ny] = t;
          ny += cmp(a[t], k);
        }
      } else {
        const int64_t* bv = reinterpret_cast<const int64_t*>(leaves_[cb.cmp_b.leaf].top.data());
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          yes[ny] = t;
          no[j - ny] = t;
          ny += cmp(a[t], bv[t]);
        }
      }
    };
    switch (cb.cmp) {
      case PrimId::Eq:
        split([](int64_t x, int64_t y) { return x == y; });
        break;
      case PrimId::Ne:
        split([](int64_t x, int64_t y) { return x != y; });
        break;
      case PrimId::Lt:
        split([](int64_t x, int64_t y) { return x < y; });
        break;
      case PrimId::Le:
        split([](int64_t x, int64_t y) { return x <= y; });
        break;
      case PrimId::Gt:
        split([](int64_t x, int64_t y) { return x > y; });
        break;
      default:
        split([](int64_t x, int64_t y) { return x >= y; });
        break;
    }
    return ny;
  }

  void set_shared_inputs() {
    for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) {
      const auto& ls = var_leaves_.at(p_.inputs[i].name);
      for (int32_t l : ls) {
        Leaf& leaf = leaves_[l];
        if (!leaf.shared) continue;
        if (leaf.ebytes && !leaf.borrowed)
          std::memcpy(leaf.top.data(), inputs_[i].data.data(), leaf.ebytes);
        leaf.shared_ready = true;
      }
    }
  }

  // Lane t begins input `input`: its inputs, empty stacks, halt under its PC.
  // Once: which leaves a lane's start touches (no lookups per thread).
  void find_start_leaves() {
    if (!input_leaves_.empty() || p_.inputs.empty()) return;
    for (size_t li = 0; li < leaves_.size(); ++li)
      if (leaves_[li].full()) full_leaves_.push_back(static_cast<int32_t>(li));
    for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i)
      for (int32_t l : var_leaves_.at(p_.inputs[i].name)) input_leaves_.push_back({i, l});
  }

  // The run's start: lane t takes input t, for every lane at once (what
  // start_lane does per lane, a column at a time: the stacks are fresh).
  void start_all_lanes() {
    find_start_leaves();
    const size_t L = static_cast<size_t>(lanes_);
    for (size_t t = 0; t < L; ++t) lane_input_[t] = static_cast<int64_t>(t);
    for (int32_t li : full_leaves_) leaves_[li].depth.assign(L, 0);
    for (const auto& [i, l] : input_leaves_) {
      const Array& a = inputs_[i];
      Leaf& leaf = leaves_[l];
      if (leaf.shared || leaf.in_scratch()) continue;
      if (!leaf.borrowed && leaf.ebytes) {
        std::byte* dst = leaf.top.data();
        if (a.batch == 1)
          for (size_t t = 0; t < L; ++t)
            std::memcpy(dst + t * leaf.ebytes, a.data.data(), leaf.ebytes);
        else
          std::memcpy(dst, a.data.data(), L * leaf.ebytes);
      }
      if (leaf.full()) std::fill(leaf.depth.begin(), leaf.depth.end(), 1);
    }
    for (size_t t = 0; t < L; ++t) *pcs_.put(static_cast<uint32_t>(t), 0) = kHalt;
    std::fill(pc_depth_.begin(), pc_depth_.end(), 1);
    if (L > 0) {
      wait_[0].resize(L);
      for (size_t t = 0; t < L; ++t) wait_[0][t] = static_cast<uint32_t>(t);
      bits_[0] |= 1;
    }
    next_input_ = lanes_;
  }

  void start_lane(uint32_t t, int64_t input) {
    find_start_leaves();
    lane_input_[t] = input;
    if (opt_.max_steps > 0) lane_steps_[t] = 0;
    for (int32_t li : full_leaves_) {
      leaves_[li].depth[t] = 0;
      leaves_[li].below.clear(t);
    }
    for (const auto& [i, l] : input_leaves_) {
      const Array& a = inputs_[i];
      {
        Leaf& leaf = leaves_[l];
        if (leaf.shared || leaf.in_scratch()) continue;
        // Read in place (make_leaves): lane t runs input t, row t of the array.
        if (leaf.borrowed) {
          if (leaf.full()) leaf.depth[t] = 1;
          continue;
        }
        int64_t row = a.batch == 1 ? 0 : input;
        if (leaf.ebytes == 8)  // a constant size: inlined, no call (the input may be unaligned)
          std::memcpy(leaf.top.data() + t * 8, a.data.data() + row * 8, 8);
        else if (leaf.ebytes)
          std::memcpy(leaf.top.data() + t * leaf.ebytes, a.data.data() + row * leaf.ebytes,
                      leaf.ebytes);
        if (leaf.full()) leaf.depth[t] = 1;
      }
    }
    pcs_.clear(t);
    *pcs_.put(t, 0) = kHalt;
    pc_depth_[t] = 1;
    push_lane(0, t);
  }

  void push_lane(uint32_t block, uint32_t t) {
    wait_[block].push_back(t);
    bits_[block >> 6] |= uint64_t{1} << (block & 63);
  }

  void append_lanes(uint32_t block, const uint32_t* lanes, int64_t n) {
    if (n == 0) return;
    auto& w = wait_[block];
    w.insert(w.end(), lanes, lanes + n);
    bits_[block >> 6] |= uint64_t{1} << (block & 63);
  }

  uint32_t next_block() const {
    for (size_t w = 0; w < bits_.size(); ++w)
      if (bits_[w])
        return static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits_[w])));
    return kHalt;
  }

  RuntimeError error_at(uint32_t block, SourceLoc loc, uint32_t lane, std::string msg) const {
    auto [fn, blk] = split_lowered_label(p_.blocks[block].label.name);
    return RuntimeError{loc, std::move(msg), lane_input_[lane], n_inputs_, fn, blk};
  }

  // ---- one chunk of one block -------------------------------------------

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

  // A push: the current top of each lane moves to the stack below it.
  // The top of a lane at depth d (the top included) lives in `top`; the
  // values below it at levels 0 .. d-2 of `below`.
  void spill(Leaf& l, const uint32_t* idx, int64_t n) {
    const size_t eb = l.ebytes;
    uint32_t* depth = l.depth.data();
    if (eb == 0) {
      for (int64_t j = 0; j < n; ++j) ++depth[idx[j]];
      return;
    }
    if (eb == 8) {
      const uint64_t* top = reinterpret_cast<const uint64_t*>(l.top.data());
      for (int64_t j = 0; j < n; ++j) {
        uint32_t t = idx[j];
        uint32_t d = depth[t]++;
        if (d != 0) *l.below.put1(t, d - 1) = top[t];
      }
      return;
    }
    for (int64_t j = 0; j < n; ++j) {
      uint32_t t = idx[j];
      uint32_t d = depth[t]++;
      if (d == 0) continue;
      uint64_t* w = l.below.put(t, d - 1);
      w[l.words - 1] = 0;
      std::memcpy(w, l.top.data() + t * eb, eb);
    }
  }

  std::optional<RuntimeError> pop(uint32_t b, const Op& op, const uint32_t* idx, int64_t n) {
    for (int32_t li : op.pops) {
      Leaf& l = leaves_[li];
      const size_t eb = l.ebytes;
      uint32_t* depth = l.depth.data();
      auto empty = [&](int64_t j) {
        return error_at(
            b, op.loc, idx[j],
            "pop of '" + l.var + "', whose stack is empty (the lowered program is unbalanced)");
      };
      if (eb == 8) {
        // One pass; the popped tops are kept so that an empty stack found
        // part-way puts the lanes before it back as they were.
        uint64_t* top = reinterpret_cast<uint64_t*>(l.top.data());
        uint64_t old[kChunk];
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          uint32_t d = depth[t];
          if (d == 0) [[unlikely]] {
            for (int64_t k = 0; k < j; ++k) {
              top[idx[k]] = old[k];
              ++depth[idx[k]];
            }
            return empty(j);
          }
          old[j] = top[t];
          depth[t] = --d;
          if (d != 0) top[t] = *l.below.get1(t, d - 1);
        }
        continue;
      }
      for (int64_t j = 0; j < n; ++j)
        if (depth[idx[j]] == 0) [[unlikely]]
          return empty(j);
      if (eb == 0) {
        for (int64_t j = 0; j < n; ++j) --depth[idx[j]];
      } else {
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          uint32_t d = --depth[t];
          if (d != 0) std::memcpy(l.top.data() + t * eb, l.below.get(t, d - 1), eb);
        }
      }
    }
    return std::nullopt;
  }

  static void copy_lanes(const ArgView& src, const OutView& dst, int64_t n, size_t eb) {
    if (eb == 0) return;
    const std::byte* s = static_cast<const std::byte*>(src.data);
    std::byte* d = static_cast<std::byte*>(dst.data);
    if (eb == 8) {
      const uint64_t* s8 = reinterpret_cast<const uint64_t*>(s);
      uint64_t* d8 = reinterpret_cast<uint64_t*>(d);
      const uint32_t* si = src.index;
      const uint32_t* di = dst.index;
      if (dst.access == Access::Gather) {
        if (src.access == Access::Gather)
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[si[j]];
        else if (src.access == Access::Dense)
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[j];
        else
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[0];
      } else {
        if (src.access == Access::Gather)
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[si[j]];
        else if (src.access == Access::Dense)
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[j];
        else
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[0];
      }
      return;
    }
    for (int64_t j = 0; j < n; ++j)
      std::memmove(d + lane_slot(dst.access, dst.index, j) * eb,
                   s + lane_slot(src.access, src.index, j) * eb, eb);
  }

  // Runs op on the chunk's n lanes `idx`. With --on-error record, threads
  // that fail are dropped from the chunk (n shrinks) and the run goes on.
  std::optional<RuntimeError> run_op(uint32_t b, Op& op, uint32_t* idx, int64_t& n) {
    if (op.kind == Op::Kind::Pop) return pop(b, op, idx, n);
    if (op.shared) {
      // Computed once, for every thread.
      bool ready = true;
      for (const auto& o : op.outs) ready = ready && leaves_[o.leaf].shared_ready;
      if (ready) return std::nullopt;
      if (auto e = execute(b, op, nullptr, 1, idx)) {
        if (!opt_.record_errors) return e;
        while (n > 0) drop(idx, n, n - 1, *e, false);  // the same value fails for every thread
        return std::nullopt;
      }
      for (const auto& o : op.outs) leaves_[o.leaf].shared_ready = true;
      return std::nullopt;
    }
    if (op.kind == Op::Kind::Copy && op.outs.size() == 1 && op.args.size() == 1) {
      Leaf& l = leaves_[op.outs[0].leaf];
      if (l.full() && !op.outs[0].in_place && l.ebytes == 8) {
        push_copy8(l, view(op.args[0], idx), idx, n);
        return std::nullopt;
      }
    }
    for (const auto& o : op.outs) {
      Leaf& l = leaves_[o.leaf];
      if (l.full() && !o.in_place) spill(l, idx, n);
    }
    auto e = execute(b, op, idx, n, idx);
    if (e && opt_.record_errors) return retry(b, op, idx, n, std::move(*e));
    return e;
  }

  // `x = y` pushing the full 8-byte variable x, in one pass: x's top goes
  // below, y's value becomes the top (y is read before x is written).
  void push_copy8(Leaf& l, const ArgView& src, const uint32_t* idx, int64_t n) {
    uint32_t* depth = l.depth.data();
    uint64_t* top = reinterpret_cast<uint64_t*>(l.top.data());
    const uint64_t* s = static_cast<const uint64_t*>(src.data);
    auto run = [&](auto at) {
      for (int64_t j = 0; j < n; ++j) {
        uint32_t t = idx[j];
        uint64_t v = s[at(j)];
        uint32_t d = depth[t];
        depth[t] = d + 1;
        if (d != 0) *l.below.put1(t, d - 1) = top[t];
        top[t] = v;
      }
    };
    if (src.access == Access::Gather)
      run([&](int64_t j) { return src.index[j]; });
    else if (src.access == Access::Dense)
      run([](int64_t j) { return j; });
    else
      run([](int64_t) { return int64_t{0}; });
  }

  // --on-error record, after `op` failed on the chunk at lane fail_pos_:
  // the lanes before it are done (the kernel contract: a kernel stops at the
  // first failing lane and leaves the later ones unwritten), so the failing
  // thread drops out and the op runs again from there, until it succeeds.
  std::optional<RuntimeError> retry(uint32_t b, const Op& op, uint32_t* idx, int64_t& n,
                                    RuntimeError e) {
    int64_t from = 0;
    while (true) {
      const int64_t j = from + fail_pos_;
      drop(idx, n, j, std::move(e), true);
      from = j;
      if (from >= n) return std::nullopt;
      auto again = execute(b, op, idx + from, n - from, idx + from, from);
      if (!again) return std::nullopt;
      e = std::move(*again);
    }
  }

  // --on-error record: the thread at position j of the lane list `idx` (n
  // lanes) failed with `e`. It is kept in failed_, leaves the list (and, if
  // `scratch`, the chunk's temporaries move with the list), and its lane is
  // free: the lane's stacks, pending returns included, are dropped with it.
  void drop(uint32_t* idx, int64_t& n, int64_t j, RuntimeError e, bool scratch) {
    const uint32_t t = idx[j];
    e.thread = lane_input_[t];
    failed_.push_back(std::move(e));
    std::memmove(idx + j, idx + j + 1, static_cast<size_t>(n - j - 1) * sizeof(uint32_t));
    if (scratch)
      for (Leaf& l : leaves_)
        if (l.in_scratch() && l.ebytes)
          std::memmove(l.scratch.data() + j * l.ebytes, l.scratch.data() + (j + 1) * l.ebytes,
                       static_cast<size_t>(n - j - 1) * l.ebytes);
    --n;
    release(t);
  }

  // Runs the op on n lanes (idx null: a shared op, once); `off`: the position
  // of the first lane in the chunk.
  std::optional<RuntimeError> execute(uint32_t b, const Op& op, const uint32_t* idx, int64_t n,
                                      const uint32_t* lanes, int64_t off = 0) {
    // Uninitialised: every used slot is written below.
    alignas(ArgView) unsigned char arg_store[16 * sizeof(ArgView)];
    alignas(OutView) unsigned char out_store[16 * sizeof(OutView)];
    ArgView* args = reinterpret_cast<ArgView*>(arg_store);
    OutView* outs = reinterpret_cast<OutView*>(out_store);
    std::vector<ArgView> big_args;
    std::vector<OutView> big_outs;
    ArgView* av = args;
    OutView* ov = outs;
    if (op.args.size() > 16) {
      big_args.resize(op.args.size());
      av = big_args.data();
    }
    if (op.outs.size() > 16) {
      big_outs.resize(op.outs.size());
      ov = big_outs.data();
    }
    for (size_t a = 0; a < op.args.size(); ++a) av[a] = view(op.args[a], idx, off);
    for (size_t o = 0; o < op.outs.size(); ++o) ov[o] = out_view(op.outs[o], idx, off);
    if (op.kind == Op::Kind::Copy) {
      for (size_t o = 0; o < op.outs.size() && o < op.args.size(); ++o)
        copy_lanes(av[o], ov[o], n, leaves_[op.outs[o].leaf].ebytes);
      return std::nullopt;
    }
    KernelCall call;
    call.n = n;
    call.args = av;
    call.nargs = static_cast<int>(op.args.size());
    call.outs = ov;
    call.nouts = static_cast<int>(op.outs.size());
    call.attrs = &op.attrs;
    if (prim_per_thread(op.prim)) {  // thread_index: never shared, so idx is set
      thread_ids_.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) thread_ids_[j] = opt_.first_thread + lane_input_[lanes[j]];
      call.threads = thread_ids_.data();
    }
    KernelError err;
    if (!op.fn(call, &err)) {
      int64_t j = err.lane >= 0 && err.lane < n ? err.lane : 0;
      fail_pos_ = j;
      return error_at(b, op.loc, lanes[idx ? j : 0], err.message);
    }
    return std::nullopt;
  }

  // Each lane of the list pushes a frame returning to `ret` (frames count
  // the halt at the bottom); returns the deepest depth before the push.
  uint32_t push_frames(const uint32_t* idx, int64_t n, uint32_t ret) {
    uint32_t* depth = pc_depth_.data();
    uint32_t deepest = 0;
    for (int64_t j = 0; j < n; ++j) {
      uint32_t t = idx[j];
      uint32_t d = depth[t];
      deepest = std::max(deepest, d);
      *pcs_.put1(t, d) = ret;
      depth[t] = d + 1;
    }
    return deepest;
  }

  // After block b's push_goto pushed the lanes' frames (`deepest`: the
  // deepest before): past the bound (a lane with as many frames as the bound
  // allows cannot call) the depths are put back, so that an error leaves
  // every stack as it was (an entry written above a lane's depth is never
  // read); the lanes go on to the callee.
  std::optional<RuntimeError> called(uint32_t b, uint32_t* idx, int64_t n, uint32_t deepest) {
    const CBlock& cb = blocks_[b];
    if (deepest >= opt_.max_stack_depth) [[unlikely]] {
      for (int64_t j = 0; j < n; ++j) --pc_depth_[idx[j]];
      if (auto e = too_deep(b, idx, n)) return e;
      // --on-error record: the threads at the bound left; the rest push.
      deepest = push_frames(idx, n, cb.t1);
    }
    // Frames now active, the entry's included.
    peak_depth_ = std::max(peak_depth_, static_cast<int64_t>(deepest) + 1);
    append_lanes(cb.t2, idx, n);
    return std::nullopt;
  }

  // Lanes idx[j] return to block rets[j] (kHalt: the thread is done). The
  // lanes of one target join its list together, in their order here: one
  // branch-free pass per target (a chunk mostly returns to one or two).
  void returned(const uint32_t* idx, const uint32_t* rets, int64_t n) {
    uint32_t lanes[kChunk], to[kChunk], go[kChunk];
    const uint32_t* L = idx;
    const uint32_t* R = rets;
    for (int round = 0; n > 0; ++round) {
      if (round == 8) {  // many targets: the rest lane by lane
        for (int64_t j = 0; j < n; ++j)
          if (R[j] == kHalt)
            halt(L[j]);
          else
            push_lane(R[j], L[j]);
        return;
      }
      const uint32_t r0 = R[0];
      bool one = true;  // every lane goes back to r0 (often, after a first split)
      for (int64_t j = 0; j < n; ++j) one &= R[j] == r0;
      if (one) {
        if (r0 == kHalt)
          halt_lanes(L, n);
        else
          append_lanes(r0, L, n);
        return;
      }
      int64_t k = 0, rest = 0;
      for (int64_t j = 0; j < n; ++j) {  // rest <= j: in place from the second round
        const uint32_t t = L[j], r = R[j];
        const bool same = r == r0;
        go[k] = t;
        lanes[rest] = t;
        to[rest] = r;
        k += same;
        rest += !same;
      }
      if (r0 == kHalt)
        halt_lanes(go, k);
      else
        append_lanes(r0, go, k);
      L = lanes;
      R = to;
      n = rest;
    }
  }

  // The threads of these lanes are done.
  void halt_lanes(const uint32_t* lanes, int64_t n) {
    if (next_input_ >= n_inputs_) {
      // No input waits for a lane: their outputs in one pass.
      store_outputs(lanes, n);
      live_ -= n;
    } else {
      for (int64_t j = 0; j < n; ++j) halt(lanes[j]);
    }
  }

  // Block b compiled whole, on the chunk's lanes, up to the first that needs
  // a new stack row (*done: the lanes it ran, which go on to their blocks).
  std::optional<RuntimeError> run_block(uint32_t b, uint32_t* idx, int64_t n, int64_t* done) {
    const CBlock& cb = blocks_[b];
    uint32_t a[kChunk], c[kChunk];
    const int64_t r = cb.block_fn(cb.block_base.data(), idx, n, a, c, done);
    const int64_t m = *done;
    switch (cb.term) {
      case TermKind::Goto:
        append_lanes(cb.t1, idx, m);
        break;
      case TermKind::Branch:
        append_lanes(cb.t1, a, r);
        append_lanes(cb.t2, c, m - r);
        break;
      case TermKind::PushGoto:
        if (m > 0) return called(b, idx, m, static_cast<uint32_t>(r));
        break;
      case TermKind::IndirectGoto:
        returned(idx, a, m);
        break;
      default:
        break;
    }
    return std::nullopt;
  }

  // The chain from block b: each lane runs on through the blocks compiled
  // whole (jit::ChainFn) and then joins the list of the block it reached;
  // a lane stuck at a block (it needs a new stack row, or would fail) has
  // that block interpreted for it at once, with the others stuck there.
  std::optional<RuntimeError> run_chain(uint32_t b, uint32_t* idx, int64_t n) {
    uint32_t out[kChunk], stuck[kChunk], at[kChunk];
    const int64_t limits[1] = {kChainBudget};
    chain_runs_ += code_->chain(chain_bases_.data(), idx, n, b, out, limits);
    ++chain_calls_;
    // One step may hold many chain calls (a list of many chunks, each
    // running whole recursions): the cancel flag and the progress callback
    // are also looked at every kChainPoll of budget used in the chain, some
    // milliseconds (progress then hears the same step again, with more
    // threads finished).
    if (opt_.polled() && chain_runs_ >= chain_poll_at_) {
      chain_poll_at_ = chain_runs_ + kChainPoll;
      if (auto e = checkpoint(b, idx[0])) return e;
    }
    int64_t m = 0, ns = 0;
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t r = out[j];
      if (r != kHalt && (r & jit::kChainStuck)) {
        ++chain_stuck_;
        stuck[ns] = idx[j];
        at[ns++] = r & ~jit::kChainStuck;
      } else {
        chain_spent_ += r != kHalt && blocks_[r].chained;  // stopped by its budget
        idx[m] = idx[j];
        out[m++] = r;
      }
    }
    returned(idx, out, m);
    while (ns > 0) {  // by block, in the order first met
      const uint32_t x = at[0];
      uint32_t here[kChunk];
      int64_t k = 0, rest = 0;
      for (int64_t j = 0; j < ns; ++j) {
        if (at[j] == x) {
          here[k++] = stuck[j];
        } else {
          stuck[rest] = stuck[j];
          at[rest++] = at[j];
        }
      }
      ns = rest;
      if (auto e = interpret(x, here, k)) return e;
    }
    return std::nullopt;
  }

  std::optional<RuntimeError> run_chunk(uint32_t b, uint32_t* idx, int64_t n) {
    CBlock& cb = blocks_[b];
    if (cb.chained) return run_chain(b, idx, n);
    if (cb.block_fn) {
      int64_t done = 0;
      auto e = run_block(b, idx, n, &done);
      if (e || done == n) return e;
      idx += done;  // the rest, interpreted: a lane needs a new stack row
      n -= done;
    }
    return interpret(b, idx, n);
  }

  // Block b on the chunk's lanes by the interpreter: its ops, then its
  // terminator moves each lane on.
  std::optional<RuntimeError> interpret(uint32_t b, uint32_t* idx, int64_t n) {
    CBlock& cb = blocks_[b];
    if (auto e = run_ops(b, idx, n)) return e;
    switch (cb.term) {
      case TermKind::Goto:
        append_lanes(cb.t1, idx, n);
        break;
      case TermKind::Branch: {
        // Split branch-free into two local lists, then append each in bulk.
        uint32_t yes[kChunk], no[kChunk];
        int64_t ny = 0, nn = 0;
        const Leaf& l = leaves_[cb.cond];
        if (l.shared) {
          bool c = static_cast<uint8_t>(*l.top.data()) != 0;
          append_lanes(c ? cb.t1 : cb.t2, idx, n);
          break;
        }
        const uint8_t* cond =
            reinterpret_cast<const uint8_t*>(l.in_scratch() ? l.scratch.data() : l.top.data());
        // Lane j goes to yes[ny] or no[j - ny]: one counter.
        if (cb.fused_cmp) {
          ny = compare_split(cb, idx, n, yes, no);
        } else if (l.in_scratch()) {
          for (int64_t j = 0; j < n; ++j) {
            uint32_t t = idx[j];
            yes[ny] = t;
            no[j - ny] = t;
            ny += cond[j] != 0;
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            uint32_t t = idx[j];
            yes[ny] = t;
            no[j - ny] = t;
            ny += cond[t] != 0;
          }
        }
        nn = n - ny;
        append_lanes(cb.t1, yes, ny);
        append_lanes(cb.t2, no, nn);
        break;
      }
      case TermKind::PushGoto:
        return called(b, idx, n, push_frames(idx, n, cb.t1));
      case TermKind::IndirectGoto: {
        uint32_t rets[kChunk];
        uint32_t* depth = pc_depth_.data();
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          uint32_t d = depth[t] - 1;
          depth[t] = d;
          rets[j] = *pcs_.get1(t, d);
        }
        returned(idx, rets, n);
        break;
      }
      case TermKind::Halt:
      case TermKind::Return:
        halt_lanes(idx, n);
        break;
    }
    return std::nullopt;
  }

  // A call from block b by threads already at the stack bound: the first
  // one's error (record: they all drop out).
  std::optional<RuntimeError> too_deep(uint32_t b, uint32_t* idx, int64_t& n) {
    const CBlock& cb = blocks_[b];
    auto [fn, blk] = split_lowered_label(p_.blocks[cb.t2].label.name);
    for (int64_t j = 0; j < n;) {
      if (pc_depth_[idx[j]] < opt_.max_stack_depth) {
        ++j;
        continue;
      }
      RuntimeError e =
          error_at(b, cb.term_loc, idx[j], stack_depth_message(opt_.max_stack_depth, fn));
      if (!opt_.record_errors) return e;
      drop(idx, n, j, std::move(e), false);
    }
    return std::nullopt;
  }

  // --max-steps: each thread of the list starts one more block; those over
  // the bound fail (record: they drop out; abort: the first stops the run).
  std::optional<RuntimeError> count_steps(uint32_t b, uint32_t* lanes, int64_t& n) {
    for (int64_t j = 0; j < n;) {
      if (++lane_steps_[lanes[j]] <= opt_.max_steps) {
        ++j;
        continue;
      }
      RuntimeError e =
          error_at(b, p_.blocks[b].label.loc, lanes[j], max_steps_message(opt_.max_steps));
      if (!opt_.record_errors) return e;
      drop(lanes, n, j, std::move(e), false);
    }
    return std::nullopt;
  }

  // ---- steps, segments and persistent loops ------------------------------

  // One step of block b on n threads: counted against --max-steps, traced
  // and recorded. `lanes` is the threads' list (for the trace and the error);
  // threads over --max-steps leave it (record mode). Utilization is over the
  // threads the step could have run: the live ones, or for a persistent
  // loop's step (`chunk`) at most a chunk of them.
  std::optional<RuntimeError> begin_step(uint32_t b, uint32_t* lanes, int64_t& n,
                                         bool chunk = false) {
    ++step_;
    if (opt_.max_steps > 0) {
      if (auto e = count_steps(b, lanes, n)) return e;
      if (n == 0) {  // every thread failed: no step
        --step_;
        return std::nullopt;
      }
    }
    if (step_ > check_at_) [[unlikely]]
      if (auto e = checkpoint(b, lanes[0])) return e;
    const int64_t could = chunk ? std::min(live_, kChunk) : live_;
    if (tracing_) trace_step(b, lanes, n, could);
    if (opt_.stats) opt_.stats->record_step(b, n, could, blocks_[b].prims);
    return std::nullopt;
  }

  // The cancel flag and the progress callback (RunOptions).
  std::optional<RuntimeError> checkpoint(uint32_t b, uint32_t lane) {
    if (auto e = cancelled(b, lane)) return e;
    if (opt_.progress) opt_.progress(step_ - 1, next_input_ - live_);
    check_at_ = next_check(opt_, step_);
    return std::nullopt;
  }

  // The cancel flag: if set, the run stops with the interrupted error.
  std::optional<RuntimeError> cancelled(uint32_t b, uint32_t lane) {
    if (!opt_.cancel || !opt_.cancel->load(std::memory_order_relaxed)) return std::nullopt;
    cancelled_ = true;
    return error_at(b, p_.blocks[b].label.loc, lane,
                    interrupted_message(step_ - 1, next_input_ - live_, n_inputs_));
  }

  // The step's threads by input (a lane runs several under --lanes) and
  // their call depths.
  void trace_step(uint32_t b, const uint32_t* lanes, int64_t n, int64_t could) {
    trace_threads_.resize(static_cast<size_t>(n));
    trace_depths_.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      trace_threads_[j] = static_cast<uint32_t>(lane_input_[lanes[j]]);
      trace_depths_[j] = pc_depth_[lanes[j]];
    }
    TraceStep s;
    s.step = step_ - 1;
    s.block = b;
    s.threads = trace_threads_.data();
    s.n = static_cast<size_t>(n);
    s.live = could;
    s.depths = trace_depths_.data();
    opt_.trace->step(s);
  }

  // The block's instructions on a chunk: compiled segments where there are
  // some, the kernels for the rest.
  std::optional<RuntimeError> run_ops(uint32_t b, uint32_t* idx, int64_t& n) {
    CBlock& cb = blocks_[b];
    const size_t end = cb.ops.size() - (cb.fused_cmp ? 1 : 0);  // the branch compares
    for (size_t i = 0; i < end && n > 0;) {
      int32_t s = cb.seg_at.empty() ? -1 : cb.seg_at[i];
      if (s >= 0 && cb.segs[s].fn) {
        if (auto e = run_seg(b, cb.segs[s], idx, n)) return e;
        i = cb.segs[s].last;
        continue;
      }
      if (auto e = run_op(b, cb.ops[i], idx, n)) return e;
      ++i;
    }
    return std::nullopt;
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

  std::optional<RuntimeError> run_seg(uint32_t b, const Seg& s, uint32_t* idx, int64_t& n) {
    for (int32_t l : s.spills) spill(leaves_[l], idx, n);
    if (s.may_fail) {
      // Keep the outputs' old values: on a failed check they come back and
      // the kernels run the same ops, reporting the error exactly.
      saved_.resize((s.thread_out.size() + s.scratch_out.size()) * kChunk);
      uint64_t* w = saved_.data();
      for (int32_t l : s.thread_out) {
        by_size(leaves_[l].ebytes, [&](auto z) {
          using T = decltype(z);
          const T* top = reinterpret_cast<const T*>(leaves_[l].top.data());
          for (int64_t j = 0; j < n; ++j) w[j] = top[idx[j]];
        });
        w += kChunk;
      }
      for (int32_t l : s.scratch_out) {
        std::memcpy(w, leaves_[l].scratch.data(), static_cast<size_t>(n) * leaves_[l].ebytes);
        w += kChunk;
      }
    }
    if (s.fn(s.base.data(), idx, n) == 0) return std::nullopt;
    const uint64_t* w = saved_.data();
    for (int32_t l : s.thread_out) {
      by_size(leaves_[l].ebytes, [&](auto z) {
        using T = decltype(z);
        T* top = reinterpret_cast<T*>(leaves_[l].top.data());
        for (int64_t j = 0; j < n; ++j) top[idx[j]] = static_cast<T>(w[j]);
      });
      w += kChunk;
    }
    for (int32_t l : s.scratch_out) {
      std::memcpy(leaves_[l].scratch.data(), w, static_cast<size_t>(n) * leaves_[l].ebytes);
      w += kChunk;
    }
    for (size_t i = s.first; i < s.last && n > 0; ++i) {
      auto e = execute(b, blocks_[b].ops[i], idx, n, idx);
      if (e && !opt_.record_errors) return e;
      if (e)
        if (auto f = retry(b, blocks_[b].ops[i], idx, n, std::move(*e))) return f;
    }
    return std::nullopt;
  }

  // The persistent schedule, interpreted: the chunk runs the block again and
  // again, each time on the threads that branched back to it (one step per
  // iteration), the others joining their next block's list. `counted`: the
  // first iteration's step was already counted.
  std::optional<RuntimeError> run_loop(uint32_t b, const uint32_t* idx, int64_t n, bool counted) {
    const CBlock& cb = blocks_[b];
    uint32_t buf[2][kChunk], out[kChunk];
    std::memcpy(buf[0], idx, static_cast<size_t>(n) * sizeof(uint32_t));
    const uint32_t exit = cb.self == 1 ? cb.t2 : cb.t1;
    const uint8_t stay_on = cb.self == 1 ? 1 : 0;
    const Leaf& cl = leaves_[cb.cond];
    int c = 0;
    while (n > 0) {
      if (!counted)
        if (auto e = begin_step(b, buf[c], n, true)) return e;
      counted = false;
      if (auto e = run_ops(b, buf[c], n)) return e;
      const uint8_t* cond =
          reinterpret_cast<const uint8_t*>(cl.in_scratch() ? cl.scratch.data() : cl.top.data());
      int64_t k = 0, m = 0;
      for (int64_t j = 0; j < n; ++j) {
        uint32_t t = buf[c][j];
        bool stay = (cond[cl.in_scratch() ? j : t] != 0) == (stay_on != 0);
        buf[1 - c][k] = t;
        out[m] = t;
        k += stay;
        m += !stay;
      }
      append_lanes(exit, out, m);
      n = k;
      c = 1 - c;
    }
    return std::nullopt;
  }

  // The persistent schedule, compiled: a window of up to kChunk of the
  // block's n threads has its per-thread values gathered into dense arrays;
  // the fused body runs on them again and again, finished threads frozen by
  // a mask. Once a quarter of the window has left, it is compacted (finished
  // threads' values back to their variables, the threads to the exit
  // block's list) and refilled from the threads still waiting, so the body
  // runs on nearly full windows until the list is used up. A body that may
  // fail is given one chunk at a time (n <= kChunk): on a failed check the
  // interpreter reruns that chunk and finds the thread the interpreter
  // would.
  std::optional<RuntimeError> run_dense_loop(uint32_t b, uint32_t* idx, int64_t n) {
    CBlock& cb = blocks_[b];
    DenseLoop& d = cb.dense;
    for (auto& op : cb.ops)
      if (op.shared)
        if (auto e = run_op(b, op, idx, n)) return e;
    if (n == 0) return std::nullopt;  // every thread failed (--on-error record)
    const uint32_t exit = cb.self == 1 ? cb.t2 : cb.t1;
    const size_t ns = d.slot_leaf.size();
    const bool tracing = tracing_;
    dense_base_.resize(ns);
    for (size_t s = 0; s < ns; ++s) {
      Leaf& l = leaves_[d.slot_leaf[s]];
      dense_base_[s] = d.kind[s] == jit::SlotKind::Thread    ? static_cast<void*>(dense_[s].data())
                       : d.kind[s] == jit::SlotKind::Scratch ? static_cast<void*>(l.scratch.data())
                                                             : static_cast<void*>(l.top.data());
    }
    int64_t m = 0, active = 0, next = 0;  // window size, lanes still looping, idx[next..n) waiting
    // Threads waiting join the window at its end.
    auto fill = [&] {
      const int64_t k = std::min(kChunk - m, n - next);
      if (k <= 0) return;
      const uint32_t* in = idx + next;
      std::memcpy(ids_ + m, in, static_cast<size_t>(k) * sizeof(uint32_t));
      std::fill(active_ + m, active_ + m + k, 1);
      for (size_t s = 0; s < ns; ++s) {
        if (d.kind[s] != jit::SlotKind::Thread) continue;
        const Leaf& l = leaves_[d.slot_leaf[s]];
        by_size(l.ebytes, [&](auto z) {
          using T = decltype(z);
          const T* top = reinterpret_cast<const T*>(l.top.data());
          T* dst = reinterpret_cast<T*>(dense_[s].data()) + m;
          for (int64_t j = 0; j < k; ++j) dst[j] = top[in[j]];
        });
      }
      m += k;
      next += k;
      active = m;
    };
    uint32_t out[kChunk];
    // Finished threads leave: their values go back to their variables and
    // (with `leave`) the threads to the exit block's list. Threads still
    // waiting take their places; once none wait, the rest move to the front.
    auto compact = [&](bool leave) {
      int64_t o = 0;  // out[0..o): the finished threads' positions, ascending
      for (int64_t j = 0; j < m; ++j) {
        out[o] = static_cast<uint32_t>(j);
        o += active_[j] == 0;
      }
      const int64_t r = leave ? std::min(o, n - next) : 0;  // holes refilled from the list
      const uint32_t* in = idx + next;
      // Holes out[r..o) stay: the threads after the first of them move down.
      int64_t first = m, w = m;
      uint32_t keep[kChunk];
      if (r < o) {
        first = w = out[r];
        for (int64_t j = first; j < m; ++j) {
          keep[w] = static_cast<uint32_t>(j);
          w += active_[j] != 0;
        }
      }
      for (size_t s = 0; s < ns; ++s) {
        if (d.kind[s] != jit::SlotKind::Thread) continue;
        const Leaf& l = leaves_[d.slot_leaf[s]];
        by_size(l.ebytes, [&](auto z) {
          using T = decltype(z);
          T* v = reinterpret_cast<T*>(dense_[s].data());
          T* top = reinterpret_cast<T*>(const_cast<std::byte*>(l.top.data()));
          if (d.written[s])
            for (int64_t k = 0; k < o; ++k) top[ids_[out[k]]] = v[out[k]];
          for (int64_t k = 0; k < r; ++k) v[out[k]] = top[in[k]];
          for (int64_t k = first; k < w; ++k) v[k] = v[keep[k]];
        });
      }
      uint32_t gone[kChunk];
      for (int64_t k = 0; k < o; ++k) gone[k] = ids_[out[k]];
      for (int64_t k = 0; k < r; ++k) ids_[out[k]] = in[k];
      for (int64_t k = first; k < w; ++k) ids_[k] = ids_[keep[k]];
      next += r;
      m = w;
      std::fill(active_, active_ + m, 1);
      if (leave) append_lanes(exit, gone, o);
      active = m;
    };
    fill();
    while (m > 0) {
      if (d.solo && m == 1 && next == n && !tracing && !opt_.stats && step_ < check_at_) {
        // The last thread in the loop (a straggler): it runs on alone, up to
        // the next checkpoint, without masks; one step per iteration.
        const int64_t limit = std::min<int64_t>(check_at_ - step_, kSoloBurst);
        step_ += d.solo(dense_base_.data(), limit, active_);
        if (active_[0] == 0) {
          compact(true);
          fill();
        }
        continue;
      }
      if (d.multi && !tracing && step_ + d.copies <= check_at_) {
        // Several iterations per call; one step for each that had a thread
        // (none of them due a checkpoint: max steps, cancel, progress).
        int64_t counts[kMaxCopies];
        active = d.multi(dense_base_.data(), m, active_, counts);
        for (int32_t k = 0; k < d.copies && counts[k] > 0; ++k) {
          ++step_;
          if (opt_.stats) opt_.stats->record_step(b, counts[k], std::min(live_, kChunk), cb.prims);
        }
        if (active == 0 || (m - active) * 4 >= m) {
          compact(true);
          fill();
        }
        continue;
      }
      // One step per iteration, with the threads still in the loop.
      if (tracing || step_ + 1 > check_at_) {
        if (active < m) {
          compact(true);
          fill();
        }
        if (auto e = begin_step(b, ids_, m, true)) return e;
      } else {
        ++step_;
        if (opt_.stats) opt_.stats->record_step(b, active, std::min(live_, kChunk), cb.prims);
      }
      if (d.may_fail) {
        backup_.resize(ns);
        for (size_t s = 0; s < ns; ++s)
          if (d.kind[s] == jit::SlotKind::Thread && d.written[s]) backup_[s] = dense_[s];
        std::copy(active_, active_ + m, active_backup_);
      }
      int64_t failed = 0;
      active = d.fn(dense_base_.data(), m, active_, &failed);
      if (failed) {
        // Back to the iteration's start; the kernels run it and report.
        for (size_t s = 0; s < ns; ++s)
          if (d.kind[s] == jit::SlotKind::Thread && d.written[s]) dense_[s] = backup_[s];
        std::copy(active_backup_, active_backup_ + m, active_);
        compact(true);
        uint32_t rest[kChunk];
        std::memcpy(rest, ids_, static_cast<size_t>(m) * sizeof(uint32_t));
        int64_t left = m;
        std::fill(active_, active_ + m, 0);
        compact(false);  // every value back in its variable
        if (auto e = run_loop(b, rest, left, true)) return e;
        for (; next < n; next += kChunk)  // not reached while may_fail bodies get one chunk
          if (auto e = run_loop(b, idx + next, std::min(kChunk, n - next), false)) return e;
        return std::nullopt;
      }
      // Frozen threads cost a lane of the body each iteration; compacting
      // costs a move per thread and variable: compact once a quarter of the
      // window has left.
      if (active == 0 || (m - active) * 4 >= m) {
        compact(true);
        fill();
      }
    }
    return std::nullopt;
  }

  // ---- the JIT's plan ------------------------------------------------------

  bool scalar_leaf(int32_t l) const {
    const Leaf& x = leaves_[l];
    return x.type.shape.empty() && x.ebytes > 0;
  }

  DType ref_dtype(const Ref& r) const {
    return r.constant >= 0 ? constants_[r.constant].type.dtype : leaves_[r.leaf].type.dtype;
  }

  bool compilable(const Op& op) const {
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
    if (op.outs.size() != 1) return false;
    std::vector<DType> ds;
    for (const auto& a : op.args) ds.push_back(ref_dtype(a));
    return jit::supported(op.prim, ds, leaves_[op.outs[0].leaf].type.dtype);
  }

  // ops [first, last) of block bi as a jit segment; slot_leaf gets each slot's
  // leaf. With stack_leaf, the block form (jit::BlockFn): pops and the pushes
  // of full variables are ops too, and stack_leaf gets each stack's leaf.
  jit::Segment make_segment(uint32_t bi, size_t first, size_t last, bool dense,
                            std::vector<int32_t>& slot_leaf,
                            std::vector<int32_t>* stack_leaf = nullptr) {
    const CBlock& cb = blocks_[bi];
    jit::Segment seg;
    std::map<int32_t, int32_t> slot_of;
    auto slot = [&](int32_t leaf) {
      auto it = slot_of.find(leaf);
      if (it != slot_of.end()) return it->second;
      const Leaf& l = leaves_[leaf];
      jit::Slot sl;
      sl.dtype = l.type.dtype;
      sl.kind = l.shared         ? jit::SlotKind::Shared
                : l.in_scratch() ? jit::SlotKind::Scratch
                                 : jit::SlotKind::Thread;
      sl.keep = false;
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
      if (r.constant >= 0) {
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
    for (size_t i = first; i < last; ++i) {
      const Op& op = cb.ops[i];
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
      f.outs.push_back(slot(op.outs[0].leaf));
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
  bool word_stack(int32_t l) const {
    const Leaf& x = leaves_[l];
    return x.full() && scalar_leaf(l) && x.words == 1 &&
           (x.ebytes == 1 || x.ebytes == 4 || x.ebytes == 8);
  }

  // Whether block bi can be compiled whole (jit::BlockFn): not a loop, ending
  // in goto, branch, push_goto or indirect_goto, every op compilable and
  // unable to fail, every pushed or popped variable a word_stack.
  bool block_form(const CBlock& cb) const {
    if (cb.self >= 0) return false;
    switch (cb.term) {
      case TermKind::Goto:
        if (cb.ops.empty()) return false;  // nothing to gain
        break;
      case TermKind::Branch:
        if (!scalar_leaf(cb.cond)) return false;
        break;
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
      if (!compilable(op)) return false;
      for (const auto& o : op.outs)
        if (leaves_[o.leaf].full() && !o.in_place && !word_stack(o.leaf)) return false;
    }
    return true;
  }

  // Compiled blocks: each one's base (jit.h, BlockFn), for this run's arrays.
  void bind_blocks() {
    for (CBlock& cb : blocks_) {
      if (!cb.block_fn && !cb.chained) continue;
      auto& base = cb.block_base;
      base.clear();
      for (int32_t l : cb.block_slots) {
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

  // Plans the blocks compiled whole (block_form, in programs with calls), the
  // compiled segments of the other blocks (runs of compilable ops, cut where
  // a full variable would be pushed twice) and the dense bodies of loop
  // blocks, compiles them all, and keeps the code.
  void build_jit() {
    if (!jit::available()) {
      jit_log_ = "jit: off (this build has no JIT)";
      return;
    }
    std::vector<jit::Segment> gsegs, dsegs;
    std::vector<std::pair<uint32_t, size_t>> gwhere;  // (block, segment)
    std::vector<uint32_t> dwhere;
    std::vector<std::vector<int32_t>> gslots, dslots;
    size_t nops = 0, fused = 0;
    std::vector<jit::Segment> bsegs;
    std::vector<uint32_t> bwhere;
    // Blocks compile whole in programs with calls, whose blocks run once per
    // call (recursion: many times per thread); elsewhere they run about once
    // per thread and would not repay their compilation (some 10 ms: they get
    // full code generation). AUTOBATCH_JIT_BLOCKS=0: never (for experiments).
    const char* bw = std::getenv("AUTOBATCH_JIT_BLOCKS");
    bool blocks_whole = !(bw && *bw == '0');
    bool calls = false;
    for (const auto& cb : blocks_) calls = calls || cb.term == TermKind::PushGoto;
    blocks_whole = blocks_whole && calls;
    for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
      CBlock& cb = blocks_[bi];
      cb.seg_at.assign(cb.ops.size(), -1);
      nops += cb.ops.size();
      if (blocks_whole && block_form(cb)) {
        std::vector<int32_t> sl, st;
        jit::Segment seg = make_segment(bi, 0, cb.ops.size(), false, sl, &st);
        bool fails = false;
        for (const auto& f : seg.ops) fails = fails || jit::may_fail(f, seg.slots);
        if (!fails) {
          seg.slot_var = sl;
          seg.stack_var = st;
          cb.block_slots = std::move(sl);
          cb.block_stacks = std::move(st);
          fused += cb.ops.size();
          bsegs.push_back(std::move(seg));
          bwhere.push_back(bi);
          continue;
        }
      }
      size_t i = 0;
      const size_t end = cb.ops.size() - (cb.fused_cmp ? 1 : 0);  // the branch compares
      while (i < end) {
        if (!compilable(cb.ops[i])) {
          ++i;
          continue;
        }
        Seg s;
        s.first = i;
        // The segment's pushes happen before it runs (s.spills), so a full
        // variable it pushes must not be written earlier in it: the push
        // would save the value from before that write.
        std::set<int32_t> written;
        for (; i < end && compilable(cb.ops[i]); ++i) {
          bool early = false;
          for (const auto& o : cb.ops[i].outs)
            if (leaves_[o.leaf].full() && !o.in_place && written.count(o.leaf)) early = true;
          if (early) break;
          for (const auto& o : cb.ops[i].outs) {
            written.insert(o.leaf);
            if (leaves_[o.leaf].full() && !o.in_place) s.spills.push_back(o.leaf);
          }
        }
        s.last = i;
        // One instruction alone gains nothing over its kernel: not worth compiling.
        if (s.last - s.first < 3) continue;
        fused += s.last - s.first;
        std::vector<int32_t> sl;
        jit::Segment seg = make_segment(bi, s.first, s.last, false, sl);
        for (size_t k = 0; k < seg.slots.size(); ++k) {
          const Leaf& l = leaves_[sl[k]];
          s.base.push_back(const_cast<std::byte*>(
              seg.slots[k].kind == jit::SlotKind::Scratch ? l.scratch.data() : l.top.data()));
        }
        for (const auto& f : seg.ops) {
          s.may_fail = s.may_fail || jit::may_fail(f, seg.slots);
          int32_t o = f.outs[0];
          std::vector<int32_t>& dst =
              seg.slots[o].kind == jit::SlotKind::Thread ? s.thread_out : s.scratch_out;
          if (std::find(dst.begin(), dst.end(), sl[o]) == dst.end()) dst.push_back(sl[o]);
        }
        cb.seg_at[s.first] = static_cast<int32_t>(cb.segs.size());
        gwhere.push_back({bi, cb.segs.size()});
        cb.segs.push_back(std::move(s));
        gsegs.push_back(std::move(seg));
        gslots.push_back(std::move(sl));
      }
      // A loop block compiles whole in the dense form if every op can.
      if (cb.self >= 0) {
        bool ok = scalar_leaf(cb.cond);
        for (const auto& op : cb.ops) {
          if (op.shared) continue;
          ok = ok && compilable(op);
          for (const auto& o : op.outs) ok = ok && !(leaves_[o.leaf].full() && !o.in_place);
        }
        if (ok) {
          std::vector<int32_t> sl;
          jit::Segment seg = make_segment(bi, 0, cb.ops.size(), true, sl);
          bool fails = false;
          for (const auto& f : seg.ops) fails = fails || jit::may_fail(f, seg.slots);
          seg.copies = fails ? 1 : loop_copies(seg.ops.size());
          dsegs.push_back(std::move(seg));
          dslots.push_back(std::move(sl));
          dwhere.push_back(bi);
        }
      }
    }
    if (gsegs.empty() && dsegs.empty() && bsegs.empty()) {
      jit_log_ = "jit: nothing to compile";
      return;
    }
    // The blocks compiled whole are chained (jit::ChainFn: threads run on
    // alone through them) under the persistent schedule, except where each
    // block run is counted per thread (--max-steps), traced or counted
    // (--stats); there, and with AUTOBATCH_JIT_CHAIN=0 (for experiments),
    // each is compiled on its own (jit::BlockFn).
    const char* cv = std::getenv("AUTOBATCH_JIT_CHAIN");
    const bool chain = !bsegs.empty() && !(cv && *cv == '0') && opt_.persistent &&
                       !(opt_.trace && opt_.trace->on()) && !opt_.stats && opt_.max_steps == 0;
    std::vector<uint32_t> return_to;  // the blocks calls return to
    for (const auto& cb : blocks_)
      if (cb.term == TermKind::PushGoto) return_to.push_back(cb.t1);
    std::sort(return_to.begin(), return_to.end());
    return_to.erase(std::unique(return_to.begin(), return_to.end()), return_to.end());
    std::string err;
    const auto frames = static_cast<uint32_t>(
        std::clamp<int64_t>(opt_.max_stack_depth, 0, int64_t{jit::kFlatLevels}));
    code_ = jit::compile(gsegs, dsegs, bsegs, chain ? &return_to : nullptr, frames, &err, &cached_);
    if (!code_) {
      jit_log_ = "jit: " + err + "; interpreting";
      for (auto& cb : blocks_) cb.seg_at.clear();
      return;
    }
    if (code_->chain) {
      chain_blocks_ = bwhere;
      for (uint32_t b : bwhere) blocks_[b].chained = true;
    } else {
      for (size_t k = 0; k < bwhere.size(); ++k) blocks_[bwhere[k]].block_fn = code_->block[k];
    }
    for (size_t k = 0; k < gwhere.size(); ++k)
      blocks_[gwhere[k].first].segs[gwhere[k].second].fn = code_->gather[k];
    size_t max_slots = 0;
    for (size_t k = 0; k < dwhere.size(); ++k) {
      DenseLoop& d = blocks_[dwhere[k]].dense;
      d.fn = code_->dense[k];
      d.multi = code_->dense_multi[k];
      d.solo = code_->dense_solo[k];
      d.copies = dsegs[k].copies;
      d.slot_leaf = dslots[k];
      for (size_t s = 0; s < dsegs[k].slots.size(); ++s) d.kind.push_back(dsegs[k].slots[s].kind);
      d.written.assign(d.slot_leaf.size(), false);
      for (const auto& f : dsegs[k].ops) {
        d.written[f.outs[0]] = true;
        d.may_fail = d.may_fail || jit::may_fail(f, dsegs[k].slots);
      }
      max_slots = std::max(max_slots, d.slot_leaf.size());
    }
    dense_.assign(max_slots, std::vector<uint64_t>(kChunk));
    char line[256];
    std::snprintf(line, sizeof line,
                  "jit: %zu of %zu instructions fused into %zu segments and %zu blocks, "
                  "%zu loop blocks compiled whole, in %.1f ms (",
                  fused, nops, gsegs.size(), bsegs.size(), dsegs.size(), code_->seconds * 1e3);
    jit_log_ = line + code_->detail + (cached_ ? "; cached)" : ")");
    size_t multi = 0;
    for (const auto& seg : dsegs) multi += seg.copies > 1;
    if (multi)
      jit_log_ += "; " + std::to_string(multi) + " loop blocks run several iterations per call";
    if (code_->chain)
      jit_log_ += "; the " + std::to_string(bwhere.size()) +
                  " blocks compiled whole are chained (" + std::to_string(code_->chain_copy_sites) +
                  " call sites jump to copies of their callee's first blocks)";
  }

  // A thread is done: its outputs go to its input's row; in refill mode the
  // lane takes the next input.
  void halt(uint32_t t) {
    store_outputs(t);
    release(t);
  }

  // Lane t's thread is done: in refill mode the lane takes the next input.
  void release(uint32_t t) {
    if (next_input_ < n_inputs_) {
      start_lane(t, next_input_++);
    } else {
      --live_;
    }
  }

  void store_outputs(uint32_t t) { store_outputs(&t, 1); }

  // Lanes lanes[0..n) are done: their outputs go to their inputs' rows.
  void store_outputs(const uint32_t* lanes, int64_t n) {
    if (output_leaves_.empty())
      for (const auto& o : p_.outputs)
        for (int32_t li : var_leaves_.at(o.name)) output_leaves_.push_back(li);
    const int64_t* row = lane_input_.data();
    size_t k = 0;
    for (int32_t li : output_leaves_) {
      const Leaf& l = leaves_[li];
      Array& out = outputs_[k++];
      const size_t stride = l.shared ? 0 : l.ebytes;
      if (l.ebytes == 8) {
        auto* dst = reinterpret_cast<uint64_t*>(out.data.data());
        const auto* src = reinterpret_cast<const uint64_t*>(l.top.data());
        for (int64_t j = 0; j < n; ++j) dst[row[lanes[j]]] = src[stride ? lanes[j] : 0];
      } else if (l.ebytes) {
        for (int64_t j = 0; j < n; ++j)
          std::memcpy(out.data.data() + row[lanes[j]] * l.ebytes, l.top.data() + lanes[j] * stride,
                      l.ebytes);
      }
    }
  }
};

}  // namespace

RunResult run_stack(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
                    int64_t batch, const RunOptions& opt) {
  if (batch == 0) {
    RunResult r;
    for (const auto& o : p.outputs) {
      (void)o;
    }
    // No threads: empty outputs of the right types.
    std::vector<TensorType> leaves;
    for (const auto& o : p.outputs) {
      auto it = types.vars.find(o.name);
      if (it != types.vars.end()) it->second.leaves(leaves);
    }
    for (const auto& t : leaves) r.outputs.emplace_back(t, 0);
    return r;
  }
  StackVM vm(p, types, inputs, batch, opt);
  return vm.run();
}

}  // namespace ab
