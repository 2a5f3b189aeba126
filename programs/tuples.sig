func divmod(a: i64, b: i64) -> (i64, i64)
func swap(t: (i64, i64)) -> ((i64, i64))
func nest(a: i64, b: i64, c: i64) -> ((i64, (i64, i64)))
func main(a: i64, b: i64) -> (i64, i64, (i64, i64), i64)
