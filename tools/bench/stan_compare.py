#!/usr/bin/python3
"""stan_compare.py: the same posteriors through rstan and through `autobatch sample`.

For each posterior of tools/bench/stan/ (five from posteriordb: eight schools, kidiq, arK,
garch11, diamonds; tools/bench/stan/README.md says where they come from):

- rstan (stan_compare.R beside this file): compiles the model (timed apart), then samples
  4 chains of 1000 warm-up and 1000 draws, one after the other on one core (cores = 1).
  Reported: the wall time of `sampling()`, rstan's own elapsed times (get_elapsed_time, warm-up
  and sampling, summed over the chains), and the leapfrog steps (get_sampler_params).
- autobatch: `autobatch sample NAME.ab --data DATA.json --chains 4 --warmup 1000
  --samples 1000 --seed 1 --threads 1 --output DIR/`, the whole command's wall time (parsing,
  compiling, JIT and sampling; autobatch has no separate compile step).
- Leapfrogs per second in the sampling phase. rstan times its sampling phase; autobatch does
  not, and records no warm-up statistics, so its sampling-phase rate comes from a second run
  with --samples 2000 and the same seed (whose warm-up and first 1000 draws are the first
  run's): the leapfrog steps of draws 1000..1999 over the difference of the two wall times.
- Minimum bulk ESS (rank-normalized, Vehtari et al. 2021) over the Stan model's `parameters`,
  computed for both tools by one estimator, `autobatch summary --json` (rstan's draws are
  written as .npy for it); rstan's own rstan::ess_bulk minimum is reported beside it as a
  check. Per second of the tool's wall time (rstan: sampling() without compilation).
- autobatch alone at 256 and 4096 chains (--threads 1 by default; --big-threads), each run
  capped at --timeout seconds; a run that does not finish is reported as such, and 4096 chains
  may be run shorter (--big-warmup, --big-samples).

Prints JSON (and writes it with --json-out). Skips, with a message and exit status 0, when
Rscript or rstan is absent. Usage:

  /usr/bin/python3 tools/bench/stan_compare.py [--autobatch build/autobatch] [--models arK,...]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STAN_DIR = os.path.join(HERE, "stan")
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, data, the Stan model's parameters (its `parameters` block)
MODELS = [
    ("eight_schools_noncentered", "eight_schools", ["theta_trans", "mu", "tau"]),
    ("kidscore_momhsiq", "kidiq", ["beta", "sigma"]),
    ("arK", "arK", ["alpha", "beta", "sigma"]),
    ("garch11", "garch", ["mu", "alpha0", "alpha1", "beta1"]),
    ("diamonds", "diamonds", ["b", "Intercept", "sigma"]),
]


def r_value(v):
    """A JSON data value in rstan's dump format (column-major for matrices)."""
    a = np.asarray(v)
    if a.ndim == 0:
        return repr(int(a)) if isinstance(v, int) else repr(float(a))
    flat = a.flatten(order="F")
    if a.dtype.kind in "iub":
        body = "c(" + ", ".join(str(int(x)) for x in flat) + ")"
    else:
        body = "c(" + ", ".join(repr(float(x)) for x in flat) + ")"
    if a.ndim == 1:
        return body
    return "structure(%s, .Dim = c(%s))" % (body, ", ".join(str(d) for d in a.shape))


def write_rdump(data, path):
    with open(path, "w") as f:
        for k, v in data.items():
            f.write("%s <- %s\n" % (k, r_value(v)))


def summary_rows(autobatch, paths):
    out = subprocess.run([autobatch, "summary", "--json"] + paths, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)["rows"]


def min_ess(rows, pars):
    vals = [r["ess_bulk"] for r in rows if r["name"].split("[")[0] in pars]
    return min(vals) if vals else None


