// Loop blocks under the persistent schedule: a chunk staying in a block
// that branches to itself, interpreted (run_loop) or as a compiled dense
// body over a refilled window of threads (run_dense_loop).
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

// The persistent schedule, interpreted: the chunk runs the block again and
// again, each time on the threads that branched back to it (one step per
// iteration), the others joining their next block's list. `counted`: the
// first iteration's step was already counted.
std::optional<RuntimeError> StackVM::run_loop(uint32_t b, const uint32_t* idx, int64_t n,
                                              bool counted) {
  const CBlock& cb = blocks_[b];
  uint32_t buf[2][kChunk], out[kChunk];
  std::memcpy(buf[0], idx, static_cast<size_t>(n) * sizeof(uint32_t));
  const uint32_t exit = cb.self == 1 ? cb.t2 : cb.t1;
  const uint8_t stay_on = cb.self == 1 ? 1 : 0;
  const Leaf& cl = leaves_[cb.cond];
  int c = 0;
  while (n > 0) {
    // A sweep (checkpoint), or (tiered) the compiled code is ready: the
    // threads wait at b again, between iterations, and the run loop goes on.
    if ((yield_ || (tier_ && code_due())) && !counted) {
      append_lanes(b, buf[c], n);
      return std::nullopt;
    }
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
    parked_ += m;
    n = k;
    c = 1 - c;
  }
  return std::nullopt;
}

