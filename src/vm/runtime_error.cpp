#include "vm/runtime_error.h"

namespace ab {

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
