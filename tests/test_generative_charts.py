"""Charts of specificity and generalisation and of interval coverage, checked through their specs.

The plotted values must be bioxr.generative's numbers (and the Monte Carlo
band the binomial quantiles computed here by brute force); the simulator
of generative models and the sentences about them are checked too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.spatial.distance import cdist

from bioxr import generative, plot, simulate


@pytest.fixture(scope="module")
def clouds():
    return simulate.generative_models(n_training=60, n_synthetic=80, n_features=5, seed=7)


@pytest.fixture(scope="module")
def result(clouds):
    return generative.compare_models(clouds.training, clouds.synthetic, synthetic_dim="draw")


def _rows(spec) -> list[dict]:
    rows = [r for data in spec["datasets"].values() for r in data]
    return [r for r in rows if "measure" in r or "_lo" in r]


# ---------------------------------------------------------------- simulator and comparison ---


def test_simulator_is_seeded_and_the_poor_model_is_worse(clouds, result):
    again = simulate.generative_models(n_training=60, n_synthetic=80, n_features=5, seed=7)
    xr.testing.assert_identical(clouds, again)
    assert not np.array_equal(simulate.generative_models(n_training=60, n_synthetic=80, n_features=5, seed=8).training,
                              clouds.training)
    assert clouds.misregistration.values.tolist() == [0.0, 0.6]
    for var in ("G", "S"):
        good, poor = float(result[var].sel(model="good")), float(result[var].sel(model="poor"))
        sigma = float(np.hypot(result[f"sigma_{var}"].sel(model="good"), result[f"sigma_{var}"].sel(model="poor")))
        assert poor > good + 3 * sigma, var


@pytest.mark.parametrize("kwargs, match", [
    ({"misregistration": (0.0, -1.0)}, "misregistration"),
    ({"models": ("a",)}, "one distinct model name"),
    ({"n_training": 1}, "n_training"),
    ({"decay": 0.0}, "decay"),
])
def test_simulator_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate.generative_models(**kwargs)


def test_compare_models_is_each_model_alone_and_takes_a_mapping(clouds, result):
    by_name = {m: clouds.synthetic.sel(model=m).rename(draw="sample") for m in ("good", "poor")}
    mapped = generative.compare_models(clouds.training, by_name)
    for m, samples in by_name.items():
        alone = generative.specificity_generalisation(clouds.training, samples)
        for var in ("G", "sigma_G", "S", "sigma_S"):
            assert float(result[var].sel(model=m)) == float(alone[var]) == float(mapped[var].sel(model=m))
    assert result.misregistration.values.tolist() == [0.0, 0.6]  # coordinates on the model dim come along
    with pytest.raises(ValueError, match="no model dimension"):
        generative.compare_models(clouds.training, clouds.synthetic, dim="system", synthetic_dim="draw")


def test_describe_states_the_paired_difference_of_g_by_brute_force(clouds, result):
    x = clouds.training.values
    d = [cdist(x, clouds.synthetic.sel(model=m).values).min(axis=1) for m in ("good", "poor")]
    diff = d[1] - d[0]
    se = diff.std(ddof=0) / math.sqrt(diff.size - 1)
    assert generative.text._diff_se(result, "G", "model", "good", "poor") == (
        pytest.approx(se, rel=1e-12), "paired over the same 60 training samples")
    text = generative.describe(result)
    assert f"poor is higher by {generative.text._num(diff.mean())} ({diff.mean() / se:.1f} standard errors" in text
    assert "paired over the same 60 training samples" in text
    s_se = math.hypot(float(result.sigma_S.sel(model="good")), float(result.sigma_S.sel(model="poor")))
    s_diff = float(result.S.sel(model="poor") - result.S.sel(model="good"))
    assert f"({s_diff / s_se:.1f} standard errors of the difference, independent synthetic sets)" in text
    assert generative.describe(result, part="verdict") == "**good** is the better model on both counts, each difference at least 2 standard errors."
    assert "nan" not in text.lower()


def test_describe_says_when_models_trade_off_or_are_not_separated():
    fake = xr.Dataset({"G": ("model", [1.0, 2.0]), "sigma_G": ("model", [0.1, 0.1]),
                       "S": ("model", [2.0, 1.0]), "sigma_S": ("model", [0.1, 0.1]),
                       "n_training": ("model", [50, 50]), "n_synthetic": ("model", [50, 50])},
                      coords={"model": ["A", "B"]})
    assert "No model is best on both counts: **A** comes closest" in generative.describe(fake)
    close = fake.assign(S=("model", [1.0, 1.1]))
    assert "these samples do not separate" in generative.describe(close, part="verdict")


# ---------------------------------------------------------------- the chart ---


def test_chart_draws_the_library_numbers_with_their_standard_errors(result):
    spec = plot.generative_chart(result).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "point", "text"]
    rows = {(r["model"], r["measure"]): r for r in _rows(spec)}
    assert len(rows) == 4
    for m in ("good", "poor"):
        for var, name in (("G", "generalisation G"), ("S", "specificity S")):
            r = rows[(m, name)]
            value, sigma = float(result[var].sel(model=m)), float(result[f"sigma_{var}"].sel(model=m))
            assert r["value"] == value and r["sigma"] == sigma
            assert r["lower"] == pytest.approx(value - sigma, abs=1e-15)
            assert r["upper"] == pytest.approx(value + sigma, abs=1e-15)
    domain = spec["layer"][1]["encoding"]["x"]["scale"]["domain"]
    lows = [r["lower"] for r in rows.values()]
    highs = [r["upper"] for r in rows.values()]
    assert min(lows) - 0.2 * (max(highs) - min(lows)) < domain[0] < min(lows) < max(highs) < domain[1]
    assert "60 training samples; 80 synthetic samples per model" in spec["title"]["subtitle"]


def test_chart_bars_scale_with_se_and_follow_a_numeric_dimension():
    sizes = [20, 40, 160]
    runs = []
    for n in sizes:
        c = simulate.generative_models(n_training=n, n_synthetic=40, n_features=3, seed=n)
        runs.append(generative.specificity_generalisation(c.training, c.synthetic.sel(model="good").rename(draw="sample")))
    keep = ["G", "sigma_G", "S", "sigma_S", "n_training", "n_synthetic"]
    along = xr.concat([r[keep] for r in runs], dim=pd.Index(sizes, name="n_training_size"), combine_attrs="override")
    spec = plot.generative_chart(along, se=2).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "rule", "point"]
    x = spec["layer"][0]["encoding"]["x"]
    assert x["type"] == "quantitative" and x["scale"]["type"] == "log" and x["axis"]["values"] == sizes
    rows = [r for r in _rows(spec) if r["measure"] == "generalisation G"]
    assert [r["position"] for r in rows] == sizes
    for r, run in zip(rows, runs):
        assert r["lower"] == pytest.approx(float(run.G) - 2 * float(run.sigma_G), abs=1e-15)
    assert "Bars: ± 2 standard errors; lower is better" in spec["title"]["subtitle"]


def test_chart_errors_name_the_result_it_expects(result):
    with pytest.raises(TypeError, match="compare_models"):
        plot.generative_chart(xr.Dataset({"eer": 0.1}))
    with pytest.raises(ValueError, match="one dimension of models"):
        plot.generative_chart(result.expand_dims(run=[0, 1]))
    with pytest.raises(ValueError, match="se must be"):
        plot.generative_chart(result, se=0)


# ---------------------------------------------------------------- coverage ---


def _binomial_band(level, n, band=0.95):
    """Central quantiles of Binomial(n, level) by summing the probabilities."""
    pmf = [math.comb(n, k) * level**k * (1 - level) ** (n - k) for k in range(n + 1)]
    cdf = np.cumsum(pmf)
    tail = (1 - band) / 2
    lo = int(np.searchsorted(cdf, tail - 1e-12))
    hi = int(np.searchsorted(cdf, 1 - tail - 1e-12))
    return lo / n, hi / n


@pytest.mark.parametrize("level, n", [(0.95, 400), (0.9, 150), (0.8, 1000)])
def test_monte_carlo_band_is_the_binomial_quantiles(level, n):
    assert plot.coverage.monte_carlo_band(level, n) == pytest.approx(_binomial_band(level, n), abs=1e-12)


def test_coverage_chart_draws_the_band_the_level_and_flags_misses():
    table = pd.DataFrame({"rho": [0.0, 0.0, 0.3, 0.3, 0.0, 0.0, 0.3, 0.3], "m": [5] * 4 + [20] * 4,
                          "design": ["binomial", "icc"] * 4,
                          "coverage": [0.951, 0.949, 0.80, 0.945, 0.96, 0.95, 0.55, 0.99]})
    spec = plot.coverage_chart(table, x="rho", method="design", column="m", level=0.95, n_replicates=400).to_dict()
    assert [layer["mark"]["type"] for layer in spec["spec"]["layer"]] == ["rect", "rule", "point"]
    assert spec["facet"]["column"]["field"] == "m"
    lo, hi = _binomial_band(0.95, 400)
    rows = _rows(spec)
    assert {(round(r["_lo"], 12), round(r["_hi"], 12), r["_level"]) for r in rows} == {(round(lo, 12), round(hi, 12), 0.95)}
    outside = [r["coverage"] for r in rows if r["_outside"] == "outside the band"]
    assert sorted(outside) == sorted(c for c in table.coverage if not lo <= c <= hi)
    assert 0.99 in outside and 0.55 in outside and 0.951 not in outside
    layer = spec["spec"]["layer"]
    assert layer[0]["encoding"]["y"]["field"] == "_lo" and layer[0]["encoding"]["y"]["aggregate"] == "min"
    assert "400 simulated experiments per cell" in " ".join(spec["title"]["subtitle"])


def test_coverage_chart_refuses_percentages_and_missing_columns():
    table = pd.DataFrame({"rho": [0.0], "design": ["icc"], "coverage %": [95.1]})
    with pytest.raises(ValueError, match="divide percentages by 100"):
        plot.coverage_chart(table, x="rho", method="design", coverage="coverage %", n_replicates=100)
    with pytest.raises(ValueError, match="no column"):
        plot.coverage_chart(table, x="m", method="design", coverage="coverage %", n_replicates=100)
