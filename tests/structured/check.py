#!/usr/bin/env python3
"""Structured-form programs against their plain-Python twins (docs/language.md, "The structured form").

For every NAME.ab here with a NAME.py beside it: NAME.py defines main() and
INPUTS (one list per parameter, the batch first). The expected outputs are
main() applied to each thread's inputs in Python; autobatch must print them
under --vm stack, stackless and reference, after `lower` (the lowered program
run again), the block form `lower --print-after blocks` shows, and for the program `fmt` printed (which must also be idempotent
and keep every comment). Prints one line per failure, then `N passed, M failed`.

usage: check.py AUTOBATCH
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": exit %d\n%s" % (p.returncode, p.stderr))
    return p.stdout


def same(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def main():
    exe = sys.argv[1]
    passed = failed = 0
    for name in sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".ab")):
        prog = os.path.join(HERE, name + ".ab")
        twin = {}
        with open(os.path.join(HERE, name + ".py")) as f:
            exec(f.read(), twin)
        inputs = twin["INPUTS"]
        batch = len(next(iter(inputs.values())))
        rows = [twin["main"](*[inputs[k][t] for k in inputs]) for t in range(batch)]
        if not isinstance(rows[0], tuple):
            rows = [(r,) for r in rows]
        expected = [[row[i] for row in rows] for i in range(len(rows[0]))]
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "in.json")
            with open(data, "w") as f:
                json.dump(inputs, f)
            lowered = os.path.join(tmp, "lowered.ab")
            formatted = os.path.join(tmp, "fmt.ab")
            cases = {}
            try:
                for vm in ("stack", "stackless", "reference"):
                    cases["--vm " + vm] = ["run", prog, "--inputs", data, "--vm", vm]
                with open(lowered, "w") as f:
                    f.write(run([exe, "lower", prog, "--entry", "main", "--inputs", data]))
                cases["lower, then run"] = ["run", lowered, "--inputs", data]
                front = os.path.join(tmp, "blocks.ab")
                with open(front, "w") as f:
                    f.write(run([exe, "lower", prog, "--entry", "main", "--print-after", "blocks"]))
                cases["--print-after blocks, then run"] = ["run", front, "--inputs", data]
                text = run([exe, "fmt", prog])
                with open(formatted, "w") as f:
                    f.write(text)
                if run([exe, "fmt", formatted]) != text:
                    raise RuntimeError("fmt is not idempotent on " + prog)
                src = open(prog).read()
                for line in src.splitlines():
                    if "#" in line and line[line.index("#"):].rstrip() not in text:
                        raise RuntimeError("fmt lost the comment " + line[line.index("#"):])
                cases["fmt, then run"] = ["run", formatted, "--inputs", data]
                for what, cmd in cases.items():
                    if cmd[0] == "run" and cmd[1] != lowered:
                        cmd = cmd + ["--entry", "main"]
                    got = json.loads(run([exe] + cmd))["outputs"]
                    if same(got, expected):
                        passed += 1
                    else:
                        failed += 1
                        print("FAIL %s (%s): got %s, Python gives %s" % (name, what, got, expected))
            except RuntimeError as e:
                failed += 1
                print("FAIL %s: %s" % (name, e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
