#!/usr/bin/env python3
"""Differential test of the example programs: every VM and the lowered form agree.

For every program in programs/*.ab (its entry from the `# entry:` line) and batch
sizes 1, 7, 64 and 1000, inputs come from gen_inputs.py with fixed seeds, and

    autobatch run P --vm reference | --vm stack | --vm stackless
    autobatch lower P > L.ab; autobatch run L.ab --vm reference | --vm stack

must print the same outputs as `--vm reference` (parsed JSON; integers, booleans and
floats exactly). Programs with matrix products (matvec, matmul, dot) also run on 2, 3
and 7 OS threads (--threads), which cut the batch into shards of other sizes (a shard
of one thread among them), and on chunks of 5 lanes (--lanes 5): a thread's product
must round the same whatever it is batched with.
One line per mismatch with the commands to reproduce it (the inputs and lowered
programs stay in --workdir), then `N passed, M failed`; exit 1 on any failure.

Environment: AUTOBATCH (the binary; default build/autobatch).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import gen_inputs  # noqa: E402

BATCHES = [1, 7, 64, 1000]
SEED = 20240601

# Every product sums each element as one fma chain in index order, whatever the
# batch (src/vm/kernels/ordered_linalg.h): so these programs must agree bit for bit too,
# also when the batch is split over OS threads.
THREAD_CONFIGS = ["stack+threads-2", "stack+threads-3", "stack+threads-7", "stackless+threads-3",
                  "stack+lanes-5"]
MATRIX_OPS = ("matvec(", "matmul(", "dot(")


def configs_for(path):
    with open(path) as f:
        text = f.read()
    return common.CONFIGS + (THREAD_CONFIGS if any(op in text for op in MATRIX_OPS) else [])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--autobatch", help="the binary (default $AUTOBATCH or build/autobatch)")
    ap.add_argument("--programs", default=gen_inputs.DEFAULT_PROGRAMS)
    ap.add_argument("--workdir", default=os.path.join(common.ROOT, "build", "differential-programs"),
                    help="where the inputs and lowered programs are written")
    ap.add_argument("--only", action="append", help="only this program (repeatable)")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--jobs", "-j", type=int, default=common.default_jobs())
    ap.add_argument("--timeout", type=float, default=600, help="seconds per autobatch run")
    ap.add_argument("--verbose", "-v", action="store_true")
    a = ap.parse_args(argv)

    ab = common.find_autobatch(a.autobatch)
    start = time.time()
    try:
        gen_inputs.check_all(a.programs)
    except gen_inputs.SpecError as e:
        print("error: %s" % e)
        print("0 passed, 1 failed")
        return 1

    paths = gen_inputs.program_paths(a.programs)
    if a.only:
        paths = [p for p in paths if gen_inputs.program_name(p) in a.only]
    batches = [int(b) for b in a.batches.split(",")]
    os.makedirs(a.workdir, exist_ok=True)

    # Inputs and lowered programs first, then every run in parallel.
    cases = []  # (name, path, entry, lowered, inputs, batch)
    lower_fail = {}
    with common.pool(a.jobs) as ex:
        lowers = {}
        for path in paths:
            name = gen_inputs.program_name(path)
            entry = gen_inputs.spec_for(path)[0]
            lowered = os.path.join(a.workdir, name + ".lowered.ab")
            lowers[name] = ex.submit(common.run, common.lower_cmd(ab, path, entry), a.timeout, lowered)
            for batch in batches:
                inputs = os.path.join(a.workdir, "%s.b%d.json" % (name, batch))
                with open(inputs, "w") as f:
                    f.write(gen_inputs.dumps(gen_inputs.generate(path, batch, a.seed)) + "\n")
                cases.append((name, path, entry, lowered, inputs, batch))
        for name, fut in lowers.items():
            p = fut.result()
            if p.rc != 0:
                lower_fail[name] = "lower failed (exit %d): %s" % (p.rc, common.first_line(p.err))
        runs = {}
        for case in cases:
            name, path, entry, lowered, inputs, batch = case
            for config in configs_for(path):
                if config.startswith("lowered/") and name in lower_fail:
                    continue
                cmd = common.run_cmd(ab, config, path, lowered, entry, inputs, batch)
                runs[(name, batch, config)] = ex.submit(common.run, cmd, a.timeout)

        passed = failed = 0
        fallbacks = set()
        def rel(p):  # paths in the reproduce commands: relative to here when that is short
            r = os.path.relpath(p)
            return p if r.startswith("../..") else r
        for name, path, entry, lowered, inputs, batch in cases:
            ref = runs[(name, batch, "reference")].result()
            if ref.rc != 0:  # the spec promises inputs without runtime errors
                failed += 1
                print("FAIL %s batch %d: the reference run failed (exit %d; inputs outside what the "
                      "program accepts: fix its spec in gen_inputs.py, or a bug): %s"
                      % (name, batch, ref.rc, common.first_line(ref.err)))
                print("     reproduce: %s" % common.reproduce(ab, "reference", rel(path), rel(lowered),
                                                               entry, rel(inputs), batch))
                continue
            for config in configs_for(path)[1:]:
                if config.startswith("lowered/") and name in lower_fail:
                    why = lower_fail[name]
                else:
                    got = runs[(name, batch, config)].result()
                    if common.FALLBACK_NOTE in got.err:
                        fallbacks.add(config)
                    why = common.compare_procs(ref, got, 0.0)
                if why is None:
                    passed += 1
                    if a.verbose:
                        print("ok   %s batch %d %s" % (name, batch, config))
                    continue
                failed += 1
                print("FAIL %s batch %d %s vs reference: %s" % (name, batch, config, why))
                print("     reproduce: %s" % common.reproduce(ab, config, rel(path), rel(lowered), entry,
                                                               rel(inputs), batch))
                print("     reference: %s" % common.reproduce(ab, "reference", rel(path), rel(lowered),
                                                               entry, rel(inputs), batch))
    if fallbacks:
        print("note: %s fell back to the reference interpreter (not built yet): "
              "those comparisons test nothing new" % ", ".join("--vm " + c for c in sorted({f.split("/")[-1] for f in fallbacks})))
    print("%d programs x batches %s x %d configurations in %.1fs"
          % (len(paths), ",".join(map(str, batches)), len(common.CONFIGS) - 1, time.time() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
