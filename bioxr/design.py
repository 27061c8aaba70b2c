"""Sample design of a rate: the Micheals-Boult methodology (seed 000).

A rate estimated from repeated measures (every subject, every image, at
many collection times) has no single variance: it depends on how the data
were sampled. Micheals and Boult turn the usual order around: propose a
partition of the data into groups and a sample design, compute the rate and
the design's variance estimator on many independent trials, and compare the
*empirical* variance of the trial rates with the *mean* of the estimator. A
design whose estimator disagrees is rejected; iterate (randomize a
cofactor, change the partition, change which groups a trial draws) until one
agrees, and test formally only at the last iteration.

- :func:`dichotomize`: the outcome cube to a binary success per probe;
- :func:`variance_srs`, :func:`variance_stratified`,
  :func:`variance_cluster`: the three point estimators on a (group,
  element) array (METHODS.md section 3);
- :func:`design_study`: the paper's runs of trials, vectorised;
- :func:`design_test`: an F test of the last iteration.

For binary data with ``G`` groups of ``E`` elements the three estimators
obey an exact identity, ``G E V_srs = G (E - 1) V_st + (G - 1) V_cl``, so
``V_st <= V_srs`` holds exactly when the groups differ by more than binomial
noise, and then ``V_srs <= V_cl`` too (the paper's equation 9).
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr
from scipy import stats

from ._core import tie_share

__all__ = [
    "ESTIMATORS",
    "dichotomize",
    "variance_srs",
    "variance_stratified",
    "variance_cluster",
    "design_study",
    "design_test",
]

#: The three designs compared, by their short names in results.
ESTIMATORS = ("srs", "st", "cl")
DESIGNS = ("stratified", "cluster")
TIES = ("strict", "fractional")

_REFERENCE = "Micheals & Boult, Improving Variance Estimation in Biometric Systems (seeds/000); METHODS.md section 3"


# --------------------------------------------------------------------------
# Dichotomization
# --------------------------------------------------------------------------


def dichotomize(
    outcomes: xr.Dataset, *, rank: int | None = None, threshold: float | None = None, ties: str = "strict"
) -> xr.DataArray:
    """Binary success per probe: rank-k identification or a mated score over a threshold.

    The first step of the methodology: reduce each probe's outcome to a
    success (1) or a failure (0). Give exactly one rule.

    Parameters
    ----------
    outcomes : xarray.Dataset
        An outcome cube from :func:`bioxr.outcomes.outcomes` (probe dims).
    rank : int, keyword-only
        Rank-``rank`` success: the mate is among the first ``rank``
        enrolled subjects.
    threshold : float, keyword-only
        Score success: the mated score is at or over ``threshold`` (at or
        under it when ``attrs["score_kind"] == "distance"``).
    ties : {"strict", "fractional"}, keyword-only
        For ``rank`` only, a mate tied with other subjects (Annex F ranks
        ``mated_rank_min .. mated_rank_max``): ``"strict"`` (default) counts
        a success only if every tie order puts it within ``rank``
        (``mated_rank_max <= rank``), so the result is binary, as the
        variance estimators need; ``"fractional"`` gives the share of the
        tie range at or below ``rank`` (not binary: the estimators'
        ``p(1 - p)`` forms then only approximate).

    Returns
    -------
    xarray.DataArray
        ``success`` over the probe dims, float 1.0 / 0.0 (NaN where the
        probe has no mated score), with the probe coordinates; attrs
        ``rule`` and ``ties`` or ``score_kind``.

    See Also
    --------
    design_study : the design study on the result.

    References
    ----------
    seeds/000 section 3.1 (dichotomization step); METHODS.md sections 2-3.

    Examples
    --------
    >>> from bioxr import simulate, design
    >>> from bioxr.outcomes import outcomes
    >>> out = outcomes(simulate.photohead(8, 2, 5, seed=1))
    >>> success = design.dichotomize(out, rank=1)
    >>> success.dims
    ('subject', 'image', 'collection')
    >>> sorted(set(success.values.ravel().tolist()))
    [0.0, 1.0]
    >>> success.attrs["rule"]
    'rank-1 success: mated_rank_max <= 1'
    """
    if not isinstance(outcomes, xr.Dataset):
        raise TypeError(
            f"expected an outcome cube (Dataset from bioxr.outcomes.outcomes), got {type(outcomes).__name__}."
        )
    if (rank is None) == (threshold is None):
        raise ValueError("give exactly one of rank= or threshold=.")
    if rank is not None:
        if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 1:
            raise ValueError(f"rank must be a positive integer, got {rank!r}.")
        if ties not in TIES:
            raise ValueError(f"ties must be one of {TIES}, got {ties!r}.")
        _require(outcomes, ("mated_rank_min", "mated_rank_max"))
        lo, hi = outcomes["mated_rank_min"], outcomes["mated_rank_max"]
        if ties == "strict":
            success = xr.where(hi <= rank, 1.0, 0.0)
            rule = f"rank-{int(rank)} success: mated_rank_max <= {int(rank)}"
        else:
            success = xr.apply_ufunc(tie_share, lo, hi, rank)  # Annex F share of the range at or below rank
            rule = f"rank-{int(rank)} success: share of mated_rank_min..mated_rank_max at or below {int(rank)}"
        success = success.where(lo.notnull())
        attrs = {"rule": rule, "ties": ties}
    else:
        if ties != "strict":
            raise ValueError("ties= applies to rank= only.")
        threshold = float(threshold)
        _require(outcomes, ("mated_score",))
        kind = outcomes.attrs.get("score_kind", "similarity")
        score = outcomes["mated_score"]
        if kind == "distance":
            success, op = xr.where(score <= threshold, 1.0, 0.0), "<="
        else:
            success, op = xr.where(score >= threshold, 1.0, 0.0), ">="
        success = success.where(score.notnull())
        attrs = {"rule": f"score success: mated_score {op} {threshold!r}", "score_kind": kind}
    success = success.astype(float)
    success.name = "success"
    success.attrs = attrs
    return success


def _require(ds: xr.Dataset, names) -> None:
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(f"the outcome cube lacks {missing}: compute it with bioxr.outcomes.outcomes(cube).")


# --------------------------------------------------------------------------
# Point estimators on (group, element) data
# --------------------------------------------------------------------------


def _v_srs(pg: np.ndarray, e: int) -> np.ndarray:
    p = pg.mean(axis=-1)
    return p * (1.0 - p) / (pg.shape[-1] * e)


def _v_st(pg: np.ndarray, e: int) -> np.ndarray:
    g = pg.shape[-1]
    return (e / (e - 1.0) * pg * (1.0 - pg)).sum(axis=-1) / (g * g * e)


def _v_cl(pg: np.ndarray, e: int) -> np.ndarray:
    g = pg.shape[-1]
    return pg.var(axis=-1, ddof=1) / g


_KERNELS = {"srs": _v_srs, "st": _v_st, "cl": _v_cl}
_LONG_NAMES = {
    "srs": "simple random sampling variance p(1-p)/(nm)",
    "st": "stratified variance sum_i s_i^2/(n^2 m), s_i^2 = m/(m-1) p_i(1-p_i)",
    "cl": "cluster variance s_b^2/n, s_b^2 = sum_i (p_i-p)^2/(n-1)",
}


def _dims(dims, what: str) -> tuple[str, ...]:
    if isinstance(dims, str):
        return (dims,)
    try:
        out = tuple(dims)
    except TypeError:
        raise TypeError(f"{what} must be a dimension name or a sequence of names, got {dims!r}.") from None
    if not out or not all(isinstance(d, str) for d in out):
        raise TypeError(f"{what} must be a dimension name or a non-empty sequence of names, got {dims!r}.")
    return out


def _estimate(x, name: str, group_dim, element_dim):
    kernel = _KERNELS[name]
    if isinstance(x, xr.DataArray):
        gd, ed = _dims(group_dim, "group_dim"), _dims(element_dim, "element_dim")
        missing = [d for d in (*gd, *ed) if d not in x.dims]
        if missing:
            raise ValueError(f"dims {missing} not in the array's dims {x.dims}.")
        if set(gd) & set(ed):
            raise ValueError(f"group_dim {gd} and element_dim {ed} overlap.")
        g = int(np.prod([x.sizes[d] for d in gd]))
        e = int(np.prod([x.sizes[d] for d in ed]))
        _check_sizes(name, g, e)

        def core(a):
            a = np.asarray(a, dtype=float)
            return kernel(a.reshape(a.shape[: a.ndim - len(gd) - len(ed)] + (g, e)).mean(axis=-1), e)

        out = xr.apply_ufunc(core, x, input_core_dims=[[*gd, *ed]], dask="allowed", keep_attrs=False)
        out.name = f"v_{name}"
        out.attrs = {
            "estimator": name,
            "long_name": _LONG_NAMES[name],
            "group_dim": ", ".join(gd),
            "element_dim": ", ".join(ed),
        }
        return out
    a = np.asarray(x, dtype=float)
    if a.ndim < 2:
        raise ValueError("expected an array with (group, element) as its last two axes.")
    _check_sizes(name, a.shape[-2], a.shape[-1])
    return kernel(a.mean(axis=-1), a.shape[-1])


def _check_sizes(name: str, g: int, e: int) -> None:
    if name == "st" and e < 2:
        raise ValueError("the stratified estimator needs at least 2 elements per group.")
    if name == "cl" and g < 2:
        raise ValueError("the cluster estimator needs at least 2 groups.")
    if g < 1 or e < 1:
        raise ValueError("need at least one group and one element.")


_ESTIMATOR_DOC = """
    Parameters
    ----------
    x : array_like or xarray.DataArray
        Binary outcomes (1 = success). An array has groups on axis -2 and
        elements on axis -1 (leading axes are kept); a DataArray names them.
    group_dim, element_dim : str or sequence of str, keyword-only
        For a DataArray: the dims whose combinations are the groups and the
        elements within a group (default ``"group"`` and ``"element"``).

    Returns
    -------
    numpy.ndarray or xarray.DataArray
        The estimate over the remaining axes / dims (a DataArray for a
        DataArray input, named ``v_{name}``).

    See Also
    --------
    variance_srs, variance_stratified, variance_cluster, design_study

    References
    ----------
    seeds/000 sections 2.1-2.2 (infinite-population forms); METHODS.md section 3.