def run_rstan(name, data_name, pars, tmp, args):
    with open(os.path.join(STAN_DIR, data_name + ".json")) as f:
        data = json.load(f)
    rdump = os.path.join(tmp, data_name + ".R")
    write_rdump(data, rdump)
    outdir = os.path.join(tmp, "rstan_" + name)
    cmd = ["Rscript", os.path.join(HERE, "stan_compare.R"), os.path.join(STAN_DIR, name + ".stan"),
           rdump, "4", str(args.warmup), str(args.samples), str(args.seed), ",".join(pars), outdir]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    total = time.perf_counter() - t0
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout)[-2000:]}
    stats = {}
    ess_r = {}
    with open(os.path.join(outdir, "stats.txt")) as f:
        for line in f:
            k, v = line.split(" ", 1)
            if k.startswith("ess_bulk["):
                ess_r[k[9:-1]] = float(v)
            elif k in ("rstan_version", "stan_version"):
                stats[k] = v.strip()
            else:
                stats[k] = float(v)
    # the draws as [chains, draws, ...] .npy, one per parameter, for autobatch summary
    with open(os.path.join(outdir, "draws.csv")) as f:
        header = [h.strip('"') for h in f.readline().strip().split(",")]
    d = np.loadtxt(os.path.join(outdir, "draws.csv"), delimiter=",", skiprows=1)
    chain = d[:, 0].astype(int)
    nch = chain.max()
    npy_dir = os.path.join(outdir, "npy")
    os.makedirs(npy_dir, exist_ok=True)
    paths = []
    for par in pars:
        cols = [i for i, h in enumerate(header) if h == par or h.startswith(par + "[")]
        arr = np.stack([d[chain == c][:, cols] for c in range(1, nch + 1)])
        if len(cols) == 1 and header[cols[0]] == par:
            arr = arr[:, :, 0]
        path = os.path.join(npy_dir, par + ".npy")
        np.save(path, arr)
        paths.append(path)
    rows = summary_rows(args.autobatch, paths)
    res = dict(stats)
    res["script_wall_s"] = total
    res["min_ess_bulk"] = min_ess(rows, pars)
    res["min_ess_bulk_rstan"] = min(ess_r.values())
    res["min_ess_bulk_per_s"] = res["min_ess_bulk"] / stats["wall_s"]
    res["leapfrogs_per_s_sampling"] = stats["leapfrogs_sample"] / stats["elapsed_sample_s"]
    res["leapfrogs_per_s_total"] = ((stats["leapfrogs_warmup"] + stats["leapfrogs_sample"])
                                    / (stats["elapsed_warmup_s"] + stats["elapsed_sample_s"]))
    res["means"] = {r["name"]: r["mean"] for r in rows}
    res["mcse"] = {r["name"]: r["mcse"] for r in rows}
    return res


