"""autobatch.summary: the convergence summary of Markov chains' draws, against what the
formulas must give on draws whose answer is known, and its errors."""
import math

import numpy as np
import pytest

import autobatch


def ar1(rng, chains, draws, rho, shape=()):
    x = np.empty((chains, draws) + shape)
    x[:, 0] = rng.standard_normal((chains,) + shape)
    for i in range(1, draws):
        x[:, i] = rho * x[:, i - 1] + math.sqrt(1 - rho * rho) * rng.standard_normal(
            (chains,) + shape)
    return x


def test_rows_are_named_and_match_numpy():
    rng = np.random.default_rng(1)
    theta = ar1(rng, 4, 1000, 0.5, (2, 3))
    s = autobatch.summary({"theta": theta})
    assert (s.chains, s.draws) == (4, 1000)
    assert [r["name"] for r in s.rows][:4] == ["theta[0, 0]", "theta[0, 1]", "theta[0, 2]",
                                               "theta[1, 0]"]
    r = s["theta[1, 2]"]
    x = theta[:, :, 1, 2]
    assert r["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert r["sd"] == pytest.approx(x.std(ddof=1), rel=1e-12)
    assert r["q95"] == pytest.approx(np.quantile(x, 0.95), rel=1e-12)
    # AR(1) with rho = 0.5: an ESS near draws (1 - rho) / (1 + rho) = 1333
    assert 900 < r["ess_bulk"] < 1800
    assert r["rhat"] < 1.01
    assert s.warnings == []
    assert "theta[1, 2]" in str(s)


def test_a_stuck_chain_is_warned_about_and_skip_drops_warm_up():
    rng = np.random.default_rng(2)
    x = ar1(rng, 4, 500, 0.9)
    x[3] += 3.0
    s = autobatch.summary(x)
    assert s["x"]["rhat"] > 1.1
    assert any(w.startswith("R-hat above 1.01 for 1 of 1 quantities (x ") for w in s.warnings)
    t = autobatch.summary(x, skip=100)
    assert t.draws == 400
    assert t["x"]["mean"] == pytest.approx(x[:, 100:].mean(), rel=1e-12)


def test_constant_draws_have_no_rhat():
    s = autobatch.summary({"k": np.full((2, 40), 3, dtype=np.int64)})
    assert s["k"]["mean"] == 3.0
    assert math.isnan(s["k"]["rhat"])
    assert math.isnan(s["k"]["ess_bulk"])


def test_bad_draws_raise():
    with pytest.raises(autobatch.AutobatchError, match=r"draws must be shaped \[chains, draws"):
        autobatch.summary(np.zeros(10))
    with pytest.raises(autobatch.AutobatchError, match="where a has 2 chains of 5 draws"):
        autobatch.summary({"a": np.zeros((2, 5)), "b": np.zeros((3, 5))})
    with pytest.raises(autobatch.AutobatchError, match="no draws left"):
        autobatch.summary(np.zeros((2, 5)), skip=5)
