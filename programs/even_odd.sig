func is_even(n: i64) -> bool
func is_odd(n: i64) -> bool
