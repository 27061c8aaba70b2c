"""The coverage registry: every interval function of bioxr, the cells it claims to cover, and their true values.

In the style of scikit-learn's common tests (issue 9, "Tests that must
exist"). A *cell* is a data generator whose true value is known exactly;
an *entry* registers one public interval function (through a call that
returns ``(lower, upper)`` per experiment) on one cell and one quantity.
``tests/test_coverage.py`` runs each entry with a few hundred seeded
experiments and a binomial test on the hit count; ``benchmarks/coverage_study.py``
runs the same entries with 2,000 experiments (fewer where a bootstrap is
expensive) and writes ``benchmarks/COVERAGE.md``.

The generators are written from the papers' definitions, not from
``bioxr.simulate`` (the project's own simulators must not check
themselves):

- **Decisions** (Schuckers 2010; METHODS.md sections 4-5). Individual
  ``i`` has a propensity ``p_i`` and ``m_i`` independent attempts given it,
  ``e_i ~ Binomial(m_i, p_i)``. Beta-binomial: ``p_i ~ Beta(a, b)``, ``a =
  pi (1 - rho) / rho``, ``b = (1 - pi)(1 - rho) / rho``, so ``E p_i = pi`` and
  the intra-class correlation of two attempts is ``rho``. Logit-normal:
  ``logit p_i ~ N(mu, s^2)`` with ``mu`` and ``s`` solved so that the same two
  moments hold (same ``pi`` and ``rho``, another shape). Attempts are
  balanced (5 each) or unbalanced (the cycle ``1, 2, 2, 3, 3, 4, 5, 8, 12,
  20``: mean 6, ``m0 = sum m^2 / N = 11.3``). The truth is ``pi``.
- **Scores** (two-way crossed random effects; METHODS.md section 12; Owen
  2007). A mated score of subject ``i`` is ``mu + u_i + e``; a non-mated
  score of probe subject ``a`` against reference subject ``c`` is ``v_a +
  w_c + e``, with ``u ~ N(0, mated_sd)``, wolves ``v ~ N(0, wolf_sd)``, lambs
  ``w ~ N(0, lamb_sd)`` and ``e ~ N(0, 1)``, all independent. Marginally a
  non-mated score is ``N(0, sigma_N)``, ``sigma_N^2 = wolf_sd^2 + lamb_sd^2 +
  1``, and a mated one ``N(mu, sigma_M)``, ``sigma_M^2 = mated_sd^2 + 1``, so
  the true FMR, FNMR, the threshold at an FMR target, the FNMR there and the
  EER are closed forms. Layout ``all-against-all``: ``n`` subjects with ``k``
  samples each, every sample compared with every other (self comparisons
  marked by ids); ``gallery``: one reference per enrolled subject, ``k``
  probes per subject, and probes of subjects who are not enrolled (for
  open-set FPIR). Identification truths integrate over the subject effects:
  for one probe, given ``D = S_mated - v_a``, the ``N - 1`` non-mated scores
  minus ``v_a`` are i.i.d. ``N(0, sqrt(lamb_sd^2 + 1))``, so ``CMC(r) =
  E[BinomCDF(r - 1; N - 1, Q(D))]`` with ``Q`` the normal tail; DIR and
  FPIR likewise (one and two dimensional integrals).

Thresholds of the verification cells: where the true FMR is 1e-2 and
1e-3 (FMR there, and FNMR at the same thresholds), and two zero-error
thresholds where about 2 false matches, or 2 false non-matches, are
expected in an experiment (zero errors then happen often). A cell is
``discrete`` when fewer than 5 errors are expected (in the effective
sample ``pi N / (1 + (m0 - 1) rho)`` for decisions): every valid interval
over-covers there by discreteness, so only the lower side is tested.
Binomial intervals (``binomial_interval``, ``rates_interval``,
``failure_rates``) are registered only where they claim to hold:
independent trials.

The calls go through the public API only (``bioxr.bootstrap.eer_interval``
and so on, with their defaults but for what a cell needs), so the registry
keeps working while the implementations change.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import xarray as xr
from scipy import optimize, special, stats

import bioxr

LEVEL = 0.95  #: nominal level of every interval studied
ALPHA = 0.001  #: size of the binomial test on the hit count
BLOCK = 100  #: decision experiments simulated together (one seed per block)
SUB_BLOCK = 100  #: decision experiments sharing one set of bootstrap draws (see call_bootstrap_rate)
UNBALANCED = np.array([1, 2, 2, 3, 3, 4, 5, 8, 12, 20])
BALANCED_M = 5
ZERO_EXPECTED = 2.0  #: expected errors at the zero-error thresholds
#: a cell is *discrete* when its expected (effective) error count is at most this: the default binomial interval
#: (modified Wilson, bioxr.intervals.MODIFIED_WILSON_COUNT) takes the Clopper-Pearson bound on a side with at
#: most 10 errors, conservative by design there, so only under-coverage is a failure (the lower side of the test)
DISCRETE_AT_MOST = 10.0
#: why the beta-binomial design over-covers where attempts are independent (its docstring says so)
BB_AT_RHO_ZERO = ("rho = 0 is the edge of the prior's support: integrating over rho can only widen the interval "
                  "there (0.97-0.98 measured)")
WARNED = "_warned"  #: key of a call's result: per experiment, whether the function's DesignWarning fires
#: an entry that fails its coverage test passes if the function warns (as its docs say) in this share of experiments
WARNED_ENOUGH = 0.5


def _hash(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode()) & 0x7FFFFFFF


# --------------------------------------------------------------------------
# decision cells
# --------------------------------------------------------------------------


_Z = np.linspace(-10.0, 10.0, 8_001)
_PHI = stats.norm.pdf(_Z) * (_Z[1] - _Z[0])  # quadrature weights of N(0, 1) on a fine grid


@lru_cache(maxsize=None)
def logit_normal_parameters(pi: float, rho: float) -> tuple[float, float]:
    """``(mu, s)`` with ``E expit(mu + s Z) = pi`` and ``Var expit(mu + s Z) = rho pi (1 - pi)``."""

    def moments(mu, s):
        p = special.expit(mu + s * _Z)
        return float(p @ _PHI), float((p * p) @ _PHI)

    def mu_for(s):
        reach = 40 + 12 * s
        return optimize.brentq(lambda mu: moments(mu, s)[0] - pi, -reach, reach, xtol=1e-12)

    def icc_gap(s):
        m1, m2 = moments(mu_for(s), s)
        return (m2 - m1**2) / (pi * (1 - pi)) - rho

    s = optimize.brentq(icc_gap, 0.05, 20, xtol=1e-9)
    return mu_for(s), s


@dataclass(frozen=True)
class Batch:
    """Decision experiments: ``errors`` (experiment, individual), ``attempts`` (individual)."""

    errors: xr.DataArray
    attempts: xr.DataArray

    @property
    def size(self) -> int:
        return self.errors.sizes["experiment"]


@dataclass(frozen=True)
class DecisionCell:
    n: int
    pi: float
    rho: float
    layout: str  # "balanced" or "unbalanced"
    propensity: str = "beta"  # or "logit-normal"
    kind = "decisions"

    @property
    def id(self) -> str:
        tag = "bb" if self.propensity == "beta" else "ln"
        return f"{tag}-{self.layout[:3]}-n{self.n}-pi{self.pi:g}-rho{self.rho:g}"

    @property
    def attempts(self) -> np.ndarray:
        return np.full(self.n, BALANCED_M) if self.layout == "balanced" else np.resize(UNBALANCED, self.n)

    @property
    def m0(self) -> float:
        m = self.attempts
        return float((m**2).sum() / m.sum())

    @property
    def expected_errors(self) -> float:
        """Expected errors in the effective sample, ``pi N / (1 + (m0 - 1) rho)``."""
        return self.pi * self.attempts.sum() / (1 + (self.m0 - 1) * self.rho)

    def describe(self) -> str:
        shape = "Beta" if self.propensity == "beta" else "logit-normal"
        return (f"{shape} propensities, {self.n} individuals, {self.layout} attempts (N = {self.attempts.sum()}, "
                f"m0 = {self.m0:.2f}), pi = {self.pi:g}, rho = {self.rho:g}")

    def simulate(self, rng: np.random.Generator, size: int) -> Batch:
        m = self.attempts
        shape = (size, self.n)
        if self.rho == 0:
            p = np.full(shape, self.pi)
        elif self.propensity == "beta":
            a = self.pi * (1 - self.rho) / self.rho
            b = (1 - self.pi) * (1 - self.rho) / self.rho
            p = rng.beta(a, b, shape)
        else:
            mu, s = logit_normal_parameters(self.pi, self.rho)
            p = special.expit(mu + s * rng.standard_normal(shape))
        errors = rng.binomial(np.broadcast_to(m, shape), p)
        return Batch(xr.DataArray(errors, dims=("experiment", "individual")), xr.DataArray(m, dims="individual"))


def decision_cells() -> list[DecisionCell]:
    cells = [
        DecisionCell(n, pi, rho, layout)
        for layout in ("balanced", "unbalanced")
        for n in (60, 200)
        for pi in (0.1, 0.05, 0.01, 0.001)
        for rho in (0.0, 0.3, 0.6)
    ]
    cells += [DecisionCell(200, pi, rho, "unbalanced", "logit-normal") for pi in (0.05, 0.01, 0.001) for rho in (0.3, 0.6)]
    return cells


# --------------------------------------------------------------------------
# score cells
# --------------------------------------------------------------------------

#: FMR targets of the verification cells and the FPIR of the open-set cells.
FMR_TARGETS = (0.01, 0.001)
FPIR_TARGET = 0.05
CMC_RANKS = (1, 5)


@dataclass(frozen=True)
class ScoreCell:
    name: str
    layout: str  # "all-against-all" or "gallery"
    n_subjects: int
    n_samples: int
    mated_sd: float = 0.0
    wolf_sd: float = 0.0
    lamb_sd: float = 0.0
    n_unenrolled: int = 0
    mated_mean: float = 3.0
    kind = "scores"

    @property
    def id(self) -> str:
        return self.name

    def describe(self) -> str:
        effects = (f"subject SDs mated {self.mated_sd:g}, wolf {self.wolf_sd:g}, lamb {self.lamb_sd:g}"
                   if (self.mated_sd or self.wolf_sd or self.lamb_sd) else "no subject effects")
        extra = f" + {self.n_unenrolled} x {self.n_samples} probes not enrolled" if self.n_unenrolled else ""
        return (f"{self.layout}, {self.n_subjects} subjects x {self.n_samples} samples{extra}, mated mean "
                f"{self.mated_mean:g}, {effects} (noise SD 1)")

    # marginal distributions -------------------------------------------------
    @property
    def sigma_n(self) -> float:
        return float(np.sqrt(self.wolf_sd**2 + self.lamb_sd**2 + 1.0))

    @property
    def sigma_m(self) -> float:
        return float(np.sqrt(self.mated_sd**2 + 1.0))

    @property
    def n_mated(self) -> int:
        n, k = self.n_subjects, self.n_samples
        return n * k * (k - 1) if self.layout == "all-against-all" else n * k

    @property
    def n_nonmated(self) -> int:
        n, k = self.n_subjects, self.n_samples
        if self.layout == "all-against-all":
            return n * k * (n - 1) * k
        return n * k * (n - 1) + self.n_unenrolled * k * n

    def fmr(self, t: float) -> float:
        return float(stats.norm.sf(t / self.sigma_n))

    def fnmr(self, t: float) -> float:
        return float(stats.norm.cdf((t - self.mated_mean) / self.sigma_m))

    def threshold_at_fmr(self, f: float) -> float:
        return float(self.sigma_n * stats.norm.isf(f))

    def threshold_at_fnmr(self, f: float) -> float:
        return float(self.mated_mean + self.sigma_m * stats.norm.ppf(f))

    def eer(self) -> float:
        return float(stats.norm.sf(self.mated_mean / (self.sigma_n + self.sigma_m)))

    def min_dcf(self, p: float) -> float:
        """The population minDCF at prior ``p`` (unit costs): ``min_t [p FNMR(t) + (1 - p) FMR(t)] / min(p, 1 - p)``,
        over every threshold including accept-all and reject-all (value 1); grid search refined by Brent."""
        cost = lambda t: (p * stats.norm.cdf((t - self.mated_mean) / self.sigma_m)
                          + (1 - p) * stats.norm.sf(t / self.sigma_n)) / min(p, 1 - p)
        grid = np.linspace(-8 * self.sigma_n, self.mated_mean + 8 * self.sigma_m, 20_001)
        k = int(np.argmin(cost(grid)))
        res = optimize.minimize_scalar(cost, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]),
                                       method="bounded", options={"xatol": 1e-10})
        return float(min(res.fun, cost(grid[k]), 1.0))

    def min_cllr(self) -> float:
        """The population minCllr: the Cllr of the true log-likelihood ratio of the two Gaussian marginals, which is
        monotone in the score wherever there is mass (its quadratic turns beyond ``mated_mean + 7 sigma_M``), so no
        monotone recalibration does better; a trapezoid integral in bits."""
        def side(mean, sd, sign):
            x = np.linspace(mean - 12 * sd, mean + 12 * sd, 200_001)
            llr = stats.norm.logpdf(x, self.mated_mean, self.sigma_m) - stats.norm.logpdf(x, 0.0, self.sigma_n)
            cost = np.logaddexp(0.0, sign * llr) / np.log(2)
            return float(np.trapezoid(cost * stats.norm.pdf(x, mean, sd), x))
        return (side(self.mated_mean, self.sigma_m, -1.0) + side(0.0, self.sigma_n, 1.0)) / 2

    def thresholds(self) -> dict[str, float]:
        """Named thresholds: at each FMR target, and where about 2 false matches / non-matches are expected."""
        out = {f"FMR={f:g}": self.threshold_at_fmr(f) for f in FMR_TARGETS}
        out["zero-FM"] = self.threshold_at_fmr(ZERO_EXPECTED / self.n_nonmated)
        out["zero-FNM"] = self.threshold_at_fnmr(ZERO_EXPECTED / self.n_mated)
        return out

    # identification (gallery layout) -----------------------------------------
    @property
    def _sd_d(self) -> float:  # S_mated - v_a
        return float(np.sqrt(self.mated_sd**2 + 1.0 + self.wolf_sd**2))

    @property
    def _sd_rest(self) -> float:  # w_c + e
        return float(np.sqrt(self.lamb_sd**2 + 1.0))

    def _grid(self, centre: float, sd: float, size: int = 8_001):
        """Nodes and N(centre, sd) quadrature weights of a fine grid (trapezoid rule; the tails vanish)."""
        x = np.linspace(centre - 10 * sd, centre + 10 * sd, size)
        return x, np.exp(-0.5 * ((x - centre) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)) * (x[1] - x[0])

    def cmc(self, rank: int) -> float:
        """P(the mate ranks <= rank) for a probe of an enrolled subject, N = n_subjects references."""
        x, wx = self._grid(self.mated_mean, self._sd_d)
        return float(stats.binom.cdf(rank - 1, self.n_subjects - 1, special.ndtr(-x / self._sd_rest)) @ wx)

    def fpir(self, t: float) -> float:
        """A non-enrolled probe (wolf v) has its best of N non-mated scores at or above t."""
        if self.wolf_sd == 0:
            return float(-np.expm1(self.n_subjects * special.log_ndtr(t / self._sd_rest)))
        v, wv = self._grid(0.0, self.wolf_sd)
        return float(1 - np.exp(self.n_subjects * special.log_ndtr((t - v) / self._sd_rest)) @ wv)

    def dir(self, t: float) -> float:
        """Rank-1 DIR at t: the mated score S >= t and above all N - 1 non-mated scores."""
        s = np.linspace(t, max(t, self.mated_mean) + 10 * self.sigma_m, 4_001)  # trapezoid rule from t
        ws = stats.norm.pdf(s, self.mated_mean, self.sigma_m) * (s[1] - s[0])
        ws[[0, -1]] /= 2
        if self.wolf_sd == 0:
            return float(np.exp((self.n_subjects - 1) * special.log_ndtr(s / self._sd_rest)) @ ws)
        v, wv = self._grid(0.0, self.wolf_sd, 401)
        inner = np.exp((self.n_subjects - 1) * special.log_ndtr((s[None, :] - v[:, None]) / self._sd_rest))
        return float(wv @ inner @ ws)

    def threshold_at_fpir(self, f: float) -> float:
        return float(optimize.brentq(lambda t: self.fpir(t) - f, -5, 20, xtol=1e-12))

    # simulation ------------------------------------------------------------
    def simulate(self, rng: np.random.Generator) -> xr.DataArray:
        n, k = self.n_subjects, self.n_samples
        if self.layout == "all-against-all":
            size = n * k
            subj = np.repeat(np.arange(n), k)
            u, v, w = (rng.normal(0.0, sd, n) for sd in (self.mated_sd, self.wolf_sd, self.lamb_sd))
            scores = v[subj][:, None] + w[subj][None, :] + rng.standard_normal((size, size))
            rows, cols = np.nonzero(subj[:, None] == subj[None, :])
            scores[rows, cols] = self.mated_mean + u[subj[rows]] + rng.standard_normal(rows.size)
            ids = np.arange(size)
            return bioxr.score_cube(scores, subject=subj, reference_subject=subj, probe_id=ids, reference_id=ids)
        total = n + self.n_unenrolled
        subj = np.repeat(np.arange(total), k)
        u, v = rng.normal(0.0, self.mated_sd, total), rng.normal(0.0, self.wolf_sd, total)
        w = rng.normal(0.0, self.lamb_sd, n)
        scores = v[subj][:, None] + w[None, :] + rng.standard_normal((subj.size, n))
        rows = np.flatnonzero(subj < n)
        scores[rows, subj[rows]] = self.mated_mean + u[subj[rows]] + rng.standard_normal(rows.size)
        return bioxr.score_cube(scores, subject=subj, reference_subject=np.arange(n))


INDEPENDENT = dict(mated_sd=0.0, wolf_sd=0.0, lamb_sd=0.0)
WOLVES = dict(mated_sd=0.7, wolf_sd=0.7, lamb_sd=0.7)
VERIFICATION_CELLS = {
    "aaa-60x4-indep": ScoreCell("aaa-60x4-indep", "all-against-all", 60, 4, **INDEPENDENT),
    "aaa-60x4-wolves": ScoreCell("aaa-60x4-wolves", "all-against-all", 60, 4, **WOLVES),
    "aaa-100x4-indep": ScoreCell("aaa-100x4-indep", "all-against-all", 100, 4, **INDEPENDENT),
    "aaa-100x4-wolves": ScoreCell("aaa-100x4-wolves", "all-against-all", 100, 4, **WOLVES),
}
#: Cells of the EER and FNMR@FMR bootstraps (a few hundred ms an experiment: slow in the test).
OPERATING_POINT_CELLS = ("aaa-60x4-wolves", "aaa-100x4-indep", "aaa-100x4-wolves")
#: Cells of the calibration intervals (minDCF, minCllr): every score enters each replicate's exact minimum.
CALIBRATION_CELLS = ("aaa-60x4-indep", "aaa-60x4-wolves")
IDENTIFICATION_CELLS = {
    "gal-100x4+50-indep": ScoreCell("gal-100x4+50-indep", "gallery", 100, 4, n_unenrolled=50, **INDEPENDENT),
    "gal-100x4+50-wolves": ScoreCell("gal-100x4+50-wolves", "gallery", 100, 4, n_unenrolled=50, **WOLVES),
}


@dataclass(frozen=True)
class FailureCell:
    """Independent enrolment and acquisition failures (ISO/IEC 19795-1): each reference fails to enrol with
    chance ``fte``, each probe fails to be acquired with chance ``fta``; the scores play no part."""

    n_references: int
    n_samples: int
    fte: float
    fta: float
    kind = "failures"

    @property
    def id(self) -> str:
        return f"fail-{self.n_references}x{self.n_samples}-fte{self.fte:g}-fta{self.fta:g}"

    def describe(self) -> str:
        return (f"{self.n_references} references, {self.n_references * self.n_samples} probes, independent "
                f"failures: FTE {self.fte:g}, FTA {self.fta:g}")

    def simulate(self, rng: np.random.Generator):
        n, probes = self.n_references, self.n_references * self.n_samples
        subj = np.repeat(np.arange(n), self.n_samples)
        cube = bioxr.score_cube(rng.standard_normal((probes, n)), subject=subj, reference_subject=np.arange(n))
        return bioxr.failures.mark_failures(cube, enrolment=rng.random(n) < self.fte,
                                            acquisition=rng.random(probes) < self.fta)


#: FTE 5 expected failures, FTA 1 (discrete); and 400 references, FTE 20 and FTA 16 expected (both sides tested)
FAILURE_CELLS = (FailureCell(100, 4, 0.05, 0.0025), FailureCell(400, 4, 0.05, 0.01))


# --------------------------------------------------------------------------
# calls: each returns {quantity: (lower, upper)}, arrays over the experiments of its data
# --------------------------------------------------------------------------


def _bounds(da: xr.DataArray, **where) -> tuple[np.ndarray, np.ndarray]:
    if where:
        da = da.sel(where, method="nearest") if all(k == "threshold" for k in where) else da.sel(where)
    lo = np.atleast_1d(np.asarray(da.sel(bound="lower").values, dtype=float))
    hi = np.atleast_1d(np.asarray(da.sel(bound="upper").values, dtype=float))
    return lo, hi


def call_binomial(batch: Batch, seed, n_replicates):
    errors = batch.errors.sum("individual")
    trials = int(batch.attempts.sum())
    return {"rate": _bounds(bioxr.intervals.binomial_interval(errors, trials, level=LEVEL))}


def _warned(batch: Batch, rho=None) -> np.ndarray:
    """Per experiment: would the function's DesignWarning fire (its own predicate, bioxr._core.designs)?"""
    from bioxr._core.designs import concentrated, unbalanced_correlated

    flag = concentrated(batch.errors, batch.attempts, "individual")
    if rho is not None:  # the ICC design: errors concentrated, balanced or not, or unbalanced correlated attempts
        flag = (flag | concentrated(batch.errors, batch.attempts, "individual", unbalanced=False)
                | unbalanced_correlated(batch.attempts, rho, "individual"))
    return np.asarray(flag.transpose("experiment").values, dtype=bool)


