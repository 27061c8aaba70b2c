"""The design explorer: the Micheals-Boult methodology run from a few buttons."""

from __future__ import annotations

import html
import time

import ipywidgets as W
import numpy as np
import xarray as xr

from .. import design as _design
from .. import plot
from .._core import check_level, check_replicates
from ._common import _chart_image

__all__ = ["DesignExplorer", "design_explorer"]

#: Randomization choices of the design explorer: label -> value of ``randomize`` (the trial dim when shuffled).
_SHUFFLE = "shuffle"
_DESIGN_TABLE_STYLE = ("<style>.bioxr-design table th, .bioxr-design table td {padding: 3px 10px; text-align: right} "
                       ".bioxr-design table tr > :first-child {text-align: left; padding-left: 0} "
                       ".bioxr-design table tr:first-child > * {border-bottom: 1px solid #999}</style>")
_MAX_HISTORY = 8
#: How each verdict of the design explorer is drawn.
_VERDICT_STYLE = {"compatible": '<b style="color:#2a7d2a">compatible</b>',
                  "incompatible": '<span style="color:#b00">incompatible</span>',
                  "inconclusive": '<span style="color:#8a5a00">inconclusive</span>'}
_ESTIMATOR_NAMES = {"srs": "simple random", "st": "stratified", "cl": "cluster"}



def _partitions(dims) -> list[tuple[str, tuple[str, ...]]]:
    """Every non-empty combination of the dims, smallest first: (label, dims)."""
    from itertools import combinations

    out = []
    for k in range(1, len(dims) + 1):
        for combo in combinations(dims, k):
            out.append((" × ".join(combo), tuple(combo)))
    return out


