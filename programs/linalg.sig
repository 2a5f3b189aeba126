func descend(x: f64[3], max_steps: i64) -> (f64[3], i64, f64, f64)
func gradient(A: f64[3,3], x: f64[3], b: f64[3]) -> f64[3]
func quadratic(A: f64[3,3], x: f64[3], b: f64[3]) -> f64
