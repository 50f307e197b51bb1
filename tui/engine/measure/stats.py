"""Summary statistics, and a bootstrap interval of the speedup (resampled with numpy).

Percentiles use linear interpolation between closest ranks, the same rule as numpy's
default (``method="linear"``): for ``n`` sorted values the ``q``-th percentile sits at
position ``h = (n - 1) * q / 100``; with ``i = floor(h)`` it is
``v[i] + (h - i) * (v[i + 1] - v[i])``. The median is the 50th percentile, ``q1``/``q3``
the 25th/75th, ``iqr = q3 - q1``. ``std`` is the sample standard deviation (n - 1 in the
denominator), ``None`` for fewer than two samples.

The speedup is ``median(all eager samples) / median(all compiled samples)``. Its interval
comes from a block bootstrap (:func:`bootstrap_speedup`): the worker measures eager and
compiled in alternating blocks, so block ``i`` of each side forms a pair, and pairs are
resampled together, with replacement, to keep what drift and thermal state did to both
sides at that moment. Each resample recomputes the ratio of pooled medians; the interval
is the percentile interval of those ratios. A speedup is *significant* when its interval
excludes 1.

Across worker processes (``--repeat``), :func:`bootstrap_speedup_processes` resamples in two
levels: processes with replacement, then the block pairs of each drawn process with
replacement (hierarchical bootstrap), so the interval holds what changes from one process to
the next (host time of a launch-bound model, clocks, caches, memory layout) as well as the
noise within each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import chain
from typing import Any, NamedTuple

from tui.typed import decode_fields

__all__ = [
    "Stats", "Moments", "SampleAccumulator", "SpeedupCI", "percentile", "median", "summarize", "summarize_sorted",
    "bootstrap_speedup", "bootstrap_speedup_processes", "geometric_mean", "typical_medians", "is_significant",
    "MAX_UNITS", "GRID_POINTS", "BOOTSTRAP_RESAMPLES",
]  # fmt: skip

BOOTSTRAP_RESAMPLES = 2000
"""Rounds of the bootstrap behind every speedup interval: a run's, the worker's running one, compare's."""

MAX_UNITS = 200
"""Most resampling units of :func:`bootstrap_speedup`; adjacent block pairs are merged above it."""

GRID_POINTS = 1024
"""Above this many distinct values a side's resampled medians are read from a quantile grid."""


@dataclass(frozen=True)
class Stats:
    """Summary of one set of samples (milliseconds in compile-lab, but any unit works)."""

    n: int
    median: float
    mean: float
    std: float | None
    min: float
    max: float
    p10: float
    p90: float
    q1: float
    q3: float
    iqr: float

    @property
    def relative_iqr(self) -> float | None:
        """IQR / median (the spread measure behind the stability warning); None when median is 0."""
        return self.iqr / self.median if self.median else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored, a missing one raises KeyError."""
        return cls(**{f.name: data[f.name] for f in fields(cls)})

    def to_json(self) -> dict[str, Any]:
        """The same as :meth:`to_dict` (the name :mod:`tui.typed` looks for)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Stats:
        """Rebuild from JSON, checking every field (FieldError when one is missing or wrong)."""
        return decode_fields(cls, data, where="stats")[0]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already sorted values, by linear interpolation."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    h = (n - 1) * q / 100
    i = math.floor(h)
    if i >= n - 1:
        return float(sorted_values[-1])
    low = sorted_values[i]
    return float(low + (h - i) * (sorted_values[i + 1] - low))


def median(values: Iterable[float]) -> float:
    """The median of any iterable of numbers (ValueError when empty)."""
    return percentile(sorted(values), 50)


