// A batch cut into contiguous parts, and the parts' results merged into one
// run's: used by Program::run for its shards over std::threads (run.cpp) and
// by the split over MPI processes (src/mpi), so that both cut the same way
// and report the same outputs, errors and statistics as one part would.
// Only public types (autobatch/autobatch.h) appear here.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "autobatch/autobatch.h"

namespace autobatch::shards {

constexpr int64_t kAutoThreadMin = 1024;  // automatic OS threads: at most one per this many
constexpr int64_t kShardsPerThread = 32;  // shards handed out per OS thread, at most
constexpr int64_t kShardMin = 256;        // threads of a shard handed out, at least
// One OS thread still cuts a batch of at least twice this many threads into
// shards of at least this many (up to kShardsPerThread), run one after the
// other: each shard's VM then holds a shard's per-thread storage (its
// waiting lists, stacks, variables), which the next shard reuses from the
// block pool (ir/block_pool.h), instead of the whole batch's, faulted in
// fresh (16 M threads of collatz: about 700 MB of it).
constexpr int64_t kSoloShardMin = int64_t{1} << 18;

// Threads [first, first + count) of a batch.
struct Span {
  int64_t first = 0;
  int64_t count = 0;
};

// Part k of `total` cut into `parts` contiguous shares, the first
// total % parts of them one larger.
Span share(int64_t total, int64_t parts, int64_t k);

// OS threads for `batch` threads when none are asked for: one per
// kAutoThreadMin threads, at least 1 and at most `cores`.
int64_t auto_threads(int64_t batch, int64_t cores);

// How Program::run cuts a batch: `workers` OS threads take `shards` in batch
// order, each as it finishes its last. `threads`: RunOptions::threads (0:
// automatic, from `cores`); at most `lanes` workers when lanes > 0; one
// shard for `one_shard` (a trace is one sequence of steps). With `stats`
// there is one shard per worker, so that the statistics are those of equal
// shares (an MPI run's over as many processes); otherwise more, smaller
// shards (up to kShardsPerThread per worker, of at least kShardMin threads),
// so that a region of long-running threads does not leave cores idle; and
// one worker takes shards of at least kSoloShardMin threads.
struct Plan {
  int64_t workers = 1;
  std::vector<Span> shards;
};
Plan plan(int64_t batch, int64_t threads, int64_t lanes, bool stats, bool one_shard, int64_t cores);

// What one part of the batch gave. `span` is in the batch being merged;
// thread numbers (of errors) are the whole batch's (RunOptions::first_thread).
struct Part {
  Span span;
  std::vector<Diagnostic> diagnostics;        // it could not run (exit status 2)
  std::optional<RuntimeError> runtime_error;  // it stopped (exit status 1)
  bool cancelled = false;                     // stopped on request (not a failure)
  std::vector<ThreadError> errors;            // OnError::Record: its failed threads
  std::optional<Stats> stats;
  // One per result: span.count rows, or 1 row that is every thread's. A part
  // may carry none (then it adds no rows: its rows come another way).
  std::vector<Array> outputs;
  std::vector<std::string> names;  // the outputs' (RunResult::names), if it ran

  bool failed() const { return !diagnostics.empty() || runtime_error.has_value(); }
  int exit_status() const { return !diagnostics.empty() ? 2 : runtime_error ? 1 : 0; }
};

// The failure a run of these parts reports: the worst (diagnostics before a
// runtime error), then the first in batch order (a part has at most one).
// Null when no part failed.
const Part* first_failure(const std::vector<Part>& parts);

// `total` += `part`: counts summed, the peak stack depth and each phase's
// seconds the maximum (the parts run at the same time), utilization
// applicable only if it is in every part.
void add_stats(Stats& total, const Stats& part);
// The mean utilization from the sums.
void finish_stats(Stats& s);

// The result of the whole batch (`batch` threads) from its parts, in any
// order: the first failure's diagnostics or runtime error, if any part
// failed; otherwise the outputs (each of `batch` rows, the parts' rows in
// place; a single part covering the batch is moved, not copied), the failed
// threads of every part by thread number (`recorded` says OnError::Record),
// the outputs' names (a part's that has them, else out0, out1, ...), and
// with `stats` the parts' statistics added up. Cancelled parts are the
// caller's to handle first. `placed`, if not empty: the outputs, whose rows
// the parts wrote in place (then the parts carry none).
RunResult merge(std::vector<Part>& parts, int64_t batch, bool recorded, bool stats,
                std::vector<Array> placed = {});

// The names of `outputs` outputs: those of the first part that names as
// many, else out0, out1, ...
std::vector<std::string> names_of(const std::vector<Part>& parts, size_t outputs);

}  // namespace autobatch::shards
