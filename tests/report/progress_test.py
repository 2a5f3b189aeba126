#!/usr/bin/env python3
"""A long run with stderr on a terminal shows a progress line, and Ctrl-C
(SIGINT) ends it within a second with exit 130, a message saying how far it
got, and neither the output file nor the trace left behind. With stderr not a
terminal, or with --quiet, there is no progress line. `autobatch sample` on a
terminal shows its chains' phase, iterations per second and the time left
instead of the VM's steps, and none with --quiet.

usage: progress_test.py AUTOBATCH SOURCE_DIR WORK_DIR"""
import os
import pty
import select
import signal
import subprocess
import sys
import time

autobatch, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
spin = os.path.join(source, "programs", "spin.ab")
out = os.path.join(work, "out.json")
trace = os.path.join(work, "spin.trace")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def start(extra, tty=True):
    for f in (out, trace):
        if os.path.exists(f):
            os.remove(f)
    args = [autobatch, "run", spin, "--inputs", '{"n": [1000000000000000, 5, 7]}',
            "--output", out] + extra
    if not tty:
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), None
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    return p, master


def read_for(master, seconds, until=None):
    """What the terminal shows within `seconds`; with `until`, stops as soon as
    until(text) holds (a busy machine may take longer to show the first line)."""
    data = b""
    end = time.time() + seconds
    while time.time() < end:
        if until and until(data.decode(errors="replace")):
            break
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def interrupt(p):
    """Ctrl-C to p; its exit status, or None if it did not exit within 10 s (then killed)."""
    p.send_signal(signal.SIGINT)
    try:
        return p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        return None


# On a terminal: progress, then Ctrl-C.
for extra in ([], ["--trace", trace, "--trace-format", "compact"]):
    p, master = start(extra)
    seen = read_for(master, 60, lambda t: "steps/s" in t and "threads finished" in t)
    check("steps/s" in seen and "threads finished" in seen, f"{extra}: no progress line in {seen!r}")
    t0 = time.time()
    rc = interrupt(p)
    elapsed = time.time() - t0
    rest = read_for(master, 0.5)
    os.close(master)
    check(rc == 130, f"{extra}: exit {rc} after Ctrl-C (want 130)")
    check(elapsed < 1.0, f"{extra}: took {elapsed:.2f} s to stop")
    check("interrupted after" in rest and "threads finished" in rest,
          f"{extra}: no 'interrupted after ...' message in {rest!r}")
    check(not os.path.exists(out), f"{extra}: an output file was left")
    check(not os.path.exists(trace), f"{extra}: a trace file was left")

# --quiet on a terminal, and stderr not a terminal: no progress line.
p, master = start(["--quiet"])
seen = read_for(master, 2.0)
p.send_signal(signal.SIGINT)
p.wait(timeout=10)
read_for(master, 0.3)
os.close(master)
check("steps/s" not in seen, f"--quiet: a progress line {seen!r}")
p, _ = start([], tty=False)
time.sleep(2.0)
p.send_signal(signal.SIGINT)
_, err = p.communicate(timeout=10)
err = err.decode(errors="replace")
check("steps/s" not in err, f"not a terminal: a progress line {err!r}")
check(p.returncode == 130 and "interrupted after" in err, f"not a terminal: exit {p.returncode} {err!r}")

# sample: its own line on a terminal (warm-up first), none with --quiet.
models = os.path.join(source, "programs", "models")


def start_sample(extra):
    args = [autobatch, "sample", os.path.join(models, "logistic.ab"), "--data",
            os.path.join(models, "logistic.data.json"), "--chains", "4", "--warmup", "1000000",
            "--samples", "10", "--seed", "1", "--output", os.path.join(work, "draws.json")] + extra
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    return p, master


def sample_line(t):
    return "warm-up " in t and "/1000000" in t and " it/s, ~" in t and " left" in t


for extra in ([], ["-q"]):
    p, master = start_sample(extra)
    seen = read_for(master, 4.0) if extra else read_for(master, 60, sample_line)
    rc = interrupt(p)
    read_for(master, 0.3)
    os.close(master)
    check(rc == 130, f"sample {extra}: exit {rc} after Ctrl-C (want 130)")
    check("steps/s" not in seen, f"sample {extra}: the run's line {seen!r}")
    if extra:
        check("it/s" not in seen, f"sample -q: a progress line {seen!r}")
    else:
        check(sample_line(seen), f"sample: no progress line in {seen!r}")

if failures:
    print(len(failures), "failure(s)")
    sys.exit(1)
print("ok")
