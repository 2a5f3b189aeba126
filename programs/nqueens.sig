func place(board: i64[9], row: i64, n: i64) -> (i64, i64)
func nqueens(n: i64) -> (i64, i64)
