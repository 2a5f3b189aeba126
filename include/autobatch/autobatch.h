// autobatch: the public C++ API (one header). Compile a program once, run it
// on batches of inputs as often as needed, from as many std::threads as you
// like. Errors come back as values (Diagnostic, RuntimeError): no exception
// escapes the API and nothing calls exit.
//
//   autobatch::Result<autobatch::Program> p = autobatch::compile(text);  // CompileOptions: entry,
//   ... if (!p) { std::cerr << p.rendered(); return 2; } int64_t n[] = {6, 7, 8, 7};
//   autobatch::RunResult r = p->run({autobatch::ArrayView::of(n, 4)});
//   if (!r.ok()) { std::cerr << r.rendered(); return 1; }
//   const int64_t* fib = r.outputs[0].as<int64_t>();
//
// Everything here is in namespace `autobatch`; the implementation (namespace
// `ab`, headers under src/) is not part of the API.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autobatch {

// "0.1.0"
const char* version();

// Whether the JIT is compiling code in the background (the code of a run
// that finished before it was ready, docs/engine.md, "Tiered execution").
bool compiling_in_background();
// Waits until no compilation is under way or queued. Call it before a
// process that ran programs exits normally: LLVM's own static objects are
// destroyed by exit(), some of them before the compiling thread is joined,
// and a compilation still running then may crash the exiting process. The
// Python module calls it from an `atexit` handler; a program that must not
// wait (the CLI) flushes its outputs and ends with std::_Exit instead.
void wait_for_background_compiles();

// ---------------------------------------------------------------- types

enum class DType : uint8_t { Bool, I32, I64, F32, F64 };  // bool: one byte, 0 or 1
const char* dtype_name(DType d);                          // "bool", "i32", ...
size_t dtype_size(DType d);                               // bytes per element

template <typename T>
constexpr DType dtype_of();  // bool, int32_t, int64_t, float, double

// One thread's tensor type: dtype and event shape (no batch dimension).
struct TensorType {
  DType dtype = DType::F64;
  std::vector<int64_t> shape;  // {} for a scalar
  std::string str() const;     // "f64", "f64[3]", "i32[2,2]"
  bool operator==(const TensorType&) const = default;
};
// "f64", "f64[3]", "i32[2,2]"; nullopt if `s` is not such a type.
std::optional<TensorType> parse_tensor_type(std::string_view s);
// A primitive's result types (Primitive::result): one tensor type ("f64[3]"),
// or two or more in parentheses ("(f64, f64[3])"); nullopt otherwise.
std::optional<std::vector<TensorType>> parse_result_types(std::string_view s);

// ---------------------------------------------------------------- errors

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  std::string file;  // "" for errors about options or flags (no source)
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;
  Severity severity = Severity::Error;
  std::string message;   // "unknown label 'recurr' (did you mean 'recur'?)"
  std::string rendered;  // "fib.ab:5:23: error: ...\n" plus the source line and a caret
};

// A value or the diagnostics explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(std::vector<Diagnostic> diagnostics) : diagnostics_(std::move(diagnostics)) {}
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  // Every diagnostic's `rendered`, in order (what the CLI prints).
  std::string rendered() const {
    std::string out;
    for (const auto& d : diagnostics_) out += d.rendered;
    return out;
  }

 private:
  std::optional<T> value_;
  std::vector<Diagnostic> diagnostics_;
};

// Success, or diagnostics.
struct Status {
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return diagnostics.empty(); }
  explicit operator bool() const { return ok(); }
  std::string rendered() const {
    std::string out;
    for (const auto& d : diagnostics) out += d.rendered;
    return out;
  }
};

// ---------------------------------------------------------------- arrays

// Borrowed input: `shape` is batch first ({4} is four scalar threads, {4, 3}
// four threads of f64[3]); `data` is C order and must stay alive and
// unchanged during the run. A batch of 1 is shared by every thread (stored
// once). Never copied (unless `data` is not aligned to its element size).
struct ArrayView {
  DType dtype = DType::F64;
  std::vector<int64_t> shape;
  const void* data = nullptr;

