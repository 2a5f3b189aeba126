// The scheduler: the run loop (the waiting block with the smallest index
// runs next, on all its threads, chunk by chunk), steps (counting, trace,
// stats, cancel and progress) and the entry point run_stack.
#include "vm/stack/stack_vm_impl.h"
#include "vm/stack/stack_vm.h"

namespace ab::stack {

RunResult StackVM::run() {
  RunResult res;
  // Outputs: one Array per output leaf, a row per input.
  std::vector<TensorType> out_types;
  for (const auto& o : p_.outputs)
    for (int32_t l : var_leaves_.at(o.name)) out_types.push_back(leaves_[l].type);
  outputs_ = make_outputs(out_types, n_inputs_, opt_);

  size_t nb = p_.blocks.size();
  wait_.assign(nb, {});
  held_.assign(nb, {});
  bits_.assign((nb + 63) / 64, 0);
  pcs_.init(static_cast<size_t>(lanes_), 1);
  depth_order_ = opt_.persistent && has_calls();
  if (opt_.persistent) find_loops();
  wait_hi_.assign(nb, 0);
  wait_lo_.assign(nb, 0);
  set_shared_inputs();
  if (opt_.max_steps > 0) lane_steps_.assign(static_cast<size_t>(lanes_), 0);
  start_all_lanes();
  bind_blocks();
  live_ = lanes_;
  peak_depth_ = lanes_ > 0 ? 1 : 0;  // the entry function's frame
  tracing_ = opt_.trace && opt_.trace->on();
  check_at_ = next_check(opt_, 0);
  std::vector<std::string> names;
  std::vector<SourceLoc> locs;
  for (const auto& b : p_.blocks) {
    names.push_back(b.label.name);
    locs.push_back(b.label.loc);
  }
  // Threads are numbered by input, also under --lanes.
  if (tracing_) opt_.trace->header("stack", n_inputs_, names, locs);
  if (opt_.stats) opt_.stats->init(names);
  PoolVector<uint32_t> cur;
  if (opt_.stats && code_) opt_.stats->seconds["jit"] += cached_ ? 0.0 : code_->seconds;
  while (live_ > 0) {
    // Tiered: the code compiled in the background comes in between steps.
    if (tier_ && code_due()) switch_to_code();
    yield_ = false;
    uint32_t b = kHalt;
    while (!sweep_.empty() && b == kHalt) {  // a sweep is under way (checkpoint)
      b = sweep_.back();
      sweep_.pop_back();
      if (!waiting(b)) b = kHalt;
    }
    if (b == kHalt) b = next_block();
    if (b == kHalt) break;  // every remaining thread is stuck (cannot happen in a sound program)
    take_block(b, cur);
    // The block runs as the plan says (CBlock::mode, jit_plan.cpp).
    const CBlock& cb = blocks_[b];
    if (cb.mode == ExecMode::DenseLoop) {
      // A window of threads loops in the block, refilled from the list.
      parked_ = 0;
      res.error = run_dense_loop(b, cur.data(), static_cast<int64_t>(cur.size()));
      parked_ = 0;
      if (res.error) break;
      continue;
    }
    // A loop block in the chain runs there (run_chunk), its threads alone
    // through their iterations; the other loop blocks here.
    const bool loop_here = cb.persistent_loop && cb.mode != ExecMode::Chained;
    if (loop_here && cb.mode != ExecMode::DenseChunks) {
      // The threads go round together until all have left.
      parked_ = 0;
      res.error = run_loop_rounds(b, cur);
      parked_ = 0;
      if (res.error) break;
      continue;
    }
    if (loop_here) {
      // Each chunk loops in the compiled body until all its threads have left.
      const bool dense = cb.mode == ExecMode::DenseChunks;
      parked_ = 0;
      for (size_t s = 0; s < cur.size() && !res.error; s += kChunk) {
        if (tier_ && code_due()) {  // the chunks not started wait for the code
          append_lanes(b, cur.data() + s, static_cast<int64_t>(cur.size() - s));
          break;
        }
        int64_t n = std::min<int64_t>(kChunk, static_cast<int64_t>(cur.size() - s));
        res.error =
            dense ? run_dense_loop(b, cur.data() + s, n) : run_loop(b, cur.data() + s, n, false);
      }
      parked_ = 0;
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
  {
    // The plan, and for a tiered run when its compiled blocks came in.
    std::vector<BlockPlan> report = plan_;
    if (tiered_) {
      const std::string when =
          switched_at_ >= 0 ? "; interpreted for the first " + std::to_string(switched_at_) +
                                  " steps, while its code compiled in the background"
                            : "; interpreted throughout: the run ended (" + std::to_string(step_) +
                                  " steps) before its code, compiling in the background, was ready";
      for (BlockPlan& bp : report)
        if (bp.mode != ExecMode::Interpreted) bp.reason += when;
      if (switched_at_ >= 0 && code_)
        jit_log_ +=
            "; compiled in the background, in use from step " + std::to_string(switched_at_);
      else if (switched_at_ < 0)
        jit_log_ = "jit: " + wiring_.what +
                   ", compiling in the background: the run ended before the code was ready "
                   "(interpreted throughout; the code goes into the cache for the next run)";
    } else if (code_ && counts_steps()) {
      // Never tiered (and the same whatever jit_wait says: --stats under
      // --threads N and under mpirun -np N report the same): the run counts
      // its steps.
      const std::string why = "; compiled before the run, which counts its steps (" +
                              std::string(opt_.stats ? "--stats"
                                          : tracing_ ? "--trace"
                                                     : "--max-steps") +
                              ")";
      for (BlockPlan& bp : report)
        if (bp.mode != ExecMode::Interpreted) bp.reason += why;
    } else if (code_ && !opt_.jit_wait_why.empty()) {
      // Compiled first, not tiered, by the run's own rule (api/run.cpp).
      for (BlockPlan& bp : report)
        if (bp.mode != ExecMode::Interpreted)
          bp.reason += "; compiled before the run: " + opt_.jit_wait_why;
    }
    res.execution = execution_report(names, locs, report);
  }
  res.log = jit_log_;
  if (!lanes_note_.empty()) res.log += (res.log.empty() ? "" : "; ") + lanes_note_;
  if (in_place_bytes_ > 0)
    res.log += (res.log.empty() ? "" : "; ") + std::string("inputs read in place: ") +
               std::to_string(in_place_bytes_) + " bytes";
  if (chain_calls_ > 0)
    res.log += "; chain: " + std::to_string(chain_calls_) + " calls, " +
               std::to_string(chain_runs_) + " calls and loop iterations run by threads alone, " +
               std::to_string(chain_stuck_) + " blocks left to the interpreter, " +
               std::to_string(chain_spent_) + " threads paused after " +
               std::to_string(kTuning.chain_budget) + " calls and loop iterations" +
               (code_ ? ", stacks held " + std::to_string(code_->chain_levels) + " levels deep"
                      : std::string());
  res.cancelled = cancelled_;
  res.finished = next_input_ - live_;
  res.running = std::move(running_);
  if (opt_.stats)
    opt_.stats->peak_stack_depth = std::max(opt_.stats->peak_stack_depth, peak_depth_);
  if (!res.error) {
    res.outputs = std::move(outputs_);
    res.failed = std::move(failed_);
    finish_failed(res.outputs, res.failed);
  }
  return res;
}

// The order within a depth (find_loops, next_block): over the blocks'
// edges within their function (a call's edge goes to the block it returns
// to), dominators by the iterative bitset method from each function's
// entry; a back edge u -> h where h dominates u; h's loop the blocks that
// reach such a u without passing h. Block b waits (before_[b]) for the
// blocks that reach it without a back edge (threads that may still join
// it), except a header whose loop holds b (those threads go round again),
// and a header waits for the blocks of its loop (threads still in the
// previous iteration).
void StackVM::find_loops() {
  const size_t nb = blocks_.size(), words = (nb + 63) / 64;
  using Bits = std::vector<uint64_t>;
  auto has = [](const Bits& s, uint32_t b) { return ((s[b >> 6] >> (b & 63)) & 1) != 0; };
  auto add = [](Bits& s, uint32_t b) { s[b >> 6] |= uint64_t{1} << (b & 63); };
  std::vector<std::vector<uint32_t>> succ(nb), pred(nb);
  std::vector<bool> entry(nb, false);
  if (nb > 0) entry[0] = true;
  for (uint32_t b = 0; b < nb; ++b) {
    const CBlock& cb = blocks_[b];
    if (cb.term == TermKind::Goto) succ[b] = {cb.t1};
    if (cb.term == TermKind::Branch) succ[b] = {cb.t1, cb.t2};
    if (cb.term == TermKind::PushGoto) {
      succ[b] = {cb.t1};
      entry[cb.t2] = true;
    }
    for (uint32_t c : succ[b]) pred[c].push_back(b);
  }
  std::vector<Bits> dom(nb, Bits(words, ~uint64_t{0}));
  for (uint32_t b = 0; b < nb; ++b)
    if (entry[b]) {
      dom[b].assign(words, 0);
      add(dom[b], b);
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = 0; b < nb; ++b) {
      if (entry[b] || pred[b].empty()) continue;
      Bits d(words, ~uint64_t{0});
      for (uint32_t p : pred[b])
        for (size_t w = 0; w < words; ++w) d[w] &= dom[p][w];
      add(d, b);
      if (d != dom[b]) {
        dom[b] = std::move(d);
        changed = true;
      }
    }
  }
  // Natural loops, and the reach of each block over forward edges.
  std::vector<Bits> loop(nb), reach(nb, Bits(words, 0));
  std::vector<std::vector<uint32_t>> fwd(nb);
  for (uint32_t u = 0; u < nb; ++u)
    for (uint32_t h : succ[u]) {
      if (!has(dom[u], h)) {
        fwd[u].push_back(h);
        continue;
      }
      Bits& body = loop[h];  // u -> h is a back edge
      if (body.empty()) body.assign(words, 0);
      std::vector<uint32_t> work;
      if (u != h && !has(body, u)) {
        add(body, u);
        work.push_back(u);
      }
      while (!work.empty()) {
        const uint32_t x = work.back();
        work.pop_back();
        for (uint32_t p : pred[x])
          if (p != h && !has(body, p)) {
            add(body, p);
            work.push_back(p);
          }
      }
    }
  // A block of h's loop also reaches, by going round, where h leads out
  // of the loop.
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = static_cast<uint32_t>(nb); b-- > 0;) {
      Bits r = reach[b];
      for (uint32_t s : fwd[b]) {
        add(r, s);
        for (size_t w = 0; w < words; ++w) r[w] |= reach[s][w];
      }
      for (uint32_t h = 0; h < nb; ++h)
        if (!loop[h].empty() && has(loop[h], b))
          for (size_t w = 0; w < words; ++w) r[w] |= reach[h][w] & ~loop[h][w];
      if (r != reach[b]) {
        reach[b] = std::move(r);
        changed = true;
      }
    }
  }
  before_.assign(nb, Bits(words, 0));
  for (uint32_t c = 0; c < nb; ++c)
    for (uint32_t b = 0; b < nb; ++b)
      if (b != c && has(reach[c], b) && !(!loop[c].empty() && has(loop[c], b)) &&
          !(!loop[b].empty() && has(loop[b], c)))
        add(before_[b], c);
  for (uint32_t h = 0; h < nb; ++h)
    if (!loop[h].empty())
      for (size_t w = 0; w < words; ++w) before_[h][w] |= loop[h][w];
  cand_.assign(words, 0);
}

