import math


def divmod_(a, b):
    return a // b, a % b


def three(n):
    q, r = divmod_(n, 7)
    return q, r, q * 7 + r


def both(n):
    return divmod_(n + 3, 4)


def main(n, x):
    x = list(x)
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        total += i
    last = -1
    for j in range(2, n + 2):
        last = j
        if j * j > 30:
            break
        n -= 1
    x[1] *= 2.0
    x[0] += math.pi
    y = x[1] ** 2.0 / math.e
    if total > 10:
        total %= 7
    elif total > 3:
        total **= 2
    else:
        total -= 100
    a, b, c = three(total + 50)
    q, r = both(last)
    return total, last, n, x, y, a, b, c, q, r


INPUTS = {"n": [0, 1, 4, 6, 9, 20],
          "x": [[1.0, 2.0, 3.0], [0.5, -1.0, 0.0], [2.0, 2.0, 2.0], [-3.0, 0.25, 1.0],
                [0.0, 0.0, 0.0], [1.5, 10.0, -2.0]]}
