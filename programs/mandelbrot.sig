func escape_time(cx: f64, cy: f64, max_iter: i64) -> i64
