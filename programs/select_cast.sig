func main(x: f64, lo: f64, hi: f64) -> (f64, i64, i64, bool, bool, f64)