  int64_t batch() const { return shape.empty() ? 1 : shape[0]; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // A batch of `batch` threads of T (scalars, or events of `event_shape`).
  template <typename T>
  static ArrayView of(const T* data, int64_t batch, std::vector<int64_t> event_shape = {}) {
    ArrayView v{dtype_of<T>(), std::move(event_shape), data};
    v.shape.insert(v.shape.begin(), batch);
    return v;
  }
};

// Owned, immutable output (cheap to copy: copies share the data).
class Array {
 public:
  Array() = default;
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }  // batch first
  int64_t batch() const { return shape_.empty() ? 1 : shape_[0]; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    return n;
  }
  const void* data() const { return data_; }
  size_t byte_size() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype_); }
  template <typename T>
  const T* as() const {  // T must match dtype() (bool is one byte: use bool or uint8_t)
    return static_cast<const T*>(data_);
  }
  ArrayView view() const { return {dtype_, shape_, data_}; }
  // An owned copy of `v`'s data (e.g. outputs gathered from other processes).
  static Array copy_of(const ArrayView& v);

 private:
  friend struct ArrayAccess;
  DType dtype_ = DType::F64;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> holder_;
  const void* data_ = nullptr;
};

// A batched input given as NAME=FILE.npy that Program::load_inputs left on
// disk (`defer_npy`): its header is checked, read_rows reads any rows by
// offset (so a process of a split batch reads only its share).
struct NpyInput {
  std::string path;
  std::string parameter;
  DType file_dtype = DType::F64;  // as stored
  DType dtype = DType::F64;       // the parameter's (rows are converted to it)
  std::vector<int64_t> shape;     // the file's, batch first
  uint64_t data_offset = 0;       // bytes before the data
};
// Threads [first, first + count) of `input`, converted to its dtype (an error
// names the file, the parameter and the element that does not convert).
Result<Array> read_rows(const NpyInput& input, int64_t first, int64_t count);

// Inputs loaded from the command line's forms (see Program::load_inputs).
struct Inputs {
  std::vector<Array> arrays;  // one per entry parameter, batch `batch` or 1
  int64_t batch = 0;
  // Only with load_inputs(..., defer_npy = true): one per parameter, set for
  // those left on disk (their Array has the shape but no data).
  std::vector<std::optional<NpyInput>> on_disk;
  std::vector<ArrayView> views() const {
    std::vector<ArrayView> v;
    for (const auto& a : arrays) v.push_back(a.view());
    return v;
  }
};

// ---------------------------------------------------------------- custom primitives

// A batched kernel sees n lanes (threads) of every operand; lane j's event
// (of event_size elements, C order) starts at element slot(j) * event_size
// of `data`. This is the contract of the built-in kernels (src/vm/kernels/kernel.h):
// - Dense: lane j at slot j; Shared: every lane at slot 0 (a value stored
//   once for all threads); Gather: lane j at slot index[j].
// - A result may alias an operand exactly (same data, access and index);
//   results are written for exactly the n lanes.
// - On an error return false and set err->lane (the smallest failing lane)
//   and err->message (no location: the VM adds it). Lanes before it must be
//   computed and later lanes left unwritten: under OnError::Record the VM
//   drops the failing thread and calls the kernel again for the later lanes.
// - It may be called from several threads at once and must not keep the
//   pointers after returning.
enum class Access : uint8_t { Dense, Shared, Gather };

struct KernelArg {
  const void* data = nullptr;
  Access access = Access::Dense;
  const uint32_t* index = nullptr;  // Gather only
  DType dtype = DType::F64;
  const int64_t* shape = nullptr;  // event shape, `rank` entries
  int rank = 0;
  int64_t event_size = 1;  // elements per lane
  int64_t slot(int64_t j) const {
    return access == Access::Dense ? j : access == Access::Gather ? int64_t(index[j]) : 0;
  }
  template <typename T>
  const T* lane(int64_t j) const {
    return static_cast<const T*>(data) + slot(j) * event_size;
  }
};

struct KernelOut {
  void* data = nullptr;
  Access access = Access::Dense;  // Dense or Gather
  const uint32_t* index = nullptr;
  DType dtype = DType::F64;
  const int64_t* shape = nullptr;
  int rank = 0;
  int64_t event_size = 1;
  int64_t slot(int64_t j) const {
    return access == Access::Dense ? j : access == Access::Gather ? int64_t(index[j]) : 0;
  }
  template <typename T>
  T* lane(int64_t j) const {
    return static_cast<T*>(data) + slot(j) * event_size;
  }
};

