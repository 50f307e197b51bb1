"""Every threshold of the verdict, in one place: the run's, a --repeat group's, compare's and the summary's warnings.

:class:`VerdictPolicy` holds the ones a user may change (``--noise-threshold`` for ``threshold``,
``--noise-limit NAME=VALUE`` for the others, :data:`LIMIT_NAMES`); the module constants are fixed.
The values come from calibration: ``benchmarks/calibrate.py`` collects runs of fixed
configurations on a quiet and a loaded machine and judges them under each rule set;
docs/BENCHMARKS.md ("Calibrating the verdict") has the figures behind each value, and
:mod:`tui.engine.measure.verdict` says what each one decides.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from tui.typed import JsonRecord

__all__ = [
    "VerdictPolicy", "LIMIT_NAMES", "MIN_IQR_SHARE", "DRIFT_TREND_Z", "DRIFT_POINTS", "STALL_SHIFT_SHARE",
    "MIN_INTERVAL_BLOCKS", "MIN_SAMPLES", "LAUNCH_BOUND_RATIO",
]  # fmt: skip


@dataclass(frozen=True)
class VerdictPolicy(JsonRecord):
    """The thresholds a user may change (:mod:`tui.engine.measure.verdict` says what each one decides).

    ``threshold``: t, the smallest change the words claim. Make a run ``noisy``:
    ``max_drift`` (the speedup's drift across the run, when its ends read different words; in ``compare``, any),
    ``stall_factor`` (a sample this many times its side's median is a stall; it makes a run noisy
    only when it moves the median),
    ``max_other_cpu_cores`` (other processes' CPU use while measuring). Give a note only:
    ``max_relative_iqr`` (a side's IQR/median), ``max_severe_outlier_share`` (a side's samples
    beyond the 3-IQR fence), ``max_interval_ratio`` (the interval's hi/lo).
    """

    threshold: float = 0.02
    max_relative_iqr: float = 0.10
    max_interval_ratio: float = 1.25
    max_severe_outlier_share: float = 0.05
    max_drift: float = 0.10
    stall_factor: float = 100.0
    max_other_cpu_cores: float = 0.5

    @classmethod
    def of(cls, threshold: float | None = None, limits: dict[str, float] | None = None) -> VerdictPolicy:
        """The defaults with ``threshold`` (t) and any of the other limits replaced (checked by RunOptions)."""
        changes = {k: float(v) for k, v in (limits or {}).items() if k in LIMIT_NAMES}
        if threshold is not None:
            changes["threshold"] = float(threshold)
        return replace(cls(), **changes) if changes else cls()


LIMIT_NAMES = tuple(f.name for f in fields(VerdictPolicy) if f.name != "threshold")
"""The limits ``--noise-limit NAME=VALUE`` (``RunOptions.noise_limits``) may change."""

MIN_IQR_SHARE = 0.03
"""Outlier fences use an IQR of at least this share of the median (``SideSeries.outliers``).

The severe fence thus lies at least 9% of the median beyond a quartile: a side whose times are
mostly one value (a short kernel on a clock that ticks in 0.5 us steps) has an IQR near 0, and
the first call of each block, a few percent slower after the other side ran, is a systematic
cost of interleaving that the median ignores, not noise."""

DRIFT_TREND_Z = 2.58
"""Drift needs a trend: Kendall's S of the block medians (or the block pairs' ratios) against their
order beyond this many standard deviations (two-sided p < 0.01 with no trend). Quarters that differ
by the blocks' scatter alone are not drift (the interval carries scatter); below six blocks no order
reaches it, so the default five block pairs are never drift."""

DRIFT_POINTS = 64
"""The trend test merges more blocks than this into runs of adjacent ones (cost O(points squared))."""

STALL_SHIFT_SHARE = 0.5
"""A stall makes a run noisy when leaving its samples out moves its side's median by more than
this share of the threshold t (half of it: the rest of the band is the interval's)."""

MIN_INTERVAL_BLOCKS = 4
"""Fewer block pairs give no interval: with n pairs the most extreme resample has probability
n**-n, and only from n = 4 (1/256) is that below the 2.5% each tail of a 95% interval needs."""

MIN_SAMPLES = 10
"""A side with fewer measured iterations gets a warning to raise iters."""

LAUNCH_BOUND_RATIO = 1.25
"""Device-time clocks: a side whose host median exceeds its iter median by this factor makes the
run launch-bound, and its host-inclusive speedup gets a verdict of its own."""
