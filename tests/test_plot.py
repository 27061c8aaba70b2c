"""Charts checked through ``chart.to_dict()``: marks, encodings, data, transforms."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import ndtr
from scipy.spatial import cKDTree

import bioxr
from bioxr import plot


def _layers(spec: dict) -> list[dict]:
    return spec["layer"] if "layer" in spec else [spec]


def _data(spec: dict, layer: dict) -> list[dict]:
    """Rows of a layer's inline dataset (Altair moves them to spec['datasets'])."""
    name = layer.get("data", spec.get("data", {})).get("name")
    return spec["datasets"][name]


def _all_datasets(spec: dict) -> dict:
    return spec.get("datasets", {})


@pytest.fixture(scope="module")
def gauss():
    cube = bioxr.simulate.gaussian(n_subjects=80, n_samples=2, groups={"A": 0.0, "B": -1.0}, seed=11)
    return cube, bioxr.verification.det_curve(cube), bioxr.verification.eer(cube)


@pytest.fixture(scope="module")
def million():
    """A DET curve from 1e6 scores (1000 x 1000), every distinct score a threshold."""
    cube = bioxr.simulate.gaussian(n_subjects=1000, n_samples=1, seed=5)
    det = bioxr.verification.det_curve(cube, points="all")
    assert det.sizes["threshold"] > 500_000
    return cube, det


def _toy_det(fmr, fnmr):
    t = np.arange(len(fmr), dtype=float)
    return xr.Dataset(
        {"fmr": ("threshold", np.asarray(fmr, float)), "fnmr": ("threshold", np.asarray(fnmr, float)),
         "n_mated": 100, "n_nonmated": 1000},
        coords={"threshold": t},
    )


# ------------------------------------------------------------ probit ------


def test_probit_known_points():
    assert plot.probit(0.5) == 0.0
    assert plot.probit(0.02275) == pytest.approx(-2.0, abs=1e-3)
    assert plot.probit(1 - 0.02275) == pytest.approx(2.0, abs=1e-3)
    assert plot.probit(0.001) == pytest.approx(-3.0902, abs=1e-4)
    assert np.isneginf(plot.probit(0.0)) and np.isposinf(plot.probit(1.0))


def test_det_chart_transforms_data_to_normal_deviates():
    det = _toy_det([1.0, 0.5, 0.02275, 0.001, 0.0], [0.0, 0.02275, 0.5, 0.9, 1.0])
    spec = plot.det_chart(det).to_dict()
    curve = next(layer for layer in _layers(spec) if layer["mark"]["type"] == "line" and "color" in layer["encoding"])
    rows = _data(spec, curve)
    xy = sorted((round(r["x"], 3), round(r["y"], 3)) for r in rows)
    assert (0.0, -2.0) in xy and (-2.0, 0.0) in xy
    assert (-3.09, 1.282) in xy
    # the two end points (rates of 0 or 1) lie at infinity: dropped, and the description (not the subtitle) says so
    assert len(rows) == 3
    assert "2 points of the curve have FMR or FNMR at 0% or 100%" in spec["description"]
    assert "point(s)" not in " ".join(spec["title"]["subtitle"])


def test_det_axes_are_probit_with_percent_ticks(gauss):
    _, det, eer = gauss
    spec = plot.det_chart(det, eer=eer).to_dict()
    curve = _layers(spec)[1]
    for channel in ("x", "y"):
        enc = curve["encoding"][channel]
        assert enc["field"] == channel and enc["type"] == "quantitative"
        axis = enc["axis"]
        values = axis["values"]
        assert len(values) >= 3
        # every tick value is the probit of a round percentage, and labelExpr names it in percent
        for z in values:
            p = float(ndtr(z))
            label = f"'{np.format_float_positional(float(f'{p * 100:.3g}'), trim='-')}'"
            assert label in axis["labelExpr"]
        assert "in %" in axis["title"]  # percent, as on the classic DET plots
        lo, hi = enc["scale"]["domain"]
        assert lo < min(values) + 1e-6 and max(values) - 1e-6 < hi
    assert curve["encoding"]["x"]["axis"]["title"] == "False match rate (FMR, in %)"
    assert curve["encoding"]["y"]["axis"]["title"] == "False non-match rate (FNMR, in %)"


def test_det_chart_marks_eer_with_its_convention(gauss):
    _, det, eer = gauss
    spec = plot.det_chart(det, eer=eer).to_dict()
    marks = [layer["mark"]["type"] for layer in _layers(spec)]
    assert marks == ["line", "line", "point", "text"]
    point, text = _layers(spec)[2], _layers(spec)[3]
    row = _data(spec, point)[0]
    assert row["eer"] == pytest.approx(float(eer.eer))
    assert row["x"] == pytest.approx(float(plot.probit(float(eer.eer))))
    assert row["x"] == row["y"]
    # a large black diamond, not in the curve's colour, its label placed off the point (below-left, inside the curve)
    assert point["mark"]["shape"] == "diamond" and point["mark"]["color"] == "black"
    assert point["mark"]["size"] >= 150 and "color" not in point["encoding"]
    placed = _data(spec, text)[0]
    assert text["mark"]["align"] == "right" and placed["x"] < row["x"] and placed["y"] < row["y"]
    label = placed["label"]
    assert eer.attrs["eer_method"] in label and f"{float(eer.eer):.2%}" in label
    assert "EER convention: rocch" in " ".join(spec["title"]["subtitle"])


def test_det_chart_colours_kept_dims(gauss):
    cube, _, _ = gauss
    det = xr.concat(
        [bioxr.verification.det_curve(g) for _, g in cube.groupby("group")],
        dim=pd.Index(["A", "B"], name="group"), join="outer",
    )
    eer = xr.concat([bioxr.verification.eer(g) for _, g in cube.groupby("group")], dim=pd.Index(["A", "B"], name="group"))
    spec = plot.det_chart(det, eer=eer).to_dict()
    curve = _layers(spec)[1]
    assert curve["encoding"]["color"]["field"] == "group"
    assert curve["encoding"]["color"]["type"] == "nominal"
    assert {r["group"] for r in _data(spec, curve)} == {"A", "B"}
    assert {r["group"] for r in _data(spec, _layers(spec)[2])} == {"A", "B"}


def test_det_chart_loglog_option(gauss):
    _, det, eer = gauss
    spec = plot.det_chart(det, eer=eer, axes="loglog").to_dict()
    curve = _layers(spec)[1]
    assert curve["encoding"]["x"]["scale"]["type"] == "log"
    assert curve["encoding"]["y"]["scale"]["type"] == "log"
    assert all(r["x"] > 0 and r["y"] > 0 for r in _data(spec, curve))


def test_det_chart_rejects_bad_input(gauss):
    _, det, eer = gauss
    with pytest.raises(ValueError, match="axes="):
        plot.det_chart(det, axes="probability")
    with pytest.raises(TypeError, match="det_curve"):
        plot.det_chart(det.fmr)
    with pytest.raises(ValueError, match="limits"):
        plot.det_chart(det, limits=(0.5, 0.1))


# ------------------------------------------------------------ thinning ----


def test_dense_curves_are_thinned_under_altairs_limit(million):
    _, det = million
    charts = {
        "det": plot.det_chart(det),
        "loglog": plot.det_chart(det, axes="loglog"),
        "roc": plot.roc_chart(det),
        "rates": plot.rates_chart(det),
    }
    for name, chart in charts.items():
        spec = chart.to_dict()  # Altair raises MaxRowsError above 5,000 rows
        sizes = [len(rows) for rows in _all_datasets(spec).values()]
        assert max(sizes) <= 5000, name
        assert max(sizes) > 200, name  # thinned, not emptied
        assert "is drawn through" in spec["description"], name  # said in the description, not the subtitle
        assert "thinned" not in " ".join(spec["title"]["subtitle"]), name


