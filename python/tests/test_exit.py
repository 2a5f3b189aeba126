"""A Python process that runs a program and exits at once: the run ends before its code is
compiled, so the compilation is still under way at exit. The module's atexit handler waits for
it; without it, LLVM's static objects were destroyed under the compiling thread and the
interpreter crashed at exit in about four runs of ten."""
import os
import subprocess
import sys


def test_exit_right_after_a_run_never_crashes(programs):
    path = str(programs / "fib.ab")
    code = ("import numpy as np, autobatch\n"
            "prog = autobatch.load(%r, entry='fib')\n"
            "(out,) = prog.run(n=np.array([6, 7, 8, 7]))\n"
            "assert out.tolist() == [13, 21, 34, 21]\n" % path)
    env = dict(os.environ)
    codes = []
    for _ in range(12):
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
        codes.append((p.returncode, p.stderr[-300:]))
    assert all(c == 0 for c, _ in codes), codes
