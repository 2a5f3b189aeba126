#include "vm/stackless_vm.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "passes/sharing.h"
#include "vm/kernel.h"
#include "vm/literal.h"
#include "vm/slots.h"
#include "vm/value.h"

namespace ab {
namespace {

size_t count_leaves(const Type& t) {
  if (!t.is_tuple) return 1;
  size_t n = 0;
  for (const auto& e : t.elems) n += count_leaves(e);
  return n;
}

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

  std::byte* leaf(uint32_t l) const { return data + fn->leaf_offset[l] * n; }

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
    if (arena.size() < need) arena.resize(std::max(need, arena.size() * 2));
    data = arena.data();
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

void copy_events(std::byte* dst, const uint32_t* di, const std::byte* src, const uint32_t* si,
                 bool src_shared, size_t n, size_t E) {
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
      for (const auto& b : f.blocks) block_names_.push_back(f.name.name + "." + b.label.name);
      base += static_cast<uint32_t>(f.blocks.size());
    }
  }

  RunResult run(const std::string& entry, const std::vector<Array>& inputs, int64_t batch);

 private:
  const Module& m_;
  RunOptions opt_;
  std::vector<Func> fns_;
  std::vector<std::string> block_names_;
  std::vector<std::unique_ptr<Frame>> frames_;  // [0, depth_) are live
  size_t depth_ = 0;
  int64_t steps_ = 0, live_ = 0, batch_ = 0, peak_depth_ = 0;
  int64_t next_thread_ = 0;            // the next thread to start (refill mode)
  std::vector<int64_t> thread_steps_;  // per thread: blocks started (--max-steps)
  std::vector<RuntimeError> failed_;   // --on-error record
  const std::vector<Array>* inputs_ = nullptr;
  std::vector<Array> outputs_;  // written as threads return from the entry
  bool tracing_ = false;
  bool cancelled_ = false;
  int64_t check_at_ = INT64_MAX;  // the step after which --max-steps, cancel, progress are checked
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
  void finish_frame();
  void finish_frame_with_dead(Frame& C, Frame& F);
  void start_thread(Frame& E, uint32_t lane, uint32_t t);
  void release_lane(Frame& E, uint32_t lane);
  void fail_lane(Frame& F, uint32_t lane, RuntimeError e);
  void drop_at(Frame& F, uint32_t* lanes, uint32_t& m, uint32_t k, RuntimeError e);
  std::optional<RuntimeError> count_steps(Frame& F, uint32_t block, uint32_t* lanes, uint32_t& m);
  int64_t fail_pos_ = -1;  // run_prim's failing lane (an index into its list), -1: all
  void finish_threads(Frame& E, const Term& t, const uint32_t* lanes, uint32_t m);
};

