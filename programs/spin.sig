func spin(n: i64) -> i64