def call_clustered(design: str):
    def call(batch: Batch, seed, n_replicates):
        counts = xr.Dataset({"errors": batch.errors, "attempts": batch.attempts})
        res = bioxr.correlation.clustered_interval(counts, design=design, level=LEVEL)
        out = {"rate": _bounds(res["rate_interval"].transpose("experiment", "bound"))}
        if design == "icc":
            out[WARNED] = _warned(batch, res["rho"])
        return out

    return call


def call_bootstrap_rate(batch: Batch, seed, n_replicates):
    """Sub-blocks of SUB_BLOCK experiments, each with its own seed.

    Experiments of one sub-block share the bootstrap draws (the function keeps
    extra dims and draws once), so their hits are independent only given the
    draws; the coverage given the draws varies by a few tenths of a percent at
    most, which inflates the variance of the hit count by about
    ``1 + (SUB_BLOCK - 1) Var(p | draws) / (p (1 - p))``, a few percent. Measured on the study (25 cells
    that are not discrete, 20 blocks of 100 each): dispersion index of the block hit counts 1.02 (chi-square
    p = 0.35).
    """
    lo, hi = [], []
    for j, s in enumerate(range(0, batch.size, SUB_BLOCK)):
        errors = batch.errors.isel(experiment=slice(s, s + SUB_BLOCK))
        res = bioxr.bootstrap.bootstrap_rate_interval(
            errors, batch.attempts, n_replicates=n_replicates, level=LEVEL, seed=(seed + 7919 * j) % 2**31)
        a, b = _bounds(res["rate_interval"].transpose("experiment", "bound"))
        lo.append(a)
        hi.append(b)
    return {"rate": (np.concatenate(lo), np.concatenate(hi)), WARNED: _warned(batch)}


