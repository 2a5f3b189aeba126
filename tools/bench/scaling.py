#!/usr/bin/python3
"""Cost per thread-step across batch sizes and OS threads, through the CLI.

Three groups of cases, each run `--reps` times with the configurations of a
group interleaved (so that they share the host's load), medians reported:

  flat_collatz  collatz (programs/collatz.ab) on 4096 and on 1,048,576 threads,
                n drawn uniformly from [1, 10^6] (NumPy, seed 0); a step is a
                loop iteration (the program's output summed).
  flat_fib      fib (programs/fib.ab) on 4096 and on 1,048,576 threads, n drawn
                from [10, 16]; a step is a call (2 fib(n) - 1 per thread).
  flat_nuts     programs/nuts_gauss.ab on the d = 10 AR(1) Gaussian (rho 0.9,
                its tridiagonal precision shared, eps 0.15, max_depth 8) at 1024,
                8192 and 65536 chains, 10 iterations (5 warm-up); a step is a
                leapfrog step (the n_leapfrog output summed).
  cores_fib     fib on 4096 threads, n in [10, 20], --threads 1 and 2.
  cores_nuts    the NUTS model above at 8192 chains, --threads 1 and 2.

Every run is `autobatch run PROG --inputs ... --jit wait -v -q --output DIR/`;
the time is the `run` phase that -v reports minus the JIT's compile time
(--jit wait compiles before running). Each case's outputs are checked: fib's
against Python's fib, collatz's against a NumPy loop on a sample of 1000
threads, NUTS's leapfrog counts positive and its last states finite.

Prints JSON on stdout and a table on stderr. For the flat groups, `ratio` is
the cost per step of the largest batch over the smallest's (issue target:
<= 1.2); for the cores groups, `speedup` is the one-thread time over the
two-thread time (target: >= 0.8 N, so 1.6 on 2 cores).

Usage: /usr/bin/python3 tools/bench/scaling.py [--autobatch build/autobatch]
           [--reps 3] [--only flat_fib,cores_nuts,...] [--dir DIR]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GROUPS = ["flat_collatz", "flat_fib", "flat_nuts", "cores_fib", "cores_nuts"]


def fib_value(n):
    """programs/fib.ab's fib(n): fib(0) = fib(1) = 1."""
    a, b = 1, 1
    for _ in range(int(n) - 1):
        a, b = b, a + b
    return b if n >= 1 else 1


def fib_calls(n):
    """Calls fib(n) makes, itself included: 2 fib(n) - 1."""
    return 2 * fib_value(n) - 1


def collatz_steps(n):
    s = 0
    while n > 1:
        n = 3 * n + 1 if n % 2 else n // 2
        s += 1
    return s


