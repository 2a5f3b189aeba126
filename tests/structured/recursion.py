def g(n):
    if n <= 1:
        return n
    return g(n - 1) + g(g(n - 2) % 3) * 2

def main(n):
    return g(n), g(g(n) % 5 + 1) - n

INPUTS = {"n": [0, 1, 2, 3, 5, 8, 11, 14]}