// The block to run next: the smallest with waiting threads; in the
// depth order, of those holding a thread at the deepest depth; and of
// those, the smallest that waits for none of the others (before_).
uint32_t StackVM::next_block() const {
  uint32_t first = kHalt, deepest = 0;
  const size_t words = bits_.size();
  for (size_t w = 0; w < words; ++w)
    for (uint64_t bits = bits_[w]; bits; bits &= bits - 1) {
      const uint32_t b = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      if (first == kHalt || (depth_order_ && wait_hi_[b] > deepest)) {
        first = b;
        deepest = wait_hi_[b];
      }
      if (!depth_order_) break;
    }
  if (first == kHalt || before_.empty()) return first;
  // The candidates: blocks with threads at the deepest depth.
  for (size_t w = 0; w < words; ++w) {
    uint64_t c = bits_[w];
    if (depth_order_)
      for (uint64_t bits = c; bits; bits &= bits - 1) {
        const uint32_t b =
            static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        if (wait_hi_[b] != deepest) c &= ~(uint64_t{1} << (b & 63));
      }
    cand_[w] = c;
  }
  for (size_t w = 0; w < words; ++w)
    for (uint64_t bits = cand_[w]; bits; bits &= bits - 1) {
      const uint32_t b = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      const std::vector<uint64_t>& before = before_[b];
      bool wait = false;
      for (size_t v = 0; v < words && !wait; ++v) wait = (before[v] & cand_[v]) != 0;
      if (!wait) return b;
    }
  return first;
}

