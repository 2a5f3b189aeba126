// Recursive fibonacci in the block form (fib(n) = 1 for n <= 1), a fixture
// of several unit-test files.
#pragma once

inline const char* const kFibBlocks = R"(func fib(n: i64) -> i64 {
entry:
  small = le(n, 1)
  branch small, base, recur
base:
  return 1
recur:
  n1 = sub(n, 1)
  a = call fib(n1)
  n2 = sub(n, 2)
  b = call fib(n2)
  s = add(a, b)
  return s
}
)";