void StacklessVM::compile(Func& cf, const Function& f, const FunctionTypes* ft,
                          const TypeInfo& types, uint32_t base) {
  cf.f = &f;
  cf.block_base = base;
  // Variables: a slot each, holding its tensor leaves (vm/slots); the
  // results' leaves follow them.
  std::vector<std::string> param_names;
  for (const auto& p : f.params) param_names.push_back(p.name.name);
  const Slots slots = compile_slots(f.blocks, param_names, ft ? *ft : FunctionTypes{});
  cf.leaf_types = slots.leaf_types;
  auto slot = [&](const std::string& name) -> uint32_t { return slots.at(name); };
  const std::vector<uint32_t>& slot_first = slots.first_leaf;
  const std::vector<uint32_t>& slot_count = slots.leaf_count;
  const std::vector<Type>& slot_type = slots.types;
  auto fallback = known_or_default;
  cf.var_leaves = static_cast<uint32_t>(cf.leaf_types.size());
  if (ft)
    for (const auto& r : ft->results) fallback(r).leaves(cf.leaf_types);
  cf.result_leaves = static_cast<uint32_t>(cf.leaf_types.size()) - cf.var_leaves;

  // Frame layout: leaves by decreasing dtype size, so that offset * n is
  // aligned for every leaf whatever n is.
  size_t L = cf.leaf_types.size();
  cf.leaf_bytes.resize(L);
  cf.leaf_offset.resize(L);
  std::vector<uint32_t> order(L);
  for (size_t l = 0; l < L; ++l) {
    order[l] = static_cast<uint32_t>(l);
    cf.leaf_bytes[l] =
        static_cast<uint32_t>(cf.leaf_types[l].num_elements() * dtype_size(cf.leaf_types[l].dtype));
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return dtype_size(cf.leaf_types[a].dtype) > dtype_size(cf.leaf_types[b].dtype);
  });
  for (uint32_t l : order) {
    cf.leaf_offset[l] = cf.lane_bytes;
    cf.lane_bytes += cf.leaf_bytes[l];
  }

  for (const auto& p : f.params) {
    uint32_t s = slot(p.name.name);
    for (uint32_t j = 0; j < slot_count[s]; ++j) cf.param_leaves.push_back(slot_first[s] + j);
  }

  // Positions: each block's start, and the instruction after each call.
  std::map<std::string, uint32_t> label_of;
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    label_of.emplace(f.blocks[bi].label.name, static_cast<uint32_t>(bi));
  std::vector<std::vector<uint32_t>> resume_at(f.blocks.size());
  for (uint32_t bi = 0; bi < f.blocks.size(); ++bi) {
    const Block& b = f.blocks[bi];
    cf.block_pos.push_back(static_cast<uint32_t>(cf.positions.size()));
    resume_at[bi].assign(b.instrs.size(), 0);
    uint32_t start = 0;
    for (uint32_t i = 0; i <= b.instrs.size(); ++i) {
      bool is_call = i < b.instrs.size() && b.instrs[i].kind == InstrKind::Call;
      if (!is_call && i < b.instrs.size()) continue;
      Position pos;
      pos.block = bi;
      pos.start = start;
      pos.end = i;
      pos.ends_in_call = is_call;
      for (uint32_t k = start; k < i; ++k) pos.prims += b.instrs[k].kind == InstrKind::Prim;
      cf.positions.push_back(pos);
      if (is_call) resume_at[bi][i] = static_cast<uint32_t>(cf.positions.size());
      start = i + 1;
    }
  }

  // Variables that hold one value for the whole frame (passes/sharing, with
  // every parameter as a root: a parameter is shared in a frame when the
  // caller passed a shared value). Which ones qualify is found here; whether
  // the operands are shared is seen when the assignment runs.
  SharingInfo sharing_info =
      sharing(f.blocks, param_names, std::vector<bool>(param_names.size(), true));

  // Operand leaves: a variable's leaves, or a literal's constant.
  auto operand_type = [&](const Operand& o, const std::optional<Type>& lit_type) {
    return o.is_var ? slot_type[slot(o.name)] : fallback(lit_type);
  };
  auto add_leaves = [&](const Operand& o, const std::optional<Type>& lit_type,
                        std::vector<Source>& out) {
    if (o.is_var) {
      uint32_t s = slot(o.name);
      for (uint32_t j = 0; j < slot_count[s]; ++j)
        out.push_back(Source{static_cast<int32_t>(slot_first[s] + j)});
      return;
    }
    cf.constants.push_back(literal_constant(o.lit, lit_type));
    const Value& v = cf.constants.back();
    out.push_back(Source{-1, v.data.data(), &v.type});
  };
  // The reference's binding of a value to a pattern: a name takes the whole
  // value; a tuple pattern binds its elements to the value's elements.
  auto bind = [&](auto& self, const Pattern& p, const Type& vt, const Source* src,
                  std::vector<Move>& out) -> void {
    if (!p.is_tuple) {
      uint32_t s = slot(p.name);
      size_t k = std::min<size_t>(slot_count[s], count_leaves(vt));
      for (size_t j = 0; j < k; ++j)
        out.push_back(Move{static_cast<uint32_t>(slot_first[s] + j), src[j]});
      return;
    }
    if (!vt.is_tuple) return;
    size_t off = 0;
    for (size_t i = 0; i < p.elems.size() && i < vt.elems.size(); ++i) {
      self(self, p.elems[i], vt.elems[i], src + off, out);
      off += count_leaves(vt.elems[i]);
    }
  };
  auto lit_type = [&](size_t bi, size_t ii, size_t ai) -> std::optional<Type> {
    return ft ? ab::operand_type(*ft, bi, ii, ai) : std::nullopt;
  };

  cf.ops.resize(f.blocks.size());
  cf.terms.resize(f.blocks.size());
  for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
    const Block& b = f.blocks[bi];
    for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
      const Instr& in = b.instrs[ii];
      Op op;
      op.ir = &in;
      op.kind = in.kind;
      std::vector<const Pattern*> names;
      in.out.names(names);
      op.invariant = in.kind != InstrKind::Call && !names.empty();
      for (const Pattern* p : names) op.invariant = op.invariant && sharing_info.shared(p->name);
      std::vector<Source> srcs;
      for (size_t ai = 0; ai < in.args.size(); ++ai)
        add_leaves(in.args[ai], lit_type(bi, ii, ai), srcs);
      if (in.kind == InstrKind::Call) {
        op.callee = func_index(in.callee.name);
        op.call_args = std::move(srcs);
        op.resume = resume_at[bi][ii];
        std::vector<Type> rts;
        auto it = types.funcs.find(in.callee.name);
        if (it != types.funcs.end())
          for (const auto& r : it->second.results) rts.push_back(fallback(r));
        Type vt = rts.size() == 1 ? rts[0] : Type::tuple(rts);
        std::vector<Source> result_index;
        for (size_t r = 0; r < count_leaves(vt); ++r)
          result_index.push_back(Source{static_cast<int32_t>(r)});
        bool discarded = in.out.is_tuple && in.out.elems.empty();
        if (!discarded && !rts.empty()) bind(bind, in.out, vt, result_index.data(), op.results);
      } else if (in.kind == InstrKind::Copy ||
                 (in.kind == InstrKind::Prim && in.prim == PrimId::Tuple)) {
        op.moves_only = true;
        Type vt;
        if (in.kind == InstrKind::Copy) {
          vt = operand_type(in.args[0], lit_type(bi, ii, 0));
        } else {
          std::vector<Type> elems;
          for (size_t ai = 0; ai < in.args.size(); ++ai)
            elems.push_back(operand_type(in.args[ai], lit_type(bi, ii, ai)));
          vt = Type::tuple(std::move(elems));
        }
        std::vector<Move> moves;
        bind(bind, in.out, vt, srcs.data(), moves);
        for (const Move& mv : moves)
          if (mv.src.leaf != static_cast<int32_t>(mv.dest))
            op.moves.push_back(mv);  // x = x moves nothing
        for (const Move& a : op.moves)
          for (const Move& b : op.moves)
            if (&a != &b && b.src.leaf == static_cast<int32_t>(a.dest)) op.through_temp = true;
      } else if (in.kind == InstrKind::Prim) {
        op.kernel = kernel_for(in.prim);
        op.attrs = resolve_attrs(in);
        op.args = std::move(srcs);
        for (const Pattern* p : names) {
          uint32_t s = slot(p->name);
          for (uint32_t j = 0; j < slot_count[s]; ++j) op.outs.push_back(slot_first[s] + j);
        }
      }
      cf.ops[bi].push_back(std::move(op));
    }
    const Terminator& t = b.term;
    Term& term = cf.terms[bi];
    term.kind = t.kind;
    auto target = [&](const NameRef& label) {
      auto it = label_of.find(label.name);
      return cf.block_pos[it == label_of.end() ? 0 : it->second];
    };
    if (t.kind == TermKind::Branch) {
      uint32_t s = slot(t.cond.name);
      term.cond = static_cast<int32_t>(slot_first[s]);
      term.on_true = target(t.target);
      term.on_false = target(t.target2);
    } else if (t.kind == TermKind::Goto) {
      term.on_true = target(t.target);
    } else if (t.kind == TermKind::Return) {
      for (size_t vi = 0; vi < t.values.size(); ++vi) {
        std::optional<Type> rt;
        if (ft && bi < ft->return_types.size() && vi < ft->return_types[bi].size())
          rt = ft->return_types[bi][vi];
        add_leaves(t.values[vi], rt, term.values);
      }
      if (term.values.size() > cf.result_leaves) term.values.resize(cf.result_leaves);
    }
  }
}

