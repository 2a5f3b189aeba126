#include "io/limits.h"

#include <unistd.h>

#include <cstdio>
#include <limits>
#include <vector>

namespace ab {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// Per thread, beyond its variables: program counter, masks, bookkeeping.
constexpr int64_t kThreadOverhead = 16;

int64_t sat_mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return kMax;  // a negative count is never small
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}
int64_t sat_add(int64_t a, int64_t b) { return a > kMax - b ? kMax : a + b; }

std::string human_bytes(int64_t n) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace

int64_t thread_bytes(const std::map<std::string, Type>& vars) {
  int64_t total = 0;
  std::vector<TensorType> leaves;
  for (const auto& [name, type] : vars) {
    leaves.clear();
    type.leaves(leaves);
    for (const auto& t : leaves) {
      int64_t n = 1;
      for (int64_t d : t.shape) n = sat_mul(n, d);
      total = sat_add(total, sat_mul(n, static_cast<int64_t>(dtype_size(t.dtype))));
    }
  }
  return total;
}

int64_t memory_limit_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kMax;
  return sat_mul(pages, page);
}

std::optional<std::string> batch_memory_error(int64_t batch, int64_t lanes, int64_t per_thread,
                                              int64_t limit) {
  const int64_t running = lanes > 0 && lanes < batch ? lanes : batch;
  const int64_t need = sat_add(sat_mul(running, sat_add(per_thread, kThreadOverhead)),
                               sat_mul(batch, kThreadOverhead));
  if (need <= limit) return std::nullopt;
  std::string per = per_thread == kMax ? "more than 8 EB (a shape too large to allocate)"
                                       : human_bytes(per_thread);
  std::string msg = "the run needs more memory than this machine has (" + human_bytes(limit) +
                    "): " + std::to_string(running) + " threads at once × " + per +
                    " of variables per thread";
  if (per_thread != kMax && lanes == 0 && per_thread > 0)
    msg += "; use a smaller batch, or --lanes N to run N threads at a time";
  return msg;
}

}  // namespace ab
