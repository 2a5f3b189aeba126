func main(key: i64) -> (bool, bool, bool, bool, bool, bool)