def call_bootstrap_curve(cell: ScoreCell):
    named = cell.thresholds()
    grid = sorted(set(named.values()))

    def call(cube, seed, n_replicates):
        res = bioxr.bootstrap.bootstrap_curve(cube, thresholds=grid, n_replicates=n_replicates, level=LEVEL, seed=seed)
        return _curve_quantities(res, named)

    return call


def _curve_quantities(res: xr.Dataset, named: dict) -> dict:
    """FMR and FNMR bounds at the cell's named thresholds, from a result with fmr_interval and fnmr_interval."""
    out = {f"fmr@{k}": _bounds(res["fmr_interval"], threshold=named[k]) for k in ("FMR=0.01", "FMR=0.001", "zero-FM")}
    out.update({f"fnmr@{k}": _bounds(res["fnmr_interval"], threshold=named[k])
                for k in ("FMR=0.01", "FMR=0.001", "zero-FNM")})
    return out


def call_rates(cell: ScoreCell):
    named = cell.thresholds()
    grid = sorted(set(named.values()))

    def call(cube, seed, n_replicates):
        res = bioxr.intervals.rates_interval(bioxr.verification.error_rates(cube, grid), level=LEVEL)
        return _curve_quantities(res, named)

    return call


def call_fnmr_icc(cell: ScoreCell):
    named = cell.thresholds()
    keys = ("FMR=0.01", "FMR=0.001", "zero-FNM")
    grid = sorted(named[k] for k in keys)

    def call(cube, seed, n_replicates):
        res = bioxr.correlation.fnmr_interval(cube, grid, level=LEVEL, design="icc")
        return {f"fnmr@{k}": _bounds(res["fnmr_interval"], threshold=named[k]) for k in keys}

    return call


