func log_density(q: f64[3], prec: f64[3,3], mu: f64[3]) -> f64
func leapfrog(q: f64[3], p: f64[3], step: f64, prec: f64[3,3], mu: f64[3]) -> (f64[3], f64[3])
func normal_like(x: f64[3], key: i64) -> f64[3]
func build_tree(q: f64[3], p: f64[3], log_u: f64, joint0: f64, step: f64, depth: i64, target: (f64[3,3], f64[3]), key: i64) -> ((f64[3], f64[3]), (f64[3], f64[3]), f64[3], i64, bool, (f64, i64, i64))
func main(prec: f64[3,3], mu: f64[3], q0: f64[3], key: i64, eps: f64, max_depth: i64, n_warmup: i64, n_samples: i64) -> (f64[3], f64[3], f64[3,3], i64, i64, i64, i64, i64, f64)
