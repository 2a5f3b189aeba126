program main: 9 variables, 6 blocks
