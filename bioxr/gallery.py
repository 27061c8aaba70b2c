"""All-against-all experiments: single- and multi-template (seeds/001).

In an all-against-all experiment every sample is compared with every other:
a G x G matrix whose rows are probes and columns references. The diagonal
(a sample against itself) is no attempt; every other same-subject cell is a
mated attempt.

- Single template: every off-diagonal cell is an attempt. For N subjects
  with S samples each, ``TG = |G|(S-1)`` mated and ``TI = |G|(N-1)S``
  non-mated attempts: the ``n_mated`` and ``n_nonmated`` that every
  verification function reports on the cube from :func:`all_against_all`.
- Multi template: per probe and per enrolled subject, the best score over
  that subject's samples (the probe itself left out): ``TG = |G|``,
  ``TI = |G|(N-1)``. :func:`best_per_subject` turns the matrix into that
  cube, and the same functions apply.

For a report (``bioxr report gallery``): :func:`from_matrix` and
:func:`read_matrix` turn a square score file whose rows and columns name
the same samples into that cube, with each sample's subject from a labels
file or from its id; :func:`protocol_counts` checks the counted attempts
against the formulas above; :func:`summary_table` is the report's headline table
for both protocols and open-set identification with every probe playing
once as genuine and once as impostor; :func:`session_note` says what
all-against-all over several capture sessions does to the rates.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .cube import REFERENCE, compared_mask, score_cube, score_kind, validate_score_cube

__all__ = ["all_against_all", "best_per_subject", "from_matrix", "read_matrix", "protocol_counts", "counts_text",
           "summary_table", "session_note", "verification_text", "identification_text"]


def all_against_all(
    scores,
    labels,
    *,
    sample_ids=None,
    score_kind: str = "similarity",
    missing: float | None = None,
    source: str | None = None,
) -> xr.DataArray:
    """A score cube from a G x G all-against-all matrix.

    Parameters
    ----------
    scores : array_like, shape (G, G)
        Row ``i``, column ``j``: sample ``i`` (probe) against sample ``j``
        (reference).
    labels : array_like, shape (G,)
        Subject of each sample (the same order on both sides).
    sample_ids : array_like, shape (G,), optional
        Sample ids; default ``0 .. G-1``. Equal ids on both sides mark the
        diagonal, which is never counted.
    score_kind, missing, source
        As in :func:`bioxr.cube.score_cube`.

    Returns
    -------
    xarray.DataArray
        Score cube with dims ``("probe", "reference")`` and ``probe_id`` /
        ``reference_id`` coordinates.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(["a", "b", "c"], 2)          # N = 3 subjects, S = 2
    >>> cube = bioxr.gallery.all_against_all(rng.random((6, 6)), labels)
    >>> r = bioxr.verification.error_rates(cube, 0.5)
    >>> int(r.n_mated), int(r.n_nonmated)               # |G|(S-1), |G|(N-1)S
    (6, 24)
    """
    scores = np.asarray(scores)
    labels = np.asarray(labels)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1]:
        raise ValueError(f"an all-against-all matrix is square; got shape {scores.shape}.")
    if labels.shape != (scores.shape[0],):
        raise ValueError(f"labels has shape {labels.shape}; it needs one subject per sample ({scores.shape[0]}).")
    ids = np.arange(labels.size) if sample_ids is None else np.asarray(sample_ids)
    cube = score_cube(
        scores,
        subject=labels,
        reference_subject=labels,
        probe_id=ids,
        reference_id=ids,
        score_kind=score_kind,
        missing=missing,
        source=source,
    )
    cube.attrs["n_self_comparisons"] = int(np.count_nonzero(~np.isnan(np.diagonal(cube.values.astype(float)))))
    return cube


def best_per_subject(cube: xr.DataArray) -> xr.DataArray:
    """The multi-template cube: each probe's best score per reference subject.

    Self comparisons (same ``probe_id`` and ``reference_id``) are left out
    first, so in an all-against-all matrix a probe's own subject is
    represented by its other samples. "Best" is the highest similarity or
    the lowest distance; a subject with no compared reference gives NaN.

    Returns
    -------
    xarray.DataArray
        Score cube with one ``reference`` per subject (``reference`` and
        ``reference_subject`` are the subject labels), the probe
        coordinates kept, ``attrs["templates"] = "multi"``.

    Examples
    --------
    >>> import numpy as np, bioxr
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(["a", "b", "c"], 2)
    >>> multi = bioxr.gallery.best_per_subject(bioxr.gallery.all_against_all(rng.random((6, 6)), labels))
    >>> r = bioxr.verification.error_rates(multi, 0.5)
    >>> int(r.n_mated), int(r.n_nonmated)               # |G|, |G|(N-1)
    (6, 12)
    """
    validate_score_cube(cube)
    kind = score_kind(cube)
    masked = cube.where(compared_mask(cube))
    masked = masked.drop_vars([c for c in ("probe_id", "reference_id") if c in masked.coords])
    reduce = "max" if kind == "similarity" else "min"
    grouped = getattr(masked.groupby("reference_subject"), reduce)(REFERENCE, skipna=True)
    grouped = grouped.rename({"reference_subject": REFERENCE})
    grouped = grouped.assign_coords(reference_subject=(REFERENCE, grouped[REFERENCE].values))
    grouped = grouped.transpose(*[d for d in cube.dims])
    if not hasattr(grouped.data, "dask"):  # C order, as the outcome kernels expect of a cube
        grouped = grouped.copy(data=np.ascontiguousarray(grouped.values))
    grouped.attrs = {**cube.attrs, "templates": "multi"}
    grouped.name = cube.name
    return validate_score_cube(grouped)


# ------------------------------------------------------------------ files ---

#: The default rule that finds a sample's subject in its id: the text before the last "_" (``alice_2`` -> ``alice``).
SUBJECT_OF = r"(.+)_[^_]*$"


def _subjects_from_ids(ids: np.ndarray, subject_of: str) -> np.ndarray:
    import re

    try:
        rule = re.compile(subject_of)
    except re.error as err:
        raise ValueError(f"subject_of={subject_of!r} is not a regular expression: {err}.") from None
    out = []
    for sample in ids.tolist():
        m = rule.match(str(sample))
        if m is None:
            raise ValueError(
                f"sample id {sample!r} does not match subject_of={subject_of!r}, so its subject is unknown. Name "
                "the samples <subject>_<sample> (e.g. alice_1, alice_2), give a rule whose first group is the "
                "subject, or give labels: a file with one row per sample, its id and its subject.")
        out.append(m.group(1) if rule.groups else m.group(0))
    return np.asarray(out)


def _subjects_from_labels(ids: np.ndarray, labels) -> tuple[np.ndarray, np.ndarray | None]:
    """Each sample's subject (and session, from a third column of a labels file, else None)."""
    import pandas as pd

    session = None
    if isinstance(labels, dict):
        table = pd.Series(labels, dtype=object)
    elif isinstance(labels, pd.Series):
        table = labels
    else:
        frame = pd.read_csv(labels, dtype=str, keep_default_na=False)
        if frame.shape[1] < 2:
            raise ValueError(f"labels file {labels}: give two columns, the sample id and its subject "
                             "(e.g. a header 'sample,subject'), and optionally a third, its capture session.")
        index = frame.iloc[:, 0].astype(str).to_numpy()
        table = pd.Series(frame.iloc[:, 1].to_numpy(), index=index)
        if frame.shape[1] > 2:
            session = pd.Series(frame.iloc[:, 2].to_numpy(), index=index)
    table.index = table.index.astype(str)
    missing = [i for i in ids.astype(str).tolist() if i not in table.index]
    if missing:
        raise ValueError(f"labels give no subject for {len(missing):,} of the {ids.size:,} samples "
                         f"(first {missing[0]!r}); give one row per sample of the score file.")
    keys = ids.astype(str)
    return (np.asarray(table.loc[keys].to_numpy(), dtype=str),
            None if session is None else np.asarray(session.loc[keys].to_numpy(), dtype=str))


