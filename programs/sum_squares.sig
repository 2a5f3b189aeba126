func main(n: i64) -> i64
func square(x: i64) -> i64