def call_fnmr_at_fmr(cube, seed, n_replicates):
    res = bioxr.bootstrap.fnmr_at_fmr_interval(cube, list(FMR_TARGETS), n_replicates=n_replicates, level=LEVEL, seed=seed)
    return {f"fnmr_at_fmr={f:g}": _bounds(res["fnmr_interval"], fmr_target=f) for f in FMR_TARGETS}


#: Priors of the minDCF entries (unit costs): the NIST SRE operating point, a tenth, and the EER-like half.
DCF_PRIORS = (0.01, 0.1, 0.5)


def call_dcf(cube, seed, n_replicates):
    res = bioxr.calibration.dcf_interval(cube, p_target=list(DCF_PRIORS), n_replicates=n_replicates, level=LEVEL,
                                         seed=seed)
    return {f"min_dcf@p={p:g}": _bounds(res["min_dcf_interval"], p_target=p) for p in DCF_PRIORS}


def call_cllr(cube, seed, n_replicates):
    res = bioxr.calibration.cllr_interval(cube, n_replicates=n_replicates, level=LEVEL, seed=seed)
    return {"min_cllr": _bounds(res["min_cllr_interval"])}


EER_VARIANTS = {
    "bioxr-rocch": {},
    "interpolated": {"method": "interpolated"},
    "bob": {"convention": "bob"},
    "pyeer": {"convention": "pyeer"},
}