def test_thin_keeps_the_shape_and_the_end_points():
    rng = np.random.default_rng(0)
    n = 200_000
    # a monotone staircase like a DET curve
    x = np.sort(rng.random(n))[::-1]
    y = np.sort(rng.random(n))
    frame = pd.DataFrame({"x": x, "y": y})
    thin = plot._thin(frame, "x", "y", max_points=2000, domain=((0.0, 1.0), (0.0, 1.0)))
    assert len(thin) <= 2000
    assert thin.index[0] == 0 and thin.index[-1] == n - 1
    assert thin.index.is_monotonic_increasing
    # every dropped point is within one grid cell (1/500 of the axes) of a kept one
    dist, _ = cKDTree(thin[["x", "y"]].to_numpy()).query(frame[["x", "y"]].to_numpy())
    assert dist.max() <= np.sqrt(2) / 500 + 1e-12


def test_thin_leaves_short_curves_alone():
    frame = pd.DataFrame({"x": np.arange(50.0), "y": np.arange(50.0), "s": ["a"] * 25 + ["b"] * 25})
    assert len(plot._thin(frame, "x", "y", by="s")) == 50


# ------------------------------------------------------------ other charts


def test_roc_chart_encodings(gauss):
    _, det, _ = gauss
    roc = bioxr.verification.roc_curve(gauss[0])
    spec = plot.roc_chart(roc).to_dict()
    (line,) = _layers(spec)  # a layer chart, with a band layer under the curve when band= is given
    assert line["mark"]["type"] == "line"
    assert line["encoding"]["x"]["field"] == "fmr" and line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["y"]["field"] == "tmr"
    rows = _data(spec, line)
    assert all(r["fmr"] > 0 for r in rows)
    lin = plot.roc_chart(roc, xscale="linear").to_dict()
    assert "type" not in _layers(lin)[0]["encoding"]["x"]["scale"]


def test_rates_chart_encodings(gauss):
    _, det, eer = gauss
    spec = plot.rates_chart(det, eer=eer).to_dict()
    lines, rule, text = _layers(spec)
    assert lines["mark"]["type"] == "line" and rule["mark"]["type"] == "rule" and text["mark"]["type"] == "text"
    assert lines["encoding"]["x"]["field"] == "threshold"
    assert lines["encoding"]["y"]["field"] == "value"
    assert lines["encoding"]["color"]["field"] == "rate"
    rows = _data(spec, lines)
    assert {r["rate"] for r in rows} == {"FMR", "FNMR"}
    assert all(r["threshold"] is not None and np.isfinite(r["threshold"]) for r in rows)
    assert _data(spec, rule)[0]["threshold"] == pytest.approx(float(eer.threshold))


def test_rates_chart_steps_follow_the_decision_rule(gauss):
    cube, _, _ = gauss
    exact = plot.rates_chart(bioxr.verification.det_curve(cube, points="all")).to_dict()
    assert _layers(exact)[0]["mark"]["interpolate"] == "step-before"  # s >= t: the rate at t_i holds left of t_i
    distance = (-cube).assign_attrs(cube.attrs, score_kind="distance")
    spec = plot.rates_chart(bioxr.verification.det_curve(distance, points="all")).to_dict()
    assert _layers(spec)[0]["mark"]["interpolate"] == "step-after"
    corners = plot.rates_chart(bioxr.verification.det_curve(cube, points="corners")).to_dict()
    assert _layers(corners)[0]["mark"]["interpolate"] == "linear"
    assert "Only the DET corners are known" in " ".join(corners["title"]["subtitle"])


def test_score_histogram_densities_and_threshold(gauss):
    cube, _, eer = gauss
    t = float(eer.threshold)
    spec = plot.score_histogram(cube, threshold={"EER": t}, bins=30).to_dict()
    bars, rule, text = _layers(spec)
    assert bars["mark"]["type"] == "rect" and rule["mark"]["type"] == "rule" and text["mark"]["type"] == "text"
    assert bars["encoding"]["color"]["field"] == "comparison"
    frame = pd.DataFrame(_data(spec, bars))
    assert set(frame.comparison) == {"mated", "non-mated"}
    for _, part in frame.groupby("comparison"):
        assert len(part) == 30
        assert float((part.density * (part.end - part.start)).sum()) == pytest.approx(1.0)
    mated = bioxr.cube.mated_mask(cube) & bioxr.cube.compared_mask(cube)
    assert int(frame[frame.comparison == "mated"]["count"].sum()) == int(mated.sum())
    assert _data(spec, rule)[0]["threshold"] == pytest.approx(t)
    assert "EER" in _data(spec, text)[0]["label"]


def test_score_histogram_skips_infinite_thresholds(gauss):
    spec = plot.score_histogram(gauss[0], threshold={"never": np.inf, "t": 1.0}).to_dict()
    rule = _layers(spec)[1]
    assert [r["threshold"] for r in _data(spec, rule)] == [1.0]


# ------------------------------------------------------------ output ------


def test_render_svg_and_png(tmp_path, gauss):
    _, det, eer = gauss
    chart = plot.det_chart(det, eer=eer)
    svg = plot.render_svg(chart)
    assert svg.startswith("<svg") and "role-mark" in svg and "False match rate" in svg
    png = plot.save_png(chart, tmp_path / "det.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.save_svg(chart, tmp_path / "det.svg").read_text().startswith("<svg")


def test_to_html_embeds_the_bundle_once_and_escapes_data(gauss):
    _, det, eer = gauss
    evil = pd.DataFrame({"x": [1.0, 2.0], "who": ["</script><script>alert(1)</script>", "ok"]})
    import altair as alt

    charts = {"DET": plot.det_chart(det, eer=eer), "<evil>": alt.Chart(evil).mark_point().encode(x="x:Q", tooltip="who:N")}
    page = plot.to_html(charts, title="two charts")
    assert page.count("window.vegaEmbed=") == 1  # the bundle, once
    assert len(re.findall(r"vegaEmbed\(\"#bioxr-chart-\d\"", page)) == 2
    assert "<script>alert(1)</script>" not in page
    assert "&lt;evil&gt;" in page
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=[\"']?https?:", page)
    assert not re.search(r"<link[^>]*\shref=[\"']?https?:", page)
    # the specs embedded are valid JSON
    spec_text = re.search(r"vegaEmbed\(\"#bioxr-chart-0\", (\{.*?\}), \{\"actions\"", page, re.S).group(1)
    assert json.loads(spec_text.replace("<\\/", "</"))["layer"]


# ------------------------------------------------------------ identification


@pytest.fixture(scope="module")
def searches():
    cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=2, groups={"A": 0.0, "B": -1.5}, mated_mean=2.0, seed=8)
    return cube, bioxr.outcomes.outcomes(cube)


