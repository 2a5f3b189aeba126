"""Python functions as primitives, in every VM."""
import textwrap
import threading

import numpy as np
import pytest

import autobatch
from conftest import VMS

BRANCHY = textwrap.dedent("""\
    func main(x: f64) -> f64 {
      if x > 0.0 {
        y = half_square(x) + 1.0
      } else {
        y = -x
      }
      return y
    }
    """)

calls = []


def half_square(x):
    """x * x / 2 (the test's primitive)."""
    calls.append(x.shape)
    return 0.5 * x * x


HALF_SQUARE = autobatch.Primitive(half_square, result="f64")


def branchy_reference(x):
    return np.where(x > 0, 0.5 * x * x + 1.0, -x)


@pytest.mark.parametrize("vm", VMS)
def test_python_primitive_in_each_vm(vm):
    prog = autobatch.compile(BRANCHY, primitives={"half_square": HALF_SQUARE})
    x = np.linspace(-2, 3, 11)
    calls.clear()
    (y,) = prog.run(x, vm=vm)
    assert np.array_equal(y, branchy_reference(x))
    assert calls, "the primitive was not called"
    # Only the threads that take the branch reach the primitive.
    assert sum(s[0] for s in calls) == int((x > 0).sum())


def test_identical_outputs_in_the_three_vms_with_recursion_and_threads():
    text = textwrap.dedent("""\
        func walk(n: i64, x: f64) -> f64 {
          if n <= 0 {
            return x
          }
          return walk(n - 1, step(x, n)) + 0.5 * walk(n - 2, x)
        }
        """)
    step = autobatch.Primitive(lambda x, n: np.sin(x) + 0.1 * n, result="f64")
    prog = autobatch.compile(text, entry="walk", primitives={"step": step})
    n = np.arange(12) % 7
    x = np.linspace(-1, 1, 12)
    outs = [prog.run(n, x, vm=vm, threads=t)[0] for vm in VMS for t in (1, 3)]
    for o in outs[1:]:
        assert np.array_equal(o, outs[0])


def test_vector_result_and_shared_operands():
    text = textwrap.dedent("""\
        func main(q: f64[3], scale: f64) -> f64[3] {
          return grad(q, scale)
        }
        """)
    seen = []

    def grad(q, scale):
        seen.append((q.shape, scale.shape))
        return -q * scale[:, None]

    prog = autobatch.compile(text, primitives={"grad": autobatch.Primitive(grad, result="f64[3]")})
    q = np.arange(12.0).reshape(4, 3)
    for vm in VMS:
        seen.clear()
        (g,) = prog.run(q, np.array([2.0]), vm=vm)  # scale: batch 1, shared
        assert np.array_equal(g, -2.0 * q)
        assert all(s[1][0] == s[0][0] for s in seen)  # the shared operand has every lane


def test_result_dtype_conversion_and_broadcast():
    prog = autobatch.compile(
        "func main(x: i64) -> i64 {\n  return f(x)\n}\n",
        primitives={"f": autobatch.Primitive(lambda x: 7, result="i64")})
    assert prog.run([1, 2, 3])[0].tolist() == [7, 7, 7]
    bad = autobatch.compile(
        "func main(x: i64) -> i64 {\n  return f(x)\n}\n",
        primitives={"f": autobatch.Primitive(lambda x: x * 0.5, result="i64")})
    with pytest.raises(autobatch.ExecutionError, match="float64"):
        bad.run([1, 2, 3])


def test_primitive_exception_is_an_execution_error():
    def boom(x):
        raise ValueError("bad value")

    prog = autobatch.compile("func main(x: f64) -> f64 {\n  return boom(x)\n}\n", name="b.ab",
                             primitives={"boom": autobatch.Primitive(boom, result="f64")})
    for vm in VMS:
        with pytest.raises(autobatch.ExecutionError) as info:
            prog.run([1.0, 2.0], vm=vm)
        assert "boom" in str(info.value) and "ValueError: bad value" in str(info.value)
        assert info.value.function == "main" and info.value.file == "b.ab"


def test_primitive_arity_and_type_errors():
    with pytest.raises(autobatch.InputError, match="f65"):
        autobatch.Primitive(half_square, result="f65")
    with pytest.raises(TypeError):
        autobatch.Primitive(42, result="f64")
    with pytest.raises(autobatch.CompileError):  # wrong number of operands
        autobatch.compile("func main(x: f64) -> f64 {\n  return hs(x, x)\n}\n",
                          primitives={"hs": HALF_SQUARE})
    with pytest.raises(autobatch.InputError, match="add"):  # a built-in's name
        autobatch.compile("func main(x) {\n  return x\n}\n", primitives={"add": HALF_SQUARE})
    p = autobatch.Primitive(lambda *xs: xs[0], result="f64", arity=2)
    assert p.arity == 2


def test_primitives_in_threads_and_shards():
    prog = autobatch.compile(BRANCHY, primitives={"half_square": HALF_SQUARE})
    x = np.linspace(-3, 3, 4000)
    want = branchy_reference(x)
    outs = []

    def work():
        outs.append(prog.run(x, threads=2)[0])

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(outs) == 3 and all(np.array_equal(o, want) for o in outs)


def test_ops_lists_python_primitives():
    names = [o.name for o in autobatch.ops()]
    assert "add" in names and "matvec" in names and "half_square" not in names
    rows = autobatch.ops({"half_square": HALF_SQUARE})
    row = [o for o in rows if o.name == "half_square"][0]
    assert row.custom and row.min_args == row.max_args == 1
    assert row.doc == "x * x / 2 (the test's primitive)."
