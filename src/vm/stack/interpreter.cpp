// The interpreter: a block's ops on a chunk of lanes, one op at a time
// through the kernels (or a compiled gather segment where there is one),
// with pushes, pops, copies, --on-error record's retries, and the
// terminator moving each lane on.
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

// The fused compare and split: lane j to yes or no by a[t] CMP b.
int64_t StackVM::compare_split(const CBlock& cb, const uint32_t* idx, int64_t n, uint32_t* yes,
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

// A push: the current top of each lane moves to the stack below it.
// The top of a lane at depth d (the top included) lives in `top`; the
// values below it at levels 0 .. d-2 of `below`.
void StackVM::spill(Leaf& l, const uint32_t* idx, int64_t n) {
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

std::optional<RuntimeError> StackVM::pop(uint32_t b, const Op& op, const uint32_t* idx, int64_t n) {
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

void StackVM::copy_lanes(const ArgView& src, const OutView& dst, int64_t n, size_t eb) {
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
std::optional<RuntimeError> StackVM::run_op(uint32_t b, Op& op, uint32_t* idx, int64_t& n) {
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
void StackVM::push_copy8(Leaf& l, const ArgView& src, const uint32_t* idx, int64_t n) {
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
std::optional<RuntimeError> StackVM::retry(uint32_t b, const Op& op, uint32_t* idx, int64_t& n,
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
void StackVM::drop(uint32_t* idx, int64_t& n, int64_t j, RuntimeError e, bool scratch) {
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
std::optional<RuntimeError> StackVM::execute(uint32_t b, const Op& op, const uint32_t* idx,
                                             int64_t n, const uint32_t* lanes, int64_t off) {
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
  if (prim_per_thread(op.prim)) {  // thread_index, progress: never shared, so idx is set
    thread_ids_.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) thread_ids_[j] = opt_.first_thread + lane_input_[lanes[j]];
    call.threads = thread_ids_.data();
    if (prim_reports(op.prim)) call.progress = opt_.progress_table;
  }
  KernelError err;
  if (!op.fn(call, &err)) {
    int64_t j = err.lane >= 0 && err.lane < n ? err.lane : 0;
    fail_pos_ = j;
    return error_at(b, op.loc, lanes[idx ? j : 0], err.message);
  }
  return std::nullopt;
}

// Block b on the chunk's lanes by the interpreter: its ops, then its
// terminator moves each lane on.
std::optional<RuntimeError> StackVM::interpret(uint32_t b, uint32_t* idx, int64_t n) {
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

// The block's instructions on a chunk: compiled segments where there are
// some, the kernels for the rest.
std::optional<RuntimeError> StackVM::run_ops(uint32_t b, uint32_t* idx, int64_t& n) {
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

std::optional<RuntimeError> StackVM::run_seg(uint32_t b, const Seg& s, uint32_t* idx, int64_t& n) {
  for (int32_t l : s.spills) spill(leaves_[l], idx, n);
  // Each output leaf's values for the chunk's lanes, n events in a row, to
  // or from saved_ (1-, 4- and 8-byte scalars by value, events by copy).
  auto move_out = [&](int32_t l, std::byte* w, bool save) {
    const Leaf& x = leaves_[l];
    const size_t eb = x.ebytes;
    std::byte* at = const_cast<std::byte*>(x.in_scratch() ? x.scratch.data() : x.top.data());
    if (x.in_scratch()) {
      if (save)
        std::memcpy(w, at, static_cast<size_t>(n) * eb);
      else
        std::memcpy(at, w, static_cast<size_t>(n) * eb);
      return;
    }
    if (eb == 1 || eb == 4 || eb == 8) {
      by_size(eb, [&](auto z) {
        using T = decltype(z);
        T* top = reinterpret_cast<T*>(at);
        T* saved = reinterpret_cast<T*>(w);
        for (int64_t j = 0; j < n; ++j) {
          if (save)
            saved[j] = top[idx[j]];
          else
            top[idx[j]] = saved[j];
        }
      });
      return;
    }
    for (int64_t j = 0; j < n; ++j) {
      std::byte* e = at + static_cast<size_t>(idx[j]) * eb;
      if (save)
        std::memcpy(w + j * eb, e, eb);
      else
        std::memcpy(e, w + j * eb, eb);
    }
  };
  if (s.may_fail) {
    // Keep the outputs' old values: on a failed check they come back and
    // the kernels run the same ops, reporting the error exactly.
    size_t bytes = 0;
    for (int32_t l : s.thread_out) bytes += saved_stride(l);
    for (int32_t l : s.scratch_out) bytes += saved_stride(l);
    if (saved_.size() < bytes) saved_.resize(bytes);  // (only grown: resize zeroes what it adds)
    std::byte* w = saved_.data();
    for (const auto* list : {&s.thread_out, &s.scratch_out})
      for (int32_t l : *list) {
        move_out(l, w, true);
        w += saved_stride(l);
      }
    if (saved_depth_.size() < s.popped.size() * kChunk)
      saved_depth_.resize(s.popped.size() * kChunk);
    for (size_t p = 0; p < s.popped.size(); ++p) {
      const uint32_t* depth = leaves_[s.popped[p]].depth.data();
      for (int64_t j = 0; j < n; ++j) saved_depth_[p * kChunk + j] = depth[idx[j]];
    }
  }
  if (s.fn(s.base.data(), idx, n) == 0) return std::nullopt;
  if (call_error_) {  // a pop's error: reported as the interpreter reports it
    auto e = std::move(call_error_);
    call_error_.reset();
    return e;
  }
  // Undone: the outputs, and the pops (a pop moves a value from the rows to
  // the top and lowers the depth; the rows keep it).
  std::byte* w = saved_.data();
  for (const auto* list : {&s.thread_out, &s.scratch_out})
    for (int32_t l : *list) {
      move_out(l, w, false);
      w += saved_stride(l);
    }
  for (size_t p = 0; p < s.popped.size(); ++p) {
    uint32_t* depth = leaves_[s.popped[p]].depth.data();
    for (int64_t j = 0; j < n; ++j) depth[idx[j]] = saved_depth_[p * kChunk + j];
  }
  for (size_t i = s.first; i < s.last && n > 0; ++i) {
    Op& op = blocks_[b].ops[i];
    if (op.shared || op.kind == Op::Kind::Pop) {  // as the interpreter runs them
      if (auto e = run_op(b, op, idx, n)) return e;
      continue;
    }
    auto e = execute(b, op, idx, n, idx);
    if (e && !opt_.record_errors) return e;
    if (e)
      if (auto f = retry(b, op, idx, n, std::move(*e))) return f;
  }
  return std::nullopt;
}

}  // namespace ab::stack
