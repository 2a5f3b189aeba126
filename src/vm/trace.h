// Tracing and statistics (SPEC §5.5), shared by every VM.
//
// Trace: JSON Lines. The first line names the VM, the batch and the blocks
// in priority order; then one line per step:
//   {"step": i, "block": "fib.recur", "pc": 3, "active": k, "mask": "0110..."}
// with "depth" added by the stackless VM. The mask has one character per
// thread ('1' = executing), or ranges ("0-3,7"), or is left out (--trace-mask).
// Statistics: steps, block executions per block, primitive executions,
// lane-operations, mean utilization (active threads / live threads per
// step), peak stack depth, and wall time per phase.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ab {

enum class MaskFormat { None, Bits, Ranges };

class TraceWriter {
 public:
  TraceWriter() = default;  // off
  // Opens `path`; on failure `error()` says why and the writer stays off.
  TraceWriter(const std::string& path, MaskFormat fmt);
  // Writes to `out` (an embedder's sink).
  TraceWriter(std::unique_ptr<std::ostream> out, MaskFormat fmt)
      : out_(std::move(out)), fmt_(fmt) {}
  bool on() const { return out_ != nullptr; }
  const std::string& error() const { return error_; }
  void header(const char* vm, int64_t batch, const std::vector<std::string>& blocks);
  // `lanes`: the threads executing this step, in any order.
  void step(int64_t step, const std::string& block, int64_t pc, const uint32_t* lanes, size_t n,
            std::optional<int64_t> depth = std::nullopt);
  void close();

 private:
  std::unique_ptr<std::ostream> out_;
  MaskFormat fmt_ = MaskFormat::Bits;
  int64_t batch_ = 0;
  std::string error_;
  std::string mask_;              // reused
  std::vector<uint32_t> sorted_;  // reused
};

struct Stats {
  int64_t steps = 0;
  std::vector<std::string> block_names;   // in priority order
  std::vector<int64_t> block_executions;  // per block
  int64_t primitive_executions = 0;       // primitive instructions run (once per step)
  int64_t lane_operations = 0;            // primitive instructions x active threads
  double utilization_sum = 0;             // sum over steps of active / live threads
  int64_t peak_stack_depth = 0;           // deepest call stack of any thread
  std::map<std::string, double> seconds;  // wall time per phase

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

}  // namespace ab
