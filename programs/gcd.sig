func gcd(a: i32, b: i32) -> i32
