#!/usr/bin/env python3
"""Reference posterior moments for the sampler's tests (tests/unit/test_sample.cpp).

Written apart from the sampler: each posterior's means and standard deviations
come from quadrature on a grid (NumPy only), not from sampling.

- eight_schools (programs/models/eight_schools.ab): y_j ~ N(mu + tau eta_j,
  sigma_j), eta_j ~ N(0, 1), mu ~ N(0, 5), tau ~ half-Cauchy(0, 5). With eta
  integrated out, y_j | mu, tau ~ N(mu, sqrt(sigma_j^2 + tau^2)); the grid is
  over (mu, log tau), and effect_j = mu + tau eta_j has, given (mu, tau), a
  normal distribution whose moments are averaged over the grid's weights.
- logistic (programs/models/logistic.ab): y_i ~ Bernoulli(sigmoid(b0 + x_i b)),
  every coefficient ~ N(0, 2.5). The grid is a cube of +-7 around the mode in
  coordinates whitened by the Hessian there. Also writes the data set
  (programs/models/logistic.data.json), drawn with a fixed seed.

Run from the repository root: tools/gen_posterior_reference.py; it rewrites
tests/sample/posteriors/reference.json (review the diff).
"""
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def normal_logpdf(x, m, s):
    return -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)


def eight_schools():
    data = json.load(open(os.path.join(ROOT, "programs/models/eight_schools.data.json")))
    y = np.array(data["y"], float)
    sigma = np.array(data["sigma"], float)
    mu = np.linspace(-40, 50, 1801)
    log_tau = np.linspace(-14, 7, 2101)
    M, LT = np.meshgrid(mu, log_tau, indexing="ij")
    T = np.exp(LT)
    # log p(mu, log tau | y), up to a constant (tau's Jacobian included).
    lp = normal_logpdf(M, 0.0, 5.0) - np.log1p((T / 5.0) ** 2) + LT
    for j in range(len(y)):
        lp = lp + normal_logpdf(y[j], M, np.sqrt(sigma[j] ** 2 + T ** 2))
    w = np.exp(lp - lp.max())
    w /= w.sum()

    def moments(v):
        m = (w * v).sum()
        return m, np.sqrt((w * (v - m) ** 2).sum())

    out = {"mu": moments(M), "tau": moments(T)}
    for j in range(len(y)):
        prec = 1 / sigma[j] ** 2 + 1 / T ** 2
        cmean = (y[j] / sigma[j] ** 2 + M / T ** 2) / prec
        m = (w * cmean).sum()
        var = (w * (1 / prec + (cmean - m) ** 2)).sum()
        out[f"effect[{j}]"] = (m, np.sqrt(var))
    return out


def logistic():
    rng = np.random.default_rng(20261127)
    n = 100
    x = rng.normal(size=(n, 2))
    beta_true = np.array([0.5, -1.0, 2.0])
    eta = beta_true[0] + x @ beta_true[1:]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    with open(os.path.join(ROOT, "programs/models/logistic.data.json"), "w") as f:
        json.dump({"N": n, "x": np.round(x, 6).tolist(), "y": y.tolist()}, f)
        f.write("\n")
    x = np.round(x, 6)
    X = np.column_stack([np.ones(n), x])

    def logp(b):  # b: [..., 3]
        e = b @ X.T
        return (normal_logpdf(b, 0.0, 2.5).sum(-1) + (y * e - np.logaddexp(0, e)).sum(-1))

    b = np.zeros(3)
    for _ in range(50):  # Newton to the mode
        p = 1 / (1 + np.exp(-(X @ b)))
        g = X.T @ (y - p) - b / 2.5 ** 2
        H = -(X.T * (p * (1 - p))) @ X - np.eye(3) / 2.5 ** 2
        b = b - np.linalg.solve(H, g)
    L = np.linalg.cholesky(np.linalg.inv(-H))
    z = np.linspace(-7, 7, 71)
    Z = np.stack(np.meshgrid(z, z, z, indexing="ij"), -1).reshape(-1, 3)
    B = b + Z @ L.T
    lp = logp(B)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    m = (w[:, None] * B).sum(0)
    s = np.sqrt((w[:, None] * (B - m) ** 2).sum(0))
    return {f"theta[{k}]": (m[k], s[k]) for k in range(3)}


def main():
    ref = {}
    for name, f in (("eight_schools", eight_schools), ("logistic", logistic)):
        ref[name] = {k: {"mean": float(v[0]), "sd": float(v[1])} for k, v in f().items()}
    path = os.path.join(ROOT, "tests/sample/posteriors/reference.json")
    with open(path, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(json.dumps(ref, indent=1))


if __name__ == "__main__":
    main()
