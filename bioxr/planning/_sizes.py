"""How :func:`bioxr.planning.plan_test` sizes a test: each rate's design, the errors' distribution, the bound's
verdict at each count, and the search for the smallest size (analytic, by configurations, or simulated).

The method, the protocols and the measured power: the :mod:`bioxr.planning` docstring.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ..claims import _config_passes, _Tables
from ..simulate import _rng

_MAX_DOUBLINGS = 40
_FIRST_LOOK = 500  # simulated tests looked at before deciding whether a size is clearly above or below the power
_CLEAR = 3.5  # ... in standard errors
_BLOCK = 256  # units per block of the simulation's random stream



class _Design:
    """One rate's protocol, as functions of the number of subjects ``n`` (arrays), and its analytic bound.

    ``bound="binomial"``: exact Clopper-Pearson on all ``N`` comparisons;
    ``"effective"``: on ``N / deff`` with the planned ``icc`` (FNMR zero
    errors on the units).
    """

    def __init__(self, rate, *, k, m, icc, cross, bound, inflation=1.0):
        self.rate, self.k, self.m, self.icc, self.cross, self.bound_kind = rate, k, m, icc, cross, bound
        self.inflation = inflation  # of the design effect the bound applies
        self.n_min = 2 if rate == "fmr" else 1

    def units(self, n):
        return np.asarray(n, dtype=float) * self.k

    def comparisons(self, n):
        u = self.units(n)
        if self.rate == "fnmr":
            return u * self.m
        if self.cross == "all":
            return u * (u - self.k) * self.m
        return u * (u - self.k) / 2

    def design_effect(self, n):
        u = self.units(n)
        if self.rate == "fnmr":
            d = 1 + (self.m - 1) * self.icc + 0 * u
        elif self.cross == "all":
            d = 1 + self.icc * (4 * self.m * (u - self.k) - 2)
        else:
            d = 1 + 2 * (u - self.k - 1) * self.icc
        return np.minimum(np.maximum(d, 1.0), self.comparisons(n))  # at least one effective comparison

    def bound_effect(self, n):
        """The design effect the bound applies (1 for the binomial bound)."""
        if self.bound_kind != "effective":
            return np.ones_like(self.units(n))
        return np.minimum(self.design_effect(n) * self.inflation, self.comparisons(n))

    def bound(self, n, errors, level):
        """The one-sided upper bound at ``errors`` (>= 1) errors."""
        d = self.bound_effect(n)
        big_n = self.comparisons(n) / d
        x = np.asarray(errors, dtype=float) / d
        with np.errstate(invalid="ignore"):
            out = stats.beta.ppf(level, x + 1, np.maximum(big_n - x, 1e-300))
        return np.where(x >= big_n, 1.0, out)

    def zero_bound(self, n, level):
        if self.bound_kind == "effective" and self.rate == "fnmr":
            units = self.units(n)  # any correlation: on the units
        else:
            units = self.comparisons(n) / self.bound_effect(n)
        return -np.expm1(np.log1p(-level) / units)

    # -- the distribution of the errors at a true rate
    def cdf(self, n: int, errors, rate: float):
        """P(K <= errors) at ``n`` subjects and true rate ``rate`` (``errors`` an int array)."""
        e = np.asarray(errors, dtype=float)
        big_n = float(self.comparisons(n))
        if self.icc == 0:
            return stats.binom.cdf(e, big_n, rate)
        if self.rate == "fnmr":
            return _beta_binomial_sum_cdf(int(self.units(n)), self.m, rate, self.icc)[
                np.clip(e, 0, int(big_n)).astype(int)]
        d = float(self.design_effect(n))
        return _continuous_binom_cdf(e / d, big_n / d, rate)


def _continuous_binom_cdf(x, n, p):
    """``P(Bin(n, p) <= x)`` extended to real ``x`` and ``n``: ``I_{1-p}(n - x, x + 1)``."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        out = special.betainc(np.maximum(n - x, 1e-300), x + 1, 1 - p)
    return np.where(x >= n, 1.0, np.where(x < 0, 0.0, out))


def _unit_pmf(m: int, rate: float, icc: float) -> np.ndarray:
    """P(e errors in a unit's m attempts), e = 0..m: beta-binomial with mean ``rate`` and ICC ``icc``."""
    e = np.arange(m + 1)
    if icc == 0:
        return stats.binom.pmf(e, m, rate)
    return stats.betabinom.pmf(e, m, rate * (1 - icc) / icc, (1 - rate) * (1 - icc) / icc)


