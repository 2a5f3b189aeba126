#!/usr/bin/env python3
"""The NumPy baseline of the random-walk benchmark row (tools/bench/bench.cpp).

Runs programs/random_walk.ab as a plain NumPy masked loop: every iteration
computes one step for every walk, split + uniform included, and a mask keeps
the walks that already reached the bound where they are; the loop ends when
no walk is active. The random numbers are bit for bit those of the VM:
Philox-4x32-10 and the key scheme of src/vm/kernels/philox.h, vectorised over the
walks in uint32/uint64 arithmetic.

Usage: walk_numpy.py KEYS_FILE BOUND OUT_FILE [REPS]
  KEYS_FILE  the walks' i64 keys, raw little-endian int64
  OUT_FILE   written with the steps then the final positions, raw int64
Prints one JSON object: {"seconds": [...], "iterations": N} (the loop only,
once per repetition).
"""
import json
import sys
import time

import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint32(0x9E3779B9)
W1 = np.uint32(0xBB67AE85)
LO32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
S11 = np.uint64(11)
TWO_POW_M53 = 1.0 / 9007199254740992.0


def philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of counters (c0..c3) under keys (k0, k1), all uint32 arrays."""
    for r in range(10):
        if r:
            k0 = k0 + W0  # wraps in uint32
            k1 = k1 + W1
        p0 = c0.astype(np.uint64) * M0
        p1 = c2.astype(np.uint64) * M1
        hi0 = (p0 >> S32).astype(np.uint32)
        lo0 = p0.astype(np.uint32)
        hi1 = (p1 >> S32).astype(np.uint32)
        lo1 = p1.astype(np.uint32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def block(keys, domain):
    """Block 0 of `domain` under the i64 keys (as uint64): the four words."""
    k0 = (keys & LO32).astype(np.uint32)
    k1 = (keys >> S32).astype(np.uint32)
    zero = np.zeros(keys.shape, np.uint32)
    return philox(zero, zero, zero, np.full(keys.shape, domain, np.uint32), k0, k1)


def join(lo, hi):
    return (hi.astype(np.uint64) << S32) | lo.astype(np.uint64)


def split(keys):
    x0, x1, x2, x3 = block(keys, 2)
    return join(x0, x1), join(x2, x3)


def uniform(keys):
    x0, x1, _, _ = block(keys, 0)
    return (join(x0, x1) >> S11).astype(np.float64) * TWO_POW_M53


def walk(keys, bound):
    """The masked loop; returns (steps, positions, iterations)."""
    k = keys.view(np.uint64).copy()
    x = np.zeros(k.shape, np.int64)
    steps = np.zeros(k.shape, np.int64)
    iterations = 0
    while True:
        active = np.abs(x) < bound
        if not active.any():
            break
        k_next, sub = split(k)
        u = uniform(sub)
        d = np.where(u < 0.5, 1, -1)
        k = np.where(active, k_next, k)
        x = np.where(active, x + d, x)
        steps = steps + active
        iterations += 1
    return steps, x, iterations


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    keys = np.fromfile(sys.argv[1], dtype="<i8")
    bound = int(sys.argv[2])
    reps = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    seconds = []
    with np.errstate(over="ignore"):
        for _ in range(reps):
            t0 = time.perf_counter()
            steps, x, iterations = walk(keys, bound)
            seconds.append(time.perf_counter() - t0)
    np.concatenate([steps, x]).astype("<i8").tofile(sys.argv[3])
    print(json.dumps({"seconds": seconds, "iterations": iterations}))


if __name__ == "__main__":
    main()
