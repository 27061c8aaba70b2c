"""The ``.bio`` accessor: one thin door to bioxr's functions.

Registered on both :class:`xarray.DataArray` (score cubes) and
:class:`xarray.Dataset` (outcome cubes and results). ``__init__`` only stores
the object; every method is a one-line call of a topic function, which
validates its input. There is no logic here.
"""

from __future__ import annotations

import xarray as xr

from . import bootstrap as _bootstrap
from . import calibration as _calibration
from . import comparisons as _comparisons
from . import correlation as _correlation
from . import demographics as _demographics
from . import claims as _claims
from . import design as _design
from . import deveval as _deveval
from . import failures as _failures
from . import gallery as _gallery
from . import generative as _generative
from . import headline as _headline
from . import identification as _identification
from . import intervals as _intervals
from . import outcomes as _outcomes
from . import systems as _systems
from . import verification as _verification

__all__ = ["BioAccessor"]


class BioAccessor:
    """Biometric statistics on a score cube (``cube.bio``).

    Examples
    --------
    >>> import bioxr
    >>> cube = bioxr.simulate.gaussian(n_subjects=50, seed=3)
    >>> cube.bio.eer().attrs["eer_method"]
    'rocch'
    """

    def __init__(self, obj):
        self._obj = obj

    def to_comparisons(self) -> xr.Dataset:
        """The compared cells of a score cube as a comparison list; see :func:`bioxr.comparisons.to_comparisons`."""
        return _comparisons.to_comparisons(self._obj)

    def to_cube(self) -> xr.DataArray:
        """A dense score cube from a comparison list; see :func:`bioxr.comparisons.to_cube`."""
        return _comparisons.to_cube(self._obj)

    def failure_rates(self, *, level: float = 0.95, method: str = _intervals.DEFAULT_METHOD) -> xr.Dataset:
        """FTE and FTA with intervals; see :func:`bioxr.failures.failure_rates`."""
        return _failures.failure_rates(self._obj, level=level, method=method)

    def error_rates(self, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """FMR and FNMR with counts at thresholds; see :func:`bioxr.verification.error_rates`."""
        return _verification.error_rates(self._obj, threshold, dim=dim, failure_policy=failure_policy)

    def fmr(self, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """False match rate at thresholds; see :func:`bioxr.verification.fmr`."""
        return _verification.fmr(self._obj, threshold, dim=dim, failure_policy=failure_policy)

    def fnmr(self, threshold, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """False non-match rate at thresholds; see :func:`bioxr.verification.fnmr`."""
        return _verification.fnmr(self._obj, threshold, dim=dim, failure_policy=failure_policy)

    def det_curve(self, *, dim=None, points: str = "corners", failure_policy: str = "exclude") -> xr.Dataset:
        """Exact DET curve; see :func:`bioxr.verification.det_curve`."""
        return _verification.det_curve(self._obj, dim=dim, points=points, failure_policy=failure_policy)

    def roc_curve(self, *, dim=None, points: str = "corners", failure_policy: str = "exclude") -> xr.Dataset:
        """Exact ROC curve; see :func:`bioxr.verification.roc_curve`."""
        return _verification.roc_curve(self._obj, dim=dim, points=points, failure_policy=failure_policy)

    def eer(
        self, *, dim=None, method: str | None = None, convention: str = "bioxr", failure_policy: str = "exclude"
    ) -> xr.Dataset:
        """Equal error rate by a stated convention; see :func:`bioxr.verification.eer`."""
        return _verification.eer(
            self._obj, dim=dim, method=method, convention=convention, failure_policy=failure_policy
        )

    def fnmr_at_fmr(
        self, fmr, *, dim=None, convention: str = "bioxr", failure_policy: str = "exclude"
    ) -> xr.Dataset:
        """FNMR at FMR targets, exact; see :func:`bioxr.verification.fnmr_at_fmr`."""
        return _verification.fnmr_at_fmr(self._obj, fmr, dim=dim, convention=convention, failure_policy=failure_policy)

    def fmr_at_fnmr(self, fnmr, *, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """FMR at FNMR targets, exact; see :func:`bioxr.verification.fmr_at_fnmr`."""
        return _verification.fmr_at_fnmr(self._obj, fnmr, dim=dim, failure_policy=failure_policy)

    def outcomes(self, *, ranks_only: bool = False) -> xr.Dataset:
        """Per-probe outcome cube with Annex F ranks; see :func:`bioxr.outcomes.outcomes`."""
        return _outcomes.outcomes(self._obj, ranks_only=ranks_only)

    def cmc_curve(self, *, dim=None, max_rank: int | None = None, convention: str = "bioxr") -> xr.Dataset:
        """CMC with fractional ties; see :func:`bioxr.identification.cmc_curve`."""
        return _identification.cmc_curve(self._obj, dim=dim, max_rank=max_rank, convention=convention)

    def identification_rate(self, rank=1, *, dim=None, convention: str = "bioxr") -> xr.Dataset:
        """Rank-k identification rate; see :func:`bioxr.identification.identification_rate`."""
        return _identification.identification_rate(self._obj, rank, dim=dim, convention=convention)

    def open_set_rates(
        self, threshold, *, rank: int = 1, dim=None, impostors: str = "non-enrolled", convention: str = "bioxr"
    ) -> xr.Dataset:
        """DIR, FNIR and FPIR at thresholds; see :func:`bioxr.identification.open_set_rates`."""
        return _identification.open_set_rates(
            self._obj, threshold, rank=rank, dim=dim, impostors=impostors, convention=convention
        )

    def open_set_curve(
        self, *, rank: int = 1, dim=None, impostors: str = "non-enrolled", convention: str = "bioxr"
    ) -> xr.Dataset:
        """DIR against FPIR at every threshold; see :func:`bioxr.identification.open_set_curve`."""
        return _identification.open_set_curve(self._obj, rank=rank, dim=dim, impostors=impostors, convention=convention)

    def attempt_counts(self, threshold, *, by: str = "subject", dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """Per-individual errors and attempts; see :func:`bioxr.correlation.attempt_counts`."""
        return _correlation.attempt_counts(self._obj, threshold, by=by, dim=dim, failure_policy=failure_policy)

    def fnmr_interval(
        self, threshold, *, by: str = "subject", method: str = _intervals.DEFAULT_METHOD, level: float = 0.95,
        design: str = _correlation.DESIGNS[0], dim=None,
        failure_policy: str = "exclude",
    ) -> xr.Dataset:
        """FNMR with an interval for correlated attempts; see :func:`bioxr.correlation.fnmr_interval`."""
        return _correlation.fnmr_interval(self._obj, threshold, by=by, method=method, level=level, design=design, dim=dim,
                                          failure_policy=failure_policy)

    def rates_interval(self, *, method: str = _intervals.DEFAULT_METHOD, level: float = 0.95, n_eff=None) -> xr.Dataset:
        """Intervals for the rates of a result Dataset; see :func:`bioxr.intervals.rates_interval`."""
        return _intervals.rates_interval(self._obj, method=method, level=level, n_eff=n_eff)

    def icc(self, *, dim: str = "individual") -> xr.Dataset:
        """Intra-class correlation of per-individual counts; see :func:`bioxr.correlation.icc`."""
        return _correlation.icc(self._obj, dim=dim)

    def clustered_interval(
        self, *, method: str = _intervals.DEFAULT_METHOD, level: float = 0.95, design: str = _correlation.DESIGNS[0],
        dim: str = "individual"
    ) -> xr.Dataset:
        """Rate interval from per-individual counts; see :func:`bioxr.correlation.clustered_interval`."""
        return _correlation.clustered_interval(self._obj, method=method, level=level, design=design, dim=dim)

    def bootstrap_curve(
        self,
        *,
        thresholds=None,
        n_replicates: int = 2000,
        level: float = 0.95,
        seed=0,
        unit: str = "subject",
        two_level: bool = False,
        progress: bool = False,
        failure_policy: str = "exclude",
        fmr_variance: str = "moments",
        interval: str = "effective",
        simultaneous: bool = False,
    ) -> xr.Dataset:
        """Subject-bootstrap bands of FMR and FNMR; see :func:`bioxr.bootstrap.bootstrap_curve`."""
        return _bootstrap.bootstrap_curve(
            self._obj, thresholds=thresholds, n_replicates=n_replicates, level=level, seed=seed, unit=unit,
            two_level=two_level, progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance,
            interval=interval, simultaneous=simultaneous,
        )

    def fnmr_at_fmr_interval(
        self,
        fmr,
        *,
        thresholds=None,
        n_replicates: int = 2000,
        level: float = 0.95,
        seed=0,
        unit: str = "subject",
        two_level: bool = False,
        progress: bool = False,
        failure_policy: str = "exclude",
        fmr_variance: str = "moments",
        interval: str = "effective",
    ) -> xr.Dataset:
        """Bootstrap interval of FNMR at FMR targets; see :func:`bioxr.bootstrap.fnmr_at_fmr_interval`."""
        return _bootstrap.fnmr_at_fmr_interval(
            self._obj, fmr, thresholds=thresholds, n_replicates=n_replicates, level=level, seed=seed, unit=unit,
            two_level=two_level, progress=progress, failure_policy=failure_policy, fmr_variance=fmr_variance,
            interval=interval,
        )

    def eer_interval(
        self,
        *,
        method: str | None = None,
        convention: str = "bioxr",
        thresholds=None,
        n_replicates: int = 2000,
        level: float = 0.95,
        seed=0,
        unit: str = "subject",
        two_level: bool = False,
        progress: bool = False,
        failure_policy: str = "exclude",
        fmr_variance: str = "moments",
        interval: str = "corrected",
    ) -> xr.Dataset:
        """The EER with a subject-bootstrap interval; see :func:`bioxr.bootstrap.eer_interval`."""
        return _bootstrap.eer_interval(
            self._obj, method=method, convention=convention, thresholds=thresholds, n_replicates=n_replicates,
            level=level, seed=seed, unit=unit, two_level=two_level, progress=progress, failure_policy=failure_policy,
            fmr_variance=fmr_variance, interval=interval,
        )

    def cmc_interval(
        self, *, max_rank: int | None = None, n_replicates: int = 2000, level: float = 0.95, seed=0,
        interval: str = "effective", simultaneous: bool = False, gallery_variance: bool = True,
    ) -> xr.Dataset:
        """CMC with subject-bootstrap intervals; see :func:`bioxr.bootstrap.cmc_interval`."""
        return _bootstrap.cmc_interval(self._obj, max_rank=max_rank, n_replicates=n_replicates, level=level, seed=seed,
                                       interval=interval, simultaneous=simultaneous, gallery_variance=gallery_variance)

    def open_set_interval(
        self,
        threshold,
        *,
        rank: int = 1,
        impostors: str = "non-enrolled",
        n_replicates: int = 2000,
        level: float = 0.95,
        seed=0,
        interval: str = "effective",
        gallery_variance: bool = True,
    ) -> xr.Dataset:
        """DIR and FPIR with subject-bootstrap intervals; see :func:`bioxr.bootstrap.open_set_interval`."""
        return _bootstrap.open_set_interval(
            self._obj, threshold, rank=rank, impostors=impostors, n_replicates=n_replicates, level=level, seed=seed,
            interval=interval, gallery_variance=gallery_variance,
        )

    def choose_threshold(self, *, criterion: str = "eer", value=None, convention: str = "bioxr",
                         failure_policy: str = "exclude") -> xr.Dataset:
        """Thresholds chosen on these (development) scores; see :func:`bioxr.deveval.choose_threshold`."""
        return _deveval.choose_threshold(self._obj, criterion=criterion, value=value, convention=convention,
                                         failure_policy=failure_policy)

    def dev_eval(self, evaluation, *, criterion: str = "eer", value=None, convention: str = "bioxr",
                 interval: str = "subject", level: float = 0.95, n_replicates: int = 2000, seed=0,
                 failure_policy: str = "exclude") -> xr.Dataset:
        """These (development) scores' thresholds applied to ``evaluation``; see :func:`bioxr.deveval.dev_eval`."""
        return _deveval.dev_eval(self._obj, evaluation, criterion=criterion, value=value, convention=convention,
                                 interval=interval, level=level, n_replicates=n_replicates, seed=seed,
                                 failure_policy=failure_policy)

    def epc(self, evaluation, *, costs=11, convention: str = "bioxr", interval: str = "none", level: float = 0.95,
            n_replicates: int = 2000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
        """The expected performance curve on ``evaluation``; see :func:`bioxr.deveval.epc`."""
        return _deveval.epc(self._obj, evaluation, costs=costs, convention=convention, interval=interval, level=level,
                            n_replicates=n_replicates, seed=seed, failure_policy=failure_policy)

    def summary(self, *, fmr=_headline.FMR_TARGETS, fnmr=(0.01, 0.1), fpir=(0.01, 0.001),
                eer_methods=_headline.EER_METHODS, identification: bool = True, intervals: bool = True,
                level: float = 0.95, n_replicates: int = 1000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
        """Every headline number in one table; see :func:`bioxr.headline.summary`."""
        return _headline.summary(self._obj, fmr=fmr, fnmr=fnmr, fpir=fpir, eer_methods=eer_methods,
                                 identification=identification, intervals=intervals, level=level,
                                 n_replicates=n_replicates, seed=seed, failure_policy=failure_policy)

    def claim_test(self, *, fmr=None, fnmr=None, threshold=None, level: float = 0.8, method="auto",
                   n_replicates: int = 2000, seed=0, failure_policy: str = "exclude") -> xr.Dataset:
        """Test claims "FMR <= r" / "FNMR <= r" by one-sided bounds; see :func:`bioxr.claims.claim_test`."""
        return _claims.claim_test(self._obj, fmr=fmr, fnmr=fnmr, threshold=threshold, level=level, method=method,
                                  n_replicates=n_replicates, seed=seed, failure_policy=failure_policy)

    def paired_difference(self, statistic: str = "eer", *, dim: str = "system", baseline=None, pairs: str = "baseline",
                          method: str | None = None, convention: str = "bioxr", fmr=None, threshold=None,
                          n_replicates: int = 2000, level: float = 0.95, seed=0, adjust: str = "holm",
                          fmr_variance: str = "moments", failure_policy: str = "exclude") -> xr.Dataset:
        """Paired subject-bootstrap differences of systems; see :func:`bioxr.systems.paired_difference`."""
        return _systems.paired_difference(
            self._obj, statistic, dim=dim, baseline=baseline, pairs=pairs, method=method, convention=convention,
            fmr=fmr, threshold=threshold, n_replicates=n_replicates, level=level, seed=seed, adjust=adjust,
            fmr_variance=fmr_variance, failure_policy=failure_policy)

    def mcnemar_test(self, threshold, *, dim: str = "system", kind: str = "both", cluster: bool = True, baseline=None,
                     pairs: str = "baseline", adjust: str = "holm", failure_policy: str = "exclude") -> xr.Dataset:
        """McNemar's test on paired decisions of systems; see :func:`bioxr.systems.mcnemar_test`."""
        return _systems.mcnemar_test(self._obj, threshold, dim=dim, kind=kind, cluster=cluster, baseline=baseline,
                                     pairs=pairs, adjust=adjust, failure_policy=failure_policy)

    def system_bands(self, *, dim: str = "system", n_replicates: int = 1000, level: float = 0.95, seed=0,
                     failure_policy: str = "exclude", **options) -> xr.Dataset:
        """Each system's DET band, stacked; see :func:`bioxr.systems.system_bands`."""
        return _systems.system_bands(self._obj, dim=dim, n_replicates=n_replicates, level=level, seed=seed,
                                     failure_policy=failure_policy, **options)

    def dcf(self, *, p_target=0.01, c_miss=1.0, c_fa=1.0, llr: bool = False, dim=None,
            failure_policy: str = "exclude") -> xr.Dataset:
        """minDCF (and actDCF for LLR scores); see :func:`bioxr.calibration.dcf`."""
        return _calibration.dcf(self._obj, p_target=p_target, c_miss=c_miss, c_fa=c_fa, llr=llr, dim=dim,
                                failure_policy=failure_policy)

    def cllr(self, *, llr: bool = False, dim=None, failure_policy: str = "exclude") -> xr.Dataset:
        """minCllr (and Cllr for LLR scores); see :func:`bioxr.calibration.cllr`."""
        return _calibration.cllr(self._obj, llr=llr, dim=dim, failure_policy=failure_policy)

    def dcf_interval(self, *, p_target=0.01, c_miss=1.0, c_fa=1.0, llr: bool = False, n_replicates: int = 2000,
                     level: float = 0.95, seed=0, nonmated_weights: str = "pigeonhole", interval: str = "corrected",
                     failure_policy: str = "exclude") -> xr.Dataset:
        """minDCF and actDCF with subject-bootstrap intervals; see :func:`bioxr.calibration.dcf_interval`."""
        return _calibration.dcf_interval(self._obj, p_target=p_target, c_miss=c_miss, c_fa=c_fa, llr=llr,
                                         n_replicates=n_replicates, level=level, seed=seed,
                                         nonmated_weights=nonmated_weights, interval=interval,
                                         failure_policy=failure_policy)

    def cllr_interval(self, *, llr: bool = False, n_replicates: int = 2000, level: float = 0.95, seed=0,
                      nonmated_weights: str = "pigeonhole", interval: str = "corrected",
                      failure_policy: str = "exclude") -> xr.Dataset:
        """minCllr and Cllr with subject-bootstrap intervals; see :func:`bioxr.calibration.cllr_interval`."""
        return _calibration.cllr_interval(self._obj, llr=llr, n_replicates=n_replicates, level=level, seed=seed,
                                          nonmated_weights=nonmated_weights, interval=interval,
                                          failure_policy=failure_policy)

    def dichotomize(self, *, rank=None, threshold=None, ties: str = "strict") -> xr.DataArray:
        """Binary success per probe; see :func:`bioxr.design.dichotomize`."""
        return _design.dichotomize(self._obj, rank=rank, threshold=threshold, ties=ties)

    def design_study(
        self,
        *,
        partition=("subject",),
        trial_dim: str = "collection",
        m: int = 4,
        n_collections: int = 180,
        n_runs: int = 30,
        design: str = "stratified",
        randomize=None,
        cluster_draw=None,
        level: float = 0.95,
        tolerance: float = 0.05,
        seed=0,
    ) -> xr.Dataset:
        """Micheals-Boult design study; see :func:`bioxr.design.design_study`."""
        return _design.design_study(
            self._obj, partition=partition, trial_dim=trial_dim, m=m, n_collections=n_collections, n_runs=n_runs,
            design=design, randomize=randomize, cluster_draw=cluster_draw, level=level, tolerance=tolerance, seed=seed,
        )

    def design_test(self) -> xr.Dataset:
        """F test of a design study; see :func:`bioxr.design.design_test`."""
        return _design.design_test(self._obj)

    def specificity_generalisation(
        self, synthetic, *, sample_dim="sample", metric="euclidean", metric_kwargs=None, block_size=None
    ) -> xr.Dataset:
        """Specificity and generalisation against synthetic samples; see :func:`bioxr.generative.specificity_generalisation`."""
        return _generative.specificity_generalisation(
            self._obj, synthetic, sample_dim=sample_dim, metric=metric, metric_kwargs=metric_kwargs,
            block_size=block_size,
        )

    def generalisation(
        self, synthetic, *, sample_dim="sample", metric="euclidean", metric_kwargs=None, block_size=None
    ) -> xr.Dataset:
        """Generalisation of a model to these training samples; see :func:`bioxr.generative.generalisation`."""
        return _generative.generalisation(
            self._obj, synthetic, sample_dim=sample_dim, metric=metric, metric_kwargs=metric_kwargs,
            block_size=block_size,
        )

    def specificity(
        self, synthetic, *, sample_dim="sample", metric="euclidean", metric_kwargs=None, block_size=None
    ) -> xr.Dataset:
        """Specificity of a model's synthetic samples; see :func:`bioxr.generative.specificity`."""
        return _generative.specificity(
            self._obj, synthetic, sample_dim=sample_dim, metric=metric, metric_kwargs=metric_kwargs,
            block_size=block_size,
        )

    def group_counts(self, threshold, *, by: str = "subject", group: str = "group", dim=None) -> xr.Dataset:
        """Per-individual errors and attempts with each one's group; see :func:`bioxr.demographics.group_counts`."""
        return _demographics.group_counts(self._obj, threshold, by=by, group=group, dim=dim)

    def differential_test(
        self, *, group: str = "group", null: str = "equal-rate", n_replicates: int = 2000, seed=0,
        dim: str = "individual"
    ) -> xr.Dataset:
        """Bootstrap test of equal FNMR across groups; see :func:`bioxr.demographics.differential_test`."""
        return _demographics.differential_test(self._obj, group=group, null=null, n_replicates=n_replicates, seed=seed,
                                               dim=dim)

    def margin_of_error(
        self, *, group: str = "group", null: str = "equal-rate", level: float = 0.95, n_replicates: int = 2000, seed=0,
        dim: str = "individual"
    ) -> xr.Dataset:
        """Margin of error of group FNMRs around the pooled FNMR; see :func:`bioxr.demographics.margin_of_error`."""
        return _demographics.margin_of_error(
            self._obj, group=group, null=null, level=level, n_replicates=n_replicates, seed=seed, dim=dim
        )

    def gini(self, *, dim: str = "group") -> xr.DataArray:
        """Gini coefficient of group rates; see :func:`bioxr.demographics.gini`."""
        return _demographics.gini(self._obj, dim=dim)

    def max_min_ratio(self, *, dim: str = "group") -> xr.Dataset:
        """Highest over lowest group rate; see :func:`bioxr.demographics.max_min_ratio`."""
        return _demographics.max_min_ratio(self._obj, dim=dim)

    def best_per_subject(self) -> xr.DataArray:
        """Multi-template cube; see :func:`bioxr.gallery.best_per_subject`."""
        return _gallery.best_per_subject(self._obj)


xr.register_dataarray_accessor("bio")(BioAccessor)
xr.register_dataset_accessor("bio")(BioAccessor)
