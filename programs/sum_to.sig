func sum_to(n: i32) -> i32
