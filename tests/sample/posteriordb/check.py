#!/usr/bin/env python3
"""Samples posteriordb posteriors with `autobatch sample` and checks every quantity's mean and
sd against posteriordb's reference draws (reference.json, tools/gen_posteriordb_reference.py).

Usage: check.py AUTOBATCH WORK_DIR [NAME ...]

Without NAMEs every posterior of RUNS below runs, one after the other. A posterior marked
long runs only when the environment sets AUTOBATCH_POSTERIORDB_LONG=1; given alone by NAME
and skipped, the script exits 77 (CTest's skip). AUTOBATCH_POSTERIORDB_SEED=N replaces the
fixed seed (to see that the bounds hold for others). Standard library only.

For each quantity q with reference mean m, sd s, from n draws, and the run's mean, sd, bulk
and tail ESS (`autobatch summary --json`), with E = min(bulk ESS, number of draws) and
E_t = min(bulk ESS, tail ESS, number of draws):

  |mean - m| <= 5 * s * sqrt(1/E + 1/n) + 0.01 * s
  |sd / s - 1| <= 5 * sqrt(1/(2 E_t) + 1/(2 n)) + 0.02
  E >= 100

(5 Monte Carlo standard errors of each estimate, the reference's own included, taking the
reference draws as independent, as posteriordb thins them to be; the sd's relative standard
error is about 1/sqrt(2 ESS) for a near-normal quantity.) The seed is fixed, so a run gives
the same draws every time; the bounds are what a correct model's run could miss by chance, so
they hold for other seeds too (about once in a million per quantity beyond 5 standard errors).
"""

import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (chains, warm-up, draws, extra options, long). Seeds are fixed.
RUNS = {
    "arma11": (4, 150, 150, ["--init", "0.5"], False),
    "hmm_example": (4, 200, 200, [], False),
    "hmm_drive_0": (4, 150, 150, ["--init", str(HERE / "hmm_drive_0.init.json")], True),
    "low_dim_gauss_mix": (4, 150, 150, ["--init", "0.5"], False),
    "gp_pois_regr": (4, 150, 150, [], True),
    "gp_regr": (4, 150, 150, [], False),
    "sblrc_blr": (4, 300, 300, [], False),
    "sblri_blr": (4, 300, 300, [], False),
    "kilpisjarvi": (4, 150, 150, [], False),
    "nes1972": (4, 150, 150, ["--metric", "dense"], True),
    "logmesquite_logvash": (4, 150, 150, [], False),
    "logearn_interaction_z": (4, 150, 150, [], False),
    "kidscore_interaction_c": (4, 150, 150, [], False),
}
SEED = int(os.environ.get("AUTOBATCH_POSTERIORDB_SEED", "20261129"))
MIN_ESS = 100


def check(autobatch, work, name, ref):
    chains, warmup, draws, extra, _ = RUNS[name]
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    cmd = [autobatch, "sample", str(HERE / f"{name}.ab"), "--data", str(HERE / f"{name}.json"),
           "--chains", str(chains), "--warmup", str(warmup), "--samples", str(draws),
           "--seed", str(SEED), "-q", "--no-warnings", "-o", f"{out}/"] + extra
    start = time.monotonic()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    if run.returncode != 0:
        return [f"{name}: `{' '.join(cmd)}` exited {run.returncode}:\n{run.stderr}"], seconds
    summary = subprocess.run([autobatch, "summary", f"{out}/", "--json"], capture_output=True,
                             text=True)
    if summary.returncode != 0:
        return [f"{name}: summary exited {summary.returncode}:\n{summary.stderr}"], seconds
    rows = {r["name"]: r for r in json.loads(summary.stdout)["rows"]}
    total = chains * draws
    failures = []
    print(f"{name}: {chains} chains, {warmup} + {draws}, seed {SEED}, {seconds:.1f} s ({cpu:.1f} s CPU)")
    for q, r in ref["quantities"].items():
        row = rows.get(q)
        if row is None:
            failures.append(f"{name}: no quantity {q} in the draws")
            continue
        m, s, n = r["mean"], r["sd"], r["n"]
        if row["mean"] is None or row["sd"] is None:
            failures.append(f"{name}: {q}: a draw is not finite (mean {row['mean']}, "
                            f"sd {row['sd']})")
            print(f"  {q:14s} not finite  FAIL")
            continue
        bulk = row["ess_bulk"] or 0.0
        tail = row["ess_tail"] or 0.0
        e = min(bulk, total)
        et = min(bulk, tail, total)
        mean_tol = 5.0 * s * math.sqrt(1.0 / max(e, 1.0) + 1.0 / n) + 0.01 * s
        sd_tol = 5.0 * math.sqrt(0.5 / max(et, 1.0) + 0.5 / n) + 0.02
        mean_err = abs(row["mean"] - m)
        sd_err = abs(row["sd"] / s - 1.0)
        ok = e >= MIN_ESS and mean_err <= mean_tol and sd_err <= sd_tol
        line = (f"  {q:14s} mean {row['mean']:.6g} (ref {m:.6g}, |diff| {mean_err:.3g} <= "
                f"{mean_tol:.3g})  sd {row['sd']:.6g} (ref {s:.6g}, rel {sd_err:.3f} <= "
                f"{sd_tol:.3f})  ESS {bulk:.0f}/{tail:.0f}{'' if ok else '  FAIL'}")
        print(line)
        if not ok:
            failures.append(f"{name}:{line}")
    return failures, seconds


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    autobatch, work = sys.argv[1], Path(sys.argv[2])
    names = sys.argv[3:] or list(RUNS)
    reference = json.loads((HERE / "reference.json").read_text())
    long_ok = os.environ.get("AUTOBATCH_POSTERIORDB_LONG") == "1"
    work.mkdir(parents=True, exist_ok=True)
    failures, ran, total = [], 0, 0.0
    for name in names:
        if name not in RUNS:
            sys.exit(f"unknown posterior {name}; known: {', '.join(RUNS)}")
        if RUNS[name][4] and not long_ok:
            print(f"{name}: long, skipped (set AUTOBATCH_POSTERIORDB_LONG=1 to run it)")
            continue
        f, seconds = check(autobatch, work, name, reference[name])
        failures += f
        ran += 1
        total += seconds
    print(f"{ran} posteriors sampled in {total:.1f} s")
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        return 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main())