struct KernelCall {
  int64_t n = 0;  // lanes
  const KernelArg* args = nullptr;
  int nargs = 0;
  KernelOut* outs = nullptr;  // one per result of the primitive, in order
  int nouts = 0;
};

struct KernelError {
  int64_t lane = -1;
  std::string message;
};

using Kernel = std::function<bool(const KernelCall& call, KernelError* err)>;

// A type rule: one thread's operand types to the result type, or an error
// message ("" with a type: accepted). A primitive with several results gives
// their types in `types` (two or more) and leaves `type` empty.
struct TypeRuleResult {
  std::optional<TensorType> type;
  std::string error;
  std::vector<TensorType> types = {};
};
using TypeRule = std::function<TypeRuleResult(const std::vector<TensorType>& args)>;

struct Primitive {
  std::string name;  // an identifier, not a keyword or a built-in's name
  int arity = 1;
  // The type rule: either fixed result types or `rule`. One result ("f64",
  // "f64[3]"), or several in parentheses ("(f64, f64[3])": a program binds
  // them as `lp, g = prim(q)`, and the kernel writes one KernelOut each).
  std::string result;
  TypeRule rule;
  Kernel kernel;
  std::string doc;  // one line, for ops()
};

// A set of custom primitives for the programs compiled with it
// (CompileOptions::primitives). Cheap to copy (copies share the set);
// compile() takes a snapshot, so adding later does not change a compiled
// Program. Thread-safe.
class Primitives {
 public:
  Primitives();
  // Fails (with a message) on a bad name, a name already in this set, a
  // result type that does not parse, no kernel, neither or both of
  // `result` and `rule`.
  Status add(Primitive p);
  std::vector<std::string> names() const;

