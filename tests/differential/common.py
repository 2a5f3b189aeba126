"""Shared by check_programs.py and random_programs.py: running autobatch in the nine
configurations and comparing what they print.

The configurations of one program P with entry E on one inputs file:

    reference        autobatch run P --entry E --vm reference      (the definition)
    stack            autobatch run P --entry E --vm stack
    stackless        autobatch run P --entry E --vm stackless
    lowered/reference  autobatch lower P --entry E > L.ab; autobatch run L.ab --vm reference
    lowered/stack      autobatch run L.ab --vm stack

plus the stack VM's other execution modes (the default is the JIT on and the
persistent schedule):

    stack+jit-off    autobatch run P --entry E --vm stack --jit off
    stack+min-pc     autobatch run P --entry E --vm stack --schedule min-pc
    stack+jit-off+min-pc  both

Every run gets `--batch B` as well (it must agree with batched inputs and gives the
batch when every input is shared). Outputs are compared as parsed JSON against the
reference: integers and booleans exactly, floats exactly (bit for bit, -0.0 != 0.0;
any NaN prints as "NaN") unless a relative tolerance is given.
"""

import concurrent.futures
import json
import math
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# "stack" is the default, tiered: a small run may end before its code is ready and so run
# interpreted throughout; "stack+jit-wait" compiles first, so that the compiled code runs
# from the first step whatever the batch.
CONFIGS = ["reference", "stack", "stackless", "lowered/reference", "lowered/stack",
           "stack+jit-off", "stack+min-pc", "stack+jit-off+min-pc", "stack+jit-wait"]

# The flags of a configuration's `+mode` suffixes.
MODE_FLAGS = {"jit-off": ["--jit", "off"], "min-pc": ["--schedule", "min-pc"],
              "jit-wait": ["--jit", "wait"], "threads-2": ["--threads", "2"],
              "threads-3": ["--threads", "3"], "threads-7": ["--threads", "7"],
              "lanes-5": ["--lanes", "5"]}


def split_config(config):
    """'stack+jit-off' -> ('stack', ['--jit', 'off'])."""
    parts = config.split("+")
    flags = []
    for m in parts[1:]:
        flags += MODE_FLAGS[m]
    return parts[0], flags

# What the tool prints on stderr while a VM is not built yet and it falls back.
FALLBACK_NOTE = "not built yet"


def find_autobatch(arg=None):
    ab = arg or os.environ.get("AUTOBATCH") or os.path.join(ROOT, "build", "autobatch")
    ab = os.path.abspath(ab)
    if not (os.path.isfile(ab) and os.access(ab, os.X_OK)):
        sys.exit("error: no autobatch binary at %s (build it, or set AUTOBATCH)" % ab)
    return ab


def default_jobs():
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:
        return max(1, min(4, os.cpu_count() or 1))


class Proc:
    def __init__(self, cmd, rc, out, err):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err


def run(cmd, timeout, stdout_path=None):
    """Run a command; a timeout is rc 124 with a message on err."""
    try:
        if stdout_path is not None:
            with open(stdout_path, "w") as f:
                p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, timeout=timeout,
                                   universal_newlines=True)
            return Proc(cmd, p.returncode, "", p.stderr)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           universal_newlines=True)
        return Proc(cmd, p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired:
        return Proc(cmd, 124, "", "timed out after %ss" % timeout)


def shell(cmd, stdout_path=None):
    s = " ".join(shlex.quote(c) for c in cmd)
    return s + (" > " + shlex.quote(stdout_path) if stdout_path else "")


def run_cmd(ab, config, prog, lowered, entry, inputs, batch, extra=()):
    """The command line of one configuration (lowered programs take no --entry)."""
    config, flags = split_config(config)
    extra = flags + list(extra)
    if config.startswith("lowered/"):
        return [ab, "run", lowered, "--vm", config.split("/")[1], "--batch", str(batch),
                "--inputs", inputs] + list(extra)
    cmd = [ab, "run", prog, "--vm", config, "--batch", str(batch), "--inputs", inputs]
    if entry:
        cmd += ["--entry", entry]
    return cmd + list(extra)


def lower_cmd(ab, prog, entry):
    cmd = [ab, "lower", prog]
    if entry:
        cmd += ["--entry", entry]
    return cmd


def reproduce(ab, config, prog, lowered, entry, inputs, batch):
    """Shell text that reproduces one configuration's run."""
    lines = []
    if config.startswith("lowered/"):
        lines.append(shell(lower_cmd(ab, prog, entry), lowered))
    lines.append(shell(run_cmd(ab, config, prog, lowered, entry, inputs, batch)))
    return " && ".join(lines)


# ---------------------------------------------------------------------------
# Comparison of outputs.

def parse_outputs(text):
    v = json.loads(text)
    if not isinstance(v, dict) or "outputs" not in v:
        raise ValueError("no \"outputs\" in %r" % text[:200])
    return v["outputs"]


def _float_of(v):
    """A JSON float (or the strings for non-finite floats) as a Python float, else None."""
    if isinstance(v, float):
        return v
    if v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf").replace("NaN", "nan"))
    return None


def _same_float(a, b, rel_tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return math.copysign(1.0, a) == math.copysign(1.0, b) or rel_tol > 0
    if rel_tol > 0 and math.isfinite(a) and math.isfinite(b):
        return abs(a - b) <= rel_tol * max(abs(a), abs(b))
    return False


def first_difference(ref, got, rel_tol=0.0, path="outputs"):
    """None if equal, else a description of the first difference."""
    if isinstance(ref, list) or isinstance(got, list):
        if not (isinstance(ref, list) and isinstance(got, list)):
            return "%s: %s != %s" % (path, short(ref), short(got))
        if len(ref) != len(got):
            return "%s: length %d != %d" % (path, len(ref), len(got))
        for i, (a, b) in enumerate(zip(ref, got)):
            d = first_difference(a, b, rel_tol, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    fa, fb = _float_of(ref), _float_of(got)
    if fa is not None or fb is not None:
        if fa is None or fb is None or not _same_float(fa, fb, rel_tol):
            return "%s: %s != %s" % (path, short(ref), short(got))
        return None
    # bool is a subclass of int in Python: compare types too.
    if type(ref) is not type(got) or ref != got:
        return "%s: %s != %s" % (path, short(ref), short(got))
    return None


def short(v):
    s = json.dumps(v)
    return s if len(s) <= 80 else s[:77] + "..."


def compare_procs(ref, got, rel_tol=0.0):
    """None if `got` printed the same outputs as the reference run `ref`, else why not."""
    if ref.rc != 0:
        return "the reference run failed (exit %d): %s" % (ref.rc, first_line(ref.err))
    if got.rc != 0:
        return "exit %d: %s" % (got.rc, first_line(got.err))
    try:
        a = parse_outputs(ref.out)
    except ValueError as e:
        return "the reference printed unreadable outputs: %s" % e
    try:
        b = parse_outputs(got.out)
    except ValueError as e:
        return "unreadable outputs: %s" % e
    return first_difference(a, b, rel_tol)


def first_line(err):
    lines = [l for l in err.splitlines() if l.strip() and FALLBACK_NOTE not in l]
    return lines[0] if lines else "(no message)"


def pool(jobs):
    return concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