def run_autobatch(name, data_name, pars, chains, warmup, samples, tmp, args, tag):
    outdir = os.path.join(tmp, "ab_%s_%s" % (name, tag))
    cmd = [args.autobatch, "sample", os.path.join(STAN_DIR, name + ".ab"),
           "--data", os.path.join(STAN_DIR, data_name + ".json"), "--chains", str(chains),
           "--warmup", str(warmup), "--samples", str(samples), "--seed", str(args.seed),
           "--threads", str(args.threads if chains == 4 else args.big_threads), "-q",
           "--output", outdir + "/"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"chains": chains, "warmup": warmup, "samples": samples,
                "error": "did not finish within %d s (timeout)" % args.timeout}
    wall = time.perf_counter() - t0
    res = {"chains": chains, "warmup": warmup, "samples": samples, "wall_s": wall,
           "threads": args.threads if chains == 4 else args.big_threads}
    if p.returncode != 0:
        res["error"] = (p.stderr or p.stdout)[-2000:]
        return res
    lf = np.load(os.path.join(outdir, "n_leapfrog__.npy"))
    div = np.load(os.path.join(outdir, "divergent__.npy"))
    res["leapfrogs_sample"] = int(lf.sum())
    res["divergent"] = int(div.sum())
    m = re.search(r"divergent transitions: \d+ \(and (\d+) during warm-up\)", p.stdout)
    if m:
        res["divergent_warmup"] = int(m.group(1))
    paths = [os.path.join(outdir, par + ".npy") for par in pars]
    rows = summary_rows(args.autobatch, paths)
    res["min_ess_bulk"] = min_ess(rows, pars)
    res["min_ess_bulk_per_s"] = res["min_ess_bulk"] / wall
    res["wall_s_per_chain"] = wall / chains
    res["means"] = {r["name"]: r["mean"] for r in rows}
    res["mcse"] = {r["name"]: r["mcse"] for r in rows}
    res["_lf"] = lf
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build", "autobatch"))
    ap.add_argument("--models", default=",".join(m[0] for m in MODELS))
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--big-chains", default="256,4096")
    ap.add_argument("--big-threads", type=int, default=1)
    ap.add_argument("--big-warmup", type=int, default=1000, help="warm-up for 4096 chains")
    ap.add_argument("--big-samples", type=int, default=1000, help="draws for 4096 chains")
    ap.add_argument("--timeout", type=int, default=300, help="cap on each autobatch run (s)")
    ap.add_argument("--no-rstan", action="store_true", help="autobatch only")
    ap.add_argument("--no-rate", action="store_true",
                    help="no second 4-chain run for autobatch's sampling-phase leapfrog rate")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    use_rstan = not args.no_rstan
    if use_rstan and shutil.which("Rscript") is None:
        print("stan_compare: Rscript not found; skipped (apt-get install r-cran-rstan)")
        return 0
    if use_rstan and subprocess.run(["Rscript", "-e", "library(rstan)"],
                                    capture_output=True).returncode != 0:
        print("stan_compare: R has no rstan; skipped (apt-get install r-cran-rstan)")
        return 0
    if not os.path.exists(args.autobatch):
        print("stan_compare: no autobatch binary at %s (--autobatch)" % args.autobatch)
        return 2

    wanted = args.models.split(",")
    out = {"nproc": os.cpu_count(), "loadavg_start": os.getloadavg(),
           "autobatch": args.autobatch, "models": {}}
    with tempfile.TemporaryDirectory(prefix="stan_compare_") as tmp:
        for name, data_name, pars in MODELS:
            if name not in wanted:
                continue
            print("stan_compare: %s" % name, file=sys.stderr, flush=True)
            r = {"parameters": pars}
            if use_rstan:
                r["rstan"] = run_rstan(name, data_name, pars, tmp, args)
            a4 = run_autobatch(name, data_name, pars, 4, args.warmup, args.samples, tmp, args, "4")
            a4b = {} if args.no_rate else run_autobatch(name, data_name, pars, 4, args.warmup,
                                                        2 * args.samples, tmp, args, "4x2")
            lf4 = a4.pop("_lf", None)
            lf4b = a4b.pop("_lf", None)
            if lf4 is not None and lf4b is not None:
                same = bool(np.array_equal(lf4, lf4b[:, :args.samples]))
                extra_lf = int(lf4b[:, args.samples:].sum())
                extra_s = a4b["wall_s"] - a4["wall_s"]
                a4["leapfrogs_per_s_sampling"] = extra_lf / extra_s if extra_s > 0 else None
                a4["sampling_rate_from"] = {"second_run_wall_s": a4b["wall_s"],
                                            "extra_leapfrogs": extra_lf,
                                            "first_draws_identical": same}
            r["autobatch_4"] = a4
            big = []
            for c in [int(x) for x in args.big_chains.split(",") if x]:
                if big and "error" in big[-1]:
                    big.append({"chains": c, "error": "not run: %d chains did not finish"
                                % big[-1]["chains"]})
                    continue
                w, s = (args.warmup, args.samples) if c < 4096 else (args.big_warmup,
                                                                      args.big_samples)
                b = run_autobatch(name, data_name, pars, c, w, s, tmp, args, str(c))
                b.pop("_lf", None)
                b.pop("means", None)
                b.pop("mcse", None)
                if "wall_s_per_chain" in b and "wall_s_per_chain" in a4:
                    # per-chain cost relative to 4 chains, scaled to the same number of iterations
                    iters = (w + s) / (args.warmup + args.samples)
                    b["per_chain_cost_vs_4"] = b["wall_s_per_chain"] / iters / a4["wall_s_per_chain"]
                big.append(b)
            r["autobatch_big"] = big
            if use_rstan and "wall_s" in r["rstan"] and "wall_s" in a4:
                r["wall_ratio_autobatch_over_rstan"] = a4["wall_s"] / r["rstan"]["wall_s"]
            out["models"][name] = r
            print(json.dumps({name: r}), file=sys.stderr, flush=True)
    out["loadavg_end"] = os.getloadavg()
    text = json.dumps(out, indent=1)
    print(text)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
