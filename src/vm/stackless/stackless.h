// The stackless VM's internals (the public entry point is vm/stackless/stackless_vm.h):
// a function compiled once into Ops and positions (Func), one activation's
// storage and lane queues (Frame), and the interpreter class whose member
// functions are defined in stackless/compile.cpp (IR -> Func),
// stackless/step.cpp (one step of one block), stackless/calls.cpp (pushing
// and popping frames) and stackless_vm.cpp (the driver and the threads'
// bookkeeping). Included by those files only.
#pragma once
#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vm/kernels/kernel.h"
#include "vm/stackless/stackless_vm.h"
#include "vm/tuning.h"
#include "vm/value.h"

namespace ab::stackless {

// Where an instruction reads one tensor leaf: a variable leaf of the frame,
// or a constant stored once (a literal). In a call's result moves, `leaf` is
// the callee's result index instead.
struct Source {
  int32_t leaf = -1;
  const std::byte* data = nullptr;   // a constant's event
  const TensorType* type = nullptr;  // a constant's type
  bool is_const() const { return leaf < 0; }
};

struct Move {
  uint32_t dest = 0;  // a variable leaf
  Source src;
};

// One compiled instruction.
struct Op {
  const Instr* ir = nullptr;
  InstrKind kind = InstrKind::Prim;
  bool moves_only = false;    // a copy or tuple(): leaves move, no kernel
  bool through_temp = false;  // a destination is also another move's source
  bool invariant = false;     // assigns variables defined only here from invariant values
  KernelFn kernel = nullptr;
  PrimAttrs attrs;
  std::vector<Source> args;    // primitive operands
  std::vector<uint32_t> outs;  // primitive result leaves
  std::vector<Move> moves;     // copy, tuple()
  // call
  uint32_t callee = 0;
  std::vector<Source> call_args;  // one per callee parameter leaf, in order
  std::vector<Move> results;      // caller leaf <- callee result index
  uint32_t resume = 0;            // the position right after the call
  bool tail = false;              // a tail self-call (ir/tail_call.h): the frame is reused
};

struct Term {
  TermKind kind = TermKind::Return;
  int32_t cond = -1;                   // branch: a bool leaf
  uint32_t on_true = 0, on_false = 0;  // positions (goto: on_true)
  std::vector<Source> values;          // return: one per result leaf
};

// A place where lanes wait in a frame's queue: the start of a block, or the
// instruction right after a call. Positions are numbered in (block,
// instruction) order, so the smallest waiting position is the one to run.
struct Position {
  uint32_t block = 0;
  uint32_t start = 0, end = 0;  // instructions [start, end) are primitives and copies
  bool ends_in_call = false;    // then instruction `end` is a call
  int64_t prims = 0;            // primitive instructions in [start, end)
};

// Everything about one function that does not change from frame to frame.
struct Func {
  const Function* f = nullptr;
  std::vector<TensorType> leaf_types;  // variable leaves, then result leaves
  std::vector<uint32_t> leaf_bytes;    // bytes of one lane's event
  std::vector<uint64_t> leaf_offset;   // a frame of n lanes keeps leaf l at data + offset * n
  uint64_t lane_bytes = 0;
  uint32_t var_leaves = 0, result_leaves = 0;
  std::vector<uint32_t> param_leaves;
  std::vector<uint8_t> param_read_only;  // per param leaf: nothing in the function writes it
  std::vector<Position> positions;
  std::vector<uint32_t> block_pos;  // the position of each block's start
  std::vector<std::vector<Op>> ops;
  std::vector<Term> terms;
  std::deque<Value> constants;  // addresses stay put
  uint32_t block_base = 0;      // index of the first block in the trace's list
};

// One activation of a function for a set of threads (its lanes 0..n-1).
// Everything it holds lives in one arena that only grows: frames are reused
// as the stack moves up and down.
//
// The queue: the lanes waiting at each position are one increasing run in a
// pool of 2n slots, allocated at its top. A run that grows is rewritten at
// the top (merged in order), leaving a hole; when the top reaches the end
// the live runs slide down. At most n lanes wait in a frame, so the pool
// never overflows, and each step copies its run out contiguously.
struct Frame {
  const Func* fn = nullptr;
  uint32_t n = 0;
  const Op* call = nullptr;  // the caller's call instruction (null for the entry)
  Buffer arena;
  std::byte* data = nullptr;
  // Where each leaf's n events are: in the arena, or (the entry frame's
  // read-only parameters, StacklessVM::run) the caller's input array.
  std::vector<std::byte*> at;
  uint64_t* waiting = nullptr;    // bit per position: lanes wait there
  uint32_t* tid = nullptr;        // lane -> thread id (increasing, except in refill mode)
  uint32_t* parent = nullptr;     // lane -> the caller's lane (increasing)
  uint32_t* pool = nullptr;       // 2n slots holding the runs
  uint32_t* run_start = nullptr;  // position -> its run in the pool
  uint32_t* run_len = nullptr;    // position -> lanes waiting (0: none)
  uint8_t* shared = nullptr;      // variable leaf -> one value for every lane, stored at lane 0
  uint32_t words = 0, positions = 0, top = 0, cap = 0;
  // --on-error record: lanes whose thread failed in a call made from this
  // frame (they never continue here); allocated on the first.
  std::vector<uint8_t> dead;
  bool any_dead = false;

