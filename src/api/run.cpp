// Program::run: checks the inputs, prepares the program for their types
// (cached), and runs the chosen VM, splitting the batch into contiguous
// shards over std::threads (RunOptions::threads).
//
// Sharding: shard k runs threads [first_k, first_k + count_k) of the batch as
// its own VM run, on borrowed slices of the batched inputs (inputs of batch 1
// are shared by every shard). How the batch is cut (shards::plan) and how the
// shards' outputs, errors and statistics are merged (shards::merge) is shared
// with the split over MPI processes (api/shards.h): outputs in input order,
// as a one-shard run's; statistics summed; the first failure in batch order,
// its thread counted in the whole batch; with OnError::Record the failed
// threads of every shard. With lanes L, each OS thread gets L / workers lanes
// (the first L % workers one more).
#include "vm/run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <fstream>
#include <mutex>
#include <new>
#include <streambuf>
#include <thread>

#include "api/internal.h"
#include "api/shards.h"
#include "passes/result_names.h"
#include "io/limits.h"
#include "support/log.h"
#include "vm/kernels/kernel.h"
#include "vm/reference/reference.h"
#include "vm/reference/lowered.h"
#include "vm/stack/stack_vm.h"
#include "vm/stackless/stackless_vm.h"
#include "vm/trace.h"

namespace autobatch {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A stream that hands each complete line to a callback (and to a file).
class LineSink : public std::streambuf {
 public:
  LineSink(std::function<void(std::string_view)> cb, std::unique_ptr<std::ofstream> file)
      : cb_(std::move(cb)), file_(std::move(file)) {}
  ~LineSink() override { sync(); }

 protected:
  int_type overflow(int_type ch) override {
    if (ch == traits_type::eof()) return traits_type::not_eof(ch);
    char c = traits_type::to_char_type(ch);
    xsputn(&c, 1);
    return ch;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (file_) file_->write(s, n);
    for (std::streamsize i = 0; i < n; ++i) {
      if (s[i] == '\n') {
        if (cb_) cb_(line_);
        line_.clear();
      } else {
        line_ += s[i];
      }
    }
    return n;
  }
  int sync() override {
    if (file_) file_->flush();
    return 0;
  }

 private:
  std::function<void(std::string_view)> cb_;
  std::unique_ptr<std::ofstream> file_;
  std::string line_;
};

class LineStream : public std::ostream {
 public:
  explicit LineStream(std::unique_ptr<LineSink> buf)
      : std::ostream(buf.get()), buf_(std::move(buf)) {}
  ~LineStream() override { flush(); }

