"""The certification workflow: verdicts and tables say the claim's numbers; the next test is planned from it."""

from __future__ import annotations

import numpy as np
import pytest

import bioxr
from bioxr import certification


@pytest.fixture(scope="module")
def case():
    cube = bioxr.simulate.gaussian(n_subjects=120, n_samples=3, mated_mean=5.0, seed=0)
    claim = bioxr.claim_test(cube, fmr=0.01, fnmr=0.2, threshold=2.4, n_replicates=1000, seed=1)
    return cube, claim


def test_verdict_and_table_say_the_claims_numbers(case):
    _, claim = case
    text = certification.verdict(claim)
    md = certification.to_markdown(claim)
    for k, rate in enumerate(("FMR", "FNMR")):
        word = "passes" if bool(claim.passes.values[k]) else "fails"
        assert f"the claim {rate} ≤ {float(claim.claim.values[k]):g} **{word}**" in text
        assert f"upper bound {float(claim.bound.values[k]):.3g}" in text
        assert f"| {int(claim.errors.values[k]):,} | {int(claim.trials.values[k]):,} |" in md
    assert text.startswith("At 80% confidence")


def test_plan_next_plans_at_the_observed_rates(case):
    cube, claim = case
    plan = certification.plan_next(cube, claim, levels=(0.8, 0.95), n_simulations=500)
    fnmr = plan[(plan.rate == "FNMR") & (plan.claim == 0.2)]
    observed = float(claim.observed.sel(rate="fnmr"))
    assert observed < 0.2 * certification.CLOSE
    icc = float(bioxr.correlation.icc(bioxr.correlation.attempt_counts(cube, 2.4)).rho)
    direct = bioxr.plan_test(fnmr=0.2, level=[0.8, 0.95], expected_rate=observed, icc=max(icc, 0.0),
                             samples_per_subject=3, n_simulations=500, seed=0)
    np.testing.assert_array_equal(fnmr.subjects.to_numpy(dtype=int), direct.fnmr_subjects.values.ravel())
    assert (fnmr["pass probability"] >= 0.75).all()
    assert plan.subjects[fnmr.index[1]] >= plan.subjects[fnmr.index[0]]  # 95% needs more than 80%
    stricter = plan[(plan.rate == "FNMR") & (plan.claim == 0.1)]
    assert len(stricter) in (1, 2)
    assert "narrative" in plan.attrs and "intra-class correlation" in plan.attrs["narrative"]


def test_plan_next_refuses_to_plan_what_cannot_pass():
    cube = bioxr.simulate.gaussian(n_subjects=60, n_samples=2, seed=0)  # FNMR far above 1%
    claim = bioxr.claim_test(cube, fmr=0.05, fnmr=0.01, n_replicates=1000)
    plan = certification.plan_next(cube, claim, levels=(0.8,), stricter=0, n_simulations=200)
    row = plan[plan.rate == "FNMR"].iloc[0]
    assert "no test size supports it" in row.note and row.subjects is pd_na()
    fmr = plan[plan.rate == "FMR"].iloc[0]  # the operating point meets the claim exactly: no plan at that rate
    assert ("rule of three" in fmr.note or "no test size" in fmr.note) and np.isnan(fmr["pass probability"])


def pd_na():
    import pandas as pd

    return pd.NA
