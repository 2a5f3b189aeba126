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