class DesignExplorer(W.VBox):
    """Choose a partition and a sample design, run the Micheals-Boult study, read the verdict.

    Build it with :func:`design_explorer`. Its parts are attributes, so a
    script (or a test) can drive it without a browser: set
    ``explorer.partition.value``, ``explorer.design.value``,
    ``explorer.randomize.value`` or ``explorer.m.value``, call
    :meth:`run` (or press ``explorer.run_button``), and read
    ``explorer.table.value``, ``explorer.study`` or ``explorer.test``.

    Attributes
    ----------
    partition : ipywidgets.Dropdown
        The groups: every combination of the probe dims other than the
        trial dim (values are tuples of dim names).
    design : ipywidgets.ToggleButtons
        ``"stratified"`` (the same groups every trial) or ``"cluster"``
        (groups drawn at random per trial).
    cluster_draw : ipywidgets.Dropdown
        For the cluster design: ``"disjoint"`` (each run deals its groups
        into disjoint sets, one per trial: the paper's figure 4) or a share
        of the groups drawn independently every trial.
    randomize : ipywidgets.ToggleButtons
        ``"none"`` (time left clustered) or ``"shuffle"`` (each series'
        collections permuted independently, afresh each run).
    m : ipywidgets.Dropdown
        Collections per trial (divisors of the collections a run draws that
        leave at least two trials).
    run_button : ipywidgets.Button
    auto : ipywidgets.Checkbox
        Run again on every change of the choices above.
    progress : ipywidgets.IntProgress
        Steps of a run (shown while it computes).
    status : ipywidgets.HTML
        What was run and how long it took, or why it could not run.
    chart, summary : ipywidgets.HTML
        The design chart of the last study; the ratio chart of the studies
        run so far (SVG images).
    table : ipywidgets.HTML
        Per estimator: ratio mean / empirical with its interval, the
        verdict (``compatible``: the whole interval inside the band;
        ``incompatible``: wholly outside it; ``inconclusive``: across an
        edge, or wider than the band, when the study has too few trials),
        and the F test's statistic and p-value (tiny ones as "< 1e-16");
        then each verdict in a sentence, with the trials an inconclusive
        study would need, and a warning when even a correct design would
        seldom be called compatible at this size.
    success : xarray.DataArray
        The dichotomized outcomes the studies use.
    study, test : xarray.Dataset or None
        :func:`bioxr.design.design_study` and :func:`bioxr.design.design_test`
        of the last run (None before a successful run).
    history : dict of str to xarray.Dataset
        The studies run so far, labelled by their settings (the last
        ``8``).
    error : str or None
        Why the last run failed (an impossible combination), else None.
    last_run_seconds : float
    """

    def __init__(self, outcomes, *, rank: int = 1, trial_dim: str = "collection", n_collections: int = 180,
                 n_runs: int = 30, level: float = 0.95, tolerance: float = 0.05, seed=0, auto: bool = False):
        if isinstance(outcomes, xr.Dataset):
            success = _design.dichotomize(outcomes, rank=rank)
        elif isinstance(outcomes, xr.DataArray):
            success = outcomes
        else:
            raise TypeError("design_explorer takes an outcome cube (Dataset from bioxr.outcomes.outcomes) or a binary "
                            f"success DataArray (bioxr.design.dichotomize), got {type(outcomes).__name__}.")
        if trial_dim not in success.dims:
            raise ValueError(f"trial_dim {trial_dim!r} is not a dim of the outcomes {success.dims}.")
        level, tolerance = check_level(level), _design._check_tolerance(tolerance)
        try:
            n_runs = check_replicates(n_runs, minimum=2)
        except ValueError:
            raise ValueError(f"n_runs={n_runs!r}; give a whole number of runs, at least 2.") from None
        others = [d for d in success.dims if d != trial_dim]
        if not others:
            raise ValueError("the outcomes need a dim besides the trial dim to partition by.")
        if not bool(success.notnull().all()):
            raise ValueError("the outcomes have probes without a mate (NaN success): select the probes with a mate "
                             "first, e.g. the subjects enrolled.")
        self.success = success
        self.trial_dim = trial_dim
        self.n_collections = int(min(n_collections, success.sizes[trial_dim]))
        self.n_runs, self.level, self.tolerance, self.seed = int(n_runs), float(level), float(tolerance), seed
        self.study = self.test = None
        self.error = None
        self.history: dict[str, xr.Dataset] = {}
        self.last_run_seconds = float("nan")

        style = {"description_width": "initial"}
        self.partition = W.Dropdown(options=_partitions(others), description="partition by", style=style,
                                    layout=W.Layout(width="260px"))
        self.design = W.ToggleButtons(options=[("stratified", "stratified"), ("cluster", "cluster")],
                                      description="design", style={**style, "button_width": "90px"})
        self.cluster_draw = W.Dropdown(options=[("disjoint sets, one per trial", "disjoint"),
                                                ("25% of groups per trial", 0.25), ("50% of groups per trial", 0.5)],
                                       description="groups a trial draws", style=style, disabled=True,
                                       layout=W.Layout(width="330px"))
        self.randomize = W.ToggleButtons(options=[("none", "none"), (f"shuffle {trial_dim}s", _SHUFFLE)],
                                         description="randomize time", style={**style, "button_width": "130px"})
        choices = [k for k in range(1, self.n_collections + 1) if self.n_collections % k == 0
                   and self.n_collections // k >= 2]
        if not choices:
            raise ValueError(f"{self.n_collections} {trial_dim} values a run leave no m with two trials.")
        self.m = W.Dropdown(options=choices, value=4 if 4 in choices else choices[0], description="m",
                            style=style, layout=W.Layout(width="110px"))
        self.run_button = W.Button(description="Run study", button_style="primary", icon="play",
                                   layout=W.Layout(width="130px"))
        self.auto = W.Checkbox(value=bool(auto), description="run on every change", indent=False,
                               layout=W.Layout(width="180px"))
        self.progress = W.IntProgress(value=0, min=0, max=4, bar_style="info", layout=W.Layout(width="200px"))
        self.progress.layout.display = "none"
        self.status = W.HTML()
        self.chart = W.HTML()
        self.table = W.HTML()
        self.summary = W.HTML()
        self.run_button.on_click(lambda _: self.run())
        for widget in (self.partition, self.design, self.cluster_draw, self.randomize, self.m):
            widget.observe(self._on_change, names="value")

        controls = W.VBox([
            W.HBox([self.partition, self.m, self.randomize], layout=W.Layout(flex_flow="row wrap", align_items="center")),
            W.HBox([self.design, self.cluster_draw], layout=W.Layout(flex_flow="row wrap", align_items="center")),
            W.HBox([self.run_button, self.auto, self.progress, self.status],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
        ])
        super().__init__([controls, self.chart, self.table, self.summary])
        self.run()

    # ----------------------------------------------------------- events ---

    def _on_change(self, change) -> None:
        self.cluster_draw.disabled = self.design.value != "cluster"
        if self.auto.value:
            self.run()

    def settings(self) -> dict:
        """The keyword arguments of :func:`bioxr.design.design_study` the widgets describe."""
        draw = self.cluster_draw.value
        return dict(
            partition=tuple(self.partition.value), trial_dim=self.trial_dim, m=int(self.m.value),
            n_collections=self.n_collections, n_runs=self.n_runs, design=self.design.value,
            randomize=self.trial_dim if self.randomize.value == _SHUFFLE else None,
            cluster_draw=None if self.design.value != "cluster" or draw == "disjoint" else float(draw),
            level=self.level, tolerance=self.tolerance, seed=self.seed,
        )

    def _label(self, s: dict) -> str:
        draw = "" if s["design"] != "cluster" else (" (disjoint)" if s["cluster_draw"] is None
                                                   else f" ({s['cluster_draw']:.0%} a trial)")
        time_ = "time shuffled" if s["randomize"] else "time clustered"
        return f"{' × '.join(s['partition'])}, {s['design']}{draw}, {time_}, m = {s['m']}"

    def _step(self, what: str) -> None:
        self.progress.value = min(self.progress.value + 1, self.progress.max)
        self.status.value = f"<span style='color:#555'>computing {html.escape(what)}…</span>"

    def run(self) -> xr.Dataset | None:
        """Run the study the widgets describe; update the chart, the table and the summary.

        Returns the study, or None when the combination is impossible (too
        few groups to draw for the trials, say): ``error`` and the status
        line then say why, and the last good study stays shown.
        """
        start = time.perf_counter()
        s = self.settings()
        label = self._label(s)
        self.progress.value = 0
        self.progress.layout.display = ""
        try:
            self._step("the study (runs of trials)")
            try:
                study = _design.design_study(self.success, **s)
            except ValueError as err:
                self.error = str(err)
                self.status.value = (f"<span style='color:#b00'><b>Not run</b> ({html.escape(label)}): "
                                     f"{html.escape(str(err))}</span>")
                return None
            self._step("the F tests")
            test = _design.design_test(study)
            self.error = None
            self.study, self.test = study, test
            self.history.pop(label, None)
            self.history[label] = study
            while len(self.history) > _MAX_HISTORY:
                self.history.pop(next(iter(self.history)))
            self._step("the design chart")
            self.table.value = self._table_html(study, test)
            # the charts show the ratios only: the verdicts (three-way, with their reasons) are the table's
            self.chart.value = _chart_image(plot.design_chart(study, verdict=False, title=f"Design study: {label}"),
                                            "empirical variance and mean estimators per run")
            self._step("the ratio chart of the studies so far")
            self.summary.value = _chart_image(plot.design_ratio_chart(self.history, verdict=False,
                                                                      title="The studies run so far"),
                                              "ratio of each estimator to the empirical variance, per study")
        finally:
            self.progress.layout.display = "none"
        self.last_run_seconds = time.perf_counter() - start
        self.status.value = f"{html.escape(label)} · ran in {self.last_run_seconds:.1f} s"
        return study

    def _table_html(self, study: xr.Dataset, test: xr.Dataset) -> str:
        level, tol = float(test.attrs["level"]), float(test.attrs["tolerance"])
        low, high = _design.band(tol)
        tol_text = f"±{tol * 100:.3g}%"
        head = (f"<tr><th>estimator</th><th>mean / empirical</th><th>{level:.0%} interval</th>"
                f"<th>verdict ({tol_text})</th><th>F</th><th>p-value</th></tr>")
        rows, sentences = [], []
        for est in test["estimator"].values.tolist():
            r = float(test["ratio"].sel(estimator=est))
            lo, hi = (float(v) for v in test["ratio_interval"].sel(estimator=est).values)
            verdict = str(test["verdict"].sel(estimator=est).item())
            f, pv = float(test["statistic"].sel(estimator=est)), float(test["pvalue"].sel(estimator=est))
            name = _ESTIMATOR_NAMES.get(est, est)
            rows.append(f'<tr class="bioxr-{est}"><th>{est} ({name})</th><td><b>{r:#.3g}</b></td>'
                        f"<td>{lo:#.3g} – {hi:#.3g}</td><td>{_VERDICT_STYLE[verdict]}</td><td>{f:.3g}</td>"
                        f"<td>{html.escape(_design.format_pvalue(pv))}</td></tr>")
            text = str(study["statement"].sel(estimator=est).item())
            sentences.append(f'<li class="bioxr-{est}"><b>{est}</b>: {html.escape(text)}</li>')
        a = study.attrs
        alert = self._power_alert(test, int(a["n_runs"]), int(a["n_trials"]), tol_text)
        note = (f"Ratio = mean estimator / empirical variance of the trial rates, {a['n_runs']} runs of "
                f"{a['n_trials']} trials; the {level:.0%} interval is the ratio times F quantiles (degrees of "
                f"freedom corrected for the runs' overlap). Compatible when the whole interval lies inside the band "
                f"[{low:.3g}, {high:.3g}] ({tol_text}: an equivalence test, two one-sided tests at "
                f"{(1 - level) / 2:.3g} each); incompatible when it lies wholly outside; inconclusive otherwise. "
                "The F test (two-sided, H0: the estimator is unbiased) is for the design you settle on: the paper "
                "tests only at the last iteration, so read p-values of exploratory runs as a guide, not a test.")
        return ('<div class="bioxr-design" style="font-size:13px">' + _DESIGN_TABLE_STYLE +
                '<table style="border-collapse:collapse;margin:4px 0">' + head + "".join(rows) + "</table>" + alert +
                '<ul style="margin:4px 0;padding-left:18px;max-width:720px">' + "".join(sentences) + "</ul>"
                f'<div style="color:#555;font-size:12px;max-width:720px">{html.escape(note)}</div></div>')

    @staticmethod
    def _power_alert(test: xr.Dataset, n_runs: int, n_trials: int, tol_text: str) -> str:
        """A warning when a verdict is inconclusive and even a correct design would seldom be called compatible."""
        best = float(test["power"].max())
        if best >= 0.5 or not (test["verdict"] == "inconclusive").any():
            return ""
        needed = test["trials_needed"].values
        if np.isfinite(needed).any():
            more = f"about {float(np.nanmin(needed)):,.0f} trials would be needed for {_design.TARGET_POWER:.0%}"
        else:
            more = ("more trials from these data cannot get there while the runs share their collections: "
                    + ("collect more collections" if int(test.attrs.get("independent_draws", 1)) > 1 else
                       "randomize over time or collect more collections"))
        text = (f"With {n_runs} runs of {n_trials} trials ({n_runs * n_trials:,} in all) a correct design would be "
                f"called compatible {best:.0%} of the time at {tol_text}: {more}. Read 'inconclusive' as 'not "
                "enough data', not as support.")
        return ('<div class="bioxr-design-power" style="color:#8a5a00;margin:4px 0;max-width:720px">'
                f"<b>Too few trials to tell the designs apart.</b> {html.escape(text)}</div>")


def design_explorer(outcomes, *, rank: int = 1, trial_dim: str = "collection", n_collections: int = 180,
                    n_runs: int = 30, level: float = 0.95, tolerance: float = 0.05, seed=0,
                    auto: bool = False) -> DesignExplorer:
    """An interactive Micheals-Boult design study (seed 000) on an outcome cube.

    Choose the partition (any combination of the probe dims other than
    time), the design (stratified: the same groups every trial; cluster:
    groups drawn per trial), whether to randomize over time and m; press
    *Run study* (or tick *run on every change*). The design chart shows
    the empirical variance of the trial rates against the three estimators
    run by run; the table gives each ratio with its interval, the verdict
    and the F test; a ratio chart collects the studies run so far, so the
    iterations of the methodology read at a glance. The default choices
    are the paper's first iteration (partition by subject, time left
    clustered); a study takes about a second at the paper's size (256 x 4
    x 1440).

    Parameters
    ----------
    outcomes : xarray.Dataset or xarray.DataArray
        An outcome cube (:func:`bioxr.outcomes.outcomes`), dichotomized
        with ``rank``; or a binary success array
        (:func:`bioxr.design.dichotomize`). Every probe needs a mate (no
        NaN success).
    rank : int, keyword-only
        Rank-``rank`` success (ties strict, so outcomes are binary).
    trial_dim : str, keyword-only
        The time dim drawn into runs and split into trials.
    n_collections : int, keyword-only
        Values of ``trial_dim`` a run draws (capped at those available).
    n_runs, level, tolerance, seed : keyword-only
        As in :func:`bioxr.design.design_study`.
    auto : bool, keyword-only
        Start with *run on every change* ticked.

    Returns
    -------
    DesignExplorer
        An :class:`ipywidgets.VBox` that has run the default study;
        display it (last expression of a cell).

    See Also
    --------
    bioxr.design.design_study, bioxr.design.design_test, bioxr.plot.design_chart

    Examples
    --------
    >>> from bioxr import simulate
    >>> from bioxr.outcomes import outcomes
    >>> from bioxr.widgets import design_explorer
    >>> explorer = design_explorer(outcomes(simulate.photohead(16, 4, 48, seed=1)), n_collections=40, n_runs=5)
    >>> explorer.partition.value, explorer.design.value, explorer.randomize.value
    (('subject',), 'stratified', 'none')
    >>> explorer.partition.value = ("subject", "image")
    >>> explorer.randomize.value = "shuffle"
    >>> study = explorer.run()
    >>> study.attrs["partition"], study.attrs["independent_draws"]
    ('subject, image', 64)
    >>> [explorer.test.verdict.sel(estimator=e).item() in explorer.table.value for e in ("srs", "st", "cl")]
    [True, True, True]
    """
    return DesignExplorer(outcomes, rank=rank, trial_dim=trial_dim, n_collections=n_collections, n_runs=n_runs,
                          level=level, tolerance=tolerance, seed=seed, auto=auto)
