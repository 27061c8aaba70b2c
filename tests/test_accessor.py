"""The ``.bio`` accessor is a thin door: each method returns exactly what its
function returns."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import (
    bootstrap,
    calibration,
    claims,
    comparisons,
    correlation,
    demographics,
    design,
    deveval,
    failures,
    gallery,
    generative,
    headline,
    identification,
    intervals,
    outcomes,
    simulate,
    systems,
    verification,
)
from bioxr.accessor import BioAccessor
from bioxr.cube import ScoreCubeError


@pytest.fixture(scope="module")
def photohead():
    return simulate.photohead(5, 2, 4, seed=13)


@pytest.fixture(scope="module")
def gaussian():
    return simulate.gaussian(20, 2, seed=13)


def _calls():
    """(accessor call, function call) pairs with the same arguments."""
    t = [-0.5, 0.0, 1.0, 2.5]
    keep = ("subject", "image")
    return [
        ("error_rates", lambda c: c.bio.error_rates(t), lambda c: verification.error_rates(c, t)),
        ("error_rates dim", lambda c: c.bio.error_rates(t, dim=keep), lambda c: verification.error_rates(c, t, dim=keep)),
        ("fmr", lambda c: c.bio.fmr(1.0), lambda c: verification.fmr(c, 1.0)),
        ("fmr dim", lambda c: c.bio.fmr(t, dim=keep), lambda c: verification.fmr(c, t, dim=keep)),
        ("fnmr", lambda c: c.bio.fnmr(t), lambda c: verification.fnmr(c, t)),
        ("fnmr dim", lambda c: c.bio.fnmr(t, dim="collection"), lambda c: verification.fnmr(c, t, dim="collection")),
        ("det_curve", lambda c: c.bio.det_curve(), lambda c: verification.det_curve(c)),
        ("det_curve dim", lambda c: c.bio.det_curve(dim=keep), lambda c: verification.det_curve(c, dim=keep)),
        ("roc_curve", lambda c: c.bio.roc_curve(), lambda c: verification.roc_curve(c)),
        ("roc_curve dim", lambda c: c.bio.roc_curve(dim=keep), lambda c: verification.roc_curve(c, dim=keep)),
        ("eer", lambda c: c.bio.eer(), lambda c: verification.eer(c)),
        *[
            (f"eer {m}", (lambda m: lambda c: c.bio.eer(dim=keep, method=m))(m),
             (lambda m: lambda c: verification.eer(c, dim=keep, method=m))(m))
            for m in verification.EER_METHODS
        ],
        ("det_curve all", lambda c: c.bio.det_curve(dim=keep, points="all"),
         lambda c: verification.det_curve(c, dim=keep, points="all")),
        ("roc_curve all", lambda c: c.bio.roc_curve(points="all"), lambda c: verification.roc_curve(c, points="all")),
        ("fnmr_at_fmr", lambda c: c.bio.fnmr_at_fmr([0.01, 0.1]), lambda c: verification.fnmr_at_fmr(c, [0.01, 0.1])),
        ("fnmr_at_fmr dim", lambda c: c.bio.fnmr_at_fmr(0.1, dim=keep), lambda c: verification.fnmr_at_fmr(c, 0.1, dim=keep)),
        ("fmr_at_fnmr", lambda c: c.bio.fmr_at_fnmr([0.05, 0.2]), lambda c: verification.fmr_at_fnmr(c, [0.05, 0.2])),
        ("fmr_at_fnmr dim", lambda c: c.bio.fmr_at_fnmr(0.2, dim=keep), lambda c: verification.fmr_at_fnmr(c, 0.2, dim=keep)),
        ("outcomes", lambda c: c.bio.outcomes(), lambda c: outcomes.outcomes(c)),
        ("outcomes ranks_only", lambda c: c.bio.outcomes(ranks_only=True), lambda c: outcomes.outcomes(c, ranks_only=True)),
    ]


@pytest.mark.parametrize("name, via_accessor, via_function", _calls(), ids=[c[0] for c in _calls()])
def test_accessor_returns_exactly_what_the_function_returns(photohead, name, via_accessor, via_function):
    xr.testing.assert_identical(via_accessor(photohead), via_function(photohead))


def test_accessor_on_a_plain_matrix(gaussian):
    xr.testing.assert_identical(gaussian.bio.eer(method="nearest"), verification.eer(gaussian, method="nearest"))
    xr.testing.assert_identical(gaussian.bio.det_curve(dim="probe"), verification.det_curve(gaussian, dim="probe"))
    xr.testing.assert_identical(gaussian.bio.outcomes(), outcomes.outcomes(gaussian))


def test_accessor_on_a_lazy_cube():
    lazy = simulate.photohead(5, 2, 4, seed=13, chunks=2)
    xr.testing.assert_identical(lazy.bio.outcomes().compute(), outcomes.outcomes(lazy).compute())
    xr.testing.assert_identical(lazy.bio.eer(), verification.eer(lazy))


def test_accessor_errors_are_the_functions_errors(gaussian):
    with pytest.raises(ValueError, match="method"):
        gaussian.bio.eer(method="bogus")
    with pytest.raises(ValueError, match="NaN"):
        gaussian.bio.fmr(np.nan)


def test_accessor_exists_on_dataset_too():
    ds = xr.Dataset({"x": ("a", [1.0, 2.0])})
    assert isinstance(ds.bio, BioAccessor)
    assert isinstance(xr.DataArray([1.0]).bio, BioAccessor)
    # an outcome cube is a Dataset: the accessor is there
    out = simulate.gaussian(5, seed=0).bio.outcomes()
    assert isinstance(out.bio, BioAccessor)


def test_accessor_init_does_not_validate_methods_do():
    # xarray hides errors raised while building an accessor: building must never fail
    not_a_cube = xr.DataArray(np.zeros(3), dims="x")
    acc = not_a_cube.bio
    with pytest.raises(ScoreCubeError):
        acc.eer()
    ds = simulate.gaussian(5, seed=0).to_dataset()
    with pytest.raises(ScoreCubeError, match="Dataset"):
        ds.bio.eer()


TOPIC_MODULES = [verification, outcomes] + [
    getattr(bioxr, name)
    for name in ("identification", "gallery", "correlation", "intervals", "bootstrap", "design", "generative", "demographics",
                 "comparisons", "failures", "deveval", "headline", "claims", "systems", "calibration")
    if hasattr(bioxr, name)
]


def _public_functions():
    """Every public function of the topic modules the accessor serves."""
    out = []
    for module in TOPIC_MODULES:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                out.append((name, obj))
    return out


def _accessor_methods():
    return [n for n, _ in inspect.getmembers(BioAccessor, inspect.isfunction) if not n.startswith("_")]


def _same_signature(method, func):
    f_params = list(inspect.signature(func).parameters.values())[1:]  # drop the cube
    m_params = list(inspect.signature(method).parameters.values())[1:]  # drop self
    return [(p.name, p.kind, p.default) for p in m_params] == [(p.name, p.kind, p.default) for p in f_params]


@pytest.mark.parametrize("name", _accessor_methods())
def test_every_accessor_method_mirrors_a_function(name):
    # one-line doors: the same name, the same options, the same defaults
    matches = [f for n, f in _public_functions() if n == name]
    assert matches, f"cube.bio.{name} has no topic function of that name"
    assert _same_signature(getattr(BioAccessor, name), matches[0])


@pytest.mark.parametrize(
    "name, func",
    [(n, f) for n, f in _public_functions() if n in ("error_rates", "fmr", "fnmr", "det_curve", "roc_curve", "eer",
                                                       "fnmr_at_fmr", "fmr_at_fnmr", "outcomes")],
)
def test_verification_and_outcome_functions_all_have_accessor_methods(name, func):
    assert hasattr(BioAccessor, name), f"cube.bio.{name} is missing"
    assert _same_signature(getattr(BioAccessor, name), func)


def test_import_registers_the_accessor():
    assert bioxr.accessor.BioAccessor is BioAccessor
    assert hasattr(xr.DataArray, "bio") and hasattr(xr.Dataset, "bio")


# ---------------------------------------------------------------------------
# The registry: every public member of the accessor, called through ``.bio``
# with non-default values for every keyword it forwards, against its function.
#
# A case is (accessor member, object factory, positional args, keyword args).
# ``test_registered_case_matches_its_function`` runs each case both ways and
# wants the same outcome: the result (``assert_identical``), the warnings and,
# for ``progress``, whether a progress bar was drawn; or the same exception.
# Three meta-tests keep the table honest:
#
# - every public method or property of the accessor has a case, and the table
#   names no member the accessor lacks;
# - every parameter with a default is given a non-default value by some case;
# - for every such parameter, some case gives the function a different outcome
#   when that parameter is left at its default, so an accessor that stops
#   forwarding it (or forwards the default) fails the comparison test.
# ---------------------------------------------------------------------------

#: The function each accessor member stands for (its docstring names it too).
FUNCTIONS = {
    "to_comparisons": comparisons.to_comparisons,
    "to_cube": comparisons.to_cube,
    "failure_rates": failures.failure_rates,
    "error_rates": verification.error_rates,
    "fmr": verification.fmr,
    "fnmr": verification.fnmr,
    "det_curve": verification.det_curve,
    "roc_curve": verification.roc_curve,
    "eer": verification.eer,
    "fnmr_at_fmr": verification.fnmr_at_fmr,
    "fmr_at_fnmr": verification.fmr_at_fnmr,
    "outcomes": outcomes.outcomes,
    "cmc_curve": identification.cmc_curve,
    "identification_rate": identification.identification_rate,
    "open_set_rates": identification.open_set_rates,
    "open_set_curve": identification.open_set_curve,
    "attempt_counts": correlation.attempt_counts,
    "fnmr_interval": correlation.fnmr_interval,
    "rates_interval": intervals.rates_interval,
    "icc": correlation.icc,
    "clustered_interval": correlation.clustered_interval,
    "bootstrap_curve": bootstrap.bootstrap_curve,
    "fnmr_at_fmr_interval": bootstrap.fnmr_at_fmr_interval,
    "eer_interval": bootstrap.eer_interval,
    "cmc_interval": bootstrap.cmc_interval,
    "open_set_interval": bootstrap.open_set_interval,
    "dichotomize": design.dichotomize,
    "design_study": design.design_study,
    "design_test": design.design_test,
    "specificity_generalisation": generative.specificity_generalisation,
    "generalisation": generative.generalisation,
    "specificity": generative.specificity,
    "group_counts": demographics.group_counts,
    "differential_test": demographics.differential_test,
    "margin_of_error": demographics.margin_of_error,
    "gini": demographics.gini,
    "max_min_ratio": demographics.max_min_ratio,
    "best_per_subject": gallery.best_per_subject,
    "choose_threshold": deveval.choose_threshold,
    "dev_eval": deveval.dev_eval,
    "epc": deveval.epc,
    "summary": headline.summary,
    "claim_test": claims.claim_test,
    "paired_difference": systems.paired_difference,
    "mcnemar_test": systems.mcnemar_test,
    "system_bands": systems.system_bands,
    "dcf": calibration.dcf,
    "cllr": calibration.cllr,
    "dcf_interval": calibration.dcf_interval,
    "cllr_interval": calibration.cllr_interval,
}


# --- objects (built once, never changed by the calls) -----------------------


@functools.cache
def _plain():
    """A plain similarity matrix: 30 subjects x 3 probes, one reference each."""
    return simulate.gaussian(n_subjects=30, n_samples=3, seed=21)


@functools.cache
def _evaluation():
    """Evaluation scores for dev/eval cases: other subjects, same matcher."""
    return simulate.gaussian(n_subjects=30, n_samples=3, seed=31)


@functools.cache
def _systems():
    """Three correlated systems on the same 20 subjects (a leading system dimension)."""
    return simulate.systems(n_subjects=20, n_samples=2, n_systems=3, shift=[0.0, -0.3, 0.2], seed=32)


@functools.cache
def _systems_renamed():
    """Two of them over a dimension named ``matcher``."""
    return _systems().isel(system=[0, 1]).rename(system="matcher")


@functools.cache
def _systems_failed():
    """Two systems, the second with two failed acquisitions (failures differ between systems, as they do)."""
    cube = _systems().isel(system=[0, 1])
    failed = np.zeros((2, cube.sizes["probe"]), dtype=bool)
    failed[1, [7, 9]] = True
    return cube.assign_coords(failed_acquisition=(("system", "probe"), failed))


@functools.cache
def _failed():
    """The plain matrix with two failed enrolments and three failed acquisitions."""
    cube = _plain()
    enrolment = np.isin(np.arange(cube.sizes["reference"]), [3, 17])
    acquisition = np.isin(np.arange(cube.sizes["probe"]), [5, 40, 41])
    return failures.mark_failures(cube, enrolment=enrolment, acquisition=acquisition)


@functools.cache
def _grouped():
    """Two demographic groups, the second with a lower mated mean."""
    return simulate.gaussian(n_subjects=30, n_samples=3, groups={"A": 0.0, "B": -1.0}, seed=22)


@functools.cache
def _cohort():
    """The grouped matrix with its group label called ``cohort``."""
    return _grouped().rename({"group": "cohort"})


@functools.cache
def _multi():
    """Several probe dims (subject x image x collection), rounded scores (tied ranks), two groups."""
    cube = simulate.photohead(8, 2, 4, seed=23)
    cube = cube.copy(data=np.round(cube.values))
    return cube.assign_coords(group=("subject", list("ABABAABB")))


@functools.cache
def _open_set():
    """The multi-dim cube with subjects S006 and S007 not enrolled."""
    return _multi().isel(reference=slice(0, 12))


@functools.cache
def _open_plain():
    """The plain matrix with subjects 20-29 not enrolled."""
    return _plain().isel(reference=slice(0, 20))


@functools.cache
def _trials():
    """A comparison list of the multi-dim cube."""
    return comparisons.to_comparisons(_multi())


@functools.cache
def _gallery():
    """A 12 x 12 all-against-all matrix of 4 subjects (3 samples each)."""
    rng = np.random.default_rng(24)
    return gallery.all_against_all(rng.random((12, 12)), np.repeat(list("abcd"), 3))


@functools.cache
def _rates():
    """Error rates at three thresholds, with their counts."""
    return verification.error_rates(_plain(), [0.5, 1.5, 2.5])


@functools.cache
def _person_counts():
    """Per-person counts over a dim called ``person``, group label ``cohort``."""
    counts = correlation.attempt_counts(_grouped(), [2.0, 3.0])
    return counts.rename({"individual": "person", "group": "cohort"})


@functools.cache
def _counts():
    """Per-individual counts with default names (dim ``individual``, label ``group``)."""
    return correlation.attempt_counts(_grouped(), [2.0, 3.0])


@functools.cache
def _cohort_rates():
    """Group rates over a dim called ``cohort``."""
    return xr.DataArray([0.02, 0.05, 0.01, 0.03], dims="cohort", coords={"cohort": list("ABCD")})


@functools.cache
def _group_rates():
    """Group rates over ``group`` and ``cohort``: which dim is reduced shows."""
    values = np.array([[0.02, 0.05, 0.01], [0.04, 0.04, 0.1]])
    return xr.DataArray(values, dims=("cohort", "group"), coords={"group": list("ABC"), "cohort": ["x", "y"]})


@functools.cache
def _outcome_cube():
    """The outcome cube of the rounded plain matrix (tied mates)."""
    cube = _plain()
    return outcomes.outcomes(cube.copy(data=np.round(cube.values)))


@functools.cache
def _success():
    """Binary success over (subject, image, day): 20 subjects, 2 images, 24 days."""
    rng = np.random.default_rng(25)
    p = rng.uniform(0.3, 0.9, 20)
    values = (rng.random((20, 2, 24)) < p[:, None, None]).astype(float)
    return xr.DataArray(values, dims=("subject", "image", "day"))


@functools.cache
def _success_collection():
    """The same successes with the default trial dim name ``collection``."""
    return _success().rename(day="collection")


@functools.cache
def _study():
    """A small design study of the successes."""
    return design.design_study(_success_collection(), m=3, n_collections=12, n_runs=6, seed=3)


@functools.cache
def _training():
    rng = np.random.default_rng(26)
    return xr.DataArray(rng.normal(size=(12, 2, 2)), dims=("draw", "y", "x"))


@functools.cache
def _synthetic():
    rng = np.random.default_rng(27)
    return xr.DataArray(rng.normal(size=(15, 2, 2)) + 0.3, dims=("draw", "y", "x"))


@functools.cache
def _training_sample():
    return _training().rename(draw="sample")


@functools.cache
def _synthetic_sample():
    return _synthetic().rename(draw="sample")


# --- the table --------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    member: str
    obj: Callable[[], Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return "-".join([self.member, self.obj.__name__.strip("_"), *self.kwargs])


T = [0.5, 1.5, 2.5]
KEEP = ("subject", "image")  # pool these, keep collection
GRID = np.linspace(-1.0, 5.0, 25)
B = {"n_replicates": 200, "seed": 7}  # every bootstrap case: few replicates, a non-default seed


@dataclass(frozen=True)
class Later:
    """An argument built when the case runs (not at collection)."""

    factory: Callable[[], Any]


S = Later(_synthetic)
EV = Later(_evaluation)
S0 = Later(_synthetic_sample)

CASES = [
    # comparisons, failures
    Case("to_comparisons", _multi),
    Case("to_comparisons", _failed),
    Case("to_cube", _trials),
    Case("failure_rates", _failed, kwargs={"level": 0.8, "method": "clopper-pearson"}),
    Case("failure_rates", _failed, kwargs={"method": "jeffreys"}),
    # verification
    Case("error_rates", _multi, (T,), {"dim": KEEP}),
    Case("error_rates", _failed, (T,), {"failure_policy": "nist"}),
    Case("fmr", _multi, (T,), {"dim": "collection"}),
    Case("fmr", _failed, (1.0,), {"failure_policy": "iso"}),
    Case("fnmr", _multi, (T,), {"dim": KEEP}),
    Case("fnmr", _failed, (T,), {"failure_policy": "nist"}),
    Case("det_curve", _multi, kwargs={"dim": KEEP, "points": "all"}),
    Case("det_curve", _failed, kwargs={"failure_policy": "nist"}),
    Case("roc_curve", _multi, kwargs={"dim": KEEP, "points": "all"}),
    Case("roc_curve", _failed, kwargs={"failure_policy": "iso"}),
    Case("eer", _multi, kwargs={"dim": KEEP, "method": "interpolated"}),
    Case("eer", _plain, kwargs={"convention": "bob"}),
    Case("eer", _plain, kwargs={"convention": "pyeer"}),
    Case("eer", _failed, kwargs={"method": "nearest", "failure_policy": "nist"}),
    Case("eer", _trials, kwargs={"dim": KEEP, "method": "fvc2000"}),
    Case("fnmr_at_fmr", _multi, ([0.05, 0.2],), {"dim": KEEP, "convention": "bob"}),
    Case("fnmr_at_fmr", _plain, ([0.01, 0.1],), {"convention": "pyeer"}),
    Case("fnmr_at_fmr", _failed, (0.1,), {"failure_policy": "nist"}),
    Case("fmr_at_fnmr", _multi, ([0.05, 0.2],), {"dim": KEEP}),
    Case("fmr_at_fnmr", _failed, (0.1,), {"failure_policy": "nist"}),
    # outcomes, identification
    Case("outcomes", _multi, kwargs={"ranks_only": True}),
    Case("cmc_curve", _multi, kwargs={"dim": KEEP, "max_rank": 3, "convention": "bob"}),
    Case("cmc_curve", _outcome_cube, kwargs={"max_rank": 4}),
    Case("identification_rate", _multi, (2,), {"dim": KEEP, "convention": "bob"}),
    Case("identification_rate", _plain, kwargs={"rank": 3}),
    Case("open_set_rates", _open_set, (T,), {"rank": 2, "dim": KEEP, "impostors": "all", "convention": "bob"}),
    Case("open_set_rates", _open_plain, (T,), {"impostors": "all"}),
    Case("open_set_curve", _open_set, kwargs={"rank": 2, "dim": KEEP, "impostors": "all", "convention": "bob"}),
    Case("open_set_curve", _open_plain, kwargs={"impostors": "all"}),
    # correlation, intervals
    Case("attempt_counts", _multi, (T,), {"by": "image", "dim": ("subject", "image"), "failure_policy": "nist"}),
    Case("attempt_counts", _failed, (T,), {"by": "probe_id", "failure_policy": "nist"}),
    Case("fnmr_interval", _grouped, ([1.5, 2.5],),
         {"by": "probe_id", "method": "clopper-pearson", "level": 0.8, "design": "binomial", "failure_policy": "nist"}),
    Case("fnmr_interval", _failed, ([1.5, 2.5],), {"method": "jeffreys", "failure_policy": "nist"}),
    Case("fnmr_interval", _multi, (T,), {"dim": KEEP, "level": 0.9}),
    Case("rates_interval", _rates,
         kwargs={"method": "clopper-pearson", "level": 0.8, "n_eff": {"fmr": 40, "fnmr": 25}}),
    Case("icc", _person_counts, kwargs={"dim": "person"}),
    Case("clustered_interval", _person_counts,
         kwargs={"method": "jeffreys", "level": 0.8, "design": "binomial", "dim": "person"}),
    Case("clustered_interval", _counts, kwargs={"level": 0.9}),
    # bootstrap
    Case("bootstrap_curve", _plain,
         kwargs={"thresholds": GRID, "level": 0.8, "two_level": True, "fmr_variance": "pigeonhole", **B}),
    Case("bootstrap_curve", _plain, kwargs={"interval": "percentile", **B}),
    Case("bootstrap_curve", _plain, kwargs={"simultaneous": True, **B}),
    Case("bootstrap_curve", _failed, kwargs={"failure_policy": "nist", "progress": True, **B}),
    Case("bootstrap_curve", _plain, kwargs={"unit": "probe", **B}),
    Case("fnmr_at_fmr_interval", _plain, ([0.05, 0.2],),
         {"thresholds": GRID, "level": 0.8, "two_level": True, "fmr_variance": "pigeonhole", "interval": "percentile",
          **B}),
    Case("fnmr_at_fmr_interval", _failed, (0.1,), {"failure_policy": "nist", "progress": True, **B}),
    Case("fnmr_at_fmr_interval", _plain, (0.1,), {"unit": "probe", **B}),
    Case("eer_interval", _plain,
         kwargs={"method": "interpolated", "thresholds": GRID, "level": 0.8, "two_level": True, **B}),
    Case("eer_interval", _plain, kwargs={"fmr_variance": "pigeonhole", "interval": "basic", **B}),
    Case("eer_interval", _plain, kwargs={"interval": "percentile", **B}),
    Case("eer_interval", _failed, kwargs={"convention": "bob", "failure_policy": "nist", "progress": True, **B}),
    Case("eer_interval", _plain, kwargs={"unit": "probe", **B}),
    Case("cmc_interval", _multi, kwargs={"max_rank": 3, "level": 0.8, "interval": "percentile", **B}),
    Case("cmc_interval", _multi, kwargs={"max_rank": 3, "simultaneous": True, **B}),
    Case("cmc_interval", _multi, kwargs={"max_rank": 3, "gallery_variance": False, **B}),
    Case("open_set_interval", _open_set, (T,),
         {"rank": 2, "impostors": "all", "level": 0.8, "interval": "percentile", **B}),
    Case("open_set_interval", _open_plain, (T,), {"impostors": "all", **B}),
    Case("open_set_interval", _open_plain, (T,), {"impostors": "all", "gallery_variance": False, **B}),
    # design
    Case("dichotomize", _outcome_cube, kwargs={"rank": 2, "ties": "fractional"}),
    Case("dichotomize", _outcome_cube, kwargs={"threshold": 2.5}),
    Case("design_study", _success, kwargs={
        "partition": ("subject", "image"), "trial_dim": "day", "m": 3, "n_collections": 12, "n_runs": 5,
        "design": "cluster", "randomize": "day", "cluster_draw": 0.5, "level": 0.9, "tolerance": 0.1, "seed": 5}),
    Case("design_study", _success_collection,
         kwargs={"m": 3, "n_collections": 12, "n_runs": 5, "design": "cluster", "seed": 5}),
    Case("design_test", _study),
    # generative
    *[
        Case(name, _training, (S,),
             {"sample_dim": "draw", "metric": "minkowski", "metric_kwargs": {"p": 3}, "block_size": 7})
        for name in ("specificity_generalisation", "generalisation", "specificity")
    ],
    *[
        Case(name, _training_sample, (S0,), {"metric": "cityblock", "block_size": 5})
        for name in ("specificity_generalisation", "generalisation", "specificity")
    ],
    # demographics
    Case("group_counts", _cohort, (T,), {"by": "probe_id", "group": "cohort"}),
    Case("group_counts", _multi, (T,), {"dim": KEEP}),
    Case("differential_test", _person_counts, kwargs={"group": "cohort", "dim": "person", **B}),
    Case("differential_test", _person_counts, kwargs={"group": "cohort", "null": "exchangeable", "dim": "person", **B}),
    Case("margin_of_error", _person_counts, kwargs={"group": "cohort", "null": "exchangeable", "level": 0.8, "dim": "person", **B}),
    Case("margin_of_error", _person_counts, kwargs={"group": "cohort", "level": 0.8, "dim": "person", **B}),
    Case("gini", _group_rates, kwargs={"dim": "cohort"}),
    Case("gini", _cohort_rates, kwargs={"dim": "cohort"}),
    Case("max_min_ratio", _group_rates, kwargs={"dim": "cohort"}),
    Case("best_per_subject", _gallery),
    # dev/eval
    Case("choose_threshold", _plain, kwargs={"criterion": "fmr", "value": [0.01, 0.1], "convention": "bob"}),
    Case("choose_threshold", _failed, kwargs={"criterion": "min-hter", "failure_policy": "nist"}),
    Case("dev_eval", _plain, (EV,), {"criterion": "weighted", "value": [0.3], "convention": "bob",
                                     "interval": "binomial", "level": 0.8}),
    Case("dev_eval", _failed, (EV,), {"failure_policy": "nist", **B}),
    Case("epc", _plain, (EV,), {"costs": [0.2, 0.7], "convention": "bob", "interval": "binomial", "level": 0.8}),
    Case("epc", _failed, (EV,), {"costs": 3, "interval": "subject", "failure_policy": "nist", **B}),
    # the summary table
    Case("summary", _plain, kwargs={"fmr": (0.05,), "fnmr": (0.2,), "eer_methods": ("nearest",),
                                    "identification": False, "level": 0.8, **B}),
    Case("summary", _open_plain, kwargs={"fpir": (0.1,), "eer_methods": (), "fmr": (), "fnmr": (), **B}),
    Case("summary", _failed, kwargs={"intervals": False, "failure_policy": "nist"}),
    # claims
    Case("claim_test", _plain, kwargs={"fmr": 0.05, "fnmr": 0.3, "level": 0.9, "method": "binomial"}),
    Case("claim_test", _plain, kwargs={"fmr": 0.05, "threshold": 1.5, "method": "subject", **B}),
    Case("claim_test", _failed, kwargs={"fnmr": 0.3, "threshold": 2.0, "failure_policy": "nist"}),
    # systems on the same subjects
    Case("paired_difference", _systems, ("fnmr_at_fmr",), {"fmr": [0.05, 0.2], "baseline": "B", "pairs": "all",
                                                          "adjust": "bonferroni", "level": 0.8, **B}),
    Case("paired_difference", _systems, kwargs={"method": "interpolated", **B}),
    Case("paired_difference", _systems, kwargs={"convention": "bob", **B}),
    Case("paired_difference", _systems, ("fmr",), {"threshold": 1.0, "fmr_variance": "pigeonhole", **B}),
    Case("paired_difference", _systems_renamed, kwargs={"dim": "matcher", **B}),
    Case("paired_difference", _systems_failed, ("fnmr",), {"threshold": 1.5, "failure_policy": "nist", **B}),
    Case("mcnemar_test", _systems, (1.5,), {"kind": "fnmr", "cluster": False, "baseline": "B", "pairs": "all",
                                            "adjust": "none"}),
    Case("mcnemar_test", _systems_failed, (1.5,), {"failure_policy": "nist"}),
    Case("mcnemar_test", _systems_renamed, (1.5,), {"dim": "matcher"}),
    Case("system_bands", _systems, kwargs={"level": 0.8, **B}),
    Case("system_bands", _systems_renamed, kwargs={"dim": "matcher", **B}),
    Case("system_bands", _systems_failed, kwargs={"failure_policy": "nist", **B}),
    # cost and calibration
    Case("dcf", _plain, kwargs={"p_target": [0.05, 0.2], "c_miss": 2.0, "c_fa": 3.0, "llr": True}),
    Case("dcf", _multi, kwargs={"dim": KEEP}),
    Case("dcf", _failed, kwargs={"failure_policy": "nist"}),
    Case("cllr", _plain, kwargs={"llr": True}),
    Case("cllr", _multi, kwargs={"dim": KEEP}),
    Case("cllr", _failed, kwargs={"failure_policy": "nist"}),
    Case("dcf_interval", _plain, kwargs={"p_target": 0.1, "c_miss": 2.0, "c_fa": 3.0, "llr": True, "level": 0.8,
                                         "nonmated_weights": "probe", "interval": "percentile", **B}),
    Case("dcf_interval", _failed, kwargs={"failure_policy": "nist", **B}),
    Case("cllr_interval", _plain, kwargs={"llr": True, "level": 0.8, "nonmated_weights": "probe",
                                          "interval": "percentile", **B}),
    Case("cllr_interval", _failed, kwargs={"failure_policy": "nist", **B}),
]


# --- running a case ---------------------------------------------------------


def _resolve(value):
    return value.factory() if isinstance(value, Later) else value


@dataclass
class Outcome:
    """What a call did: its result or its exception, its warnings, whether it drew a progress bar."""

    result: Any = None
    error: tuple | None = None
    warned: tuple = ()
    bar: bool = False

    def __repr__(self) -> str:  # short, so a failing comparison shows the xarray diff, not two whole results
        what = f"raised {self.error[0].__name__}" if self.error else f"returned {type(self.result).__name__}"
        return f"<Outcome: {what}, {len(self.warned)} warnings, bar={self.bar}>"


def _outcome(call) -> Outcome:
    out = Outcome()
    stderr = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(stderr):
        warnings.simplefilter("always")
        try:
            out.result = call()
        except Exception as exc:  # noqa: BLE001 - the exception is part of the outcome
            out.error = (type(exc), str(exc))
    out.warned = tuple((w.category, str(w.message)) for w in caught)
    out.bar = "bootstrap replicates" in stderr.getvalue()
    return out


def _same(a: Outcome, b: Outcome) -> bool:
    try:
        _assert_same(a, b)
    except AssertionError:
        return False
    return True


def _assert_same(got: Outcome, want: Outcome) -> None:
    assert got.error == want.error, f"exceptions differ: {got.error} != {want.error}"
    assert got.warned == want.warned, f"warnings differ: {got.warned} != {want.warned}"
    assert got.bar == want.bar, f"progress bar drawn: {got.bar} != {want.bar}"
    if want.error is None:
        assert type(got.result) is type(want.result)
        xr.testing.assert_identical(got.result, want.result)


def _via_accessor(case: Case) -> Outcome:
    args = [_resolve(a) for a in case.args]
    if isinstance(inspect.getattr_static(BioAccessor, case.member), property):
        return _outcome(lambda: getattr(case.obj().bio, case.member))
    return _outcome(lambda: getattr(case.obj().bio, case.member)(*args, **case.kwargs))


_FUNCTION_OUTCOMES: dict[int, Outcome] = {}  # id(case) -> the function's outcome, computed once


def _via_function(case: Case, named: dict | None = None) -> Outcome:
    """The function called as the case says, or with the arguments ``named`` (all by name) instead."""
    func = FUNCTIONS[case.member]
    if named is not None:
        return _outcome(lambda: func(case.obj(), **{k: _resolve(v) for k, v in named.items()}))
    if id(case) not in _FUNCTION_OUTCOMES:
        args = [_resolve(a) for a in case.args]
        _FUNCTION_OUTCOMES[id(case)] = _outcome(lambda: func(case.obj(), *args, **case.kwargs))
    return _FUNCTION_OUTCOMES[id(case)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_registered_case_matches_its_function(case):
    want = _via_function(case)
    _assert_same(_via_accessor(case), want)


# --- the meta-tests ---------------------------------------------------------


def _public_members():
    """Every public method and property of the accessor classes (both registrations are BioAccessor)."""
    classes = {type(xr.DataArray([0.0]).bio), type(xr.Dataset().bio)}
    out = {}
    for cls in classes:
        for name, value in inspect.getmembers(cls):
            if name.startswith("_"):
                continue
            static = inspect.getattr_static(cls, name)
            if inspect.isfunction(static) or isinstance(static, property):
                out[name] = static
    return out


def _defaulted(member):
    """(name, default) of the parameters with a default, after ``self``."""
    if isinstance(member, property):
        return []
    params = list(inspect.signature(member).parameters.values())[1:]
    return [(p.name, p.default) for p in params if p.default is not inspect.Parameter.empty]


def _bound(case: Case) -> dict:
    """The case's arguments by parameter name (positional ones too)."""
    member = inspect.getattr_static(BioAccessor, case.member)
    if isinstance(member, property):
        return {}
    arguments = inspect.signature(member).bind(None, *case.args, **case.kwargs).arguments
    return {k: v for k, v in arguments.items() if k != "self"}