def call_eer(variant: str):
    kwargs = EER_VARIANTS[variant]

    def call(cube, seed, n_replicates):
        res = bioxr.bootstrap.eer_interval(cube, n_replicates=n_replicates, level=LEVEL, seed=seed, **kwargs)
        return {"eer": _bounds(res["eer_interval"])}

    return call


def call_cmc(cube, seed, n_replicates):
    res = bioxr.bootstrap.cmc_interval(cube, max_rank=max(CMC_RANKS), n_replicates=n_replicates, level=LEVEL, seed=seed)
    return {f"cmc@{r}": _bounds(res["cmc_interval"], rank=r) for r in CMC_RANKS}


def call_open_set(cell: ScoreCell):
    t = cell.threshold_at_fpir(FPIR_TARGET)

    def call(cube, seed, n_replicates):
        res = bioxr.bootstrap.open_set_interval(cube, [t], rank=1, impostors="non-enrolled", n_replicates=n_replicates,
                                                level=LEVEL, seed=seed)
        key = f"FPIR={FPIR_TARGET:g}"
        return {f"dir@{key}": _bounds(res["dir_interval"], threshold=t),
                f"fpir@{key}": _bounds(res["fpir_interval"], threshold=t)}

    return call


def call_failure_rates(cube, seed, n_replicates):
    res = bioxr.failures.failure_rates(cube, level=LEVEL)
    return {"fte": _bounds(res["fte_interval"]), "fta": _bounds(res["fta_interval"])}


