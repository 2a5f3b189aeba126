"""The object run() returns: a tuple of arrays whose items also have names
(docs/language.md, "Result names")."""
import pickle

import numpy as np
import pytest

import autobatch
from conftest import VMS

NAMED = """
func integrate(x: f64) -> (total: f64, leaves: i64) {
  return x * 2.0, 3
}
entry func main(x: f64) {
  return integrate(x)
}
"""


@pytest.mark.parametrize("vm", VMS)
def test_outputs_by_name_and_by_position(vm):
    prog = autobatch.compile(NAMED)
    out = prog.run(x=np.array([1.0, 2.5]), vm=vm)
    # What worked before names: a tuple of arrays.
    assert isinstance(out, tuple)
    assert len(out) == 2
    total, leaves = out
    assert list(total) == [2.0, 5.0] and list(leaves) == [3, 3]
    assert [list(a) for a in out] == [[2.0, 5.0], [3, 3]]
    assert out[0] is out["total"] and out[-1] is out["leaves"]
    assert isinstance(out[0:1], tuple) and len(out[0:1]) == 1
    # By name.
    assert out.names == ("total", "leaves")
    assert out.total is out[0] and out.leaves is out[1]
    assert list(dict(out)) == ["total", "leaves"]
    assert [n for n, _ in out.items()] == ["total", "leaves"]
    assert "total=" in repr(out)


def test_unnamed_outputs_are_out_k(programs):
    prog = autobatch.load(str(programs / "fib.ab"), entry="fib")
    (out,) = prog.run(n=np.array([6, 7]))
    res = prog.run(n=np.array([6, 7]))
    assert res.names == ("out0",)
    assert list(res.out0) == list(out) == [13, 21]


def test_missing_names_raise():
    out = autobatch.compile(NAMED).run(x=np.array([1.0]))
    with pytest.raises(KeyError, match="no output named 'nope'; the outputs are total, leaves"):
        out["nope"]
    with pytest.raises(AttributeError, match="no output named 'nope'"):
        out.nope


def test_run_result_keeps_names():
    res = autobatch.compile(NAMED).run(x=np.array([1.0, 2.0]), stats=True)
    assert res.names == ("total", "leaves")
    assert list(res.outputs["leaves"]) == [3, 3]


def test_tuple_leaves_and_pickle():
    prog = autobatch.compile("func f(x: f64) -> (p: (f64, i64), f64) {\n"
                             "  return tuple(x, 1), x + 1.0\n}\n")
    out = prog.run(x=np.array([0.5]))
    assert out.names == ("p.0", "p.1", "out2")
    assert list(out["p.1"]) == [1]
    again = pickle.loads(pickle.dumps(out))
    assert again.names == out.names and list(again["p.0"]) == [0.5]
