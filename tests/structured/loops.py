def main(x, n):
    s = 0
    i = 0
    while True:
        if i >= 10 or n < 0:
            break
        elif i % 3 == 0:
            i = i + 1
            continue
        elif i % 3 == 1 and not (i == 7):
            s = s + i * 2
        else:
            s = s - i
        i = i + 1
    k = 0
    while k < n and x[k] > 0:
        k = k + 1
    found = -1
    if k < n and x[k] <= 0:
        found = x[k]
    return s, k, found

INPUTS = {"x": [[1, 2, 3, 4], [1, -2, 3, 4], [0, 1, 1, 1], [5, 6, 7, 0], [1, 2, 3, 4]],
          "n": [4, 4, 2, 3, -1]}
