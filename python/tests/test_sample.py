"""autobatch.sample: draws keyed by name, chains first; data as a dict or a
CmdStan file; a model given as text; errors raised as InputError."""
import json
import os

import numpy as np
import pytest

import autobatch

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = os.path.join(ROOT, "programs", "models")
SCHOOLS = json.load(open(os.path.join(MODELS, "eight_schools.data.json")))


def test_eight_schools_with_dict_data():
    r = autobatch.sample(os.path.join(MODELS, "eight_schools.ab"),
                         data={"y": SCHOOLS["y"], "sigma": SCHOOLS["sigma"]},
                         chains=4, warmup=500, samples=500, seed=11)
    assert set(r.draws) == {"theta", "mu", "tau", "effect"}
    assert r.draws["theta"].shape == (4, 500, 10)
    assert r.draws["effect"].shape == (4, 500, 8)
    assert r.stats["treedepth__"].shape == (4, 500)
    assert r.step_size.shape == (4,)
    assert r.seed == 11
    # effect is mu + tau * eta, draw by draw.
    eta = r.draws["theta"][:, :, 2:]
    np.testing.assert_allclose(r.draws["effect"],
                               r.draws["mu"][..., None] + r.draws["tau"][..., None] * eta,
                               rtol=1e-12)
    assert r.summary["tau"]["rhat"] < 1.01
    assert abs(r.summary["mu"]["mean"] - 4.40) < 4 * r.summary["mu"]["mcse"]
    # On its support throughout: no log density that is not finite.
    assert r.nonfinite == 0 and r.warmup_nonfinite == 0
    assert r.nonfinite_at.tolist() == [-1] * 4
    assert r.nonfinite_theta.shape == (4, 10)


def test_the_same_draws_from_a_data_file_and_a_dict():
    path = os.path.join(MODELS, "eight_schools.ab")
    a = autobatch.sample(path, data=os.path.join(MODELS, "eight_schools.data.json"), chains=2,
                         warmup=100, samples=50, seed=5)
    b = autobatch.sample(path, data=SCHOOLS, chains=2, warmup=100, samples=50, seed=5)
    np.testing.assert_array_equal(a["theta"], b["theta"])


def test_a_model_given_as_text_and_init_values():
    model = ("import dists\n\nfunc log_density(theta: f64[2]) -> f64 {\n"
             "  return normal_lpdf(theta, 1.0, 2.0)\n}\n")
    r = autobatch.sample(model, chains=4, warmup=300, samples=500, seed=3, init=[0.5, 0.5])
    assert r["theta"].shape == (4, 500, 2)
    mean = r["theta"].mean(axis=(0, 1))
    assert np.all(np.abs(mean - 1.0) < 0.4)


def test_a_declared_model_records_its_parameters_on_their_support():
    # sigma declared positive: sampled as log sigma, recorded as sigma > 0.
    model = ("import dists\n\nfunc log_density(mu: f64, sigma: f64 positive, y) -> f64 {\n"
             "  return normal_lpdf(y, mu, sigma) + exponential_lpdf(sigma, 1.0)\n}\n")
    r = autobatch.sample(model, data={"y": [0.3, -1.2, 0.8, 2.1, 0.5]}, chains=2, warmup=200,
                         samples=200, seed=4)
    assert r["theta"].shape == (2, 200, 2)
    assert r["sigma"].shape == (2, 200)
    assert np.all(r["sigma"] > 0)
    np.testing.assert_allclose(r["sigma"], np.exp(r["theta"][:, :, 1]))
    # Starting values by name, on the support; off it, an InputError.
    r = autobatch.sample(model, data={"y": [0.3, -1.2]}, chains=2, warmup=0, samples=1, seed=4,
                         init={"mu": 0.5, "sigma": [1.0, 2.0]})
    assert r["theta"].shape == (2, 1, 2)
    with pytest.raises(autobatch.InputError, match="'sigma' for chain 0 is not in its support"):
        autobatch.sample(model, data={"y": [0.3]}, chains=2, init={"mu": 0.5, "sigma": -1.0})