  std::byte* leaf(uint32_t l) const { return at[l]; }

  void init(const Func& f, uint32_t lanes) {
    fn = &f;
    n = lanes;
    any_dead = false;
    positions = static_cast<uint32_t>(f.positions.size());
    words = (positions + 63) / 64;
    cap = 2 * n;
    top = 0;
    size_t data_bytes = (f.lane_bytes * n + 7) & ~size_t{7};
    size_t need = data_bytes + 8 * size_t{words} +
                  4 * (2 * size_t{n} + cap + 2 * size_t{positions}) + f.var_leaves;
    // Not zeroed: every event is written before it is read (a variable is
    // defined on every path to its reads; the queue's arrays are filled
    // below or written as lanes arrive), and the entry frame of a large
    // batch would otherwise write its whole arena twice.
    if (arena.size() < need) arena = Buffer::for_overwrite(std::max(need, arena.size() * 2));
    data = arena.data();
    at.resize(f.leaf_offset.size());
    for (size_t l = 0; l < at.size(); ++l) at[l] = data + f.leaf_offset[l] * n;
    waiting = reinterpret_cast<uint64_t*>(data + data_bytes);
    tid = reinterpret_cast<uint32_t*>(waiting + words);
    parent = tid + n;
    pool = parent + n;
    run_start = pool + cap;
    run_len = run_start + positions;
    shared = reinterpret_cast<uint8_t*>(run_len + positions);
    std::fill(waiting, waiting + words, 0);
    std::fill(run_len, run_len + positions, 0);
    std::fill(shared, shared + f.var_leaves, 0);
  }

  // Lanes `a` (increasing) wait at position q, merged with those already there.
  void enqueue(uint32_t q, const uint32_t* a, uint32_t m) {
    if (m == 0) return;
    uint32_t len = run_len[q];
    if (len == 0) {
      uint32_t at = alloc(m);
      std::memcpy(pool + at, a, size_t{m} * 4);
      run_start[q] = at;
      run_len[q] = m;
      waiting[q / 64] |= uint64_t{1} << (q % 64);
      return;
    }
    uint32_t old = run_start[q];
    if (old + len == top && top + m <= cap && a[0] > pool[old + len - 1]) {
      std::memcpy(pool + top, a, size_t{m} * 4);  // appends in place
      top += m;
      run_len[q] = len + m;
      return;
    }
    run_len[q] = 0;  // the old run stays put while the merge reads it
    uint32_t at = alloc(len + m, q, len);
    old = run_start[q];
    std::merge(pool + old, pool + old + len, a, a + m, pool + at);
    run_start[q] = at;
    run_len[q] = len + m;
  }

  // The smallest position with waiting lanes, or -1.
  int64_t first_waiting() const {
    for (uint32_t w = 0; w < words; ++w)
      if (waiting[w]) return int64_t{w} * 64 + std::countr_zero(waiting[w]);
    return -1;
  }

  // Takes the lanes waiting at q into `out` (increasing); returns how many.
  uint32_t take(uint32_t q, uint32_t* out) {
    uint32_t len = run_len[q], at = run_start[q];
    std::memcpy(out, pool + at, size_t{len} * 4);
    if (at + len == top) top = at;
    run_len[q] = 0;
    waiting[q / 64] &= ~(uint64_t{1} << (q % 64));
    return len;
  }

