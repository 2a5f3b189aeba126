#!/usr/bin/env python3
"""Steps of the stack VM against the stackless VM on every program of programs/.

Each program runs once per VM on the inputs tests/differential/gen_inputs.py
makes for it (--batch threads, --seed), with --stats on one OS thread; the
JSON printed gives each program's steps under the stack VM (the default, and
with any extra flags given after --), the stackless VM's, and their ratio.
Step counts do not depend on timing, so one run each is enough.

  tools/bench/steps.py --autobatch build-bench/autobatch [--batch 1000] [-- --jit off]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def entry_of(path):
    with open(path) as f:
        for line in f:
            if line.startswith("# entry:"):
                return line.split(":", 1)[1].strip()
    return None


def programs():
    """The names of programs/*.ab, sorted."""
    return sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "programs")) if f.endswith(".ab"))


def make_inputs(program, batch, seed, path):
    """gen_inputs.py's inputs for `program` (a name in programs/) into `path`."""
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "differential", "gen_inputs.py"),
                    program, "--batch", str(batch), "--seed", str(seed), "--output", path],
                   check=True, capture_output=True)


def steps(autobatch, prog, inputs, flags):
    cmd = [autobatch, "run", prog, "--inputs", inputs, "--stats", "--threads", "1", "-q",
           "--no-warnings"] + flags
    entry = entry_of(prog)
    if entry:
        cmd += ["--entry", entry]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("steps.py: %s failed:\n%s" % (" ".join(cmd), out.stderr))
    return json.loads(out.stdout)["stats"]["steps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--autobatch", default=os.path.join(ROOT, "build-bench", "autobatch"))
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("flags", nargs="*", help="extra flags for the stack VM's runs (after --)")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in programs():
            inputs = os.path.join(tmp, p + ".json")
            make_inputs(p, a.batch, a.seed, inputs)
            prog = os.path.join(ROOT, "programs", p + ".ab")
            stack = steps(a.autobatch, prog, inputs, a.flags)
            stackless = steps(a.autobatch, prog, inputs, ["--vm", "stackless"])
            rows.append({"program": p, "stack": stack, "stackless": stackless,
                         "ratio": round(stack / stackless, 3) if stackless else None})
    above = [r["program"] for r in rows if r["ratio"] is not None and r["ratio"] > 1.0]
    print(json.dumps({"batch": a.batch, "seed": a.seed, "stack_flags": a.flags, "rows": rows,
                      "above_stackless": above}, indent=1))


if __name__ == "__main__":
    main()