RunResult StacklessVM::run(const std::string& entry, const std::vector<Array>& inputs,
                           int64_t batch) {
  RunResult res;
  batch_ = batch;
  inputs_ = &inputs;
  const Func& ef = fns_[func_index(entry)];
  tracing_ = opt_.trace && opt_.trace->on();
  check_at_ = next_check(opt_, 0);
  if (tracing_) opt_.trace->header("stackless", batch, block_names_);
  if (opt_.stats) opt_.stats->init(block_names_);
  res.execution = all_interpreted(block_names_, "the stackless VM interprets every block");
  // With --lanes L < batch the entry frame has L lanes; a lane whose thread
  // returns takes the next unstarted thread (SPEC §5.7).
  size_t n = static_cast<size_t>(opt_.lanes > 0 ? std::min(opt_.lanes, batch) : batch);
  lanes_.resize(n);
  on_true_.resize(n);
  on_false_.resize(n);
  if (tracing_) tids_.resize(n);
  for (uint32_t r = 0; r < ef.result_leaves; ++r)
    outputs_.emplace_back(ef.leaf_types[ef.var_leaves + r], batch);

  Frame& E = push_frame();
  E.init(ef, static_cast<uint32_t>(n));
  E.call = nullptr;
  for (size_t i = 0; i < inputs.size() && i < ef.param_leaves.size(); ++i) {
    uint32_t l = ef.param_leaves[i];
    if (inputs[i].batch != 1 || inputs[i].byte_size() < ef.leaf_bytes[l]) continue;
    if (ef.leaf_bytes[l]) std::memcpy(E.leaf(l), inputs[i].data.data(), ef.leaf_bytes[l]);
    E.shared[l] = 1;
  }
  for (uint32_t k = 0; k < n; ++k) {
    E.parent[k] = lanes_[k] = k;
    start_thread(E, k, k);
  }
  next_thread_ = static_cast<int64_t>(n);
  if (opt_.max_steps > 0) thread_steps_.assign(static_cast<size_t>(batch), 0);
  E.enqueue(0, lanes_.data(), static_cast<uint32_t>(n));
  live_ = static_cast<int64_t>(n);

  while (depth_ > 0) {
    Frame& F = *frames_[depth_ - 1];
    int64_t q = F.first_waiting();
    if (q < 0) {
      finish_frame();
      continue;
    }
    if (auto e = step(F, static_cast<uint32_t>(q))) {
      res.error = std::move(e);
      break;
    }
  }
  depth_ = 0;
  if (!res.error) {
    res.outputs = std::move(outputs_);
    res.failed = std::move(failed_);
    finish_failed(res.outputs, res.failed);
  }
  outputs_.clear();
  res.steps = steps_;
  res.cancelled = cancelled_;
  res.finished = next_thread_ - live_;
  if (opt_.stats)
    opt_.stats->peak_stack_depth = std::max(opt_.stats->peak_stack_depth, peak_depth_);
  return res;
}

