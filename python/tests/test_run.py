"""Running programs from Python: inputs, outputs, options, errors."""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import autobatch
from conftest import VMS


def fib_ref(n):
    a, b = 1, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return b if n > 0 else 1


@pytest.mark.parametrize("vm", VMS)
def test_fib_outputs(programs, vm):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    ns = np.array([6, 7, 8, 7, 0, 1, 12])
    (out,) = prog.run(n=ns, vm=vm)
    assert out.dtype == np.int64 and out.shape == (7,)
    assert out.tolist() == [fib_ref(int(n)) for n in ns]
    (pos,) = prog.run(ns, vm=vm)  # by position
    assert np.array_equal(pos, out)


def test_readme_fib_example(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    (out,) = prog.run(n=np.array([6, 7, 8, 7]))
    assert out.tolist() == [13, 21, 34, 21]
    res = prog.run(n=np.array([6, 7, 8, 7]), vm="stackless", lanes=2, threads=2, stats=True)
    assert res.outputs[0].tolist() == [13, 21, 34, 21]
    assert res.stats["steps"] > 0 and res.errors is None


def test_scalars_and_lists(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    assert prog.run(n=6)[0].tolist() == [13]  # a scalar is a batch of 1
    assert prog.run(n=[6, 7])[0].tolist() == [13, 21]
    assert prog.run(n=np.int32(7))[0].tolist() == [21]  # i32 converted to the declared i64


def test_outputs_are_owned_and_writable(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    (a,) = prog.run(n=np.array([6, 7]))
    (b,) = prog.run(n=np.array([6, 7]))
    a[0] = -1
    assert b.tolist() == [13, 21] and a.tolist() == [-1, 21]
    assert a.base is not None  # held by the library's array, not copied


DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
SHAPES = [(5,), (5, 3), (4, 2, 3), (1,), (0,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("vm", VMS)
def test_round_trip_every_dtype_and_shape(dtype, shape, vm):
    prog = autobatch.compile("func main(x) {\n  y = x\n  return y, x\n}\n")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    y, z = prog.run(x, vm=vm)
    for out in (y, z):
        assert out.dtype == x.dtype and out.shape == x.shape
        assert np.array_equal(out, x)
    # Nothing of the input is kept: the outputs are the library's own.
    assert not np.shares_memory(y, x) and not np.shares_memory(z, x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_arithmetic_keeps_dtype(dtype):
    prog = autobatch.compile("func main(x, y) {\n  return x * y + x\n}\n")
    x = np.arange(6, dtype=dtype).reshape(3, 2)
    y = np.array([[2, 3]], dtype=dtype)  # batch 1: shared by the three threads
    (out,) = prog.run(x, y)
    assert out.dtype == dtype
    assert np.array_equal(out, x * y + x)


def test_batch1_broadcast_and_batch_option():
    prog = autobatch.compile("func main(a: f64, b: f64) -> f64 {\n  return a + b\n}\n")
    (out,) = prog.run(a=np.array([10.0]), b=np.array([1.0, 2.0, 3.0]))
    assert out.tolist() == [11.0, 12.0, 13.0]
    (out,) = prog.run(a=1.5, b=2)  # Python scalars, int converted to the declared f64
    assert out.tolist() == [3.5]
    (out,) = prog.run(a=[1.0], b=[2.0], batch=3)  # all shared: --batch sets the threads
    assert out.tolist() == [3.0, 3.0, 3.0]
    noin = autobatch.compile("func main() -> i64 {\n  return 7\n}\n")
    assert noin.run(batch=4)[0].tolist() == [7, 7, 7, 7]


def test_noncontiguous_and_other_dtypes_are_converted():
    prog = autobatch.compile("func main(x) {\n  return x + x\n}\n")
    x = np.arange(10, dtype=np.float64)
    assert prog.run(x[::2])[0].tolist() == [0.0, 4.0, 8.0, 12.0, 16.0]
    assert prog.run(x.astype(np.int16))[0].dtype == np.int64
    assert prog.run(x.astype(">f8"))[0].tolist() == (2 * x).tolist()  # big-endian
    m = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(prog.run(np.asfortranarray(m))[0], 2 * m)
    with pytest.raises(autobatch.InputError, match="not supported"):
        prog.run(np.array([1 + 2j]))


ZERO_COPY = textwrap.dedent("""
    import resource, sys, numpy as np, autobatch
    prog = autobatch.compile("func main(x) {\\n  return sum(x)\\n}\\n")
    prog.run(np.zeros((1, 10)))  # compile and warm up
    n = 10_000_000
    if sys.argv[1] == "contiguous":
        x = np.random.default_rng(1).random((1, n))
    else:  # every other element of a twice larger array: must be copied
        x = np.random.default_rng(1).random((1, 2 * n))[:, ::2]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (y,) = prog.run(x)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert np.isclose(y[0], x.sum())
    print((after - before) * 1024)
    """)


def peak_growth(layout):
    out = subprocess.run([sys.executable, "-c", ZERO_COPY, layout], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(os.environ.get("AUTOBATCH_SANITIZED") == "1",
                    reason="AddressSanitizer's allocator hides the peak memory of a run")
def test_zero_copy_large_input():
    # A 10^7-element float64 input (80 MB, one shared row) given C-contiguous
    # is not copied, neither by the module nor by the default (stack) VM,
    # which reads a parameter the program never writes in place: the peak
    # memory of the run grows by well under the input's size. The same values
    # in a strided view must be copied once by the module: that run's growth
    # shows the measure sees a copy. Each run in a fresh process, so that the
    # peak measured is its own.
    x = np.zeros((1, 1000))
    assert np.shares_memory(autobatch.compile("func main(x) {\n  return x\n}\n")
                            ._bind((x,), {}, None, None)[0][0], x)
    contiguous, strided = peak_growth("contiguous"), peak_growth("strided")
    assert contiguous < 16e6, (contiguous, strided)
    assert strided > 60e6, (contiguous, strided)


def test_stats_trace_and_output(tmp_path, programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    lines = []
    res = prog.run(n=[5, 6], stats=True, trace=lines.append, trace_mask="bits")
    assert res.outputs[0].tolist() == [8, 13]
    assert set(res.stats) >= {"steps", "block_executions", "mean_utilization", "seconds"}
    header = json.loads(lines[0])
    assert header["trace"] == "autobatch" and header["batch"] == 2
    assert len(lines) == res.stats["steps"] + 1
    trace = tmp_path / "t.jsonl"
    prog.run(n=[5, 6], trace=trace, trace_mask="ranges")
    assert trace.read_text().splitlines()[0] == lines[0]
    chrome = tmp_path / "t.json"
    prog.run(n=[5, 6], trace=chrome, trace_format="chrome")
    events = json.loads(chrome.read_text())
    assert isinstance(events, (list, dict)) and events
    prog.run(n=[5, 6], output=tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text()) == {"outputs": [[8, 13]], "names": ["out0"]}
    prog.run(n=[5, 6], output=tmp_path / "o.npy")
    assert np.load(tmp_path / "o.npy").tolist() == [8, 13]


def test_every_run_option(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib", schedule="min-pc")
    ns = np.arange(12)
    want = [fib_ref(int(n)) for n in ns]
    for kw in [dict(vm="stack", jit=False), dict(vm="stack", jit="on"), dict(lanes=3),
               dict(threads=2), dict(schedule="persistent"), dict(max_stack_depth=50),
               dict(max_steps=10**6), dict(vm="reference", threads=3)]:
        assert prog.run(n=ns, **kw)[0].tolist() == want, kw


def test_inputs_forms(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    assert prog.run(inputs=str(programs / "fib.json"))[0].tolist() == [13, 21, 34, 21]
    assert prog.run(inputs='{"n": [3, 4]}')[0].tolist() == [3, 5]
    assert prog.run(inputs={"n": [3]})[0].tolist() == [3]
    assert prog.run(inputs=[np.array([4])])[0].tolist() == [5]


def test_threads_run_with_the_gil_released():
    # A long run in one Python thread while this thread keeps counting: with
    # the GIL held by the run, no count could happen inside its interval.
    prog = autobatch.compile(textwrap.dedent("""\
        func main(n: i64) -> i64 {
          i = 0
          s = 0
          while i < n {
            s = s + i % 7
            i = i + 1
          }
          return s
        }
        """))
    n = np.full(64, 30_000)
    span = {}

    def work():
        span["start"] = time.perf_counter()
        span["out"] = prog.run(n=n, jit=False, threads=1)[0]
        span["end"] = time.perf_counter()

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
    t.join()
    inside = [x for x in ticks if span["start"] < x < span["end"]]
    assert span["end"] - span["start"] > 0.02
    assert len(inside) > 100, f"{len(inside)} ticks during a {span['end'] - span['start']:.3f} s run"
    assert span["out"].tolist() == [sum(i % 7 for i in range(30_000))] * 64


def test_concurrent_runs_of_one_program(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    results = [None] * 4

    def work(k):
        results[k] = prog.run(n=np.arange(15) + k % 2)[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert results[k].tolist() == [fib_ref(int(n) + k % 2) for n in range(15)]


def test_stats_execution(programs):
    # Every block's mode and reason (the stack VM's plan), as --stats prints them.
    prog = autobatch.load(programs / "collatz.ab", entry="collatz_steps")
    res = prog.run(n=[1, 6, 7, 27, 12], stats=True)
    execution = res.stats["execution"]
    assert set(execution) == set(res.stats["block_executions"])
    modes = {e["mode"] for e in execution.values()}
    assert modes <= {"interpreted", "segments", "dense_loop", "dense_chunks", "whole_block",
                     "chained"}
    assert all(e["reason"] for e in execution.values())
    off = prog.run(n=[1, 6, 7, 27, 12], stats=True, jit=False).stats["execution"]
    assert {e["mode"] for e in off.values()} == {"interpreted"}
    assert all("--jit off" in e["reason"] for e in off.values())


def test_jit_on_wait_and_off(programs):
    # The default (on) starts interpreted and switches to the compiled code when
    # it is ready; "wait" compiles first; the outputs never change.
    prog = autobatch.load(programs / "collatz.ab", entry="collatz_steps")
    n = np.arange(1, 700)
    want = prog.run(n=n, jit=False)[0]
    for jit in (True, "on", "wait", "off"):
        assert np.array_equal(prog.run(n=n, jit=jit, threads=1)[0], want), jit
    with pytest.raises(autobatch.InputError, match="'on'/'off'/'wait'"):
        prog.run(n=n, jit="later")


EXIT_WHILE_COMPILING = """
import sys, time, autobatch
prog = autobatch.load(sys.argv[1], entry="main")
t0 = time.perf_counter()
out = prog.run(inputs=sys.argv[2])
print(time.perf_counter() - t0, len(out), flush=True)
"""


def test_exit_while_compiling(programs):
    # A run that ends before its code is ready does not wait for it; the
    # compilation goes on in the background (AUTOBATCH_JIT_DELAY_MS makes it
    # 2 s slower) and the interpreter's exit joins it: exit status 0, no crash.
    env = dict(os.environ, AUTOBATCH_JIT_DELAY_MS="2000")
    out = subprocess.run([sys.executable, "-c", EXIT_WHILE_COMPILING, str(programs / "nuts.ab"),
                          str(programs / "nuts.json")], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    seconds, outputs = out.stdout.split()
    assert float(seconds) < 1.5 and int(outputs) > 0


FORK_WHILE_COMPILING = """
import os, sys, autobatch
prog = autobatch.load(sys.argv[1], entry="main")
want = prog.run(inputs=sys.argv[2], jit=False)[0]
got = prog.run(inputs=sys.argv[2])[0]  # its compilation goes on (made 1 s slower)
pid = os.fork()
if pid == 0:
    # The child has no compiling thread, and LLVM's state is not to be trusted:
    # it interprets, also where a run would compile first.
    ok = all((prog.run(inputs=sys.argv[2], jit=j, stats=s)[0] if not s else
              prog.run(inputs=sys.argv[2], jit=j, stats=s).outputs[0]).tolist() == want.tolist()
             for j, s in [(True, False), ("wait", False), (True, True)])
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), got.tolist() == want.tolist(), flush=True)
"""


def test_fork_while_compiling(programs):
    env = dict(os.environ, AUTOBATCH_JIT_DELAY_MS="1000")
    out = subprocess.run([sys.executable, "-c", FORK_WHILE_COMPILING, str(programs / "nuts.ab"),
                          str(programs / "nuts.json")], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "True"], out.stdout + out.stderr