def test_errors_are_input_errors():
    with pytest.raises(autobatch.InputError, match="has no 'sigma'"):
        autobatch.sample(os.path.join(MODELS, "eight_schools.ab"), data={"y": SCHOOLS["y"]},
                         warmup=10, samples=10)
    with pytest.raises(autobatch.InputError, match="no model file"):
        autobatch.sample("no_such_model.ab")


COV = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, 0.3], [0.2, 0.3, 0.5]])
PREC = np.linalg.inv(COV)


def gaussian_lp_grad(theta):
    """A correlated Gaussian's log density and gradient, for n chains at once."""
    g = -theta @ PREC
    return 0.5 * np.sum(g * theta, axis=1), g


def test_a_python_log_density_with_its_gradient():
    calls = []

    def lp_grad(theta):
        calls.append(theta.shape[0])
        return gaussian_lp_grad(theta)

    r = autobatch.sample(autobatch.Primitive(lp_grad, result="(f64, f64[3])"), chains=8,
                         warmup=500, samples=1000, seed=1)
    assert r["theta"].shape == (8, 1000, 3)
    assert max(calls) > 1  # chains at the same point of the sampler share a call
    for i in range(3):
        row = r.summary["theta[%d]" % i]
        assert abs(row["mean"]) < 4 * row["mcse"]
        assert abs(row["sd"] / np.sqrt(COV[i, i]) - 1) < 0.1
        assert row["rhat"] < 1.01
    assert r.divergent == 0


def test_a_model_text_calling_a_primitive_with_data():
    # log_density_and_grad in the language, the work in Python; data from the dict.
    model = ("func log_density_and_grad(theta: f64[3], scale) {\n"
             "  lp, g = gauss(theta / scale)\n"
             "  return lp, g / scale\n}\n")
    r = autobatch.sample(model, data={"scale": 2.0}, chains=4, warmup=500, samples=1000, seed=2,
                         primitives={"gauss": autobatch.Primitive(gaussian_lp_grad,
                                                                  result="(f64, f64[3])")})
    sd = r["theta"].reshape(-1, 3).std(axis=0)
    np.testing.assert_allclose(sd, 2.0 * np.sqrt(np.diag(COV)), rtol=0.1)


def test_a_python_model_that_does_not_fit():
    with pytest.raises(autobatch.InputError, match=r"result=\"\(f64, f64\[D\]\)\""):
        autobatch.sample(autobatch.Primitive(gaussian_lp_grad, result="f64"))
    with pytest.raises(autobatch.InputError, match="takes no data"):
        autobatch.sample(autobatch.Primitive(gaussian_lp_grad, result="(f64, f64[3])"),
                         data={"x": 1.0})
    # A Python exception stops the run, naming the primitive.
    def broken(theta):
        raise ValueError("no density here")
    with pytest.raises(autobatch.ExecutionError, match="no density here"):
        autobatch.sample(autobatch.Primitive(broken, result="(f64, f64[3])"), warmup=10,
                         samples=10)


def test_cmdstan_csv_files(tmp_path):
    r = autobatch.sample(os.path.join(MODELS, "eight_schools.ab"), data=SCHOOLS, chains=2,
                         warmup=100, samples=30, seed=5, csv=tmp_path / "csv")
    for c in range(2):
        lines = (tmp_path / "csv" / ("output_%d.csv" % (c + 1))).read_text().splitlines()
        rows = [l.split(",") for l in lines if l and not l.startswith("#")]
        header, rows = rows[0], rows[1:]
        assert header[:7] == ["lp__", "accept_stat__", "stepsize__", "treedepth__",
                              "n_leapfrog__", "divergent__", "energy__"]
        assert header[7] == "theta.1" and "tau" in header and header[-1] == "effect.8"
        assert len(rows) == 30
        got = np.array([[float(x) for x in row] for row in rows])
        np.testing.assert_array_equal(got[:, 7:17], r.draws["theta"][c])
        np.testing.assert_array_equal(got[:, header.index("tau")], r.draws["tau"][c])
        np.testing.assert_array_equal(got[:, 0], r.stats["lp__"][c])