// Lane `lane` of the entry frame starts thread `t`: its per-thread inputs.
void StacklessVM::start_thread(Frame& E, uint32_t lane, uint32_t t) {
  E.tid[lane] = t;
  const Func& ef = *E.fn;
  const std::vector<Array>& inputs = *inputs_;
  for (size_t i = 0; i < inputs.size() && i < ef.param_leaves.size(); ++i) {
    uint32_t l = ef.param_leaves[i];
    const Array& a = inputs[i];
    size_t bytes = ef.leaf_bytes[l];
    if (E.shared[l] || bytes == 0 || a.byte_size() < bytes) continue;
    if (a.batch != 1 && a.batch != batch_) continue;
    // A batch-1 input whose parameter some thread assigned is per lane now.
    size_t row = a.batch == 1 ? 0 : t;
    std::memcpy(E.leaf(l) + lane * bytes, a.data.data() + row * bytes, bytes);
  }
}

// Threads returning from the entry: their results are outputs; in refill
// mode their lanes start the next threads.
void StacklessVM::finish_threads(Frame& E, const Term& t, const uint32_t* lanes, uint32_t m) {
  const Func& ef = *E.fn;
  for (size_t r = 0; r < t.values.size() && r < outputs_.size(); ++r) {
    const Source& s = t.values[r];
    size_t bytes = ef.leaf_bytes[ef.var_leaves + r];
    const std::byte* src = source_data(E, s);
    bool shared = is_shared(E, s);
    std::byte* out = outputs_[r].data.data();
    for (uint32_t k = 0; k < m; ++k)
      if (bytes)
        std::memcpy(out + size_t{E.tid[lanes[k]]} * bytes,
                    src + (shared ? 0 : size_t{lanes[k]} * bytes), bytes);
  }
  uint32_t restarted = 0;
  for (uint32_t k = 0; k < m && next_thread_ < batch_; ++k) {
    start_thread(E, lanes[k], static_cast<uint32_t>(next_thread_++));
    on_true_[restarted++] = lanes[k];
  }
  live_ -= m - restarted;
  E.enqueue(0, on_true_.data(), restarted);
}

