func merge(a: f64[32], lo: i64, mid: i64, hi: i64) -> (f64[32], i64)
func sort(a: f64[32], lo: i64, hi: i64) -> (f64[32], i64)
func main(a: f64[32]) -> (f64[32], i64)