// Whether block b's shallower threads may run with its deepest: b
// returns (each of them leaves its frame there, so none runs ahead of the
// threads of its frame; at its caller's block it waits for them) and no
// block with waiting threads, at any depth, waits before b (none could
// still join b at their depths). Riding with the deepest takes no step
// their frames would not take anyway, and a return climbing a deep
// recursion carries the shallower threads returning through the same block.
bool StackVM::joins_all(uint32_t b) const {
  if (before_.empty() || blocks_[b].term != TermKind::IndirectGoto) return false;
  const std::vector<uint64_t>& before = before_[b];
  for (size_t w = 0; w < bits_.size(); ++w)
    if (before[w] & bits_[w]) return false;
  return true;
}

// Block b's waiting threads into `cur`: all of them, or in the depth order
// those at the deepest depth in its list (the others stay, waiting for
// their frames' turn, in held_'s buckets).
void StackVM::take_block(uint32_t b, PoolVector<uint32_t>& cur) {
  PoolVector<uint32_t>& w = wait_[b];
  std::vector<DepthBucket>& held = held_[b];
  auto clear_bit = [&] { bits_[b >> 6] &= ~(uint64_t{1} << (b & 63)); };
  if (!depth_order_ || wait_hi_[b] == wait_lo_[b] || joins_all(b)) {
    if (held.empty()) {
      cur.swap(w);
    } else {  // the buckets' threads arrived before w's
      cur.clear();
      for (DepthBucket& k : held) {
        cur.insert(cur.end(), k.lanes.begin(), k.lanes.end());
        k.lanes.clear();
        spare_.push_back(std::move(k.lanes));
      }
      cur.insert(cur.end(), w.begin(), w.end());
      held.clear();
    }
    w.clear();
    clear_bit();
    return;
  }
  // The newcomers into their buckets, then the deepest bucket runs.
  const uint32_t* depth = pc_depth_.data();
  size_t hint = 0;
  for (uint32_t t : w) hold(b, t, depth[t], hint);
  w.clear();
  cur.swap(held.back().lanes);
  held.back().lanes.clear();
  spare_.push_back(std::move(held.back().lanes));
  held.pop_back();
  if (held.empty()) {
    clear_bit();
  } else {
    wait_hi_[b] = held.back().depth;
    wait_lo_[b] = held.front().depth;
  }
}

