"""NUTS from Python: programs/nuts.ab with its Gaussian log-density and
gradient given as Python primitives, 1000 chains; the chains' means and
covariances against the target's."""
import numpy as np

import autobatch

PREC = np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -0.5], [0.0, -0.5, 1.0]])
MU = np.array([1.0, -2.0, 0.5])


def logp(q):
    """The Gaussian log-density (up to a constant) of each chain's q."""
    r = q - MU
    return -0.5 * np.einsum("bi,ij,bj->b", r, PREC, r)


def neg_grad(q):
    """Minus the gradient of logp: P (q - mu), per chain."""
    return (q - MU) @ PREC.T


def nuts_with_python_density(programs):
    text = (programs / "nuts.ab").read_text()
    density = """  r = sub(q, mu)
  pr = matvec(prec, r)
  rpr = dot(r, pr)
  logp = mul(rpr, -0.5)
"""
    assert density in text and text.count("  neg_grad = matvec(prec, r)\n") == 2
    text = text.replace(density, "  logp = py_logp(q)\n")
    text = text.replace("  neg_grad = matvec(prec, r)\n", "  neg_grad = py_neg_grad(q)\n")
    return autobatch.compile(text, name="nuts_py.ab", primitives={
        "py_logp": autobatch.Primitive(logp, result="f64"),
        "py_neg_grad": autobatch.Primitive(neg_grad, result="f64[3]"),
    })


def test_nuts_with_python_primitives(programs):
    prog = nuts_with_python_density(programs)
    chains, n_warmup, n_samples = 1000, 20, 20
    rng = np.random.default_rng(3)
    outs = prog.run(prec=PREC[None], mu=MU[None], q0=rng.standard_normal((chains, 3)) * 2,
                    key=np.arange(chains), eps=0.5, max_depth=5, n_warmup=n_warmup,
                    n_samples=n_samples)
    q, sum_q, sum_qq = outs[:3]
    assert sum_q.shape == (chains, 3) and sum_qq.shape == (chains, 3, 3)
    n = chains * n_samples
    mean = sum_q.sum(axis=0) / n
    cov = sum_qq.sum(axis=0) / n - np.outer(mean, mean)
    target_cov = np.linalg.inv(PREC)
    # 20000 draws of a well-mixing sampler: standard errors of about 0.01.
    assert np.allclose(mean, MU, atol=0.08), mean
    assert np.allclose(cov, target_cov, atol=0.12), cov


def test_python_density_matches_builtin(programs):
    # The same chains with the built-in density: the same draws up to
    # floating-point rounding (one chain in a hundred may take another path).
    prog_py = nuts_with_python_density(programs)
    prog_ab = autobatch.load(programs / "nuts.ab")
    args = dict(prec=PREC[None], mu=MU[None], q0=np.zeros((40, 3)), key=np.arange(40),
                eps=0.5, max_depth=4, n_warmup=1, n_samples=2)
    for vm in ("stack", "stackless", "reference"):
        a = prog_py.run(**args, vm=vm)[0]
        b = prog_ab.run(**args, vm=vm)[0]
        close = np.isclose(a, b, rtol=1e-9, atol=1e-9).all(axis=1)
        assert close.mean() >= 0.95, (vm, close.mean())
