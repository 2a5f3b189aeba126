#include "vm/runtime_error.h"

namespace ab {

std::string interrupted_message(int64_t steps, int64_t finished, int64_t threads) {
  return "interrupted after " + std::to_string(steps) + " step" + (steps == 1 ? "" : "s") + " (" +
         std::to_string(finished) + " of " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s") + " finished)";
}

std::string max_steps_message(int64_t max_steps) {
  return "--max-steps " + std::to_string(max_steps) + " exceeded";
}

std::string stack_depth_message(int64_t limit, const std::string& callee) {
  return "stack depth limit of " + std::to_string(limit) + " frames exceeded calling '" + callee +
         "'";
}

std::string variable_stack_depth_message(int64_t limit, const std::string& var) {
  return "stack depth limit of " + std::to_string(limit) + " exceeded by '" + var + "'";
}

std::string empty_stack_message(const std::string& what, const std::string& var) {
  return what + " of '" + var + "', whose stack is empty";
}

std::string render_runtime_error(const SourceFile* source, const RuntimeError& e) {
  std::string out = source ? source->name() : std::string("<program>");
  if (e.loc.known()) out += ":" + std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col);
  out += ": runtime error: " + e.message;
  if (e.thread >= 0)
    out += " in thread " + std::to_string(e.thread) + " of " + std::to_string(e.batch);
  if (!e.function.empty()) out += " (function " + e.function + ", block " + e.block + ")";
  return out + "\n";
}

}  // namespace ab