 private:
  // k slots at the top of the pool. `keep` (with `keep_len` lanes) is a
  // run being merged: it survives a compaction, and run_start[keep] follows it.
  uint32_t alloc(uint32_t k, uint32_t keep = UINT32_MAX, uint32_t keep_len = 0) {
    if (top + k > cap) compact(keep, keep_len);
    uint32_t at = top;
    top += k;
    return at;
  }

  // Slides the live runs down to the bottom of the pool, in pool order.
  void compact(uint32_t keep, uint32_t keep_len) {
    auto len_of = [&](uint32_t q) { return q == keep ? keep_len : run_len[q]; };
    static thread_local std::vector<uint32_t> scratch;  // only grows
    if (scratch.size() < positions) scratch.resize(positions);
    uint32_t* live = scratch.data();
    uint32_t count = 0;
    for (uint32_t q = 0; q < positions; ++q)
      if (len_of(q)) live[count++] = q;
    std::sort(live, live + count,
              [&](uint32_t a, uint32_t b) { return run_start[a] < run_start[b]; });
    uint32_t to = 0;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t q = live[i], len = len_of(q);
      std::memmove(pool + to, pool + run_start[q], size_t{len} * 4);
      run_start[q] = to;
      to += len;
    }
    top = to;
  }
};

// Copies n events of E bytes: destination slot di[k] (or k when di is null)
// gets source slot si[k] (k when si is null; 0 when the source is shared).
template <size_t E>
void copy_fixed(std::byte* dst, const uint32_t* di, const std::byte* src, const uint32_t* si,
                bool src_shared, size_t n) {
  if (src_shared) {
    if (di)
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + size_t{di[k]} * E, src, E);
    else
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + k * E, src, E);
  } else if (di && si) {
    for (size_t k = 0; k < n; ++k) std::memcpy(dst + size_t{di[k]} * E, src + size_t{si[k]} * E, E);
  } else if (di) {
    for (size_t k = 0; k < n; ++k) std::memcpy(dst + size_t{di[k]} * E, src + k * E, E);
  } else if (si) {
    for (size_t k = 0; k < n; ++k) std::memcpy(dst + k * E, src + size_t{si[k]} * E, E);
  } else {
    std::memcpy(dst, src, n * E);
  }
}

inline void copy_events(std::byte* dst, const uint32_t* di, const std::byte* src,
                        const uint32_t* si, bool src_shared, size_t n, size_t E) {
  if (n == 0 || E == 0) return;
  switch (E) {
    case 1:
      return copy_fixed<1>(dst, di, src, si, src_shared, n);
    case 4:
      return copy_fixed<4>(dst, di, src, si, src_shared, n);
    case 8:
      return copy_fixed<8>(dst, di, src, si, src_shared, n);
    case 16:
      return copy_fixed<16>(dst, di, src, si, src_shared, n);
    case 24:
      return copy_fixed<24>(dst, di, src, si, src_shared, n);
    default:
      break;
  }
  for (size_t k = 0; k < n; ++k) {
    size_t d = di ? di[k] : k;
    size_t s = src_shared ? 0 : si ? si[k] : k;
    std::memcpy(dst + d * E, src + s * E, E);
  }
}

class StacklessVM {
 public:
  StacklessVM(const Module& m, const TypeInfo& types, const RunOptions& opt) : m_(m), opt_(opt) {
    fns_.resize(m.funcs.size());
    uint32_t base = 0;
    for (size_t i = 0; i < m.funcs.size(); ++i) {
      const Function& f = m.funcs[i];
      auto it = types.funcs.find(f.name.name);
      compile(fns_[i], f, it == types.funcs.end() ? nullptr : &it->second, types, base);
      for (const auto& b : f.blocks) {
        block_names_.push_back(f.name.name + "." + b.label.name);
        block_locs_.push_back(b.label.loc);
      }
      base += static_cast<uint32_t>(f.blocks.size());
    }
  }

  RunResult run(const std::string& entry, const std::vector<Array>& inputs, int64_t batch);

