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