def test_cmc_chart_draws_the_rates_and_marks_rank_one(searches):
    _, out = searches
    cmc = bioxr.identification.cmc_curve(out)
    spec = plot.cmc_chart(cmc, max_rank=10).to_dict()
    line, points, first, label = _layers(spec)
    assert [line["mark"]["type"], points["mark"]["type"], first["mark"]["type"], label["mark"]["type"]] == \
        ["line", "point", "point", "text"]
    assert line["encoding"]["x"]["field"] == "rank" and line["encoding"]["y"]["field"] == "cmc"
    assert line["encoding"]["y"]["scale"]["domain"][1] == 1
    rows = _data(spec, line)
    assert [r["rank"] for r in rows] == list(range(1, 11))
    assert [r["cmc"] for r in rows] == pytest.approx(cmc.cmc.sel(rank=slice(1, 10)).values.tolist())
    rank1 = float(cmc.cmc.sel(rank=1))
    assert _data(spec, first)[0]["cmc"] == pytest.approx(rank1)
    assert _data(spec, label)[0]["label"] == f"rank 1: {rank1:.2%}"
    subtitle = " ".join(spec["title"]["subtitle"])
    assert f"{int(cmc.n_probes):,} closed-set searches" in subtitle and "Annex F" in subtitle


def test_cmc_chart_colours_kept_dims_and_uses_a_log_rank_axis_when_long(searches):
    _, out = searches
    cmc = bioxr.identification.cmc_curve(out)
    by_group = xr.concat([bioxr.identification.cmc_curve(g, max_rank=60) for _, g in out.groupby("group")],
                         dim=pd.Index(["A", "B"], name="group"))
    spec = plot.cmc_chart(by_group).to_dict()
    line, points = _layers(spec)[:2]
    assert line["encoding"]["color"]["field"] == "group"
    assert {r["group"] for r in _data(spec, line)} == {"A", "B"}
    assert line["encoding"]["x"]["scale"]["type"] == "log", "60 ranks: log axis"
    assert len(_data(spec, points)) == 120  # a point per rank up to 60 ranks a curve
    assert len(_data(spec, _layers(spec)[2])) == 2  # rank 1 of each group
    lin = plot.cmc_chart(cmc, xscale="linear").to_dict()
    assert "type" not in _layers(lin)[0]["encoding"]["x"]["scale"]
    with pytest.raises(ValueError, match="xscale"):
        plot.cmc_chart(cmc, xscale="probit")
    with pytest.raises(TypeError, match="cmc_curve"):
        plot.cmc_chart(out)
    with pytest.raises(ValueError, match="'rank' dimension"):
        plot.cmc_chart(bioxr.identification.identification_rate(out, 1))


def test_open_set_chart_is_fnir_against_fpir_on_probit_axes(searches):
    cube, _ = searches
    curve = bioxr.identification.open_set_curve(cube, impostors="all")
    spec = plot.open_set_chart(curve).to_dict()
    (line,) = _layers(spec)
    enc = line["encoding"]
    assert enc["x"]["axis"]["title"] == "False positive identification rate (FPIR, in %)"
    assert enc["y"]["axis"]["title"] == "False negative identification rate (FNIR, in %)"
    rows = _data(spec, line)
    assert all(0 < r["fpir"] < 1 and 0 < r["fnir"] < 1 for r in rows)
    for r in rows[:50]:
        assert r["x"] == pytest.approx(float(plot.probit(r["fpir"])))
        assert r["y"] == pytest.approx(float(plot.probit(r["fnir"])))
    # every drawn point is a point of the curve
    exact = {(round(a, 12), round(b, 12)) for a, b in zip(curve.fpir.values, curve.fnir.values)}
    assert all((round(r["fpir"], 12), round(r["fnir"], 12)) in exact for r in rows)
    # the y range is fitted to the curve: FNIR cannot fall below the rank-1 miss rate
    ylo, yhi = enc["y"]["scale"]["domain"]
    assert min(r["y"] for r in rows) >= ylo - 1e-9 and ylo > float(plot.probit(1e-3))
    subtitle = " ".join(spec["title"]["subtitle"])
    assert f"{int(curve.n_impostor_probes):,} impostor searches" in subtitle
    assert "every probe, with its own mates left out" in subtitle and "rank 1" in subtitle
    loglog = plot.open_set_chart(curve, axes="loglog").to_dict()
    assert _layers(loglog)[0]["encoding"]["x"]["scale"]["type"] == "log"
    with pytest.raises(ValueError, match="axes="):
        plot.open_set_chart(curve, axes="linear")


def test_identification_charts_render_to_png(tmp_path, searches):
    cube, out = searches
    cmc = plot.save_png(plot.cmc_chart(bioxr.identification.cmc_curve(out), max_rank=20), tmp_path / "cmc.png")
    ops = plot.save_png(plot.open_set_chart(bioxr.identification.open_set_curve(out, impostors="all")), tmp_path / "o.png")
    for path in (cmc, ops):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------ bands -------


def _toy_band(fmr, fnmr, score_kind="similarity"):
    return xr.Dataset(
        {"fmr_interval": (("threshold", "bound"), np.asarray(fmr, float)),
         "fnmr_interval": (("threshold", "bound"), np.asarray(fnmr, float))},
        coords={"threshold": np.arange(len(fmr), dtype=float), "bound": ["lower", "upper"]},
        attrs={"level": 0.9, "unit": "subject", "interval": "percentile", "n_replicates": 300, "two_level": 0,
               "score_kind": score_kind},
    )


@pytest.fixture(scope="module")
def gauss_band(gauss):
    cube, _, _ = gauss
    return bioxr.bootstrap.bootstrap_curve(cube, n_replicates=200, seed=1)


def test_det_band_is_the_union_of_the_interval_rectangles():
    # three thresholds: (FMR interval) x (FNMR interval) rectangles stepping up and left
    band = _toy_band([[0.5, 0.7], [0.2, 0.4], [0.05, 0.1]], [[0.01, 0.03], [0.05, 0.1], [0.2, 0.3]])
    det = _toy_det([0.6, 0.3, 0.08], [0.02, 0.07, 0.25])
    spec = plot.det_chart(det, band=band, limits=(0.001, 0.9)).to_dict()
    shade = _layers(spec)[1]
    assert shade["mark"]["type"] == "line" and shade["mark"]["strokeWidth"] == 0 and shade["mark"]["fillOpacity"] > 0
    assert shade["encoding"]["order"]["field"] == "order"  # drawn in polygon order, not sorted by x
    rows = sorted(_data(spec, shade), key=lambda r: r["order"])
    corners = [(r["fmr"], r["fnmr"]) for r in rows]
    assert corners == [(0.7, 0.01), (0.7, 0.03), (0.4, 0.03), (0.4, 0.1), (0.1, 0.1), (0.1, 0.3),  # up and left
                       (0.05, 0.3), (0.05, 0.2), (0.2, 0.2), (0.2, 0.05), (0.5, 0.05), (0.5, 0.01),  # down and right
                       (0.7, 0.01)]
    for r in rows:  # on the probit axes of the curve
        assert r["x"] == pytest.approx(float(plot.probit(r["fmr"]))) and r["y"] == pytest.approx(float(plot.probit(r["fnmr"])))
    subtitle = spec["title"]["subtitle"]
    assert subtitle[-2] == "Band: 90% pointwise interval of FMR and FNMR at each threshold (percentile)"
    assert subtitle[-1] == "Subject bootstrap: whole subjects resampled, 300 replicates"
    # distance scores: thresholds run the other way, the same polygon
    flipped = _toy_band([[0.05, 0.1], [0.2, 0.4], [0.5, 0.7]], [[0.2, 0.3], [0.05, 0.1], [0.01, 0.03]], "distance")
    spec = plot.det_chart(det, band=flipped, limits=(0.001, 0.9)).to_dict()
    rows = sorted(_data(spec, _layers(spec)[1]), key=lambda r: r["order"])
    assert [(r["fmr"], r["fnmr"]) for r in rows] == corners