def _beta_binomial_sum_cdf(units: int, m: int, rate: float, icc: float) -> np.ndarray:
    """CDF of the errors of ``units`` independent units, each BetaBinomial(m) with mean ``rate`` and ICC ``icc``."""
    one = _unit_pmf(m, rate, icc)
    size = units * m + 1
    length = int(2 ** np.ceil(np.log2(size)))
    spectrum = np.fft.rfft(one, length) ** units
    pmf = np.clip(np.fft.irfft(spectrum, length)[:size], 0.0, None)
    return np.minimum(np.cumsum(pmf) / pmf.sum(), 1.0)


# ------------------------------------------------------------------ configurations and simulated claim tests
# A configuration of a balanced test is its histogram: how many units (all with m attempts) show 0, 1, ..., m
# errors. claim_test's design-aware FNMR bounds depend on the data only through it (bioxr.claims._config_passes).
def _singles(k: int, m: int, claim: float, level: float, method: str, tables: _Tables):
    """Whether ``j`` errors, each on its own unit, pass at ``n`` subjects (arrays ``n``, ``j``)."""

    def ok(n, j):
        n, j = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(j, dtype=float))
        hist = np.zeros(n.shape + (m + 1,))
        hist[..., 0], hist[..., 1] = np.maximum(n * k - j, 0), j
        return (n * k >= j).ravel() & _config_passes(hist.reshape(-1, m + 1), m, claim, level, method, tables)

    return ok