// The persistent schedule, interpreted: the block's threads go round the
// loop together, one step per round over all of them (run chunk by chunk
// within the round), until every one has left for the exit. A step thus
// costs its fixed overhead once per round, not once per chunk, and the
// loop takes as many steps as its longest thread's iterations, as the
// stackless VM's loop does.
std::optional<RuntimeError> StackVM::run_loop_rounds(uint32_t b, PoolVector<uint32_t>& cur) {
  const CBlock& cb = blocks_[b];
  const uint32_t exit = cb.self == 1 ? cb.t2 : cb.t1;
  const uint8_t stay_on = cb.self == 1 ? 1 : 0;
  const Leaf& cl = leaves_[cb.cond];
  int64_t n = static_cast<int64_t>(cur.size());
  while (n > 0) {
    // A sweep (checkpoint), or (tiered) the compiled code is ready: the
    // threads wait at b again, between rounds, and the run loop goes on.
    if (yield_ || (tier_ && code_due())) {
      append_lanes(b, cur.data(), n);
      return std::nullopt;
    }
    rounds_ = true;
    auto e = begin_step(b, cur.data(), n, true);
    rounds_ = false;
    if (e) return e;
    round_next_.clear();
    round_out_.clear();
    for (int64_t s = 0; s < n; s += kChunk) {
      uint32_t* idx = cur.data() + s;
      int64_t m = std::min<int64_t>(kChunk, n - s);
      if (auto err = run_ops(b, idx, m)) return err;  // (--on-error record: m may shrink)
      const uint8_t* cond =
          reinterpret_cast<const uint8_t*>(cl.in_scratch() ? cl.scratch.data() : cl.top.data());
      for (int64_t j = 0; j < m; ++j) {
        const uint32_t t = idx[j];
        const bool stay = (cond[cl.in_scratch() ? j : t] != 0) == (stay_on != 0);
        (stay ? round_next_ : round_out_).push_back(t);
      }
    }
    append_lanes(exit, round_out_.data(), static_cast<int64_t>(round_out_.size()));
    parked_ += static_cast<int64_t>(round_out_.size());
    cur.swap(round_next_);
    n = static_cast<int64_t>(cur.size());
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
std::optional<RuntimeError> StackVM::run_dense_loop(uint32_t b, uint32_t* idx, int64_t n) {
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
  // Each Thread slot's per-thread values and their width: a variable's
  // tops, or (thread_index's operand) each thread's input row, never written.
  auto tops = [&](size_t s) -> std::pair<std::byte*, size_t> {
    const int32_t l = d.slot_leaf[s];
    if (l == kRowLeaf) return {reinterpret_cast<std::byte*>(lane_input_.data()), 8};
    return {const_cast<std::byte*>(leaves_[l].top.data()), leaves_[l].ebytes};
  };
  for (size_t s = 0; s < ns; ++s) {
    const int32_t l = d.slot_leaf[s];
    dense_base_[s] = d.kind[s] == jit::SlotKind::Thread ? static_cast<void*>(dense_[s].data())
                     : l == kFirstThreadLeaf            ? thread_operand(l)
                     : l <= kConstLeaf  // a tensor literal
                         ? static_cast<void*>(constants_[kConstLeaf - l].data.data())
                         : d.kind[s] == jit::SlotKind::Scratch
                               ? static_cast<void*>(leaves_[l].scratch.data())
                               : static_cast<void*>(leaves_[l].top.data());
  }
  // A tensor slot's value for thread t: the address of its event.
  auto event_address = [&](size_t s, uint32_t t) {
    const Leaf& l = leaves_[d.slot_leaf[s]];
    return reinterpret_cast<uint64_t>(l.top.data() + static_cast<size_t>(t) * l.ebytes);
  };
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
      if (d.tensor[s]) {  // the events' addresses
        for (int64_t j = 0; j < k; ++j) dense_[s][m + j] = event_address(s, in[j]);
        continue;
      }
      const auto top_s = tops(s);  // not a structured binding: clang 15 cannot capture one
      by_size(top_s.second, [&](auto z) {
        using T = decltype(z);
        const T* top = reinterpret_cast<const T*>(top_s.first);
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
      if (d.tensor[s]) {  // never written: refilled and moved only
        uint64_t* v = dense_[s].data();
        for (int64_t k = 0; k < r; ++k) v[out[k]] = event_address(s, in[k]);
        for (int64_t k = first; k < w; ++k) v[k] = v[keep[k]];
        continue;
      }
      const auto top_s = tops(s);
      by_size(top_s.second, [&](auto z) {
        using T = decltype(z);
        T* v = reinterpret_cast<T*>(dense_[s].data());
        T* top = reinterpret_cast<T*>(top_s.first);
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
    if (leave) {
      append_lanes(exit, gone, o);
      parked_ += o;
    }
    active = m;
  };
  fill();
  while (m > 0) {
    if (yield_) {
      // A sweep (checkpoint): every thread in the window or still waiting
      // goes back to b's list, its values to its variables.
      compact(true);  // the finished ones leave (and waiting ones fill their places)
      uint32_t parked[kChunk];
      const int64_t k = m;
      std::memcpy(parked, ids_, static_cast<size_t>(k) * sizeof(uint32_t));
      std::fill(active_, active_ + m, 0);
      compact(false);
      append_lanes(b, parked, k);
      append_lanes(b, idx + next, n - next);
      return std::nullopt;
    }
    if (d.solo && m == 1 && next == n && !tracing && step_ < check_at_) {
      // The last thread in the loop (a straggler): it runs on alone, up to
      // the next checkpoint, without masks; one step per iteration.
      const int64_t limit = std::min<int64_t>(check_at_ - step_, kTuning.solo_burst);
      const int64_t ran = d.solo(dense_base_.data(), limit, active_);
      step_ += ran;
      if (opt_.stats)
        for (int64_t k = 0; k < ran; ++k) opt_.stats->record_step(b, 1, loop_could(), cb.prims);
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
        if (opt_.stats) opt_.stats->record_step(b, counts[k], loop_could(), cb.prims);
      }
      if (active == 0 || (m - active) * kTuning.compact_fraction >= m) {
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
      if (opt_.stats) opt_.stats->record_step(b, active, loop_could(), cb.prims);
    }
    if (d.may_fail) {  // the window's m values of each written slot, not the whole chunk
      backup_.resize(ns);
      for (size_t s = 0; s < ns; ++s)
        if (d.kind[s] == jit::SlotKind::Thread && d.written[s]) {
          backup_[s].resize(kChunk);
          std::copy_n(dense_[s].data(), m, backup_[s].data());
        }
      std::copy(active_, active_ + m, active_backup_);
    }
    int64_t failed = 0;
    active = d.fn(dense_base_.data(), m, active_, &failed);
    if (failed) {
      // Back to the iteration's start; the kernels run it and report.
      for (size_t s = 0; s < ns; ++s)
        if (d.kind[s] == jit::SlotKind::Thread && d.written[s])
          std::copy_n(backup_[s].data(), m, dense_[s].data());
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
    if (active == 0 || (m - active) * kTuning.compact_fraction >= m) {
      compact(true);
      fill();
    }
  }
  return std::nullopt;
}

}  // namespace ab::stack
