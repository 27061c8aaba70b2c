"""The threshold explorer, driven headless by setting its widgets' traits."""

from __future__ import annotations

import base64
import html
import json
import re

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import plot
from bioxr.verification import error_rates, fnmr_at_fmr

widgets = pytest.importorskip("bioxr.widgets")


@pytest.fixture(scope="module")
def cube():
    return bioxr.simulate.gaussian(n_subjects=40, n_samples=2, seed=3)


@pytest.fixture()
def explorer(cube):
    return widgets.threshold_explorer(cube)


def _row(table: str, rate: str) -> str:
    return re.search(rf'<tr class="bioxr-{rate}">(.*?)</tr>', table).group(1)


def _svg(html_value: str) -> str:
    return base64.b64decode(re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html_value).group(1)).decode()


def test_explorer_exposes_its_widgets(explorer, cube):
    import ipywidgets as W

    assert isinstance(explorer, W.VBox)
    assert isinstance(explorer.slider, W.FloatSlider) and isinstance(explorer.target, W.Dropdown)
    assert isinstance(explorer.table, W.HTML) and isinstance(explorer.progress, W.IntProgress)
    # starts at the EER threshold of the chosen convention
    assert explorer.target.value == "eer"
    assert explorer.threshold == pytest.approx(float(bioxr.verification.eer(cube).threshold))
    assert explorer.slider.min == pytest.approx(float(cube.min())) and explorer.slider.max == pytest.approx(float(cube.max()))
    assert not explorer.slider.continuous_update  # one update per release or key press, not a flood
    # computed once, shown done
    assert explorer.progress.value == explorer.progress.max and explorer.progress.layout.display == "none"
    assert "updated in" in explorer.status.value


def test_slider_updates_the_table_to_error_rates_at_that_threshold(explorer, cube):
    before = explorer.table.value
    explorer.slider.value = 2.5
    assert explorer.table.value != before
    assert explorer.target.value == widgets.CUSTOM, "a hand-moved slider leaves the named operating point"
    expected = error_rates(cube, 2.5)
    xr.testing.assert_identical(explorer.rates, expected)
    fmr_row, fnmr_row = _row(explorer.table.value, "fmr"), _row(explorer.table.value, "fnmr")
    assert f">{int(expected.false_matches):,} of {int(expected.n_nonmated):,}</span>" in fmr_row
    assert f">{int(expected.false_nonmatches):,} of {int(expected.n_mated):,}</span>" in fnmr_row
    assert 'title="non-mated comparisons accepted"' in fmr_row and 'title="mated comparisons rejected"' in fnmr_row
    assert f"<b>{widgets._pct(float(expected.fmr))}</b>" in fmr_row
    assert f"<b>{widgets._pct(float(expected.fnmr))}</b>" in fnmr_row
    assert "At threshold 2.5</b>" in explorer.table.value


def test_fmr_target_moves_the_threshold(explorer, cube):
    explorer.slider.value = 0.0
    explorer.target.value = 0.01
    op = fnmr_at_fmr(cube, 0.01)
    assert explorer.threshold == float(op.threshold)
    assert explorer.slider.value == pytest.approx(float(op.threshold))
    assert explorer.target.value == 0.01, "the slider follows the target without resetting it"
    assert int(explorer.rates.false_matches) == int(op.false_matches)
    assert int(explorer.rates.false_nonmatches) == int(op.false_nonmatches)
    assert float(explorer.rates.fmr) <= 0.01
    assert f">{int(op.false_nonmatches):,} of " in _row(explorer.table.value, "fnmr")
    # targets finer than one false match in all non-mated comparisons are not offered
    n = int(explorer.det_curve.n_nonmated)
    offered = [v for _, v in explorer.target.options if isinstance(v, float)]
    assert offered and all(v * n >= 1 for v in offered)
    explorer.target.value = "eer"
    assert explorer.threshold == pytest.approx(float(explorer.eer.threshold))