// An entry-frame lane whose thread is done without results (it failed): in
// refill mode it starts the next thread.
void StacklessVM::release_lane(Frame& E, uint32_t lane) {
  if (next_thread_ < batch_) {
    start_thread(E, lane, static_cast<uint32_t>(next_thread_++));
    E.enqueue(0, &lane, 1);
  } else {
    --live_;
  }
}

// --on-error record: the thread of `lane` (of the top frame F) failed. Its
// error is kept; in the entry frame its lane is free at once, in a callee's
// frame it is marked dead so that it returns to no caller (finish_frame).
void StacklessVM::fail_lane(Frame& F, uint32_t lane, RuntimeError e) {
  e.thread = F.tid[lane];
  failed_.push_back(std::move(e));
  if (depth_ == 1) {
    release_lane(F, lane);
    return;
  }
  if (!F.any_dead) F.dead.assign(F.n, 0);
  F.any_dead = true;
  F.dead[lane] = 1;
}

// Takes lanes[k] out of the step's list (m lanes) and fails its thread.
void StacklessVM::drop_at(Frame& F, uint32_t* lanes, uint32_t& m, uint32_t k, RuntimeError e) {
  uint32_t lane = lanes[k];
  std::memmove(lanes + k, lanes + k + 1, size_t{m - k - 1} * 4);
  --m;
  fail_lane(F, lane, std::move(e));
}

// --max-steps: each lane's thread starts one more block; one over the bound
// fails (record: that thread alone; abort: the run).
std::optional<RuntimeError> StacklessVM::count_steps(Frame& F, uint32_t block, uint32_t* lanes,
                                                     uint32_t& m) {
  const SourceLoc loc = F.fn->f->blocks[block].label.loc;
  for (uint32_t k = 0; k < m;) {
    if (++thread_steps_[F.tid[lanes[k]]] <= opt_.max_steps) {
      ++k;
      continue;
    }
    RuntimeError e = error_at(F, block, loc, max_steps_message(opt_.max_steps), lanes[k]);
    if (!opt_.record_errors) return e;
    drop_at(F, lanes, m, k, std::move(e));
  }
  return std::nullopt;
}