"""


def variance_srs(x, *, group_dim="group", element_dim="element"):
    """Simple random sampling variance of the rate: ``p(1-p)/(nm)``.

    Every one of the ``n m`` outcomes is an independent draw from one
    population: the groups are ignored.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_srs
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])  # 2 groups of 4
    >>> float(variance_srs(x))  # p = 0.5: 0.25 / 8
    0.03125
    """
    return _estimate(x, "srs", group_dim, element_dim)


def variance_stratified(x, *, group_dim="group", element_dim="element"):
    """Stratified sampling variance: ``sum_i s_i^2 / (n^2 m)``.

    The same ``n`` groups (strata) are in every trial and ``m`` outcomes are
    drawn independently within each; ``s_i^2 = m/(m-1) p_i (1 - p_i)`` is
    the within-group sample variance of binary outcomes.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_stratified
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])
    >>> float(variance_stratified(x))  # s_i^2 = 4/3 * 3/16 = 0.25 each; 0.5 / (4 * 4)
    0.03125
    """
    return _estimate(x, "st", group_dim, element_dim)


def variance_cluster(x, *, group_dim="group", element_dim="element"):
    """Cluster sampling variance: ``s_b^2 / n`` with ``s_b^2 = sum_i (p_i - p)^2 / (n-1)``.

    The groups themselves are drawn at random every trial (two-stage
    sampling); the spread of the group rates carries both stages.
    {doc}
    Examples
    --------
    >>> import numpy as np
    >>> from bioxr.design import variance_cluster
    >>> x = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])
    >>> float(variance_cluster(x))  # p_i = 0.75, 0.25: s_b^2 = 0.125, / 2
    0.0625
    """
    return _estimate(x, "cl", group_dim, element_dim)


for _f, _n in ((variance_srs, "srs"), (variance_stratified, "st"), (variance_cluster, "cl")):
    _f.__doc__ = _f.__doc__.replace("{doc}", _ESTIMATOR_DOC.replace("{name}", _n))


# --------------------------------------------------------------------------
# The design study
# --------------------------------------------------------------------------


def _generator(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise ValueError("seed is None: pass an int or a numpy Generator so the study can be reproduced.")
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be a non-negative int, SeedSequence or numpy Generator, got {seed!r}.")


def _draw(rng, *, n_series, n_times, n_runs, n_collections, n_groups, n_trials, randomize, design, cluster_draw):
    """The random draws of a study, in the order design_study makes them.

    Returns ``times`` (runs, collections) when every series shares the
    draw, or (runs, series, collections) when time is randomized per series;
    and ``groups`` (runs, trials, groups per trial) for a cluster design,
    else None.
    """
    if randomize is None:
        times = np.stack([rng.permutation(n_times)[:n_collections] for _ in range(n_runs)])
    else:
        work = np.empty((n_series, n_times), dtype=np.int32)
        times = np.empty((n_runs, n_series, n_collections), dtype=np.int32)
        for r in range(n_runs):
            work[:] = np.arange(n_times, dtype=np.int32)
            rng.permuted(work, axis=1, out=work)
            times[r] = work[:, :n_collections]
    groups = None
    if design == "cluster":
        if cluster_draw is None:
            per_trial = n_groups // n_trials
            groups = np.stack(
                [rng.permutation(n_groups)[: per_trial * n_trials].reshape(n_trials, per_trial) for _ in range(n_runs)]
            )
        else:
            per_trial = int(round(cluster_draw * n_groups))
            work = np.broadcast_to(np.arange(n_groups), (n_runs, n_trials, n_groups))
            groups = rng.permuted(work, axis=-1)[..., :per_trial]
    return times, groups


def design_study(
    success: xr.DataArray,
    *,
    partition=("subject",),
    trial_dim: str = "collection",
    m: int = 4,
    n_collections: int = 180,
    n_runs: int = 30,
    design: str = "stratified",
    randomize: str | None = None,
    cluster_draw: float | None = None,
    level: float = 0.95,
    tolerance: float = 0.05,
    seed=0,
) -> xr.Dataset:
    """Compare the empirical variance of a rate with three design estimators.

    The analysis step of seed 000, as METHODS.md section 3 reads the paper:

    1. a *run* draws ``n_collections`` values of ``trial_dim`` without
       replacement, in random order;
    2. its *experiment* splits them into ``n_collections / m`` *trials* of
       ``m`` collections each (trials of a run share no data);
    3. a trial holds, for every group of the ``partition`` it draws, all
       outcomes of that group at its ``m`` collections: ``E = m x`` (the
       sizes of the dims outside the partition and ``trial_dim``) elements;
       per trial: the rate, ``V_srs``, ``V_st`` and ``V_cl`` with those
       groups;
    4. per run: the *empirical* variance of the trial rates and the *mean*
       of each estimator; the ratio mean / empirical.

    Parameters
    ----------
    success : xarray.DataArray
        Binary outcomes over the probe dims, e.g. ``(subject, image,
        collection)`` from :func:`dichotomize`; no NaN.
    partition : str or sequence of str, keyword-only
        The dims whose combinations are the groups: ``("subject",)`` (256
        groups of ``4 m`` outcomes in the paper) or ``("subject", "image")``
        (by original image: 1024 groups of ``m``).
    trial_dim : str, keyword-only
        The dim drawn into runs and split into trials (time).
    m : int, keyword-only
        Collections per trial.
    n_collections : int, keyword-only
        Collections per run; a multiple of ``m``, at most the size of
        ``trial_dim``.
    n_runs : int, keyword-only
        Runs (independent repetitions of the experiment, each on a fresh
        draw).
    design : {"stratified", "cluster"}, keyword-only
        Which groups a trial holds. ``"stratified"``: all groups, the same
        every trial. ``"cluster"``: groups drawn at random per trial (the
        paper's figure 4), see ``cluster_draw``.
    randomize : None or str, keyword-only
        ``None``: every series keeps its time order (a trial's outcomes share
        their collections). ``trial_dim`` (e.g. ``"collection"``): randomize
        over time: every series (every combination of the dims other than
        ``trial_dim``, e.g. every ``(subject, image)``) has its collections
        permuted independently, afresh each run, before the run's draw;
        this is the paper's "shuffle each row independently".
    cluster_draw : None or float, keyword-only
        For ``design="cluster"`` only. ``None`` (default): each run deals
        its groups at random into disjoint sets, one per trial
        (``n_groups // n_trials`` groups a trial; no group is used twice in
        a run, the paper's "changing subjects each trial without overlap").
        A float ``f`` in (0, 1]: every trial draws ``round(f n_groups)``
        groups at random, independently of the other trials. Drawing a share
        of a finite set of groups shrinks the between-group part of the
        variance by ``1 - f`` (finite-population correction), so ``V_cl``,
        an infinite-population estimator, then overestimates: by up to
        ``1 / (1 - f)``.
    level : float, keyword-only
        Confidence level of ``ratio_interval``.
    tolerance : float, keyword-only
        Relative margin of the verdict: an estimator is ``compatible`` when
        its ratio interval meets ``[1 / (1 + tolerance), 1 + tolerance]``.
        The default 5% is immaterial for inference (a 5% error in a
        variance is a 2.5% error in a standard error) and is the precision
        thirty runs of 45 trials give the pooled empirical variance
        (sqrt(2/1320) = 3.9%, METHODS.md: "about +-5%"), so the verdict
        does not hinge on differences the study cannot resolve. It is no
        larger because the estimators are exactly unbiased under their own
        design (no approximation to forgive) and a wrong design can be off
        by only 15-20% (the stratified estimator on a partition that lumps
        a few fixed strata together, the paper's figure 2).
    seed : int, SeedSequence or numpy.random.Generator, keyword-only
        All draws come from it; the same seed gives the same study.

    Returns
    -------
    xarray.Dataset
        Dims ``run``, ``trial``, ``estimator`` (``srs``, ``st``, ``cl``),
        ``bound`` (``lower``, ``upper``):

        - ``trial_rate``, ``v_srs``, ``v_st``, ``v_cl`` (run, trial): the
          rate and the point estimators of every trial;
        - ``rate`` (run): mean of the trial rates;
        - ``empirical_variance`` (run): variance of the trial rates
          (``ddof=1``);
        - ``mean_v_srs``, ``mean_v_st``, ``mean_v_cl`` (run): the estimators'
          means over the run's trials;
        - ``ratio_srs``, ``ratio_st``, ``ratio_cl`` (run): mean / empirical;
        - ``ratio`` (estimator): over all runs, the mean estimator over the
          mean empirical variance;
        - ``ratio_interval`` (estimator, bound): ``ratio`` times
          ``exp(-+ k t s / sqrt(runs))``, ``s`` the run-to-run sd of the log
          ratios, ``t`` Student's quantile at ``level`` and ``k >= 1`` the
          inflation for the runs' overlap (``sqrt(runs (trials - 1) /
          df_empirical)``, see :func:`design_test`; 1.0 when randomized);
        - ``log_ratio_sd`` (estimator): that run-to-run sd;
        - ``compatible`` (estimator): the verdict (see ``tolerance``).

        attrs record the method, partition, design, cluster_draw,
        randomize, m, n_collections, n_trials, n_runs, n_times (values of
        ``trial_dim``), independent_draws (1, or the number of series when
        randomized), interval_inflation, n_groups, groups_per_trial,
        elements_per_group, level, tolerance, seed and the verdict rule.
        Plot ``empirical_variance`` and the three ``mean_v_*`` against
        ``run`` on a log scale for the paper's figures 1-4.

    See Also
    --------
    design_test : the formal test for the last iteration.
    variance_srs, variance_stratified, variance_cluster : the estimators.

    Notes
    -----
    Runs draw from the same data, so they overlap (the paper reuses data
    across experiments too); trials within a run never do. Without
    randomization all series share a run's draw, the runs' empirical
    variances share information and the run-to-run spread understates the
    error of their mean: the interval is widened by ``k`` (1.38 at the
    paper's size); with randomization every series draws its own times and
    ``k`` is 1.

    References
    ----------
    Micheals & Boult, "Improving Variance Estimation in Biometric Systems"
    (seeds/000), sections 3 and 4; METHODS.md section 3.

    Examples
    --------
    >>> from bioxr import simulate, design
    >>> from bioxr.outcomes import outcomes
    >>> success = design.dichotomize(outcomes(simulate.photohead(16, 4, 48, seed=1)), rank=1)
    >>> study = design.design_study(success, n_collections=40, n_runs=5, seed=2)
    >>> dict(study.sizes)
    {'run': 5, 'trial': 10, 'estimator': 3, 'bound': 2}
    >>> study.attrs["partition"], study.attrs["design"], study.attrs["groups_per_trial"]
    ('subject', 'stratified', 16)
    >>> bool((study.mean_v_st <= study.mean_v_cl).all())
    True
    """
    if not isinstance(success, xr.DataArray):
        raise TypeError(
            f"expected a success DataArray (see bioxr.design.dichotomize), got {type(success).__name__}."
        )
    partition = _dims(partition, "partition")
    if trial_dim not in success.dims:
        raise ValueError(f"trial_dim {trial_dim!r} is not a dim of success {success.dims}.")
    bad = [d for d in partition if d not in success.dims or d == trial_dim]
    if bad or len(set(partition)) != len(partition):
        raise ValueError(
            f"partition {partition} must name distinct dims of success other than {trial_dim!r}; bad: {bad}."
        )
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}.")
    if randomize is not None and randomize != trial_dim:
        raise ValueError(f"randomize must be None or the trial dim {trial_dim!r}, got {randomize!r}.")
    for name, value in (("m", m), ("n_collections", n_collections), ("n_runs", n_runs)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    m, n_collections, n_runs = int(m), int(n_collections), int(n_runs)
    n_times = success.sizes[trial_dim]
    if n_collections > n_times:
        raise ValueError(f"n_collections={n_collections} exceeds the {n_times} values of {trial_dim!r}.")
    if n_collections % m:
        raise ValueError(f"n_collections={n_collections} is not a multiple of m={m}.")
    n_trials = n_collections // m
    if n_trials < 2 or n_runs < 2:
        raise ValueError("need at least 2 trials a run (n_collections >= 2 m) and 2 runs.")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}.")

    others = tuple(d for d in success.dims if d not in partition and d != trial_dim)
    n_groups = int(np.prod([success.sizes[d] for d in partition]))
    n_other = int(np.prod([success.sizes[d] for d in others])) if others else 1
    if design == "cluster":
        if cluster_draw is None:
            per_trial = n_groups // n_trials
        else:
            share = isinstance(cluster_draw, numbers.Real) and not isinstance(cluster_draw, bool)
            if not share or not 0 < cluster_draw <= 1:
                raise ValueError(f"cluster_draw must be None or a share in (0, 1], got {cluster_draw!r}.")
            per_trial = int(round(cluster_draw * n_groups))
    else:
        if cluster_draw is not None:
            raise ValueError("cluster_draw applies to design='cluster' only.")
        per_trial = n_groups
    if per_trial < 2:
        raise ValueError(
            f"a trial would hold {per_trial} group(s) of {n_groups}: the cluster estimator needs 2; "
            "draw a larger share or use fewer trials."
        )
    elements = n_other * m
    if elements < 2:
        raise ValueError("groups of one element a trial: the stratified estimator needs 2 (raise m).")

    values = np.asarray(success.transpose(*partition, *others, trial_dim).values)
    if values.dtype != bool:
        if not np.isfinite(values).all():
            raise ValueError("success has NaN (probes without a mate): select the probes with a mate first.")
        if not np.isin(values, (0, 1)).all():
            raise ValueError("success must be binary (0/1); dichotomize with ties='strict'.")
    y = values.reshape(n_groups * n_other, n_times).astype(np.uint8)

    rng = _generator(seed)
    times, groups = _draw(
        rng,
        n_series=y.shape[0],
        n_times=n_times,
        n_runs=n_runs,
        n_collections=n_collections,
        n_groups=n_groups,
        n_trials=n_trials,
        randomize=randomize,
        design=design,
        cluster_draw=cluster_draw,
    )
    if times.ndim == 2:
        drawn = np.moveaxis(y[:, times], 1, 0)  # (runs, series, collections)
    else:
        drawn = y[np.arange(y.shape[0])[None, :, None], times]
    counts = drawn.reshape(n_runs, n_groups, n_other, n_trials, m).sum(axis=(2, 4), dtype=np.int64)
    pg = np.moveaxis(counts, 1, 2) / elements  # (runs, trials, groups)
    if groups is not None:
        pg = np.take_along_axis(pg, groups, axis=-1)

    trial_rate = pg.mean(axis=-1)
    v = {name: _KERNELS[name](pg, elements) for name in ESTIMATORS}
    empirical = trial_rate.var(axis=1, ddof=1)
    mean_v = {name: v[name].mean(axis=1) for name in ESTIMATORS}
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_run = {name: mean_v[name] / empirical for name in ESTIMATORS}
        ratio = np.array([mean_v[name].mean() / empirical.mean() for name in ESTIMATORS])
        log_sd = np.array([np.log(ratio_run[name]).std(ddof=1) for name in ESTIMATORS])
    draws = 1 if randomize is None else int(y.shape[0])
    df_eff = _empirical_df(
        {"n_collections": n_collections, "n_times": n_times, "independent_draws": draws}, n_runs, n_trials
    )
    inflation = np.sqrt(n_runs * (n_trials - 1) / df_eff)
    half = inflation * stats.t.ppf(0.5 + level / 2, n_runs - 1) * log_sd / np.sqrt(n_runs)
    interval = np.stack([ratio * np.exp(-half), ratio * np.exp(half)], axis=-1)
    compatible = (interval[:, 0] <= 1 + tolerance) & (interval[:, 1] >= 1 / (1 + tolerance))

    run_trial = ("run", "trial")
    ds = xr.Dataset(
        {
            "trial_rate": (run_trial, trial_rate),
            **{f"v_{name}": (run_trial, v[name]) for name in ESTIMATORS},
            "rate": ("run", trial_rate.mean(axis=1)),
            "empirical_variance": ("run", empirical),
            **{f"mean_v_{name}": ("run", mean_v[name]) for name in ESTIMATORS},
            **{f"ratio_{name}": ("run", ratio_run[name]) for name in ESTIMATORS},
            "ratio": ("estimator", ratio),
            "ratio_interval": (("estimator", "bound"), interval),
            "log_ratio_sd": ("estimator", log_sd),
            "compatible": ("estimator", compatible),
        },
        coords={
            "run": np.arange(n_runs),
            "trial": np.arange(n_trials),
            "estimator": list(ESTIMATORS),
            "bound": ["lower", "upper"],
        },
    )
    long_names = {
        "trial_rate": "rate of a trial",
        "rate": "mean trial rate of the run",
        "empirical_variance": "empirical variance of the trial rates (ddof=1)",
        "ratio": "mean estimator / empirical variance, over all runs",
        "ratio_interval": f"{level:.0%} interval of the ratio across runs (log scale, Student t)",
        "log_ratio_sd": "run-to-run sd of the log ratio",
        "compatible": f"ratio interval meets [1/(1+{tolerance}), 1+{tolerance}]",
    }
    for name in ESTIMATORS:
        long_names[f"v_{name}"] = _LONG_NAMES[name]
        long_names[f"mean_v_{name}"] = f"mean over the run's trials of V_{name}"
        long_names[f"ratio_{name}"] = f"mean V_{name} / empirical variance"
    for name, text in long_names.items():
        ds[name].attrs["long_name"] = text
    ds.attrs = {
        "method": "Micheals-Boult design study: empirical variance of trial rates vs mean point estimators",
        "partition": ", ".join(partition),
        "trial_dim": trial_dim,
        "elements_dims": ", ".join(others),
        "design": design,
        "cluster_draw": (
            ("disjoint" if design == "cluster" else "none") if cluster_draw is None else float(cluster_draw)
        ),
        "randomize": "none" if randomize is None else f"{randomize} (independently per series, afresh each run)",
        "m": m,
        "n_collections": n_collections,
        "n_trials": n_trials,
        "n_runs": n_runs,
        "n_times": n_times,
        "independent_draws": draws,
        "interval_inflation": float(inflation),
        "n_groups": n_groups,
        "groups_per_trial": per_trial,
        "elements_per_group": elements,
        "level": float(level),
        "tolerance": float(tolerance),
        "seed": int(seed) if isinstance(seed, numbers.Integral) else type(seed).__name__,
        "verdict": (
            "compatible when the interval ratio * exp(-+ k t_{level, runs-1} sd(log ratio_run) / sqrt(runs)) "
            "meets [1/(1+tolerance), 1+tolerance]; k = interval_inflation for the runs' overlap"
        ),
        "references": _REFERENCE,
    }
    return ds


def _empirical_df(attrs, n_runs: int, n_trials: int) -> float:
    """Effective degrees of freedom of the empirical variance pooled over runs.

    Each run contributes ``K - 1``; but runs draw from the same data, so they
    share information. A run's empirical variance carries the sample variance
    of the values it drew (``C - 1`` degrees of freedom per independent
    draw); two runs share a fraction ``C / T`` of them. Runs that draw the
    same collections for every series (no randomization, ``U = 1``
    independent draws) therefore add a common relative variance
    ``(1 - 1/R) (C / T) 2 / (C - 1)``; with randomization every series draws
    on its own (``U`` = number of series) and the shared part is negligible.
    """
    c, t = attrs.get("n_collections"), attrs.get("n_times")
    u = attrs.get("independent_draws", 1)
    base = 1.0 / (n_runs * (n_trials - 1))
    if not c or not t or c < 2:
        return 1.0 / base
    shared = (1.0 - 1.0 / n_runs) * (c / t) / ((c - 1) * u)
    return 1.0 / (base + shared)


def design_test(study: xr.Dataset) -> xr.Dataset:
    """F test of the empirical variance against each estimator's mean.

    For the last iteration of the methodology only (the paper's advice: a
    formal test earlier turns exploration into premature conclusions). Under
    the design's hypothesis the trial rates of a run are independent with
    variance ``V``, so ``(K - 1) S^2 / V`` is about chi-square with ``K - 1``
    degrees of freedom (``K`` trials; trial rates average thousands of
    outcomes, so they are close to normal). Pooled over ``R`` runs the
    empirical variance would have ``R (K - 1)`` degrees of freedom if runs
    were independent; they overlap (a run draws ``C`` of ``T``
    collections), so ``df_empirical = 1 / (1 / (R (K-1)) + (1 - 1/R) (C/T) /
    ((C - 1) U))`` with ``U = 1`` when all series share the run's draw (no
    randomization) and ``U`` = the number of series when each draws its own
    (``randomize``), where the overlap term vanishes. The estimator's mean
    over all ``R K`` trials estimates ``V`` too, with Satterthwaite's
    degrees of freedom ``2 Vbar^2 / Var(Vbar)``, ``Var(Vbar)`` the variance
    of the per-trial estimates over ``R K``. The statistic ``F = empirical /
    Vbar`` is referred to ``F(df_empirical, df_estimator)``, two-sided.

    Parameters
    ----------
    study : xarray.Dataset
        A result of :func:`design_study`.

    Returns
    -------
    xarray.Dataset
        Over ``estimator``: ``statistic`` (F), ``df_empirical``,
        ``df_estimator``, ``pvalue`` (two-sided) and ``ratio`` (1 / F, the
        mean estimator over the pooled empirical variance). attrs: method,
        hypothesis and the study's attrs.

    See Also
    --------
    design_study

    Notes
    -----
    The overlap correction is a first-order approximation, checked by
    simulation in the test suite (nominal size with and without
    randomization). Use the test, as the paper says, only at the last
    iteration, on a design that the exploratory ratios already support.

    References
    ----------
    seeds/000 section 3.3; METHODS.md section 3.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bioxr import design
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.3, 0.9, 60)  # fixed groups, no time effect: stratified holds
    >>> success = xr.DataArray(rng.random((60, 400)) < p[:, None], dims=("subject", "collection"))
    >>> study = design.design_study(success, n_collections=200, n_runs=20, m=4, seed=1)
    >>> test = design.design_test(study)
    >>> bool(test.pvalue.sel(estimator="st") > 0.01)
    True
    >>> round(float(test.df_empirical.sel(estimator="st")))  # 980 if runs did not overlap
    293
    """
    needed = ["empirical_variance", *(f"v_{name}" for name in ESTIMATORS)]
    if not isinstance(study, xr.Dataset) or any(n not in study.data_vars for n in needed):
        raise ValueError("expected the Dataset returned by bioxr.design.design_study.")
    n_runs, n_trials = study.sizes["run"], study.sizes["trial"]
    df1 = _empirical_df(study.attrs, n_runs, n_trials)
    pooled = float(study["empirical_variance"].mean())
    rows = []
    for name in ESTIMATORS:
        v = np.asarray(study[f"v_{name}"].values, dtype=float).ravel()
        vbar = v.mean()
        var_vbar = v.var(ddof=1) / v.size
        df2 = 2 * vbar**2 / var_vbar if var_vbar > 0 else np.inf
        f = pooled / vbar
        if np.isfinite(df2):
            lower, upper = stats.f.cdf(f, df1, df2), stats.f.sf(f, df1, df2)
        else:
            lower, upper = stats.chi2.cdf(f * df1, df1), stats.chi2.sf(f * df1, df1)
        rows.append((f, df2, min(1.0, 2 * min(lower, upper)), vbar / pooled))
    f, df2, pvalue, ratio = (np.array(col, dtype=float) for col in zip(*rows))
    out = xr.Dataset(
        {
            "statistic": ("estimator", f),
            "df_empirical": ("estimator", np.full(len(ESTIMATORS), float(df1))),
            "df_estimator": ("estimator", df2),
            "pvalue": ("estimator", pvalue),
            "ratio": ("estimator", ratio),
        },
        coords={"estimator": list(ESTIMATORS)},
    )
    out["statistic"].attrs["long_name"] = "F = pooled empirical variance / mean estimator"
    out["df_estimator"].attrs["long_name"] = "Satterthwaite degrees of freedom of the mean estimator"
    out["pvalue"].attrs["long_name"] = "two-sided p-value"
    out.attrs = {
        **study.attrs,
        "method": "F test: pooled empirical variance (runs x (trials-1) df) vs mean estimator (Satterthwaite df)",
        "hypothesis": "H0: the design's estimator is unbiased for the variance of the trial rate",
        "alternative": "two-sided",
    }
    return out
