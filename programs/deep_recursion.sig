func tri(n: i64) -> i64