# --------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One interval function on one cell and one quantity."""

    function: str  # public path under bioxr, "bootstrap.eer_interval"
    variant: str  # "" or the arguments that differ, "bob"
    cell: object  # DecisionCell or ScoreCell
    quantity: str
    truth: float
    call: Callable = field(compare=False, repr=False)  # (data, seed, n_replicates) -> {quantity: (lower, upper)}
    discrete: bool = False
    #: an interval that is conservative by construction on this cell (documented): tested on the lower side only
    conservative: str = ""
    bootstrap: bool = False
    test_experiments: int = 1000
    study_experiments: int = 2000
    test_replicates: int = 0
    study_replicates: int = 0
    slow: bool = False

    @property
    def name(self) -> str:
        return f"{self.function}[{self.variant}]" if self.variant else self.function

    @property
    def id(self) -> str:
        return f"{self.name}::{self.cell.id}::{self.quantity}"

    @property
    def group(self) -> tuple:
        """Entries of one group share their calls (one bootstrap serves several quantities)."""
        return (self.name, self.cell.id)


def _decision_entries() -> list[Entry]:
    out = []
    for cell in decision_cells():
        discrete = cell.expected_errors <= DISCRETE_AT_MOST
        common = dict(cell=cell, quantity="rate", truth=cell.pi, discrete=discrete)
        if cell.rho == 0 and cell.propensity == "beta":
            out.append(Entry("intervals.binomial_interval", "", call=call_binomial, **common))
        out.append(Entry("correlation.clustered_interval", "design=beta-binomial", call=call_clustered("beta-binomial"),
                         test_experiments=400, conservative=BB_AT_RHO_ZERO if cell.rho == 0 else "", **common))
        out.append(Entry("correlation.clustered_interval", "design=icc", call=call_clustered("icc"), **common))
        out.append(Entry("bootstrap.bootstrap_rate_interval", "", call=call_bootstrap_rate, bootstrap=True,
                         test_experiments=400, test_replicates=400, study_replicates=1000, **common))
    return out


