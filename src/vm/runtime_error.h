// A runtime error (docs/language.md, "Runtime errors"): where, in which thread, and what.
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

// The texts of the runtime errors more than one VM raises, so every VM says
// the same thing for the same failure.
// "--max-steps 100 exceeded"
// "--time-limit 5 s reached after 1200 steps (3 of 8 threads finished)"
std::string time_limit_message(double seconds, int64_t steps, int64_t finished, int64_t threads);
std::string max_steps_message(int64_t max_steps);
// "interrupted after 1200 steps (3 of 8 threads finished)"
std::string interrupted_message(int64_t steps, int64_t finished, int64_t threads);
// "stack depth limit of 100000 frames exceeded calling 'fib'"; for a
// function the grad pass generated, with what to do about it
std::string stack_depth_message(int64_t limit, const std::string& callee);
// "stack depth limit of 100000 exceeded by 'fib.n'" (one variable's stack)
std::string variable_stack_depth_message(int64_t limit, const std::string& var);
// "read of 'x', whose stack is empty" and the like: `what` of `var` on an
// empty stack ("read", "pop", "in-place update").
std::string empty_stack_message(const std::string& what, const std::string& var);

// `prog.ab:14:9: runtime error: integer division by zero in thread 17 of 1024
// (function gcd, block again)`
std::string render_runtime_error(const SourceFile* source, const RuntimeError& e);

// The message of one failed thread under --on-error record (the thread is
// given beside it): `prog.ab:14:9: integer division by zero (function gcd,
// block again)`, no newline.
std::string render_thread_error(const SourceFile* source, const RuntimeError& e);

}  // namespace ab
