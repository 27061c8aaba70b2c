"""Named conventions: the rules of bioxr's peers, each computed exactly and by name.

Tools in use disagree on the EER, on the FNMR at an FMR target and on tied
ranks. bioxr offers each peer's rule under the peer's name: a keyword
``convention=`` (``"bioxr"``, the default, ``"bob"``, ``"pyeer"``,
``"sklearn"``) on the functions it applies to, recorded in the result's
``attrs["convention"]``. This module is the one table of them: one dict per
statistic, each entry with the rule, the peer function it reproduces and
the references; docstrings, the README and the error messages read from it.

Each peer rule was read from the peer's own code (bob.measure 6.1.1,
bob.bio.base 8.1.1, pyeer 0.5.6) and is checked against the peer run on
its own example files (``tests/test_conventions.py``, values in
``tests/data/peers/reference_values.json``).

Examples
--------
>>> from bioxr import conventions
>>> conventions.applies("eer")
('bioxr', 'bob', 'pyeer')
>>> conventions.EER["pyeer"]["method"]
'fvc2000'
>>> conventions.check("eer", "sklearn")
Traceback (most recent call last):
...
ValueError: convention='sklearn' does not apply to the EER; the conventions for it are 'bioxr', 'bob', 'pyeer'. scikit-learn has no EER function (its roc_curve and det_curve give the curve only; bioxr's curves equal them).
"""

from __future__ import annotations

import math

__all__ = ["CONVENTIONS", "EER", "FNMR_AT_FMR", "RANK_TIES", "TABLES", "applies", "check", "describe", "eer_rule"]

CONVENTIONS = ("bioxr", "bob", "pyeer", "sklearn")

_FVC2000 = (
    "Maio, Maltoni, Cappelli, Wayman & Jain, FVC2000: Fingerprint verification competition, "
    "IEEE Trans. PAMI 24(3):402-412, 2002 (section 4: the EER interval [EER_low, EER_high])"
)

EER = {
    "bioxr": {
        "method": "rocch",
        "methods": ("rocch", "interpolated", "nearest", "fvc2000"),
        "ties": "lenient",
        "rule": (
            "any of the four methods; default 'rocch' (ROC convex hull, BOSARIS). 'nearest' takes the more "
            "lenient of two thresholds equally near FMR = FNMR."
        ),
        "peer": "BOSARIS toolkit rocch2eer (method 'rocch')",
        "references": ("Brümmer & de Villiers, The BOSARIS toolkit (2011)", _FVC2000),
    },
    "bob": {
        "method": "nearest",
        "methods": ("nearest",),
        "ties": "strict",
        "rule": (
            "at the threshold minimising |FAR - FRR| over every distinct score, (FAR + FRR) / 2; of two "
            "thresholds equally near, the stricter (bob's running minimum keeps the last with '<='). "
            "'threshold' is bob's: the midpoint between that score and the next lower one."
        ),
        "peer": "bob.measure.eer (eer_threshold, _minimizing_threshold 'absolute-difference', then farfrr)",
        "references": ("bob.measure 6.1.1, bob/measure/_library.py and bob/measure/__init__.py",),
    },
    "pyeer": {
        "method": "fvc2000",
        "methods": ("fvc2000",),
        "ties": "lenient",
        "rule": (
            "FVC2000: t2 the first (most lenient) score with FNMR >= FMR, t1 the one before it (t1 = t2 when "
            "FNMR = FMR there); of the two, the one with the smaller FMR + FNMR (t1 when equal) gives "
            "EER = (FMR + FNMR) / 2 and the threshold."
        ),
        "peer": "pyeer.eer_info.get_eer_stats (eer_stats.get_eer_values)",
        "references": ("pyeer 0.5.6, pyeer/eer_stats.py", _FVC2000),
    },
    "sklearn": None,
}

FNMR_AT_FMR = {
    "bioxr": {
        "rule": (
            "the most lenient threshold, at any score, whose FMR does not exceed the target; FNMR there "
            "(ISO/IEC 19795-1 operating point, no interpolation)."
        ),
        "peer": None,
        "references": ("ISO/IEC 19795-1:2006 Annex F.1",),
    },
    "bob": {
        "rule": (
            "thresholds only at non-mated scores: the lowest non-mated score whose FMR (non-mated scores "
            ">= it) does not exceed the target, else just above the highest non-mated score (FMR 0); FNMR "
            "there. Never lower than bioxr's FNMR, which may place the threshold at a mated score."
        ),
        "peer": "bob.measure.far_threshold, then bob.measure.farfrr at that threshold",
        "references": ("bob.measure 6.1.1, bob/measure/_library.py (far_threshold, ported from the C++)",),
    },
    "pyeer": {
        "rule": (
            "the threshold, among the distinct scores, whose FMR is nearest the target (the most lenient "
            "of equally near ones), even when its FMR exceeds the target; FNMR there (pyeer's FMR100 is "
            "the target 0.01, FMR1000 0.001, ZeroFMR 0)."
        ),
        "peer": "pyeer.eer_info.get_eer_stats fmr100/fmr1000 (eer_stats.get_fmr_op)",
        "references": ("pyeer 0.5.6, pyeer/eer_stats.py",),
    },
    "sklearn": None,
}