def _score_entries() -> list[Entry]:
    """Score-data bootstraps use 200 replicates in the test and in the study alike (each costs 0.1-2 s an
    experiment), so the study's first experiments reproduce the test's bounds exactly."""
    out = []
    boot = dict(bootstrap=True, test_replicates=200, study_replicates=200)
    for cell in VERIFICATION_CELLS.values():
        named = cell.thresholds()
        slow = cell.n_subjects >= 100  # 160,000 comparisons an experiment: the 60-subject cells stand for them
        sized = dict(test_experiments=200 if slow else 300, study_experiments=1000, slow=slow)
        truths = {f"fmr@{k}": cell.fmr(named[k]) for k in ("FMR=0.01", "FMR=0.001", "zero-FM")}
        truths.update({f"fnmr@{k}": cell.fnmr(named[k]) for k in ("FMR=0.01", "FMR=0.001", "zero-FNM")})
        counts = {q: min(v, 1 - v) * (cell.n_nonmated if q.startswith("fmr") else cell.n_mated) for q, v in truths.items()}
        discrete = {q: counts[q] <= DISCRETE_AT_MOST for q in truths}  # the rarer outcome's expected count
        curve = call_bootstrap_curve(cell)
        for q, v in truths.items():
            out.append(Entry("bootstrap.bootstrap_curve", "", cell, q, v, curve, discrete=discrete[q], **sized, **boot))
        if cell.mated_sd == cell.wolf_sd == cell.lamb_sd == 0:  # the binomial claims independent comparisons only
            rates = call_rates(cell)
            for q, v in truths.items():
                out.append(Entry("intervals.rates_interval", "", cell, q, v, rates, discrete=discrete[q], **sized))
        icc = call_fnmr_icc(cell)
        for q in ("fnmr@FMR=0.01", "fnmr@FMR=0.001", "fnmr@zero-FNM"):
            out.append(Entry("correlation.fnmr_interval", "design=icc", cell, q, truths[q], icc, discrete=discrete[q],
                             **sized))
        if cell.id not in OPERATING_POINT_CELLS:
            continue
        size = 200 if slow else 300  # 0.2-2 s an experiment: the test runs a few hundred, the study 1,000
        heavy = dict(test_experiments=size, study_experiments=1000, slow=True, **boot)
        for f in FMR_TARGETS:
            out.append(Entry("bootstrap.fnmr_at_fmr_interval", "", cell, f"fnmr_at_fmr={f:g}",
                             cell.fnmr(cell.threshold_at_fmr(f)), call_fnmr_at_fmr, **heavy))
        for variant in EER_VARIANTS:
            out.append(Entry("bootstrap.eer_interval", variant, cell, "eer", cell.eer(), call_eer(variant), **heavy))
    for cell in (VERIFICATION_CELLS[c] for c in CALIBRATION_CELLS):  # minima of every score: 0.7-1 s an experiment
        heavy = dict(test_experiments=300, study_experiments=1000, slow=True, **boot)
        for p in DCF_PRIORS:
            out.append(Entry("calibration.dcf_interval", "", cell, f"min_dcf@p={p:g}", cell.min_dcf(p), call_dcf,
                             **heavy))
        out.append(Entry("calibration.cllr_interval", "", cell, "min_cllr", cell.min_cllr(), call_cllr, **heavy))
    for cell in IDENTIFICATION_CELLS.values():
        ident = dict(test_experiments=200, study_experiments=1000, **boot)
        for r in CMC_RANKS:
            out.append(Entry("bootstrap.cmc_interval", "", cell, f"cmc@{r}", cell.cmc(r), call_cmc, **ident))
        t = cell.threshold_at_fpir(FPIR_TARGET)
        open_set = call_open_set(cell)
        key = f"FPIR={FPIR_TARGET:g}"
        out.append(Entry("bootstrap.open_set_interval", "", cell, f"dir@{key}", cell.dir(t), open_set, **ident))
        impostor_searches = cell.n_unenrolled * cell.n_samples
        out.append(Entry("bootstrap.open_set_interval", "", cell, f"fpir@{key}", FPIR_TARGET, open_set,
                         discrete=FPIR_TARGET * impostor_searches <= DISCRETE_AT_MOST, **ident))
    for cell in FAILURE_CELLS:
        for q, truth, count in (("fte", cell.fte, cell.n_references), ("fta", cell.fta, cell.n_references * cell.n_samples)):
            out.append(Entry("failures.failure_rates", "", cell, q, truth, call_failure_rates,
                             discrete=truth * count <= DISCRETE_AT_MOST, test_experiments=200))
    return out


@lru_cache(maxsize=1)
def registry() -> tuple[Entry, ...]:
    entries = tuple(_decision_entries() + _score_entries())
    ids = [e.id for e in entries]
    assert len(ids) == len(set(ids)), "duplicate registry ids"
    return entries


# --------------------------------------------------------------------------
# running an entry
# --------------------------------------------------------------------------


@dataclass
class Outcome:
    entry: Entry
    experiments: int
    replicates: int
    hits: int
    nan: int
    mean_width: float
    one_sided: float
    seconds: float
    hit: np.ndarray = field(default=None, repr=False)  # per experiment, in seed order
    warned: float | None = None  # share of experiments where the function's DesignWarning fires (if it has one)

    @property
    def coverage(self) -> float:
        return self.hits / self.experiments

    @property
    def mc_interval(self) -> tuple[float, float]:
        ci = stats.binomtest(self.hits, self.experiments, LEVEL).proportion_ci(0.95, method="exact")
        return float(ci.low), float(ci.high)

    @property
    def p_value(self) -> float:
        """Exact binomial test of coverage = LEVEL: two-sided, or 'less' in a discrete cell."""
        alternative = "less" if (self.entry.discrete or self.entry.conservative) else "two-sided"
        return float(stats.binomtest(self.hits, self.experiments, LEVEL, alternative=alternative).pvalue)

    @property
    def covers(self) -> bool:
        return self.p_value >= ALPHA

    @property
    def warns(self) -> bool:
        """The function warns that its interval cannot cover here, in at least WARNED_ENOUGH of the experiments."""
        return self.warned is not None and self.warned >= WARNED_ENOUGH

    @property
    def passed(self) -> bool:
        """Covers, or says it cannot: where the docs say no interval of this kind covers, it warns."""
        return self.covers or self.warns

    def summary(self) -> str:
        lo, hi = self.mc_interval
        side = (" (lower side only: discrete cell)" if self.entry.discrete
                else " (lower side only: conservative by construction)" if self.entry.conservative else "")
        warned = "" if self.warned is None else f", DesignWarning in {self.warned:.0%}"
        return (f"{self.entry.id}: coverage {self.coverage:.3f} [{lo:.3f}, {hi:.3f}] over {self.experiments} "
                f"experiments{side}, binomial p = {self.p_value:.2g}, mean width {self.mean_width:.3g}, "
                f"one-sided {self.one_sided:.2f}, NaN {self.nan}, truth {self.entry.truth:.4g}{warned}")