// One step: the lanes waiting at position q run up to the end of the block
// (then the terminator moves them on) or up to a call (then a frame is pushed).
std::optional<RuntimeError> StacklessVM::step(Frame& F, uint32_t q) {
  const Func& fn = *F.fn;
  const Position& pos = fn.positions[q];
  uint32_t* lanes = lanes_.data();
  uint32_t m = F.take(q, lanes);
  ++steps_;
  if (opt_.max_steps > 0) {
    if (auto e = count_steps(F, pos.block, lanes, m)) return e;
    if (m == 0) return std::nullopt;
  }
  if (steps_ > check_at_) [[unlikely]] {
    const SourceLoc& loc = fn.f->blocks[pos.block].label.loc;
    const int64_t finished = next_thread_ - live_;
    if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) {
      cancelled_ = true;
      return error_at(F, pos.block, loc, interrupted_message(steps_ - 1, finished, batch_),
                      lanes[0]);
    }
    if (opt_.progress) opt_.progress(steps_ - 1, finished);
    check_at_ = next_check(opt_, steps_);
  }
  uint32_t pc = fn.block_base + pos.block;
  if (tracing_) {
    for (uint32_t k = 0; k < m; ++k) tids_[k] = F.tid[lanes[k]];
    TraceStep s;
    s.step = steps_ - 1;
    s.block = pc;
    s.threads = tids_.data();
    s.n = m;
    s.live = live_;
    s.depth = static_cast<int64_t>(depth_);
    opt_.trace->step(s);
  }
  if (opt_.stats) opt_.stats->record_step(pc, m, live_, pos.prims);

  const std::vector<Op>& ops = fn.ops[pos.block];
  for (uint32_t i = pos.start; i < pos.end; ++i) {
    const Op& op = ops[i];
    if (op.moves_only) {
      run_moves(F, op, lanes, m);
    } else if (auto e = run_prim(F, op, pos.block, lanes, m)) {
      if (!opt_.record_errors) return e;
      // Lanes before the failing one are done (the kernel contract): the
      // failing thread drops out and the rest run the instruction again.
      uint32_t from = 0;
      while (e) {
        if (fail_pos_ < 0) {  // computed once for the frame: every lane fails
          while (m > from) drop_at(F, lanes, m, m - 1, *e);
          break;
        }
        uint32_t k = from + static_cast<uint32_t>(fail_pos_);
        drop_at(F, lanes, m, k, std::move(*e));
        from = k;
        e = from < m ? run_prim(F, op, pos.block, lanes + from, m - from) : std::nullopt;
      }
      if (m == 0) return std::nullopt;
    }
  }
  if (pos.ends_in_call) return call(F, ops[pos.end], pos.block, lanes, m);

  const Term& t = fn.terms[pos.block];
  switch (t.kind) {
    case TermKind::Branch: {
      const std::byte* c = F.leaf(static_cast<uint32_t>(t.cond));
      if (F.shared[t.cond]) {
        F.enqueue(c[0] != std::byte{0} ? t.on_true : t.on_false, lanes, m);
        break;
      }
      uint32_t nt = 0, nf = 0;
      for (uint32_t k = 0; k < m; ++k) {
        uint32_t lane = lanes[k];
        if (c[lane] != std::byte{0})
          on_true_[nt++] = lane;
        else
          on_false_[nf++] = lane;
      }
      F.enqueue(t.on_true, on_true_.data(), nt);
      F.enqueue(t.on_false, on_false_.data(), nf);
      break;
    }
    case TermKind::Goto:
      F.enqueue(t.on_true, lanes, m);
      break;
    case TermKind::Return:
      if (depth_ == 1) {
        finish_threads(F, t, lanes, m);
        break;
      }
      for (size_t r = 0; r < t.values.size(); ++r) {
        uint32_t l = fn.var_leaves + static_cast<uint32_t>(r);
        const Source& s = t.values[r];
        copy_events(F.leaf(l), lanes, source_data(F, s), lanes, is_shared(F, s), m,
                    fn.leaf_bytes[l]);
      }
      break;
    default:
      return error_at(
          F, pos.block, fn.f->blocks[pos.block].term.loc,
          std::string("internal: '") + term_keyword(t.kind) + "' in an unlowered program",
          lanes[0]);
  }
  return std::nullopt;
}

