#!/usr/bin/env python3
"""The NumPy baselines of the users' benchmark suite (tools/bench/users.cpp).

Each is the vectorised loop a NumPy user would write: every array holds one
value per thread (chain, walk, trajectory), every iteration updates all of
them at once, and a mask keeps the threads that are done where they are; the
loop ends when no thread is active. Random numbers come from NumPy's own
generator, np.random.default_rng(seed), so they are not the VM's: the bench
compares the results statistically.

Usage: users_numpy.py ROW PARAMS_JSON REPS
  ROW          walk, gillespie, gillespie_sir or metropolis
  PARAMS_JSON  the row's parameters (batch, seed, ...), inline JSON
Prints one JSON object: {"seconds": [...], "stats": {...}}: the loop's time
(only the loop, once per repetition) and summary statistics of the last
repetition's results (means and variances over the threads).
"""
import json
import sys
import time

import numpy as np


def walk(prm, rng):
    """Random walks to +-bound: steps and final positions."""
    n, bound = prm["batch"], prm["bound"]
    x = np.zeros(n, np.int64)
    steps = np.zeros(n, np.int64)
    while True:
        active = np.abs(x) < bound
        if not active.any():
            break
        u = rng.random(n)
        x = np.where(active, x + np.where(u < 0.5, 1, -1), x)
        steps += active
    return {"steps": steps, "x_positive": (x > 0).astype(np.float64)}


def gillespie(prm, rng):
    """Gillespie's SSA of the birth-death process: final populations and event counts."""
    n, b, d, t_end = prm["batch"], prm["b"], prm["d"], prm["t_end"]
    pop = np.full(n, prm["n0"], np.int64)
    t = np.zeros(n)
    events = np.zeros(n, np.int64)
    active = np.ones(n, bool)
    while active.any():
        total = b + d * pop
        active &= total > 0.0
        t_next = t + rng.exponential(size=n) / np.where(active, total, 1.0)
        active &= t_next < t_end
        t = np.where(active, t_next, t)
        birth = rng.random(n) * total < b
        pop = np.where(active, pop + np.where(birth, 1, -1), pop)
        events += active
    return {"n": pop, "events": events}


def gillespie_sir(prm, rng):
    """Gillespie's SSA of the SIR epidemic until no one is infected: final susceptibles,
    event counts and durations."""
    n, pop, beta, gamma = prm["batch"], prm["n"], prm["beta"], prm["gamma"]
    s = np.full(n, pop - prm["i0"], np.int64)
    i = np.full(n, prm["i0"], np.int64)
    t = np.zeros(n)
    events = np.zeros(n, np.int64)
    while True:
        active = i > 0
        if not active.any():
            break
        infect = beta * s * i / pop
        total = infect + gamma * i
        t = np.where(active, t + rng.exponential(size=n) / np.where(active, total, 1.0), t)
        infection = active & (rng.random(n) * total < infect)
        recovery = active & ~infection
        s -= infection
        i += infection.astype(np.int64) - recovery
        events += active
    return {"s": s, "events": events, "t": t}


def metropolis(prm, rng):
    """Random-walk Metropolis on the logistic-regression posterior, one chain per row."""
    chains, n_iter, scale, prior_sd = prm["batch"], prm["n_iter"], prm["scale"], prm["prior_sd"]
    X = np.array(prm["X"])
    y = np.array(prm["y"])

    def log_posterior(beta):  # beta: (chains, p)
        eta = beta @ X.T
        softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
        return (y * eta - softplus).sum(1) - 0.5 * (beta * beta).sum(1) / (prior_sd * prior_sd)

    beta = np.zeros((chains, X.shape[1]))
    lp = log_posterior(beta)
    total = np.zeros_like(beta)
    accepted = np.zeros(chains, np.int64)
    for i in range(1, n_iter + 1):
        proposal = beta + scale * rng.standard_normal(beta.shape)
        lp_proposal = log_posterior(proposal)
        accept = np.log(rng.random(chains)) < lp_proposal - lp
        beta = np.where(accept[:, None], proposal, beta)
        lp = np.where(accept, lp_proposal, lp)
        accepted += accept
        if 2 * i > n_iter:
            total += beta
    out = {"accepted": accepted}
    mean_beta = total / max(n_iter - n_iter // 2, 1)
    for j in range(X.shape[1]):
        out["mean_beta%d" % j] = mean_beta[:, j]
    return out


ROWS = {"walk": walk, "gillespie": gillespie, "gillespie_sir": gillespie_sir,
        "metropolis": metropolis}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ROWS:
        sys.exit(__doc__)
    prm = json.loads(sys.argv[2])
    reps = int(sys.argv[3])
    seconds = []
    for r in range(reps):
        rng = np.random.default_rng(prm.get("seed", 0) + r)
        t0 = time.perf_counter()
        out = ROWS[sys.argv[1]](prm, rng)
        seconds.append(time.perf_counter() - t0)
    stats = {k: {"mean": float(np.mean(v)), "var": float(np.var(v)), "sum": float(np.sum(v)),
                 "count": int(v.size)} for k, v in out.items()}
    print(json.dumps({"seconds": seconds, "stats": stats}))


if __name__ == "__main__":
    main()