_CACHE: dict = {}
#: If set, only these groups are computed alongside an entry's own (a study run restricted with -k).
GROUP_WITH: set | None = None


def sizes(entry: Entry, *, study: bool = False) -> tuple[int, int]:
    """Experiments and bootstrap replicates of an entry in the test (default) or in the study."""
    experiments = entry.study_experiments if study else entry.test_experiments
    replicates = (entry.study_replicates if study else entry.test_replicates) if entry.bootstrap else 0
    return experiments, replicates


def _compute(cell, experiments: int, groups: list[tuple[Entry, int]]) -> None:
    """Run the calls of ``groups`` (an entry of each, with its replicates) on the same experiments of ``cell``.

    Each experiment is simulated once for all the groups; results go to _CACHE as {quantity: (lower, upper)}
    with the seconds spent in the group's calls (plus its share of the simulation).
    """
    import time

    parts = {(e.group, r): {} for e, r in groups}
    spent = {(e.group, r): 0.0 for e, r in groups}
    simulating = 0.0

    failed: dict = {}

    def record(e, r, data, seed):
        key = (e.group, r)
        if key in failed:
            return
        start = time.perf_counter()
        try:
            for q, value in e.call(data, seed, r).items():
                parts[key].setdefault(q, []).append(value if q != WARNED else (value, value))
        except Exception as err:  # one failing function must not take its siblings down
            failed[key] = err
        spent[key] += time.perf_counter() - start

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FewReplicatesWarning and friends: the sizes are chosen here
        if cell.kind == "decisions":
            start = time.perf_counter()
            blocks = []
            for b in range(-(-experiments // BLOCK)):
                batch = cell.simulate(np.random.default_rng([_hash(cell.id), b]), BLOCK)
                blocks.append(batch.errors.isel(experiment=slice(0, min(BLOCK, experiments - b * BLOCK))))
            batch = Batch(xr.concat(blocks, "experiment"), batch.attempts)
            simulating += time.perf_counter() - start
            for e, r in groups:
                record(e, r, batch, _hash(e.name, cell.id))
        else:
            for i in range(experiments):
                start = time.perf_counter()
                cube = cell.simulate(np.random.default_rng([_hash(cell.id), i]))
                simulating += time.perf_counter() - start
                for e, r in groups:
                    record(e, r, cube, _hash(e.name, cell.id, i))
    for key, found in parts.items():
        bounds = {q: (np.concatenate([p[0] for p in v]), np.concatenate([p[1] for p in v])) for q, v in found.items()}
        _CACHE[(*key[0], experiments, key[1])] = (failed.get(key, bounds), spent[key] + simulating / len(groups))


def _bounds_of_group(entry: Entry, experiments: int, replicates: int, study: bool) -> tuple[dict, float]:
    """{quantity: (lower, upper)} over the experiments of the entry's cell, and the seconds spent (cached).

    The other groups on the same cell with the same sizes and the same ``slow`` flag are computed in the same
    pass over the experiments (each simulated once).
    """
    key = (*entry.group, experiments, replicates)
    if key not in _CACHE:
        groups = {entry.group: (entry, replicates)}
        if (experiments, replicates) == sizes(entry, study=study):
            for other in registry():
                if (other.cell == entry.cell and other.slow == entry.slow and other.group not in groups
                        and (GROUP_WITH is None or other.group in GROUP_WITH)
                        and sizes(other, study=study)[0] == experiments
                        and (*other.group, *sizes(other, study=study)) not in _CACHE):
                    groups[other.group] = (other, sizes(other, study=study)[1])
        _compute(entry.cell, experiments, list(groups.values()))
    bounds, seconds = _CACHE[key]
    if isinstance(bounds, Exception):
        raise bounds
    return bounds, seconds


def run(entry: Entry, *, experiments: int | None = None, replicates: int | None = None, study: bool = False) -> Outcome:
    """Coverage of ``entry`` over seeded experiments (the test's sizes, or the study's with ``study=True``)."""
    default = sizes(entry, study=study)
    experiments = default[0] if experiments is None else experiments
    replicates = default[1] if replicates is None else replicates
    bounds, seconds = _bounds_of_group(entry, experiments, replicates, study)
    lo, hi = bounds[entry.quantity]
    if lo.shape != (experiments,) or hi.shape != (experiments,):
        raise AssertionError(f"{entry.id}: the call gave {lo.shape} bounds for {experiments} experiments")
    ok = np.isfinite(lo) & np.isfinite(hi)
    hit = ok & (lo <= entry.truth) & (entry.truth <= hi)
    width = np.where(ok, hi - lo, np.nan)
    one_sided = ok & ((lo <= 0) | (hi >= 1))
    warned = float(bounds[WARNED][0].mean()) if WARNED in bounds else None
    return Outcome(entry, experiments, replicates, int(hit.sum()), int((~ok).sum()),
                   float(np.nanmean(width)) if ok.any() else float("nan"), float(one_sided.mean()), seconds, hit,
                   warned)
