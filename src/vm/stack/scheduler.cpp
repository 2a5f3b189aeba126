// The scheduler: the run loop (the waiting block with the smallest index
// runs next, on all its threads, chunk by chunk), steps (counting, trace,
// stats, cancel and progress) and the entry point run_stack.
#include "vm/stack/stack_vm_impl.h"
#include "vm/stack_vm.h"

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
  bits_.assign((nb + 63) / 64, 0);
  pcs_.init(static_cast<size_t>(lanes_), 1);
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
      if (wait_[b].empty()) b = kHalt;
    }
    if (b == kHalt) b = next_block();
    if (b == kHalt) break;  // every remaining thread is stuck (cannot happen in a sound program)
    cur.swap(wait_[b]);
    wait_[b].clear();
    bits_[b >> 6] &= ~(uint64_t{1} << (b & 63));
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
    if (cb.persistent_loop) {
      // Each chunk loops in the block until all its threads have left.
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
               std::to_string(kTuning.chain_budget) + " calls and loop iterations";
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
  for (size_t c = 0; c < wait_.size(); ++c)
    for (uint32_t l : wait_[c])
      if (l != lane) add(static_cast<uint32_t>(c), l);
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