def test_det_chart_band_from_the_subject_bootstrap(gauss, gauss_band):
    cube, det, eer = gauss
    spec = plot.det_chart(det, eer=eer, band=gauss_band).to_dict()
    assert [layer["mark"]["type"] for layer in _layers(spec)] == ["line", "line", "line", "point", "text"]
    shade, curve = _layers(spec)[1], _layers(spec)[2]
    assert shade["encoding"]["x"]["scale"] == curve["encoding"]["x"]["scale"]
    rows = _data(spec, shade)
    lo, hi = gauss_band.fmr_interval.min(), gauss_band.fmr_interval.max()
    assert all(float(lo) - 1e-12 <= r["fmr"] <= float(hi) + 1e-12 for r in rows)
    assert all(np.isfinite(r["x"]) and np.isfinite(r["y"]) for r in rows), "rates of 0 and 1 are clipped, not infinite"
    assert "200 replicates" in spec["title"]["subtitle"][-1]
    loglog = plot.det_chart(det, band=gauss_band, axes="loglog").to_dict()
    assert all(r["fmr"] > 0 and r["fnmr"] > 0 for r in _data(loglog, _layers(loglog)[1]))
    with pytest.raises(TypeError, match="band="):
        plot.det_chart(det, band=gauss_band.fmr_interval)
    with pytest.raises(ValueError, match="lacks"):
        plot.det_chart(det, band=gauss_band.drop_vars("fnmr_interval"))


def test_det_band_per_kept_dim_shares_the_curve_colours(gauss):
    cube, _, _ = gauss
    groups = pd.Index(["A", "B"], name="group")
    det = xr.concat([bioxr.verification.det_curve(g) for _, g in cube.groupby("group")], dim=groups, join="outer")
    band = xr.concat([bioxr.bootstrap.bootstrap_curve(g, n_replicates=100, seed=2, thresholds=np.linspace(-3, 5, 60))
                      for _, g in cube.groupby("group")], dim=groups)
    spec = plot.det_chart(det, band=band).to_dict()
    shade, curve = _layers(spec)[1], _layers(spec)[2]
    assert shade["encoding"]["fill"]["field"] == "group" and shade["encoding"]["fill"]["scale"]["domain"] == ["A", "B"]
    assert shade["encoding"]["fill"]["scale"]["scheme"] == curve["encoding"]["color"]["scale"]["scheme"]
    assert {r["group"] for r in _data(spec, shade)} == {"A", "B"}
    with pytest.raises(ValueError, match="same dims"):
        plot.det_chart(det.isel(group=0), band=band)


def test_roc_chart_band_is_drawn_in_tmr(gauss, gauss_band):
    cube, det, _ = gauss
    spec = plot.roc_chart(det, band=gauss_band).to_dict()
    shade, curve = _layers(spec)
    assert shade["mark"]["type"] == "line" and shade["encoding"]["fill"]["value"]
    assert shade["encoding"]["y"]["field"] == curve["encoding"]["y"]["field"] == "tmr"
    rows = _data(spec, shade)
    assert all(r["tmr"] == pytest.approx(1 - r["fnmr"], abs=1e-9) or r["tmr"] in (1e-12, 1 - 1e-12) for r in rows)
    assert all(r["fmr"] > 0 for r in rows), "FMR 0 is moved just off the log axis"
    assert "interval of FMR and TMR at each threshold" in " ".join(spec["title"]["subtitle"])


def test_cmc_chart_band_from_per_subject_counts(searches):
    _, out = searches
    cmc = bioxr.identification.cmc_curve(out)
    ranks = cmc["rank"].sel(rank=slice(1, 10))
    found = ((ranks - out.mated_rank_min + 1) / (out.mated_rank_max - out.mated_rank_min + 1)).clip(0, 1)
    per_subject = xr.Dataset({"found": found.fillna(0), "searches": out.mated_rank_min.notnull()}) \
        .stack(search=list(out.mated_rank_min.dims)).groupby("subject").sum()
    band = bioxr.bootstrap.bootstrap_rate_interval(per_subject.found, per_subject.searches, dim="subject",
                                                   n_replicates=300, seed=0)
    np.testing.assert_allclose(band.rate.values, cmc.cmc.sel(rank=slice(1, 10)).values)  # the same rates
    spec = plot.cmc_chart(cmc, band=band, max_rank=10).to_dict()
    shade, line = _layers(spec)[:2]
    assert shade["mark"]["type"] == "area" and line["mark"]["type"] == "line"
    assert shade["encoding"]["y"]["field"] == "lower" and shade["encoding"]["y2"]["field"] == "upper"
    rows = _data(spec, shade)
    assert [r["rank"] for r in rows] == list(range(1, 11))
    assert [r["lower"] for r in rows] == pytest.approx(band.rate_interval.sel(bound="lower").values.tolist())
    assert min(r["lower"] for r in rows) >= line["encoding"]["y"]["scale"]["domain"][0]
    lo, hi = band.rate_interval.sel(rank=1).values
    assert _data(spec, _layers(spec)[4])[0]["label"] == f"rank 1: {float(cmc.cmc.sel(rank=1)):.2%} ({lo:.1%} to {hi:.1%})"
    assert spec["title"]["subtitle"][-1] == "Subject bootstrap: whole subjects resampled, 300 replicates"
    with pytest.raises(ValueError, match="rank"):
        plot.cmc_chart(cmc, band=band.rename(rank="position"))


# ------------------------------------------------------------ simultaneous bands


_SIM_LABEL, _PW_LABEL = "95% simultaneous band", "95% pointwise band"


def _sim_attrs(c=3.1, level=0.95):
    return {"band": "simultaneous (max-modulus, studentised on the probit scale)", "level": level,
            "critical_value": c, "pointwise_z": 1.959964}


@pytest.fixture(scope="module")
def gauss_both(gauss, gauss_band):
    """The pointwise band of gauss_band with the joint simultaneous band of the same replicates beside it."""
    cube, _, _ = gauss
    reps = bioxr.bootstrap.bootstrap_replicates(cube, n_replicates=200, seed=1)  # gauss_band's replicates
    rate = pd.Index(["fmr", "fnmr"], name="rate")
    sim = bioxr._core.simultaneous_band(
        xr.concat([reps.fmr, reps.fnmr], dim=rate), xr.concat([reps.fmr_point, reps.fnmr_point], dim=rate),
        level=0.95, along=("rate", "threshold"),
        floor=xr.concat([gauss_band.fmr_interval, gauss_band.fnmr_interval], dim=rate))
    return gauss_band.assign(fmr_band=sim.sel(rate="fmr", drop=True), fnmr_band=sim.sel(rate="fnmr", drop=True))