std::optional<RuntimeError> StacklessVM::run_prim(Frame& F, const Op& op, uint32_t block,
                                                  const uint32_t* lanes, uint32_t m) {
  if (!op.kernel)
    return error_at(F, block, op.ir->callee.loc, "no kernel for '" + op.ir->callee.name + "'",
                    lanes[0]);
  const Func& fn = *F.fn;
  KernelCall kc;
  kc.attrs = &op.attrs;
  kc.nargs = static_cast<int>(op.args.size());
  kc.nouts = static_cast<int>(op.outs.size());
  arg_views_.resize(op.args.size());
  out_views_.resize(op.outs.size());
  kc.args = arg_views_.data();
  kc.outs = out_views_.data();

  bool once = false;  // one value for the whole frame, computed once
  if (op.invariant) {
    bool done = true;
    for (uint32_t l : op.outs) done = done && F.shared[l];
    if (done) return std::nullopt;
    once = true;
    for (const Source& s : op.args) once = once && is_shared(F, s);
  }
  if (!once)
    for (uint32_t l : op.outs) materialize(F, l);
  for (size_t a = 0; a < op.args.size(); ++a) {
    const Source& s = op.args[a];
    ArgView& v = arg_views_[a];
    v.data = source_data(F, s);
    v.type = s.is_const() ? s.type : &fn.leaf_types[s.leaf];
    v.access = is_shared(F, s) ? Access::Shared : Access::Gather;
    v.index = v.access == Access::Gather ? lanes : nullptr;
  }
  for (size_t o = 0; o < op.outs.size(); ++o) {
    uint32_t l = op.outs[o];
    out_views_[o] = OutView{F.leaf(l), once ? Access::Dense : Access::Gather,
                            once ? nullptr : lanes, &fn.leaf_types[l]};
  }
  kc.n = once ? 1 : m;
  if (prim_per_thread(op.ir->prim)) {
    thread_ids_.resize(m);
    for (uint32_t k = 0; k < m; ++k) thread_ids_[k] = opt_.first_thread + F.tid[lanes[k]];
    kc.threads = thread_ids_.data();
  }
  KernelError err;
  if (!op.kernel(kc, &err)) {
    fail_pos_ = once ? -1 : std::clamp<int64_t>(err.lane, 0, m - 1);
    uint32_t lane = once ? lanes[0] : lanes[fail_pos_];
    return error_at(F, block, op.ir->callee.loc, err.message, lane);
  }
  if (once)
    for (uint32_t l : op.outs) F.shared[l] = 1;
  return std::nullopt;
}

void StacklessVM::run_moves(Frame& F, const Op& op, const uint32_t* lanes, uint32_t m) {
  const Func& fn = *F.fn;
  if (op.invariant) {
    bool done = true, once = true;
    for (const Move& mv : op.moves) {
      done = done && F.shared[mv.dest];
      once = once && is_shared(F, mv.src);
    }
    if (done) return;
    if (once) {
      for (const Move& mv : op.moves) {
        if (size_t E = fn.leaf_bytes[mv.dest])
          std::memcpy(F.leaf(mv.dest), source_data(F, mv.src), E);
        F.shared[mv.dest] = 1;
      }
      return;
    }
  }
  if (!op.through_temp) {
    for (const Move& mv : op.moves) {
      materialize(F, mv.dest);
      copy_events(F.leaf(mv.dest), lanes, source_data(F, mv.src), lanes, is_shared(F, mv.src), m,
                  fn.leaf_bytes[mv.dest]);
    }
    return;
  }
  // Some destination is read by another move: read every source first.
  size_t total = 0;
  for (const Move& mv : op.moves) total += size_t{m} * fn.leaf_bytes[mv.dest];
  if (temp_.size() < total) temp_.resize(std::max(total, temp_.size() * 2));
  size_t off = 0;
  for (const Move& mv : op.moves) {
    copy_events(temp_.data() + off, nullptr, source_data(F, mv.src), lanes, is_shared(F, mv.src), m,
                fn.leaf_bytes[mv.dest]);
    off += size_t{m} * fn.leaf_bytes[mv.dest];
  }
  off = 0;
  for (const Move& mv : op.moves) {
    materialize(F, mv.dest);
    copy_events(F.leaf(mv.dest), lanes, temp_.data() + off, nullptr, false, m,
                fn.leaf_bytes[mv.dest]);
    off += size_t{m} * fn.leaf_bytes[mv.dest];
  }
}

