func horner(coef: f64[4], x: f64) -> (f64, f64)
func bisect(coef: f64[4], lo: f64, hi: f64, tol: f64) -> (f64, i64)
func newton(coef: f64[4], x: f64, tol: f64, max_iter: i64) -> (f64, i64)
func roots(coef: f64[4], lo: f64, hi: f64, x0: f64, tol: f64, max_iter: i64) -> (f64, i64, f64, i64)
