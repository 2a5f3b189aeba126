// A runtime error (SPEC §5.4): where, in which thread, and what.
#pragma once
#include <string>

#include "support/source.h"

namespace ab {

struct RuntimeError {
  SourceLoc loc;
  std::string message;  // "integer division by zero"
  int64_t thread = -1;
  int64_t batch = 0;
  std::string function;
  std::string block;
};

// `prog.ab:14:9: runtime error: integer division by zero in thread 17 of 1024
// (function gcd, block again)`
std::string render_runtime_error(const SourceFile* source, const RuntimeError& e);

}  // namespace ab
