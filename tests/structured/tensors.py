def main(a, n):
    m = [a, [x * 2.0 for x in a], [a[1], -a[0]]]
    r = [m[2][0] + 1.0, float(n) / 2.0]
    v = [n, n * n, -n ** 3]
    v[n % 3] = 100
    m[2][n % 2] = 9.5
    s = 0.0
    for i in range(3):
        s = s + m[i][0] * m[i][1]
    return m, r, v, s

INPUTS = {"a": [[1.5, -2.0], [0.25, 4.0], [3.0, 3.0]], "n": [2, -4, 7]}