def test_table_shows_wilson_intervals(explorer):
    intervals = pytest.importorskip("bioxr.intervals")
    explorer.slider.value = 2.0
    r = explorer.rates
    ci = intervals.binomial_interval(int(r.false_nonmatches), int(r.n_mated), method="wilson", level=0.95)
    lo, hi = (float(ci.sel(bound=b)) for b in ("lower", "upper"))
    assert f"{widgets._pct(lo)} – {widgets._pct(hi)}" in _row(explorer.table.value, "fnmr")
    assert "95% interval" in explorer.table.value and "Modified Wilson intervals" in explorer.table.value
    explorer.slider.value = explorer.slider.max + 0  # nothing non-mated is accepted up there
    assert "(rule of three)" in _row(explorer.table.value, "fmr")


def _scene_items(spec: dict, name: str) -> list[dict]:
    """Items of the mark named ``name`` in Vega's scenegraph of a spec (as vl-convert lays it out)."""
    import vl_convert

    scene = vl_convert.vegalite_to_scenegraph(spec, vl_version=plot.VL_VERSION)
    scene = scene if isinstance(scene, dict) else json.loads(scene)
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("name") == f"{name}_marks":
                found.extend(node.get("items", []))
            for item in node.get("items", []):
                walk(item)

    walk(scene["scenegraph"])
    return found


def _linear(v, domain, size, flip=False):
    frac = (v - domain[0]) / (domain[1] - domain[0])
    return (1 - frac) * size if flip else frac * size


def test_overlay_is_drawn_by_vega_from_params(explorer):
    """The threshold rule and the operating point are layers of the Vega-Lite spec, bound to params."""
    hist, det = explorer._hist, explorer._det
    names = [layer.get("name") for layer in det.spec["layer"]]
    assert {"bioxr_operating_point", "bioxr_operating_label", "bioxr_guides_v"} <= set(names)
    assert {p["name"] for p in det.spec["params"]} >= {"bioxr_x", "bioxr_y", "bioxr_label"}
    explorer.slider.value = 1.0
    r = explorer.rates
    # the rule sits at the threshold on the histogram's own x scale, as Vega lays it out
    (rule,) = _scene_items(hist.current_spec(), "bioxr_threshold_rule")
    assert rule["x"] == pytest.approx(_linear(1.0, hist.x_domain, hist.spec["width"]), abs=0.01)
    (label,) = _scene_items(hist.current_spec(), "bioxr_threshold_label")
    assert label["text"] == "threshold 1"
    # the operating point at the probits of its rates, labelled with them
    (point,) = _scene_items(det.current_spec(), "bioxr_operating_point")
    fmr, fnmr = float(r.fmr), float(r.fnmr)
    assert point["x"] == pytest.approx(_linear(float(plot.probit(fmr)), det.x_domain, det.spec["width"]), abs=0.01)
    assert point["y"] == pytest.approx(_linear(float(plot.probit(fnmr)), det.y_domain, det.spec["height"], flip=True),
                                       abs=0.01)
    (text,) = _scene_items(det.current_spec(), "bioxr_operating_label")
    assert text["text"] == f"FMR {widgets._pct(fmr)}, FNMR {widgets._pct(fnmr)}"
    # a move changes the params, nothing else: the base layers are the chart's own
    before = json.dumps(det.spec["layer"])
    explorer.slider.value = 2.5
    assert json.dumps(det.spec["layer"]) == before
    (moved,) = _scene_items(det.current_spec(), "bioxr_operating_point")
    assert moved["x"] < point["x"] and moved["y"] < point["y"], "stricter: lower FMR (left), higher FNMR (up)"