def nuts_inputs(chains, n_iter):
    d, rho = 10, 0.9
    k = 1.0 / (1.0 - rho * rho)
    prec = np.zeros((d, d))
    for i in range(d):
        prec[i, i] = k * (1.0 if i in (0, d - 1) else 1.0 + rho * rho)
        if i + 1 < d:
            prec[i, i + 1] = prec[i + 1, i] = -k * rho
    return {"prec": [prec.tolist()], "mu": [[0.0] * d], "q0": [[0.0] * d],
            "seed": list(range(chains)), "eps": 0.15, "max_depth": 8, "n_iter": n_iter,
            "n_warmup": n_iter // 2}


def only_output(out):
    """The one output of a single-result program (named after its variable, or out0)."""
    files = sorted(os.listdir(out))
    if len(files) != 1:
        sys.exit(f"scaling: expected one output in {out}, found {files}")
    return np.load(os.path.join(out, files[0]))


class Case:
    """One program on one input set; `check(out_dir)` gives (outputs right, thread-steps)."""

    def __init__(self, prog, inputs, check):
        self.prog, self.inputs, self.check = prog, inputs, check


def make_cases(group, tmp):
    rng = np.random.default_rng(0)
    cases = []

    def add(name, case):  # the cores groups run each case on 1 and on 2 OS threads
        if group.startswith("cores"):
            for t in (1, 2):
                cases.append((f"{name}_t{t}", ["--threads", str(t)], case))
        else:
            cases.append((name, [], case))
    if group == "flat_collatz":
        for b in (4096, 1 << 20):
            n = rng.integers(1, 10**6 + 1, size=b, dtype=np.int64)
            path = os.path.join(tmp, f"collatz_{b}.npy")
            np.save(path, n)
            sample = rng.choice(b, size=min(b, 1000), replace=False)
            want = np.array([collatz_steps(int(n[i])) for i in sample])

            def check(out, sample=sample, want=want):
                got = only_output(out)
                return bool(np.array_equal(got[sample], want)), int(got.sum())
            add(f"{group}_{b}", Case("collatz.ab", ["n=" + path], check))
    elif group in ("flat_fib", "cores_fib"):
        sizes = (4096, 1 << 20) if group == "flat_fib" else (4096,)
        hi = 16 if group == "flat_fib" else 20
        for b in sizes:
            n = rng.integers(10, hi + 1, size=b, dtype=np.int64)
            path = os.path.join(tmp, f"fib_{group}_{b}.npy")
            np.save(path, n)
            values = {k: fib_value(k) for k in range(10, hi + 1)}
            ks, counts = np.unique(n, return_counts=True)
            calls = int(sum(fib_calls(k) * int(c) for k, c in zip(ks, counts)))

            def check(out, n=n, values=values, calls=calls):
                got = only_output(out)
                want = np.vectorize(values.get)(n)
                return bool(np.array_equal(got, want)), calls
            add(f"{group}_{b}", Case("fib.ab", ["n=" + path], check))
    else:  # flat_nuts, cores_nuts
        sizes = (1024, 8192, 65536) if group == "flat_nuts" else (8192,)
        for b in sizes:
            path = os.path.join(tmp, f"nuts_{b}.json")
            with open(path, "w") as f:
                json.dump(nuts_inputs(b, 10), f)

            def check(out):
                lf = np.load(os.path.join(out, "n_leapfrog.npy"))
                q = np.load(os.path.join(out, "q.npy"))
                return bool((lf > 0).all() and np.isfinite(q).all()), int(lf.sum())
            add(f"{group}_{b}", Case("nuts_gauss.ab", [path], check))
    return cases


def run_once(binary, case, flags, out):
    shutil.rmtree(out, ignore_errors=True)
    args = [binary, "run", os.path.join(ROOT, "programs", case.prog), "--inputs", *case.inputs,
            "--jit", "wait", "-v", "-q", "--output", out + "/"]
    if "--threads" not in flags:
        args += ["--threads", "1"]
    p = subprocess.run(args + flags, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"scaling: {' '.join(args + flags)} failed:\n{p.stderr[-2000:]}")
    run = re.search(r"phase run: ([0-9.]+) ms", p.stderr)
    jit = re.search(r"jit: .*? in ([0-9.]+) ms \(", p.stderr)
    seconds = (float(run.group(1)) - (float(jit.group(1)) if jit else 0.0)) / 1e3
    ok, steps = case.check(out)
    return seconds, ok, steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build", "autobatch"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=",".join(GROUPS))
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    groups = [g for g in a.only.split(",") if g]
    for g in groups:
        if g not in GROUPS:
            sys.exit(f"scaling: unknown group '{g}' (groups: {', '.join(GROUPS)})")
    tmp = tempfile.mkdtemp(prefix="ab_scaling_", dir=a.dir)
    result = {"autobatch": a.autobatch, "reps": a.reps, "groups": {}}
    try:
        for g in groups:
            cases = make_cases(g, tmp)
            times = {name: [] for name, _, _ in cases}
            info = {}
            for _ in range(a.reps):
                for name, flags, case in cases:
                    s, ok, steps = run_once(a.autobatch, case, flags, os.path.join(tmp, "out"))
                    if not ok:
                        sys.exit(f"scaling: {name}: outputs wrong")
                    times[name].append(s)
                    info[name] = steps
            rows = []
            for name, flags, case in cases:
                med = statistics.median(times[name])
                rows.append({"name": name, "seconds": med,
                             "spread": (max(times[name]) - min(times[name])) / med,
                             "steps": info[name], "ns_per_step": med / info[name] * 1e9})
            entry = {"rows": rows}
            if g.startswith("flat"):
                entry["ratio"] = rows[-1]["ns_per_step"] / rows[0]["ns_per_step"]
                entry["target"] = "<= 1.2"
            else:
                entry["speedup"] = rows[0]["seconds"] / rows[1]["seconds"]
                entry["target"] = ">= 1.6 on 2 threads"
            result["groups"][g] = entry
            for r in rows:
                print(f"{r['name']:24s} {r['seconds']:9.4f} s  {r['ns_per_step']:9.2f} ns/step"
                      f"  spread {r['spread']:.2f}", file=sys.stderr)
            key = "ratio" if "ratio" in entry else "speedup"
            print(f"{g:24s} {key} {entry[key]:.3f} (target {entry['target']})", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