def test_det_chart_draws_the_simultaneous_band_from_its_own_variables():
    # the toy rectangles of the pointwise test as the simultaneous band; a narrower pointwise band inside
    sim = _toy_band([[0.5, 0.7], [0.2, 0.4], [0.05, 0.1]], [[0.01, 0.03], [0.05, 0.1], [0.2, 0.3]])
    pointwise = _toy_band([[0.55, 0.65], [0.25, 0.35], [0.06, 0.09]], [[0.015, 0.025], [0.06, 0.09], [0.22, 0.28]])
    band = pointwise.assign(fmr_band=sim.fmr_interval.assign_attrs(_sim_attrs(level=0.95)),
                            fnmr_band=sim.fnmr_interval.assign_attrs(_sim_attrs(level=0.95)))
    det = _toy_det([0.6, 0.3, 0.08], [0.02, 0.07, 0.25])
    spec = plot.det_chart(det, band=band, limits=(0.001, 0.9)).to_dict()
    shade = _layers(spec)[1]
    rows = sorted(_data(spec, shade), key=lambda r: r["order"])
    labels = ["95% simultaneous band", "90% pointwise band"]  # each kind's own level
    assert [r["band"] for r in rows[:13]] == [labels[0]] * 13 and {r["band"] for r in rows[13:]} == {labels[1]}
    assert [(r["fmr"], r["fnmr"]) for r in rows[:13]] == [
        (0.7, 0.01), (0.7, 0.03), (0.4, 0.03), (0.4, 0.1), (0.1, 0.1), (0.1, 0.3), (0.05, 0.3), (0.05, 0.2),
        (0.2, 0.2), (0.2, 0.05), (0.5, 0.05), (0.5, 0.01), (0.7, 0.01)]
    assert min(r["fmr"] for r in rows[13:]) == 0.06 and max(r["fmr"] for r in rows[13:]) == 0.65
    # one polygon per kind, told apart by opacity, with a legend naming each
    detail = shade["encoding"]["detail"]
    assert [d["field"] for d in (detail if isinstance(detail, list) else [detail])] == ["band"]
    opacity = shade["encoding"]["opacity"]
    assert opacity["field"] == "band" and opacity["scale"]["domain"] == labels
    low, high = opacity["scale"]["range"]
    assert 0 < low < high <= 0.3 and shade["mark"]["fillOpacity"] == 1
    assert opacity["legend"]["title"] is None
    subtitle = " ".join(spec["title"]["subtitle"])
    assert subtitle.endswith(
        "Light band: 95% simultaneous band of FMR and FNMR, all thresholds at once "
        "(max-modulus, studentised on the probit scale: c = 3.10 against the pointwise z = 1.96) "
        "Darker band: 90% pointwise interval of FMR and FNMR at each threshold (percentile) "
        "Subject bootstrap: whole subjects resampled, 300 replicates")
    # the simultaneous band alone: one legend entry, "Band:"
    alone = plot.det_chart(det, band=band.drop_vars(["fmr_interval", "fnmr_interval"]), limits=(0.001, 0.9)).to_dict()
    assert _layers(alone)[1]["encoding"]["opacity"]["scale"]["domain"] == labels[:1]
    assert any(line.startswith("Band: 95% simultaneous band of FMR and FNMR") for line in alone["title"]["subtitle"])
    with pytest.raises(ValueError, match="lacks"):
        plot.det_chart(det, band=band.drop_vars("fnmr_band"))


def test_det_and_roc_charts_with_the_joint_band_of_the_subject_bootstrap(gauss, gauss_both):
    _, det, eer = gauss
    spec = plot.det_chart(det, eer=eer, band=gauss_both).to_dict()
    assert [layer["mark"]["type"] for layer in _layers(spec)] == ["line", "line", "line", "point", "text"]
    rows = pd.DataFrame(_data(spec, _layers(spec)[1]))
    assert list(dict.fromkeys(rows["band"])) == [_SIM_LABEL, _PW_LABEL]
    sim, pw = rows[rows.band == _SIM_LABEL], rows[rows.band == _PW_LABEL]
    finite = gauss_both.fmr_band.where(np.isfinite(gauss_both.fnmr_band))
    assert sim.fmr.min() == pytest.approx(float(finite.min())) and sim.fmr.max() == pytest.approx(float(finite.max()))
    assert sim.fnmr.max() >= pw.fnmr.max() and sim.fnmr.min() <= pw.fnmr.min()  # it contains the pointwise band
    c = gauss_both.fmr_band.attrs["critical_value"]
    assert f"c = {c:.2f} against the pointwise z = 1.96" in " ".join(spec["title"]["subtitle"])
    roc = plot.roc_chart(det, band=gauss_both).to_dict()
    shade = _layers(roc)[0]
    assert shade["encoding"]["opacity"]["scale"]["domain"] == [_SIM_LABEL, _PW_LABEL]
    assert all(r["tmr"] == pytest.approx(1 - r["fnmr"], abs=1e-9) or r["tmr"] in (1e-12, 1 - 1e-12)
               for r in _data(roc, shade))
    assert "Light band: 95% simultaneous band of FMR and TMR, all thresholds at once" in roc["title"]["subtitle"]


def test_cmc_chart_with_a_simultaneous_band(searches):
    _, out = searches
    cmc = bioxr.identification.cmc_curve(out).sel(rank=slice(1, 10))
    ranks = cmc["rank"]
    found = ((ranks - out.mated_rank_min + 1) / (out.mated_rank_max - out.mated_rank_min + 1)).clip(0, 1)
    per_subject = xr.Dataset({"found": found.fillna(0), "searches": out.mated_rank_min.notnull()}) \
        .stack(search=list(out.mated_rank_min.dims)).groupby("subject").sum()
    n = per_subject.sizes["subject"]
    w = np.random.default_rng(3).multinomial(n, np.full(n, 1 / n), size=400)  # the subject bootstrap
    reps = xr.DataArray(w @ per_subject.found.transpose("subject", "rank").values
                        / (w @ per_subject.searches.values)[:, None], dims=("replicate", "rank"),
                        coords={"rank": ranks.values})
    pointwise = bioxr.bootstrap.bootstrap_rate_interval(per_subject.found, per_subject.searches, dim="subject",
                                                        n_replicates=400, seed=0)
    sim = bioxr._core.simultaneous_band(reps, cmc.cmc, level=0.95, along="rank", n=n, floor=pointwise.rate_interval)
    band = pointwise.assign(rate_band=sim)
    spec = plot.cmc_chart(cmc, band=band).to_dict()
    shade = _layers(spec)[0]
    assert shade["mark"]["type"] == "area" and shade["encoding"]["opacity"]["scale"]["domain"] == [_SIM_LABEL, _PW_LABEL]
    rows = pd.DataFrame(_data(spec, shade))
    assert rows.band.tolist() == [_SIM_LABEL] * 10 + [_PW_LABEL] * 10
    assert rows.lower[:10].tolist() == pytest.approx(sim.sel(bound="lower").values.tolist())
    lo, hi = pointwise.rate_interval.sel(rank=1).values  # the rank-1 label keeps the pointwise interval
    assert _data(spec, _layers(spec)[4])[0]["label"] == f"rank 1: {float(cmc.cmc.sel(rank=1)):.2%} ({lo:.1%} to {hi:.1%})"
    assert "Light band: 95% simultaneous band of the identification rate, all ranks at once" in spec["title"]["subtitle"]
    assert min(rows.lower) >= _layers(spec)[1]["encoding"]["y"]["scale"]["domain"][0]
    alone = plot.cmc_chart(cmc, band=xr.Dataset({"cmc_band": sim})).to_dict()
    lo, hi = sim.sel(rank=1).values
    assert _data(alone, _layers(alone)[4])[0]["label"].endswith(f"({lo:.1%} to {hi:.1%}, simultaneous)")