def test_live_charts_are_offline_jupytercharts_with_the_params(explorer):
    alt = pytest.importorskip("altair")
    pytest.importorskip("anywidget")
    assert isinstance(explorer.det, alt.JupyterChart) and isinstance(explorer.histogram, alt.JupyterChart)
    assert alt.JupyterChart._is_offline, "the Vega bundle comes from vl-convert, not a CDN"
    assert explorer.det._esm.count("cdn.jsdelivr.net") == 0
    explorer.slider.value = 2.0
    assert explorer.histogram.params.bioxr_t == 2.0
    assert explorer.det.params.bioxr_x == pytest.approx(float(plot.probit(float(explorer.rates.fmr))))
    assert explorer.det.params.bioxr_label.startswith(f"FMR {widgets._pct(float(explorer.rates.fmr))}")


def test_overlay_specs_are_valid_vega_lite(explorer):
    """The live charts skip Altair's validation (seconds per chart): check the spec once here, on a few rows."""
    import altair as alt

    for view in (explorer._hist, explorer._det):
        spec = json.loads(json.dumps(view.spec))
        for layer in spec["layer"]:
            if "values" in layer.get("data", {}):
                layer["data"]["values"] = layer["data"]["values"][:3]
        for name, data in spec.get("datasets", {}).items():
            spec["datasets"][name] = data[:3]
        alt.LayerChart.from_dict(spec, validate=True)


def test_the_kernel_keeps_the_overlay_when_a_view_is_drawn_again(explorer):
    """A view drawn again (a second display, a reload) reports its spec's values; the kernel sends its own back."""
    pytest.importorskip("anywidget")
    explorer.slider.value = 2.5
    wanted = explorer._det.values["bioxr_x"]
    explorer.det._params = {**explorer.det._params, "bioxr_x": wanted - 1.0}  # what the browser would report
    assert explorer.det.params.bioxr_x == wanted and explorer.det._params["bioxr_x"] == wanted


def test_without_live_charts_each_move_renders_the_spec_to_an_image(cube):
    explorer = widgets.threshold_explorer(cube, live=False)
    for part in (explorer.histogram, explorer.det):
        assert part.value.startswith("<img") and "data:image/svg+xml;base64," in part.value
        assert "http" not in _svg(part.value).split("</style>")[-1].replace("http://www.w3.org", "")
    before = explorer.det.value
    explorer.slider.value = 2.5
    assert explorer.det.value != before and "FMR " + widgets._pct(float(explorer.rates.fmr)) in _svg(explorer.det.value)


def test_static_html_shows_the_current_state(explorer):
    explorer.slider.value = 2.5
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # the live widget in a notebook
    static = bundle["text/html"]  # what an export without a widget manager shows
    assert static.count('<img alt="') == 2 and explorer.table.value in static
    det_image, hist_image = static.split('<img alt="')[1:]  # the DET beside the table, the histogram below
    assert "threshold 2.5" in _svg('<img alt="' + hist_image)  # the histogram's rule where the slider is
    assert "FMR " + widgets._pct(float(explorer.rates.fmr)) in _svg('<img alt="' + det_image)
    assert static.index(explorer.table.value) < static.index(det_image) < static.index(hist_image)


def test_off_axis_rates_stay_on_the_chart(explorer):
    explorer.slider.value = explorer.slider.max  # nothing non-mated accepted: FMR 0 is at minus infinity
    det = explorer._det
    assert det.values["bioxr_x"] == det.x_domain[0] and det.values["bioxr_fill"] == 0.35
    assert det.values["bioxr_label"].endswith("(FMR off the axes)")
    explorer.target.value = "eer"
    assert det.values["bioxr_fill"] == 1.0


def test_each_update_records_its_time():
    cube = bioxr.simulate.photohead(seed=0)
    explorer = widgets.threshold_explorer(cube)
    times = []
    for t in (0.5, 1.5, 2.5):
        explorer.slider.value = t
        times.append(explorer.last_update_seconds)
    print("update seconds:", times)  # measured, not asserted: speed belongs to benchmarks
    assert all(s > 0 for s in times)