 private:
  std::unique_ptr<LineSink> buf_;
};

RuntimeError runtime_error_to_public(const ab::RuntimeError& e, const ab::SourceFile* src) {
  RuntimeError out;
  out.file = src ? src->name_of(e.loc.line) : "";  // an imported file's own name and line
  out.line = static_cast<int>(ab::local_line(e.loc.line));
  out.column = static_cast<int>(e.loc.col);
  out.function = e.function;
  out.block = e.block;
  out.thread = e.thread;
  out.batch = e.batch;
  out.message = e.message;
  out.rendered = ab::render_runtime_error(src, e);
  return out;
}

RuntimeError out_of_memory() {
  RuntimeError e;
  e.message =
      "out of memory (the batch times the size of one thread's values is too large for this "
      "machine)";
  e.rendered = "autobatch: error: " + e.message + "\n";
  return e;
}

ab::Array borrowed(const ab::TensorType& type, int64_t batch, const void* data, size_t bytes) {
  ab::Array out;
  out.type = type;
  out.batch = batch;
  out.data = ab::Buffer::borrow(data, bytes);
  return out;
}

// `a` restricted to threads [start, start + n) without a copy (a batch-1
// input is shared: given whole).
ab::Array slice(const ab::Array& a, int64_t start, int64_t n) {
  if (a.batch == 1) return borrowed(a.type, 1, a.data.data(), a.byte_size());
  size_t event_bytes = static_cast<size_t>(a.event_size()) * ab::dtype_size(a.type.dtype);
  ab::Array out;
  out.type = a.type;
  out.batch = n;
  out.data = ab::Buffer::borrow(a.data.data() + static_cast<size_t>(start) * event_bytes,
                                static_cast<size_t>(n) * event_bytes);
  return out;
}

struct Shard {
  int64_t start = 0;
  int64_t size = 0;
  ab::Stats stats;
  ab::RunResult result;
  bool out_of_memory = false;
  std::string internal_error;
};

// A shard's result as a part of the batch (shards::merge): its errors'
// threads counted in the whole batch (this run's shard, and this run's place
// in a batch split over processes: first_thread, total_batch).
shards::Part to_part(Shard& s, const RunOptions& o, int64_t batch, const ab::SourceFile* src) {
  shards::Part p;
  p.span = {s.start, s.size};
  p.cancelled = s.result.cancelled;
  const int64_t whole = o.total_batch > 0 ? o.total_batch : batch;
  if (s.out_of_memory) {
    p.runtime_error = out_of_memory();
    return p;
  }
  if (!s.internal_error.empty()) {
    p.diagnostics.push_back(option_error("internal error: " + s.internal_error));
    return p;
  }
  if (s.result.error) {
    ab::RuntimeError e = *s.result.error;
    if (e.thread >= 0) e.thread += o.first_thread + s.start;
    e.batch = whole;
    p.runtime_error = runtime_error_to_public(e, src);
    return p;
  }
  for (const ab::RuntimeError& f : s.result.failed) {  // sorted by thread
    ab::RuntimeError e = f;
    e.thread += o.first_thread + s.start;
    e.batch = whole;
    ThreadError te;
    te.thread = e.thread;
    te.message = ab::render_thread_error(src, e);
    te.error = runtime_error_to_public(e, src);
    p.errors.push_back(std::move(te));
  }
  for (ab::Array& a : s.result.outputs) p.outputs.push_back(ArrayAccess::wrap(std::move(a)));
  if (o.stats) {
    Stats st;
    for (size_t b = 0; b < s.stats.block_names.size(); ++b)
      st.block_executions.emplace_back(s.stats.block_names[b], b < s.stats.block_executions.size()
                                                                   ? s.stats.block_executions[b]
                                                                   : 0);
    st.steps = s.stats.steps;
    st.primitive_executions = s.stats.primitive_executions;
    st.lane_operations = s.stats.lane_operations;
    st.utilization_sum = s.stats.utilization_sum;
    st.utilization_applicable = s.stats.batched;
    st.peak_stack_depth = s.stats.peak_stack_depth;
    p.stats = std::move(st);
  }
  return p;
}

// RunOptions::time_limit: a thread that raises the run's stop flag when the
// limit passes, and passes the caller's cancel flag on (polled every 20 ms).
// Without a limit the VMs watch the caller's flag directly.
class Watchdog {
 public:
  Watchdog(double seconds, const std::atomic<bool>* cancel) : cancel_(cancel) {
    if (seconds <= 0) return;
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(seconds));
    thread_ = std::thread([this, deadline] {
      std::unique_lock<std::mutex> lock(m_);
      while (!done_) {
        if (cancel_ && cancel_->load(std::memory_order_relaxed))
          stop_.store(true, std::memory_order_relaxed);
        if (Clock::now() >= deadline) {
          fired_.store(true);
          stop_.store(true, std::memory_order_relaxed);
          return;
        }
        cv_.wait_for(lock, std::chrono::milliseconds(20));
      }
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  // The flag the VMs watch.
  const std::atomic<bool>* flag() const { return thread_.joinable() ? &stop_ : cancel_; }
  // The run stopped because the limit passed (not because of the caller).
  bool fired() const { return fired_.load(); }

 private:
  const std::atomic<bool>* cancel_;
  std::atomic<bool> stop_{false}, fired_{false};
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// "; still running: thread 1 in function main, block body (prog.ab:3), ...":
// the threads a stopped run names (the first few, in shard order).
std::string running_text(const std::vector<const ab::RunningThread*>& running, int64_t finished,
                         int64_t batch, const ab::SourceFile* source) {
  if (running.empty()) return "";
  std::string out = "; still running: ";
  for (size_t i = 0; i < running.size(); ++i) {
    const ab::RunningThread& t = *running[i];
    out += (i ? ", " : "") + std::string("thread ") + std::to_string(t.thread) +
           " in function " + t.function + ", block " + t.block;
    if (t.loc.known())
      out += " (" +
             (source ? source->where(t.loc.line)
                     : "line " + std::to_string(ab::local_line(t.loc.line))) +
             ")";
  }
  const int64_t left = batch - finished - static_cast<int64_t>(running.size());
  if (left > 0) out += ", and " + std::to_string(left) + " more not finished";
  return out;
}

// The outputs' names: the entry's result names, per leaf of the results'
// types as inference found them.
std::vector<std::string> output_names(const Program::Impl& impl, const Prepared& prep,
                                      size_t outputs) {
  if (impl.module.program) {
    std::vector<std::optional<ab::Type>> types;
    for (const auto& o : impl.module.program->outputs) {
      auto it = prep.program_types.vars.find(o.name);
      types.push_back(it == prep.program_types.vars.end() ? std::nullopt
                                                           : std::optional<ab::Type>(it->second));
    }
    return ab::output_names(impl.result_names, types, outputs);
  }
  const ab::TypeInfo& types = prep.compiled ? prep.compiled->types : prep.types;
  auto it = types.funcs.find(impl.entry);
  if (it == types.funcs.end()) return ab::default_output_names(outputs);
  return ab::output_names(impl.result_names, it->second.results, outputs);
}

// The output leaves' types of this run, as the VM will make them, when
// every result's type is known: for the lowered program (the stack VM, or a
// lowered file) its outputs' variables, else the entry's results.
std::optional<std::vector<ab::TensorType>> output_leaf_types(const Program::Impl& impl,
                                                             const Prepared& prep,
                                                             const ab::Program* lowered) {
  std::vector<ab::TensorType> leaves;
  if (lowered) {
    for (const auto& o : lowered->outputs) {
      auto it = prep.program_types.vars.find(o.name);
      if (it == prep.program_types.vars.end()) return std::nullopt;
      it->second.leaves(leaves);
    }
    return leaves;
  }
  auto it = prep.types.funcs.find(impl.entry);
  if (it == prep.types.funcs.end()) return std::nullopt;
  for (const auto& r : it->second.results) {
    if (!r) return std::nullopt;
    r->leaves(leaves);
  }
  return leaves;
}

// The outputs of the whole batch, allocated once before a sharded run: each
// shard writes its rows in place (ab::RunOptions::output_rows), so the
// shards' outputs need no merge, and a large batch's outputs are neither
// allocated twice nor copied. Not initialised: every row is written by the
// shard that runs it (ab::make_outputs).
struct PlacedOutputs {
  std::vector<ab::TensorType> types;
  std::vector<ab::Array> arrays;
  std::vector<size_t> row_bytes;

  PlacedOutputs(std::vector<ab::TensorType> leaves, int64_t batch) : types(std::move(leaves)) {
    for (const auto& t : types) {
      ab::Array a;
      a.type = t;
      a.batch = batch;
      row_bytes.push_back(static_cast<size_t>(t.num_elements()) * ab::dtype_size(t.dtype));
      a.data = ab::Buffer::for_overwrite(row_bytes.back() * static_cast<size_t>(batch));
      arrays.push_back(std::move(a));
    }
  }
  // Where the rows of threads [start, ...) go.
  std::vector<std::byte*> rows(int64_t start) {
    std::vector<std::byte*> out;
    for (size_t k = 0; k < arrays.size(); ++k)
      out.push_back(arrays[k].data.data() + static_cast<size_t>(start) * row_bytes[k]);
    return out;
  }
  // The shard's outputs are its rows here (its VM wrote them in place).
  bool holds(const ab::RunResult& r, int64_t start) {
    if (r.outputs.size() != arrays.size()) return false;
    const std::vector<std::byte*> at = rows(start);
    for (size_t k = 0; k < arrays.size(); ++k)
      if (r.outputs[k].data.data() != at[k] || !(r.outputs[k].type == types[k])) return false;
    return true;
  }
};

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

RunResult Program::run(const std::vector<ArrayView>& views) const { return run(views, {}); }

RunResult Program::run(const Inputs& inputs, const RunOptions& options) const {
  RunOptions o = options;
  if (o.batch == 0) o.batch = inputs.batch;
  return run(inputs.views(), o);
}

RunResult Program::run(const std::vector<ArrayView>& views, const RunOptions& o) const {
  RunResult out;
  try {
    const Impl& impl = *impl_;
    ab::PrimScope scope(&impl.prims);
    const ab::Module& m = impl.module;
    if (Status s = check(o); !s) {
      out.diagnostics = s.diagnostics;
      return out;
    }
    if (impl.entry.empty()) {
      out.diagnostics = to_public(impl.entry_error);
      return out;
    }
    auto start_time = Clock::now();

    // Inputs: count, types against annotations, batch sizes.
    auto params = impl.params();
    if (views.size() != params.size()) {
      out.diagnostics.push_back(option_error(
          "the entry '" + impl.entry + "' takes " + std::to_string(params.size()) + " input" +
          (params.size() == 1 ? "" : "s") + ", but " + std::to_string(views.size()) +
          (views.size() == 1 ? " was" : " were") + " given"));
      return out;
    }
    std::vector<ab::Array> inputs;
    std::vector<std::optional<ab::Type>> types;
    int64_t batch = -1;
    for (size_t i = 0; i < views.size(); ++i) {
      const ArrayView& v = views[i];
      const std::string& name = params[i].first;
      ab::Array a;
      a.type.dtype = to_internal(v.dtype);
      a.type.shape.assign(v.shape.begin() + (v.shape.empty() ? 0 : 1), v.shape.end());
      a.batch = v.batch();
      bool bad_shape = a.batch < 0;
      for (int64_t d : a.type.shape) bad_shape = bad_shape || d < 0;
      if (bad_shape) {
        out.diagnostics.push_back(option_error("input '" + name + "': negative dimension"));
        continue;
      }
      ab::Type t = ab::Type::tensor_of(a.type.dtype, a.type.shape);
      if (params[i].second && *params[i].second != t) {
        out.diagnostics.push_back(option_error("input '" + name + "': the entry declares " +
                                               params[i].second->str() + ", the input is " +
                                               t.str()));
        continue;
      }
      size_t bytes = static_cast<size_t>(v.num_elements()) * ab::dtype_size(a.type.dtype);
      if (bytes && !v.data) {
        out.diagnostics.push_back(option_error("input '" + name + "': no data"));
        continue;
      }
      if (reinterpret_cast<uintptr_t>(v.data) % ab::dtype_size(a.type.dtype) == 0) {
        a.data = ab::Buffer::borrow(v.data, bytes);
      } else {  // misaligned: the kernels need aligned elements
        a.data.resize(bytes);
        std::memcpy(a.data.data(), v.data, bytes);
      }
      if (a.batch != 1) {
        if (batch >= 0 && batch != a.batch)
          out.diagnostics.push_back(option_error(
              "input '" + name + "' has batch " + std::to_string(a.batch) +
              ", but an earlier input has batch " + std::to_string(batch) +
              " (batch sizes must be equal, or 1 for an input shared by every thread)"));
        batch = a.batch;
      }
      types.push_back(t);
      inputs.push_back(std::move(a));
    }
    if (o.batch > 0 && batch >= 0 && batch != o.batch)
      out.diagnostics.push_back(option_error("the batch is " + std::to_string(o.batch) +
                                             " but the inputs have batch " +
                                             std::to_string(batch)));
    if (!out.diagnostics.empty()) return out;
    if (batch < 0) batch = o.batch > 0 ? o.batch : 1;
    out.batch = batch;

    // Types (and the lowered program) for these inputs.
    bool lowered_vm = o.vm == "stack" || m.program;
    std::shared_ptr<const Prepared> prep = impl.prepare(lowered_vm, types);
    if (prep->diags.has_errors()) {
      out.diagnostics = to_public(prep->diags);
      return out;
    }
    // A batch (or a shape) too large for memory is an input error before any
    // work: every running thread holds all its variables.
    int64_t per_thread = 0;
    if (lowered_vm) {
      per_thread = ab::thread_bytes(prep->program_types.vars);
    } else {
      for (const auto& [name, ft] : prep->types.funcs)  // every function's, saturating
        per_thread += std::min(ab::thread_bytes(ft.vars), INT64_MAX - per_thread);
    }
    if (auto e = ab::batch_memory_error(batch, o.lanes, per_thread)) {
      out.diagnostics.push_back(option_error(*e));
      return out;
    }
    double compile_seconds = seconds_since(start_time);
    log_phase("compile", compile_seconds);

    // Trace.
    ab::TraceWriter trace;
    bool tracing = !o.trace_path.empty() || o.trace_callback;
    if (tracing) {
      ab::MaskFormat fmt = ab::parse_mask_format(o.trace_mask);
      ab::TraceFormat tf =
          o.trace_format == "auto"
              ? (batch <= kAutoJsonlBatch ? ab::TraceFormat::Jsonl : ab::TraceFormat::Compact)
              : *ab::parse_trace_format(o.trace_format);
      if (!o.trace_callback) {
        trace = ab::TraceWriter(o.trace_path, fmt, tf);
      } else {
        std::unique_ptr<std::ofstream> file;
        if (!o.trace_path.empty()) {
          file = std::make_unique<std::ofstream>(o.trace_path, std::ios::binary | std::ios::trunc);
          if (!*file) {
            out.diagnostics.push_back(
                option_error("cannot write the trace file '" + o.trace_path + "'"));
            return out;
          }
        }
        trace = ab::TraceWriter(std::make_unique<LineStream>(
                                    std::make_unique<LineSink>(o.trace_callback, std::move(file))),
                                fmt, tf);
      }
      if (!trace.on()) {
        out.diagnostics.push_back(option_error(trace.error()));
        return out;
      }
      trace.set_source(m.source);
    }

    // Shards: `workers` OS threads take the plan's shards in batch order.
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const shards::Plan plan = shards::plan(batch, o.threads, o.lanes, o.stats, tracing, cores);
    const int64_t workers = plan.workers;
    const int64_t shard_count = static_cast<int64_t>(plan.shards.size());
    std::vector<Shard> work(plan.shards.size());
    for (size_t k = 0; k < work.size(); ++k) {
      work[k].start = plan.shards[k].first;
      work[k].size = plan.shards[k].count;
    }
    // Progress: each worker's figures (its finished shards' and its current
    // one's); the first worker's thread reports the sums.
    // Several shards write their outputs straight into the batch's (one
    // shard's outputs are the batch's already).
    const ab::Program* lowered =
        m.program ? &*m.program
                  : o.vm == "stack" ? &*prep->compiled->lowered.program : nullptr;
    std::optional<PlacedOutputs> placed;
    if (shard_count > 1)
      if (auto leaves = output_leaf_types(impl, *prep, lowered))
        placed.emplace(std::move(*leaves), batch);
    std::vector<std::atomic<int64_t>> worker_steps(static_cast<size_t>(workers));
    std::vector<std::atomic<int64_t>> worker_finished(static_cast<size_t>(workers));
    std::vector<double> worker_cpu(static_cast<size_t>(workers), 0.0);
    std::atomic<int64_t> next_shard{0};
    Watchdog watchdog(o.time_limit, o.cancel);
    const std::atomic<bool>* const stop = watchdog.flag();
    auto run_start = Clock::now();
    // progress(n)'s table: the caller's, indexed by the thread in this run.
    const ab::ProgressTable progress_table{o.thread_progress, o.first_thread, batch};
    auto run_shard = [&](int64_t k, int64_t w, int64_t steps_before, int64_t finished_before) {
      Shard& s = work[static_cast<size_t>(k)];
      try {
        ab::RunOptions ro;
        ro.max_stack_depth = o.max_stack_depth;
        ro.max_steps = o.max_steps;
        ro.record_errors = o.on_error == OnError::Record;
        ro.jit = o.jit;
        // Tiered (docs/engine.md, "Tiered execution"): the code compiles in
        // the background on a core the run leaves free. When the run's OS
        // threads take every core there is none: the run compiles first (the
        // first shard compiles, the others wait for its code), as jit_wait.
        ro.jit_wait = o.jit_wait || workers >= cores;
        if (!o.jit_wait && workers >= cores)
          ro.jit_wait_why = "its " + std::to_string(workers) + " OS thread" +
                            (workers > 1 ? "s take" : " takes") + " every core (" +
                            std::to_string(cores) + "), leaving none to compile on meanwhile";
        ro.persistent = o.schedule == "persistent";
        ro.lanes = o.lanes > 0 ? o.lanes / workers + (w < o.lanes % workers ? 1 : 0) : 0;
        ro.first_thread = o.first_thread + s.start;
        ro.progress_table = o.thread_progress ? &progress_table : nullptr;
        ro.stats = o.stats ? &s.stats : nullptr;
        ro.trace = tracing ? &trace : nullptr;
        ro.cancel = stop;
        if (placed) ro.output_rows = placed->rows(s.start);
        if (o.progress)
          ro.progress = [&, w, steps_before, finished_before](int64_t steps, int64_t finished) {
            worker_steps[static_cast<size_t>(w)].store(steps_before + steps,
                                                       std::memory_order_relaxed);
            worker_finished[static_cast<size_t>(w)].store(finished_before + finished,
                                                          std::memory_order_relaxed);
            if (w != 0) return;
            Progress p;
            for (size_t i = 0; i < worker_steps.size(); ++i) {
              p.steps += worker_steps[i].load(std::memory_order_relaxed);
              p.finished += worker_finished[i].load(std::memory_order_relaxed);
            }
            p.threads = batch;
            p.seconds = seconds_since(run_start);
            o.progress(p);
          };
        std::vector<ab::Array> in;
        if (shard_count == 1) {
          for (const auto& a : inputs)
            in.push_back(borrowed(a.type, a.batch, a.data.data(), a.byte_size()));
        } else {
          for (const auto& a : inputs) in.push_back(slice(a, s.start, s.size));
        }
        if (m.program)
          s.result =
              o.vm == "reference"
                  ? ab::run_reference_program(*m.program, prep->program_types, in, s.size, ro)
                  : ab::run_stack(*m.program, prep->program_types, in, s.size, ro);
        else if (o.vm == "stack")
          s.result =
              ab::run_stack(*prep->compiled->lowered.program, prep->program_types, in, s.size, ro);
        else if (o.vm == "stackless")
          s.result = ab::run_stackless(prep->expanded ? *prep->expanded : m, prep->types,
                                       impl.entry, in, s.size, ro);
        else
          s.result = ab::run_reference(prep->expanded ? *prep->expanded : m, prep->types,
                                       impl.entry, in, s.size, ro);
      } catch (const std::bad_alloc&) {
        s.out_of_memory = true;
      } catch (const std::exception& e) {
        s.internal_error = e.what();
      }
    };
    // Worker w takes the next shard until none is left; once the run is
    // cancelled the shards it has not started count as cancelled.
    auto run_worker = [&](int64_t w) {
      const double cpu0 = thread_cpu_seconds();
      int64_t steps = 0, finished = 0;
      for (int64_t k; (k = next_shard.fetch_add(1)) < shard_count;) {
        Shard& s = work[static_cast<size_t>(k)];
        if (stop && stop->load()) {
          s.result.cancelled = true;
          continue;
        }
        run_shard(k, w, steps, finished);
        steps += s.result.steps;
        finished += s.result.cancelled || s.result.error ? s.result.finished : s.size;
      }
      worker_cpu[static_cast<size_t>(w)] = thread_cpu_seconds() - cpu0;
    };
    run_start = Clock::now();
    if (workers == 1) {
      run_worker(0);
    } else {
      std::vector<std::thread> threads;
      for (int64_t w = 1; w < workers; ++w) threads.emplace_back(run_worker, w);
      run_worker(0);
      for (auto& t : threads) t.join();
    }
    bool cancelled = false;
    int64_t steps_done = 0, finished = 0;
    for (const Shard& s : work) {
      cancelled = cancelled || s.result.cancelled;
      steps_done += s.result.steps;
      finished += s.result.cancelled || s.result.error ? s.result.finished : s.size;
    }
    if (cancelled) {
      trace.discard();  // a cancelled run leaves no partial file
      out.cancelled = true;
      out.timed_out = watchdog.fired();
      RuntimeError e;
      e.batch = batch;
      e.message = watchdog.fired()
                      ? ab::time_limit_message(o.time_limit, steps_done, finished, batch)
                      : ab::interrupted_message(steps_done, finished, batch);
      std::vector<const ab::RunningThread*> running;
      for (const Shard& s : work)
        for (const ab::RunningThread& t : s.result.running)
          if (running.size() < ab::kRunningShown) running.push_back(&t);
      e.message += running_text(running, finished, batch, m.source.get());
      if (o.total_batch > batch)  // one MPI process's share
        e.message += " (counted in threads " + std::to_string(o.first_thread) + " to " +
                     std::to_string(o.first_thread + batch - 1) + " of " +
                     std::to_string(o.total_batch) + ", this process's share)";
      e.rendered = "autobatch: " + e.message + "\n";
      out.runtime_error = std::move(e);
      return out;
    }
    trace.close();
    double run_seconds = seconds_since(run_start);
    if (!work.empty() && !work[0].result.log.empty()) ab::log_info(work[0].result.log);
    // The plan is the same in every shard (the program and options are).
    std::vector<BlockExecution> execution;
    if (!work.empty()) {
      for (const ab::BlockExecution& e : work[0].result.execution) {
        BlockExecution x{e.block, e.mode, e.reason, static_cast<int>(ab::local_line(e.loc.line)), ""};
        std::string where;
        if (m.source && e.loc.known()) {
          x.statement = m.source->statement(e.loc.line);
          where = " at " + m.source->where(e.loc.line) + " `" + x.statement + "`";
        }
        ab::log_info("block " + e.block + where + ": " + e.mode + " (" + e.reason + ")");
        execution.push_back(std::move(x));
      }
    }
    log_phase("run", run_seconds);
    // Per OS thread CPU time: on a loaded machine, the sum against one
    // thread's and the largest (the critical path) say how well they scale.
    if (workers > 1 && ab::log_enabled(ab::LogLevel::Info)) {
      std::string line = std::to_string(shard_count) + " shards on " + std::to_string(workers) +
                         " threads; threads' CPU time (ms):";
      for (double c : worker_cpu) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %.1f", c * 1e3);
        line += buf;
      }
      ab::log_info(line);
    }

    // The shards' results, merged: the first failure, or the outputs, the
    // failed threads and the statistics of the whole batch.
    const auto merge_start = Clock::now();
    // Outputs written in place by every shard are the batch's as they are;
    // otherwise (a VM that made its own) the parts' rows are copied.
    std::vector<Array> whole;
    if (placed && std::all_of(work.begin(), work.end(),
                              [&](const Shard& s) { return placed->holds(s.result, s.start); })) {
      for (Shard& s : work) s.result.outputs.clear();  // views of `placed`
      for (ab::Array& a : placed->arrays) whole.push_back(ArrayAccess::wrap(std::move(a)));
    }
    std::vector<shards::Part> parts;
    parts.reserve(work.size());
    for (Shard& s : work) parts.push_back(to_part(s, o, batch, m.source.get()));
    out = shards::merge(parts, batch, o.on_error == OnError::Record, o.stats, std::move(whole));
    log_phase("merge", seconds_since(merge_start));
    out.names = output_names(impl, *prep, out.outputs.size());
    out.execution = execution;
    if (out.stats) {
      out.stats->seconds["compile"] = compile_seconds;
      out.stats->seconds["run"] = run_seconds;
      out.stats->execution = std::move(execution);
    }
    return out;
  } catch (const std::bad_alloc&) {
    out = RunResult{};
    out.runtime_error = out_of_memory();
    return out;
  } catch (const std::exception& e) {
    out = RunResult{};
    out.diagnostics.push_back(option_error(std::string("internal error: ") + e.what()));
    return out;
  }
}

}  // namespace autobatch