def from_matrix(cube: xr.DataArray, *, labels=None, subject_of: str | None = None) -> xr.DataArray:
    """The all-against-all cube of a square score cube read from a file, with each sample's subject.

    A matrix file names its rows (probes) and columns (references) by
    sample; in an all-against-all matrix both name the same samples, and
    the diagonal is each sample against itself. The columns are put in the
    rows' order, the samples' ids become ``probe_id`` and ``reference_id``
    (so the diagonal is never counted) and each sample gets its subject:
    from ``labels`` (a mapping, or the path of a CSV file with one row per
    sample: its id, then its subject), else from the sample id by the
    regular expression ``subject_of`` (its first group is the subject), else
    from the cube's own subject labels when they differ from the ids (a
    long file with subject columns). A third column of a labels file is
    each sample's capture session (``session`` and ``reference_session``
    coordinates, which :func:`session_note` splits the mated comparisons by).

    Parameters
    ----------
    cube : xarray.DataArray
        Dims ``("probe", "reference")`` whose indexes hold the sample ids
        (as :func:`bioxr.io.read_scores` gives).
    labels : dict, pandas.Series or path, optional, keyword-only
    subject_of : str, optional, keyword-only
        Default (when neither is given and the ids are the only labels):
        :data:`SUBJECT_OF`, the text before the last ``_``.

    Raises
    ------
    ValueError
        When rows and columns do not name the same samples, a sample has
        no subject, or no subject has two samples (no mated comparison).

    Examples
    --------
    >>> import io, bioxr, bioxr.io
    >>> text = "id,a_1,a_2,b_1\\na_1,9,0.8,0.1\\na_2,0.7,9,0.2\\nb_1,0.3,0.1,9\\n"
    >>> cube = bioxr.gallery.from_matrix(bioxr.io.read_scores(io.StringIO(text), format="matrix"))
    >>> cube.subject.values.tolist()
    ['a', 'a', 'b']
    >>> r = bioxr.verification.error_rates(cube, 0.5)
    >>> int(r.n_mated), int(r.n_nonmated)      # the diagonal left out
    (2, 4)
    """
    if tuple(cube.dims) != ("probe", REFERENCE):
        raise ValueError(f"an all-against-all matrix has dims ('probe', 'reference'); these scores have {cube.dims}.")
    rows, cols = (np.asarray(cube[d].values).astype(str) for d in ("probe", REFERENCE))
    if sorted(rows.tolist()) != sorted(cols.tolist()):
        only_rows = sorted(set(rows.tolist()) - set(cols.tolist()))
        only_cols = sorted(set(cols.tolist()) - set(rows.tolist()))
        raise ValueError(
            f"in an all-against-all matrix the rows and the columns name the same samples; here {len(only_rows):,} "
            f"row(s) name no column{f' (first {only_rows[0]!r})' if only_rows else ''} and {len(only_cols):,} "
            f"column(s) no row{f' (first {only_cols[0]!r})' if only_cols else ''}. A file of probes against a "
            "separate gallery goes to the verification or identification report.")
    order = {c: k for k, c in enumerate(cols.tolist())}
    values = np.asarray(cube.values)[:, [order[r] for r in rows.tolist()]]
    own = np.asarray(cube["subject"].values).astype(str) if "subject" in cube.coords else rows
    session = None
    if labels is not None and not (isinstance(labels, str) and not labels):
        subject, session = _subjects_from_labels(rows, labels)
    elif subject_of or (own == rows).all():
        subject = _subjects_from_ids(rows, subject_of or SUBJECT_OF)
    else:
        subject = own
    _, counts = np.unique(subject, return_counts=True)
    if (counts < 2).all():
        raise ValueError(f"each of the {subject.size:,} samples is the only one of its subject, so there is no "
                         "mated comparison; check the labels (or subject_of) give every subject two samples or more.")
    out = all_against_all(values, subject, sample_ids=rows, score_kind=cube.attrs.get("score_kind", "similarity"))
    if session is not None:  # the labels file's third column: each sample's capture session
        out = out.assign_coords(session=("probe", session), reference_session=(REFERENCE, session))
    keep = {k: v for k, v in cube.attrs.items() if k not in out.attrs}
    out.attrs.update(keep)
    return out