def test_integer_and_distance_scores():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 40, (30, 30)).astype(float) + 25 * np.eye(30)
    subjects = [f"s{i}" for i in range(30)]
    cube = bioxr.score_cube(scores, subject=subjects, reference_subject=subjects)
    explorer = widgets.threshold_explorer(cube, eer_method="nearest", fmr_targets=(0.1, 0.01))
    assert explorer.slider.step == 1.0
    assert [label for label, _ in explorer.target.options][0] == "EER (nearest)"
    distance = bioxr.score_cube(-scores, subject=subjects, reference_subject=subjects, score_kind="distance")
    explorer = widgets.threshold_explorer(distance, fmr_targets=())
    explorer.slider.value = -30.0
    xr.testing.assert_identical(explorer.rates, error_rates(distance, -30.0))
    assert "accept when distance &lt;= threshold" in explorer.table.value


def test_bad_input_is_refused(cube):
    with pytest.raises(ValueError, match="eer_method"):
        widgets.threshold_explorer(cube, eer_method="bogus")
    with pytest.raises(ValueError, match="score cube"):  # a Dataset that is not a comparison list
        widgets.threshold_explorer(cube.to_dataset(name="score"))
    with pytest.raises(TypeError, match="from_scores"):
        widgets.threshold_explorer(cube.values)


def test_a_comparison_list_explores_like_its_cube(cube):
    a = widgets.threshold_explorer(cube, show_progress=False)
    b = widgets.threshold_explorer(bioxr.to_comparisons(cube), show_progress=False)
    assert a.table.value == b.table.value


# ------------------------------------------------------------ design explorer


@pytest.fixture(scope="module")
def photohead_outcomes():
    return bioxr.outcomes.outcomes(bioxr.simulate.photohead(8, 4, 48, seed=1), ranks_only=True)


@pytest.fixture()
def design(photohead_outcomes):
    return widgets.design_explorer(photohead_outcomes, n_collections=40, n_runs=6, seed=3)


def _design_row(table: str, estimator: str) -> list[str]:
    row = re.search(rf'<tr class="bioxr-{estimator}">(.*?)</tr>', table).group(1)
    return re.findall(r"<t[dh]>(.*?)</t[dh]>", row)


