// Lanes and stacks: a lane starting its input, the program-counter stack
// (calls and returns), lanes moving to their next block's list, threads
// halting (outputs stored, refill lanes restarted), and the per-thread
// bounds (--max-stack-depth, --max-steps).
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

void StackVM::set_shared_inputs() {
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

// The shared values computed before the run starts. passes/sharing makes a
// value shared only when it is the same for every thread whenever it is
// computed, so computing it early changes no result; it lets the compiled
// forms that run a lane from block to block (whole blocks, the chain) read
// it instead of stopping at the op that would compute it. Each op runs once
// its operands are ready (constants, shared inputs, values computed here),
// in a sweep repeated until nothing more is ready. An op that fails here is
// left to its block, which reports the error if a thread reaches it; a
// custom primitive (a user's callback) is left too, so that it is called
// only if a thread reaches it.
void StackVM::precompute_shared() {
  if (lanes_ <= 0) return;
  set_shared_inputs();
  const uint32_t lane0[1] = {0};
  lane_input_.assign(1, 0);  // (an error's thread, discarded; start_all_lanes sets them all)
  auto ready = [&](const Ref& r) { return r.constant >= 0 || leaves_[r.leaf].shared_ready; };
  for (bool more = true; more;) {
    more = false;
    for (uint32_t b = 0; b < blocks_.size(); ++b)
      for (const Op& op : blocks_[b].ops) {
        if (!op.shared || shared_done(op) || op.kind == Op::Kind::Pop) continue;
        if (op.kind == Op::Kind::Kernel && (!op.fn || is_custom_prim(op.prim))) continue;
        if (!std::all_of(op.args.begin(), op.args.end(), ready)) continue;
        bool ok = false;
        try {
          ok = !execute(b, op, nullptr, 1, lane0);
        } catch (const std::exception&) {
          ok = false;
        }
        if (!ok) continue;
        for (const auto& o : op.outs) leaves_[o.leaf].shared_ready = true;
        more = true;
      }
  }
  lane_input_.clear();
}

// Whether op's shared values are computed (op.shared: it computes nothing
// more).
bool StackVM::shared_done(const Op& op) const {
  for (const auto& o : op.outs)
    if (!leaves_[o.leaf].shared_ready) return false;
  return op.shared;
}

// Lane t begins input `input`: its inputs, empty stacks, halt under its PC.
// Once: which leaves a lane's start touches (no lookups per thread).
void StackVM::find_start_leaves() {
  if (!input_leaves_.empty() || p_.inputs.empty()) return;
  for (size_t li = 0; li < leaves_.size(); ++li)
    if (leaves_[li].full()) full_leaves_.push_back(static_cast<int32_t>(li));
  for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i)
    for (int32_t l : var_leaves_.at(p_.inputs[i].name)) input_leaves_.push_back({i, l});
}

// The run's start: lane t takes input t, for every lane at once (what
// start_lane does per lane, a column at a time: the stacks are fresh). Each
// per-lane array is written once here, not zeroed first: at 16 M threads
// every pass over them costs tens of milliseconds.
void StackVM::start_all_lanes() {
  find_start_leaves();
  const size_t L = static_cast<size_t>(lanes_);
  lane_input_.resize(L);
  for (size_t t = 0; t < L; ++t) lane_input_[t] = static_cast<int64_t>(t);
  for (const auto& [i, l] : input_leaves_) {
    const Array& a = inputs_[i];
    Leaf& leaf = leaves_[l];
    if (leaf.shared || leaf.in_scratch()) continue;
    if (!leaf.borrowed && leaf.ebytes) {
      std::byte* dst = leaf.top.data();
      if (a.batch == 1)
        for (size_t t = 0; t < L; ++t)
          std::memcpy(dst + t * leaf.ebytes, a.data.data(), leaf.ebytes);
      else if (L > 0)  // (an empty batch's arrays may have no storage)
        std::memcpy(dst, a.data.data(), L * leaf.ebytes);
    }
    if (leaf.full()) std::fill(leaf.depth.begin(), leaf.depth.end(), 1);
  }
  if (L > 0) std::fill_n(pcs_.put1(0, 0), L, kHalt);  // level 0: one row, lane t at t
  pc_depth_.assign(L, 1);
  if (L > 0) {
    wait_[0].resize(L);
    for (size_t t = 0; t < L; ++t) wait_[0][t] = static_cast<uint32_t>(t);
    bits_[0] |= 1;
    wait_hi_[0] = wait_lo_[0] = 1;
  }
  next_input_ = lanes_;
}

void StackVM::start_lane(uint32_t t, int64_t input) {
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

RuntimeError StackVM::error_at(uint32_t block, SourceLoc loc, uint32_t lane,
                               std::string msg) const {
  auto [fn, blk] = lowered_block_source(p_.blocks[block]);
  return RuntimeError{loc, std::move(msg), lane_input_[lane], n_inputs_, fn, blk};
}

// Each lane of the list pushes a frame returning to `ret` (frames count
// the halt at the bottom); returns the deepest depth before the push.
uint32_t StackVM::push_frames(const uint32_t* idx, int64_t n, uint32_t ret) {
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
std::optional<RuntimeError> StackVM::called(uint32_t b, uint32_t* idx, int64_t n,
                                            uint32_t deepest) {
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
void StackVM::returned(const uint32_t* idx, const uint32_t* rets, int64_t n) {
  uint32_t lanes[kChunk], to[kChunk], go[kChunk];
  const uint32_t* L = idx;
  const uint32_t* R = rets;
  for (int round = 0; n > 0; ++round) {
    if (round == kTuning.return_rounds) {  // many targets: the rest lane by lane
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
void StackVM::halt_lanes(const uint32_t* lanes, int64_t n) {
  if (next_input_ >= n_inputs_) {
    // No input waits for a lane: their outputs in one pass.
    store_outputs(lanes, n);
    live_ -= n;
  } else {
    for (int64_t j = 0; j < n; ++j) halt(lanes[j]);
  }
}

// A call from block b by threads already at the stack bound: the first
// one's error (record: they all drop out).
std::optional<RuntimeError> StackVM::too_deep(uint32_t b, uint32_t* idx, int64_t& n) {
  const CBlock& cb = blocks_[b];
  auto [fn, blk] = lowered_block_source(p_.blocks[cb.t2]);
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
std::optional<RuntimeError> StackVM::count_steps(uint32_t b, uint32_t* lanes, int64_t& n) {
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

// A thread is done: its outputs go to its input's row; in refill mode the
// lane takes the next input.
void StackVM::halt(uint32_t t) {
  store_outputs(t);
  release(t);
}

// Lane t's thread is done: in refill mode the lane takes the next input.
void StackVM::release(uint32_t t) {
  if (next_input_ < n_inputs_) {
    start_lane(t, next_input_++);
  } else {
    --live_;
  }
}

// Lanes lanes[0..n) are done: their outputs go to their inputs' rows.
void StackVM::store_outputs(const uint32_t* lanes, int64_t n) {
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

}  // namespace ab::stack
