// Limits checked before a run starts (README "Limits and errors"). A run
// keeps every variable of every running thread in memory, so it needs about
// lanes × (bytes of one thread's variables); a batch or a shape that cannot
// fit is an input error (exit 2) before any work, not an out-of-memory
// failure halfway through.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/type.h"

namespace ab {

// Bytes of one thread's variables (every tensor leaf), saturating at
// INT64_MAX: a shape whose size overflows counts as too large.
int64_t thread_bytes(const std::map<std::string, Type>& vars);

// The memory a run may use: the machine's physical memory.
int64_t memory_limit_bytes();

// An error message if `batch` threads, `lanes` of them running at once
// (0: all), each holding `per_thread` bytes, cannot fit in `limit` bytes;
// nothing if they can.
std::optional<std::string> batch_memory_error(int64_t batch, int64_t lanes, int64_t per_thread,
                                              int64_t limit = memory_limit_bytes());

}  // namespace ab