def _configurations(errors: int, m: int) -> np.ndarray:
    """Every way ``errors`` errors fall on units of ``m`` attempts: rows (h_1, ..., h_m), units with e errors."""
    rows = []

    def fill(left, e, row):
        if e == 0:
            if left == 0:
                rows.append(row.copy())
            return
        for h in range(left // e, -1, -1):
            row[e - 1] = h
            fill(left - h * e, e - 1, row)
        row[e - 1] = 0

    fill(errors, m, [0] * m)
    return np.array(rows, dtype=float).reshape(-1, m)


def _with_zeros(rows, units) -> np.ndarray:
    """Configurations (h_0, h_1, ..., h_m) of ``units`` units with the error rows (h_1, ..., h_m) given."""
    return np.column_stack([units - rows.sum(1), rows])


class _Draws:
    """Per-unit error counts of ``n_sim`` simulated tests, unit by unit: a test of ``u`` units is the first ``u``.

    Common random numbers: every size is read off the same streams (block
    ``b`` of :data:`_BLOCK` units from stream ``b`` of the seed), so sizes
    differ only by their extra units.
    """

    def __init__(self, pmf, n_sim: int, root):
        self.cdf = np.cumsum(pmf)
        self.m, self.n_sim, self.root = pmf.size - 1, n_sim, root
        self.codes: list[np.ndarray] = []
        self.cum = [np.zeros((n_sim, self.m + 1), dtype=np.int64)]

    def _count(self, codes):
        rows = codes.shape[0]
        flat = (codes.astype(np.int64) + (self.m + 1) * np.arange(rows)[:, None]).ravel()
        return np.bincount(flat, minlength=rows * (self.m + 1)).reshape(rows, self.m + 1)

    def hist(self, units: int, rows: slice) -> np.ndarray:
        units = int(units)
        if units > 2e8 / self.n_sim:
            raise ValueError(f"the simulation would hold {units:,} units x {self.n_sim:,} tests; plan this size "
                             "analytically (n_simulations=0) or with fewer simulations.")
        while len(self.codes) * _BLOCK < units:
            u = _rng(self.root, len(self.codes)).random((self.n_sim, _BLOCK))
            codes = np.minimum(np.searchsorted(self.cdf, u, side="right"), self.m).astype(np.uint8)
            self.codes.append(codes)
            self.cum.append(self.cum[-1] + self._count(codes))
        full, rest = divmod(units, _BLOCK)
        out = self.cum[full][rows].copy()
        if rest:
            out += self._count(self.codes[full][rows, :rest])
        return out


class _Simulated:
    """claim_test's FNMR bound on the simulated tests of one claim, at any number of subjects."""

    def __init__(self, draws: _Draws, k: int, claim: float, level: float, method: str, power: float,
                 tables: _Tables):
        self.draws, self.k, self.claim, self.level, self.method, self.power = draws, k, claim, level, method, power
        self.tables = tables
        self.done: dict[int, np.ndarray] = {}

    def passes(self, n: int, size: int) -> np.ndarray:
        have = self.done.get(n, np.zeros(0, dtype=bool))
        if have.size < size:
            hist = self.draws.hist(n * self.k, slice(have.size, size))
            uniq, inverse = np.unique(hist, axis=0, return_inverse=True)
            new = _config_passes(uniq, self.draws.m, self.claim, self.level, self.method, self.tables)[inverse.ravel()]
            have = self.done[n] = np.concatenate([have, new])
        return have[:size]

    def reaches(self, n: int) -> bool:
        """Whether the simulated pass probability at ``n`` reaches the power (clear cases from the first tests)."""
        total = self.draws.n_sim
        first = min(_FIRST_LOOK, total)
        p = self.passes(n, first).mean()
        if first < total and abs(p - self.power) > _CLEAR * np.sqrt(max(p * (1 - p), 1 / first) / first):
            return bool(p >= self.power)
        return bool(self.passes(n, total).mean() >= self.power)


def _first_true(ok, start) -> np.ndarray:
    """Smallest ``n >= 1`` with ``ok(n, idx)`` (false then true in ``n``), for each element, searching from ``start``.

    ``ok(n, idx)`` answers for the elements ``idx`` at sizes ``n`` (arrays).
    """
    start = np.maximum(np.atleast_1d(np.asarray(start, dtype=np.int64)), 1)
    res = ok(start, np.arange(start.size))
    hi = np.where(res, start, -1)  # a size that passes (-1: none known yet)
    lo = np.where(res, -1, start)  # a size that does not (-1: none known yet; 0 never passes)
    for _ in range(_MAX_DOUBLINGS):
        idx = np.flatnonzero((hi < 0) | (lo < 0))
        if not idx.size:
            break
        probe = np.where(hi[idx] < 0, lo[idx] * 2, hi[idx] // 2)
        r = np.zeros(idx.size, dtype=bool)
        pos = probe >= 1
        if pos.any():
            r[pos] = ok(probe[pos], idx[pos])
        hi[idx] = np.where(r, probe, hi[idx])
        lo[idx] = np.where(r, lo[idx], probe)
    else:
        raise ValueError("no test size up to 2^40 subjects supports this claim; check the inputs.")
    while True:
        idx = np.flatnonzero(hi - lo > 1)
        if not idx.size:
            return hi
        mid = (lo[idx] + hi[idx]) // 2
        r = ok(mid, idx)
        hi[idx] = np.where(r, mid, hi[idx])
        lo[idx] = np.where(r, lo[idx], mid)


# ------------------------------------------------------------------ the analytic plans
def _first_n(ok, n_min: int) -> int:
    """Smallest ``n >= n_min`` with ``ok(n)`` (monotone: false then true)."""
    return int(_first_true(lambda n, idx: np.array([bool(v >= n_min and ok(int(v))) for v in n]), [n_min])[0])


def _allowed(design: _Design, n: int, claim: float, level: float) -> int:
    """The most errors (>= 1) whose bound is still at most the claim at ``n`` subjects (0 if none)."""
    big_n = int(design.comparisons(n))
    if big_n < 1 or design.bound(n, 1, level) > claim:
        return 0
    lo, hi = 1, big_n  # bound(lo) <= claim
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if design.bound(n, mid, level) <= claim:
            lo = mid
        else:
            hi = mid
    return lo if design.bound(n, hi, level) > claim else hi


def _pass_probability(design: _Design, n: int, claim: float, level: float, rate: float) -> tuple[float, int, bool]:
    """P(the claim passes) at ``n`` subjects when the true rate is ``rate``; the errors allowed; zero passes."""
    k1 = _allowed(design, n, claim, level)
    zero_ok = bool(design.zero_bound(n, level) <= claim)
    cdf = design.cdf(n, np.array([0, k1]), rate)
    p = (cdf[1] - cdf[0]) + (cdf[0] if zero_ok else 0.0)
    return float(p), k1, zero_ok


def _analytic_size(design: _Design, claim: float, level: float, expected, power: float, max_errors: int) -> int:
    zero_n = _first_n(lambda n: design.zero_bound(n, level) <= claim, design.n_min)
    if expected is None:
        if max_errors > 0:
            return max(zero_n, _first_n(lambda n: design.bound(n, max_errors, level) <= claim, design.n_min))
        return zero_n
    n = design.n_min
    for _ in range(_MAX_DOUBLINGS):
        if _pass_probability(design, n, claim, level, expected)[0] >= power:
            break
        n *= 2
    else:
        raise ValueError("no test size up to 2^40 subjects reaches the power; check the inputs.")
    # the pass probability falls between the sizes where one more error is allowed: only those can be first
    js = np.arange(1, _allowed(design, n, claim, level) + 1)
    jumps = _first_true(lambda s, idx: (s >= design.n_min) & (design.bound(s, js[idx], level) <= claim),
                        np.full(js.size, n)) if js.size else []
    for s in sorted({int(v) for v in jumps} | {zero_n, n}):
        if s <= n and _pass_probability(design, s, claim, level, expected)[0] >= power:
            return s
    return n


def _analytic_cell(design: _Design, claim: float, level: float, expected, power: float, max_errors: int) -> dict:
    n = _analytic_size(design, claim, level, expected, power, max_errors)
    p, k1, zero_ok = _pass_probability(design, n, claim, level, expected if expected is not None else claim / 2)
    return _cell(design, n, allowed=k1 if (zero_ok or k1 > 0) else -1, zero_ok=zero_ok,
                 zero=float(design.zero_bound(n, level)), effective=float(design.comparisons(n) / design.bound_effect(n)),
                 p=p if expected is not None else np.nan, se=np.nan,
                 rate_for_power=_bisect_rate(lambda r: _pass_probability(design, n, claim, level, r)[0], claim, power))


def _cell(design, n, *, allowed, zero_ok, zero, effective, p, se, rate_for_power) -> dict:
    return {"subjects": int(n), "units": float(design.units(n)), "comparisons": float(design.comparisons(n)),
            "design_effect": float(design.design_effect(n)), "effective_comparisons": effective,
            "allowed_errors": int(allowed), "zero_errors_pass": bool(zero_ok), "zero_error_bound": zero,
            "pass_probability": p, "pass_probability_se": se, "rate_for_power": rate_for_power}


def _bisect_rate(prob, claim: float, power: float, lo: float = 0.0) -> float:
    """The true rate at which ``prob`` (falling with the rate) equals ``power``, in (lo, claim); NaN if not there."""
    if prob(max(lo, 1e-12)) < power:
        return np.nan
    hi = claim
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if prob(mid) >= power else (lo, mid)
    return lo


# ------------------------------------------------------------------ the simulated plans (FNMR, config-dependent bounds)
def _simulated_cell(design: _Design, sim: _Simulated, claim: float, level: float, expected: float,
                    power: float) -> dict:
    """The smallest size whose simulated tests pass with probability ``power`` under claim_test's bound.

    The pass probability rises where one more error is allowed and falls in
    between (a saw-tooth); the candidates are the sizes where zero errors,
    and ``j`` errors each on its own unit, first pass. The search walks over
    them (galloping, then bisecting) from the effective-count plan, then
    bisects between the first candidate that reaches the power and the one
    before.
    """
    k, m = design.k, design.m
    zero_n = _first_n(lambda n: design.zero_bound(n, level) <= claim, 1)
    start = _analytic_size(design, claim, level, expected, power, 0)  # a first guess

    singles = _singles(k, m, claim, level, sim.method, sim.tables)
    teeth: dict[int, int] = {}  # tooth j starts where j errors on j units first pass

    def candidates(top):
        js = np.array([j for j in range(1, top + 1) if j not in teeth])
        if js.size:
            guess = np.full(js.size, start)
            teeth.update(zip(js.tolist(), _first_true(lambda n, idx: singles(n, js[idx]), guess).tolist()))
        return sorted({zero_n, *(teeth[j] for j in range(1, top + 1))})

    top = _allowed_singles(singles, start, k) + 4
    sizes = candidates(top)
    # the first candidate that reaches the power (tooth peaks rise with the size): gallop from the first guess,
    # then bisect; below the first candidate nothing passes
    i = max(int(np.searchsorted(sizes, start, side="right")) - 1, 0)
    step = 1
    if sim.reaches(sizes[i]):
        good, bad = i, -1
        while good > 0:
            j = max(good - step, 0)
            if not sim.reaches(sizes[j]):
                bad = j
                break
            good, step = j, step * 2
    else:
        bad = i
        while True:
            j = bad + step
            while j >= len(sizes) - 1:
                top = 2 * top
                if top > 4 * (start * k * m + 10):
                    raise ValueError("no simulated test size reaches the power; check the inputs.")
                sizes = candidates(top)
            if sim.reaches(sizes[j]):
                good = j
                break
            bad, step = j, step * 2
    while good - bad > 1:
        j = (good + bad) // 2
        good, bad = (j, bad) if sim.reaches(sizes[j]) else (good, j)
    i = good
    # between the tooth before (which does not reach the power) and this one: bisect, as clustered errors blur
    # the teeth into a slope; where they are sharp the sizes in between fall short and the tooth start stays
    lo, n = sizes[i - 1] if i > 0 else 0, sizes[i]
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if sim.reaches(mid) else (mid, n)
    passed = sim.passes(n, sim.draws.n_sim)
    p = float(passed.mean())
    return _cell(design, n, allowed=max(_allowed_singles(singles, n, k), 0 if n >= zero_n else -1),
                 zero_ok=n >= zero_n, zero=float(design.zero_bound(n, level)),
                 effective=float(design.comparisons(n) / design.design_effect(n)), p=p,
                 se=float(np.sqrt(p * (1 - p) / passed.size)),
                 rate_for_power=_simulated_rate_for_power(sim, n, passed, expected, design.icc, claim, power))


def _allowed_singles(ok, n: int, k: int) -> int:
    """The most errors, each on its own unit, that pass at ``n`` subjects (0 if one does not)."""
    one = np.array([n])
    if not ok(one, np.array([1]))[0]:
        return 0
    lo, hi = 1, 2
    while hi <= n * k and ok(one, np.array([hi]))[0]:
        lo, hi = hi, hi * 2
    hi = min(hi, n * k + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(one, np.array([mid]))[0] else (lo, mid)
    return lo


def _simulated_rate_for_power(sim: _Simulated, n: int, passed, expected: float, icc: float, claim: float,
                              power: float) -> float:
    """Importance-reweighted simulated tests: the true rate at which the planned size passes with ``power``."""
    m = sim.draws.m
    hist = sim.draws.hist(n * sim.k, slice(0, passed.size)).astype(float)
    base = np.log(np.maximum(_unit_pmf(m, expected, icc), 1e-300))

    def weights(rate):
        lw = hist @ (np.log(np.maximum(_unit_pmf(m, rate, icc), 1e-300)) - base)
        return np.exp(lw - lw.max())

    rate = _bisect_rate(lambda r: float((weights(r) * passed).sum() / weights(r).sum()), claim, power, lo=expected)
    if np.isnan(rate):
        return rate
    w = weights(rate)
    return rate if w.sum() ** 2 / (w * w).sum() >= 0.1 * passed.size else np.nan  # too far from the simulated rate


def _configuration_cell(design: _Design, claim: float, level: float, power: float, max_errors: int,
                        method: str, tables: _Tables) -> dict:
    """Rule-of-three plan under a config-dependent bound: every configuration of at most ``max_errors`` passes."""
    k, m = design.k, design.m
    zero_n = _first_n(lambda n: design.zero_bound(n, level) <= claim, 1)
    n = zero_n
    if max_errors > 0:
        rows = np.vstack([_configurations(e, m) for e in range(1, max_errors + 1)])

        def all_pass(sizes, idx):
            out = []
            for s in sizes:
                fits = rows.sum(1) <= s * k
                out.append(bool(_config_passes(_with_zeros(rows[fits], s * k), m, claim, level, method, tables).all()))
            return np.array(out)

        n = max(n, int(_first_true(all_pass, np.array([zero_n]))[0]))
    # the pass probability at a true rate: the chances of the configurations that pass (their number is small)
    u = n * k
    passing = [np.zeros((1, m))]  # zero errors pass from zero_n on
    for e in range(1, u * m + 1):
        rows = _configurations(e, m)
        rows = rows[rows.sum(1) <= u]
        ok = _config_passes(_with_zeros(rows, u), m, claim, level, method, tables)
        if not ok.any() and e > max_errors:
            break
        passing.append(rows[ok])
        if sum(len(r) for r in passing) > 50_000:
            passing = None
            break

    def prob(rate):
        rows = np.vstack(passing)
        hist = _with_zeros(rows, u)
        logp = np.log(np.maximum(_unit_pmf(m, rate, design.icc), 1e-300))
        log_terms = special.gammaln(u + 1) - special.gammaln(hist + 1).sum(1) + hist @ logp
        return float(np.exp(log_terms).sum())

    allowed = _allowed_singles(_singles(k, m, claim, level, method, tables), n, k)
    return _cell(design, n, allowed=max(allowed, 0), zero_ok=True, zero=float(design.zero_bound(n, level)),
                 effective=float(design.comparisons(n) / design.design_effect(n)), p=np.nan, se=np.nan,
                 rate_for_power=_bisect_rate(prob, claim, power) if passing else np.nan)
