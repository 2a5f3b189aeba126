def poly(a, b):
    p = -a ** 2 + 2 ** 3 ** 2 - b * -3
    q = a - b - 1 - (b - a) % 7 * 2
    r = (a + b) * (a - b) // 1
    m = a % 5 - -b % 3 + a // -4
    v = [a + 1, b * 2, -a, p % 10]
    w = v[0] * v[3] + v[a % 4]
    c = not a < b or a == b and b != 0
    return p, q, r, m, w, c

def main(a, b):
    p, q, r, m, w, c = poly(a, b)
    x = float(a) / 4.0 + 0.5 * float(b) ** 2.0
    return p, q + 1, r, m, w, c, x

INPUTS = {"a": [0, 3, -7, 12, 5], "b": [1, -2, 4, 12, 0]}