// Thread t, at depth d, into block b's bucket of that depth (made if
// need be). `hint`: the bucket the previous thread went to (threads
// arrive in runs of one depth).
void StackVM::hold(uint32_t b, uint32_t t, uint32_t d, size_t& hint) {
  std::vector<DepthBucket>& held = held_[b];
  if (hint < held.size() && held[hint].depth == d) {
    held[hint].lanes.push_back(t);
    return;
  }
  size_t at = held.size();
  while (at > 0 && held[at - 1].depth > d) --at;
  if (at > 0 && held[at - 1].depth == d) {
    hint = at - 1;
  } else {
    PoolVector<uint32_t> lanes;
    if (!spare_.empty()) {
      lanes = std::move(spare_.back());
      spare_.pop_back();
    }
    held.insert(held.begin() + static_cast<std::ptrdiff_t>(at), DepthBucket{d, std::move(lanes)});
    hint = at;
  }
  held[hint].lanes.push_back(t);
}

// Tiered: the code compiled in the background replaces the interpreter,
// block by block as the plan says. Called between steps only (the run loop,
// or a persistent loop that parked its threads at its block), where every
// thread waits in a block's list with its values in its variables.
void StackVM::switch_to_code() {
  pending_->wait();  // ready, unless RunOptions::jit_switch_at chose the step
  tier_ = false;
  switched_at_ = step_;
  install_code(pending_->code(), pending_->error());
  bind_blocks();
}