def test_simultaneous_band_charts_render_to_png(tmp_path, gauss, gauss_both):
    _, det, eer = gauss
    for name, chart in {"det": plot.det_chart(det, eer=eer, band=gauss_both),
                        "roc": plot.roc_chart(det, band=gauss_both)}.items():
        assert plot.save_png(chart, tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------ design study -


@pytest.fixture(scope="module")
def studies():
    success = bioxr.design.dichotomize(
        bioxr.outcomes.outcomes(bioxr.simulate.photohead(12, 4, 60, seed=4), ranks_only=True), rank=1)
    common = dict(n_collections=48, n_runs=8, seed=1)
    return {
        "clustered": bioxr.design.design_study(success, partition="subject", **common),
        "randomized, by image": bioxr.design.design_study(success, partition=("subject", "image"),
                                                          randomize="collection", **common),
        "cluster": bioxr.design.design_study(success, partition=("subject", "image"), randomize="collection",
                                             design="cluster", **common),
    }


def test_design_chart_draws_the_papers_four_lines(studies):
    study = studies["randomized, by image"]
    spec = plot.design_chart(study).to_dict()
    (layer,) = _layers(spec)
    enc = layer["encoding"]
    assert enc["y"]["scale"]["type"] == "log" and enc["x"]["field"] == "run"
    assert enc["color"]["scale"]["range"] == ["#d62728", "#7f7f7f", "#1f77b4", "#2ca02c"]  # red, grey, blue, green
    dashes = dict(zip(enc["strokeDash"]["scale"]["domain"], enc["strokeDash"]["scale"]["range"]))
    assert dashes["empirical variance"] == [1, 0]  # solid; the estimators dashed, dot-dashed and dotted
    assert len(dashes["mean V_st (stratified)"]) == 4 and dashes["mean V_cl (cluster)"] == [2, 3]
    frame = pd.DataFrame(_data(spec, layer))
    assert len(frame) == 4 * study.sizes["run"] and frame["run"].min() == 1
    emp = frame[frame["series"] == "empirical variance"].sort_values("run")["variance"]
    np.testing.assert_allclose(emp.values, study.empirical_variance.values)
    ticks = enc["y"]["axis"]["values"]
    lo, hi = enc["y"]["scale"]["domain"]
    assert ticks and all(lo <= t <= hi for t in ticks)
    subtitle = spec["title"]["subtitle"]
    assert subtitle[0] == "Partition by subject × image · stratified design: all 48 groups in every trial"
    assert subtitle[1] == "Time randomized: collections shuffled per series"
    assert "m = 4" in subtitle[2] and "8 runs of 12 trials" in subtitle[2]
    subtitle = subtitle[:3] + [" ".join(subtitle[3:])]  # the ratio line is wrapped to the chart's width
    st = float(study.ratio.sel(estimator="st"))
    assert f"st {st:.2f}" in subtitle[3] and "verdict at ±5%" in subtitle[3]
    said = [str(v) for v in study["verdict"].values]
    assert all(f"{est} " in subtitle[3] for est in study["estimator"].values.tolist())
    assert sum(subtitle[3].count(f" {v}") for v in ("compatible", "incompatible", "inconclusive")) == 3
    assert "rejected" not in subtitle[3] and all(v in subtitle[3] for v in said)
    quiet = " ".join(plot.design_chart(study, verdict=False).to_dict()["title"]["subtitle"][3:])
    assert "compatible" not in quiet and "rejected" not in quiet and "verdict" not in quiet
    cluster = plot.design_chart(studies["cluster"]).to_dict()["title"]
    assert "cluster design: 4 of 48 groups drawn per trial, disjoint within a run" in cluster["subtitle"][0]
    assert cluster["text"] == "Design study: by subject × image, cluster, time randomized"
    with pytest.raises(TypeError, match="design_study"):
        plot.design_chart(study[["rate"]])


def test_design_ratio_chart_puts_the_studies_side_by_side(studies):
    spec = plot.design_ratio_chart(studies).to_dict()
    band, one, bars, points, labels = _layers(spec)
    assert [band["mark"]["type"], one["mark"]["type"], bars["mark"]["type"], points["mark"]["type"]] == \
        ["rect", "rule", "rule", "point"]
    assert _data(spec, one) == [{"one": 1.0}]
    assert {(r["study"], round(r["low"], 6), round(r["high"], 6)) for r in _data(spec, band)} == \
        {(k, round(1 / 1.05, 6), 1.05) for k in studies}
    rows = pd.DataFrame(_data(spec, points))
    assert len(rows) == 3 * len(studies)
    for label, study in studies.items():
        for est in ("srs", "st", "cl"):
            row = rows[(rows.study == label) & (rows.estimator == est)].iloc[0]
            assert row.ratio == pytest.approx(float(study.ratio.sel(estimator=est)))
            assert [row.lower, row.upper] == pytest.approx(study.ratio_interval.sel(estimator=est).values.tolist())
            assert (row.filled == "compatible") == bool(study.compatible.sel(estimator=est))
            assert row.filled == str(study.verdict.sel(estimator=est).values)  # three-way, never "rejected"
    assert points["encoding"]["y"]["sort"] == list(studies)  # in the order given, top to bottom
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    lo, hi = points["encoding"]["x"]["scale"]["domain"]
    assert lo <= rows[["lower", "ratio"]].min().min() and rows[["upper", "ratio"]].max().max() <= hi
    plain = plot.design_ratio_chart(list(studies.values()), verdict=False).to_dict()
    rows = pd.DataFrame(_data(plain, _layers(plain)[3]))
    assert set(rows.filled) == {"not"} and rows.study.iloc[0].startswith("1: by subject, stratified, time clustered")
    with pytest.raises(ValueError, match="at least one"):
        plot.design_ratio_chart({})


def test_band_and_design_charts_render_to_png(tmp_path, gauss, gauss_band, studies):
    _, det, eer = gauss
    charts = {"det": plot.det_chart(det, eer=eer, band=gauss_band), "roc": plot.roc_chart(det, band=gauss_band),
              "design": plot.design_chart(studies["cluster"]), "ratios": plot.design_ratio_chart(studies)}
    for name, chart in charts.items():
        assert plot.save_png(chart, tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_facet_chart_gives_one_panel_per_label_with_its_own_eer():
    import json

    cube = bioxr.simulate.photohead(n_subjects=6, n_collections=3, seed=0)
    det = bioxr.verification.det_curve(cube, dim=("subject", "image"))
    eer = bioxr.verification.eer(cube, dim=("subject", "image"))
    spec = plot.facet_chart(plot.det_chart, det, "collection", eer=eer, columns=2).to_dict()
    assert len(spec["concat"]) == 3 and spec["columns"] == 2
    text = json.dumps(spec)
    for c in range(3):
        assert f"collection = {c}" in text
        assert f"EER {float(eer.eer.isel(collection=c)):.2%}" in text
    with pytest.raises(ValueError, match="not a dimension"):
        plot.facet_chart(plot.det_chart, det, "weather")


# ------------------------------------------------------------ charts at the standard of the field (issue 11)


@pytest.fixture(scope="module")
def face(face_csv):
    cube = bioxr.io.read_matrix_csv(face_csv, missing=-1)
    return cube, bioxr.verification.det_curve(cube), bioxr.verification.eer(cube)


@pytest.fixture(scope="module")
def finger(finger_csv):
    return bioxr.io.read_matrix_csv(finger_csv)


def _curve_layer(spec):
    return next(layer for layer in _layers(spec) if layer["mark"]["type"] == "line" and "color" in layer["encoding"])


def _rates_of(enc):
    """The rates at the ends of a probit axis and at its ticks."""
    lo, hi = (float(ndtr(z)) for z in enc["scale"]["domain"])
    return lo, hi, [float(ndtr(z)) for z in enc["axis"]["values"]]


def test_det_axes_are_fitted_each_to_its_own_data_on_face_c(face):
    _, det, eer = face
    spec = plot.det_chart(det, eer=eer).to_dict()
    assert spec["width"] >= 500 and spec["height"] >= 500
    curve = _curve_layer(spec)
    xlo, xhi, xticks = _rates_of(curve["encoding"]["x"])
    ylo, yhi, yticks = _rates_of(curve["encoding"]["y"])
    assert float(det.fnmr.where((det.fnmr > 0) & (det.fmr > 0)).min()) == pytest.approx(0.0019, abs=2e-4)  # 0.19%
    smallest = float(det.fnmr.where((det.fnmr > 0) & (det.fmr > 0) & (det.fmr <= xhi)).min())  # on the axes shown
    # a margin below the smallest FNMR shown, but not the shared range down to 0.0005%
    assert 0.4 * smallest <= ylo < smallest and ylo == pytest.approx(0.002)
    fmin = float(det.fmr.where(det.fmr > 0).min())  # 1 in 266,256
    assert 0.1 * fmin <= xlo < fmin  # the FMR axis reaches its own smallest rate, with a margin
    assert xlo != ylo  # no shared range
    for lo, hi, ticks in ((xlo, xhi, xticks), (ylo, yhi, yticks)):
        assert ticks[0] == pytest.approx(lo, rel=1e-4) and ticks[-1] == pytest.approx(hi, rel=1e-4)  # end ticks
    # 1-2-5 steps between the decades where they fit: something between 10% and 50% on both axes
    for ticks in (xticks, yticks):
        assert any(0.1 < t < 0.5 for t in ticks)
        assert any(np.isclose(t, 0.02) or np.isclose(t, 0.05) for t in ticks)
    for ticks in (xticks, yticks):  # every decade inside the range keeps its tick
        decades = [10.0 ** e for e in range(-6, 0)]
        assert all(any(np.isclose(t, d) for t in ticks) for d in decades if ticks[0] <= d <= ticks[-1])
    # fixed axes on request: both, or one
    fixed = _curve_layer(plot.det_chart(det, limits=(1e-4, 0.5)).to_dict())
    assert _rates_of(fixed["encoding"]["x"])[:2] == pytest.approx((1e-4, 0.5))
    assert _rates_of(fixed["encoding"]["y"])[:2] == pytest.approx((1e-4, 0.5))
    odd = _rates_of(_curve_layer(plot.det_chart(det, limits=(1.5e-3, 0.45)).to_dict())["encoding"]["y"])
    assert odd[2][0] == pytest.approx(1.5e-3) and odd[2][-1] == pytest.approx(0.45)  # ends not on the 1-2-5 grid
    one = _curve_layer(plot.det_chart(det, limits=((1e-5, 0.5), None)).to_dict())
    assert _rates_of(one["encoding"]["x"])[:2] == pytest.approx((1e-5, 0.5))
    assert _rates_of(one["encoding"]["y"])[:2] == pytest.approx((ylo, yhi))


def test_det_subtitle_is_written_for_people(face):
    _, det, eer = face
    spec = plot.det_chart(det, eer=eer).to_dict()
    subtitle = " ".join(spec["title"]["subtitle"])
    assert "point(s)" not in subtitle and "thinned" not in subtitle and "off the axes" not in subtitle
    assert spec["title"]["subtitle"][0] == "516 mated and 266,256 non-mated comparisons"
    assert "at 0% or 100%, which lie at infinity on these axes" in spec["description"]


def test_det_operating_points_are_marked_and_labelled(face):
    cube, det, eer = face
    targets = (1e-2, 1e-3, 1e-7)
    spec = plot.det_chart(det, eer=eer, fmr_targets=targets).to_dict()
    layers = _layers(spec)
    rules = next(layer for layer in layers if layer["mark"]["type"] == "rule")
    assert sorted(r["target"] for r in _data(spec, rules)) == [1e-3, 1e-2]  # 1e-7 is below 1 in 266,256
    squares = next(layer for layer in layers if layer["mark"].get("shape") == "square")
    rows = sorted(_data(spec, squares), key=lambda r: r["target"])
    want = bioxr.verification.fnmr_at_fmr(cube, [1e-3, 1e-2])
    assert [r["fnmr"] for r in rows] == pytest.approx(want.fnmr.sel(fmr_target=[1e-3, 1e-2]).values.tolist())
    assert [r["x"] for r in rows] == pytest.approx(plot.probit([r["fmr"] for r in rows]).tolist())
    labels = [r["label"] for layer in layers if layer["mark"]["type"] == "text"
              for r in _data(spec, layer) if "label" in r]
    assert f"FNMR {rows[0]['fnmr']:.2%}" in labels and "FMR 1%" in labels and "FMR 0.1%" in labels
    subtitle = " ".join(spec["title"]["subtitle"])
    assert "FMR 0.00001% not marked: below 1 in 266,256 non-mated comparisons" in subtitle
    # the axes reach every target asked for, here the FMR axis down to 0.1%
    assert _rates_of(_curve_layer(spec)["encoding"]["x"])[0] <= 1e-3
    with pytest.raises(ValueError, match="fmr_targets"):
        plot.det_chart(det, fmr_targets=[2.0])


def test_two_systems_name_their_eers_and_count_per_system():
    cube = bioxr.simulate.systems(n_subjects=40, n_samples=2, shift=-0.5, seed=1)
    spec = plot.systems_det_chart(cube, band=False).to_dict()
    assert spec["title"]["subtitle"][0] == "80 mated and 3,120 non-mated comparisons in each system"
    labels = sorted(r["label"] for layer in _layers(spec) if layer["mark"]["type"] == "text" for r in _data(spec, layer))
    eers = {s: float(bioxr.verification.eer(cube.sel(system=s, drop=True)).eer) for s in ("A", "B")}
    assert labels == [f"A: EER {eers['A']:.2%}", f"B: EER {eers['B']:.2%}"]
    curve = _curve_layer(spec)
    assert curve["encoding"]["color"]["field"] == "system" and "legend" in curve["encoding"]["color"]
    # counts that differ are given per system, not added together
    det = xr.concat([bioxr.verification.det_curve(cube.sel(system="A", drop=True)),
                     bioxr.verification.det_curve(cube.sel(system="B", drop=True).isel(probe=slice(0, 60)))],
                    dim=pd.Index(["A", "B"], name="system"), join="outer")
    sub = plot.det_chart(det).to_dict()["title"]["subtitle"][0]
    assert sub.startswith("A: 80 mated, 3,120 non-mated; B: ")


def test_charts_name_the_function_whose_result_they_expect(gauss):
    cube, det, eer = gauss
    interval = bioxr.bootstrap.eer_interval(cube, n_replicates=1000, seed=0)
    cases = [
        (plot.det_chart, interval, "det_chart expects the result of bioxr.verification.det_curve",
         "bioxr.bootstrap.eer_interval"),
        (plot.cmc_chart, det, "cmc_chart expects the result of bioxr.identification.cmc_curve",
         "bioxr.verification.det_curve"),
        (plot.roc_chart, bioxr.identification.cmc_curve(cube), "roc_chart expects the result of bioxr.verification.roc_curve",
         "bioxr.identification.cmc_curve"),
        (plot.design_chart, eer, "design_chart expects the result of bioxr.design.design_study", "bioxr.verification.eer"),
    ]
    for chart, wrong, expects, given in cases:
        with pytest.raises(TypeError, match=re.escape(expects)) as err:
            chart(wrong)
        assert given in str(err.value)
    with pytest.raises(TypeError, match=r"eer= expects the result of bioxr.verification.eer.*eer_interval"):
        plot.det_chart(det, eer=interval)
    with pytest.raises(TypeError, match=r"score_histogram expects a score cube.*bioxr.verification.det_curve"):
        plot.score_histogram(det)
    with pytest.raises(ValueError, match="det_curve"):  # the error is a ValueError too, as the old one was
        plot.rates_chart(interval)


def test_roc_y_axis_is_fitted_to_the_curve(face):
    _, det, _ = face
    spec = plot.roc_chart(det).to_dict()
    curve = _curve_layer(spec)
    lo, hi = curve["encoding"]["y"]["scale"]["domain"]
    xlo, _ = curve["encoding"]["x"]["scale"]["domain"]
    shown = (1 - det.fnmr).where(det.fmr >= xlo)
    assert hi == 1 and lo < float(shown.min()) and float(shown.min()) - lo <= 0.1
    assert lo > 0  # not the whole 0-100%
    assert curve["encoding"]["y"]["axis"]["values"][0] == pytest.approx(lo)
    assert curve["encoding"]["x"]["axis"]["values"][0] == pytest.approx(xlo) and np.log10(xlo).is_integer()


def test_cmc_band_subtitle_reads_as_a_sentence(face):
    cube, _, _ = face
    cmc = bioxr.identification.cmc_curve(cube)
    ci = bioxr.bootstrap.cmc_interval(cube, max_rank=10, n_replicates=100, seed=0)
    subtitle = plot.cmc_chart(cmc, band=ci, max_rank=10).to_dict()["title"]["subtitle"]
    text = " ".join(subtitle)
    assert "Band: 95% pointwise interval of the identification rate at each rank (effective-count binomial, widened " \
           "to the bootstrap-t)" in text
    assert "Subject bootstrap: whole subjects resampled, 100 replicates; widened for the gallery subjects' share" in text
    assert "probe(s)" not in text and "1 probe not counted (not enrolled, or never compared with its mate)" in text


def test_integer_scores_are_binned_on_integer_edges(finger):
    spec = plot.score_histogram(finger, bins=60).to_dict()
    rows = pd.DataFrame(_data(spec, _layers(spec)[0]))
    widths = (rows.end - rows.start).unique()
    assert len(widths) == 1 and float(widths[0]).is_integer() and widths[0] == 5  # 247 values in 60 bins: 5 a bin
    assert all(float(v).is_integer() for v in rows.start)
    per_bin = rows[rows.comparison == "non-mated"]["count"]
    assert int(per_bin.sum()) == 266_772
    # the default: about 100 bins of whole values, and a log density axis (the non-mated peak dwarfs the mated class)
    auto = plot.score_histogram(finger).to_dict()
    bars = _layers(auto)[0]
    rows = pd.DataFrame(_data(auto, bars))
    assert set(rows.end - rows.start) == {3.0} and rows.start.min() == 0
    assert bars["encoding"]["y"]["scale"]["type"] == "log"
    lo, hi = bars["encoding"]["y"]["scale"]["domain"]
    assert bars["encoding"]["y"]["axis"]["values"][0] == lo and bars["encoding"]["y"]["axis"]["values"][-1] == hi
    assert lo < rows.density[rows.density > 0].min()
    assert "83 shared bins of 3 score values each" in " ".join(auto["title"]["subtitle"])
    sqrt = plot.score_histogram(finger, yscale="sqrt").to_dict()
    assert _layers(sqrt)[0]["encoding"]["y"]["scale"]["type"] == "sqrt"
    with pytest.raises(ValueError, match="yscale"):
        plot.score_histogram(finger, yscale="probit")


def test_float_scores_keep_their_bins(gauss):
    cube, _, _ = gauss
    bars = _layers(plot.score_histogram(cube).to_dict())[0]
    assert "type" not in bars["encoding"]["y"]["scale"]  # two similar classes: a linear axis
    rows = pd.DataFrame(_data(plot.score_histogram(cube).to_dict(), bars))
    assert len(rows) == 120  # 60 bins a class


def test_facets_share_their_axes_by_default():
    cube = bioxr.simulate.photohead(n_subjects=10, n_collections=3, seed=0)
    det = bioxr.verification.det_curve(cube, dim=("subject", "image"))
    shared = plot.facet_chart(plot.det_chart, det, "collection").to_dict()
    domains = {json.dumps([_curve_layer(p)["encoding"][c]["scale"]["domain"] for c in "xy"]) for p in shared["concat"]}
    assert len(domains) == 1
    alone = [plot.det_chart(det.sel(collection=c)).to_dict() for c in range(3)]
    union = json.loads(domains.pop())
    for panel in alone:
        (x0, x1), (y0, y1) = (_curve_layer(panel)["encoding"][c]["scale"]["domain"] for c in "xy")
        assert union[0][0] <= x0 + 1e-9 and x1 <= union[0][1] + 1e-9 and union[1][0] <= y0 + 1e-9
    own = plot.facet_chart(plot.det_chart, det, "collection", share=False).to_dict()
    assert [_curve_layer(p)["encoding"]["y"]["scale"]["domain"] for p in own["concat"]] == \
        [_curve_layer(p)["encoding"]["y"]["scale"]["domain"] for p in alone]
    cmc = bioxr.identification.cmc_curve(bioxr.outcomes.outcomes(cube), dim=("subject", "image"), max_rank=5) \
        if "dim" in bioxr.identification.cmc_curve.__code__.co_varnames else None
    if cmc is not None and "collection" in cmc.dims:
        panels = plot.facet_chart(plot.cmc_chart, cmc, "collection").to_dict()["concat"]
        assert len({str(_layers(p)[0]["encoding"]["y"]["scale"]["domain"]) for p in panels}) == 1


def test_design_chart_subtitles_fit_and_log_axes_end_on_ticks(studies):
    for chart in (plot.design_chart(studies["randomized, by image"]), plot.design_ratio_chart(studies)):
        spec = chart.to_dict()
        assert all(len(line) <= (spec["width"] + 280) / 5.8 for line in spec["title"]["subtitle"])
        enc = [layer["encoding"] for layer in _layers(spec)]
        axis_of = next(e[c] for e in enc for c in ("x", "y") if c in e and e[c].get("scale", {}).get("type") == "log"
                       and "axis" in e[c])
        lo, hi = axis_of["scale"]["domain"]
        values = axis_of["axis"]["values"]
        assert values[0] == pytest.approx(lo) and values[-1] == pytest.approx(hi)
        for end in (lo, hi):  # a round value, so that its label ("2e-4", "0.5") is the value itself
            assert float(f"{end:.0e}") == pytest.approx(end) and f"{end:.0e}"[0] in "1235"
    svg = plot.render_svg(plot.design_chart(studies["randomized, by image"]))
    width = float(re.search(r'<svg[^>]*\swidth="([\d.]+)"', svg).group(1))
    assert width < 1100  # nothing clipped at a 1400 px page


# ------------------------------------------------------------ the offline renderer in a kernel


@pytest.fixture
def renderer():
    import altair as alt

    before = alt.renderers.active
    yield alt
    alt.renderers.enable(before)


def test_importing_in_a_kernel_enables_the_offline_renderer(renderer, monkeypatch):
    import importlib

    from bioxr.plot import _render

    renderer.renderers.enable("default")
    monkeypatch.setattr(_render, "_in_kernel", lambda: True)
    importlib.reload(plot)  # what `import bioxr.plot` runs, in a kernel
    assert renderer.renderers.active == "svg"


def test_the_users_renderer_is_kept(renderer, monkeypatch):
    import importlib

    from bioxr.plot import _render

    renderer.renderers.enable("html")
    monkeypatch.setattr(_render, "_in_kernel", lambda: True)
    importlib.reload(plot)
    assert renderer.renderers.active == "html"
    assert _render._enable_in_kernel() is None and renderer.renderers.active == "html"


def test_outside_a_kernel_the_renderer_is_untouched(renderer):
    import importlib

    from bioxr.plot import _render

    assert _render._in_kernel() is False  # pytest runs no kernel
    renderer.renderers.enable("default")
    importlib.reload(plot)
    assert renderer.renderers.active == "default"
