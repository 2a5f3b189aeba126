#!/usr/bin/python3
"""Writes the reference values of the convergence diagnostics (tests/sample/diagnostics/).

The draws are fixed sets of chains (NumPy's default_rng, seed 2026, stored as CASE.npy,
chains x draws, float64) and `expected.json` holds, for each case, what this script computes
with NumPy alone: mean, sd, the 5/50/95% quantiles, MCSE, bulk and tail ESS, rank-normalized
split R-hat and the basic split R-hat and ESS. The unit test `test_diagnostics.cpp` checks
src/sample/diagnostics.cpp against them.

The formulas are those of Vehtari et al. (2021) as the R package `posterior` computes them,
written again here independently of the C++: autocovariances by FFT (the C++ sums lag by
lag), ranks by NumPy's argsort, the normal quantile by Python's statistics.NormalDist.

Usage: /usr/bin/python3 tools/gen_diagnostics_reference.py [--out tests/sample/diagnostics]
A regenerated reference is reviewed (git diff), never accepted blindly.
"""
import argparse
import json
import os
import statistics

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def split_chains(x):
    """chains x draws -> 2 chains x draws // 2 (an odd chain's middle draw dropped)."""
    n = x.shape[1] // 2
    return np.concatenate([x[:, :n], x[:, x.shape[1] - n:]], axis=0)


def undefined(y):
    return y.shape[1] < 3 or not np.all(np.isfinite(y)) or np.ptp(y) == 0


def rhat_basic(y):
    """sqrt(var+ / W) of already split chains."""
    if undefined(y):
        return float("nan")
    n = y.shape[1]
    w = np.mean(np.var(y, axis=1, ddof=1))
    b_over_n = np.var(np.mean(y, axis=1), ddof=1)
    return float(np.sqrt(((n - 1) / n * w + b_over_n) / w))


def autocovariance(c):
    """Biased autocovariance (divided by n) of one chain, all lags, by FFT."""
    n = len(c)
    yc = c - c.mean()
    f = np.fft.rfft(yc, 2 * n)
    return np.fft.irfft(f * np.conj(f), 2 * n)[:n] / n


def ess(y):
    """ESS of already split chains: Geyer's initial positive, then monotone, sequence."""
    if undefined(y):
        return float("nan")
    m, n = y.shape
    acov = np.mean([autocovariance(c) for c in y], axis=0)
    mean_var = acov[0] * n / (n - 1)
    var_plus = mean_var * (n - 1) / n
    if m > 1:
        var_plus += np.var(np.mean(y, axis=1), ddof=1)
    rho = np.zeros(n)
    t = 0
    even, odd = 1.0, 1 - (mean_var - acov[1]) / var_plus
    rho[0], rho[1] = even, odd
    while t < n - 5 and not np.isnan(even + odd) and even + odd > 0:
        t += 2
        even = 1 - (mean_var - acov[t]) / var_plus
        odd = 1 - (mean_var - acov[t + 1]) / var_plus
        if even + odd >= 0:
            rho[t], rho[t + 1] = even, odd
    max_t = t
    if even > 0:
        rho[max_t] = even
    t = 0
    while t <= max_t - 4:
        t += 2
        if rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]:
            rho[t] = (rho[t - 2] + rho[t - 1]) / 2
            rho[t + 1] = rho[t]
    draws = m * n
    tau = -1 + 2 * np.sum(rho[:max_t]) + rho[max_t]
    tau = max(tau, 1 / np.log10(draws))
    return float(draws / tau)


def z_scale(y):
    """Normal scores of the average ranks: Phi^-1((r - 3/8) / (S + 1/4))."""
    flat = y.ravel()
    s = flat.size
    order = np.argsort(flat, kind="stable")
    ranks = np.empty(s)
    ranks[order] = np.arange(1, s + 1)
    # ties: the average of their ranks
    uniq, inverse = np.unique(flat, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    avg = (sums / counts)[inverse]
    nd = statistics.NormalDist()
    z = np.array([nd.inv_cdf((r - 0.375) / (s + 0.25)) for r in avg])
    return z.reshape(y.shape)


def diagnostics(x):
    y = split_chains(x)
    out = {
        "mean": float(np.mean(x)),
        "sd": float(np.std(x, ddof=1)) if x.size > 1 else float("nan"),
        "q5": float(np.quantile(x, 0.05)),
        "q50": float(np.quantile(x, 0.5)),
        "q95": float(np.quantile(x, 0.95)),
        "split_rhat_basic": rhat_basic(y),
        "ess_basic": ess(y),
    }
    if undefined(y):
        out.update(ess_bulk=float("nan"), ess_tail=float("nan"), rhat=float("nan"),
                   mcse=float("nan"))
        return out
    out["mcse"] = out["sd"] / np.sqrt(out["ess_basic"])
    out["ess_bulk"] = ess(z_scale(y))
    tails = []
    for p in (0.05, 0.95):
        q = np.quantile(y, p)
        tails.append(ess((y <= q).astype(float)))
    out["ess_tail"] = float(min(tails))
    folded = np.abs(y - np.median(y))
    out["rhat"] = float(max(rhat_basic(z_scale(y)), rhat_basic(z_scale(folded))))
    return out


def ar1(rng, chains, draws, rho, offsets=None):
    x = np.empty((chains, draws))
    x[:, 0] = rng.standard_normal(chains)
    for i in range(1, draws):
        x[:, i] = rho * x[:, i - 1] + np.sqrt(1 - rho * rho) * rng.standard_normal(chains)
    if offsets is not None:
        x += np.asarray(offsets)[:, None]
    return x


def cases():
    rng = np.random.default_rng(2026)
    yield "iid_normal", rng.standard_normal((4, 400))
    yield "ar1_rho09", ar1(rng, 4, 400, 0.9)
    yield "antithetic", ar1(rng, 4, 400, -0.6)
    yield "stuck_chain", ar1(rng, 4, 300, 0.5, offsets=[0.0, 0.0, 0.0, 1.5])
    yield "odd_draws", ar1(rng, 3, 101, 0.3)
    yield "one_chain", ar1(rng, 1, 250, 0.7)
    yield "cauchy", rng.standard_cauchy((4, 300))
    yield "poisson_ties", rng.poisson(2.0, (4, 200)).astype(float)
    yield "slow_mixing", ar1(rng, 2, 200, 0.995)
    yield "constant", np.full((2, 50), 3.25)
    yield "short", rng.standard_normal((2, 5))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "sample", "diagnostics"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    expected = {"made_by": "tools/gen_diagnostics_reference.py (NumPy "
                           + np.__version__ + "); review the diff before committing",
                "cases": {}}
    for name, x in cases():
        np.save(os.path.join(a.out, name + ".npy"), np.ascontiguousarray(x, dtype=np.float64))
        d = diagnostics(x)
        expected["cases"][name] = {k: (None if np.isnan(v) else v) for k, v in d.items()}
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
