#!/usr/bin/env python3
"""The dense metric against the diagonal one (docs/sampling.md, "Dense metric").

For each target, `autobatch.sample` with metric="diag" and metric="dense" (4 chains, 1000
warm-up iterations and 1000 draws, seed 20261127, one OS thread) and, per metric: leapfrog
steps per draw, transitions at the maximum tree depth, the smallest bulk ESS of theta, and the
wall time of the call (compiling included). Targets:

  gaussian_dense  programs/models/gaussian_dense.ab: D = 3, sds 1, 10, 0.1, correlations up to
                  0.99 (covariance condition number 5.4e4)
  gaussian_ar1    programs/models/gaussian_ar1.ab: D = 10, AR(1) correlation 0.9
  rotated26       D = 26, a Gaussian whose covariance has eigenvalues spread log-uniformly over
                  a condition number of 5e5 (posteriordb's diamonds has about that many
                  parameters and that condition number), in a random orthonormal basis (NumPy
                  seed 3)

  PYTHONPATH=build-bench/python tools/bench/dense_metric.py
"""
import json
import os
import time

import numpy as np

import autobatch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODELS = os.path.join(ROOT, "programs", "models")


def rotated(d=26, condition=5e5, seed=3):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    cov = q @ np.diag(np.logspace(0, np.log10(condition), d) * 1e-2) @ q.T
    prec = np.linalg.inv(cov)
    model = (f"func log_density(theta: f64[{d}], prec) -> f64 {{\n"
             "  return -0.5 * dot(theta, matvec(prec, theta))\n}\n")
    return model, {"prec": (prec + prec.T) / 2}


def targets():
    for name in ("gaussian_dense", "gaussian_ar1"):
        yield name, os.path.join(MODELS, name + ".ab"), os.path.join(MODELS, name + ".data.json")
    yield ("rotated26",) + rotated()


def main():
    for name, model, data in targets():
        for metric in ("diag", "dense"):
            t = time.perf_counter()
            r = autobatch.sample(model, data=data, chains=4, warmup=1000, samples=1000,
                                 seed=20261127, metric=metric, threads=1)
            seconds = time.perf_counter() - t
            d = r["theta"].shape[2]
            print(json.dumps({
                "target": name, "metric": metric,
                "leapfrogs_per_draw": round(float(r.stats["n_leapfrog__"].mean()), 2),
                "max_depth_hits": int(r.max_depth_hits),
                "min_ess_bulk": round(min(r.summary[f"theta[{k}]"]["ess_bulk"]
                                          for k in range(d))),
                "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
