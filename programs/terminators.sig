func classify(x: i64) -> (i64, bool)
func sign(x: i64) -> i64
func validate(x: i64) -> ()
func main(x: i64) -> (i64, bool, i64)
