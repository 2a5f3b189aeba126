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


CLIMB = textwrap.dedent("""\
    func main(q: f64[3], mu: f64[3], n: i64) -> (f64, f64[3]) {
      total = 0.0
      i = 0
      while i < n {
        lp, g = logp_grad(q, mu)
        total = total + lp
        q = q + 0.25 * g
        i = i + 1
      }
      return total, q
    }
    """)


def logp_grad(q, mu):
    """A density and its gradient from one pass."""
    r = q - mu
    return -0.5 * np.einsum("bi,bi->b", r, r), -r


LOGP_GRAD = autobatch.Primitive(logp_grad, result="(f64, f64[3])")


def climb_reference(q, mu, n):
    total, q = np.zeros(len(q)), q.copy()
    for t in range(len(q)):
        for _ in range(n[t]):
            r = q[t] - mu[0]
            total[t] += -0.5 * r @ r
            q[t] -= 0.25 * r
    return total, q


def test_several_results_in_every_vm_and_a_lowered_program():
    prog = autobatch.compile(CLIMB, primitives={"logp_grad": LOGP_GRAD})
    assert prog.signature[0] == "func main(q: f64[3], mu: f64[3], n: i64) -> (f64, f64[3])"
    q = np.sin(np.arange(3000.0)).reshape(1000, 3)
    mu = np.array([[1.0, -2.0, 0.5]])
    n = np.arange(1000) % 5
    want_total, want_q = climb_reference(q, mu, n)
    runs = [dict(vm=vm) for vm in VMS] + [dict(vm="stack", jit=False),
                                          dict(vm="stack", threads=2),
                                          dict(vm="stackless", threads=2, lanes=64)]
    first = None
    for kwargs in runs:
        total, qn = prog.run(q, mu, n, **kwargs)
        assert np.allclose(total, want_total) and np.allclose(qn, want_q), kwargs
        first = total if first is None else first
        assert np.array_equal(total, first), kwargs
    lowered = autobatch.compile(prog.lower(q, mu, n), primitives={"logp_grad": LOGP_GRAD})
    for vm in ("stack", "reference"):
        assert np.array_equal(lowered.run(q, mu, n, vm=vm, threads=2)[0], first)


def test_several_results_type_errors():
    with pytest.raises(autobatch.InputError, match=r"\(f64, f64\[3\]\)"):
        autobatch.Primitive(logp_grad, result="(f64)")
    with pytest.raises(autobatch.InputError):
        autobatch.Primitive(logp_grad, result="(f64, f65)")
    assert autobatch.Primitive(logp_grad, result="(f64, i32[2, 2])").result == "(f64, i32[2, 2])"
    prog = autobatch.compile(
        "func main(q: f64[3]) -> f64 {\n  a, b, c = logp_grad(q, q)\n  return a\n}\n",
        primitives={"logp_grad": LOGP_GRAD})
    with pytest.raises(autobatch.CompileError):
        prog.run(np.zeros((2, 3)))


def run_returning(value_fn, result="(f64, f64[3])"):
    text = "func main(q: f64[3]) -> f64 {\n  lp, g = f(q)\n  return lp\n}\n"
    if not result.startswith("("):
        text = f"func main(q: f64[3]) -> {result} {{\n  return f(q)\n}}\n"
    prog = autobatch.compile(text, name="ret.ab",
                             primitives={"f": autobatch.Primitive(value_fn, result=result)})
    with pytest.raises(autobatch.ExecutionError) as info:
        prog.run(np.zeros((4, 3)), vm="stackless")
    e = info.value
    assert (e.file, e.line, e.column) == ("ret.ab", 2, 11 if result.startswith("(") else 10)
    assert str(e).startswith(f"ret.ab:{e.line}:{e.column}: runtime error: Python primitive 'f' ")
    return e.message


def test_bad_returns_name_the_expected_and_the_returned_dtype_and_shape():
    m = run_returning(lambda q: q[:, :2], result="f64[3]")
    assert "returned float64 of shape (4, 2), expected float64 of shape (4, 3)" in m
    m = run_returning(lambda q: q[:, 0] * 0.5, result="i64")
    assert "returned float64 of shape (4,), expected int64 of shape (4,)" in m
    assert "float64 does not cast to int64" in m
    # Several results: the count, and each result that does not fit.
    m = run_returning(lambda q: q)
    assert ("returned one ndarray, expected a tuple of 2 arrays "
            "(one per result of (f64, f64[3]))") in m
    m = run_returning(lambda q: (q[:, 0],))
    assert "returned 1 value, expected a tuple of 2 arrays" in m
    m = run_returning(lambda q: (q[:, 0], q, q))
    assert "returned 3 values, expected a tuple of 2 arrays" in m
    m = run_returning(lambda q: (q, q[:, :1].astype(np.complex128)))
    assert "result 1 of 2 returned float64 of shape (4, 3), expected float64 of shape (4,)" in m
    assert "result 2 of 2 returned complex128 of shape (4, 1)" in m
    assert "complex128 does not cast to float64" in m
    # Broadcastable values are fine: a scalar density, a shared gradient.
    prog = autobatch.compile(
        "func main(q: f64[3]) -> (f64, f64[3]) {\n  lp, g = f(q)\n  return lp, g\n}\n",
        primitives={"f": autobatch.Primitive(lambda q: (1, [0.0, 1.0, 2.0]),
                                             result="(f64, f64[3])")})
    lp, g = prog.run(np.zeros((2, 3)))
    assert lp.tolist() == [1.0, 1.0] and g.tolist() == [[0.0, 1.0, 2.0]] * 2


def test_exception_names_where_the_primitive_raised():
    def boom(x):
        raise ValueError("bad value")

    prog = autobatch.compile("func main(x: f64) -> f64 {\n  return boom(x)\n}\n", name="b.ab",
                             primitives={"boom": autobatch.Primitive(boom, result="f64")})
    with pytest.raises(autobatch.ExecutionError) as info:
        prog.run([1.0])
    assert f"(raised at {__file__}:" in str(info.value) and ", in boom)" in str(info.value)