def read_matrix(path, *, labels=None, subject_of: str | None = None, **read) -> xr.DataArray:
    """Read an all-against-all score file (:func:`bioxr.io.read_scores`, then :func:`from_matrix`).

    ``read`` goes to :func:`bioxr.io.read_scores` (``format``,
    ``score_kind``, ``missing``, ...). A long file (one row per comparison)
    with probe and reference sample ids works too.
    """
    from .io import read_scores

    cube = read_scores(path, **read)
    if not isinstance(cube, xr.DataArray):
        raise ValueError(f"{path}: read as a comparison list, not a matrix; an all-against-all file compares "
                         "every sample with every other (pass layout='cube' for a long file).")
    return from_matrix(cube, labels=labels, subject_of=subject_of)


# ----------------------------------------------------------------- counts ---


def protocol_counts(cube: xr.DataArray, *, failure_policy: str = "exclude") -> dict:
    """Attempts of each protocol, counted on the data and by the formulas of the all-against-all protocol.

    With N subjects of S samples each (``|G| = N S``): single template
    ``TG = |G|(S-1)`` and ``TI = |G|(N-1)S``; multi-template ``TG = |G|``
    and ``TI = |G|(N-1)``; open-set identification ``|G|`` genuine and
    ``|G|`` impostor searches. With unequal S (or cells not compared) the
    formulas become sums over samples and ``formula_holds`` says whether
    the counts match the balanced formulas.

    Returns
    -------
    dict
        ``N``, ``S`` (None when unequal), ``G``, ``balanced``, and per
        protocol (``"single"``, ``"multi"``) ``counted`` and ``formula``
        (TG, TI) pairs and ``formula_text``; ``formula_holds``.

    Examples
    --------
    >>> import bioxr
    >>> c = bioxr.gallery.protocol_counts(bioxr.simulate.all_against_all(4, 3, seed=0))
    >>> c["single"]["counted"], c["single"]["formula"], c["multi"]["counted"]
    ((24, 108), (24, 108), (12, 36))
    """
    from .verification import error_rates

    subject = np.asarray(cube["subject"].values)
    _, per = np.unique(subject, return_counts=True)
    n, g = per.size, int(subject.size)
    s = int(per[0]) if (per == per[0]).all() else None
    out: dict = {"N": n, "S": s, "G": g, "balanced": s is not None}
    for name, obj in (("single", cube), ("multi", best_per_subject(cube))):
        r = error_rates(obj, np.inf, failure_policy=failure_policy)
        out[name] = {"counted": (int(r.n_mated), int(r.n_nonmated))}
    if s is not None:
        out["single"]["formula"] = (g * (s - 1), g * (n - 1) * s)
        out["single"]["formula_text"] = (f"TG = |G|(S−1) = {g:,} × {s - 1} = {g * (s - 1):,}",
                                         f"TI = |G|(N−1)S = {g:,} × {n - 1} × {s} = {g * (n - 1) * s:,}")
        out["multi"]["formula"] = (g, g * (n - 1))
        out["multi"]["formula_text"] = (f"TG = |G| = {g:,}", f"TI = |G|(N−1) = {g:,} × {n - 1} = {g * (n - 1):,}")
    else:
        out["single"]["formula"] = (int((per * (per - 1)).sum()), int((per * (g - per)).sum()))
        out["single"]["formula_text"] = (f"TG = Σ S_i(S_i−1) = {out['single']['formula'][0]:,}",
                                         f"TI = Σ S_i(|G|−S_i) = {out['single']['formula'][1]:,}")
        out["multi"]["formula"] = (int(per[per > 1].sum()), g * (n - 1))
        out["multi"]["formula_text"] = (f"TG = samples of subjects with another sample = {out['multi']['formula'][0]:,}",
                                        f"TI = |G|(N−1) = {g * (n - 1):,}")
    out["formula_holds"] = all(out[k]["counted"] == out[k]["formula"] for k in ("single", "multi"))
    return out


