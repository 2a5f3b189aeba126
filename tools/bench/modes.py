#!/usr/bin/env python3
"""The default mode against the others on every program of programs/.

Each program runs on the inputs tests/differential/gen_inputs.py makes for it
(--batch threads, --seed) in four modes: the default, `--vm stackless`,
`--jit off` and `--schedule min-pc`, on one OS thread, `--reps` times with the
modes interleaved (so that they share the host's load). The time is the
whole process's wall time, what a user waits for (parsing, compiling and the
JIT's work included), best of the reps. The JSON printed gives each
program's times, its fastest mode and the default's time over the fastest
(issue target: at most 1.1), and lists the programs above 1.1.

  tools/bench/modes.py --autobatch build-bench/autobatch [--batch 10000] [--reps 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steps import ROOT, entry_of, make_inputs, programs  # noqa: E402

MODES = {"default": [], "stackless": ["--vm", "stackless"], "jit_off": ["--jit", "off"],
         "min_pc": ["--schedule", "min-pc"]}


def seconds(autobatch, prog, inputs, flags, out):
    cmd = [autobatch, "run", prog, "--inputs", inputs, "--threads", "1", "-q", "--no-warnings",
           "--output", out] + flags
    entry = entry_of(prog)
    if entry:
        cmd += ["--entry", entry]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("modes.py: %s failed:\n%s" % (" ".join(cmd), r.stderr))
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build-bench", "autobatch"))
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated program names")
    a = ap.parse_args()
    progs = programs()
    if a.only:
        progs = [p for p in progs if p in a.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in progs:
            inputs = os.path.join(tmp, p + ".json")
            make_inputs(p, a.batch, a.seed, inputs)
            prog = os.path.join(ROOT, "programs", p + ".ab")
            best = {m: float("inf") for m in MODES}
            outs = {}
            for _ in range(a.reps):
                for m, flags in MODES.items():
                    out = os.path.join(tmp, "%s.%s.json" % (p, m))
                    best[m] = min(best[m], seconds(a.autobatch, prog, inputs, flags, out))
                    with open(out) as f:
                        outs[m] = json.load(f)["outputs"]
            fastest = min(best, key=best.get)
            ratio = best["default"] / best[fastest]
            rows.append({"program": p, "seconds": {m: round(t, 4) for m, t in best.items()},
                         "fastest": fastest, "default_over_fastest": round(ratio, 3),
                         "outputs_agree": all(o == outs["default"] for o in outs.values())})
            print("%-18s %s  default/fastest %.2f" %
                  (p, " ".join("%s %.3f" % (m, t) for m, t in best.items()), ratio),
                  file=sys.stderr)
    above = [r["program"] for r in rows if r["default_over_fastest"] > 1.1]
    print(json.dumps({"batch": a.batch, "seed": a.seed, "reps": a.reps, "rows": rows,
                      "above_1_1": above}, indent=1))


if __name__ == "__main__":
    main()
