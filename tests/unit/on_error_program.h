// The program both on-error test files run: threads 1 and 3 of 6 (inputs
// n = [3, 4, 2, 5, 1, 3], d = [10, 2, 20, 6, 11, 12]) divide by zero, thread
// 1 three calls deep (pending returns up the stack), thread 3 in main's loop
// (a persistent loop block); results of two dtypes.
#pragma once

inline const char* const kOnErrorProgram = R"(# entry: main
func main(n: i64, d: i64) -> (i64, f64) {
  s = down(n, d)
  k = 0
  while k < n {
    s = s + 60 / (d + k - 7)
    k = k + 1
  }
  return s, cast(s, dtype=f64) / 2.0
}

func down(i: i64, d: i64) -> i64 {
  if i <= 0 {
    return 0
  }
  q = 100 / (d - i)
  return down(i - 1, d) + q
}
)";