def counts_text(counts: dict) -> str:
    """The data's subjects, samples and attempts per protocol, checked against the formulas, as Markdown.

    Examples
    --------
    >>> import bioxr
    >>> text = bioxr.gallery.counts_text(bioxr.gallery.protocol_counts(bioxr.simulate.all_against_all(4, 3, seed=0)))
    >>> text.split(" (")[0]
    'The matrix compares |G| = 12 samples of N = 4 subjects, S = 3 samples each, every sample with every other'
    """
    n, s, g = counts["N"], counts["S"], counts["G"]
    who = f"S = {s} samples each" if s else "unequal numbers of samples (the formulas are sums over samples)"
    lines = [f"The matrix compares |G| = {g:,} samples of N = {n:,} subjects, {who}, every sample with every other "
             "(a sample against itself is no attempt)."]
    for key, name in (("single", "Single template (every other sample is a reference)"),
                      ("multi", "Multi-template (each subject's best score over its samples)")):
        (tg, ti), (ftg, fti) = counts[key]["counted"], counts[key]["formula"]
        text_g, text_i = counts[key]["formula_text"]
        check = ("as the formulas give" if (tg, ti) == (ftg, fti) else
                 f"**not** what the formulas give ({ftg:,} and {fti:,}): some comparisons were not made or are "
                 "excluded")
        lines.append(f"- {name}: {text_g} mated and {text_i} non-mated attempts; counted on the data: "
                     f"{tg:,} and {ti:,}, {check}.")
    lines.append(f"- Open-set identification: every sample searches once as a genuine user (its other samples "
                 f"enrolled) and once as an impostor (its own subject left out): {g:,} genuine and {g:,} impostor "
                 "searches.")
    return "\n".join(lines[:1]) + "\n\n" + "\n".join(lines[1:])


