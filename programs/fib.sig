func fib(n: i64) -> i64
