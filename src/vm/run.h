// What every VM takes and gives: options, inputs (one Array per entry
// parameter, batch B or 1 = shared), and outputs (one Array per result
// leaf, batch B) or a runtime error.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/array.h"
#include "vm/runtime_error.h"
#include "vm/trace.h"

namespace ab {

struct RunOptions {
  int64_t max_stack_depth = 100000;  // frames per thread
  int64_t max_steps = 0;             // 0: no bound
  TraceWriter* trace = nullptr;      // null or off: no trace
  Stats* stats = nullptr;            // null: no statistics
  int64_t lanes = 0;                 // > 0: refill (streaming) mode on this many lanes
  int64_t first_thread = 0;          // the whole batch's index of input 0 (thread_index())
  bool jit = true;                   // stack VM: compile blocks (if this build has the JIT)
  bool persistent = true;            // stack VM: a block that loops to itself keeps its chunk
                                     // (false: the seed's exact min-pc order)
};

struct RunResult {
  std::vector<Array> outputs;  // one per result leaf, batch = the number of inputs
  std::optional<RuntimeError> error;
  int64_t steps = 0;
  std::string log;  // what the VM chose (e.g. which blocks the JIT compiled), for -v
};

}  // namespace ab
