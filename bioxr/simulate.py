"""Seeded simulators of biometric experiments.

Every generator takes ``seed``: an int, a :class:`numpy.random.SeedSequence`
or a :class:`numpy.random.Generator`; none touches NumPy's global state. The
same seed gives the same numbers, whatever the chunking.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .cube import score_cube

__all__ = ["gaussian", "photohead", "PHOTOHEAD_WEATHER"]

#: Weather states of the simulated Photohead site and their effect on the
#: logit of rank-1 success (clear days are the baseline).
PHOTOHEAD_WEATHER = {"clear": 0.6, "cloudy": 0.2, "rain": -0.9, "fog": -1.8, "snow": -1.4}
_WEATHER_STAY = 0.93  # chance the weather of one collection persists into the next


def _entropy(seed) -> np.random.SeedSequence:
    """The root SeedSequence of a simulation, from an int, SeedSequence or Generator.

    A SeedSequence keeps its spawn key, so the children of
    ``SeedSequence(s).spawn(n)`` give independent simulations.
    """
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(0, 2**63)))
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        raise ValueError("seed is None: pass an int or a numpy Generator so results can be reproduced.")
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise TypeError(f"seed must be a non-negative int, SeedSequence or numpy Generator, got {seed!r}.")


def _rng(root, *key: int) -> np.random.Generator:
    """An independent stream for ``key`` under the root seed (int or SeedSequence)."""
    if not isinstance(root, np.random.SeedSequence):
        root = np.random.SeedSequence(root)
    child = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + tuple(key))
    return np.random.Generator(np.random.PCG64(child))


def gaussian(
    n_subjects: int = 100,
    n_samples: int = 2,
    *,
    mated_mean: float = 3.0,
    subject_sd: float = 0.7,
    groups: dict[str, float] | None = None,
    seed=0,
) -> xr.DataArray:
    """Gaussian mated and non-mated scores with subject effects.

    Every subject has one enrolled reference and ``n_samples`` probe samples.
    A non-mated score is N(0, 1); a mated score is N(mated_mean + u_s +
    g_group, 1) with a subject effect ``u_s ~ N(0, subject_sd)`` shared by
    all of a subject's attempts (so they are correlated, as real ones are).

    Parameters
    ----------
    n_subjects : int
    n_samples : int
        Probe samples per subject.
    mated_mean : float, keyword-only
        Mean mated score (the d' of the matcher when subject_sd is 0).
    subject_sd : float, keyword-only
        Standard deviation of the per-subject shift of mated scores.
    groups : dict of str to float, optional
        Demographic groups and their shift of the mated mean; subjects are
        assigned to them in turn. Default: one group ``"all"``.
    seed : int, SeedSequence or Generator

    Returns
    -------
    xarray.DataArray
        Score cube with dims ``("probe", "reference")``, coordinates
        ``subject``, ``sample``, ``group`` and ``probe_id`` on ``probe``,
        ``reference_subject`` and ``reference_group`` on ``reference``.

    Examples
    --------
    >>> from bioxr import simulate
    >>> cube = simulate.gaussian(n_subjects=4, n_samples=2, seed=7)
    >>> cube.sizes["probe"], cube.sizes["reference"]
    (8, 4)
    >>> bool((simulate.gaussian(4, seed=7) == cube).all())
    True
    """
    if n_subjects < 2 or n_samples < 1:
        raise ValueError("need n_subjects >= 2 (for non-mated pairs) and n_samples >= 1.")
    rng = _rng(_entropy(seed), 0)
    groups = groups or {"all": 0.0}
    names = list(groups)
    subjects = np.array([f"s{i:04d}" for i in range(n_subjects)])
    subject_group = np.array([names[i % len(names)] for i in range(n_subjects)])
    shift = mated_mean + rng.normal(0.0, subject_sd, n_subjects) + np.array([groups[g] for g in subject_group])
    probe_subject = np.repeat(np.arange(n_subjects), n_samples)
    scores = rng.normal(0.0, 1.0, (n_subjects * n_samples, n_subjects))
    rows = np.arange(probe_subject.size)
    scores[rows, probe_subject] += shift[probe_subject]
    cube = score_cube(
        scores,
        subject=subjects[probe_subject],
        reference_subject=subjects,
        coords={
            "sample": ("probe", np.tile(np.arange(n_samples), n_subjects)),
            "group": ("probe", subject_group[probe_subject]),
            "reference_group": ("reference", subject_group),
        },
        probe_id=np.array([f"{subjects[s]}-p{k}" for s, k in zip(probe_subject, np.tile(np.arange(n_samples), n_subjects))]),
        reference_id=np.array([f"{s}-ref" for s in subjects]),
    )
    cube.attrs["simulator"] = f"bioxr.simulate.gaussian(mated_mean={mated_mean}, subject_sd={subject_sd})"
    return cube


def photohead(
    n_subjects: int = 16,
    n_images: int = 4,
    n_collections: int = 48,
    *,
    seed=0,
    chunks: dict | int | None = None,
    subject_sd: float = 0.7,
    image_sd: float = 1.5,
    time_sd: float = 0.7,
    base_logit: float = 2.0,
) -> xr.DataArray:
    """A Photohead-style recapture experiment (seed 000, section 4).

    ``n_subjects x n_images`` original images form the gallery. At each of
    ``n_collections`` collections, spread over months at every two hours of
    the day, every original is displayed outdoors, recaptured through the
    weather, and compared with every original: the score cube has dims
    ``(subject, image, collection, reference)``.

    The quality of a recapture, on the logit scale of rank-1 success, is
    ``base_logit + u_subject + v_image + w_collection`` with ``u ~ N(0,
    subject_sd)``, ``v ~ N(0, image_sd)`` and a collection effect made of the
    weather (a persistent Markov chain over :data:`PHOTOHEAD_WEATHER`), the
    time of day (worse at dawn and dusk) and an AR(1) drift of sd
    ``time_sd``. Non-mated scores are N(0, 1); the self-match score is ``c +
    quality + logistic noise`` with ``c`` the typical best of the non-mated
    scores, so the chance that it ranks first is close to the logistic of
    the quality; other originals of the same subject score N(1.5 + u/2, 1).
    Rank-1 outcomes therefore cluster in time, by weather and time of day.

    Parameters
    ----------
    n_subjects, n_images, n_collections : int
        The paper's experiment is 256 x 4 x 1440 (1.5e9 scores); pass
        ``chunks`` for that size so the scores are generated chunk by chunk
        and never held at once.
    seed : int, SeedSequence or Generator, keyword-only
    chunks : dict or int, optional, keyword-only
        ``{"collection": k}`` (or ``k``) returns a dask-backed cube generated
        lazily, ``k`` collections a chunk. Values do not depend on chunking.
    subject_sd, image_sd, time_sd, base_logit : float, keyword-only
        Effect sizes on the logit scale.

    Returns
    -------
    xarray.DataArray
        Float32 score cube (similarity). Coordinates: ``subject``, ``image``,
        ``collection`` (with ``time``, ``hour``, ``weather`` on it);
        ``reference_subject`` and ``reference_image`` on ``reference``; the
        simulated effects are in ``subject_effect``, ``image_effect`` and
        ``collection_effect``.

    Examples
    --------
    >>> from bioxr import simulate
    >>> cube = simulate.photohead(n_subjects=8, n_collections=6, seed=1)
    >>> dict(cube.sizes)
    {'subject': 8, 'image': 4, 'collection': 6, 'reference': 32}
    >>> sorted(set(cube.weather.values.tolist()) - set(simulate.PHOTOHEAD_WEATHER))
    []
    """
    if n_subjects < 2 or n_images < 1 or n_collections < 1:
        raise ValueError("need n_subjects >= 2, n_images >= 1 and n_collections >= 1.")
    entropy = _entropy(seed)
    rng = _rng(entropy, 0)
    u = rng.normal(0.0, subject_sd, n_subjects)
    v = rng.normal(0.0, image_sd, (n_subjects, n_images))
    weather_names = list(PHOTOHEAD_WEATHER)
    weather_idx = np.empty(n_collections, dtype=np.int64)
    weather_idx[0] = rng.integers(len(weather_names))
    stay = rng.random(n_collections)
    jump = rng.integers(len(weather_names), size=n_collections)
    for t in range(1, n_collections):
        weather_idx[t] = weather_idx[t - 1] if stay[t] < _WEATHER_STAY else jump[t]
    hours = (np.arange(n_collections) * 2) % 24
    time = pd.Timestamp("2004-03-01") + pd.to_timedelta(np.arange(n_collections) * 2, unit="h")
    drift = np.empty(n_collections)
    eps = rng.normal(0.0, time_sd * np.sqrt(1 - 0.9**2), n_collections)
    drift[0] = rng.normal(0.0, time_sd)
    for t in range(1, n_collections):
        drift[t] = 0.9 * drift[t - 1] + eps[t]
    daylight = 0.8 * np.cos(2 * np.pi * (hours - 13) / 24)
    weather_effect = np.array([PHOTOHEAD_WEATHER[w] for w in weather_names])[weather_idx]
    w = weather_effect + daylight + drift
    # the typical best of the non-mated scores, so that P(rank 1) ~ logistic(quality)
    n_nonmated = (n_subjects - 1) * n_images
    offset = float(_normal_quantile(0.5 ** (1.0 / n_nonmated)))
    params = dict(
        entropy=entropy,
        u=u,
        v=v,
        w=w,
        base=base_logit,
        offset=offset,
    )
    subjects = np.array([f"S{i:03d}" for i in range(n_subjects)])
    coords = {
        "subject": subjects,
        "image": np.arange(n_images),
        "collection": np.arange(n_collections),
        "time": ("collection", time.values),
        "hour": ("collection", hours),
        "weather": ("collection", np.array(weather_names)[weather_idx]),
        "reference_subject": ("reference", np.repeat(subjects, n_images)),
        "reference_image": ("reference", np.tile(np.arange(n_images), n_subjects)),
        "subject_effect": ("subject", u),
        "image_effect": (("subject", "image"), v),
        "collection_effect": ("collection", w),
    }
    shape = (n_subjects, n_images, n_collections, n_subjects * n_images)
    if chunks is None:
        data = _photohead_block(0, n_collections, **params)
    else:
        data = _photohead_dask(shape, chunks, params)
    cube = xr.DataArray(
        data,
        dims=("subject", "image", "collection", "reference"),
        coords=coords,
        name="score",
        attrs={
            "score_kind": "similarity",
            "simulator": (
                f"bioxr.simulate.photohead(subject_sd={subject_sd}, image_sd={image_sd}, "
                f"time_sd={time_sd}, base_logit={base_logit})"
            ),
        },
    )
    cube["reference"] = np.array([f"{s}-{i}" for s in subjects for i in range(n_images)])
    return cube


def demographic(
    groups: dict[str, int] | None = None,
    n_samples: int = 4,
    *,
    fnmr=0.05,
    fmr=1e-3,
    rho=0.2,
    cross_fmr: float = 0.1,
    threshold: float = 0.0,
    seed=0,
) -> xr.DataArray:
    """A verification experiment with demographic groups of chosen FNMR, FMR and correlation.

    Every subject has one enrolled reference and ``n_samples`` probes;
    subject and reference carry the subject's group (``group`` on
    ``probe``, ``reference_group`` on ``reference``). At ``threshold`` the
    decisions follow the model of seed 002 (METHODS.md section 5): subject
    ``i`` of group ``g`` has a false non-match propensity ``p_i ~ Beta(a,
    b)`` with mean ``fnmr[g]`` and intra-class correlation ``rho[g]`` (``a
    = pi (1 - rho) / rho``, ``b = (1 - pi)(1 - rho) / rho``; ``p_i = pi`` at
    ``rho = 0``), and each attempt scores ``threshold - Phi^-1(p_i) + e``
    with ``e ~ N(0, 1)``, so it falls below the threshold with probability
    ``p_i`` exactly: the false non-matches of a subject are beta-binomial.
    A non-mated score of a probe of group ``g`` against a reference of
    group ``h`` is ``threshold - Phi^-1(1 - f_gh) + e``: it is a false match
    with probability ``f_gh``, ``fmr[g]`` within a group and ``cross_fmr *
    sqrt(fmr[g] fmr[h])`` across groups (impostors of another group look
    less alike, as NIST's demographic studies found). Non-mated
    comparisons are independent.

    Parameters
    ----------
    groups : dict of str to int, optional
        Group names and their numbers of subjects; default ``{"A": 200,
        "B": 100, "C": 50}``.
    n_samples : int
        Probe samples (attempts) per subject, at least 1.
    fnmr, fmr, rho : float or dict of str to float, keyword-only
        The FNMR, within-group FMR and intra-class correlation of the
        attempts' decisions at ``threshold``: one number for every group or
        one per group. Rates in (0, 1); ``rho`` in [0, 1).
    cross_fmr : float, keyword-only
        FMR across groups as a share of the geometric mean of the two
        groups' FMR, in [0, inf) (kept below 1 as a rate).
    threshold : float, keyword-only
        The threshold at which the rates hold (similarity: a score below it
        is a non-match).
    seed : int, SeedSequence or Generator, keyword-only

    Returns
    -------
    xarray.DataArray
        Score cube, dims ``("probe", "reference")``, coordinates as in
        :func:`gaussian` (``subject``, ``sample``, ``group``, ``probe_id``
        on ``probe``; ``reference_subject``, ``reference_group``,
        ``reference_id`` on ``reference``) and the propensity
        ``fnmr_propensity`` of each subject on ``probe``; attrs
        ``simulator``, ``threshold``, ``fnmr``, ``fmr``, ``rho`` (per
        group) and ``cross_fmr``.

    Examples
    --------
    >>> from bioxr import simulate
    >>> cube = simulate.demographic({"A": 30, "B": 10}, n_samples=2, fnmr={"A": 0.02, "B": 0.1}, seed=1)
    >>> dict(cube.sizes), sorted(set(cube.group.values.tolist()))
    ({'probe': 80, 'reference': 40}, ['A', 'B'])
    >>> cube.attrs["fnmr"]
    {'A': 0.02, 'B': 0.1}
    >>> bool((simulate.demographic({"A": 30, "B": 10}, 2, fnmr={"A": 0.02, "B": 0.1}, seed=1) == cube).all())
    True
    """
    from scipy.special import ndtri

    groups = {"A": 200, "B": 100, "C": 50} if groups is None else dict(groups)
    if not groups:
        raise ValueError("groups is empty: give at least one group and its number of subjects, e.g. {'A': 100}.")
    for name, n in groups.items():
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"group {name!r} has {n!r} subjects; give a positive whole number.")
    if sum(groups.values()) < 2:
        raise ValueError("need at least 2 subjects in all (for non-mated pairs).")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples={n_samples!r}; give a whole number >= 1.")
    names = [str(g) for g in groups]

    def per_group(value, what, lo, hi, closed_lo):
        if isinstance(value, dict):
            unknown = sorted(set(map(str, value)) - set(names))
            missing = sorted(set(names) - set(map(str, value)))
            if unknown or missing:
                raise ValueError(f"{what} names groups {sorted(map(str, value))}; the groups are {names}.")
            out = {str(k): float(v) for k, v in value.items()}
        else:
            out = {g: float(value) for g in names}
        for g, v in out.items():
            if not ((lo <= v if closed_lo else lo < v) and v < hi):
                bounds = f"{'[' if closed_lo else '('}{lo:g}, {hi:g})"
                raise ValueError(f"{what} of group {g!r} is {v!r}; it must lie in {bounds}.")
        return {g: out[g] for g in names}

    fnmr_g = per_group(fnmr, "fnmr", 0.0, 1.0, False)
    fmr_g = per_group(fmr, "fmr", 0.0, 1.0, False)
    rho_g = per_group(rho, "rho", 0.0, 1.0, True)
    cross_fmr = float(cross_fmr)
    if not cross_fmr >= 0:
        raise ValueError(f"cross_fmr={cross_fmr!r}; give a share >= 0.")
    root = _entropy(seed)
    sizes = [int(groups[g]) for g in groups]
    n = sum(sizes)
    code = np.repeat(np.arange(len(names)), sizes)  # group of each subject
    subject_group = np.array(names)[code]
    pi = np.array([fnmr_g[g] for g in names])[code]
    r = np.array([rho_g[g] for g in names])[code]
    rng = _rng(root, 0)
    p = pi.copy()
    cor = r > 0
    if cor.any():
        a = pi[cor] * (1 - r[cor]) / r[cor]
        b = (1 - pi[cor]) * (1 - r[cor]) / r[cor]
        p[cor] = rng.beta(a, b)
    p = np.clip(p, 1e-12, 1 - 1e-12)
    fmr_v = np.array([fmr_g[g] for g in names])
    f = np.minimum(cross_fmr * np.sqrt(np.outer(fmr_v, fmr_v)), 1 - 1e-12)
    np.fill_diagonal(f, fmr_v)
    with np.errstate(divide="ignore"):
        nonmated_mean = threshold - ndtri(1 - f)  # -inf where the cross FMR is 0
    probe_subject = np.repeat(np.arange(n), n_samples)
    scores = _rng(root, 1).standard_normal((n * n_samples, n))
    scores += nonmated_mean[code[probe_subject]][:, code]
    rows = np.arange(probe_subject.size)
    scores[rows, probe_subject] = (threshold - ndtri(p))[probe_subject] + _rng(root, 2).standard_normal(rows.size)
    subjects = np.array([f"s{i:04d}" for i in range(n)])
    sample = np.tile(np.arange(n_samples), n)
    cube = score_cube(
        scores,
        subject=subjects[probe_subject],
        reference_subject=subjects,
        coords={
            "sample": ("probe", sample),
            "group": ("probe", subject_group[probe_subject]),
            "fnmr_propensity": ("probe", p[probe_subject]),
            "reference_group": ("reference", subject_group),
        },
        probe_id=np.array([f"{subjects[s]}-p{k}" for s, k in zip(probe_subject, sample)]),
        reference_id=np.array([f"{s}-ref" for s in subjects]),
    )
    cube.attrs.update(
        simulator=(f"bioxr.simulate.demographic(groups={dict(zip(names, sizes))}, n_samples={n_samples}, "
                   f"fnmr={fnmr_g}, fmr={fmr_g}, rho={rho_g}, cross_fmr={cross_fmr}, threshold={threshold})"),
        threshold=float(threshold), fnmr=fnmr_g, fmr=fmr_g, rho=rho_g, cross_fmr=cross_fmr,
    )
    return cube


__all__ += ["demographic"]


def _normal_quantile(p):
    from scipy.special import ndtri

    return ndtri(p)


def _photohead_block(c0: int, c1: int, *, entropy, u, v, w, base, offset) -> np.ndarray:
    """Scores of collections ``c0 .. c1 - 1``, each from its own seed."""
    n_subjects, n_images = v.shape
    n_ref = n_subjects * n_images
    out = np.empty((n_subjects, n_images, c1 - c0, n_ref), dtype=np.float32)
    probe_ref = np.arange(n_ref).reshape(n_subjects, n_images)  # reference index of each probe's original
    same_shift = (1.5 + 0.5 * u).astype(np.float32)
    s_idx, i_idx = np.meshgrid(np.arange(n_subjects), np.arange(n_images), indexing="ij")
    for k, t in enumerate(range(c0, c1)):
        rng = _rng(entropy, 1, t)
        block = rng.standard_normal((n_subjects, n_images, n_ref), dtype=np.float32)
        # other originals of the same subject: weakly mated
        by_subject = block.reshape(n_subjects, n_images, n_subjects, n_images)
        diag = np.arange(n_subjects)
        by_subject[diag, :, diag, :] += same_shift[:, None, None]
        quality = base + u[:, None] + v + w[t]
        self_score = offset + quality + rng.logistic(0.0, 1.0, quality.shape)
        block[s_idx, i_idx, probe_ref] = self_score.astype(np.float32)
        out[:, :, k, :] = block
    return out


def _photohead_dask(shape, chunks, params):
    try:
        import dask
        import dask.array as da
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("chunks= needs dask: pip install 'bioxr[dask]'") from err
    if isinstance(chunks, dict):
        unknown = set(chunks) - {"collection"}
        if unknown:
            raise ValueError(f"photohead chunks only along 'collection'; got {sorted(unknown)}.")
        step = int(chunks.get("collection", shape[2]))
    else:
        step = int(chunks)
    if step < 1:
        raise ValueError("chunks must be a positive number of collections.")
    blocks = []
    for c0 in range(0, shape[2], step):
        c1 = min(c0 + step, shape[2])
        delayed = dask.delayed(_photohead_block, pure=True)(c0, c1, **params)
        blocks.append(da.from_delayed(delayed, (shape[0], shape[1], c1 - c0, shape[3]), dtype=np.float32))
    return da.concatenate(blocks, axis=2)


def systems(
    n_subjects: int = 100,
    n_samples: int = 2,
    *,
    n_systems: int = 2,
    shift=0.0,
    noise: float = 0.5,
    mated_mean: float = 3.0,
    subject_sd: float = 0.7,
    subject_system_sd: float = 0.0,
    seed=0,
) -> xr.DataArray:
    """Several correlated matchers scored on the same comparisons of the same subjects.

    One latent experiment is shared by every system: a subject effect
    ``u_s ~ N(0, subject_sd)`` on its mated scores and a comparison effect
    ``e ~ N(0, 1)`` on every score. System ``k`` sees the same comparison
    through its own independent noise ``eps_k ~ N(0, noise)``, rescaled so
    that its non-mated scores stay N(0, 1), and a subject may suit one
    system better than another (``v_sk ~ N(0, subject_system_sd)``)::

        score_k = mated * (mated_mean + shift_k + u_s + v_sk) + (e + eps_k) / sqrt(1 + noise**2)

    With ``shift=0`` the systems are the same system plus independent
    noise: their rates have the same distribution (the null hypothesis of
    a paired comparison), and their errors are correlated through ``u``
    and ``e``. A ``shift`` moves system ``k``'s mated scores up by ``k *
    shift`` (a number) or ``shift[k]`` (a sequence): a known difference.

    Parameters
    ----------
    n_subjects, n_samples : int
        Subjects (one enrolled reference each) and probe samples per subject.
    n_systems : int, keyword-only
        Systems, labelled ``"A"``, ``"B"``, ...
    shift : float or sequence of float, keyword-only
    noise : float, keyword-only
        Standard deviation of each system's own noise, relative to the
        shared comparison effect (0: identical systems).
    mated_mean, subject_sd : float, keyword-only
        As in :func:`gaussian`.
    subject_system_sd : float, keyword-only
        Standard deviation of the subject-by-system effect ``v_sk`` on the
        mated scores: which subjects a system finds hard is then partly
        its own (the errors of one subject lean to one system).
    seed : int, SeedSequence or Generator, keyword-only

    Returns
    -------
    xarray.DataArray
        Dims ``("system", "probe", "reference")``, coordinates as in
        :func:`gaussian` (``subject`` on ``probe``, ``reference_subject`` on
        ``reference``) and ``system``; attrs ``simulator``.

    Examples
    --------
    >>> from bioxr import simulate
    >>> cube = simulate.systems(n_subjects=5, n_samples=2, seed=3)
    >>> dict(cube.sizes), cube.system.values.tolist()
    ({'system': 2, 'probe': 10, 'reference': 5}, ['A', 'B'])
    >>> bool((simulate.systems(5, 2, seed=3) == cube).all())
    True
    """
    if int(n_systems) < 2:
        raise ValueError(f"n_systems={n_systems!r}; a comparison needs at least 2 systems.")
    n_systems = int(n_systems)
    if n_systems > 26:
        raise ValueError(f"n_systems={n_systems}; at most 26 systems (labelled 'A' to 'Z').")
    shifts = np.asarray(shift, dtype=float)
    if shifts.ndim == 0:
        shifts = float(shifts) * np.arange(n_systems)
    elif shifts.shape != (n_systems,):
        raise ValueError(f"shift has shape {shifts.shape}; give one number (system k shifted by k * shift) or "
                         f"one per system ({n_systems}).")
    if not noise >= 0:
        raise ValueError(f"noise={noise!r}; give a standard deviation >= 0.")
    root = _entropy(seed)
    # the layout and labels of gaussian(); its scores (mated_mean 0, no subject effect) are the shared e
    base = gaussian(n_subjects, n_samples, mated_mean=0.0, subject_sd=0.0, seed=root)
    u = _rng(root, 1).normal(0.0, subject_sd, n_subjects)
    v = _rng(root, 3).normal(0.0, subject_system_sd, (n_systems, n_subjects))
    subject_index = pd.Index(np.asarray(base["reference_subject"].values))
    code = subject_index.get_indexer(np.asarray(base["subject"].values))
    mated = (np.asarray(base["subject"].values)[:, None] == np.asarray(base["reference_subject"].values)[None, :])
    e = np.asarray(base.values)
    scale = 1.0 / np.sqrt(1.0 + noise**2)
    out = np.empty((n_systems,) + e.shape)
    for k in range(n_systems):
        eps = _rng(root, 2, k).normal(0.0, noise, e.shape) if noise > 0 else 0.0
        out[k] = (e + eps) * scale + mated * (mated_mean + shifts[k] + u[code] + v[k, code])[:, None]
    names = [chr(ord("A") + k) for k in range(n_systems)]
    cube = xr.concat([base.copy(data=out[k]) for k in range(n_systems)], dim="system").assign_coords(
        system=np.array(names))
    cube.attrs = {**base.attrs, "simulator": (f"bioxr.simulate.systems(n_systems={n_systems}, shift={shifts.tolist()}, "
                                              f"noise={noise}, mated_mean={mated_mean}, subject_sd={subject_sd}, "
                                              f"subject_system_sd={subject_system_sd})")}
    return cube


__all__ += ["systems"]


def generative_models(
    n_training: int = 200,
    n_synthetic: int = 300,
    n_features: int = 10,
    *,
    misregistration=(0.0, 0.6),
    models=("good", "poor"),
    decay: float = 0.8,
    seed=0,
) -> xr.Dataset:
    """Training samples and the samples of generative models of different quality built from them.

    A class of images (or shapes) is a Gaussian cloud in ``n_features``
    dimensions whose modes of variation shrink geometrically (standard
    deviation ``decay**k`` along mode ``k``), as a statistical shape
    model's do. The training set is ``n_training`` draws from it. Each
    model is built from the training set as a registration would build
    it: every training sample is first misregistered by independent
    N(0, ``misregistration[k]``) noise on each feature (0: perfect
    correspondence), then a Gaussian (mean and covariance of those
    samples) is fitted and ``n_synthetic`` samples are drawn from it. A
    worse correspondence gives a broader, blurrier model whose samples
    lie farther from the class (worse specificity) and cover it more
    thinly (worse generalisation), as in Schestowitz et al.'s assessment
    of non-rigid registration.

    Parameters
    ----------
    n_training, n_synthetic : int
        Training samples, and samples drawn from each model; each at least 2.
    n_features : int
        Dimension of a sample, at least 1.
    misregistration : sequence of float, keyword-only
        One noise standard deviation (>= 0) per model.
    models : sequence of str, keyword-only
        The models' names, one per ``misregistration`` value.
    decay : float, keyword-only
        Ratio of successive modes' standard deviations, in (0, 1].
    seed : int, SeedSequence or Generator, keyword-only

    Returns
    -------
    xarray.Dataset
        ``training`` over (``sample``, ``feature``) and ``synthetic`` over
        (``model``, ``draw``, ``feature``); coordinate ``misregistration``
        on ``model``; attrs ``simulator`` (the call).

    Examples
    --------
    >>> from bioxr import simulate
    >>> clouds = simulate.generative_models(n_training=50, n_synthetic=60, n_features=4, seed=1)
    >>> dict(clouds.synthetic.sizes), clouds.model.values.tolist()
    ({'model': 2, 'draw': 60, 'feature': 4}, ['good', 'poor'])
    """
    noise = np.atleast_1d(np.asarray(misregistration, dtype=float))
    names = [str(m) for m in models]
    if noise.ndim != 1 or len(names) != noise.size or len(set(names)) != len(names):
        raise ValueError(f"give one distinct model name per misregistration value: {names} and {noise.tolist()}.")
    if not np.all(np.isfinite(noise) & (noise >= 0)):
        raise ValueError(f"misregistration must be finite standard deviations >= 0, not {noise.tolist()}.")
    for name, value, low in (("n_training", n_training, 2), ("n_synthetic", n_synthetic, 2), ("n_features", n_features, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, not {value!r}.")
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], not {decay!r}.")
    root = _entropy(seed)
    sd = decay ** np.arange(n_features)
    training = _rng(root, 0).normal(size=(n_training, n_features)) * sd
    synthetic = np.empty((noise.size, n_synthetic, n_features))
    for k, s in enumerate(noise):
        built = training + _rng(root, 1, k).normal(0.0, 1.0, training.shape) * s
        cov = np.atleast_2d(np.cov(built, rowvar=False))
        synthetic[k] = _rng(root, 2, k).multivariate_normal(built.mean(axis=0), cov, size=n_synthetic, method="eigh")
    return xr.Dataset(
        {"training": (("sample", "feature"), training, {"long_name": "training samples"}),
         "synthetic": (("model", "draw", "feature"), synthetic, {"long_name": "samples drawn from each model"}),
         },
        coords={"model": names, "sample": np.arange(n_training), "draw": np.arange(n_synthetic),
                "feature": np.arange(n_features),
                "misregistration": ("model", noise, {"long_name": "sd of the noise added before each model was fitted"})},
        attrs={"simulator": (f"bioxr.simulate.generative_models(n_training={n_training}, n_synthetic={n_synthetic}, "
                             f"n_features={n_features}, misregistration={noise.tolist()}, models={names}, "
                             f"decay={decay})")},
    )


__all__ += ["generative_models"]


def all_against_all(
    n_subjects: int = 30,
    n_samples: int = 4,
    *,
    mated_mean: float = 3.0,
    subject_sd: float = 0.7,
    n_sessions: int = 1,
    session_effect: float = 0.0,
    seed=0,
) -> xr.DataArray:
    """An all-against-all experiment: every one of ``G = N * S`` samples compared with every other.

    ``n_subjects`` (N) subjects give ``n_samples`` (S) samples each; the
    G x G similarity matrix compares each sample (row, as probe) with each
    (column, as reference), itself included, as a matcher run over a whole
    data set would. A comparison of two samples is N(0, 1) noise, the same
    for (i, j) and (j, i) (a symmetric matcher), plus, when both are of
    one subject, ``mated_mean + u_s`` with a subject effect ``u_s ~ N(0,
    subject_sd)`` shared by all of that subject's comparisons. Sample
    ``k`` of a subject was captured in session ``k mod n_sessions``; two
    samples of one subject from the same session score ``session_effect``
    higher (same light, same sensor state: the weakness of an
    all-against-all evaluation of data captured over several sessions).
    A sample against itself scores above every other comparison; the
    cube marks that cell as a self comparison (equal ``probe_id`` and
    ``reference_id``), which is never counted.

    Parameters
    ----------
    n_subjects, n_samples : int
        N (at least 2) and S (at least 2: a mated pair needs two samples).
    mated_mean, subject_sd : float, keyword-only
        As in :func:`gaussian`.
    n_sessions : int, keyword-only
        Capture sessions per subject, in [1, n_samples].
    session_effect : float, keyword-only
        Shift of the mated scores of two samples of the same session.
    seed : int, SeedSequence or Generator, keyword-only

    Returns
    -------
    xarray.DataArray
        The score cube of :func:`bioxr.gallery.all_against_all`: dims
        ``("probe", "reference")`` of size G each, ``subject``,
        ``probe_id``, ``sample`` and ``session`` on ``probe``,
        ``reference_subject``, ``reference_id``, ``reference_sample`` and
        ``reference_session`` on ``reference``; attrs ``simulator``.

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.all_against_all(n_subjects=5, n_samples=3, seed=1)
    >>> dict(cube.sizes)
    {'probe': 15, 'reference': 15}
    >>> r = bioxr.verification.error_rates(cube, 1.5)
    >>> int(r.n_mated), int(r.n_nonmated)   # |G|(S-1), |G|(N-1)S: the diagonal is left out
    (30, 180)
    >>> bool((bioxr.simulate.all_against_all(5, 3, seed=1) == cube).all())
    True
    """
    from .gallery import all_against_all as _matrix_cube

    for name, value in (("n_subjects", n_subjects), ("n_samples", n_samples)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"{name}={value!r}; give a whole number >= 2 (non-mated pairs need two subjects, "
                             "mated pairs two samples of a subject).")
    if isinstance(n_sessions, bool) or not isinstance(n_sessions, (int, np.integer)) or not 1 <= n_sessions <= n_samples:
        raise ValueError(f"n_sessions={n_sessions!r}; give a whole number from 1 to n_samples ({n_samples}).")
    if not (np.isfinite(subject_sd) and subject_sd >= 0):
        raise ValueError(f"subject_sd={subject_sd!r}; give a standard deviation >= 0.")
    root = _entropy(seed)
    g = n_subjects * n_samples
    subject = np.repeat(np.arange(n_subjects), n_samples)
    sample = np.tile(np.arange(n_samples), n_subjects)
    session = sample % n_sessions
    u = _rng(root, 0).normal(0.0, subject_sd, n_subjects)
    z = _rng(root, 1).standard_normal((g, g))
    scores = (z + z.T) / np.sqrt(2.0)  # symmetric noise, still N(0, 1) off the diagonal
    mated = subject[:, None] == subject[None, :]
    same_session = mated & (session[:, None] == session[None, :])
    scores += mated * (mated_mean + u[subject])[:, None] + same_session * float(session_effect)
    np.fill_diagonal(scores, np.nanmax(scores) + 1.0)  # a sample matches itself best; never counted
    names = np.array([f"s{i:04d}" for i in range(n_subjects)])
    ids = np.array([f"{names[s]}-{k}" for s, k in zip(subject, sample)])
    cube = _matrix_cube(scores, names[subject], sample_ids=ids)
    cube = cube.assign_coords(sample=("probe", sample), session=("probe", session),
                              reference_sample=("reference", sample), reference_session=("reference", session))
    cube.attrs["simulator"] = (f"bioxr.simulate.all_against_all(n_subjects={n_subjects}, n_samples={n_samples}, "
                               f"mated_mean={mated_mean}, subject_sd={subject_sd}, n_sessions={n_sessions}, "
                               f"session_effect={session_effect})")
    return cube


__all__ += ["all_against_all"]
