// What every VM takes and gives: options, inputs (one Array per entry
// parameter, batch B or 1 = shared), and outputs (one Array per result
// leaf, batch B) or a runtime error.
//
// Runtime errors (docs/language.md, "Runtime errors"). With `record_errors` off (--on-error abort)
// the first error stops the run: `error`. With it on (--on-error record) a thread
// that fails stops there and is dropped from every later step (and from the
// calls it was in); the others run to the end; `failed` holds one error per
// failed thread and that thread's outputs are zero (NaN for floats). Errors
// that are no thread's own (an unbalanced hand-written lowered program, an
// internal error) still stop the run.
//
// --max-steps (`max_steps`) bounds the blocks each thread executes: a thread
// that starts its (max_steps + 1)-th block fails with "--max-steps N
// exceeded". Every VM counts the same way: one per block a thread starts,
// the entry block and a block continued after a call returns included (the
// lowered program splits blocks there).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/array.h"
#include "vm/runtime_error.h"
#include "vm/trace.h"

namespace ab {

struct ProgressTable;  // vm/kernels/kernel.h

struct RunOptions {
  int64_t max_stack_depth = 100000;  // frames per thread
  int64_t max_steps = 0;             // blocks per thread; 0: no bound
  bool record_errors = false;        // --on-error record (see above)
  TraceWriter* trace = nullptr;      // null or off: no trace
  Stats* stats = nullptr;            // null: no statistics
  int64_t lanes = 0;                 // > 0: refill (streaming) mode on this many lanes
  int64_t first_thread = 0;          // the whole batch's index of input 0 (thread_index())
  // progress(n)'s side table (kernels/kernel.h), indexed by the thread's
  // index in the whole batch; null: progress only returns n.
  const ProgressTable* progress_table = nullptr;
  bool jit = true;                   // stack VM: compile blocks (if this build has the JIT)
  bool persistent = true;            // stack VM: a block that loops to itself keeps its chunk
                                     // (false: the seed's exact min-pc order)
  // Stack VM with the JIT: compile the planned code before the run starts
  // (true), or start at once with every block interpreted while the code
  // compiles on the JIT's background thread, and switch the blocks to their
  // planned modes at the first step boundary after it is ready (false:
  // tiered, docs/engine.md, "Tiered execution"). Runs that count steps (stats,
  // a trace, max_steps) always compile first. The public API passes its own
  // RunOptions::jit_wait (default false); here the default is true, so that
  // the JIT's tests run compiled code from the first step.
  bool jit_wait = true;
  // Why jit_wait is set, for the plan's reasons ("" when the caller asked
  // for it, or for tests): e.g. that the run's OS threads take every core,
  // leaving none to compile on in the background.
  std::string jit_wait_why;
  // Tests only, tiered runs: switch at the first step boundary at or after
  // this step (waiting for the code there, or holding back code that is
  // ready), not when the code is ready: a switch mid-run at a step that
  // does not depend on timing. -1: off.
  int64_t jit_switch_at = -1;
  // Polled between steps, every kPollSteps steps (only when set, so the step
  // loop pays nothing more without them): a set flag stops the run (RunResult
  // ::cancelled), and `progress` hears the steps so far and the threads finished.
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(int64_t steps, int64_t finished)> progress;
  bool polled() const { return cancel || progress; }
  // Where the outputs go (make_outputs): one pointer per output leaf, to the
  // first of this run's rows in an array the caller owns, which has room for
  // the run's rows from there. A shard of a batch split over OS threads
  // writes its rows straight into the whole batch's outputs, so they need
  // no merge (api/run.cpp). Empty: the VM allocates its outputs.
  std::vector<std::byte*> output_rows;
};

constexpr int64_t kPollSteps = 256;

// The step after which a VM next looks at the cancel flag and
// the progress callback: one comparison per step whatever is set.
inline int64_t next_check(const RunOptions& o, int64_t step) {
  // (--max-steps is per thread, counted where each thread starts a block.)
  return o.polled() ? step + kPollSteps : INT64_MAX;
}

// The one-thread-at-a-time reference interpreters' checkpoint: the cancel
// flag and the progress callback, looked at after step `at`.
struct Poller {
  int64_t at = INT64_MAX;
  bool cancelled = false;
  // After `steps` steps, `finished` of `batch` threads done: the message of
  // a cancelled run, else the progress callback and the next checkpoint.
  std::optional<std::string> poll(const RunOptions& o, int64_t steps, int64_t finished,
                                  int64_t batch) {
    if (o.cancel && o.cancel->load(std::memory_order_relaxed)) {
      cancelled = true;
      return interrupted_message(steps - 1, finished, batch);
    }
    if (o.progress) o.progress(steps - 1, finished);
    at = next_check(o, steps);
    return std::nullopt;
  }
};

// A thread still running when a run stopped (cancel, a time limit): where
// it waits or runs.
struct RunningThread {
  int64_t thread = 0;  // in the whole batch (first_thread added)
  std::string function, block;
  SourceLoc loc;  // the block's label
};
// How many of them a stopped run names.
constexpr size_t kRunningShown = 3;

struct RunResult {
  std::vector<Array> outputs;         // one per result leaf, batch = the number of inputs
  std::optional<RuntimeError> error;  // the run stopped
  std::vector<RuntimeError> failed;   // record_errors: the failed threads, by thread
  int64_t steps = 0;
  std::string log;         // what the VM chose (e.g. which blocks the JIT compiled), for -v
  std::vector<BlockExecution> execution;  // per block: how it runs, and why
  bool cancelled = false;  // stopped by RunOptions::cancel (`error` says how far it got)
  int64_t finished = 0;    // threads finished (when cancelled)
  std::vector<RunningThread> running;  // when cancelled: the first few still running
};

// Record mode: the outputs of the failed threads become zero (NaN for
// floats), and `failed` is sorted by thread.
void finish_failed(std::vector<Array>& outputs, std::vector<RuntimeError>& failed);

// A run's outputs: an Array of `batch` rows per output leaf. In the caller's
// memory, uninitialised, when `o.output_rows` has one place per leaf:
// every VM writes every row of a run that ends without an error (a thread's
// results when it finishes, or finish_failed's for a failed thread).
// Otherwise allocated here, zeroed.
std::vector<Array> make_outputs(const std::vector<TensorType>& leaves, int64_t batch,
                                const RunOptions& o);

}  // namespace ab
