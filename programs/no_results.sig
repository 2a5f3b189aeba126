func main(x: i64) -> ()
