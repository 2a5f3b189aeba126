// The pieces of the MPI run (src/mpi) shared by its files: the byte
// encoding processes send each other, the MPI calls it makes (comm.cpp),
// how a runtime error in one process stops the others (Abort), and the plan
// of the inputs with the encodings of a part's result (wire.cpp). The job
// itself is mpi_run.cpp.
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/shards.h"
#include "autobatch/autobatch.h"

namespace ab::mpi {

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

// ---------------------------------------------------------------- MPI calls (comm.cpp)

struct World {
  int rank = 0;
  int size = 1;
};

// Rank 0's `s` on every process.
void bcast(World w, std::string& s);
void send(const std::string& s, int to, int tag);
// A message with `tag` from `from` (or MPI_ANY_SOURCE: its rank in *source).
std::string recv(int from, int tag, int* source = nullptr);
// Waits until every process gets here without keeping a core busy: Open
// MPI's blocking calls poll, so a process that finished its share early
// would take CPU from those still running wherever processes share cores.
void wait_for_all();
// Every process's `mine`, on rank 0 (empty elsewhere).
std::vector<std::string> gather(World w, const std::string& mine);
// Ends a phase: the worst exit status of all processes; if not ok, rank 0
// prints the message of the first process (by rank) that has one.
int agree(World w, int code, const std::string& message);
// Processes on this node (they share its cores). Collective.
int processes_on_this_node();

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

// ---------------------------------------------------------------- the plan (wire.cpp)

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

std::string encode(const Plan& p);
Plan decode_plan(const std::string& s);
// Rank 0: the plan for the loaded inputs (JSON rows stay in `inputs`).
Plan make_plan(const autobatch::Inputs& inputs);

// The rows [first, first + count) of every parameter a process runs on:
// `keep` holds what the views borrow.
struct Rows {
  int64_t first = 0;
  int64_t count = 0;
  std::vector<std::string> json_rows;  // per parameter (JsonRows only)
  std::vector<autobatch::Array> keep;
  std::vector<autobatch::ArrayView> views;
};

// Fills rows.views; `json` gives a JsonRows parameter's rows (borrowed from
// rank 0's inputs, or from rows.json_rows). An input error: its message.
std::string build_views(const Plan& plan, Rows& rows,
                        const std::function<const void*(size_t k)>& json);

// ---------------------------------------------------------------- results (wire.cpp)

// A part that could not run: `rendered` is the message.
autobatch::shards::Part usage_error(autobatch::shards::Span span, const std::string& rendered);
// Runs `rows` as its part of the plan's batch (ro.cancel stops it: then only
// `cancelled`, the error being another's). A part that did not fail keeps
// its outputs.
autobatch::shards::Part run_part(const autobatch::Program& p, autobatch::RunOptions ro,
                                 const Plan& plan, const Rows& rows);
// What a part's process tells rank 0 (without the outputs).
std::string encode(const autobatch::shards::Part& p);
autobatch::shards::Part decode_part(const std::string& buf);

// An output's type, from one successful run (rank 0's, or a chunk's).
struct OutputType {
  autobatch::DType dtype;
  std::vector<int64_t> event;
  size_t row_bytes() const {
    int64_t n = 1;
    for (int64_t d : event) n *= d;
    return static_cast<size_t>(n) * autobatch::dtype_size(dtype);
  }
};
std::vector<OutputType> output_types(const std::vector<autobatch::Array>& outputs);
std::string encode(const std::vector<OutputType>& types);
std::vector<OutputType> decode_types(const std::string& buf);
std::string encode(const std::vector<autobatch::Array>& outputs);
std::vector<autobatch::Array> decode_outputs(const std::string& buf);

}  // namespace ab::mpi
