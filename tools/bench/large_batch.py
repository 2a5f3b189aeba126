#!/usr/bin/python3
"""Fixed costs of a large batch: autobatch against NumPy's np.load + np.save.

Makes n.npy, 16 M ones (int64), in a temporary directory, and times

    autobatch run programs/collatz.ab --inputs n=n.npy --output out/ -v

(collatz of 1 takes no step, so the run is all fixed cost: reading the .npy,
starting the lanes, gathering and writing the output) under the default VM,
--vm stackless and --jit off, each with the default --threads and with
--threads 1; against NumPy loading and saving the same arrays (np.load of
n.npy, np.save of that array), both in a process of its own
(`python3 -c "import numpy; np.load; np.save"`, its interpreter start and
`import numpy` included) and in this process (np.load + np.save alone).
Every repetition runs every configuration and the baselines one after the
other, so that they share the machine's load; medians over the repetitions.
Each autobatch output is checked (all zeros, int64) once per configuration.

Prints JSON on stdout (the conventions of tools/bench/run: seconds, medians,
spreads = (max - min) / median) and a table on stderr. For each
configuration: wall and CPU (user + sys, of the process and its threads)
seconds, the phases `-v` reports (inputs, compile, run, merge, outputs), and
ratios to NumPy:
  ratio_process     autobatch's process wall / NumPy's process wall
  ratio_in_process  autobatch's fixed cost (inputs + run + merge + outputs,
                    the phases -v reports: no process start, no parsing) /
                    np.load + np.save in this process
  cpu_ratio_process autobatch's process CPU / NumPy's process CPU

Usage: /usr/bin/python3 tools/bench/large_batch.py [--autobatch build/autobatch]...
           [--batch 16777216] [--reps 5] [--dir DIR] [--only default,stackless_t1,...]
  --autobatch  the binary; given several times (e.g. a build before a change and
               one after), each configuration runs under each, interleaved, and
               rows are named BINARY:CONFIG (BINARY: the path's parent directories
               that tell them apart)
  --dir        where the temporary directory goes (default: the system's, $TMPDIR);
               it and every file in it are deleted at the end.
Needs NumPy (Debian's /usr/bin/python3 has it).
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# name -> extra autobatch flags
CONFIGS = [
    ("default", []),
    ("default_t1", ["--threads", "1"]),
    ("stackless", ["--vm", "stackless"]),
    ("stackless_t1", ["--vm", "stackless", "--threads", "1"]),
    ("jit_off", ["--jit", "off"]),
    ("jit_off_t1", ["--jit", "off", "--threads", "1"]),
]
PHASES = ["inputs", "compile", "run", "merge", "outputs"]
PHASE_RE = re.compile(r"phase (\w+): ([0-9.]+) ms")

NUMPY_CHILD = """
import sys, time
import numpy as np
t0 = time.perf_counter()
a = np.load(sys.argv[1])
t1 = time.perf_counter()
np.save(sys.argv[2], a)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def run_timed(cmd):
    """Runs cmd; returns (wall s, exit status, stdout, stderr). Its CPU time is the
    change of RUSAGE_CHILDREN around the call."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    return wall, p.returncode, out.decode(), err.decode()


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def summary(samples):
    med = statistics.median(samples)
    return {
        "median": med,
        "min": min(samples),
        "max": max(samples),
        "spread": (max(samples) - min(samples)) / med if med else 0.0,
        "samples": samples,
    }


def binary_labels(binaries):
    """A short name for each binary: the fewest trailing directories of its
    path (above the file itself) that tell them apart."""
    parts = [os.path.abspath(b).split(os.sep)[:-1] for b in binaries]
    for k in range(1, max(len(p) for p in parts) + 1):
        names = [os.sep.join(p[-k:]) for p in parts]
        if len(set(names)) == len(names):
            return dict(zip(binaries, names))
    return {b: b for b in binaries}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autobatch", action="append")
    ap.add_argument("--batch", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    binaries = args.autobatch or [os.path.join(ROOT, "build", "autobatch")]
    only = [o for o in args.only.split(",") if o]
    for o in only:
        if o not in dict(CONFIGS):
            sys.exit("large_batch.py: no configuration named %s (%s)" %
                     (o, ", ".join(n for n, _ in CONFIGS)))
    # (row name, binary, flags); with several binaries the name says which.
    labels = binary_labels(binaries)
    configs = [((labels[b] + ":" if len(binaries) > 1 else "") + n, b, f)
               for n, f in CONFIGS if not only or n in only for b in binaries]
    program = os.path.join(ROOT, "programs", "collatz.ab")

    work = tempfile.mkdtemp(prefix="autobatch-large-", dir=args.dir)
    try:
        n_path = os.path.join(work, "n.npy")
        np.save(n_path, np.ones(args.batch, dtype=np.int64))
        load_start = os.getloadavg()
        ab = {n: {"wall": [], "cpu": [], "phases": {p: [] for p in PHASES}} for n, _, _ in configs}
        checked = set()
        np_proc = {"wall": [], "cpu": [], "load": [], "save": []}
        np_import = {"wall": [], "cpu": []}
        np_in = {"wall": [], "cpu": [], "load": [], "save": []}
        for rep in range(args.reps):
            for name, binary, flags in configs:
                out_dir = os.path.join(work, "out")
                shutil.rmtree(out_dir, ignore_errors=True)
                cmd = [binary, "run", program, "--inputs", "n=" + n_path, "--output",
                       out_dir + "/", "-v", "-q"] + flags
                c0 = children_cpu()
                wall, rc, _, err = run_timed(cmd)
                cpu = children_cpu() - c0
                if rc != 0:
                    sys.exit("large_batch.py: %s failed (%d):\n%s" % (" ".join(cmd), rc, err))
                ab[name]["wall"].append(wall)
                ab[name]["cpu"].append(cpu)
                seen = {m.group(1): float(m.group(2)) / 1e3 for m in PHASE_RE.finditer(err)}
                for p in PHASES:
                    ab[name]["phases"][p].append(seen.get(p, 0.0))
                if name not in checked:
                    got = np.load(os.path.join(out_dir, "steps.npy"))
                    if got.dtype != np.int64 or got.shape != (args.batch,) or got.any():
                        sys.exit("large_batch.py: %s: wrong output" % name)
                    checked.add(name)
                shutil.rmtree(out_dir, ignore_errors=True)
            # NumPy in a process of its own, and its interpreter + import alone.
            np_out = os.path.join(work, "np_out.npy")
            c0 = children_cpu()
            wall, rc, out, err = run_timed([sys.executable, "-c", NUMPY_CHILD, n_path, np_out])
            cpu = children_cpu() - c0
            if rc != 0:
                sys.exit("large_batch.py: the NumPy process failed:\n" + err)
            load_s, save_s = (float(x) for x in out.split())
            np_proc["wall"].append(wall)
            np_proc["cpu"].append(cpu)
            np_proc["load"].append(load_s)
            np_proc["save"].append(save_s)
            os.unlink(np_out)
            c0 = children_cpu()
            wall, _, _, _ = run_timed([sys.executable, "-c", "import numpy"])
            np_import["wall"].append(wall)
            np_import["cpu"].append(children_cpu() - c0)
            # NumPy in this process: np.load + np.save alone.
            c0, t0 = self_cpu(), time.perf_counter()
            a = np.load(n_path)
            t1 = time.perf_counter()
            np.save(np_out, a)
            t2 = time.perf_counter()
            np_in["cpu"].append(self_cpu() - c0)
            np_in["wall"].append(t2 - t0)
            np_in["load"].append(t1 - t0)
            np_in["save"].append(t2 - t1)
            del a
            os.unlink(np_out)
        load_end = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    np_proc_wall = statistics.median(np_proc["wall"])
    np_proc_cpu = statistics.median(np_proc["cpu"])
    np_in_wall = statistics.median(np_in["wall"])
    rows = []
    for name, binary, flags in configs:
        r = ab[name]
        phases = {p: summary(r["phases"][p]) for p in PHASES}
        fixed = [sum(r["phases"][p][k] for p in ("inputs", "run", "merge", "outputs"))
                 for k in range(args.reps)]
        wall = summary(r["wall"])
        cpu = summary(r["cpu"])
        fixed_s = summary(fixed)
        rows.append({
            "name": name,
            "binary": binary,
            "flags": flags,
            "wall_s": wall,
            "cpu_s": cpu,
            "phases_s": phases,
            "fixed_s": fixed_s,
            "ratio_process": wall["median"] / np_proc_wall,
            "ratio_in_process": fixed_s["median"] / np_in_wall,
            "cpu_ratio_process": cpu["median"] / np_proc_cpu,
        })
    result = {
        "batch": args.batch,
        "program": "programs/collatz.ab (every input 1: no steps)",
        "reps": args.reps,
        "timing": "medians over reps (min, max, spread = (max - min) / median also given); "
                  "cpu = user + sys",
        "hardware_threads": os.cpu_count(),
        "load_average_start": list(load_start),
        "load_average_end": list(load_end),
        "numpy_version": np.__version__,
        "numpy_process": {k: summary(v) for k, v in np_proc.items()},
        "python_import_numpy": {k: summary(v) for k, v in np_import.items()},
        "numpy_in_process": {k: summary(v) for k, v in np_in.items()},
        "rows": rows,
    }
    print(json.dumps(result, indent=2))

    def ms(x):
        return "%7.0f" % (x * 1e3)
    e = sys.stderr
    print("batch %d, %d reps, medians in ms; load average %.1f -> %.1f on %d hardware threads"
          % (args.batch, args.reps, load_start[0], load_end[0], os.cpu_count()), file=e)
    print("NumPy, own process: wall %s cpu %s (np.load %s, np.save %s; python + import numpy "
          "%s)" % (ms(np_proc_wall), ms(np_proc_cpu),
                   ms(statistics.median(np_proc["load"])), ms(statistics.median(np_proc["save"])),
                   ms(statistics.median(np_import["wall"]))), file=e)
    print("NumPy, in process: np.load + np.save %s (load %s, save %s), cpu %s"
          % (ms(np_in_wall), ms(statistics.median(np_in["load"])),
             ms(statistics.median(np_in["save"])), ms(statistics.median(np_in["cpu"]))), file=e)
    width = max(13, max(len(r["name"]) for r in rows))
    head = "%-*s %7s %7s %7s %7s %7s %7s %7s %7s %9s %9s %9s" % (
        width, "config", "wall", "cpu", "inputs", "compile", "run", "merge", "outputs", "fixed",
        "x process", "x in-proc", "cpu x")
    print(head, file=e)
    for r in rows:
        ph = r["phases_s"]
        print("%-*s %s %s %s %s %s %s %s %s %9.2f %9.2f %9.2f" % (
            width, r["name"], ms(r["wall_s"]["median"]), ms(r["cpu_s"]["median"]),
            ms(ph["inputs"]["median"]), ms(ph["compile"]["median"]), ms(ph["run"]["median"]),
            ms(ph["merge"]["median"]), ms(ph["outputs"]["median"]), ms(r["fixed_s"]["median"]),
            r["ratio_process"], r["ratio_in_process"], r["cpu_ratio_process"]), file=e)


if __name__ == "__main__":
    main()
