"""Shared checks: levels, replicates, targets, failure policies, the Annex F tie share, score orientation."""

from __future__ import annotations

import warnings

import numpy as np

from .errors import FewReplicatesWarning, ScoreKindWarning

FAILURE_POLICIES = ("exclude", "nist", "iso")
FAILURE_RULES = {
    "exclude": "failed enrolments and acquisitions are left out of every rate (counted in attrs)",
    "nist": ("a mated comparison with a failed enrolment or acquisition is a false non-match at every threshold; "
             "a non-mated one is a correct non-match (FMR unaffected in its numerator)"),
    "iso": ("ISO/IEC 19795-1 generalized rates: GFRR = FTE + (1-FTE) FTA + (1-FTE)(1-FTA) FNMR, "
            "GFAR = (1-FTE)(1-FTA) FMR, with FNMR and FMR over the comparisons that were made"),
}



# ------------------------------------------------------------------ checks
def check_level(level) -> float:
    """A confidence level strictly between 0 and 1."""
    try:
        value = float(level)
    except (TypeError, ValueError):
        raise ValueError(f"level={level!r}; give a confidence level between 0 and 1, e.g. 0.95.") from None
    if not 0 < value < 1:
        raise ValueError(f"level={level!r}; a confidence level lies strictly between 0 and 1, e.g. 0.95.")
    return value


def check_replicates(n_replicates, *, minimum: int = 2, level=None) -> int:
    """A whole number of bootstrap replicates, at least ``minimum``.

    With ``level`` given (an interval is asked for), fewer than 1,000
    replicates for a 95% interval (``50 / (1 - level)`` in general: 25 beyond
    each bound) give a
    :class:`FewReplicatesWarning`: the tails of the replicate distribution
    are then read off a handful of values.
    """
    try:
        whole = not isinstance(n_replicates, bool) and float(n_replicates).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole or int(n_replicates) < minimum:
        raise ValueError(f"n_replicates={n_replicates!r}; give a whole number of replicates, at least {minimum} "
                         "(1,000 or more for 95% intervals).")
    n = int(n_replicates)
    if level is not None:
        wanted = int(np.ceil(50 / (1 - check_level(level)) - 1e-9))
        if n < wanted:
            warnings.warn(f"n_replicates={n} is few for a {float(level):.0%} interval: use at least {wanted:,} "
                          "(the bounds are read off the tails of the replicates).", FewReplicatesWarning, stacklevel=3)
    return n


def check_rank(rank, name: str = "rank") -> int:
    """A rank: a whole number, at least 1."""
    try:
        whole = not isinstance(rank, bool) and float(rank).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole or int(rank) < 1:
        raise ValueError(f"{name}={rank!r}; ranks are whole numbers starting at 1 (rank 1: the mate is the top "
                         "candidate).")
    return int(rank)


def check_targets(values, name: str, *, closed: bool = True) -> np.ndarray:
    """Rate targets as a 1-D float array in [0, 1] (or (0, 1) with ``closed=False``)."""
    a = np.atleast_1d(np.asarray(values, dtype=float))
    bad = a.ndim != 1 or a.size == 0 or np.isnan(a).any()
    bad = bad or ((a < 0).any() or (a > 1).any() if closed else (a <= 0).any() or (a >= 1).any())
    if bad:
        span = "[0, 1]" if closed else "(0, 1)"
        raise ValueError(f"{name} targets must be numbers in {span}; got {values!r}.")
    return a


def check_policy(policy) -> str:
    if policy not in FAILURE_POLICIES:
        raise ValueError(f"failure_policy={policy!r}; choose one of {FAILURE_POLICIES}: 'exclude' leaves failures "
                         "out, 'nist' counts a failed template as a false non-match, 'iso' gives the generalized "
                         "rates GFAR and GFRR.")
    return policy


def tie_share(rank_min, rank_max, r) -> np.ndarray:
    """P(rank <= r) for a rank spread uniformly over ``rank_min .. rank_max`` (Annex F.2).

    Examples
    --------
    >>> tie_share(np.array([1.0, 2.0]), np.array([2.0, 5.0]), 2).tolist()
    [1.0, 0.25]
    """
    rank_min = np.asarray(rank_min, dtype=float)
    width = np.asarray(rank_max, dtype=float) - rank_min + 1
    return np.clip((np.asarray(r, dtype=float) - rank_min + 1) / width, 0.0, 1.0)


def orientation_message(mated: np.ndarray, others: np.ndarray, kind: str) -> str | None:
    """A warning sentence when mated scores sit below the others for the declared kind.

    ``mated`` and ``others`` are similarity-oriented (distances negated).
    """
    if mated.size < 5 or others.size < 5:
        return None
    if others.size > 400_000:  # a strided sample says as much, at a fraction of a full sort
        others = others[:: others.size // 400_000]
    if np.any(others[1:] < others[:-1]):
        others = np.sort(others)
    # the share of (mated, other) pairs in the right order (an AUC), against chance with a margin of 3 SE
    auc = float(np.mean((np.searchsorted(others, mated, side="left") + np.searchsorted(others, mated, side="right"))
                        / (2 * others.size)))
    if np.median(mated) < others[others.size // 2] and auc < 0.5 - 3 / np.sqrt(12 * mated.size):
        other = "distance" if kind == "similarity" else "similarity"
        return (f"the mated scores sit below the non-mated ones for score_kind={kind!r} (median mated "
                f"{_fmt(mated, kind)} against {_fmt(others, kind)}): the scores are probably {other} scores. "
                f"Declare score_kind={other!r}, or the error rates, the EER and every curve are wrong.")
    return None


def _fmt(a, kind) -> str:
    v = float(np.median(a))
    return f"{-v if kind == 'distance' else v:.4g}"


def warn_if_reversed(mated, others, kind) -> None:
    message = orientation_message(mated, others, kind)
    if message:
        warnings.warn(message, ScoreKindWarning, stacklevel=3)