def test_a_dense_metric_adapts_to_the_covariance():
    data = os.path.join(MODELS, "gaussian_dense.data.json")
    cov = np.array(json.load(open(data))["cov"])
    r = autobatch.sample(os.path.join(MODELS, "gaussian_dense.ab"), data=data, chains=4,
                         warmup=500, samples=500, seed=17, metric="dense")
    assert r.inv_metric.shape == (4, 3, 3)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.all(np.abs(r.inv_metric - cov) <= 0.4 * scale)
    mean = r["theta"].mean(axis=(0, 1))
    for k, m in enumerate([1.0, -2.0, 0.5]):
        assert abs(mean[k] - m) < 5 * r.summary[f"theta[{k}]"]["mcse"]
    assert r.max_depth_hits == 0
    # The same seed and metric give the same draws; the diagonal metric others.
    again = autobatch.sample(os.path.join(MODELS, "gaussian_dense.ab"), data=data, chains=4,
                             warmup=500, samples=500, seed=17, metric="dense")
    np.testing.assert_array_equal(r["theta"], again["theta"])
    diag = autobatch.sample(os.path.join(MODELS, "gaussian_dense.ab"), data=data, chains=4,
                            warmup=500, samples=500, seed=17)
    assert diag.inv_metric.shape == (4, 3)
    with pytest.raises(autobatch.InputError, match='metric must be "diag" or "dense"'):
        autobatch.sample(os.path.join(MODELS, "gaussian_dense.ab"), data=data, metric="unit")


def test_to_arviz_hands_arviz_the_posterior_the_statistics_and_the_settings(monkeypatch):
    # A stand-in for ArviZ's from_dict (ArviZ itself is tested below when
    # it is installed): what to_arviz passes it.
    import sys
    import types
    got = {}
    fake = types.ModuleType("arviz")
    fake.from_dict = lambda **kw: got.update(kw) or "inference data"
    monkeypatch.setitem(sys.modules, "arviz", fake)
    r = autobatch.sample(os.path.join(MODELS, "eight_schools.ab"),
                         data=os.path.join(MODELS, "eight_schools.data.json"),
                         chains=3, warmup=100, samples=40, seed=5)
    assert r.to_arviz() == "inference data"
    assert set(got["posterior"]) == {"theta", "mu", "tau", "effect"}
    assert got["posterior"]["effect"].shape == (3, 40, 8)
    stats = got["sample_stats"]
    assert set(stats) == {"lp", "acceptance_rate", "tree_depth", "n_steps", "diverging",
                          "energy", "step_size"}
    assert all(v.shape == (3, 40) for v in stats.values())
    assert stats["diverging"].dtype == bool
    np.testing.assert_array_equal(stats["step_size"][:, 0], r.step_size)
    np.testing.assert_array_equal(stats["lp"], r.stats["lp__"])
    attrs = got["attrs"]
    assert attrs["inference_library"] == "autobatch"
    assert attrs["num_chains"] == 3 and attrs["num_draws"] == 40
    assert attrs["num_warmup"] == 100 and attrs["seed"] == 5 and attrs["metric"] == "diag"


def test_to_arviz_without_arviz_says_so(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "arviz", None)  # import arviz raises ImportError
    r = autobatch.sample(os.path.join(MODELS, "eight_schools.ab"),
                         data=os.path.join(MODELS, "eight_schools.data.json"),
                         chains=2, warmup=50, samples=20, seed=5)
    with pytest.raises(ImportError, match="to_arviz needs ArviZ"):
        r.to_arviz()


def test_to_arviz_with_arviz_installed():
    az = pytest.importorskip("arviz")
    r = autobatch.sample(os.path.join(MODELS, "eight_schools.ab"),
                         data=os.path.join(MODELS, "eight_schools.data.json"),
                         chains=2, warmup=100, samples=50, seed=5)
    idata = r.to_arviz()
    assert isinstance(idata, az.InferenceData)
    assert idata.posterior["tau"].shape == (2, 50)
    assert idata.sample_stats["diverging"].dtype == bool