def test_design_explorer_starts_at_the_papers_first_iteration(design, photohead_outcomes):
    import ipywidgets as W

    assert isinstance(design, W.VBox)
    assert design.partition.value == ("subject",) and design.design.value == "stratified"
    assert design.randomize.value == "none" and design.m.value == 4
    assert [label for label, _ in design.partition.options] == ["subject", "image", "subject × image"]
    assert all(40 % m == 0 and 40 // m >= 2 for m in design.m.options)
    assert design.cluster_draw.disabled, "the group draw only applies to the cluster design"
    success = bioxr.design.dichotomize(photohead_outcomes, rank=1)
    expected = bioxr.design.design_study(success, partition=("subject",), n_collections=40, n_runs=6, seed=3)
    xr.testing.assert_identical(design.study, expected)
    assert design.progress.layout.display == "none" and "ran in" in design.status.value
    assert list(design.history) == ["subject, stratified, time clustered, m = 4"]


def test_design_explorer_runs_what_the_widgets_say(design, photohead_outcomes):
    design.partition.value = ("subject", "image")
    design.randomize.value = "shuffle"
    design.design.value = "cluster"
    assert not design.cluster_draw.disabled
    design.cluster_draw.value = 0.5
    design.m.value = 5
    study = design.run()
    success = bioxr.design.dichotomize(photohead_outcomes, rank=1)
    expected = bioxr.design.design_study(success, partition=("subject", "image"), randomize="collection",
                                         design="cluster", cluster_draw=0.5, m=5, n_collections=40, n_runs=6, seed=3)
    xr.testing.assert_identical(study, expected)
    test = bioxr.design.design_test(expected)
    xr.testing.assert_identical(design.test, test)
    for est in ("srs", "st", "cl"):
        _, ratio, interval, verdict, f, p = _design_row(design.table.value, est)
        assert ratio == f"<b>{float(expected.ratio.sel(estimator=est)):#.3g}</b>"
        lo, hi = expected.ratio_interval.sel(estimator=est).values
        assert interval == f"{lo:#.3g} – {hi:#.3g}"
        assert re.sub(r"<[^>]+>", "", verdict) == expected.verdict.sel(estimator=est).item()
        assert f == f"{float(test.statistic.sel(estimator=est)):.3g}"
        assert p == html.escape(bioxr.design.format_pvalue(float(test.pvalue.sel(estimator=est))))
        sentence = re.search(rf'<li class="bioxr-{est}">(.*?)</li>', design.table.value).group(1)
        assert html.unescape(re.sub(r"<[^>]+>", "", sentence)) == f"{est}: {expected.statement.sel(estimator=est).item()}"
    assert "last iteration" in design.table.value and "two one-sided tests at 0.025 each" in design.table.value
    # both charts are offline SVG images: the study's design chart and the ratios of every study so far
    assert "Design study: subject × image, cluster (50% a trial), time shuffled, m = 5" in _svg(design.chart.value)
    summary = _svg(design.summary.value)
    assert "The studies run so far" in summary and "subject, stratified, time clustered, m = 4" in summary
    # the charts carry the ratios only; the three-way verdicts are the table's (no two-way "rejected" beside them)
    assert "rejected" not in _svg(design.chart.value) and "rejected" not in summary
    assert len(design.history) == 2


def _text(table: str) -> str:
    return html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", " ", table))


def test_design_explorer_says_when_there_are_too_few_trials(design):
    """m = 20 of 40 collections: two trials a run. Nothing bold green; the verdicts say why and what it takes."""
    design.partition.value = ("subject", "image")
    design.randomize.value = "shuffle"
    design.m.value = 20
    design.run()
    table = design.table.value
    assert design.study.attrs["n_trials"] == 2
    assert "color:#2a7d2a" not in table  # no "compatible" in bold green
    text = _text(table)
    assert "Too few trials to tell the designs apart." in text
    assert "With 6 runs of 2 trials (12 in all) a correct design would be called compatible 0% of the time" in text
    for est in ("srs", "st", "cl"):
        verdict = design.test.verdict.sel(estimator=est).item()
        assert verdict in ("inconclusive", "incompatible")
        if verdict == "inconclusive":
            lo, hi = design.test.ratio_interval.sel(estimator=est).values
            assert f"inconclusive: too few trials (the 95% interval of the variance ratio, {lo:#.3g}–{hi:#.3g}, " \
                   "is wider than the ±5% band;" in text



def test_design_explorer_gives_no_warning_when_the_study_has_the_power(photohead_outcomes):
    """40 trials a run and a wide band (a ratio within a factor of 2): verdicts without the warning."""
    explorer = widgets.design_explorer(photohead_outcomes, n_collections=40, n_runs=6, tolerance=1.0, seed=3)
    explorer.randomize.value = "shuffle"
    explorer.m.value = 1
    explorer.run()
    assert explorer.study.attrs["n_trials"] == 40 and float(explorer.test.power.min()) > 0.5
    text = _text(explorer.table.value)
    assert "Too few trials" not in text and "verdict (±100%)" in text and "[0.5, 2]" in text


def test_design_explorer_warns_only_when_an_inconclusive_verdict_lacks_power():
    def alert(verdicts, power, needed=(9000.0, 9000.0, 9000.0)):
        test = xr.Dataset({"verdict": ("estimator", verdicts), "power": ("estimator", power),
                           "trials_needed": ("estimator", list(needed))}, coords={"estimator": ["srs", "st", "cl"]})
        return widgets.DesignExplorer._power_alert(test, 30, 2, "±5%")

    assert "Too few trials" in alert(["incompatible", "inconclusive", "incompatible"], [0.0, 0.0, 0.0])
    assert "about 9,000 trials would be needed for 80%" in alert(["inconclusive"] * 3, [0.1, 0.2, 0.1])
    assert alert(["incompatible", "inconclusive", "incompatible"], [0.9, 0.9, 0.9]) == ""  # straddles an edge
    assert alert(["incompatible"] * 3, [0.0, 0.0, 0.0]) == ""
    capped = alert(["inconclusive"] * 3, [0.0] * 3, needed=[np.nan] * 3)
    assert "randomize over time or collect more collections" in capped


def test_design_explorer_prints_tiny_pvalues_as_below_1e_16():
    """Whole collections succeed or fail together: time left clustered, the F tests' p-values underflow."""
    rng = np.random.default_rng(0)
    z = rng.random(48) < 0.5
    values = np.broadcast_to(z, (8, 4, 48)).astype(float).copy()
    values[rng.random(values.shape) < 0.02] = 1.0
    success = xr.DataArray(values, dims=("subject", "image", "collection"))
    explorer = widgets.design_explorer(success, n_collections=40, n_runs=20, seed=1)
    assert float(explorer.test.pvalue.min()) == 0.0
    for est in ("srs", "st", "cl"):
        p = _design_row(explorer.table.value, est)[-1]
        assert p == "&lt; 1e-16", p
    assert explorer.test.verdict.values.tolist() == ["incompatible"] * 3
    assert "Too few trials" not in _text(explorer.table.value)  # every design told apart: no warning


@pytest.mark.parametrize("kwargs, match", [(dict(level=1.5), "level"), (dict(level=0), "level"),
                                           (dict(tolerance=0), "tolerance"), (dict(tolerance=-0.05), "tolerance"),
                                           (dict(n_runs=1), "n_runs"), (dict(rank=0), "rank")])
def test_design_explorer_checks_its_arguments_before_running(photohead_outcomes, kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets.design_explorer(photohead_outcomes, n_collections=40, **{"n_runs": 6, **kwargs})


def test_design_explorer_reports_an_impossible_design_and_keeps_the_last_study(design):
    before = design.study
    design.design.value = "cluster"
    design.partition.value = ("image",)  # 4 groups dealt into 10 trials: fewer than 2 a trial
    assert design.run() is None
    assert "cluster estimator needs 2" in design.error and "Not run" in design.status.value
    assert design.study is before and design.progress.layout.display == "none"


def test_design_explorer_runs_on_every_change_when_asked(design):
    design.auto.value = True
    design.randomize.value = "shuffle"
    assert design.study.attrs["randomize"].startswith("collection")
    design.m.value = 2
    assert design.study.attrs["m"] == 2 and len(design.history) == 3


def test_design_explorer_refuses_bad_input(photohead_outcomes):
    with pytest.raises(TypeError, match="outcome cube"):
        widgets.design_explorer(photohead_outcomes.to_dataframe())
    with pytest.raises(ValueError, match="trial_dim"):
        widgets.design_explorer(photohead_outcomes, trial_dim="time")
    success = bioxr.design.dichotomize(photohead_outcomes, rank=1)
    with pytest.raises(ValueError, match="without a mate"):
        widgets.design_explorer(success.where(success.subject != success.subject[0]))


def test_a_notebook_saved_with_widget_state_exports_offline_with_the_explorers_snapshot(explorer, tmp_path):
    """nbconvert would load the widget manager from a CDN (blank offline); notebook_to_html shows the snapshot."""
    import nbformat

    from bioxr.report import notebook_to_html

    explorer.slider.value = 2.5
    bundle = explorer._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("explorer", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [nbformat.v4.new_markdown_cell("# Explorer"), cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0,
        "state": {bundle["application/vnd.jupyter.widget-view+json"]["model_id"]: {
            "model_name": "VBoxModel", "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": {}}}}}
    path = tmp_path / "explore.ipynb"
    nbformat.write(nb, str(path))
    page = notebook_to_html(path, tmp_path / "explore.html", code=True).read_text()
    assert "bioxr-explorer-static" in page and page.count('<img alt="') >= 2
    assert "html-manager" not in page and "cdn.jsdelivr" not in page and "unpkg" not in page
    assert ">explorer<" in page.replace("<span class=\"n\">explorer</span>", ">explorer<")  # the code is shown
