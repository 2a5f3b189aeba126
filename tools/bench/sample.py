#!/usr/bin/env python3
"""The sampler's benchmark row: `autobatch sample` against programs/nuts_gauss.ab.

Both run NUTS on the d = 10 AR(1) Gaussian (rho 0.9) of programs/models/gaussian_ar1.ab, one
chain per thread, through the CLI:

  sample       the program autobatch sample runs (lib/nuts.ab, multinomial NUTS with Stan's
               warm-up, gradient from value_and_grad; `sample --print-program`), run by
               `autobatch run` as nuts_gauss is. Leapfrog steps per second of the draws after
               warm-up, from two runs that differ only in the number of draws (same keys: the
               shorter run's draws are the longer one's first), so compiling and warm-up cancel
               out. ESS per second: the smallest bulk ESS of theta over the whole wall time of
               `autobatch sample --samples 600` (compiling, warm-up, summary and files
               included), what a user waits for.
  nuts_gauss   programs/nuts_gauss.ab (slice-sampling NUTS, the gradient written by hand, a
               fixed step size 0.15, max depth 8), leapfrog steps per second by the same
               difference of two runs.

  nuts         programs/nuts.ab (the same algorithm as nuts_gauss in the block form, the gradient
               by hand), on the same target with the same settings.

The ratio sample / nuts is what issue 26 asks to be at least 0.8; sample / nuts_gauss, the
faster of the two hand-written programs, is printed beside it. Prints one JSON object.

  tools/bench/sample.py [--autobatch build-bench/autobatch] [--chains 1024] [--reps 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "programs/models/gaussian_ar1.ab")
DATA = os.path.join(ROOT, "programs/models/gaussian_ar1.data.json")


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"sample.py: {' '.join(cmd)} failed:\n{p.stderr}")
    return time.perf_counter() - t, p.stdout


def sample_ess(ab, chains, warmup, samples, tmp):
    out = os.path.join(tmp, f"s{samples}") + "/"
    secs, text = run([ab, "sample", MODEL, "--data", DATA, "--chains", str(chains), "--warmup",
                      str(warmup), "--samples", str(samples), "--seed", "1", "-q", "--output", out])
    ess = min(float(line.split()[7]) for line in text.splitlines() if line.startswith("theta["))
    return secs, ess


def sampler_run(ab, chains, warmup, samples, tmp):
    """(seconds, leapfrog steps after warm-up) of the sampler's program under `run`."""
    _, program = run([ab, "sample", MODEL, "--data", DATA, "--samples", str(samples),
                      "--print-program"])
    prog = os.path.join(tmp, f"driver{samples}.ab")
    open(prog, "w").write(program)
    data = json.load(open(DATA))
    inputs = {"init": [[0.0] * 10] * chains, "key": list(range(1, chains + 1)), "radius": 2.0,
              "data_prec": [data["prec"]], "data_mu": [data["mu"]], "n_warmup": warmup,
              "max_depth": 10, "target_accept": 0.8}
    path = os.path.join(tmp, "driver_inputs.json")
    json.dump(inputs, open(path, "w"))
    out = os.path.join(tmp, f"d{samples}") + "/"
    secs, _ = run([ab, "run", prog, "--inputs", path, "--output", out])
    stats = np.load(out + "stats.npy")  # [chains, draws, 6]: lp, accept, depth, n_leapfrog, ...
    return secs, int(stats[:, :, 3].sum())


def hand_written_case(ab, program, chains, n_iter, tmp):
    """(seconds, leapfrog steps) of programs/nuts_gauss.ab or programs/nuts.ab: n_iter
    iterations (100 of warm-up) per chain on the same target, step size 0.15, max depth 8."""
    data = json.load(open(DATA))
    inputs = {"prec": [data["prec"]], "mu": [[0.0] * 10], "eps": 0.15, "max_depth": 8,
              "n_warmup": 100}
    if program == "nuts_gauss":
        inputs.update(q0=[[0.0] * 10], seed=list(range(chains)), n_iter=n_iter)
    else:
        inputs.update(q0=[[0.0] * 10] * chains, key=list(range(chains)), n_samples=n_iter - 100)
    path = os.path.join(tmp, f"{program}{n_iter}.json")
    json.dump(inputs, open(path, "w"))
    out = os.path.join(tmp, f"{program}{n_iter}") + "/"
    secs, _ = run([ab, "run", os.path.join(ROOT, f"programs/{program}.ab"), "--inputs", path,
                   "--output", out])
    return secs, int(np.load(out + "n_leapfrog.npy").sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build-bench/autobatch"))
    ap.add_argument("--chains", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rows = {"sample": [], "nuts": [], "nuts_gauss": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.reps):
            t1, l1 = sampler_run(a.autobatch, a.chains, 200, 100, tmp)
            t2, l2 = sampler_run(a.autobatch, a.chains, 200, 600, tmp)
            secs, ess = sample_ess(a.autobatch, a.chains, 200, 600, tmp)
            rows["sample"].append({"leapfrog_per_s": (l2 - l1) / (t2 - t1),
                                   "ess_bulk_min": ess, "ess_per_s": ess / secs,
                                   "seconds": secs})
            for program in ("nuts_gauss", "nuts"):
                n1, m1 = hand_written_case(a.autobatch, program, a.chains, 200, tmp)
                n2, m2 = hand_written_case(a.autobatch, program, a.chains, 700, tmp)
                rows[program].append({"leapfrog_per_s": (m2 - m1) / (n2 - n1)})
    med = {k: float(np.median([r["leapfrog_per_s"] for r in v])) for k, v in rows.items()}
    print(json.dumps({"chains": a.chains, "d": 10, "runs": rows,
                      "median_leapfrog_per_s": med,
                      "ratio_sample_over_nuts": med["sample"] / med["nuts"],
                      "ratio_sample_over_nuts_gauss": med["sample"] / med["nuts_gauss"]},
                     indent=1))


if __name__ == "__main__":
    main()
