// The stackless VM's calls and returns: the lanes reaching a call become a
// new frame's threads, except at a tail self-call, where they start their
// function again in the same frame; when a frame's queue is empty its
// results go back to the caller's lanes (skipping threads that failed under
// --on-error record).
#include "vm/stackless/stackless.h"

namespace ab::stackless {

// The lanes that reached a call become the threads of a new frame (at a
// tail self-call they stay in this one: tail_call).
std::optional<RuntimeError> StacklessVM::call(Frame& F, const Op& op, uint32_t block,
                                              const uint32_t* lanes, uint32_t m) {
  if (op.tail) {
    tail_call(F, op, lanes, m);
    return std::nullopt;
  }
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

// A tail self-call: the lanes' arguments become their parameters and they
// queue again at the entry, in the same frame, so the call takes no stack
// (as in the stack VM, where the call lowering makes it a jump, and in the
// reference interpreter). Only these m lanes change: the frame's other lanes
// may still be waiting elsewhere in the function with their own parameters.
// A parameter passed on unchanged in its own position is left alone (it
// stays shared if it was); any other parameter is no root of the sharing
// analysis (stackless/compile.cpp), so nothing was computed once from it,
// and if it is shared it is first expanded to one value per lane, since only
// some lanes get a new value.
void StacklessVM::tail_call(Frame& F, const Op& op, const uint32_t* lanes, uint32_t m) {
  const Func& fn = *F.fn;
  const size_t nparams = std::min(op.call_args.size(), fn.param_leaves.size());
  auto passed_on = [&](size_t j) {
    return op.call_args[j].leaf == static_cast<int32_t>(fn.param_leaves[j]);
  };
  // Every argument is read before any parameter is written: `f(b, a)` in a
  // function of (a, b) swaps them.
  size_t total = 0;
  for (size_t j = 0; j < nparams; ++j)
    if (!passed_on(j)) total += size_t{m} * fn.leaf_bytes[fn.param_leaves[j]];
  if (temp_.size() < total) temp_.resize(std::max(total, temp_.size() * 2));
  size_t off = 0;
  for (size_t j = 0; j < nparams; ++j) {
    if (passed_on(j)) continue;
    const Source& s = op.call_args[j];
    const size_t E = fn.leaf_bytes[fn.param_leaves[j]];
    copy_events(temp_.data() + off, nullptr, source_data(F, s), lanes, is_shared(F, s), m, E);
    off += size_t{m} * E;
  }
  off = 0;
  for (size_t j = 0; j < nparams; ++j) {
    if (passed_on(j)) continue;
    const uint32_t l = fn.param_leaves[j];
    const size_t E = fn.leaf_bytes[l];
    materialize(F, l);
    copy_events(F.leaf(l), lanes, temp_.data() + off, nullptr, false, m, E);
    off += size_t{m} * E;
  }
  F.enqueue(fn.block_pos[0], lanes, m);
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

}  // namespace ab::stackless
