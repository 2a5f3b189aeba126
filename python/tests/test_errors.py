"""Every error class with its fields."""
import numpy as np
import pytest

import autobatch


def test_compile_error_diagnostics():
    text = "func main(x: f64) -> f64 {\n  y = x +\n  return y\n}\n"
    with pytest.raises(autobatch.CompileError) as info:
        autobatch.compile(text, name="bad.ab")
    e = info.value
    assert isinstance(e, autobatch.AutobatchError)
    assert e.diagnostics, "no diagnostics"
    d = e.diagnostics[0]
    assert d.file == "bad.ab" and d.line >= 2 and d.column >= 1
    assert d.severity == "error" and d.message
    assert str(e).startswith(f"bad.ab:{d.line}:{d.column}: error:")
    assert d.rendered.strip() in str(e)


def test_compile_error_unknown_label_and_file(tmp_path):
    with pytest.raises(autobatch.CompileError) as info:
        autobatch.compile("func main(x) {\nentry:\n  goto nowhere\n}\n")
    assert "nowhere" in info.value.diagnostics[0].message
    with pytest.raises(autobatch.CompileError) as info:
        autobatch.load(tmp_path / "missing.ab")
    assert "missing.ab" in str(info.value)


def test_compile_error_for_types_known_at_run():
    prog = autobatch.compile("func main(x, y) {\n  return x + y\n}\n", name="t.ab")
    with pytest.raises(autobatch.CompileError) as info:
        prog.run(np.array([1.0]), np.array([True]))
    assert info.value.diagnostics[0].file == "t.ab"


