func main(scale: f64, x: f64) -> (f64, i64)
