func eval(op: i64[16], left: i64[16], right: i64[16], val: f64[16], i: i64) -> (f64, i64)
func main(op: i64[16], left: i64[16], right: i64[16], val: f64[16]) -> (f64, i64)
