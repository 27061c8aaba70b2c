"""Coverage of the binomial and the clustered intervals at small rates (issue 9, deliverables 1 and 5).

Part 1, exact: the coverage of each binomial interval method, with the
rule of three at zero errors as shipped, summed over the binomial pmf
(no simulation) for n in {50, 100, 200, 1000, 1e4, 1e6} and 500
log-spaced pi from 1/n to 0.5. Candidates beside bioxr's methods (mid-p
and Brown, Cai & DasGupta's modified Wilson, section 4.1.1, with x* = 2
for n <= 50 and 3 above) are written here from their definitions.

Part 2, simulated: the coverage of clustered_interval's designs on
per-individual counts from two generators: bioxr's beta-binomial
simulate_clustered_decisions and, independently, a logit-normal one
written here from the definition of the intra-class correlation (logit p_i
~ N(mu, sigma^2), with mu and sigma solved so that E p_i = pi and Var p_i =
rho pi (1 - pi)). Cells: pi in {0.1, 0.05, 0.01, 0.001}, rho in {0, 0.1,
0.3, 0.6}, n in {60, 200} with 5 attempts each or half 2 and half 8, and
the skewed protocol of 10 people x 50 attempts plus 90 x 2.

Run: ``python benchmarks/small_rates.py [experiments per cell] > benchmarks/SMALL_RATES.md``
(default 2,000; the Monte Carlo standard error at 95% is then 0.5 points).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import xarray as xr
from scipy import optimize, special, stats

from bioxr.correlation import DesignWarning, clustered_interval, simulate_clustered_decisions
from bioxr.intervals import binomial_interval

LEVEL = 0.95
ALPHA = 1 - LEVEL


# ------------------------------------------------------------------ part 1: exact binomial coverage
def _midp(x, n):
    """Mid-p bounds: 1/2 P(X >= x) + 1/2 P(X >= x + 1) = alpha/2 and its mirror, bisection inside the exact bounds."""
    def tail(pi):
        return 0.5 * (special.betainc(np.maximum(x, 1e-300), n - x + 1, pi)
                      + np.where(x + 1 <= n, special.betainc(x + 1, np.maximum(n - x, 1e-300), pi), 0.0))

    def solve(target, lo, hi):
        for _ in range(45):
            mid = (lo + hi) / 2
            up = tail(mid) < target
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        return (lo + hi) / 2

    cp = binomial_interval(x, n, method="clopper-pearson").values
    cp_next = binomial_interval(np.minimum(x + 1, n), n, method="clopper-pearson").values
    cp_prev = binomial_interval(np.maximum(x - 1, 0), n, method="clopper-pearson").values
    lower = np.where(x > 0, solve(ALPHA / 2, cp[:, 0], np.maximum(cp_next[:, 0], cp[:, 0])), 0.0)
    upper = np.where(x < n, solve(1 - ALPHA / 2, np.minimum(cp_prev[:, 1], cp[:, 1]), cp[:, 1]), 1.0)
    return lower, upper


def _bcd_modified_wilson(x, n):
    w = binomial_interval(x, n, method="wilson").values
    star = 2 if n <= 50 else 3
    poisson_low = stats.chi2.ppf(ALPHA, 2 * np.maximum(x, 1e-300)) / (2 * n)
    poisson_high = 1 - stats.chi2.ppf(ALPHA, 2 * np.maximum(n - x, 1e-300)) / (2 * n)
    lower = np.where((x >= 1) & (x <= star), poisson_low, w[:, 0])
    upper = np.where((n - x >= 1) & (n - x <= star), poisson_high, w[:, 1])
    return lower, upper


def _with_rule(lower, upper, x, n):
    c = -np.log(ALPHA) / n
    lower = np.where(x == 0, 0.0, np.where(x == n, max(0.0, 1 - c), lower))
    upper = np.where(x == 0, min(1.0, c), np.where(x == n, 1.0, upper))
    return lower, upper


def _bounds(method, x, n):
    if method == "mid-p":
        return _with_rule(*_midp(x, n), x, n)
    if method == "BCD modified Wilson":
        return _with_rule(*_bcd_modified_wilson(x, n), x, n)
    ci = binomial_interval(x, n, method=method).values
    return ci[:, 0], ci[:, 1]


def exact_coverage(method, n, pis):
    kmax = int(min(n, stats.binom.isf(1e-13, n, pis.max()) + 1))
    k = np.arange(kmax + 1, dtype=float)
    lower, upper = _bounds(method, k, float(n))
    out = np.empty(pis.size)
    for i, pi in enumerate(pis):
        a = int(max(0, stats.binom.ppf(1e-13, n, pi) - 1))
        b = int(min(kmax, stats.binom.isf(1e-13, n, pi) + 1))
        kk = np.arange(a, b + 1)
        hit = (lower[kk] <= pi) & (pi <= upper[kk])
        out[i] = stats.binom.pmf(kk, n, pi)[hit].sum()
    return out


def part1():
    ns = [50, 100, 200, 1000, 10_000, 1_000_000]
    methods = ["modified-wilson", "wilson", "jeffreys", "clopper-pearson", "mid-p", "BCD modified Wilson"]
    print("## 1. Binomial intervals: exact coverage (rule of three at zero errors)\n")
    print("500 log-spaced pi from 1/n to 0.5; min (at n pi) / mean.\n")
    print("| method | " + " | ".join(f"n = {n:g}" for n in ns) + " |")
    print("|---" * (len(ns) + 1) + "|")
    for method in methods:
        cells = []
        for n in ns:
            pis = np.geomspace(1 / n, 0.5, 500)
            c = exact_coverage(method, n, pis)
            cells.append(f"{c.min():.3f} (at {pis[c.argmin()] * n:.1f}) / {c.mean():.3f}")
        print(f"| {method} | " + " | ".join(cells) + " |", flush=True)
    c = exact_coverage("wilson", 1000, np.array([0.001]))[0]
    m = exact_coverage("modified-wilson", 1000, np.array([0.001]))[0]
    print(f"\nBinomial(1000, 0.001): covered {c:.3f} by Wilson, {m:.3f} by modified-wilson.\n")


# ------------------------------------------------------------------ part 2: clustered intervals
def logitnormal_params(pi, rho):
    """mu, sigma of logit p_i ~ N(mu, sigma^2) with E p_i = pi and Var p_i = rho pi (1 - pi)."""
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()

    def equations(v):
        mu, log_s = v
        p = special.expit(mu + np.exp(log_s) * x)
        m1, m2 = (w * p).sum(), (w * p * p).sum()
        return [np.log(m1 / pi), np.log((m2 - m1**2) / (rho * pi * (1 - pi)))]

    best = None
    for s0 in (0.5, 1.5, 3.0, 5.0):
        sol = optimize.fsolve(equations, [special.logit(pi) - s0**2 / 2, np.log(s0)], full_output=True)
        err = np.abs(sol[1]["fvec"]).max()
        if best is None or err < best[1]:
            best = (sol[0], err)
    assert best[1] < 1e-6, (pi, rho, best)
    return best[0][0], float(np.exp(best[0][1]))


def logitnormal_decisions(attempts, pi, rho, seed, replicates):
    rng = np.random.default_rng(seed)
    shape = (replicates, attempts.size)
    if rho == 0:
        p = np.full(shape, pi)
    else:
        mu, sigma = logitnormal_params(pi, rho)
        p = special.expit(mu + sigma * rng.standard_normal(shape))
    return xr.Dataset({"errors": (("replicate", "individual"), rng.binomial(attempts, p)),
                       "attempts": ("individual", attempts)})


def protocols():
    for n in (60, 200):
        yield f"{n} x 5", np.full(n, 5)
        yield f"{n // 2} x 2 + {n // 2} x 8", np.r_[np.full(n // 2, 2), np.full(n // 2, 8)]
    yield "10 x 50 + 90 x 2", np.r_[np.full(10, 50), np.full(90, 2)]


def part2(replicates):
    designs = ("beta-binomial", "icc", "binomial")
    print(f"## 2. Clustered intervals: simulated coverage ({replicates} experiments a cell)\n")
    print("Coverage by design, beta-binomial (bb) and logit-normal (ln) data; `low` / `high`: share of intervals "
          "entirely above / below pi (beta-binomial design, bb data); `warned`: share of experiments with a "
          "DesignWarning; `N pi`: expected errors.\n")
    print("| pi | rho | protocol | N pi | " + " | ".join(f"{d} bb | {d} ln" for d in designs) + " | low | high | warned |")
    print("|---" * (4 + 2 * len(designs) + 3) + "|")
    cell = 0
    for pi in (0.1, 0.05, 0.01, 0.001):
        for rho in (0.0, 0.1, 0.3, 0.6):
            for name, m in protocols():
                cell += 1
                row = [f"{pi:g}", f"{rho:g}", name, f"{pi * m.sum():.1f}"]
                data = {"bb": simulate_clustered_decisions(m.size, m, rate=pi, rho=rho, seed=9000 + cell,
                                                           replicates=replicates),
                        "ln": logitnormal_decisions(m, pi, rho, 19000 + cell, replicates)}
                extra = []
                for design in designs:
                    for gen, counts in data.items():
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always", DesignWarning)
                            ci = clustered_interval(counts, design=design).rate_interval
                        lo, hi = ci.sel(bound="lower").values, ci.sel(bound="upper").values
                        row.append(f"{np.mean((lo <= pi) & (pi <= hi)):.3f}")
                        if design == "beta-binomial" and gen == "bb":
                            warned = _warned_share(counts, caught)
                            extra = [f"{np.mean(lo > pi):.3f}", f"{np.mean(hi < pi):.3f}", warned]
                print("| " + " | ".join(row + extra) + " |", flush=True)


def _warned_share(counts, caught):
    """Share of experiments the DesignWarning speaks of (its message counts the cells)."""
    if not caught:
        return "0"
    m = counts["attempts"]
    kish = float(m.sum() ** 2 / (m.astype(float) ** 2).sum())
    erring = (counts["errors"] > 0).sum("individual")
    few = ((counts["errors"].sum("individual") > 0) & (erring < 3)).mean()
    skewed = kish < 30 and kish < (m > 0).sum() / 2
    return "1" if skewed else f"{float(few):.2f}"


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    start = time.perf_counter()
    print("# Coverage at small rates (benchmarks/small_rates.py)\n")
    part1()
    part2(reps)
    print(f"\n{time.perf_counter() - start:.0f} s")