// One step of block b on n threads: counted against --max-steps, traced
// and recorded. `lanes` is the threads' list (for the trace and the error);
// threads over --max-steps leave it (record mode). Utilization is over the
// threads the step could have run (loop_could).
std::optional<RuntimeError> StackVM::begin_step(uint32_t b, uint32_t* lanes, int64_t& n,
                                                bool chunk) {
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
  const int64_t could = chunk ? loop_could() : live_;
  if (tracing_) trace_step(b, lanes, n, could);
  if (opt_.stats) opt_.stats->record_step(b, n, could, blocks_[b].prims);
  return std::nullopt;
}

// The cancel flag, the progress callback (RunOptions) and the sweep.
std::optional<RuntimeError> StackVM::checkpoint(uint32_t b, uint32_t lane) {
  if (auto e = cancelled(b, lane)) return e;
  if (step_ >= sweep_at_) {
    sweep_at_ = step_ + kTuning.sweep_steps;
    sweep_.clear();
    for (size_t w = bits_.size(); w-- > 0;)  // descending: popped in block order
      for (uint64_t bits = bits_[w]; bits;) {
        int hi = 63 - __builtin_clzll(bits);
        bits &= ~(uint64_t{1} << hi);
        uint32_t c = static_cast<uint32_t>(w * 64 + static_cast<size_t>(hi));
        if (c != b) sweep_.push_back(c);
      }
    yield_ = !sweep_.empty();
  }
  if (opt_.progress) opt_.progress(step_ - 1, next_input_ - live_);
  check_at_ = next_check(opt_, step_);
  return std::nullopt;
}

// The cancel flag: if set, the run stops with the interrupted error.
std::optional<RuntimeError> StackVM::cancelled(uint32_t b, uint32_t lane) {
  if (!opt_.cancel || !opt_.cancel->load(std::memory_order_relaxed)) return std::nullopt;
  cancelled_ = true;
  note_running(b, lane);
  return error_at(b, p_.blocks[b].label.loc, lane,
                  interrupted_message(step_ - 1, next_input_ - live_, n_inputs_));
}

// The first threads still running at a stop: the step's first (`lane`, in
// block b), then those waiting, by block.
void StackVM::note_running(uint32_t b, uint32_t lane) {
  auto add = [&](uint32_t block, uint32_t l) {
    if (running_.size() >= kRunningShown) return;
    RunningThread t;
    t.thread = opt_.first_thread + lane_input_[l];
    auto [fn, blk] = lowered_block_source(p_.blocks[block]);
    t.function = fn;
    t.block = blk;
    t.loc = p_.blocks[block].label.loc;
    running_.push_back(std::move(t));
  };
  add(b, lane);
  for (size_t c = 0; c < wait_.size(); ++c) {
    for (uint32_t l : wait_[c])
      if (l != lane) add(static_cast<uint32_t>(c), l);
    for (const DepthBucket& k : held_[c])
      for (uint32_t l : k.lanes)
        if (l != lane) add(static_cast<uint32_t>(c), l);
  }
}

// The step's threads by input (a lane runs several under --lanes) and
// their call depths.
void StackVM::trace_step(uint32_t b, const uint32_t* lanes, int64_t n, int64_t could) {
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

}  // namespace ab::stack

namespace ab {

RunResult run_stack(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
                    int64_t batch, const RunOptions& opt) {
  if (batch == 0) {
    RunResult r;
    // No threads: empty outputs of the right types.
    std::vector<TensorType> leaves;
    for (const auto& o : p.outputs) {
      auto it = types.vars.find(o.name);
      if (it != types.vars.end()) it->second.leaves(leaves);
    }
    for (const auto& t : leaves) r.outputs.emplace_back(t, 0);
    return r;
  }
  stack::StackVM vm(p, types, inputs, batch, opt);
  return vm.run();
}

}  // namespace ab
