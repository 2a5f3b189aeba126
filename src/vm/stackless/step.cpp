// The stackless VM's interpreter of one step: the lanes waiting at one
// position run the block's primitives and copies (each primitive one kernel
// call over all of them) up to the terminator, which hands them on, or up to
// a call (stackless/calls.cpp).
#include "vm/stackless/stackless.h"

namespace ab::stackless {

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
      note_running(F, pos.block, lanes[0]);
      return error_at(F, pos.block, loc, interrupted_message(steps_ - 1, finished, batch_),
                      lanes[0]);
    }
    if (opt_.progress) opt_.progress(steps_ - 1, finished);
    check_at_ = next_check(opt_, steps_);
    if (steps_ >= sweep_at_) {
      sweep_at_ = steps_ + kTuning.sweep_steps;
      sweep_.clear();
      sweep_depth_ = depth_;
      for (uint32_t w = F.words; w-- > 0;)  // descending: popped in position order
        for (uint64_t bits = F.waiting[w]; bits;) {
          int hi = 63 - std::countl_zero(bits);
          bits &= ~(uint64_t{1} << hi);
          sweep_.push_back(w * 64 + static_cast<uint32_t>(hi));
        }
    }
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
    if (prim_reports(op.ir->prim)) kc.progress = opt_.progress_table;
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

}  // namespace ab::stackless
