"""Uncertainty on charts: bootstrap bands under curves, and the Micheals-Boult design study.

- :func:`design_chart`: one design study (:func:`bioxr.design.design_study`)
  as in seed 000's figures 1 to 4: per run, the empirical variance of the
  trial rates and the mean of each design's estimator, on a log scale;
- :func:`design_ratio_chart`: the ratio mean estimator / empirical variance
  of several studies side by side, with its interval, the line at 1 and the
  tolerance band: the iterations of the methodology at a glance.

The band helpers turn bootstrap results into layers that
:func:`bioxr.plot.det_chart`, :func:`bioxr.plot.roc_chart` and
:func:`bioxr.plot.cmc_chart` draw under their curves, and write the
subtitle lines saying what each band is. A band Dataset holds pointwise
intervals (``fmr_interval``, ``fnmr_interval``, ``cmc_interval``), a
simultaneous band (``fmr_band``, ``fnmr_band``, ``cmc_band`` from
:func:`bioxr._core.simultaneous_band`, attrs ``band``, ``level``,
``critical_value``), or both: the simultaneous band is drawn light, the
pointwise one darker inside it, and a legend names them ("95% simultaneous
band", "95% pointwise band").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from ._axes import _AXIS, _LEGEND, SIZE, _expect, _fill, _series_frame, _snap_log, _title

__all__ = ["design_chart", "design_ratio_chart"]

_BAND_OPACITY = 0.2
_TINY = 1e-12  # rates of 0 or 1 are clipped this close to the edge: drawn off the axes, cut by the plot area


# ------------------------------------------------------------ curve bands --


def _check_band(band, variables, what: str, along: str) -> None:
    if not isinstance(band, xr.Dataset):
        raise TypeError(f"band= takes a Dataset ({what}), got {type(band).__name__}.")
    missing = [v for v in variables if v not in band]
    if missing:
        raise ValueError(f"band= needs {list(variables)} ({what}); the Dataset lacks {missing}.")
    for v in variables:
        if along not in band[v].dims or "bound" not in band[v].dims:
            raise ValueError(f"band= variable {v!r} needs dims {along!r} and 'bound'; it has {band[v].dims}.")
    if "bound" not in band.coords or set(band["bound"].values.tolist()) != {"lower", "upper"}:
        raise ValueError("band= needs a 'bound' coordinate with the labels 'lower' and 'upper'.")


#: The simultaneous band beside each pointwise interval variable (from :func:`bioxr._core.simultaneous_band`).
_SIMULTANEOUS = {"fmr_interval": "fmr_band", "fnmr_interval": "fnmr_band", "cmc_interval": "cmc_band",
                 "rate_interval": "rate_band"}
#: Fill opacity of each kind: the wide simultaneous band light, the pointwise one (inside it) darker.
_KIND_OPACITY = {"simultaneous": 0.13, "pointwise": _BAND_OPACITY}


def _band_kinds(band, pointwise: tuple[str, ...], what: str, along: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """The bands a Dataset holds, the simultaneous one first: ``(kind, legend label, variables)``.

    A kind is drawn when any of its variables is present (all of them must
    be); ``*_interval`` variables are pointwise, ``*_band`` ones
    simultaneous. With neither, the pointwise variables are asked for.
    """
    if not isinstance(band, xr.Dataset):
        raise TypeError(f"band= takes a Dataset ({what}), got {type(band).__name__}.")
    simultaneous = tuple(_SIMULTANEOUS[v] for v in pointwise)
    kinds = []
    for kind, names in (("simultaneous", simultaneous), ("pointwise", pointwise)):
        if any(v in band for v in names):
            _check_band(band, names, what, along)
            kinds.append((kind, _kind_label(band, kind, names), names))
    if not kinds:
        _check_band(band, pointwise, what, along)  # raises: says what is missing
    return kinds


def _kind_label(band: xr.Dataset, kind: str, names) -> str:
    """The legend label of a band: "95% simultaneous band", "95% pointwise band"."""
    level = band[names[0]].attrs.get("level", band.attrs.get("level"))
    return f"{float(level):.0%} {kind} band" if level is not None else f"{kind} band"


def _simultaneous_text(band: xr.Dataset, names, what: str, lead: str) -> list[str]:
    """Subtitle lines of a simultaneous band: its level and reach, then its method and c against the pointwise z."""
    attrs = band[names[0]].attrs
    level = attrs.get("level", band.attrs.get("level"))
    label = str(attrs.get("band", "simultaneous"))
    how = label[label.find("(") + 1 : label.rfind(")")] if "(" in label else ""
    cs = [float(v) for name in names for v in np.atleast_1d(band[name].attrs.get("critical_value", []))]
    z = attrs.get("pointwise_z")
    critical = ""
    if cs:
        lo, hi = min(cs), max(cs)
        critical = f"c = {lo:.2f}" if np.isclose(lo, hi) else f"c = {lo:.2f} to {hi:.2f}"
        critical += f" against the pointwise z = {float(z):.2f}" if z is not None else ""
    subject = what.replace(" at each threshold", ", all thresholds at once").replace(" at each rank", ", all ranks at once")
    head = " ".join(t for t in (lead, f"{float(level):.0%}" if level is not None else "", f"simultaneous band of {subject}")
                    if t)
    detail = ": ".join(t for t in (how, critical) if t)
    return [head, f"({detail})" if detail else ""]


def _interval_name(text: str) -> str:
    """A few words naming a pointwise interval from its attrs text (which may run to a sentence)."""
    if text.startswith("percentile"):
        return "percentile"
    if text.startswith("binomial interval on the effective count"):
        if "Korn & Graubard 1998)" in text.split("; FMR:")[-1] and "; FMR:" in text:
            return "effective-count binomial; FMR on the Korn-Graubard count for crossed subjects"
        if "bootstrap-t" not in text:
            return "effective-count binomial"
        return "effective-count binomial (FMR widened to the bootstrap-t)" if "; FMR;" in text else \
            "effective-count binomial (widened to the bootstrap-t)"
    return re.split(r"[,;(]", text)[0].strip()


def _band_text(band: xr.Dataset, what: str) -> list[str]:
    """Subtitle lines saying what the shaded bands are: each band, then how they were resampled."""
    a = band.attrs
    level = a.get("level")
    method = str(a.get("method", ""))
    unit = a.get("unit") or (re.search(r"bootstrap over (\w+)", method) or [None, None])[1]
    interval = _interval_name(str(a.get("interval") or ("percentile" if "percentile" in method else "")))
    if interval.startswith("effective-count binomial ("):  # "binomial (widened ...)" -> "binomial, widened ..."
        interval = interval.replace(" (", ", ", 1).rstrip(")")
    simultaneous = [v for v in _SIMULTANEOUS.values() if v in band]
    pointwise = [v for v in _SIMULTANEOUS if v in band]
    both = bool(simultaneous and pointwise)
    lines = []
    if simultaneous:
        lines += _simultaneous_text(band, simultaneous, what, "Light band:" if both else "Band:")
    if pointwise or not simultaneous:
        level = band[pointwise[0]].attrs.get("level", level) if pointwise else level
        lines.append(" ".join(t for t in ("Darker band:" if both else "Band:",
                                          f"{float(level):.0%}" if level is not None else "",
                                          f"pointwise interval of {what}") if t)
                     + (f" ({interval})" if interval else ""))
    if unit:
        how = f"{str(unit).capitalize()} bootstrap: whole {unit}s resampled"
        if int(a.get("two_level", 0) or 0):
            how += ", then their attempts"
    else:
        how = method or "method not recorded"
    n = a.get("n_replicates")
    how += f", {int(n):,} replicates" if n is not None else ""
    if str(a.get("gallery_variance", "")).startswith("gallery subjects' share of the variance included"):
        how += "; widened for the gallery subjects' share of the variance"
    return [*lines, how]


def _rate_band_frame(band: xr.Dataset, series: str | None, *, tmr: bool = False) -> pd.DataFrame:
    """Polygon vertices of the union of the (FMR interval x FNMR interval) rectangles, one per threshold.

    At a threshold ``t`` the bootstrap gives an interval for FMR and one for
    FNMR; the operating point of ``t`` lies in their rectangle (each side at
    the band's level). The rectangles of successive thresholds follow the
    curve; their union is traced as a staircase: up and left along the
    upper-right corners, back down and right along the lower-left ones.
    Columns ``fmr`` and ``fnmr`` (or ``tmr``), ``order`` and the series.
    With a simultaneous band (``fmr_band``, ``fnmr_band``) beside or
    instead of the pointwise one, each band is a polygon of its own and a
    ``band`` column holds its legend label, the simultaneous band first.
    """
    kinds = _band_kinds(band, ("fmr_interval", "fnmr_interval"), "from bioxr.bootstrap.bootstrap_curve", "threshold")
    similarity = band.attrs.get("score_kind", "similarity") != "distance"
    labelled = [kind for kind, _, _ in kinds] != ["pointwise"]  # a pointwise band alone keeps its old look
    parts = []
    for _, label, (fmr_var, fnmr_var) in kinds:
        for frame in _polygons(band, {fmr_var: "fmr", fnmr_var: "fnmr"}, series, similarity):
            if labelled:
                frame["band"] = label
            parts.append(frame)
    if not parts:
        raise ValueError("band= holds no finite interval.")
    frame = pd.concat(parts, ignore_index=True)
    if tmr:
        frame["tmr"] = 1.0 - frame["fnmr"]
    frame["order"] = np.arange(len(frame))
    return frame


def _polygons(band: xr.Dataset, names: dict, series: str | None, similarity: bool) -> list[pd.DataFrame]:
    """One staircase polygon per series of the rectangles of ``names`` (variable -> "fmr" / "fnmr")."""
    parts = []
    first = next(iter(names))
    kept = [d for d in band[first].dims if d not in ("threshold", "bound")]
    if kept and series is None:
        raise ValueError(f"band= has dims {kept} but the curve has one series: compute both over the same dims.")
    groups = [((), band)] if not kept else list(band.stack(_series=kept).groupby("_series"))
    for key, part in groups:
        part = part.squeeze(drop=False) if kept else part
        lo = {v: np.asarray(part[k].sel(bound="lower").values, float) for k, v in names.items()}
        hi = {v: np.asarray(part[k].sel(bound="upper").values, float) for k, v in names.items()}
        order = np.argsort(np.asarray(part["threshold"].values, float), kind="stable")
        if not similarity:
            order = order[::-1]  # FMR falls along the drawing order, as for similarity scores
        a, A = lo["fmr"][order], hi["fmr"][order]
        b, B = lo["fnmr"][order], hi["fnmr"][order]
        ok = np.isfinite(a) & np.isfinite(A) & np.isfinite(b) & np.isfinite(B)
        a, A, b, B = a[ok], A[ok], b[ok], B[ok]
        if a.size == 0:
            continue
        # upper-right staircase, from the lowest rectangle to the highest: up, then left to the next corner
        ux, uy = np.repeat(A, 2), np.r_[b[0], np.repeat(B, 2)[:-1]]
        # lower-left staircase, back from the highest to the lowest: down, then right to the next corner
        lx, ly = np.repeat(a[::-1], 2), np.r_[B[-1], np.repeat(b[::-1], 2)[:-1]]
        xs, ys = np.r_[ux, lx, A[0]], np.r_[uy, ly, b[0]]
        keep = np.r_[True, (np.diff(xs) != 0) | (np.diff(ys) != 0)]  # drop repeated vertices
        frame = pd.DataFrame({"fmr": xs[keep], "fnmr": ys[keep]})
        if kept:
            labels = dict(zip(kept, key if isinstance(key, tuple) else (key,)))
            frame[series] = (", ".join(str(labels[d]) for d in kept) if len(kept) > 1
                             else labels[kept[0]])
        parts.append(frame)
    return parts


def _kind_encoding(frame: pd.DataFrame) -> list:
    """Opacity by band kind with its legend ("95% simultaneous band", ...), when the frame has kinds.

    (Vega-Lite draws a legend for ``opacity``, not for a nominal ``fillOpacity``.)
    """
    if "band" not in frame:
        return []
    labels = list(dict.fromkeys(frame["band"]))
    opacity = [_KIND_OPACITY["simultaneous" if "simultaneous" in lab else "pointwise"] for lab in labels]
    legend = alt.Legend(title=None, orient="bottom", direction="horizontal", symbolType="square", symbolSize=200,
                        symbolStrokeWidth=0, symbolFillColor="#1f77b4", labelLimit=260, **_LEGEND)
    return [alt.Opacity("band:N", scale=alt.Scale(domain=labels, range=opacity), legend=legend)]


def _rate_band_layer(frame: pd.DataFrame, rates: tuple[str, str], x_enc: alt.X, y_enc: alt.Y, series: str | None,
                     curve_frame: pd.DataFrame, to_plot=None) -> alt.Chart:
    """The band polygon as a filled, unstroked line mark (clipped at the plot area).

    ``rates`` are the polygon's rate columns; with ``to_plot`` they are
    transformed into the ``x`` and ``y`` columns the encodings read (probit
    DET axes), else the encodings read the rate columns themselves.
    """
    frame = frame.copy()
    for c in rates:
        frame[c] = frame[c].clip(_TINY, 1 - _TINY)
    if to_plot is not None:
        frame["x"], frame["y"] = to_plot(frame[rates[0]]), to_plot(frame[rates[1]])
    fill = _fill(curve_frame, series)
    detail = [alt.Detail(f"{series}:N")] if series else []
    if "band" in frame:
        detail.append(alt.Detail("band:N"))
    opacity = _BAND_OPACITY if "band" not in frame else 1.0  # else the encoded opacity of each kind
    return alt.Chart(frame).mark_line(clip=True, strokeWidth=0, fillOpacity=opacity, interpolate="linear").encode(
        x_enc, y_enc, *detail, *_kind_encoding(frame), fill=fill, order="order:Q")


def _rank_band_frame(band: xr.Dataset, series: str | None, ranks) -> pd.DataFrame:
    """Lower and upper identification rate per rank, from a bootstrap over individuals.

    With a simultaneous band (``cmc_band``) beside or instead of the
    pointwise interval, a ``band`` column holds each row's legend label, the
    simultaneous band's rows first.
    """
    var = "cmc_interval" if ("cmc_interval" in band or "cmc_band" in band) else "rate_interval"
    kinds = _band_kinds(band, (var,), "from bioxr.bootstrap.bootstrap_rate_interval over rank", "rank")
    parts = []
    for kind, label, (name,) in kinds:
        wide = band[name].to_dataset(dim="bound")
        frame, band_series = _series_frame(wide, ("lower", "upper"), along="rank")
        if band_series != series:
            raise ValueError(f"band= is over {band_series or 'no kept dim'} but the curve over "
                             f"{series or 'no kept dim'}: compute both over the same dims.")
        frame = frame.dropna(subset=["lower", "upper"])
        frame = frame[frame["rank"].isin(list(ranks))]
        if [k for k, _, _ in kinds] != ["pointwise"]:  # a pointwise band alone keeps its old look
            frame = frame.assign(band=label)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)


# ------------------------------------------------------------ design study -


#: Estimators of a design study: legend label, colour and dash, as in seed 000's figures.
_DESIGN_SERIES = {
    "empirical_variance": ("empirical variance", "#d62728", [1, 0]),
    "mean_v_srs": ("mean V_srs (simple random)", "#7f7f7f", [7, 4]),
    "mean_v_st": ("mean V_st (stratified)", "#1f77b4", [8, 3, 2, 3]),
    "mean_v_cl": ("mean V_cl (cluster)", "#2ca02c", [2, 3]),
}
_ESTIMATOR_NAMES = {"srs": "simple random", "st": "stratified", "cl": "cluster"}


def _check_study(study, what: str) -> None:
    needed = ["empirical_variance", "mean_v_srs", "mean_v_st", "mean_v_cl", "ratio", "ratio_interval", "compatible"]
    if not isinstance(study, xr.Dataset) or any(n not in study for n in needed):
        _expect(study, what, "bioxr.design.design_study", "the empirical variance and the three estimators per run")


def _fmt_ratio(r: float) -> str:
    return f"{r:.3g}" if r < 0.1 else f"{r:.2f}"


def _design_text(attrs) -> list[str]:
    """Subtitle lines: what was grouped, how trials were drawn, and the sizes."""
    partition = " × ".join(p.strip() for p in str(attrs.get("partition", "?")).split(","))
    groups, per_trial = attrs.get("n_groups"), attrs.get("groups_per_trial")
    elements = attrs.get("elements_per_group")
    design = attrs.get("design", "?")
    if design == "cluster":
        draw = attrs.get("cluster_draw", "disjoint")
        how = (f"cluster design: {per_trial:,} of {groups:,} groups drawn per trial, disjoint within a run"
               if draw == "disjoint" else
               f"cluster design: {per_trial:,} of {groups:,} groups ({float(draw):.0%}) drawn per trial, independently")
    else:
        how = f"stratified design: all {groups:,} groups in every trial"
    randomize = str(attrs.get("randomize", "none"))
    time = ("time left clustered (a trial's outcomes share their collections)" if randomize == "none" else
            f"time randomized: {attrs.get('trial_dim', 'collection')}s shuffled per series")
    sizes = (f"{attrs.get('n_runs', '?')} runs of {attrs.get('n_trials', '?')} trials · m = {attrs.get('m', '?')} "
             f"{attrs.get('trial_dim', 'collection')}s a trial ({attrs.get('n_collections', '?')} of "
             f"{attrs.get('n_times', '?')} a run) · {elements:,} outcomes per group and trial · seed {attrs.get('seed', '?')}")
    return [f"Partition by {partition} · {how}", f"{time[0].upper()}{time[1:]}", sizes]


def _verdict_of(study: xr.Dataset, est) -> str:
    """The study's three-way verdict of an estimator (compatible, incompatible, inconclusive)."""
    if "verdict" in study:
        return str(study["verdict"].sel(estimator=est).values)
    return "compatible" if bool(study["compatible"].sel(estimator=est)) else "incompatible"


def _ratio_text(study: xr.Dataset, verdict: bool) -> str:
    level = float(study.attrs.get("level", 0.95))
    parts = []
    for est in study["estimator"].values.tolist():
        r = float(study["ratio"].sel(estimator=est))
        lo, hi = (float(v) for v in study["ratio_interval"].sel(estimator=est).values)
        text = f"{est} {_fmt_ratio(r)} ({_fmt_ratio(lo)}–{_fmt_ratio(hi)})"
        if verdict:
            text += " " + _verdict_of(study, est)
        parts.append(text)
    lead = f"Mean estimator / empirical variance ({level:.0%} interval)"
    if verdict:
        lead += f", verdict at ±{float(study.attrs.get('tolerance', 0.05)):.0%}"
    return lead + ": " + " · ".join(parts)  # wrapped at the " · " by the title


def design_chart(study: xr.Dataset, *, verdict: bool = True, title: str | None = None) -> alt.LayerChart:
    """A design study drawn as seed 000's figures: the empirical variance against the estimators, run by run.

    Per run (x): the empirical variance of the run's trial rates (solid
    red) and the mean over its trials of the simple random sampling (dashed
    grey), stratified (dot-dash blue) and cluster (dotted green)
    estimators, on a log scale. Where an estimator's line lies on the red
    one, the design it assumes describes how the data vary; a line far
    above or below rejects it. The subtitle states the partition, the
    design, the randomization, m and the sizes, and each estimator's ratio
    mean / empirical variance with its interval (and the verdict).

    Parameters
    ----------
    study : xarray.Dataset
        From :func:`bioxr.design.design_study`.
    verdict : bool, keyword-only
        Name each estimator's verdict in the subtitle: ``compatible``,
        ``incompatible`` or ``inconclusive`` (the study's equivalence rule). The methodology gives verdicts at the
        last iteration; earlier ones show the ratios only.
    title : str, optional, keyword-only
        Default: "Design study: " and the partition, design and randomization.

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    bioxr.design.design_study, design_ratio_chart

    References
    ----------
    Micheals & Boult, "Improving Variance Estimation in Biometric Systems"
    (seeds/000), figures 1 to 4.

    Examples
    --------
    >>> from bioxr import design, plot, simulate
    >>> from bioxr.outcomes import outcomes
    >>> success = design.dichotomize(outcomes(simulate.photohead(16, 4, 48, seed=1)), rank=1)
    >>> study = design.design_study(success, n_collections=40, n_runs=5, seed=2)
    >>> spec = plot.design_chart(study).to_dict()
    >>> spec["layer"][0]["encoding"]["y"]["scale"]["type"]
    'log'
    >>> "Partition by subject" in spec["title"]["subtitle"][0]
    True
    """
    _check_study(study, "design_chart")
    runs = np.asarray(study["run"].values) + 1
    rows = []
    for var, (label, _, _) in _DESIGN_SERIES.items():
        values = np.asarray(study[var].values, float)
        rows.append(pd.DataFrame({"run": runs, "variance": values, "series": label, "key": var}))
    frame = pd.concat(rows, ignore_index=True)
    frame = frame[np.isfinite(frame["variance"]) & (frame["variance"] > 0)]
    if frame.empty:
        raise ValueError("design_chart: no positive variance to draw.")
    labels = [v[0] for v in _DESIGN_SERIES.values()]
    colors = [v[1] for v in _DESIGN_SERIES.values()]
    dashes = [v[2] for v in _DESIGN_SERIES.values()]
    height = SIZE * 2 // 3
    lo, hi = float(frame["variance"].min()), float(frame["variance"].max())
    ylo, yhi = _snap_log(lo / 1.05, hi * 1.05, steps=(1, 2, 3, 5) if np.log10(hi / lo) <= 3 else (1,))
    x = alt.X("run:Q", scale=alt.Scale(domain=[0.5, float(runs.max()) + 0.5], nice=False),
              axis=alt.Axis(title="run (a fresh draw of collections)", tickMinStep=1, format="d", grid=False, **_AXIS))
    y = alt.Y("variance:Q", scale=alt.Scale(type="log", domain=[ylo, yhi], nice=False),
              axis=alt.Axis(title="variance of the trial rate (log scale)", values=_log_ticks(ylo, yhi, height), format=".0e",
                            grid=True, **_AXIS))
    enc = dict(
        x=x, y=y,
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=labels, range=colors),
                        legend=alt.Legend(orient="bottom", direction="horizontal", columns=2, symbolStrokeWidth=2.5,
                                          symbolSize=400, labelLimit=260, **_LEGEND)),
        strokeDash=alt.StrokeDash("series:N", title=None, scale=alt.Scale(domain=labels, range=dashes), legend=None),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("run:Q", format="d"), alt.Tooltip("variance:Q", format=".3~e")],
    )
    layers = [alt.Chart(frame).mark_line(strokeWidth=2.2, clip=True).encode(**enc)]
    subtitle = _design_text(study.attrs) + [_ratio_text(study, verdict)]
    title = title if title is not None else f"Design study: {_study_label(study)}"
    return alt.layer(*layers).properties(width=SIZE + 220, height=height, title=_title(title, subtitle, SIZE + 220))


