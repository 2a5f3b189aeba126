// `autobatch run` over MPI processes. Every process compiles the program;
// rank 0 loads the inputs (JSON whole, batched .npy files only their headers)
// and broadcasts a plan: the batch, and per parameter either its shared value
// (batch 1), or "JSON rows" (rank 0 sends each process its rows), or the .npy
// file and data offset (each process reads only its rows, by offset).
//
// Static split (default): process r runs threads [first_r, first_r + n_r),
// the contiguous shares `--threads K` would make, in one Program::run, and
// rank 0 gathers the outputs in input order. Dynamic split: rank 0 hands out
// chunks of threads as processes finish theirs (SPEC §5.7's refill, across
// processes); rank 0 works too, on a second thread that never calls MPI
// (MPI_THREAD_FUNNELED), while its main thread serves the others.
//
// Errors: every phase ends with `agree`, so a failure anywhere (a file one
// node cannot read, a runtime error) ends every process with the same exit
// status and rank 0 prints the message once. A runtime error stops every
// process (`Abort`: an abort notice sets the others' RunOptions::cancel) and
// names its thread in the whole batch (RunOptions::first_thread); with
// several, the first in batch order among those that failed before the stop.
// Under the dynamic split, rank 0 stops the hand-out and sends the notices.
// `--on-error record`: each process's failed threads (numbered in the whole
// batch) go to rank 0 with its outcome, which lists them as one process would.
// A process that dies is noticed by the MPI runtime, which ends the job (see
// README "Running on a cluster").
#include "mpi/mpi_run.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace ab::mpi {

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

constexpr int kOk = 0, kRuntimeError = 1, kUsageError = 2;
constexpr int kTagWork = 1, kTagResult = 2, kTagAbort = 3;

// ---------------------------------------------------------------- bytes

