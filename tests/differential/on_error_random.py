#!/usr/bin/env python3
"""--on-error record on random programs whose divisions may divide by zero.

    on_error_random.py [--seed S] [--count N] [--unsafe P] [--autobatch BIN]

The programs of random_programs.py, except that each division is, with
probability P (default 0.8), left unguarded (`div(x, y)` with y often 0), so
some threads fail at different depths and iterations. Each program runs on one
random batch in [2, 120] under --on-error record: the reference, then the stack
VM (JIT off, min-pc, --lanes 7, --threads 3), the stackless VM (and --lanes 5),
and the lowered program under the stack VM (and --lanes 3 --jit off) and the
lowered reference. Every run must give the reference's exit status, outputs and
failed threads with the same messages (positions and block names aside: the
lowered file and the compiled blocks name them differently). Not in CTest (a
few minutes); prints `N programs (M with failing threads), R runs, F bad`,
exit 1 if F > 0. Ad hoc: run it after changing error handling in a VM.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import random_programs as rp  # noqa: E402


def patch(probability):
    gen = [c for c in vars(rp).values() if isinstance(c, type) and hasattr(c, "safe_division")][0]
    safe = gen.safe_division

    def maybe_unsafe(self):
        if self.rng.random() >= probability:
            return safe(self)
        t = self.int_dtype()
        op = self.rng.choice(["div", "mod"])
        y = self.zeroish(t)
        x = self.operand(t, 0.15)
        d = self.dest(t)
        self.emit("%s = %s(%s, %s)" % (d, op, x, y))
        self.define(d, t)

    gen.safe_division = maybe_unsafe


def normalized(stdout):
    j = json.loads(stdout)
    errors = [(e["thread"], re.sub(r"^[^:]*:\d+:\d+: ", "", e["message"]).split(" (function")[0])
              for e in j.get("errors", [])]
    return j["outputs"], errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--unsafe", type=float, default=0.8)
    ap.add_argument("--autobatch")
    a = ap.parse_args()
    ab = common.find_autobatch(a.autobatch)
    patch(a.unsafe)
    work = tempfile.mkdtemp(prefix="autobatch-on-error-")
    bad = runs = with_failures = 0
    for k in range(a.count):
        text, sig, _ = rp.make_program(a.seed, k)
        rng = random.Random(k)
        d = os.path.join(work, "p%d" % k)
        os.makedirs(d)
        prog, low, inp = (os.path.join(d, n) for n in ("prog.ab", "low.ab", "in.json"))
        with open(prog, "w") as f:
            f.write(text)
        b = rng.randint(2, 120)
        with open(inp, "w") as f:
            json.dump(rp.make_inputs(rng, sig, b), f)
        lowered = subprocess.run([ab, "lower", prog, "--entry", "main"], capture_output=True, text=True)
        with open(low, "w") as f:
            f.write(lowered.stdout)
        tail = ["--inputs", inp, "--batch", str(b), "--on-error", "record"]
        src = [prog, "--entry", "main", "--vm"]
        ref = subprocess.run([ab, "run"] + src + ["reference"] + tail, capture_output=True, text=True)
        if ref.returncode not in (0, 1) or not ref.stdout:
            print("program %d: the reference failed (exit %d): %s" % (k, ref.returncode, ref.stderr[:200]))
            bad += 1
            continue
        want = normalized(ref.stdout)
        with_failures += bool(want[1])
        configs = [src + ["stack"], src + ["stack", "--jit", "off"], src + ["stack", "--jit", "wait"],
                   src + ["stack", "--schedule", "min-pc"],
                   src + ["stack", "--lanes", "7"], src + ["stack", "--threads", "3"], src + ["stackless"],
                   src + ["stackless", "--lanes", "5"], [low, "--vm", "stack"], [low, "--vm", "reference"],
                   [low, "--vm", "stack", "--lanes", "3", "--jit", "off"]]
        for c in configs:
            runs += 1
            got = subprocess.run([ab, "run"] + c + tail, capture_output=True, text=True)
            if got.returncode == ref.returncode and got.stdout and normalized(got.stdout) == want:
                continue
            bad += 1
            print("program %d %s: differs from the reference (exit %d vs %d); in %s"
                  % (k, " ".join(c[1:]), got.returncode, ref.returncode, d))
    print("%d programs (%d with failing threads), %d runs, %d bad" % (a.count, with_failures, runs, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