def test_input_errors(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    cases = [
        (dict(), "missing input 'n'"),
        (dict(n=[1], m=[2]), r"unknown input 'm' \(the entry 'fib' takes n\)"),
        (dict(n=np.array([1.5])), "declares i64"),
        (dict(n=np.array([[1, 2]])), "declares i64"),
        (dict(n=[1, 2], vm="quantum"), "quantum"),
        (dict(n=[1, 2], batch=3), "batch"),
        (dict(n=[1], on_error="ignore"), "on_error"),
        (dict(n=[1], output="x.txt"), "x.txt"),
        (dict(n=[1], trace_mask="dots"), "dots"),
    ]
    for kwargs, text in cases:
        with pytest.raises(autobatch.InputError, match=text):
            prog.run(**kwargs)
    with pytest.raises(ValueError):  # InputError is a ValueError
        prog.run(1, 2)
    two = autobatch.compile("func main(a, b) {\n  return a + b\n}\n")
    with pytest.raises(autobatch.InputError, match="batch 3") as info:
        two.run(np.zeros(2), np.zeros(3))
    assert info.value.diagnostics and info.value.diagnostics[0].file == ""
    i32 = autobatch.compile("func main(a: i32) -> i32 {\n  return a\n}\n")
    with pytest.raises(autobatch.InputError, match="out of range"):
        i32.run(np.array([2**40]))
    assert i32.run([7])[0].dtype == np.int32
    # The CLI's JSON rules: integers must fit, booleans are not numbers, an
    # integral float is an integer, and a float must fit an f32.
    i64 = autobatch.compile("func main(n: i64) -> i64 {\n  return n\n}\n")
    for value, text in [([2**63], "9223372036854775808 is out of range for i64"),
                        (2**64, "18446744073709551616 is out of range for i64"),
                        ([-2**63 - 1], "out of range for i64"),
                        ([True], "booleans"), (np.array([False]), "booleans"),
                        ([2.5], "2.5 is not an integer"), ([9.3e18], "out of range for i64")]:
        with pytest.raises(autobatch.InputError, match=text):
            i64.run(value)
    assert i64.run([3.0])[0].tolist() == [3]
    assert i64.run([])[0].shape == (0,)
    f32 = autobatch.compile("func main(x: f32) -> f32 {\n  return x\n}\n")
    with pytest.raises(autobatch.InputError, match="out of range for f32"):
        f32.run([1e300])
    assert f32.run([1.5, float("inf")])[0].tolist() == [1.5, float("inf")]


def test_unknown_inputs_name_the_nearest_parameter_or_option():
    prog = autobatch.compile("func main(q: f64, step: f64, seed: i64) -> f64 {\n"
                             "  return q * step\n}\n")
    with pytest.raises(autobatch.InputError) as info:
        prog.run(q=1.0, stp=0.3, seed=1)
    assert str(info.value) == ("unknown input 'stp'; did you mean 'step'? "
                               "(the entry 'main' takes q, step, seed)")
    # Named before a missing input; several at once; an option's typo; no match.
    with pytest.raises(autobatch.InputError) as info:
        prog.run(q=1.0, stp=0.3, sed=1, thread=2, zzz=0)
    assert str(info.value) == (
        "unknown input 'stp'; did you mean 'step'?; unknown input 'sed'; did you mean 'seed'?; "
        "unknown input 'thread'; did you mean the option 'threads'?; unknown input 'zzz' "
        "(the entry 'main' takes q, step, seed)")
    with pytest.raises(autobatch.InputError, match="did you mean 'step'"):
        prog.run(inputs={"q": 1.0, "steps": 0.3, "seed": 1})
    with pytest.raises(autobatch.InputError, match="did you mean the option 'print_after'"):
        prog.lower(q=1.0, step=0.3, seed=1, print_afer="blocks")
    with pytest.raises(autobatch.InputError, match="did you mean 'seed'"):
        prog.check(q=1.0, step=0.3, seeds=1)


def test_every_error_has_file_line_and_column():
    with pytest.raises(autobatch.CompileError) as info:
        autobatch.compile("func main(x: f64) -> f64 {\n  return x + y\n}\n", name="c.ab")
    e = info.value
    assert (e.file, e.line, e.column) == ("c.ab", 2, 14)
    assert str(e).startswith("c.ab:2:14: error:")
    # A type error found once the inputs' types are known.
    prog = autobatch.compile("func main(x, y) {\n  return x + y\n}\n", name="t.ab")
    with pytest.raises(autobatch.CompileError) as info:
        prog.run(np.array([1.0]), np.array([True]))
    e = info.value
    assert (e.file, e.line) == ("t.ab", 2) and e.column > 0
    assert str(e).startswith(f"t.ab:2:{e.column}: error:")
    # Errors about inputs or options have no place in the source.
    with pytest.raises(autobatch.InputError) as info:
        prog.run([1.0], [2.0], vm="quantum")
    assert (info.value.file, info.value.line, info.value.column) == ("", 0, 0)
    with pytest.raises(autobatch.InputError) as info:
        prog.run([1.0], z=[2.0])
    assert (info.value.file, info.value.line, info.value.column) == ("", 0, 0)


def test_execution_error_fields():
    prog = autobatch.compile(
        "func main(a: i64, b: i64) -> i64 {\n  return div(a, b)\n}\n", name="div.ab")
    for vm in ("stack", "stackless", "reference"):
        with pytest.raises(autobatch.ExecutionError) as info:
            prog.run(a=np.array([4, 5, 6, 7]), b=np.array([1, 2, 0, 0]), vm=vm)
        e = info.value
        assert isinstance(e, RuntimeError) and isinstance(e, autobatch.AutobatchError)
        assert e.thread == 2 and e.function == "main" and e.batch == 4
        assert (e.file, e.line, e.column) == ("div.ab", 2, 10)
        assert "division by zero" in e.message
        assert str(e).startswith("div.ab:2:10: runtime error:") and "in thread 2 of 4" in str(e)


def test_execution_error_limits():
    loop = autobatch.compile("func main(n: i64) -> i64 {\n  while n > 0 {\n    n = n + 1\n"
                             "  }\n  return n\n}\n")
    with pytest.raises(autobatch.ExecutionError, match="steps"):
        loop.run(n=[1, 0], max_steps=1000)
    deep = autobatch.compile("func f(n: i64) -> i64 {\n  if n <= 0 {\n    return 0\n  }\n"
                             "  return f(n - 1) + 1\n}\n")
    with pytest.raises(autobatch.ExecutionError) as info:
        deep.run(n=[3, 500], max_stack_depth=100)
    assert info.value.thread == 1 and info.value.function == "f"


def test_time_limit_and_ctrl_c_stop_a_run():
    import os
    import signal
    import threading
    import time
    forever = autobatch.compile("func main(n: i64) -> i64 {\n  while n > 0 {\n    n = n + 1\n"
                                "  }\n  return n\n}\n")
    with pytest.raises(autobatch.ExecutionError, match="time-limit"):
        forever.run(n=[1], time_limit=0.2)
    # SIGINT while the run holds the main thread: KeyboardInterrupt within a
    # few steps, in every VM (time_limit only guards the test).
    for vm in ("stack", "stackless", "reference"):
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            forever.run(n=[1, 2], vm=vm, time_limit=60)
        assert time.monotonic() - t0 < 30
        timer.join()
    assert forever.run(n=[0])[0].tolist() == [0]  # the handler is Python's again


def test_on_error_record_returns_the_other_threads_and_the_errors():
    prog = autobatch.compile("func main(a: i64, b: i64) -> i64 {\n  return div(a, b)\n}\n")
    for vm in ("stack", "stackless", "reference"):
        res = prog.run(a=[4, 5, 6, 7], b=[1, 0, 2, 0], on_error="record", vm=vm)
        assert [e["thread"] for e in res.errors] == [1, 3]
        assert "division by zero" in res.errors[0]["message"]
        assert res.errors[0]["function"] == "main"
        assert res.outputs[0][0] == 4 and res.outputs[0][2] == 3
    ok = prog.run(a=[4], b=[2], on_error="record")
    assert ok.errors == [] and ok.outputs[0][0] == 2
