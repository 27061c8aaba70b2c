"""The design study: the paper's runs of trials, vectorised (seeds/000 sections 3-4)."""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from .._core import check_level, check_replicates
from .estimators import _KERNELS, _LONG_NAMES, ESTIMATORS, _dims
from .inference import (
    _REFERENCE,
    TARGET_POWER,
    VERDICT_RULE,
    _assess,
    _check_tolerance,
    _empirical_df,
    _estimator_df,
    band,
)

DESIGNS = ("stratified", "cluster")


def _count(value, name: str, minimum: int) -> int:
    """A whole number at least ``minimum``, checked by the shared replicate checker, named as the caller knows it."""
    try:
        return check_replicates(value, minimum=minimum)
    except ValueError:
        raise ValueError(f"{name}={value!r}; give a whole number, at least {minimum}.") from None


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
       of each estimator; the ratio mean / empirical;
    5. over all runs: each estimator's ratio with its interval, and a
       verdict: ``compatible`` when the whole interval lies inside the
       band ``[1 / (1 + tolerance), 1 + tolerance]``, ``incompatible`` when
       it lies wholly outside, ``inconclusive`` otherwise, with the chance
       that a correct design would be called compatible at this size and
       the trials that would make it 80%.

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
        Confidence level of ``ratio_interval``, in (0, 1).
    tolerance : float, keyword-only
        Half-width of the equivalence band ``[1 / (1 + tolerance), 1 +
        tolerance]``: an estimator is ``compatible`` when its whole ratio
        interval lies inside it, ``incompatible`` when the interval lies
        wholly outside, ``inconclusive`` otherwise (see ``verdict``). The
        default 5% is immaterial for inference (a 5% error in a variance is
        a 2.5% error in a standard error), and a wrong design can be off by
        only 15-20% (the stratified estimator on a partition that lumps a
        few fixed strata together, the paper's figure 2). Proving a ratio
        within 5% takes many trials: the interval must be narrower than the
        band, which takes about 8,900 independent trials for an 80% chance
        when the design is right (30 runs of 45 trials, the paper's size,
        give 1,350: enough to reject a wrong design, not to prove a right
        one within 5%; within 15% they give about 90%). ``power`` and
        ``trials_needed`` say so for each study.
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
        - ``ratio_interval`` (estimator, bound): ``ratio`` times the
          ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of
          ``F(df_empirical, df_estimator)``: under the design's model
          ``true ratio / ratio`` has that distribution (see
          :func:`design_test`), so the interval is exact for normal trial
          rates, however few the trials;
        - ``df_estimator`` (estimator): Satterthwaite's degrees of freedom
          of the mean estimator (``df_empirical``, the same for all, is an
          attr);
        - ``log_ratio_sd`` (estimator): the run-to-run sd of the log ratio
          (a check on the model: about ``sqrt(2 / (trials - 1))`` for many
          trials a run when runs do not overlap);
        - ``verdict`` (estimator): ``"compatible"`` (the interval inside
          the band), ``"incompatible"`` (wholly outside it) or
          ``"inconclusive"`` (across an edge, or wider than the band: too
          few trials); ``compatible`` (estimator): ``verdict ==
          "compatible"``;
        - ``power`` (estimator): the chance that a correct design (true
          ratio 1) is called compatible at this size; ``trials_needed``
          (estimator): the trials (the runs kept, more trials a run) that
          would give it an 80% chance (NaN when the runs' overlap caps the
          precision below that: randomize or collect more);
        - ``statement`` (estimator): the verdict in a sentence.

        attrs record the method, partition, design, cluster_draw,
        randomize, m, n_collections, n_trials, n_runs, n_times (values of
        ``trial_dim``), independent_draws (1, or the number of series when
        randomized), df_empirical, n_groups, groups_per_trial,
        elements_per_group, level, tolerance, band, seed and the verdict
        rule.
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
    variances share information and ``df_empirical`` is less than ``runs
    (trials - 1)`` (about half at the paper's size); with randomization
    every series draws its own times and the loss vanishes.

    The verdict is an equivalence test (two one-sided tests, each at ``(1 -
    level) / 2``): a design whose true ratio sits on the band's edge is
    called compatible at most 2.5% of the time at ``level=0.95``, checked by
    simulation in the test suite. The paper's own test of agreement (H0:
    ratio 1) is :func:`design_test`'s F test.

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
    >>> study.verdict.values.tolist()  # 5 runs of 10 trials: too few to prove a ratio within 5%
    ['incompatible', 'incompatible', 'inconclusive']
    >>> print(study.statement.sel(estimator="cl").item()[:30])
    inconclusive: too few trials (
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
    m, n_collections = _count(m, "m", 1), _count(n_collections, "n_collections", 2)
    n_runs = _count(n_runs, "n_runs", 2)
    level, tolerance = check_level(level), _check_tolerance(tolerance)
    n_times = success.sizes[trial_dim]
    if n_collections > n_times:
        raise ValueError(f"n_collections={n_collections} exceeds the {n_times} values of {trial_dim!r}.")
    if n_collections % m:
        raise ValueError(f"n_collections={n_collections} is not a multiple of m={m}.")
    n_trials = n_collections // m
    if n_trials < 2:
        raise ValueError(f"n_collections={n_collections} with m={m} gives {n_trials} trial a run: the empirical "
                         "variance needs at least 2 (n_collections >= 2 m).")

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
    sizes = {"n_collections": n_collections, "n_times": n_times, "independent_draws": draws}
    df_eff = _empirical_df(sizes, n_runs, n_trials)
    df_est = np.array([_estimator_df(v[name]) for name in ESTIMATORS])
    found = [_assess(r, df_eff, d2, sizes, n_runs, n_trials, level, tolerance) for r, d2 in zip(ratio, df_est)]
    interval = np.array([[f["lower"], f["upper"]] for f in found], dtype=float)
    verdicts = np.array([f["verdict"] for f in found], dtype=str)

    low, high = band(tolerance)
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
            "df_estimator": ("estimator", df_est),
            "log_ratio_sd": ("estimator", log_sd),
            "verdict": ("estimator", verdicts),
            "compatible": ("estimator", verdicts == "compatible"),
            "power": ("estimator", np.array([f["power"] for f in found], dtype=float)),
            "trials_needed": ("estimator", np.array([f["trials_needed"] for f in found], dtype=float)),
            "statement": ("estimator", np.array([f["statement"] for f in found], dtype=str)),
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
        "ratio_interval": f"{level:.0%} interval of the ratio: ratio x F(df_empirical, df_estimator) quantiles",
        "df_estimator": "Satterthwaite degrees of freedom of the mean estimator",
        "log_ratio_sd": "run-to-run sd of the log ratio",
        "verdict": f"equivalence verdict: the ratio interval against [{low:.4g}, {high:.4g}]",
        "compatible": "verdict == 'compatible': the whole ratio interval inside the band",
        "power": "chance of 'compatible' for a correct design (ratio 1) at this size",
        "trials_needed": f"trials (runs kept) for a {TARGET_POWER:.0%} chance of 'compatible' for a correct design",
        "statement": "the verdict in words",
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
        "df_empirical": float(df_eff),
        "n_groups": n_groups,
        "groups_per_trial": per_trial,
        "elements_per_group": elements,
        "level": float(level),
        "tolerance": float(tolerance),
        "band": f"[{low:.4g}, {high:.4g}]",
        "seed": int(seed) if isinstance(seed, numbers.Integral) else type(seed).__name__,
        "verdict": VERDICT_RULE,
        "references": _REFERENCE,
    }
    return ds


