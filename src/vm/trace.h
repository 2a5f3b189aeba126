// Tracing and statistics (docs/engine.md, "Traces and statistics"), shared by every VM.
//
// A VM reports each step (TraceStep) to a TraceWriter, which writes one of
// three formats:
// - jsonl (docs/engine.md, "Traces and statistics"): the header line, then one line per step
//     {"step": i, "block": "fib.recur", "pc": 3, "active": k, "live": l, "mask": "0110..."}
//   with "depth" added by the stackless and reference VMs, and "depths" (each
//   thread's call depth, in the mask's order) by the stack VM. The mask has one character per
//   thread ('1' = executing), or ranges ("0-3,7"), or is left out (--trace-mask).
// - compact: JSON Lines whose steps come in columns, 4096 to a line, with
//   sampled masks and, last, a summary line (TraceSummary): a few bytes per
//   step whatever the batch.
// - chrome: Chrome Trace Event JSON (Perfetto, chrome://tracing): one track
//   per block, one slice per step whose args give its active count.
// Threads are numbered by input (under --lanes a lane runs several threads
// one after the other); `live` is the number of threads the step could have
// run (TraceStep::live), absent for the reference VM, which runs one thread
// at a time. Utilization = active / live.
//
// Statistics: steps, block executions per block, primitive executions,
// lane-operations, mean utilization (active threads / live threads per step;
// not applicable to the reference VM), peak stack depth, wall time per phase.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/source.h"

namespace ab {

enum class MaskFormat { None, Bits, Ranges };
enum class TraceFormat { Jsonl, Compact, Chrome };

// One step as a VM reports it.
struct TraceStep {
  int64_t step = 0;
  uint32_t block = 0;                 // index in the header's block list
  const uint32_t* threads = nullptr;  // the threads executing (input numbers), any order
  size_t n = 0;
  // Threads the step could have run: those started and not finished (for a
  // step of the stack VM's persistent loop, which runs one chunk, at most
  // 256 of them); -1: not applicable (the reference VM).
  int64_t live = -1;
  int64_t depth = -1;                // every thread's call depth (1 = the entry), or
  const uint32_t* depths = nullptr;  // each thread's (parallel to `threads`); neither: unknown
};

// What a trace says in aggregate: per block its executions, thread-steps,
// utilization and how often the group that ran it split up afterwards (its
// threads' next steps were in different blocks: a divergent branch or loop
// exit), and a histogram of call depths over thread-steps. Built from the
// steps (by the writer, or by the report from a JSON Lines trace with masks).
struct TraceSummary {
  struct Block {
    int64_t executions = 0;
    int64_t thread_steps = 0;    // sum of active threads
    double utilization_sum = 0;  // sum of active / live over its steps (live known)
    int64_t utilization_steps = 0;
    int64_t groups = 0;  // steps whose threads were seen again
    int64_t splits = 0;  // of those, steps whose threads went on to different blocks
  };
  int64_t batch = 0;
  int64_t steps = 0;
  bool divergence = true;  // splits known (masks seen)
  std::vector<Block> blocks;
  std::vector<int64_t> depth_histogram;  // [d]: thread-steps at call depth d (d >= 1)

  void init(int64_t batch, size_t nblocks, bool track_divergence = true);
  void add(const TraceStep& s);
  void finish();  // closes the groups still open
  nlohmann::ordered_json to_json() const;
  // From to_json's form; false if it is not one.
  bool from_json(const nlohmann::json& j);