// A flat little encoding for what processes send each other.
struct Writer {
  std::string buf;
  void i64(int64_t v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void bytes(const void* p, size_t n) {
    i64(static_cast<int64_t>(n));
    buf.append(static_cast<const char*>(p), n);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void shape(const std::vector<int64_t>& s) {
    i64(static_cast<int64_t>(s.size()));
    for (int64_t d : s) i64(d);
  }
};

struct Reader {
  const std::string& buf;
  size_t at = 0;
  int64_t i64() {
    int64_t v;
    std::memcpy(&v, buf.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  double f64() {
    double v;
    std::memcpy(&v, buf.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string_view bytes() {
    size_t n = static_cast<size_t>(i64());
    std::string_view out(buf.data() + at, n);
    at += n;
    return out;
  }
  std::string str() { return std::string(bytes()); }
  std::vector<int64_t> shape() {
    std::vector<int64_t> s(static_cast<size_t>(i64()));
    for (auto& d : s) d = i64();
    return s;
  }
};

// ---------------------------------------------------------------- MPI helpers

struct World {
  int rank = 0;
  int size = 1;
};

void bcast(World, std::string& s) {
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(n));
  // In pieces below INT_MAX bytes (MPI counts are int).
  for (int64_t at = 0; at < n; at += INT_MAX / 2)
    MPI_Bcast(s.data() + at, static_cast<int>(std::min<int64_t>(n - at, INT_MAX / 2)), MPI_BYTE, 0,
              MPI_COMM_WORLD);
}

void send(const std::string& s, int to, int tag) {
  MPI_Send(s.data(), static_cast<int>(s.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

std::string recv(int from, int tag, int* source = nullptr) {
  MPI_Status st;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::string s(static_cast<size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (source) *source = st.MPI_SOURCE;
  return s;
}

// Waits until every process gets here without keeping a core busy: Open
// MPI's blocking calls poll, so a process that finished its share early
// would take CPU from those still running wherever processes share cores.
void wait_for_all() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Every process's `mine`, on rank 0 (empty elsewhere).
std::vector<std::string> gather(World w, const std::string& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<size_t>(w.size)), offsets(static_cast<size_t>(w.size));
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (w.rank == 0) {
    int64_t total = 0;
    for (int r = 0; r < w.size; ++r) {
      offsets[r] = static_cast<int>(total);
      total += sizes[r];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(mine.data(), n, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (w.rank == 0)
    for (int r = 0; r < w.size; ++r) out.push_back(all.substr(offsets[r], sizes[r]));
  return out;
}

// Ends a phase: the worst exit status of all processes; if not ok, rank 0
// prints the message of the first process (by rank) that has one.
int agree(World w, int code, const std::string& message) {
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == kOk) return kOk;
  std::vector<std::string> all = gather(w, code != kOk ? message : std::string());
  if (w.rank == 0)
    for (const auto& m : all)
      if (!m.empty()) {
        std::cerr << m;
        break;
      }
  return worst;
}

// ---------------------------------------------------------------- stopping

// How a runtime error in one process stops the others. The process that
// fails (rank 0, under the dynamic split) sends every other process one abort
// notice. Each process runs its work on a second thread with RunOptions::
// cancel = &flag while its main thread (the only one that calls MPI, as
// MPI_THREAD_FUNNELED asks) listens for notices and sets the flag; the VMs
// then stop within a few hundred steps (RunResult::cancelled). `drain`
// (collective) receives the notices not heard during the run, so that no
// message is left unmatched.
class Abort {
 public:
  explicit Abort(World w) : w_(w), heard_(static_cast<size_t>(w.size), false) {}
  std::atomic<bool> flag{false};

  // Runs `work` on a second thread, listening until it returns.
  void watch(const std::function<void()>& work) {
    std::atomic<bool> done{false};
    std::exception_ptr thrown;
    std::thread t([&] {
      try {
        work();
      } catch (...) {
        thrown = std::current_exception();
      }
      done.store(true, std::memory_order_release);
    });
    while (!done.load(std::memory_order_acquire)) {
      listen();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    t.join();
    if (thrown) std::rethrow_exception(thrown);
  }

  // Tells every other process to stop (once), and stops this one's work.
  void tell_all() {
    flag = true;
    if (told_) return;
    told_ = true;
    sent_.reserve(static_cast<size_t>(w_.size));
    for (int r = 0; r < w_.size; ++r) {
      if (r == w_.rank) continue;
      sent_.emplace_back();
      MPI_Isend(&token_, 1, MPI_INT, r, kTagAbort, MPI_COMM_WORLD, &sent_.back());
    }
  }

  // Collective: receives the notices still on their way; completes the sends.
  void drain() {
    int told = told_ ? 1 : 0;
    std::vector<int> all(static_cast<size_t>(w_.size));
    MPI_Allgather(&told, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < w_.size; ++r)
      if (r != w_.rank && all[r] && !heard_[r]) receive(r);
    MPI_Waitall(static_cast<int>(sent_.size()), sent_.data(), MPI_STATUSES_IGNORE);
    sent_.clear();
  }

 private:
  void listen() {
    for (;;) {
      int arrived = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kTagAbort, MPI_COMM_WORLD, &arrived, &st);
      if (!arrived) return;
      receive(st.MPI_SOURCE);
    }
  }
  void receive(int from) {
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, from, kTagAbort, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    heard_[static_cast<size_t>(from)] = true;
    flag = true;
  }

  World w_;
  std::vector<bool> heard_;  // by rank: its notice received
  bool told_ = false;
  int token_ = 1;  // what a notice carries (the send buffer)
  std::vector<MPI_Request> sent_;
};

// ---------------------------------------------------------------- the plan

// How each process gets one parameter.
enum class Source : int64_t { Shared = 0, JsonRows = 1, NpyFile = 2 };

struct Param {
  Source source = Source::Shared;
  autobatch::DType dtype = autobatch::DType::F64;
  std::vector<int64_t> shape;  // batch first
  std::string shared;          // Shared: the value's bytes
  autobatch::NpyInput npy;     // NpyFile
  size_t row_bytes() const {
    int64_t n = 1;
    for (size_t k = 1; k < shape.size(); ++k) n *= shape[k];
    return static_cast<size_t>(n) * autobatch::dtype_size(dtype);
  }
};

struct Plan {
  int64_t batch = 0;
  std::vector<Param> params;
};

std::string encode(const Plan& p) {
  Writer w;
  w.i64(p.batch);
  w.i64(static_cast<int64_t>(p.params.size()));
  for (const Param& q : p.params) {
    w.i64(static_cast<int64_t>(q.source));
    w.i64(static_cast<int64_t>(q.dtype));
    w.shape(q.shape);
    w.str(q.shared);
    w.str(q.npy.path);
    w.str(q.npy.parameter);
    w.i64(static_cast<int64_t>(q.npy.file_dtype));
    w.i64(static_cast<int64_t>(q.npy.dtype));
    w.shape(q.npy.shape);
    w.i64(static_cast<int64_t>(q.npy.data_offset));
  }
  return w.buf;
}

Plan decode_plan(const std::string& s) {
  Reader r{s};
  Plan p;
  p.batch = r.i64();
  p.params.resize(static_cast<size_t>(r.i64()));
  for (Param& q : p.params) {
    q.source = static_cast<Source>(r.i64());
    q.dtype = static_cast<autobatch::DType>(r.i64());
    q.shape = r.shape();
    q.shared = r.str();
    q.npy.path = r.str();
    q.npy.parameter = r.str();
    q.npy.file_dtype = static_cast<autobatch::DType>(r.i64());
    q.npy.dtype = static_cast<autobatch::DType>(r.i64());
    q.npy.shape = r.shape();
    q.npy.data_offset = static_cast<uint64_t>(r.i64());
  }
  return p;
}

// Rank 0: the plan for the loaded inputs (JSON rows stay in `inputs`).
Plan make_plan(const autobatch::Inputs& inputs) {
  Plan p;
  p.batch = inputs.batch;
  for (size_t k = 0; k < inputs.arrays.size(); ++k) {
    const autobatch::Array& a = inputs.arrays[k];
    Param q;
    q.dtype = a.dtype();
    q.shape = a.shape();
    if (k < inputs.on_disk.size() && inputs.on_disk[k]) {
      q.source = Source::NpyFile;
      q.npy = *inputs.on_disk[k];
    } else if (a.batch() == 1) {
      q.source = Source::Shared;
      q.shared.assign(static_cast<const char*>(a.data()), a.byte_size());
    } else {
      q.source = Source::JsonRows;
    }
    p.params.push_back(std::move(q));
  }
  return p;
}

// The rows [first, first + count) of every parameter a process runs on:
// `keep` holds what the views borrow.
struct Part {
  int64_t first = 0;
  int64_t count = 0;
  std::vector<std::string> json_rows;  // per parameter (JsonRows only)
  std::vector<autobatch::Array> keep;
  std::vector<autobatch::ArrayView> views;
};

// Fills part.views; `json` gives a JsonRows parameter's rows (borrowed from
// rank 0's inputs, or from part.json_rows). An input error: its message.
std::string build_views(const Plan& plan, Part& part,
                        const std::function<const void*(size_t k)>& json) {
  part.views.clear();
  for (size_t k = 0; k < plan.params.size(); ++k) {
    const Param& q = plan.params[k];
    autobatch::ArrayView v{q.dtype, q.shape, nullptr};
    if (q.source == Source::Shared) {
      v.data = q.shared.data();
    } else if (q.source == Source::JsonRows) {
      v.shape[0] = part.count;
      v.data = json(k);
    } else {
      auto rows = autobatch::read_rows(q.npy, part.first, part.count);
      if (!rows) return rows.rendered();
      part.keep.push_back(*rows);
      v = rows->view();
    }
    part.views.push_back(std::move(v));
  }
  return "";
}

// ---------------------------------------------------------------- outcomes

// What one process reports after running its share (static) or chunks
// (dynamic).
struct Outcome {
  int code = kOk;
  std::string message;  // rendered error
  int64_t error_thread = -1;
  bool cancelled = false;  // stopped by another process's error (not a failure)
  bool has_stats = false;
  autobatch::Stats stats;
  std::vector<autobatch::ThreadError> errors;  // --on-error record (threads of the whole batch)
};

void add_stats(autobatch::Stats& total, const autobatch::Stats& s) {
  total.steps += s.steps;
  if (total.block_executions.empty()) {
    total.block_executions = s.block_executions;
  } else {
    for (size_t b = 0; b < s.block_executions.size() && b < total.block_executions.size(); ++b)
      total.block_executions[b].second += s.block_executions[b].second;
  }
  total.primitive_executions += s.primitive_executions;
  total.lane_operations += s.lane_operations;
  total.utilization_sum += s.utilization_sum;
  total.peak_stack_depth = std::max(total.peak_stack_depth, s.peak_stack_depth);
  for (const auto& [k, v] : s.seconds) total.seconds[k] += v;
}

std::string encode(const Outcome& o) {
  Writer w;
  w.i64(o.code);
  w.str(o.message);
  w.i64(o.error_thread);
  w.i64(o.cancelled);
  w.i64(o.has_stats);
  const autobatch::Stats& s = o.stats;
  w.i64(s.steps);
  w.i64(s.primitive_executions);
  w.i64(s.lane_operations);
  w.f64(s.utilization_sum);
  w.i64(s.peak_stack_depth);
  w.i64(static_cast<int64_t>(s.block_executions.size()));
  for (const auto& [name, n] : s.block_executions) {
    w.str(name);
    w.i64(n);
  }
  w.i64(static_cast<int64_t>(s.seconds.size()));
  for (const auto& [name, t] : s.seconds) {
    w.str(name);
    w.f64(t);
  }
  w.i64(static_cast<int64_t>(o.errors.size()));
  for (const autobatch::ThreadError& t : o.errors) {
    const autobatch::RuntimeError& e = t.error;
    w.i64(t.thread);
    w.str(t.message);
    w.str(e.file);
    w.i64(e.line);
    w.i64(e.column);
    w.str(e.function);
    w.str(e.block);
    w.i64(e.thread);
    w.i64(e.batch);
    w.str(e.message);
    w.str(e.rendered);
  }
  return w.buf;
}

Outcome decode_outcome(const std::string& buf) {
  Reader r{buf};
  Outcome o;
  o.code = static_cast<int>(r.i64());
  o.message = r.str();
  o.error_thread = r.i64();
  o.cancelled = r.i64() != 0;
  o.has_stats = r.i64() != 0;
  autobatch::Stats& s = o.stats;
  s.steps = r.i64();
  s.primitive_executions = r.i64();
  s.lane_operations = r.i64();
  s.utilization_sum = r.f64();
  s.peak_stack_depth = r.i64();
  for (int64_t n = r.i64(); n > 0; --n) {
    std::string name = r.str();
    s.block_executions.emplace_back(name, r.i64());
  }
  for (int64_t n = r.i64(); n > 0; --n) {
    std::string name = r.str();
    s.seconds[name] = r.f64();
  }
  for (int64_t n = r.i64(); n > 0; --n) {
    autobatch::ThreadError t;
    autobatch::RuntimeError& e = t.error;
    t.thread = r.i64();
    t.message = r.str();
    e.file = r.str();
    e.line = static_cast<int>(r.i64());
    e.column = static_cast<int>(r.i64());
    e.function = r.str();
    e.block = r.str();
    e.thread = r.i64();
    e.batch = r.i64();
    e.message = r.str();
    e.rendered = r.str();
    o.errors.push_back(std::move(t));
  }
  return o;
}

// Runs one part; records an error, or the statistics and failed threads, in
// `out`. Stopped by ro.cancel: only `out.cancelled` (the error is another's).
autobatch::RunResult run_part(const autobatch::Program& p, autobatch::RunOptions ro,
                              const Plan& plan, const Part& part, Outcome& out) {
  ro.first_thread = part.first;
  ro.total_batch = plan.batch;
  ro.batch = part.count;
  autobatch::RunResult r = p.run(part.views, ro);
  if (r.cancelled) {
    out.cancelled = true;
  } else if (!r.diagnostics.empty()) {
    if (out.code == kOk || out.code == kRuntimeError) {
      out.code = kUsageError;
      out.message = r.rendered();
    }
  } else if (r.runtime_error) {
    int64_t t = r.runtime_error->thread;
    if (out.code == kOk || (out.code == kRuntimeError && t >= 0 && t < out.error_thread)) {
      out.code = kRuntimeError;
      out.message = r.runtime_error->rendered;
      out.error_thread = t;
    }
  } else {
    if (r.stats) {
      out.has_stats = true;
      add_stats(out.stats, *r.stats);
    }
    out.errors.insert(out.errors.end(), r.errors.begin(), r.errors.end());
  }
  return r;
}

// The outputs' types, from one successful run (rank 0's, or a chunk's).
struct OutputType {
  autobatch::DType dtype;
  std::vector<int64_t> event;
  size_t row_bytes() const {
    int64_t n = 1;
    for (int64_t d : event) n *= d;
    return static_cast<size_t>(n) * autobatch::dtype_size(dtype);
  }
};

std::vector<OutputType> output_types(const autobatch::RunResult& r) {
  std::vector<OutputType> out;
  for (const auto& a : r.outputs)
    out.push_back({a.dtype(), std::vector<int64_t>(a.shape().begin() + 1, a.shape().end())});
  return out;
}

std::string encode_outputs(const autobatch::RunResult& r) {
  Writer w;
  w.i64(static_cast<int64_t>(r.outputs.size()));
  for (const auto& a : r.outputs) {
    w.i64(static_cast<int64_t>(a.dtype()));
    w.shape(a.shape());
    w.bytes(a.data(), a.byte_size());
  }
  return w.buf;
}

// ---------------------------------------------------------------- shares

int64_t share_first(int64_t batch, int64_t parts, int64_t k) {
  return k * (batch / parts) + std::min(k, batch % parts);
}
int64_t share_count(int64_t batch, int64_t parts, int64_t k) {
  return batch / parts + (k < batch % parts ? 1 : 0);
}

// OS threads per process: the node's cores shared by the processes on it
// (unless --threads says), and at most one per 1024 threads of its share.
int processes_on_this_node() {  // collective
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 1;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  return on_node;
}

int threads_per_process(const cli::Options& opt, int on_node, int64_t count) {
  if (opt.threads) return static_cast<int>(*opt.threads);
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency() / on_node);
  return static_cast<int>(std::clamp<int64_t>(count / 1024, 1, cores));
}

// ---------------------------------------------------------------- the command

class Job {
 public:
  Job(World w, const cli::Options& opt) : w_(w), opt_(opt) {}
  int run();

 private:
  int run_static(autobatch::RunOptions ro);
  int run_dynamic(autobatch::RunOptions ro);
  // Rank 0 writes the outputs; everyone returns the same status.
  int finish(std::vector<autobatch::Array> outputs, const std::vector<Outcome>& outcomes,
             double run_seconds);

  World w_;
  const cli::Options& opt_;
  std::optional<autobatch::Program> program_;
  autobatch::Inputs inputs_;  // rank 0
  Plan plan_;
  int on_node_ = 1;  // processes on this node (they share its cores)
  double parse_seconds_ = 0, input_seconds_ = 0;
};

int Job::run() {
  auto t0 = Clock::now();
  on_node_ = processes_on_this_node();
  // Options and the program: the same checks on every process.
  std::string msg;
  int code = kOk;
  if (auto s = autobatch::check_output_target(opt_.output); !s) {
    code = kUsageError;
    msg = s.rendered();
  }
  if (code == kOk && !opt_.trace.empty() && w_.size > 1) {
    code = kUsageError;
    msg =
        "autobatch: error: --trace runs the whole batch as one sequence of steps: run it "
        "without mpirun (or with -np 1)\n";
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  autobatch::CompileOptions co = cli::compile_options(opt_);
  std::optional<autobatch::Result<autobatch::Program>> compiled;
  if (opt_.program == "-") {  // mpirun gives standard input to rank 0 only
    std::string text;
    if (w_.rank == 0) {
      std::ostringstream ss;
      ss << std::cin.rdbuf();
      text = ss.str();
    }
    bcast(w_, text);
    co.name = "<stdin>";
    compiled = autobatch::compile(text, co);
  } else {
    compiled = autobatch::compile_file(opt_.program, co);
  }
  autobatch::RunOptions ro = cli::run_options(opt_);
  if (!*compiled) {
    code = kUsageError;
    msg = compiled->rendered();
  } else if (auto s = (*compiled)->check(ro); !s) {
    code = kUsageError;
    msg = s.rendered();
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  program_ = **compiled;
  parse_seconds_ = seconds_since(t0);

  // Inputs: rank 0 loads and plans; the plan goes to everyone.
  auto t1 = Clock::now();
  std::string plan;
  if (w_.rank == 0) {
    auto loaded = program_->load_inputs(opt_.inputs, opt_.batch, /*defer_npy=*/true);
    if (!loaded) {
      code = kUsageError;
      msg = loaded.rendered();
    } else {
      inputs_ = std::move(*loaded);
      plan = encode(make_plan(inputs_));
    }
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  bcast(w_, plan);
  plan_ = decode_plan(plan);
  input_seconds_ = seconds_since(t1);

  // --lanes L: each process gets its share of the lanes (at least one).
  if (ro.lanes > 0) ro.lanes = std::max<int64_t>(1, share_count(ro.lanes, w_.size, w_.rank));
  return opt_.mpi_split == "dynamic" && w_.size > 1 ? run_dynamic(ro) : run_static(ro);
}

int Job::run_static(autobatch::RunOptions ro) {
  auto t0 = Clock::now();
  Part part;
  part.first = share_first(plan_.batch, w_.size, w_.rank);
  part.count = share_count(plan_.batch, w_.size, w_.rank);
  // JSON rows: scattered from rank 0, as whole rows.
  part.json_rows.resize(plan_.params.size());
  std::vector<int> counts(static_cast<size_t>(w_.size)), offsets(static_cast<size_t>(w_.size));
  for (int r = 0; r < w_.size; ++r) {
    counts[r] = static_cast<int>(share_count(plan_.batch, w_.size, r));
    offsets[r] = static_cast<int>(share_first(plan_.batch, w_.size, r));
  }
  for (size_t k = 0; k < plan_.params.size(); ++k) {
    const Param& q = plan_.params[k];
    if (q.source != Source::JsonRows || q.row_bytes() == 0) continue;
    MPI_Datatype row;
    MPI_Type_contiguous(static_cast<int>(q.row_bytes()), MPI_BYTE, &row);
    MPI_Type_commit(&row);
    part.json_rows[k].resize(q.row_bytes() * static_cast<size_t>(part.count));
    const void* all = w_.rank == 0 ? inputs_.arrays[k].data() : nullptr;
    MPI_Scatterv(all, counts.data(), offsets.data(), row, part.json_rows[k].data(),
                 static_cast<int>(part.count), row, 0, MPI_COMM_WORLD);
    MPI_Type_free(&row);
  }
  std::string msg =
      build_views(plan_, part, [&](size_t k) -> const void* { return part.json_rows[k].data(); });
  int code = agree(w_, msg.empty() ? kOk : kUsageError, msg);
  if (code != kOk) return code;

  // Run: every process with threads (rank 0 also with none, for the outputs'
  // types when the batch is empty).
  // A failure tells the others to stop (Abort).
  Outcome mine;
  autobatch::RunResult r;
  Abort abort(w_);
  if (part.count > 0 || w_.rank == 0) {
    ro.threads = threads_per_process(opt_, on_node_, part.count);
    ro.cancel = &abort.flag;
    abort.watch([&] { r = run_part(*program_, ro, plan_, part, mine); });
    if (mine.code != kOk) abort.tell_all();
  }
  wait_for_all();
  abort.drain();
  std::vector<std::string> all = gather(w_, encode(mine));
  std::vector<Outcome> outcomes;
  int worst = mine.code;
  if (w_.rank == 0) {
    for (const auto& s : all) {
      outcomes.push_back(decode_outcome(s));
      worst = std::max(worst, outcomes.back().code);
    }
  }
  MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (worst != kOk) return finish({}, outcomes, 0);

  // Outputs: rank 0 gathers every process's rows, in input order.
  std::vector<autobatch::Array> outputs;
  std::vector<OutputType> types;
  std::string encoded_types;
  if (w_.rank == 0) {
    types = output_types(r);
    Writer tw;
    tw.i64(static_cast<int64_t>(types.size()));
    for (const auto& t : types) {
      tw.i64(static_cast<int64_t>(t.dtype));
      tw.shape(t.event);
    }
    encoded_types = tw.buf;
  }
  bcast(w_, encoded_types);
  if (w_.rank != 0) {
    Reader tr{encoded_types};
    for (int64_t n = tr.i64(); n > 0; --n) {
      auto d = static_cast<autobatch::DType>(tr.i64());
      types.push_back({d, tr.shape()});
    }
  }
  for (size_t k = 0; k < types.size(); ++k) {
    const OutputType& t = types[k];
    std::vector<int64_t> shape{plan_.batch};
    shape.insert(shape.end(), t.event.begin(), t.event.end());
    std::string all_rows;
    if (w_.rank == 0) all_rows.resize(t.row_bytes() * static_cast<size_t>(plan_.batch));
    if (t.row_bytes() > 0) {
      MPI_Datatype row;
      MPI_Type_contiguous(static_cast<int>(t.row_bytes()), MPI_BYTE, &row);
      MPI_Type_commit(&row);
      const void* rows = part.count > 0 ? r.outputs[k].data() : nullptr;
      MPI_Gatherv(rows, static_cast<int>(part.count), row, all_rows.data(), counts.data(),
                  offsets.data(), row, 0, MPI_COMM_WORLD);
      MPI_Type_free(&row);
    }
    if (w_.rank == 0)
      outputs.push_back(autobatch::Array::copy_of({t.dtype, shape, all_rows.data()}));
  }
  return finish(std::move(outputs), outcomes, seconds_since(t0));
}

int Job::run_dynamic(autobatch::RunOptions ro) {
  auto t0 = Clock::now();
  const int64_t batch = plan_.batch;
  const int64_t chunk = opt_.mpi_chunk > 0
                            ? opt_.mpi_chunk
                            : std::max<int64_t>(1, (batch + 16 * w_.size - 1) / (16 * w_.size));
  const int64_t chunks = (batch + chunk - 1) / chunk;
  ro.threads = threads_per_process(opt_, on_node_, chunk);
  Outcome mine;
  Abort abort(w_);  // rank 0 tells the workers to stop their chunk on a failure
  ro.cancel = &abort.flag;

  // The rows of chunk c of every JsonRows parameter (rank 0's inputs).
  auto json_rows = [&](size_t k, int64_t first) -> const void* {
    return static_cast<const std::byte*>(inputs_.arrays[k].data()) +
           plan_.params[k].row_bytes() * static_cast<size_t>(first);
  };

  if (w_.rank != 0) {
    // Worker: ask for work (sending the last chunk's outputs), run it, repeat.
    std::string report;  // empty: the first request
    for (;;) {
      send(report, 0, kTagResult);
      std::string work = recv(0, kTagWork);
      Reader rd{work};
      Part part;
      part.first = rd.i64();
      part.count = rd.i64();
      if (part.count < 0) break;  // no more work
      part.json_rows.resize(plan_.params.size());
      for (size_t k = 0; k < plan_.params.size(); ++k)
        if (plan_.params[k].source == Source::JsonRows) part.json_rows[k] = rd.str();
      Writer res;
      res.i64(part.first);
      res.i64(part.count);
      std::string msg = build_views(
          plan_, part, [&](size_t k) -> const void* { return part.json_rows[k].data(); });
      Outcome chunk_outcome;
      autobatch::RunResult r;
      if (!msg.empty()) {
        chunk_outcome.code = kUsageError;
        chunk_outcome.message = msg;
      } else {
        abort.watch([&] { r = run_part(*program_, ro, plan_, part, chunk_outcome); });
      }
      if (chunk_outcome.has_stats) {
        mine.has_stats = true;
        add_stats(mine.stats, chunk_outcome.stats);
      }
      chunk_outcome.has_stats = false;
      chunk_outcome.stats = {};
      res.str(encode(chunk_outcome));
      res.str(chunk_outcome.code == kOk ? encode_outputs(r) : std::string());
      report = res.buf;
    }
    wait_for_all();
    abort.drain();
    gather(w_, encode(mine));
    int worst = 0;
    MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return finish({}, {}, 0);
  }

  // Rank 0: hands out chunks to the others (this thread: all MPI calls) and
  // runs chunks itself on a second thread.
  std::mutex mu;
  int64_t next = 0;
  bool stop = false;
  Outcome failure;                               // the first (by thread) failure seen
  std::vector<autobatch::ThreadError> recorded;  // --on-error record: every chunk's
  std::map<int64_t, autobatch::RunResult> done;  // by first thread
  std::map<int64_t, std::vector<autobatch::Array>> received;
  std::optional<std::vector<OutputType>> types;
  auto record_failure = [&](const Outcome& o) {  // under mu
    stop = true;
    bool better = failure.code == kOk || o.code > failure.code ||
                  (o.code == failure.code && o.error_thread >= 0 &&
                   (failure.error_thread < 0 || o.error_thread < failure.error_thread));
    if (better) failure = o;
  };
  auto take = [&](int64_t& first, int64_t& count) {  // under mu
    if (stop || next >= chunks) return false;
    first = next * chunk;
    count = std::min(chunk, batch - first);
    ++next;
    return true;
  };
  std::thread local([&] {
    for (;;) {
      Part part;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!take(part.first, part.count)) return;
      }
      std::string msg =
          build_views(plan_, part, [&](size_t k) { return json_rows(k, part.first); });
      Outcome o;
      autobatch::RunResult r;
      if (!msg.empty()) {
        o.code = kUsageError;
        o.message = msg;
      } else {
        r = run_part(*program_, ro, plan_, part, o);
      }
      std::lock_guard<std::mutex> lock(mu);
      if (o.has_stats) {
        mine.has_stats = true;
        add_stats(mine.stats, o.stats);
      }
      if (o.cancelled) continue;  // another chunk's failure stopped this one
      if (o.code != kOk) {
        record_failure(o);
      } else {
        if (!types) types = output_types(r);
        done[part.first] = std::move(r);
        recorded.insert(recorded.end(), o.errors.begin(), o.errors.end());
      }
    }
  });

  int workers = w_.size - 1;
  while (workers > 0) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (failure.code != kOk) abort.tell_all();  // once; stops the local chunk too
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {  // Open MPI's blocking receive spins: poll gently instead
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    int from = 0;
    std::string report = recv(st.MPI_SOURCE, kTagResult, &from);
    Writer work;
    std::lock_guard<std::mutex> lock(mu);
    if (!report.empty()) {
      Reader rd{report};
      int64_t first = rd.i64();
      rd.i64();  // the chunk's size (its outputs' batch)
      Outcome o = decode_outcome(rd.str());
      std::string outs = rd.str();
      if (o.cancelled) {
        // stopped by a failure that is already recorded
      } else if (o.code != kOk) {
        record_failure(o);
      } else {
        recorded.insert(recorded.end(), o.errors.begin(), o.errors.end());
        Reader orr{outs};
        std::vector<autobatch::Array> arrays;
        std::vector<OutputType> t;
        for (int64_t n = orr.i64(); n > 0; --n) {
          auto d = static_cast<autobatch::DType>(orr.i64());
          std::vector<int64_t> shape = orr.shape();
          std::string_view data = orr.bytes();
          arrays.push_back(autobatch::Array::copy_of({d, shape, data.data()}));
          t.push_back({d, std::vector<int64_t>(shape.begin() + 1, shape.end())});
        }
        if (!types) types = t;
        received[first] = std::move(arrays);
      }
    }
    int64_t first = 0, count = -1;
    if (take(first, count)) {
      work.i64(first);
      work.i64(count);
      for (size_t k = 0; k < plan_.params.size(); ++k)
        if (plan_.params[k].source == Source::JsonRows)
          work.bytes(json_rows(k, first), plan_.params[k].row_bytes() * static_cast<size_t>(count));
    } else {
      work.i64(0);
      work.i64(-1);
      --workers;
    }
    send(work.buf, from, kTagWork);
  }
  {
    // A failure the loop did not get to (the last worker's): stop the local chunk.
    std::lock_guard<std::mutex> lock(mu);
    if (failure.code != kOk) abort.tell_all();
  }
  local.join();
  wait_for_all();
  abort.drain();
  std::vector<std::string> all = gather(w_, encode(mine));
  std::vector<Outcome> outcomes;
  for (const auto& s : all) outcomes.push_back(decode_outcome(s));
  outcomes.emplace_back().errors = std::move(recorded);
  int worst = failure.code;
  MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (worst != kOk) {
    outcomes.push_back(failure);
    return finish({}, outcomes, 0);
  }
  // An empty batch ran no chunk: rank 0 runs it alone for the outputs' types.
  if (!types) {
    Part part;
    build_views(plan_, part, [&](size_t k) { return json_rows(k, 0); });
    Outcome o;
    autobatch::RunResult r = run_part(*program_, ro, plan_, part, o);
    if (o.code != kOk) return finish({}, {o}, 0);
    return finish(r.outputs, outcomes, seconds_since(t0));
  }
  std::vector<autobatch::Array> outputs;
  for (size_t k = 0; k < types->size(); ++k) {
    const OutputType& t = (*types)[k];
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), t.event.begin(), t.event.end());
    std::string all_rows(t.row_bytes() * static_cast<size_t>(batch), '\0');
    auto place = [&](int64_t first, const autobatch::Array& a) {
      if (a.byte_size())
        std::memcpy(all_rows.data() + t.row_bytes() * first, a.data(), a.byte_size());
    };
    for (const auto& [first, r] : done) place(first, r.outputs[k]);
    for (const auto& [first, arrays] : received) place(first, arrays[k]);
    outputs.push_back(autobatch::Array::copy_of({t.dtype, shape, all_rows.data()}));
  }
  return finish(std::move(outputs), outcomes, seconds_since(t0));
}

int Job::finish(std::vector<autobatch::Array> outputs, const std::vector<Outcome>& outcomes,
                double run_seconds) {
  int code = kOk;
  if (w_.rank == 0) {
    // The failure to report: the worst status, then the first thread.
    const Outcome* failed = nullptr;
    for (const Outcome& o : outcomes) {
      if (o.code == kOk) continue;
      if (!failed || o.code > failed->code ||
          (o.code == failed->code && o.error_thread >= 0 &&
           (failed->error_thread < 0 || o.error_thread < failed->error_thread)))
        failed = &o;
    }
    const bool cancelled =
        std::any_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.cancelled; });
    if (failed) {
      std::cerr << failed->message;
      code = failed->code;
    } else if (cancelled) {  // (a notice comes only from a process that failed)
      std::cerr << "autobatch: internal error: a process stopped without a failure\n";
      code = kUsageError;
    } else {
      autobatch::RunResult result;
      result.batch = plan_.batch;
      result.outputs = std::move(outputs);
      // --on-error record: every process's failed threads, in batch order.
      result.recorded = opt_.on_error == "record";
      for (const Outcome& o : outcomes)
        result.errors.insert(result.errors.end(), o.errors.begin(), o.errors.end());
      std::stable_sort(result.errors.begin(), result.errors.end(),
                       [](const autobatch::ThreadError& a, const autobatch::ThreadError& b) {
                         return a.thread < b.thread;
                       });
      if (opt_.stats) {
        autobatch::Stats st;
        double compile = 0;
        for (const Outcome& o : outcomes) {
          if (!o.has_stats) continue;
          autobatch::Stats s = o.stats;
          compile = std::max(compile, s.seconds["compile"]);
          s.seconds.clear();
          add_stats(st, s);
        }
        st.mean_utilization = st.steps ? st.utilization_sum / static_cast<double>(st.steps) : 0.0;
        st.seconds["parse"] = parse_seconds_;
        st.seconds["inputs"] = input_seconds_;
        st.seconds["compile"] = compile;
        st.seconds["run"] = run_seconds;
        result.stats = std::move(st);
      }
      if (auto s = autobatch::write_outputs(result, opt_.output, opt_.stats); !s) {
        std::cerr << s.rendered();
        code = kUsageError;
      } else if (!result.errors.empty()) {
        cli::print_recorded_errors(result);
        code = kRuntimeError;
      }
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

}  // namespace

int run(const cli::Options& opt) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  int code = kOk;
  {
    Job job(w, opt);
    code = job.run();
  }
  MPI_Finalize();
  return code;
}

}  // namespace ab::mpi
