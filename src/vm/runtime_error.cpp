#include "vm/runtime_error.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "vm/run.h"

namespace ab {

std::string interrupted_message(int64_t steps, int64_t finished, int64_t threads) {
  return "interrupted after " + std::to_string(steps) + " step" + (steps == 1 ? "" : "s") + " (" +
         std::to_string(finished) + " of " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s") + " finished)";
}

std::string time_limit_message(double seconds, int64_t steps, int64_t finished, int64_t threads) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", seconds);
  return "--time-limit " + std::string(limit) + " s reached after " + std::to_string(steps) +
         " step" + (steps == 1 ? "" : "s") + " (" + std::to_string(finished) + " of " +
         std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") + " finished)";
}

std::string max_steps_message(int64_t max_steps) {
  return "--max-steps " + std::to_string(max_steps) + " exceeded";
}

namespace {
// A function the grad pass generated for a block of a differentiated
// function (passes/grad.h: G_vjpM or G_vjpM_LABEL, M of 0s and 1s).
bool generated_by_grad(const std::string& f) {
  for (size_t at = f.find("_vjp"); at != std::string::npos; at = f.find("_vjp", at + 1)) {
    size_t e = at + 4;
    while (e < f.size() && (f[e] == '0' || f[e] == '1')) ++e;
    if (e > at + 4 && (e == f.size() || f[e] == '_')) return true;
  }
  return false;
}
}  // namespace

std::string stack_depth_message(int64_t limit, const std::string& callee) {
  std::string m = "stack depth limit of " + std::to_string(limit) + " frames exceeded calling '" +
                  callee + "'";
  if (generated_by_grad(callee))
    m += " (value_and_grad's reverse pass through the loop here keeps one frame per iteration "
         "of the differentiated loops: raise --max-stack-depth above their iterations)";
  return m;
}

std::string variable_stack_depth_message(int64_t limit, const std::string& var) {
  return "stack depth limit of " + std::to_string(limit) + " exceeded by '" + var + "'";
}

std::string empty_stack_message(const std::string& what, const std::string& var) {
  return what + " of '" + var + "', whose stack is empty";
}

std::string render_runtime_error(const SourceFile* source, const RuntimeError& e) {
  std::string out = source ? source->name_of(e.loc.line) : std::string("<program>");
  if (e.loc.known())
    out += ":" + std::to_string(local_line(e.loc.line)) + ":" + std::to_string(e.loc.col);
  out += ": runtime error: " + e.message;
  if (e.thread >= 0)
    out += " in thread " + std::to_string(e.thread) + " of " + std::to_string(e.batch);
  if (!e.function.empty()) out += " (function " + e.function + ", block " + e.block + ")";
  return out + "\n";
}

std::string render_thread_error(const SourceFile* source, const RuntimeError& e) {
  std::string out = source ? source->name_of(e.loc.line) : std::string("<program>");
  if (e.loc.known())
    out += ":" + std::to_string(local_line(e.loc.line)) + ":" + std::to_string(e.loc.col);
  out += ": " + e.message;
  if (!e.function.empty()) out += " (function " + e.function + ", block " + e.block + ")";
  return out;
}

void finish_failed(std::vector<Array>& outputs, std::vector<RuntimeError>& failed) {
  std::stable_sort(failed.begin(), failed.end(), [](const RuntimeError& a, const RuntimeError& b) {
    return a.thread < b.thread;
  });
  for (Array& a : outputs) {
    const size_t E = static_cast<size_t>(a.event_size());
    const size_t eb = E * dtype_size(a.type.dtype);
    for (const RuntimeError& e : failed) {
      if (e.thread < 0 || e.thread >= a.batch || eb == 0) continue;
      std::byte* row = a.data.data() + static_cast<size_t>(e.thread) * eb;
      if (a.type.dtype == DType::F64) {
        double* p = reinterpret_cast<double*>(row);
        std::fill(p, p + E, std::numeric_limits<double>::quiet_NaN());
      } else if (a.type.dtype == DType::F32) {
        float* p = reinterpret_cast<float*>(row);
        std::fill(p, p + E, std::numeric_limits<float>::quiet_NaN());
      } else {
        std::memset(row, 0, eb);
      }
    }
  }
}

std::vector<Array> make_outputs(const std::vector<TensorType>& leaves, int64_t batch,
                                const RunOptions& o) {
  std::vector<Array> out;
  out.reserve(leaves.size());
  const bool lent = o.output_rows.size() == leaves.size();
  for (size_t k = 0; k < leaves.size(); ++k) {
    if (!lent) {
      out.emplace_back(leaves[k], batch);
      continue;
    }
    Array a;
    a.type = leaves[k];
    a.batch = batch;
    a.data = Buffer::lend(o.output_rows[k], static_cast<size_t>(batch * a.type.num_elements()) *
                                                dtype_size(a.type.dtype));
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace ab
