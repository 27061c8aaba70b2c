"""The ``.bio`` accessor is a thin door: each method returns exactly what its
function returns."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import xarray as xr

import bioxr
from bioxr import outcomes, simulate, verification
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
                 "comparisons", "failures")
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