 private:
  const Module& m_;
  RunOptions opt_;
  std::vector<Func> fns_;
  std::vector<std::string> block_names_;
  std::vector<SourceLoc> block_locs_;  // parallel: each block's label
  std::vector<std::unique_ptr<Frame>> frames_;  // [0, depth_) are live
  size_t depth_ = 0;
  int64_t steps_ = 0, live_ = 0, batch_ = 0, peak_depth_ = 0;
  int64_t next_thread_ = 0;            // the next thread to start (refill mode)
  std::vector<int64_t> thread_steps_;  // per thread: blocks started (--max-steps)
  std::vector<RuntimeError> failed_;   // --on-error record
  const std::vector<Array>* inputs_ = nullptr;
  std::vector<uint8_t> borrowed_;  // per entry parameter: read in place (never written)
  std::vector<Array> outputs_;  // written as threads return from the entry
  bool tracing_ = false;
  bool cancelled_ = false;
  int64_t check_at_ = INT64_MAX;  // the step after which --max-steps, cancel, progress are checked
  // The sweep (Tuning::sweep_steps): when due, each other position with
  // waiting lanes in the frame on top (at depth sweep_depth_) runs once
  // (sweep_, popped from the back) before the smallest-position rule
  // resumes: a thread that never leaves a loop cannot hold up the others.
  int64_t sweep_at_ = kTuning.sweep_steps;
  std::vector<uint32_t> sweep_;
  size_t sweep_depth_ = 0;
  std::vector<RunningThread> running_;  // at a stop: the first threads still running
  void note_running(const Frame& F, uint32_t block, uint32_t lane);
  // Scratch reused by every step.
  std::vector<uint32_t> lanes_, on_true_, on_false_, tids_;
  std::vector<ArgView> arg_views_;
  std::vector<int64_t> thread_ids_;  // thread_index's operand: lane -> its thread
  std::vector<OutView> out_views_;
  Buffer temp_;

  uint32_t func_index(const std::string& name) const {
    for (size_t i = 0; i < m_.funcs.size(); ++i)
      if (m_.funcs[i].name.name == name) return static_cast<uint32_t>(i);
    return 0;
  }

  void compile(Func& cf, const Function& f, const FunctionTypes* ft, const TypeInfo& types,
               uint32_t base);

  RuntimeError error_at(const Frame& F, uint32_t block, SourceLoc loc, std::string msg,
                        uint32_t lane) const {
    const Function& f = *F.fn->f;
    return RuntimeError{loc,    std::move(msg), F.tid[lane],
                        batch_, f.name.name,    f.blocks[block].label.name};
  }

  Frame& push_frame() {
    if (frames_.size() <= depth_) frames_.push_back(std::make_unique<Frame>());
    Frame& F = *frames_[depth_++];
    peak_depth_ = std::max(peak_depth_, static_cast<int64_t>(depth_));
    return F;
  }

  // A shared leaf becomes one value per lane (before a write to some lanes).
  static void materialize(Frame& F, uint32_t l) {
    if (!F.shared[l]) return;
    F.shared[l] = 0;
    size_t E = F.fn->leaf_bytes[l];
    std::byte* p = F.leaf(l);
    if (F.n > 1) copy_events(p + E, nullptr, p, nullptr, true, F.n - 1, E);
  }

  bool is_shared(const Frame& F, const Source& s) const { return s.is_const() || F.shared[s.leaf]; }
  const std::byte* source_data(const Frame& F, const Source& s) const {
    return s.is_const() ? s.data : F.leaf(static_cast<uint32_t>(s.leaf));
  }

  std::optional<RuntimeError> step(Frame& F, uint32_t q);
  std::optional<RuntimeError> run_prim(Frame& F, const Op& op, uint32_t block,
                                       const uint32_t* lanes, uint32_t m);
  void run_moves(Frame& F, const Op& op, const uint32_t* lanes, uint32_t m);
  std::optional<RuntimeError> call(Frame& F, const Op& op, uint32_t block, const uint32_t* lanes,
                                   uint32_t m);
  void tail_call(Frame& F, const Op& op, const uint32_t* lanes, uint32_t m);
  void finish_frame();
  void finish_frame_with_dead(Frame& C, Frame& F);
  void start_thread(Frame& E, uint32_t lane, uint32_t t);
  void start_threads(Frame& E, uint32_t n);
  bool borrowable(const Func& ef, size_t i, const Array& a, size_t n) const;
  void release_lane(Frame& E, uint32_t lane);
  void fail_lane(Frame& F, uint32_t lane, RuntimeError e);
  void drop_at(Frame& F, uint32_t* lanes, uint32_t& m, uint32_t k, RuntimeError e);
  std::optional<RuntimeError> count_steps(Frame& F, uint32_t block, uint32_t* lanes, uint32_t& m);
  int64_t fail_pos_ = -1;  // run_prim's failing lane (an index into its list), -1: all
  void finish_threads(Frame& E, const Term& t, const uint32_t* lanes, uint32_t m);
};

}  // namespace ab::stackless
