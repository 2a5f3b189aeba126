// Runs a function on a thread with a large stack, for the front end's
// recursion over a program's syntax (parse, the syntax tree's builder,
// to_blocks, the formatter): a sum of thousands of terms, thousands of
// nested ifs or a long chain of unary operators recurse that deep, and
// overflowed the 8 MiB of a process's main thread (a segfault, in the CLI
// and in Python alike).
#pragma once
#include <functional>

namespace ab {

// Calls `f` on a new thread with a 1 GiB stack (address space: only the
// pages used take memory) and waits for it; exceptions f throws are
// rethrown here. When no such thread can be made, calls f here.
void with_large_stack(const std::function<void()>& f);

}  // namespace ab
