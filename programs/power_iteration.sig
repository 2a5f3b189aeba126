func power(A: f64[4,4], x: f64[4], k: i64) -> (f64[4], f64)
