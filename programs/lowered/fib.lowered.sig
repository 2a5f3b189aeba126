program fib: 8 variables, 5 blocks