 private:
  struct Group {
    uint32_t block = 0;
    uint32_t next = UINT32_MAX;  // the first next block seen
    int64_t remaining = 0;       // threads not seen again yet
    bool split = false;
  };
  void close_group(const Group& g);
  std::vector<int64_t> last_step_;  // per thread: its last step, or -1
  std::unordered_map<int64_t, Group> open_;
};

class TraceWriter {
 public:
  TraceWriter() = default;  // off
  // Opens `path`; on failure `error()` says why and the writer stays off.
  TraceWriter(const std::string& path, MaskFormat mask, TraceFormat fmt = TraceFormat::Jsonl);
  // Writes to `out` (an embedder's sink).
  TraceWriter(std::unique_ptr<std::ostream> out, MaskFormat mask,
              TraceFormat fmt = TraceFormat::Jsonl)
      : out_(std::move(out)), mask_fmt_(mask), fmt_(fmt) {}
  ~TraceWriter() { close(); }
  TraceWriter(TraceWriter&&) = default;
  TraceWriter& operator=(TraceWriter&&) = default;
  bool on() const { return out_ != nullptr; }
  const std::string& error() const { return error_; }
  // The program's text: the header then gives each block's source line and
  // statement ("source", "lines", "statements"; see `header`).
  void set_source(SourceRef source) { source_ = std::move(source); }
  // `locs`, parallel to `blocks` (or empty): where each block comes from.
  void header(const char* vm, int64_t batch, const std::vector<std::string>& blocks,
              const std::vector<SourceLoc>& locs = {});
  void step(const TraceStep& s);
  // Finishes the file (the compact summary, chrome's closing brackets).
  void close();
  // Closes and deletes the file (a cancelled run leaves none).
  void discard();

 private:
  void flush_columns();
  void write(const std::string& s) {
    out_->write(s.data(), static_cast<std::streamsize>(s.size()));
  }
  void append_ranges(std::string& line, const uint32_t* threads, size_t n);

  std::unique_ptr<std::ostream> out_;
  std::string path_;  // "" when not a file of ours
  MaskFormat mask_fmt_ = MaskFormat::Bits;
  TraceFormat fmt_ = TraceFormat::Jsonl;
  int64_t batch_ = 0;
  bool started_ = false;
  std::vector<std::string> blocks_;
  SourceRef source_;
  std::string error_;
  std::string line_;                                        // reused
  std::vector<uint32_t> sorted_;                            // reused
  std::vector<std::pair<uint32_t, uint32_t>> depth_pairs_;  // reused
  // compact: the columns of the steps not yet written
  int64_t first_ = 0;
  std::vector<uint32_t> col_block_;
  std::vector<int64_t> col_active_, col_live_;
  std::string masks_;  // "[step, \"ranges\"], ..." of the sampled steps
  TraceSummary summary_;
  bool chrome_first_ = true;
};

// How one block runs (the stack VM's plan, vm/stack/plan.h; the other VMs
// interpret every block): its name (FUNCTION.BLOCK), the mode
// ("interpreted", "segments", "dense_loop", "dense_chunks", "whole_block",
// "chained") and why.
struct BlockExecution {
  std::string block;
  std::string mode;
  std::string reason;
  SourceLoc loc;  // the statement that made the block (its label's location)
  std::string statement;  // its text (the API layer, which has the source, fills it)
};

// Every block interpreted, for the VMs that interpret every block.
std::vector<BlockExecution> all_interpreted(const std::vector<std::string>& blocks,
                                            const std::vector<SourceLoc>& locs,
                                            const std::string& reason);

struct Stats {
  int64_t steps = 0;
  std::vector<std::string> block_names;   // in priority order
  std::vector<int64_t> block_executions;  // per block
  int64_t primitive_executions = 0;       // primitive instructions run (once per step)
  int64_t lane_operations = 0;            // primitive instructions x active threads
  double utilization_sum = 0;             // sum over steps of active / live threads
  bool batched = true;                    // false (reference VM): utilization not applicable
  int64_t peak_stack_depth = 0;           // deepest call stack of any thread
  std::map<std::string, double> seconds;  // wall time per phase
  std::vector<BlockExecution> execution;  // per block: how it ran (RunResult::execution)

  void init(std::vector<std::string> blocks) {
    block_names = std::move(blocks);
    block_executions.assign(block_names.size(), 0);
  }
  // One step of `block` for `active` of `live` threads, running `prims` primitives.
  void record_step(size_t block, int64_t active, int64_t live, int64_t prims) {
    ++steps;
    ++block_executions[block];
    primitive_executions += prims;
    lane_operations += prims * active;
    if (live > 0) utilization_sum += static_cast<double>(active) / static_cast<double>(live);
  }
  nlohmann::ordered_json to_json() const;
};

MaskFormat parse_mask_format(const std::string& s);
// "jsonl", "compact", "chrome"; nullopt otherwise ("auto" is the API's).
std::optional<TraceFormat> parse_trace_format(const std::string& s);

}  // namespace ab
