func collatz_steps(n: i64) -> i64
