func main(x: f64) -> (f64, f64, f64, f64, f64, bool, bool, f64, f64)
