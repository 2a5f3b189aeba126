func main(x: f64, n: i64) -> (f64[2], f64[3], f64[3], f64, f64[2], f64, i64, i64, bool[3], bool)
