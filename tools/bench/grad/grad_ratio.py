#!/usr/bin/env python3
"""value_and_grad over the function: the AR(5) log density of ar5.ab (loops over time and
lags, indexed reads), `threads` threads x `evals` evaluations each, one OS thread, as fresh
`autobatch run` processes, median of --reps (the two entries interleaved). Prints JSON: per
series length T (200, and 40, whose gradient recursion fits the chain's 256 levels), the
seconds of `fun` and `grad`, their ratio, and the gradient run's --stats steps and peak
stack depth.

    tools/bench/grad/grad_ratio.py [--autobatch build/autobatch] [--threads 256]
                                   [--evals 100] [--reps 3]
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from modes import ROOT, seconds  # noqa: E402


def inputs(path, threads, T, evals):
    rng = random.Random(1)
    ys = []
    for _ in range(threads):
        y, prev = [], 0.0
        for _ in range(T):
            prev = 0.5 * prev + rng.gauss(0.0, 1.0)
            y.append(prev)
        ys.append(y)
    theta = [[0.1, 0.3, 0.1, 0.05, 0.02, 0.01, 0.0] for _ in range(threads)]
    with open(path, "w") as f:
        json.dump({"theta": theta, "y": ys, "evals": [evals] * threads}, f)


def run(exe, prog, inp, entry, extra=()):
    """modes.py's timed run of `entry`: (seconds, the outputs' JSON)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        dt = seconds(exe, prog, inp, ["--entry", entry, *extra], out)
        with open(out) as f:
            return dt, json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build", "autobatch"))
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--evals", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    text = open(os.path.join(HERE, "ar5.ab")).read()
    result = {"threads": a.threads, "evals": a.evals, "reps": a.reps, "rows": []}
    with tempfile.TemporaryDirectory() as d:
        for T in (200, 40):
            prog = os.path.join(d, f"ar5_{T}.ab")
            with open(prog, "w") as f:
                f.write(text.replace("f64[200]", f"f64[{T}]").replace("range(5, 200)",
                                                                     f"range(5, {T})"))
            inp = os.path.join(d, f"in_{T}.json")
            inputs(inp, a.threads, T, a.evals)
            times = {"fun": [], "grad": []}
            for _ in range(a.reps):
                for e in ("fun", "grad"):
                    times[e].append(run(a.autobatch, prog, inp, e)[0])
            _, st = run(a.autobatch, prog, inp, "grad", ["--stats"])
            fun, grad = statistics.median(times["fun"]), statistics.median(times["grad"])
            result["rows"].append({"T": T, "fun_s": round(fun, 4), "grad_s": round(grad, 4),
                                   "ratio": round(grad / fun, 2),
                                   "grad_steps": st["stats"]["steps"],
                                   "grad_peak_stack_depth": st["stats"]["peak_stack_depth"]})
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