// The lanes that reached a call become the threads of a new frame.
std::optional<RuntimeError> StacklessVM::call(Frame& F, const Op& op, uint32_t block,
                                              const uint32_t* lanes, uint32_t m) {
  if (static_cast<int64_t>(depth_) >= opt_.max_stack_depth) {
    RuntimeError e =
        error_at(F, block, op.ir->callee.loc,
                 stack_depth_message(opt_.max_stack_depth, op.ir->callee.name), lanes[0]);
    if (!opt_.record_errors) return e;
    for (uint32_t k = 0; k < m; ++k) fail_lane(F, lanes[k], e);  // every lane is as deep
    return std::nullopt;
  }
  const Func& callee = fns_[op.callee];
  Frame& C = push_frame();  // F stays valid: frames are individually allocated
  C.init(callee, m);
  C.call = &op;
  for (uint32_t k = 0; k < m; ++k) {
    C.tid[k] = F.tid[lanes[k]];
    C.parent[k] = lanes[k];
  }
  size_t nparams = std::min(op.call_args.size(), callee.param_leaves.size());
  for (size_t j = 0; j < nparams; ++j) {
    uint32_t l = callee.param_leaves[j];
    const Source& s = op.call_args[j];
    size_t E = callee.leaf_bytes[l];
    if (is_shared(F, s)) {
      if (E) std::memcpy(C.leaf(l), source_data(F, s), E);
      C.shared[l] = 1;
    } else {
      copy_events(C.leaf(l), nullptr, F.leaf(static_cast<uint32_t>(s.leaf)), lanes, false, m, E);
    }
  }
  // Every lane starts at the entry block.
  for (uint32_t k = 0; k < m; ++k) C.pool[k] = k;
  if (m) {
    C.top = m;
    C.run_start[0] = 0;
    C.run_len[0] = m;
    C.waiting[0] |= 1;
  }
  return std::nullopt;
}

// The top frame's queue is empty: every thread returned. Its results go to
// the caller's pattern, and the lanes continue after the call.
void StacklessVM::finish_frame() {
  Frame& C = *frames_[depth_ - 1];
  const Func& cf = *C.fn;
  if (depth_ == 1) {  // every thread has run: the outputs are complete
    depth_ = 0;
    return;
  }
  Frame& F = *frames_[depth_ - 2];
  const Op& op = *C.call;
  if (C.any_dead) {
    finish_frame_with_dead(C, F);
    return;
  }
  for (const Move& mv : op.results) {
    uint32_t src = cf.var_leaves + static_cast<uint32_t>(mv.src.leaf);
    if (src >= cf.leaf_types.size()) continue;
    materialize(F, mv.dest);
    copy_events(F.leaf(mv.dest), C.parent, C.leaf(src), nullptr, false, C.n,
                F.fn->leaf_bytes[mv.dest]);
  }
  F.enqueue(op.resume, C.parent, C.n);
  --depth_;
}

// finish_frame when some of C's threads failed (--on-error record): only the
// others return; a failed thread's lane in the caller is failed too (in the
// entry frame it is free again).
void StacklessVM::finish_frame_with_dead(Frame& C, Frame& F) {
  const Func& cf = *C.fn;
  std::vector<uint32_t> from, to;  // live lanes of C, and their lanes in F
  for (uint32_t k = 0; k < C.n; ++k) {
    if (!C.dead[k]) {
      from.push_back(k);
      to.push_back(C.parent[k]);
      continue;
    }
    if (depth_ == 2) {
      release_lane(F, C.parent[k]);
    } else {
      if (!F.any_dead) F.dead.assign(F.n, 0);
      F.any_dead = true;
      F.dead[C.parent[k]] = 1;
    }
  }
  const Op& op = *C.call;
  const uint32_t m = static_cast<uint32_t>(from.size());
  for (const Move& mv : op.results) {
    uint32_t src = cf.var_leaves + static_cast<uint32_t>(mv.src.leaf);
    if (src >= cf.leaf_types.size()) continue;
    materialize(F, mv.dest);
    copy_events(F.leaf(mv.dest), to.data(), C.leaf(src), from.data(), false, m,
                F.fn->leaf_bytes[mv.dest]);
  }
  F.enqueue(op.resume, to.data(), m);
  --depth_;
}

}  // namespace

RunResult run_stackless(const Module& m, const TypeInfo& types, const std::string& entry,
                        const std::vector<Array>& inputs, int64_t batch, const RunOptions& opt) {
  StacklessVM vm(m, types, opt);
  return vm.run(entry, inputs, batch);
}

}  // namespace ab