RANK_TIES = {
    "bioxr": {
        "rule": (
            "ISO/IEC 19795-1 Annex F.2: a mate tied with other subjects has its rank spread uniformly over "
            "mated_rank_min .. mated_rank_max (fractional counts)."
        ),
        "peer": None,
        "references": ("ISO/IEC 19795-1:2006 Annex F.2",),
    },
    "bob": {
        "rule": (
            "pessimistic: every non-mated score >= the best mated score ranks ahead of it, so the rank is "
            "mated_rank_max (1 + the number of those scores)."
        ),
        "peer": "bob.measure.cmc, bob.measure.recognition_rate, bob.measure.detection_identification_rate",
        "references": ("bob.measure 6.1.1, bob/measure/__init__.py (index = numpy.sum(neg >= max_pos))",),
    },
    "pyeer": None,
    "sklearn": None,
}

_STATISTICS = {
    "eer": ("the EER", EER),
    "fnmr_at_fmr": ("the FNMR at an FMR target", FNMR_AT_FMR),
    "rank_ties": ("tied ranks (CMC, identification rate, open-set DIR)", RANK_TIES),
}

TABLES = {name: table for name, (_, table) in _STATISTICS.items()}

_WHY_NOT = {
    ("eer", "sklearn"): (
        "scikit-learn has no EER function (its roc_curve and det_curve give the curve only; bioxr's curves "
        "equal them)."
    ),
    ("fnmr_at_fmr", "sklearn"): "scikit-learn has no operating-point function (roc_curve gives the curve only).",
    ("rank_ties", "pyeer"): "pyeer's CMC takes ranks as given (it does not rank scores).",
    ("rank_ties", "sklearn"): (
        "scikit-learn's top_k_accuracy_score breaks ties by label order (the highest label index first), "
        "which depends on how the subjects are numbered; bioxr does not offer it."
    ),
}


def applies(statistic: str) -> tuple:
    """The conventions that apply to ``statistic`` ("eer", "fnmr_at_fmr", "rank_ties").

    Examples
    --------
    >>> applies("rank_ties")
    ('bioxr', 'bob')
    """
    return tuple(name for name, entry in _STATISTICS[statistic][1].items() if entry is not None)


def check(statistic: str, convention: str) -> dict:
    """The table entry of ``convention`` for ``statistic``, or a ValueError saying which apply.

    Examples
    --------
    >>> check("fnmr_at_fmr", "bob")["peer"]
    'bob.measure.far_threshold, then bob.measure.farfrr at that threshold'
    """
    label, table = _STATISTICS[statistic]
    names = applies(statistic)
    listed = ", ".join(repr(n) for n in names)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention={convention!r} is not known; choose one of {CONVENTIONS} ({listed} for {label}).")
    entry = table[convention]
    if entry is None:
        why = _WHY_NOT.get((statistic, convention), "")
        raise ValueError(
            f"convention={convention!r} does not apply to {label}; the conventions for it are {listed}."
            + (f" {why}" if why else "")
        )
    return entry


def describe(statistic: str, convention: str) -> str:
    """One line for ``attrs``: the convention, its rule and the peer function it reproduces.

    Examples
    --------
    >>> describe("rank_ties", "bob").startswith("bob: pessimistic")
    True
    """
    entry = check(statistic, convention)
    peer = f" Reproduces {entry['peer']}." if entry.get("peer") else ""
    return f"{convention}: {entry['rule']}{peer}"


def eer_rule(method, convention: str) -> tuple:
    """``(method, ties)`` of an EER request: the convention's own method when ``method`` is None.

    Raises a ValueError naming what applies for a convention without an EER
    or a method that is not the convention's rule.

    Examples
    --------
    >>> eer_rule(None, "bob"), eer_rule("nearest", "bioxr"), eer_rule(None, "bioxr")
    (('nearest', 'strict'), ('nearest', 'lenient'), ('rocch', 'lenient'))
    """
    entry = check("eer", convention)
    if method is None:
        method = entry["method"]
    if method not in EER["bioxr"]["methods"]:
        raise ValueError(f"method={method!r}; choose one of {EER['bioxr']['methods']} (or None: the convention's own).")
    if method not in entry["methods"]:
        raise ValueError(
            f"convention={convention!r} computes the EER by method {entry['methods'][0]!r} only ({entry['peer']}); "
            f"method={method!r} is not its rule. Leave method=None, or use convention='bioxr' for {method!r}."
        )
    return method, entry["ties"]


def bob_allowed(rate: float, n: int) -> int:
    """Most false matches bob.measure's ``far_threshold`` allows: the largest k with k / n <= rate in floating point.

    bob accepts a threshold while ``count / n > rate`` is false; at ``rate >= 1 - eps`` it accepts everything.

    Examples
    --------
    >>> bob_allowed(0.01, 520), bob_allowed(0.001, 520), bob_allowed(1.0, 520)
    (5, 0, 520)
    """
    if rate >= 1 - 2.220446049250313e-16:
        return n
    k = min(max(math.floor(rate * n), 0), n)
    while k < n and (k + 1) / n <= rate:
        k += 1
    while k > 0 and k / n > rate:
        k -= 1
    return k
