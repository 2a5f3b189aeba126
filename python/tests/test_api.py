"""lower, signature, check, ops, help()."""
import pydoc

import numpy as np
import pytest

import autobatch


def test_signature_and_parameters(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    assert prog.entry == "fib" and not prog.is_lowered
    assert prog.signature == ["func fib(n: i64) -> i64"]
    assert prog.parameters == [("n", "i64")]
    free = autobatch.compile("func main(x, k: i32) {\n  return x + x\n}\n")
    assert free.parameters == [("x", None), ("k", "i32")]
    assert "?" in free.signature[0]
    assert free.check(np.zeros((2, 3), np.float32), [1]) == [
        "func main(x: f32[3], k: i32) -> f32[3]"]


def test_lower_round_trips(programs):
    prog = autobatch.load(programs / "fib.ab", entry="fib")
    text = prog.lower()
    assert text.startswith("var ") or "program fib" in text
    lowered = autobatch.compile(text)
    assert lowered.is_lowered
    ns = np.arange(10)
    assert np.array_equal(lowered.run(n=ns)[0], prog.run(n=ns)[0])
    first = autobatch.pass_names()[0]
    assert prog.lower(print_after=first) != text
    with pytest.raises(autobatch.InputError, match="nosuchpass"):
        prog.lower(print_after="nosuchpass")
    free = autobatch.compile("func main(x) {\n  return x * 2\n}\n")
    assert "f32" in free.lower(np.zeros(2, np.float32))


def test_ops_table():
    rows = autobatch.ops()
    by_name = {r.name: r for r in rows}
    assert by_name["select"].min_args == 3 and by_name["add"].group == "arithmetic"
    assert not any(r.custom for r in rows)


def test_format_and_misc():
    assert autobatch.format("func main(x) {\nreturn x\n}\n").startswith("func main(x)")
    assert autobatch.__version__ == autobatch.version()
    assert autobatch.set_log_level("off") is None
    with pytest.raises(autobatch.InputError):
        autobatch.set_log_level("loud")


@pytest.mark.parametrize("obj", [
    autobatch, autobatch.compile, autobatch.load, autobatch.ops, autobatch.Primitive,
    autobatch.Program, autobatch.Program.run, autobatch.Program.lower, autobatch.Program.check,
    autobatch.Program.signature, autobatch.RunResult, autobatch.CompileError,
    autobatch.InputError, autobatch.ExecutionError, autobatch.pass_names, autobatch.format,
])
def test_help_has_a_docstring(obj):
    text = pydoc.render_doc(obj, renderer=pydoc.plaintext)
    assert obj.__doc__ and len(obj.__doc__.strip()) > 20
    assert obj.__doc__.strip().split("\n")[0] in text


def test_warnings_are_python_warnings_and_never_change_outputs():
    text = ("func main(xs: f64[4], thrshold: f64) -> i64 {\n  events = 0\n"
            "  for i in range(4) {\n    if xs[i] > 0.5 {\n      evnts = events + 1\n    }\n  }\n"
            "  return events\n}\n")
    with pytest.warns(UserWarning) as caught:
        prog = autobatch.compile(text, name="typo.ab")
    shown = [str(w.message) for w in caught]
    assert len(shown) == 2
    assert shown[0].startswith("typo.ab:5:7: warning: variable 'evnts' is assigned but never "
                               "used (did you mean 'events'?)")
    assert "parameter 'thrshold' of the entry function 'main'" in shown[1]
    assert [(d.line, d.column, d.severity) for d in prog.warnings] == [
        (5, 7, "warning"), (1, 23, "warning")]
    import warnings as w
    with w.catch_warnings():
        w.simplefilter("error")  # any warning would raise
        quiet = autobatch.compile(text, name="typo.ab", warnings=False)
        clean = autobatch.compile("func main(x) {\n  return x * 2\n}\n")
    assert len(quiet.warnings) == 2 and clean.warnings == []
    xs = np.array([[0.9, 0.1, 0.7, 0.2], [0.0, 0.0, 0.0, 0.0]])
    t = np.array([0.5, 0.5])
    assert np.array_equal(prog.run(xs=xs, thrshold=t)[0], quiet.run(xs=xs, thrshold=t)[0])


def test_check_without_inputs_is_the_cli_check(programs):
    # No entry chosen (even_odd.ab has two functions): every signature, as
    # `autobatch check` prints them.
    prog = autobatch.load(programs / "even_odd.ab")
    lines = prog.check()
    assert len(lines) == 2 and all(line.startswith("func ") for line in lines)
