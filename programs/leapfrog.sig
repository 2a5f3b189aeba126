func leapfrog(q: f64, p: f64, eps: f64) -> (f64, f64)
func main(q0: f64, p0: f64, n_steps: i64) -> (f64, f64, f64)