 private:
  friend struct PrimitivesAccess;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Registers `p` for every program compiled afterwards (a per-compile
// Primitives set shadows these by name).
Status register_primitive(Primitive p);

// One row of the primitive table.
struct OpInfo {
  std::string name;
  int min_args = 0;
  int max_args = 0;   // -1: any number
  std::string attrs;  // "axis", "shape!,dtype" ('!': required)
  std::string group;  // "arithmetic", ..., "custom"
  std::string doc;
  bool custom = false;
  // The specification columns of its row: what running it may do besides
  // computing ("pure", or some of "fails", "random", "thread"), whether
  // if_convert may run it for threads that would not have ("always",
  // "never", "if it cannot fail"), and how compiled code computes it on
  // scalars ("inline", "intrinsic llvm.sqrt", "libm erf", "kernel
  // ab_scalar_normal", or "none": in the kernels only).
  std::string effects;
  std::string speculate;
  std::string compiles;
};
// The built-ins (ops.def order), then the globally registered primitives,
// then those of `extra`.
std::vector<OpInfo> ops(const Primitives* extra = nullptr);

// ---------------------------------------------------------------- compile

struct CompileOptions {
  // "": the function written `entry func`, else `main`, else the only
  // function, else the only one no other function calls (docs/language.md,
  // "Modules and functions").
  std::string entry;
  std::string name = "<input>";     // the file name diagnostics show (compile from text)
  std::vector<std::string> passes;  // a pipeline of pass names, in order (empty: every pass)
  // "persistent" (default): min-pc, but a block that loops to itself keeps
  // running its chunk until every thread has left; "min-pc": the seed's exact
  // order.
  std::string schedule = "persistent";
  Primitives primitives;  // custom primitives (besides the global ones)
};

// The pass names, in pipeline order (what lower's print_after accepts).
std::vector<std::string> pass_names();
// "a,b,c" split at commas, spaces around names dropped ("" gives none).
std::vector<std::string> split_pass_list(const std::string& list);

// Logging on stderr (each pass with its time and the program's size, each
// run phase): silent by default. Levels: log_level_names(); set_log_level
// returns false (and changes nothing) for an unknown name.
std::vector<std::string> log_level_names();
bool set_log_level(const std::string& level);
// OK if `name` names a pass; else the message ("unknown pass ..., passes: ...").
Status check_pass_name(const std::string& name);

// Parses (no verification) and prints in canonical form: `autobatch fmt`.
Result<std::string> format(const std::string& text, const std::string& name = "<input>");
Result<std::string> format_file(const std::string& path);  // "-": standard input

struct RunOptions;
struct RunResult;

// A compiled, immutable program: parsed and verified, its entry resolved.
// Types are inferred per set of input types (and the lowered program built
// for the stack VM) on first use and cached. Copies share everything; all
// methods are const and safe to call from several threads at once.
class Program {
 public:
  // The entry's name ("" if none could be chosen: then running reports why).
  const std::string& entry() const;
  bool is_lowered() const;  // the file held a lowered program

  // Compile-time warnings about the program's own file (never the shipped
  // library or imported files): variables assigned and never used, and
  // parameters of the entry never used (docs/language.md, "Warnings").
  // Severity::Warning each; they never change what a run computes. The CLI
  // prints them on stderr unless --no-warnings.
  const std::vector<Diagnostic>& warnings() const;

  // The names of the entry's results, one per result ("" for one without a
  // name; docs/language.md, "Result names"). Outputs are named per leaf
  // (RunResult::names). Empty for a lowered program.
  std::vector<std::string> result_names() const;

  // The entry, or a function it calls, reads thread_index(): a run of batch 1
  // (every input of batch 1 and no RunOptions::batch) runs it for thread 0
  // only, which is seldom what was meant. The CLI warns.
  bool reads_thread_index() const;

  // The entry's parameters, in order: name and declared type (nullopt when
  // not annotated: inferred from the inputs). Empty if there is no entry.
  struct Parameter {
    std::string name;
    std::optional<TensorType> type;
  };
  std::vector<Parameter> parameters() const;

  // One line per function: "func fib(n: i64) -> i64", with '?' where a type
  // depends on inputs not given (`inputs` null). For a lowered program:
  // "program fib: 6 variables, 5 blocks".
  Result<std::vector<std::string>> signature(const std::vector<ArrayView>* inputs = nullptr) const;

  // The program after every pass (or after `print_after`), as text.
  Result<std::string> lower(const std::string& print_after = "",
                            const std::vector<ArrayView>* inputs = nullptr) const;

  // Inputs from the command line's forms: inline JSON ('{...}' or '[...]'),
  // a JSON file, NAME=FILE.npy; converted to the entry's annotations.
  // `batch`: the --batch flag.
  // `defer_npy`: batched .npy inputs are checked (header, shape, dtype) but
  // not read; see Inputs::on_disk and read_rows.
  Result<Inputs> load_inputs(const std::vector<std::string>& args,
                             std::optional<int64_t> batch = std::nullopt,
                             bool defer_npy = false) const;

  // OK if `options` can run this program (VM name, schedule, trace mask, a
  // lowered program under the stackless VM).
  Status check(const RunOptions& options) const;

  // Runs the entry on a batch: one view per entry parameter (in order), each
  // of batch B or 1.
  RunResult run(const std::vector<ArrayView>& inputs, const RunOptions& options) const;
  RunResult run(const std::vector<ArrayView>& inputs) const;
  RunResult run(const Inputs& inputs, const RunOptions& options) const;

  struct Impl;  // the implementation's (opaque)

 private:
  friend struct ProgramAccess;
  std::shared_ptr<const Impl> impl_;
};

Result<Program> compile(const std::string& text, const CompileOptions& options = {});
Result<Program> compile_file(const std::string& path, const CompileOptions& options = {});

// ---------------------------------------------------------------- run

// How far a run got (RunOptions::progress).
struct Progress {
  int64_t steps = 0;     // steps so far (of every shard)
  int64_t finished = 0;  // threads finished
  int64_t threads = 0;   // of the batch
  double seconds = 0;    // since the run started
};
// What a runtime error does (docs/language.md, "Runtime errors"): Abort stops the run (no outputs);
// Record stops only the thread that failed, the others run to the end, and
// RunResult::errors lists the failed threads (their outputs are zero, NaN
// for floats).
enum class OnError : uint8_t { Abort, Record };

struct RunOptions {
  std::string vm = "stack";  // "stack", "stackless" or "reference"
  int64_t lanes = 0;         // > 0: streaming mode on this many lanes (shared among threads)
  // OS threads: 0 = automatic (the machine's cores, but at most one per 1024
  // threads of the batch); N = run on min(N, B) std::threads. The batch is
  // cut into contiguous shards, each its own VM run: up to 32 per std::thread
  // (at least 256 threads each), taken in batch order by whichever is free;
  // with `stats`, one per std::thread. Outputs are those of one thread;
  // statistics are summed (peak stack depth: the maximum).
  int threads = 0;
  // Blocks one thread may start (the entry block and each block continued
  // after a call included); 0: no bound. A thread over it is a runtime error.
  int64_t max_steps = 0;
  OnError on_error = OnError::Abort;
  int64_t max_stack_depth = 100000;     // frames per thread
  int64_t batch = 0;                    // 0: from the inputs (1 when none is batched); --batch
  // What thread_index() gives input 0 of this run: a run on one part of a
  // larger batch (for example one MPI process's) passes that part's start.
  int64_t first_thread = 0;
  std::string schedule = "persistent";  // or "min-pc" (see CompileOptions::schedule)
  // Stack VM: compile blocks to native code (LLVM ORC JIT, when this build has
  // it); false runs every block through the interpreter's kernels.
  bool jit = true;
  // With the JIT: false (default) starts the run at once, every block
  // interpreted, while its code compiles on a background thread, and switches
  // the blocks to their compiled modes at a step boundary once the code is
  // ready (a run that ends first never waits for it; the code is cached for
  // the next run); true compiles first and then runs (docs/engine.md,
  // "Tiered execution"). Runs with stats, a trace or max_steps always compile
  // first, so that their step counts do not depend on timing.
  bool jit_wait = false;
  // Trace: to a file and/or one call per line (without the newline). A trace
  // forces one OS thread. Formats (docs/cli.md, "Trace formats"):
  // "jsonl" (a line per step, docs/engine.md, "Traces and statistics"), "compact" (steps in
  // columns, sampled masks, a summary: a few bytes per step), "chrome" (Chrome Trace Event
  // JSON for Perfetto), "auto" (jsonl up to kAutoJsonlBatch threads, else compact).
  std::string trace_path;
  std::function<void(std::string_view line)> trace_callback;
  std::string trace_mask = "bits";  // "bits", "ranges" or "none" (compact: none or sampled)
  std::string trace_format = "auto";
  bool stats = false;
  // With first_thread: the size of the whole batch this run is part
  // [first_thread, first_thread + B) of (one MPI process's share), so that
  // runtime errors (and RunResult::errors) name threads as in the whole batch
  // ("thread 17 of 1024").
  // 0: this run's batch.
  int64_t total_batch = 0;
  // Called between steps (about every 256 steps, from the thread running the
  // first shard) with how far the run got; keep it cheap. A step of chained
  // blocks (recursion, docs/engine.md, "The chain") can run long: within it the call
  // comes every few million blocks, with the same step count (steps never
  // decrease) and more threads finished.
  std::function<void(const Progress&)> progress;
  // The side table of the primitive progress(n) (docs/language.md): `batch`
  // entries (the run's threads, counted from first_thread), where each call
  // stores n, relaxed, at its thread's entry while the run goes on. Read it
  // from `progress` (or any OS thread) to see how far each thread got; the
  // caller sets the initial values. Null: progress(n) only returns n.
  std::atomic<int64_t>* thread_progress = nullptr;
  // When *cancel becomes true (a signal handler may set it) the run stops
  // within a few steps: RunResult::cancelled, and runtime_error says how far
  // it got. A trace file of a cancelled run is deleted.
  const std::atomic<bool>* cancel = nullptr;
  // Seconds the run may take (0: no limit). Past it the run stops as a
  // cancelled one does, and runtime_error says the limit was reached, how
  // many threads finished and where the first threads still running are.
  double time_limit = 0;
};

// "auto" traces write JSON Lines up to this many threads, else "compact".
constexpr int64_t kAutoJsonlBatch = 64;

// How one block ran: the stack VM plans each block once before the run
// (docs/engine.md, "The chain"); the stackless VM and the reference interpreter
// interpret every block.
struct BlockExecution {
  std::string block;   // FUNCTION.BLOCK, as in Stats::block_executions
  std::string mode;    // "interpreted", "segments", "dense_loop", "dense_chunks",
                       // "whole_block" or "chained"
  std::string reason;  // why, in a short sentence
  // Where the block comes from: the source line of the statement that made
  // it (an `if`, a loop, the statement after a call, the function) and that
  // statement as written (trimmed, at most 60 characters); 0 and "" when the
  // program has no source text.
  int line = 0;
  std::string statement;
};

struct Stats {
  int64_t steps = 0;
  std::vector<std::pair<std::string, int64_t>> block_executions;  // priority order
  int64_t primitive_executions = 0;
  int64_t lane_operations = 0;
  // Active threads over live threads, averaged over steps. Not applicable
  // (false; mean 0, null in json()) to the reference VM, which runs one
  // thread at a time.
  bool utilization_applicable = true;
  double mean_utilization = 0;
  double utilization_sum = 0;  // over steps (mean = sum / steps)
  int64_t peak_stack_depth = 0;
  std::map<std::string, double> seconds;  // "compile", "run" (the CLI adds "parse", "inputs")
  std::vector<BlockExecution> execution;  // as RunResult::execution ("execution" in json())
  std::string json() const;               // the object `--stats` prints
};

struct RuntimeError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string function;
  std::string block;
  int64_t thread = -1;  // in 0..batch-1; -1 when not about one thread
  int64_t batch = 0;
  std::string message;  // "integer division by zero"
  std::string
      rendered;  // "gcd.ab:9:7: runtime error: ... in thread 2 of 4 (function gcd, block step)\n"
};

// One failed thread under OnError::Record.
struct ThreadError {
  int64_t thread = 0;
  // "prog.ab:14:9: integer division by zero (function gcd, block again)"
  std::string message;
  RuntimeError error;  // the same, in parts
};

struct RunResult {
  std::vector<Array> outputs;  // one per result leaf of the entry, each of batch `batch`
  // One per output: the result's name (docs/language.md, "Result names"),
  // NAME.0, NAME.1, ... for the leaves of a tuple result, out<k> for an
  // output without a name. Distinct.
  std::vector<std::string> names;
  int64_t batch = 0;
  std::optional<Stats> stats;  // when RunOptions::stats
  // Every block with the way it ran (its mode and why): what `-v` prints and
  // --stats's "execution". Filled by every run that started.
  std::vector<BlockExecution> execution;
  // Why the run did not start (inputs, types, options): the CLI's exit 2.
  std::vector<Diagnostic> diagnostics;
  // Why it stopped (runtime errors, docs/language.md, "Runtime errors", out of memory): the CLI's
  // exit 1.
  std::optional<RuntimeError> runtime_error;
  // Stopped by RunOptions::cancel (runtime_error->message: "interrupted
  // after N steps (F of T threads finished)"), or by RunOptions::time_limit
  // (`timed_out` too; "--time-limit S s reached after ...").
  bool cancelled = false;
  bool timed_out = false;
  // OnError::Record: the threads that failed, by thread number (outputs are
  // complete otherwise); `recorded` says the run was in that mode.
  std::vector<ThreadError> errors;
  bool recorded = false;