# ---------------------------------------------------------------- summary ---


def summary_table(cube: xr.DataArray, *, eer_method: str = "rocch", fmr=(1e-2, 1e-3), fnmr=(0.1,), fpir=(0.1, 0.01),
            level: float = 0.95, n_replicates: int = 1000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
    """The headline table of an all-against-all test: both protocols, then open-set identification.

    The rows of :func:`bioxr.summary` for the single-template cube and for
    its multi-template cube (:func:`best_per_subject`), their metric named
    with the protocol; the rank-1 rate; FNIR at FPIR targets with every
    probe searching once as an impostor (``impostors="all"``); FTE and FTA.

    Examples
    --------
    >>> import bioxr
    >>> t = bioxr.gallery.summary_table(bioxr.simulate.all_against_all(20, 3, seed=0), n_replicates=50, seed=1)
    >>> t.metric.values[:2].tolist()
    ['EER (single template)', 'FNMR (single template)']
    """
    from . import bootstrap, headline, identification

    kw = dict(eer_methods=(eer_method,), level=level, n_replicates=n_replicates, seed=seed,
              failure_policy=failure_policy)
    parts = []
    for obj, name in ((cube, "single template"), (best_per_subject(cube), "multi-template")):
        t = headline.summary(obj, fmr=fmr, fnmr=fnmr, identification=name != "single template", fpir=(), **kw)
        keep = ~np.isin(t.metric.values, ["FTE", "FTA"]) | (name == "single template")
        t = t.isel(row=np.flatnonzero(keep))
        verif = np.isin(t.metric.values, ["EER", "FNMR", "FMR"])
        t["metric"] = ("row", np.where(verif, np.char.add(t.metric.values.astype(str), f" ({name})"), t.metric.values))
        parts.append(t)
    curve = identification.open_set_curve(cube, impostors="all")
    n_g, n_i = int(curve.n_mated_probes), int(curve.n_impostor_probes)
    rows = []
    for target in np.atleast_1d(fpir):
        at = f"FPIR = {headline._fmt_target(float(target))}"
        if target * n_i < 1:
            rows.append(headline._row("FNIR", at, flags=[f"not resolvable: {n_i:,} impostor searches resolve FPIR "
                                                         f"down to {1 / n_i:.1e}"]))
            continue
        ok = np.flatnonzero(curve.fpir.values <= target)
        k = ok[np.argmin(curve.fnir.values[ok])]
        thr = float(curve.threshold.values[k])
        ci = bootstrap.open_set_interval(cube, thr, impostors="all", n_replicates=n_replicates, level=level, seed=seed)
        lo, hi = np.asarray(ci.dir_interval.values).reshape(-1)[-2:]
        misses = float(curve.fnir.values[k]) * n_g
        rows.append(headline._row(
            "FNIR", at, "every probe also an impostor", curve.fnir.values[k], (1 - hi, 1 - lo), "two-sided",
            "subject bootstrap", errors=misses, trials=n_g, units=len(set(cube.subject.values.tolist())),
            threshold=thr, flags=[headline._thirty(misses, "missed searches"),
                                  headline._thirty(float(curve.false_positives.values[k]),
                                                   "false positives set this threshold")]))
    table = parts[0]
    cols = list(table.data_vars)
    if rows:
        import pandas as pd

        frame = pd.DataFrame(rows, columns=cols)
        extra = xr.Dataset({c: ("row", frame[c].to_numpy().astype(table[c].dtype if table[c].dtype.kind == "f"
                                                                    else str)) for c in cols})
        parts.insert(2, extra)
    first, second = parts[0], parts[1]
    fail = np.isin(first.metric.values, ["FTE", "FTA"])
    ordered = [first.isel(row=np.flatnonzero(~fail)), second, *parts[2:], first.isel(row=np.flatnonzero(fail))]
    out = xr.concat(ordered, dim="row", combine_attrs="override")
    out.attrs["impostors"] = "all: every probe searches once as genuine and once as impostor"
    return out


def session_note(cube: xr.DataArray, *, eer_method: str = "rocch", failure_policy: str = "exclude") -> str:
    """What all-against-all does over several capture sessions, with the data's own split when it has sessions.

    Samples of one session are more alike than samples of different
    sessions (light, sensor state, the person's appearance that day), so
    mated comparisons within a session flatter the matcher. With a
    ``session`` coordinate on ``probe`` (and ``reference_session``) and
    two sessions or more, the EER of same-session and of cross-session
    mated comparisons (each against all the non-mated ones) is given; the
    cross-session figure is the one a deployment that enrols once and
    verifies later meets.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.all_against_all(20, 4, n_sessions=2, session_effect=1.0, seed=0)
    >>> "cross-session" in bioxr.gallery.session_note(cube)
    True
    """
    from .cube import mated_mask
    from .verification import eer

    general = ("All-against-all evaluation is not a good design when the samples were captured in several "
               "sessions: samples of one session are usually more alike than samples of different sessions "
               "(light, sensor state and the person change with time), so mated comparisons within a session "
               "make the matcher look better than it is when a person enrolled in one session is verified in "
               "another.")
    if "session" not in cube.coords or "reference_session" not in cube.coords:
        return general + " These data carry no session of each sample, so the split cannot be made here."
    ps, rs = np.asarray(cube["session"].values), np.asarray(cube["reference_session"].values)
    if len(set(ps.tolist()) | set(rs.tolist())) < 2:
        return general + " All these samples come from one session, so every mated comparison is within it."
    same = xr.DataArray(ps[:, None] == rs[None, :], dims=cube.dims)
    mated = mated_mask(cube)
    within = cube.where(~mated | same)
    across = cube.where(~mated | ~same)
    a = eer(within, method=eer_method, failure_policy=failure_policy)
    b = eer(across, method=eer_method, failure_policy=failure_policy)
    if int(a.n_mated) == 0 or int(b.n_mated) == 0:
        return general + " Here every mated comparison is " + ("across" if int(a.n_mated) == 0 else "within") + \
            " sessions, so the split cannot be made."
    if float(b.eer) > float(a.eer):
        verdict = "higher, as the caveat expects"
    else:
        verdict = "not higher: these data show no advantage of same-session pairs"
    return (general + f" These data have sessions: with the {int(a.n_mated):,} same-session mated comparisons the "
            f"EER ({eer_method}) is {float(a.eer):.2%}, with the {int(b.n_mated):,} cross-session ones "
            f"{float(b.eer):.2%} ({verdict}; both against all {int(a.n_nonmated):,} non-mated comparisons). Quote the "
            "cross-session rate for a deployment that enrols once and verifies later.")


# -------------------------------------------------------------- sentences ---

_NAMES = {"single": "single template", "multi": "multi-template"}


def verification_text(err: dict, eer_ci: dict, op: dict, op_ci: dict, counts: dict, *, level: float = 0.95,
                      n_replicates: int = 1000, threshold_fmr: float = 0.01) -> str:
    """The verification section of the report: each protocol's EER and FNMR at an FMR target with intervals.

    Each argument but ``counts`` maps ``"single"`` and ``"multi"`` to the
    result of :func:`bioxr.verification.eer`,
    :func:`bioxr.bootstrap.eer_interval`,
    :func:`bioxr.verification.fnmr_at_fmr` (one target) and
    :func:`bioxr.bootstrap.fnmr_at_fmr_interval`; ``counts`` is
    :func:`protocol_counts`. Returns Markdown.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.all_against_all(15, 3, seed=0)
    >>> both = {"single": cube, "multi": bioxr.gallery.best_per_subject(cube)}
    >>> kw = dict(n_replicates=50, seed=0)
    >>> text = bioxr.gallery.verification_text(
    ...     {k: bioxr.verification.eer(c) for k, c in both.items()},
    ...     {k: bioxr.bootstrap.eer_interval(c, **kw) for k, c in both.items()},
    ...     {k: bioxr.verification.fnmr_at_fmr(c, 0.01) for k, c in both.items()},
    ...     {k: bioxr.bootstrap.fnmr_at_fmr_interval(c, 0.01, **kw) for k, c in both.items()},
    ...     bioxr.gallery.protocol_counts(cube), n_replicates=50)
    >>> text.startswith("**Single template.**")
    True
    """
    from .narrative import public_text

    paras = []
    for key in ("single", "multi"):
        e, ci, o, oci = err[key], eer_ci[key], op[key], op_ci[key]
        o = o.isel(fmr_target=0) if "fmr_target" in o.dims else o
        lo, hi = (float(v) for v in np.asarray(ci.eer_interval.values).reshape(-1)[:2])
        flo, fhi = (float(v) for v in np.asarray(oci.fnmr_interval.values).reshape(-1)[:2])
        tg, ti = counts[key]["counted"]
        how = ("every other sample is a reference of its own" if key == "single" else
               "a probe meets each subject once, through the best score over that subject's samples (the probe "
               "itself left out)")
        paras.append(
            f"**{_NAMES[key].capitalize()}.** Here {how}: {tg:,} mated and {ti:,} non-mated attempts. The EER by the "
            f"**{e.attrs.get('eer_method', '')}** convention is **{float(e.eer):.2%}** ({level:.0%} subject-bootstrap "
            f"interval {lo:.2%} to {hi:.2%}, {n_replicates:,} replicates resampling whole subjects), at threshold "
            f"{float(e.threshold):.4g}. At the most lenient threshold whose FMR is at most {threshold_fmr * 100:g}% "
            f"(threshold {float(o.threshold):.4g}, where FMR = {float(o.fmr) * 100:.3g}%), FNMR = "
            f"**{float(o.fnmr):.2%}** ({int(o.false_nonmatches):,} of {tg:,} mated attempts rejected; interval "
            f"{flo:.2%} to {fhi:.2%}).")
    paras.append("The EER convention: " + public_text(err["single"].attrs.get("eer_convention", "")))
    a, b = float(err["single"].eer), float(err["multi"].eer)
    if b < a:
        verdict = (f"The multi-template EER ({b:.2%}) is lower than the single-template one ({a:.2%}): a probe is "
                   "accepted when any of its subject's other samples matches it well, and the best of several mated "
                   "scores is higher than a typical one. The best of a subject's non-mated scores is higher too, "
                   "which the multi-template FMR carries.")
    elif b > a:
        verdict = (f"The multi-template EER ({b:.2%}) is higher than the single-template one ({a:.2%}) here: taking "
                   "each subject's best non-mated score raised false matches more than the best mated score helped.")
    else:
        verdict = f"Both protocols give the same EER ({a:.2%}) here."
    paras.append(verdict + " Both come from the same samples, so their intervals are not independent: overlapping "
                 "intervals do not test the difference.")
    return "\n\n".join(paras)


def identification_text(cmc: xr.Dataset, curve: xr.Dataset, *, fpir_target: float = 0.01, level: float = 0.95) -> str:
    """The identification section: rank-1 rate with its interval, and open-set FNIR at an FPIR target.

    ``cmc`` is the result of :func:`bioxr.bootstrap.cmc_interval` (or
    :func:`bioxr.identification.cmc_curve`), ``curve`` that of
    :func:`bioxr.identification.open_set_curve` with ``impostors="all"``.
    Returns Markdown.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.all_against_all(15, 3, seed=0)
    >>> cmc = bioxr.identification.cmc_curve(cube, max_rank=5)
    >>> curve = bioxr.identification.open_set_curve(cube, impostors="all")
    >>> bioxr.gallery.identification_text(cmc, curve).split(" is ")[0]
    'The **rank-1 identification rate**'
    """
    r1 = float(cmc.cmc.sel(rank=1))
    n = int(cmc["n_probes"]) if "n_probes" in cmc else int(curve.n_mated_probes)
    text = f"The **rank-1 identification rate** is **{r1:.2%}** over {n:,} searches"
    if "cmc_interval" in cmc:
        lo, hi = (float(v) for v in cmc.cmc_interval.sel(rank=1).values)
        text += f" ({level:.0%} subject-bootstrap interval {lo:.2%} to {hi:.2%})"
    top = int(cmc["rank"].values.max())
    text += (f"; by rank {top} it is {float(cmc.cmc.sel(rank=top)):.2%}. Ranks are of subjects, ties between subjects "
             "counted as ISO/IEC 19795-1 Annex F spreads them.")
    n_g, n_i = int(curve.n_mated_probes), int(curve.n_impostor_probes)
    open_ = (f"\n\nOpen set: {n_g:,} genuine searches (each sample, its other samples enrolled) and {n_i:,} impostor "
             "searches (each sample again, its own subject left out), so the smallest step of FPIR is "
             f"1/{n_i:,} = {1 / n_i:.2%}. ")
    if fpir_target * n_i < 1:
        open_ += (f"An FPIR of {fpir_target:.2%} is below one false alarm in {n_i:,} searches, so the test cannot "
                  "resolve it; the chart shows the whole curve.")
    else:
        ok = np.flatnonzero(curve.fpir.values <= fpir_target)
        k = ok[np.argmin(curve.fnir.values[ok])]
        open_ += (f"At the most lenient threshold with FPIR at most {fpir_target:.2%} (threshold "
                  f"{float(curve.threshold.values[k]):.4g}, FPIR = {float(curve.fpir.values[k]):.2%}, "
                  f"{int(curve.false_positives.values[k]):,} false alarms), FNIR = **{float(curve.fnir.values[k]):.2%}** "
                  f"(DIR = {float(curve.dir.values[k]):.2%}).")
    return text + open_
