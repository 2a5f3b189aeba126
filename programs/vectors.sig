func sum_from(v: i64[5], i: i64) -> i64
func prefix_sums(v: i64[5]) -> i64[5]
func main(v: i64[5], k: i64) -> (i64, i64[5], i64[5], i64)