  // No diagnostic, no runtime error and no failed thread.
  bool ok() const { return diagnostics.empty() && !runtime_error && errors.empty(); }
  std::string rendered() const;  // the errors, as the CLI prints them
  // {"outputs": [...], "names": [...]} (plus "stats" if `with_stats` and
  // present, and "errors": [{"thread": T, "message": M}, ...] when
  // `recorded`), one line.
  std::string json(bool with_stats = true) const;
};

// Where results go: "" or "-" stdout, "X.json", "X.npy" (one result), "DIR/"
// (NAME.npy per output, RunResult::names).
Status check_output_target(const std::string& target);
// Writes the outputs (and stats if present and `with_stats`) as --output does;
// when the run `recorded` errors, file targets also get `errors.json` beside
// them ({"errors": [...]}, even when empty).
Status write_outputs(const RunResult& result, const std::string& target, bool with_stats);

// ---------------------------------------------------------------- report

// Reads a trace (any format RunOptions::trace_format writes) and writes
// `html_path`: one self-contained page (no network) with a timeline of active
// threads per step coloured by block, utilization per block and per function,
// where thread groups split, a histogram of call depths and the run's figures.
// The file is written whole or not at all.
Status write_report(const std::string& trace_path, const std::string& html_path);

// ---------------------------------------------------------------- summary

// The convergence summary of Markov chains' draws (docs/sampling.md): one
// row per scalar quantity, with the columns of Stan's stansummary.
struct SummaryRow {
  std::string name;  // "theta[2]" (0-based, as the language indexes)
  double mean = 0, mcse = 0, sd = 0, q5 = 0, q50 = 0, q95 = 0;
  double ess_bulk = 0, ess_tail = 0, rhat = 0;  // NaN where undefined
};

struct Summary {
  int64_t chains = 0, draws = 0;  // draws per chain, after `skip`
  std::vector<SummaryRow> rows;
  // What a user should look at: quantities with R-hat above 1.01 or a bulk
  // or tail ESS below 400, each sentence naming the first few.
  std::vector<std::string> warnings;
  std::string table() const;  // aligned columns, a header line
  std::string json() const;   // {"chains", "draws", "rows": [{...}]}, one line
};

// How a summary names an element of a quantity: Zero, NAME[i, j] counted
// from 0 as the language indexes; Stan, NAME[i,j] counted from 1, as Stan
// and CmdStan's stansummary print them.
enum class ElementNames { Zero, Stan };

// Summarizes named draws, each shaped [chains, draws, event...] (any dtype;
// every quantity must have the same chains and draws): one row per element
// of each event, NAME or NAME[i] or NAME[i, j]. The first `skip` draws of
// every chain are left out (warm-up).
Result<Summary> summarize(const std::vector<std::pair<std::string, ArrayView>>& draws,
                          int64_t skip = 0, ElementNames names = ElementNames::Zero);
// The same for files: FILE.npy (named after the file) or DIR/ (every *.npy
// in it, by name).
Result<Summary> summarize_files(const std::vector<std::string>& paths, int64_t skip = 0,
                                ElementNames names = ElementNames::Zero);

// ---------------------------------------------------------------- sample

// The sampler's metric (Stan's diag_e and dense_e): a diagonal inverse
// metric adapted to the draws' variances, or a dense one adapted to their
// covariance, for posteriors whose parameters are strongly correlated.
enum class SampleMetric { Diag, Dense };

// How far `sample` got (SampleOptions::progress). An iteration is one NUTS
// transition: chain c has done iterations[c] of warmup + samples, the first
// `warmup` of them warm-up. The figures of a chain only grow.
struct SampleProgress {
  int64_t chains = 0, warmup = 0, samples = 0;
  std::vector<int64_t> iterations;  // per chain, 0 .. warmup + samples
  int64_t slowest = 0, fastest = 0;  // the least and the most iterations of a chain
  int64_t done = 0;                  // iterations done, over all chains
  double seconds = 0;                // since the run started
  bool sampling() const { return slowest >= warmup; }  // every chain past warm-up
  bool finished() const { return slowest >= warmup + samples; }
};

// Bayesian inference with the shipped NUTS sampler (docs/sampling.md): the
// model file defines `func log_density(theta: f64[D], DATA...) -> f64` on
// the unconstrained space, and optionally `func constrain(theta, DATA...)`
// whose (named) results are recorded beside theta. Or log_density declares
// its parameters with their constraints (`log_density(mu: f64, tau: f64
// positive, DATA...)`; docs/sampling.md, "Declared parameters"): the sampler
// then maps the unconstrained theta onto them, adds the log-Jacobians and
// records them by name. A model may instead give
// its gradient itself: `func log_density_and_grad(theta: f64[D], DATA...)`
// returning (log density, gradient), used in place of value_and_grad of
// log_density when both are defined; it may call custom primitives
// (`primitives`), a log density written in Python for instance.
struct SampleOptions {
  std::string model;  // MODEL.ab
  Primitives primitives;  // custom primitives the model calls
  // CmdStan's JSON data format: one whole value per key, shared by every
  // chain; keys log_density does not take are ignored. "" for none.
  std::string data;
  int64_t chains = 4, warmup = 1000, samples = 1000;
  std::optional<uint64_t> seed;  // unset: one from the clock (SampleResult::seed)
  int64_t max_depth = 10;
  double target_accept = 0.8;
  SampleMetric metric = SampleMetric::Diag;
  ElementNames names = ElementNames::Zero;  // the summary's element names
  // "": each chain starts uniformly in (-2, 2) on the unconstrained space
  // (drawn again, up to 100 times, while the log density is not finite); a
  // number R: uniformly in (-R, R); else a JSON file {"theta": [...]} with one
  // start for every chain or one per chain, or, for declared parameters,
  // their values by name on their support.
  std::string init;
  RunOptions run;  // threads, progress, ...
  bool program_only = false;  // stop once SampleResult::driver is made and compiles
  // How far the chains got (docs/sampling.md, "Progress"): called while the
  // run goes on, as often as RunOptions::progress is (which is still called
  // too), and once more when the run ended without an error. Keep it cheap.
  std::function<void(const SampleProgress&)> progress;
};

struct SampleResult {
  uint64_t seed = 0;
  // "theta", the declared parameters if any, and each quantity constrain
  // returns, [chains, samples, ...].
  std::vector<std::pair<std::string, Array>> draws;
  // The sampler's statistics, [chains, samples]: lp__, accept_stat__,
  // treedepth__, n_leapfrog__, divergent__, energy__ (CmdStan's names).
  std::vector<std::pair<std::string, Array>> stats;
  Array step_size;   // [chains]
  // The adapted inverse metric: [chains, D] (its diagonal) under
  // SampleMetric::Diag, [chains, D, D] under SampleMetric::Dense.
  Array inv_metric;
  int64_t warmup_divergent = 0;  // over all chains
  int64_t divergent = 0;         // after warm-up
  int64_t max_depth_hits = 0;    // transitions that reached max_depth
  // Transitions whose trajectory met a log density that is not finite (NaN,
  // or -inf outside the model's support), per chain ([chains], i64) during
  // warm-up and after it, and over all chains; the first such transition's
  // iteration per chain (warm-up's first, sampling's numbered on from
  // them; -1: none) and its point ([chains, D], unconstrained).
  Array warmup_nonfinite, nonfinite, nonfinite_at, nonfinite_theta;
  int64_t warmup_nonfinite_total = 0, nonfinite_total = 0;
  Summary summary;               // of the draws
  std::vector<std::string> warnings;  // divergences, tree depth, and the summary's
  std::string driver;  // the program that ran (the model, the sampler and this glue)
  double seconds = 0;  // compiling and running
};

Result<SampleResult> sample(const SampleOptions& options);

// The draws as CmdStan writes them, for ArviZ's from_cmdstan, R's posterior
// and stansummary: `dir` (a folder, ending in '/', made if missing) gets
// output_N.csv for chain N, counted from 1: CmdStan's comment lines (the
// settings of `options`, the adaptation's step size and inverse metric: its
// diagonal on one line, or under SampleMetric::Dense a row per line), its
// header (lp__, accept_stat__, stepsize__, treedepth__, n_leapfrog__,
// divergent__, energy__, then every draw's elements, NAME.i.j counted from
// 1: theta, unconstrained, and constrain's quantities) and a row per draw,
// floats with 17 significant digits.
Status write_cmdstan_csv(const SampleResult& s, const SampleOptions& options,
                         const std::string& dir);

// sample() in two halves, for a runner that runs the driver itself (the CLI
// under mpirun runs it over MPI processes): prepare_sample reads the model
// and the data and compiles the driver; run `program` on `inputs` (one row
// per chain, the data shared); finish_sample turns the run's outputs into
// draws, statistics and the summary.
struct SampleJob {
  SampleOptions options;
  uint64_t seed = 0;
  std::string driver;
  std::optional<Program> program;  // set unless options.program_only
  Inputs inputs;
  // The declared parameters, then constrain's results, in order.
  std::vector<std::string> quantities;
  // The model file's warnings (Program::warnings; the generated driver has none).
  std::vector<Diagnostic> warnings;
  double prepare_seconds = 0;
  double init_radius = 2.0;  // starts drawn uniformly in (-R, R); 0: given by --init FILE
  bool declared = false;     // the model declares its parameters (constrained by their types)
};
Result<SampleJob> prepare_sample(const SampleOptions& options);
Result<SampleResult> finish_sample(const SampleJob& job, const RunResult& run,
                                   double run_seconds);
// A chain that found no start with a finite log density and gradient (as
// Stan's "Initialization failed"; the driver then skips its warm-up and
// sampling): the error to report, as a runtime error of the chain's thread.
// finish_sample fails with it too.
std::optional<RuntimeError> sample_start_error(const SampleJob& job, const RunResult& run);
// Runs job.program on job.inputs with `options` (threads, cancel, the run's
// own progress, ...) and, when `progress` is set, reports how far the chains
// got (SampleOptions::progress): through RunOptions::thread_progress, which
// the driver's progress(n) calls fill, one per iteration of each chain. The
// outputs do not depend on `progress`.
RunResult run_sample(const SampleJob& job, RunOptions options,
                     const std::function<void(const SampleProgress&)>& progress);

// ---------------------------------------------------------------- dtype_of

template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}

}  // namespace autobatch