def _is_default(value, default) -> bool:
    if value is default:
        return True
    if type(value) is not type(default):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def test_accessor_classes_are_the_registered_ones():
    assert type(xr.DataArray([0.0]).bio) is BioAccessor
    assert type(xr.Dataset().bio) is BioAccessor


def test_every_public_member_has_a_registered_case():
    public = set(_public_members())
    registered = {c.member for c in CASES}
    assert public - registered == set(), f"accessor members with no case: {sorted(public - registered)}"
    assert registered - public == set(), f"cases for members the accessor lacks: {sorted(registered - public)}"
    assert set(FUNCTIONS) == public, f"FUNCTIONS is out of date: {sorted(set(FUNCTIONS) ^ public)}"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_registered_function_is_the_one_the_docstring_names(name):
    doc = inspect.getdoc(getattr(BioAccessor, name)) or ""
    named = re.findall(r":func:`([\w.]+)`", doc)
    assert named, f"cube.bio.{name} does not say which function it calls"
    module, _, attr = named[0].rpartition(".")
    target = functools.reduce(getattr, module.split(".")[1:], bioxr)
    assert getattr(target, attr) is FUNCTIONS[name], f"cube.bio.{name} names {named[0]}"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_accessor_signature_is_its_functions_signature(name):
    # the same parameters after the object, in order, with the same kinds and defaults
    member = inspect.getattr_static(BioAccessor, name)
    if isinstance(member, property):
        return
    want = [(p.name, p.kind, p.default) for p in list(inspect.signature(FUNCTIONS[name]).parameters.values())[1:]]
    got = [(p.name, p.kind, p.default) for p in list(inspect.signature(member).parameters.values())[1:]]
    assert got == want