def _log_ticks(lo: float, hi: float, height: float, min_gap: float = 24.0) -> list[float]:
    """Ticks of a log axis at least ``min_gap`` pixels apart: powers of ten, then (within three decades) 5, 2, 3, ..."""
    span = np.log10(hi / lo)
    powers = 10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    chosen: list[float] = [lo, hi]  # both ends carry a tick
    for digit in (1, 5, 2, 3, 4, 6, 7, 8, 9) if span <= 3 else (1,):
        for v in powers:
            tick = float(f"{digit * v:.12g}")
            if not lo * (1 - 1e-9) <= tick <= hi * (1 + 1e-9):
                continue
            px = np.log10(tick / lo) / span * height
            if all(abs(px - np.log10(c / lo) / span * height) >= min_gap for c in chosen):
                chosen.append(tick)
    return sorted(chosen)


def _study_label(study: xr.Dataset) -> str:
    a = study.attrs
    partition = " × ".join(p.strip() for p in str(a.get("partition", "?")).split(","))
    time = "time clustered" if str(a.get("randomize", "none")) == "none" else "time randomized"
    return f"by {partition}, {a.get('design', '?')}, {time}"


def design_ratio_chart(studies, *, verdict: bool = True,
                       title: str = "Which design describes the variance?") -> alt.LayerChart:
    """The ratio mean estimator / empirical variance of several design studies, side by side.

    One row per study (an iteration of the methodology), one point per
    estimator with its interval across runs, on a log scale; the line at 1
    (the estimator is right) and the study's tolerance band around it. An
    estimator is compatible when its whole interval lies inside the band (a
    filled point), incompatible when wholly outside (hollow), and
    inconclusive otherwise (half-filled: too few trials to tell).

    Parameters
    ----------
    studies : mapping of str to xarray.Dataset, or sequence of xarray.Dataset
        Results of :func:`bioxr.design.design_study`, in the order to show
        (top to bottom). A mapping's keys label the rows; otherwise each
        study is labelled by its partition, design and randomization.
    verdict : bool, keyword-only
        Fill the points of compatible estimators (and say so in the
        subtitle); False draws every point hollow, the ratios only.
    title : str, keyword-only

    Returns
    -------
    altair.LayerChart

    See Also
    --------
    design_chart, bioxr.design.design_study

    Examples
    --------
    >>> from bioxr import design, plot, simulate
    >>> from bioxr.outcomes import outcomes
    >>> success = design.dichotomize(outcomes(simulate.photohead(16, 4, 48, seed=1)), rank=1)
    >>> a = design.design_study(success, n_collections=40, n_runs=5, seed=2)
    >>> b = design.design_study(success, n_collections=40, n_runs=5, randomize="collection", seed=2)
    >>> spec = plot.design_ratio_chart({"clustered": a, "randomized": b}).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rect', 'rule', 'rule', 'point', 'text']
    """
    if isinstance(studies, xr.Dataset):
        studies = [studies]
    items = list(studies.items()) if isinstance(studies, Mapping) else [(None, s) for s in studies]
    if not items:
        raise ValueError("design_ratio_chart needs at least one study.")
    rows, bands = [], []
    for k, (label, study) in enumerate(items):
        _check_study(study, "design_ratio_chart")
        label = str(label) if label is not None else f"{k + 1}: {_study_label(study)}"
        tol = float(study.attrs.get("tolerance", 0.05))
        bands.append({"study": label, "low": 1 / (1 + tol), "high": 1 + tol})
        for est in study["estimator"].values.tolist():
            r = float(study["ratio"].sel(estimator=est))
            lo, hi = (float(v) for v in study["ratio_interval"].sel(estimator=est).values)
            said = _verdict_of(study, est)
            rows.append({"study": label, "estimator": est, "name": f"{est} ({_ESTIMATOR_NAMES.get(est, est)})",
                         "ratio": r, "lower": lo, "upper": hi,
                         "verdict": said if verdict else "",
                         "filled": said if verdict else "not",
                         "label": _fmt_ratio(r) + (f" {said}" if verdict and said == "inconclusive" else "")})
    frame = pd.DataFrame(rows)
    band = pd.DataFrame(bands)
    finite = frame[["ratio", "lower", "upper"]].to_numpy(float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    lo = min(float(finite.min()) if finite.size else 0.5, float(band["low"].min()))
    hi = max(float(finite.max()) if finite.size else 2.0, float(band["high"].max()))
    # half a decade of room on the right for the labels beside the intervals
    xlo, xhi = _snap_log(lo / 1.1, hi * 1.6)
    ticks = [v for v in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)
             if xlo * (1 - 1e-9) <= v <= xhi * (1 + 1e-9)]
    ticks = sorted({xlo, xhi, *ticks})  # both ends carry a tick
    order = [label for label in dict.fromkeys(frame["study"])]
    estimators = ["srs", "st", "cl"]
    names = [f"{e} ({_ESTIMATOR_NAMES[e]})" for e in estimators]
    colors = ["#7f7f7f", "#1f77b4", "#2ca02c"]
    xsc = alt.Scale(type="log", domain=[xlo, xhi], nice=False)
    xax = alt.Axis(values=ticks, format="~g", title="mean estimator / empirical variance (log scale; 1 = right)",
                   grid=True, **_AXIS)
    y = alt.Y("study:N", sort=order, title=None,
              axis=alt.Axis(labelLimit=340, labelFontSize=12, labelPadding=6, domain=False, ticks=False))
    offset = alt.YOffset("name:N", sort=names, scale=alt.Scale(domain=names, paddingOuter=0.6))
    color = alt.Color("name:N", title="estimator", scale=alt.Scale(domain=names, range=colors),
                      legend=alt.Legend(orient="bottom", direction="horizontal", **_LEGEND))
    tooltip = [alt.Tooltip("study:N"), alt.Tooltip("estimator:N"), alt.Tooltip("ratio:Q", format=".3f"),
               alt.Tooltip("lower:Q", format=".3f"), alt.Tooltip("upper:Q", format=".3f")] + (
        [alt.Tooltip("verdict:N")] if verdict else [])
    n_rows = len(order)
    layers = [
        alt.Chart(band).mark_rect(color="#2ca02c", opacity=0.22).encode(
            x=alt.X("low:Q", scale=xsc, axis=xax), x2="high:Q", y=y),
        alt.Chart(pd.DataFrame({"one": [1.0]})).mark_rule(color="#333", strokeWidth=1.2).encode(x=alt.X("one:Q", scale=xsc)),
        alt.Chart(frame).mark_rule(strokeWidth=2.2, clip=True).encode(
            x=alt.X("lower:Q", scale=xsc), x2="upper:Q", y=y, yOffset=offset, color=color, tooltip=tooltip),
        alt.Chart(frame).mark_point(size=70, strokeWidth=2, clip=True, opacity=1).encode(
            x=alt.X("ratio:Q", scale=xsc), y=y, yOffset=offset, color=color, tooltip=tooltip,
            fill=alt.condition(alt.datum.filled == "compatible",
                               alt.Fill("name:N", scale=alt.Scale(domain=names, range=colors), legend=None),
                               alt.value("white")),
            shape=alt.condition(alt.datum.filled == "inconclusive", alt.value("diamond"), alt.value("circle"))),
        alt.Chart(frame).mark_text(align="left", dx=8, fontSize=11, color="#333", clip=True).encode(
            x=alt.X("upper:Q", scale=xsc), y=y, yOffset=offset, text="label:N"),
    ]
    tol_text = sorted({f"±{(b - 1):.0%}" for b in band["high"]})
    level = sorted({f"{float(s.attrs.get('level', 0.95)):.0%}" for _, s in items})
    subtitle = [
        f"Points: the ratio over all runs; bars: its {'/'.join(level)} interval across runs; "
        f"shaded: the tolerance {'/'.join(tol_text)} around 1",
        "Filled: compatible (the whole interval inside the shaded band); hollow: incompatible (wholly outside); "
        "diamond: inconclusive (too few trials to tell)" if verdict
        else "Exploratory: ratios only, no verdicts",
    ]
    return alt.layer(*layers).properties(width=SIZE + 60, height=max(90, 78 * n_rows),
                                         title=_title(title, subtitle, SIZE + 60 + 200))