@dataclass
class Moments:
    """Count, mean and sum of squared deviations, combinable block by block (Chan et al.)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, values: Iterable[float]) -> None:
        """Fold a batch of values in (two-pass within the batch, stable combination across batches)."""
        batch = values if isinstance(values, (list, tuple)) else list(values)
        count = len(batch)
        if not count:
            return
        batch_mean = math.fsum(batch) / count
        batch_m2 = math.fsum((x - batch_mean) ** 2 for x in batch)
        total = self.n + count
        delta = batch_mean - self.mean
        self.mean += delta * count / total
        self.m2 += batch_m2 + delta * delta * self.n * count / total
        self.n = total

    @property
    def std(self) -> float | None:
        """Sample standard deviation (n - 1), None below two values."""
        if self.n < 2:
            return None
        return math.sqrt(max(self.m2, 0.0) / (self.n - 1))


def summarize_sorted(sorted_values: Sequence[float], moments: Moments | None = None) -> Stats:
    """:class:`Stats` of values that are already sorted; pass their ``moments`` to skip a pass."""
    if not sorted_values:
        raise ValueError("summarize of no values")
    if moments is None or moments.n != len(sorted_values):
        moments = Moments()
        moments.add(sorted_values)
    q1 = percentile(sorted_values, 25)
    q3 = percentile(sorted_values, 75)
    return Stats(
        n=len(sorted_values),
        median=percentile(sorted_values, 50),
        mean=moments.mean,
        std=moments.std,
        min=float(sorted_values[0]),
        max=float(sorted_values[-1]),
        p10=percentile(sorted_values, 10),
        p90=percentile(sorted_values, 90),
        q1=q1,
        q3=q3,
        iqr=q3 - q1,
    )


def summarize(samples: Iterable[float]) -> Stats:
    """:class:`Stats` of any iterable of numbers (ValueError when empty)."""
    return summarize_sorted(sorted(float(x) for x in samples))


class SampleAccumulator:
    """Samples that arrive in batches, summarised cheaply and repeatedly (a live run).

    :meth:`add` only keeps a reference. :meth:`stats` sorts what arrived since the last
    call and merges it into the sorted list (Timsort merges two sorted runs in linear
    time), and folds it into running :class:`Moments`; the result is cached until the
    next :meth:`add`.
    """

    def __init__(self) -> None:
        self._sorted: list[float] = []
        self._pending: list[Iterable[float]] = []
        self._moments = Moments()
        self._stats: Stats | None = None

    def add(self, values: Iterable[float]) -> None:
        """Queue a batch of values (kept by reference until the next :meth:`stats`)."""
        self._pending.append(values)
        self._stats = None

    def _merge(self) -> None:
        if not self._pending:
            return
        new = sorted(chain.from_iterable(self._pending))
        self._pending = []
        self._moments.add(new)
        self._sorted += new
        self._sorted.sort()

    @property
    def sorted_values(self) -> list[float]:
        """Every value so far, sorted (do not modify)."""
        self._merge()
        return self._sorted

    def __len__(self) -> int:
        self._merge()
        return len(self._sorted)

    def stats(self) -> Stats | None:
        """Stats of everything added so far, or None when nothing was."""
        if self._stats is None:
            self._merge()
            if self._sorted:
                self._stats = summarize_sorted(self._sorted, self._moments)
        return self._stats


class SpeedupCI(NamedTuple):
    """``(point, low, high)`` of a speedup; None where it cannot be computed."""

    point: float | None
    low: float | None
    high: float | None

    @property
    def significant(self) -> bool | None:
        """True when the interval excludes 1 (None without an interval)."""
        return is_significant(self.low, self.high)


def is_significant(low: float | None, high: float | None) -> bool | None:
    """True when the interval [low, high] excludes 1, None when there is no interval."""
    if low is None or high is None:
        return None
    return not (low <= 1.0 <= high)


def _as_floats(block: Iterable[float]) -> list[float]:
    return [float(x) for x in block]


def bootstrap_speedup(
    eager_blocks: Sequence[Iterable[float]],
    compiled_blocks: Sequence[Iterable[float]],
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    *,
    max_units: int = MAX_UNITS,
    grid_points: int = GRID_POINTS,
) -> SpeedupCI:
    """Speedup ``median(eager) / median(compiled)`` with a block-bootstrap percentile interval.

    Block ``i`` of ``eager_blocks`` and block ``i`` of ``compiled_blocks`` form one
    resampling unit (a side missing block ``i``, e.g. mid-run, contributes nothing to that
    unit). Each of ``resamples`` rounds draws as many units as there are, with
    replacement, pools each side's samples of the drawn units and takes the ratio of the
    pooled medians; ``low``/``high`` are the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` percentiles of those ratios (linear interpolation).

    Cost control, so 200,000 samples take well under a second:

    * more than ``max_units`` units are merged into ``max_units`` runs of adjacent units
      (a longer bootstrap block: it keeps slow drift inside a unit, which widens the
      interval rather than narrowing it);
    * pooled medians are not recomputed from the samples but read from per-unit counts
      on a grid of values (exact up to ``grid_points`` distinct values per side,
      interpolated within one grid cell above that).

    The point estimate always uses every sample exactly. Deterministic for a given
    ``seed``. With fewer than two units, or an empty side, ``low``/``high`` are None
    (and ``point`` is None when a side is empty or the compiled median is not positive).
    """
    _check_bootstrap_args(resamples, confidence, max_units, grid_points)
    eager = [_as_floats(b) for b in eager_blocks]
    compiled = [_as_floats(b) for b in compiled_blocks]
    all_eager = sorted(chain.from_iterable(eager))
    all_compiled = sorted(chain.from_iterable(compiled))
    if not all_eager or not all_compiled:
        return SpeedupCI(None, None, None)
    denominator = percentile(all_compiled, 50)
    if denominator <= 0:
        return SpeedupCI(None, None, None)
    point = percentile(all_eager, 50) / denominator
    pairs = _units(eager, compiled, max_units)
    if len(pairs) < 2:
        return SpeedupCI(point, None, None)
    ratios = _ratios(pairs, all_eager, all_compiled, [len(pairs)], resamples, seed, grid_points)
    return _percentile_interval(point, ratios, resamples, confidence)


def _percentile_interval(point: float, ratios: list[float], resamples: int, confidence: float) -> SpeedupCI:
    """The percentile interval of sorted ``ratios``; none when most resamples had no ratio."""
    # A side that is missing from most units (a run cut short) leaves too few usable ratios.
    if len(ratios) < max(2, resamples // 2):
        return SpeedupCI(point, None, None)
    tail = (1 - confidence) / 2 * 100
    return SpeedupCI(point, percentile(ratios, tail), percentile(ratios, 100 - tail))


def _check_bootstrap_args(resamples: int, confidence: float, max_units: int, grid_points: int) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if max_units < 2 or grid_points < 2:
        raise ValueError("max_units and grid_points must be >= 2")


def _units(
    eager: list[list[float]], compiled: list[list[float]], max_units: int
) -> list[tuple[list[float], list[float]]]:
    """Block pairs (eager i, compiled i) with samples, merged into at most ``max_units`` runs of adjacent pairs."""
    pairs = [
        (eager[i] if i < len(eager) else [], compiled[i] if i < len(compiled) else [])
        for i in range(max(len(eager), len(compiled)))
    ]
    pairs = [p for p in pairs if p[0] or p[1]]
    if len(pairs) <= max_units:
        return pairs
    size = math.ceil(len(pairs) / max_units)
    return [
        (
            list(chain.from_iterable(p[0] for p in pairs[start : start + size])),
            list(chain.from_iterable(p[1] for p in pairs[start : start + size])),
        )
        for start in range(0, len(pairs), size)
    ]


def geometric_mean(values: Sequence[float]) -> float | None:
    """exp(mean(log v)) of positive ``values``; None when there are none or one is not positive."""
    if not values or min(values) <= 0:
        return None
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def typical_medians(per_process: Sequence[Sequence[float | None]]) -> tuple[float, ...] | None:
    """Several processes' value of each of a few quantities read together (eager and compiled, say): the geometric
    mean of the processes' own medians, quantity by quantity. None unless every process has every one, positive:
    the caller then reads its samples pooled for all of them, so a ratio of two never mixes the two rules. One rule
    for a ``--repeat`` group's row, its speedup and compare's sides (docs/METHOD.md, "Several processes")."""
    if not per_process or any(m is None or m <= 0 for medians in per_process for m in medians):
        return None
    columns = zip(*per_process, strict=True)
    return tuple(geometric_mean([m for m in column if m is not None]) or 0.0 for column in columns)


def bootstrap_speedup_processes(processes: Sequence[tuple[Sequence[Iterable[float]], Sequence[Iterable[float]]]],
                                resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = 0.95, seed: int = 0, *,
                                max_units: int = MAX_UNITS, grid_points: int = GRID_POINTS) -> SpeedupCI:
    """Speedup of every process's samples pooled, with a hierarchical bootstrap interval.

    ``processes[p]``: ``(eager_blocks, compiled_blocks)`` of one worker process, its block pairs
    the units of :func:`bootstrap_speedup` (at most ``max(2, max_units // processes)`` each).
    A resample draws as many processes as there are, then for each draw as many of its units
    as it has, both with replacement, and takes the ratio of the pooled medians. Within-process
    noise then counts about twice when processes do not differ (about 1.4x the interval of the
    pooled blocks: conservative); with two or three processes the interval is hardly wider than
    their spread. ``point``: median(all eager) / median(all compiled); no interval below two
    processes with blocks. Deterministic for a given ``seed``.
    """
    _check_bootstrap_args(resamples, confidence, max_units, grid_points)
    per_process = [([_as_floats(b) for b in e], [_as_floats(b) for b in c]) for e, c in processes]
    all_eager = sorted(chain.from_iterable(chain.from_iterable(e for e, _ in per_process)))
    all_compiled = sorted(chain.from_iterable(chain.from_iterable(c for _, c in per_process)))
    if not all_eager or not all_compiled or percentile(all_compiled, 50) <= 0:
        return SpeedupCI(None, None, None)
    point = percentile(all_eager, 50) / percentile(all_compiled, 50)
    cap = max(2, max_units // max(1, len(per_process)))
    unit_lists = [units for e, c in per_process if (units := _units(e, c, cap))]
    if len(unit_lists) < 2:
        return SpeedupCI(point, None, None)
    flat = [pair for units in unit_lists for pair in units]
    sizes = [len(units) for units in unit_lists]
    ratios = _ratios(flat, all_eager, all_compiled, sizes, resamples, seed, grid_points)
    return _percentile_interval(point, ratios, resamples, confidence)


def _ratios(units: list[tuple[list[float], list[float]]], all_eager: list[float], all_compiled: list[float],
            sizes: list[int], resamples: int, seed: int, grid_points: int) -> list[float]:
    """Sorted ratios of pooled medians, one per resample (:func:`~tui.engine.measure.resample.draw_weights`)
    that has one.

    ``units``: every process's units in order, ``sizes[p]`` of them for process ``p``.
    """
    # numpy loads with the first bootstrap, not with this module: the app imports it at start.
    import numpy as np

    from tui.engine.measure.resample import ResampledMedian, draw_weights

    weights = draw_weights(sizes, resamples, seed)
    top = ResampledMedian([u[0] for u in units], all_eager, grid_points).medians(weights)
    bottom = ResampledMedian([u[1] for u in units], all_compiled, grid_points).medians(weights)
    usable = ~np.isnan(top) & (bottom > 0)  # NaN compares False: an empty side is never usable
    ratios: list[float] = np.sort(top[usable] / bottom[usable]).tolist()
    return ratios
