func female(n: i64) -> i64
func male(n: i64) -> i64
