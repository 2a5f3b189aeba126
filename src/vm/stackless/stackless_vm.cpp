// The stackless VM's driver: sets up the entry frame, runs steps until the
// frame stack is empty, and keeps the threads' bookkeeping (starting and
// refilling lanes, outputs, --on-error record, --max-steps). The pieces:
// stackless/stackless.h (the data and the class), stackless/compile.cpp,
// stackless/step.cpp, stackless/calls.cpp.
#include "vm/stackless/stackless_vm.h"

#include "vm/stackless/stackless.h"

namespace ab {
namespace stackless {

RunResult StacklessVM::run(const std::string& entry, const std::vector<Array>& inputs,
                           int64_t batch) {
  RunResult res;
  batch_ = batch;
  inputs_ = &inputs;
  const Func& ef = fns_[func_index(entry)];
  tracing_ = opt_.trace && opt_.trace->on();
  check_at_ = next_check(opt_, 0);
  if (tracing_) opt_.trace->header("stackless", batch, block_names_, block_locs_);
  if (opt_.stats) opt_.stats->init(block_names_);
  res.execution =
      all_interpreted(block_names_, block_locs_, "the stackless VM interprets every block");
  // With --lanes L < batch the entry frame has L lanes; a lane whose thread
  // returns takes the next unstarted thread.
  size_t n = static_cast<size_t>(opt_.lanes > 0 ? std::min(opt_.lanes, batch) : batch);
  lanes_.resize(n);
  on_true_.resize(n);
  on_false_.resize(n);
  if (tracing_) tids_.resize(n);
  outputs_ = make_outputs(std::vector<TensorType>(ef.leaf_types.begin() + ef.var_leaves,
                                                   ef.leaf_types.begin() + ef.var_leaves +
                                                       ef.result_leaves),
                          batch, opt_);

  Frame& E = push_frame();
  E.init(ef, static_cast<uint32_t>(n));
  E.call = nullptr;
  borrowed_.assign(ef.param_leaves.size(), 0);
  int64_t in_place_bytes = 0;
  for (size_t i = 0; i < inputs.size() && i < ef.param_leaves.size(); ++i) {
    uint32_t l = ef.param_leaves[i];
    const Array& a = inputs[i];
    const size_t bytes = ef.leaf_bytes[l];
    if (a.batch == 1 && a.byte_size() >= bytes) {  // one value for every thread: stored once
      if (bytes) std::memcpy(E.leaf(l), a.data.data(), bytes);
      E.shared[l] = 1;
    } else if (borrowable(ef, i, a, n)) {
      // Read in place: lane k runs thread k, so its row is the input's row k,
      // and nothing writes the parameter (a large input is not copied).
      E.at[l] = const_cast<std::byte*>(a.data.data());
      borrowed_[i] = 1;
      in_place_bytes += static_cast<int64_t>(a.byte_size());
    }
  }
  for (uint32_t k = 0; k < n; ++k) E.tid[k] = E.parent[k] = lanes_[k] = k;
  start_threads(E, n);
  next_thread_ = static_cast<int64_t>(n);
  if (in_place_bytes > 0) res.log = "inputs read in place: " + std::to_string(in_place_bytes) + " bytes";
  if (opt_.max_steps > 0) thread_steps_.assign(static_cast<size_t>(batch), 0);
  E.enqueue(0, lanes_.data(), static_cast<uint32_t>(n));
  live_ = static_cast<int64_t>(n);

  while (depth_ > 0) {
    Frame& F = *frames_[depth_ - 1];
    int64_t q = -1;
    if (sweep_depth_ != depth_) sweep_.clear();  // the sweep was of another frame
    while (!sweep_.empty() && q < 0) {
      uint32_t c = sweep_.back();
      sweep_.pop_back();
      if (F.waiting[c / 64] >> (c % 64) & 1) q = c;
    }
    if (q < 0) q = F.first_waiting();
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
  res.running = std::move(running_);
  if (opt_.stats)
    opt_.stats->peak_stack_depth = std::max(opt_.stats->peak_stack_depth, peak_depth_);
  return res;
}

// The first threads still running at a stop: the step's first (`lane`, at
// `block` of frame F), then those waiting in the frames from the top down.
void StacklessVM::note_running(const Frame& F, uint32_t block, uint32_t lane) {
  auto add = [&](const Frame& G, uint32_t b, uint32_t l) {
    if (running_.size() >= kRunningShown) return;
    RunningThread t;
    t.thread = opt_.first_thread + G.tid[l];
    t.function = G.fn->f->name.name;
    t.block = G.fn->f->blocks[b].label.name;
    t.loc = G.fn->f->blocks[b].label.loc;
    running_.push_back(std::move(t));
  };
  add(F, block, lane);
  for (size_t d = depth_; d-- > 0;) {
    const Frame& G = *frames_[d];
    for (uint32_t q = 0; q < G.positions; ++q)
      for (uint32_t k = 0; k < G.run_len[q]; ++k)
        if (&G != &F || G.pool[G.run_start[q] + k] != lane)
          add(G, G.fn->positions[q].block, G.pool[G.run_start[q] + k]);
  }
}

// Parameter i of the entry `ef`, given `a`, can be read in place by an
// entry frame of n lanes: nothing writes it, lane k runs thread k (no
// refill lanes), and the array has the leaf's type and alignment.
bool StacklessVM::borrowable(const Func& ef, size_t i, const Array& a, size_t n) const {
  const uint32_t l = ef.param_leaves[i];
  const TensorType& t = ef.leaf_types[l];
  return i < ef.param_read_only.size() && ef.param_read_only[i] && a.batch == batch_ &&
         static_cast<int64_t>(n) == batch_ && a.type.dtype == t.dtype &&
         a.event_size() == t.num_elements() && a.data.data() &&
         a.byte_size() >= size_t{ef.leaf_bytes[l]} * n &&
         reinterpret_cast<uintptr_t>(a.data.data()) % dtype_size(t.dtype) == 0;
}

// Lanes 0..n-1 of the entry frame start threads 0..n-1: each batched input
// not read in place is copied in, one copy per parameter.
void StacklessVM::start_threads(Frame& E, uint32_t n) {
  const Func& ef = *E.fn;
  const std::vector<Array>& inputs = *inputs_;
  for (size_t i = 0; i < inputs.size() && i < ef.param_leaves.size(); ++i) {
    uint32_t l = ef.param_leaves[i];
    const Array& a = inputs[i];
    size_t bytes = ef.leaf_bytes[l];
    if (E.shared[l] || borrowed_[i] || bytes == 0 || a.batch != batch_) continue;
    // (n == 0: an empty batch, whose arrays may have no storage at all)
    if (n > 0 && a.byte_size() >= size_t{n} * bytes)
      std::memcpy(E.leaf(l), a.data.data(), size_t{n} * bytes);
  }
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
    // (A parameter read in place has no refill lanes: never restarted.)
    if (E.shared[l] || borrowed_[i] || bytes == 0 || a.byte_size() < bytes) continue;
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

}  // namespace stackless

RunResult run_stackless(const Module& m, const TypeInfo& types, const std::string& entry,
                        const std::vector<Array>& inputs, int64_t batch, const RunOptions& opt) {
  stackless::StacklessVM vm(m, types, opt);
  return vm.run(entry, inputs, batch);
}

}  // namespace ab