def _keyword_parameters():
    return [(name, p, d) for name, member in sorted(_public_members().items()) for p, d in _defaulted(member)]


@pytest.mark.parametrize("name, param, default", _keyword_parameters(),
                         ids=[f"{n}-{p}" for n, p, _ in _keyword_parameters()])
def test_every_keyword_is_given_a_non_default_value(name, param, default):
    given = [_bound(c)[param] for c in CASES if c.member == name and param in _bound(c)]
    assert any(not _is_default(v, default) for v in given), (
        f"no case calls cube.bio.{name} with {param} other than {default!r}: a dropped {param} would pass"
    )


@pytest.mark.parametrize("name, param, default", _keyword_parameters(),
                         ids=[f"{n}-{p}" for n, p, _ in _keyword_parameters()])
def test_every_keyword_changes_the_outcome_of_some_case(name, param, default):
    # the function with the parameter left at its default must differ from the case (result, error, warnings or
    # progress bar); else an accessor that drops it would still match the function
    for case in CASES:
        bound = _bound(case)
        if case.member != name or param not in bound or _is_default(bound[param], default):
            continue
        left_at_default = _via_function(case, {k: v for k, v in bound.items() if k != param})
        error = left_at_default.error
        broken = error and error[0] is TypeError and re.search(r"unexpected keyword|required positional", error[1])
        assert not broken, f"the probe call itself is broken: {error}"
        if not _same(left_at_default, _via_function(case)):
            return
    pytest.fail(f"no case of cube.bio.{name} changes its outcome through {param}: a dropped {param} would pass")
