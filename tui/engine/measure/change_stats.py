"""How much a measurement changed between two sets of runs (BASE and NEW), with a bootstrap interval.

The statistic is a ratio of medians: ``median(NEW) / median(BASE)`` of one quantity (compiled time,
eager time, host time per call), or of a ratio of medians on each side (the speedup,
``median(eager) / median(compiled)``, NEW's over BASE's). A side of several processes reads, as its median, the
geometric mean of its processes' own medians (:func:`_point`), as a ``--repeat`` row does; its interval reads the
resamples' pooled medians and is widened to hold the point where it does not. The two sides are independent
measurements, so each is resampled on its own (:func:`resample_side`): its worker processes with
replacement, then the units (interleaved block pairs) of each drawn process with replacement, as
:func:`tui.engine.measure.stats.bootstrap_speedup_processes` does for one side. With one process the draw
is of its units alone, and the interval holds only the noise within that process. Resample ``i``
of BASE and resample ``i`` of NEW give one ratio; the interval is the percentile interval of those
ratios (:func:`change_interval`).

A unit has several *channels* (eager times, compiled times, eager host time, compiled host
time, ...), each a list of samples, all resampled with the same weights, so one draw serves every
statistic of a side: the speedup keeps its block pairs, as a run's own interval does. Medians of a
resample are read from per-unit counts (:class:`tui.engine.measure.resample.ResampledMedian`), never by
sorting the samples again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from tui.engine.measure.stats import GRID_POINTS, MAX_UNITS, SpeedupCI, percentile, typical_medians

if TYPE_CHECKING:
    from tui.engine.measure.resample import Weights

__all__ = ["Unit", "SideDraws", "resample_side", "change_interval", "bootstrap_change", "ratio_of"]

Unit = Sequence[Sequence[float]]
"""One resampling unit: its samples of each channel (an interleaved block pair: eager, compiled, ...)."""

Medians = tuple["float | None", ...]
"""The median of each channel (None: the channel has no samples)."""


@dataclass(frozen=True)
class SideDraws:
    """One side's channel medians: of all its samples (``point``) and of each resample (``draws``).

    ``draws`` is empty when the side has fewer than two units (no interval can be drawn).
    """

    point: Medians
    draws: tuple[Medians, ...]
    processes: int
    """Processes that had a unit with samples."""
    units: int
    """Resampling units over all processes (after merging, see :func:`resample_side`)."""


def _merged(units: list[list[list[float]]], cap: int) -> list[list[list[float]]]:
    """At most ``cap`` units: runs of adjacent units joined (a longer block keeps drift inside it)."""
    if len(units) <= cap:
        return units
    size = math.ceil(len(units) / cap)
    channels = len(units[0])
    return [[list(chain.from_iterable(u[c] for u in units[start:start + size])) for c in range(channels)]
            for start in range(0, len(units), size)]


def _clean(processes: Sequence[Sequence[Unit]], channels: int, max_units: int) -> list[list[list[list[float]]]]:
    """Processes as lists of units with samples, each unit a list of ``channels`` float lists."""
    cleaned = []
    for process in processes:
        units = [[[float(x) for x in (unit[c] if c < len(unit) else ())] for c in range(channels)] for unit in process]
        units = [u for u in units if any(u)]
        if units:
            cleaned.append(units)
    cap = max(2, max_units // max(1, len(cleaned)))
    return [_merged(units, cap) for units in cleaned]


def resample_side(processes: Sequence[Sequence[Unit]], channels: int, resamples: int = 2000, seed: int = 0, *,
                  max_units: int = MAX_UNITS, grid_points: int = GRID_POINTS,
                  together: Sequence[Sequence[int]] = ()) -> SideDraws:
    """Every channel's median of one side, and of ``resamples`` hierarchical bootstrap resamples of it.

    ``processes[p][u][c]``: the samples of channel ``c`` in unit ``u`` of process ``p``. A
    resample draws as many processes as there are, then for each draw as many of its units as it
    has, both with replacement (one process: its units alone). A process keeps at most
    ``max(2, max_units // processes)`` units (adjacent ones merged). Deterministic for a ``seed``.
    ``together``: groups of channels whose point is read by one rule (:func:`_point`), such as a speedup's two.
    """
    if resamples < 1 or channels < 1:
        raise ValueError(f"resamples and channels must be >= 1, got {resamples} and {channels}")
    cleaned = _clean(processes, channels, max_units)
    flat = [unit for units in cleaned for unit in units]
    pooled = [sorted(chain.from_iterable(unit[c] for unit in flat)) for c in range(channels)]
    point = _point(cleaned, pooled, together)
    if len(flat) < 2:
        return SideDraws(point, (), len(cleaned), len(flat))
    # numpy loads with the first resample (see tui.engine.measure.stats)
    from tui.engine.measure.resample import draw_weights

    weights = draw_weights([len(units) for units in cleaned], resamples, seed)
    columns = [_channel_medians([unit[c] for unit in flat], pooled[c], grid_points, weights) for c in range(channels)]
    return SideDraws(point, tuple(zip(*columns, strict=True)), len(cleaned), len(flat))


def _point(cleaned: list[list[list[list[float]]]], pooled: list[list[float]],
           together: Sequence[Sequence[int]]) -> Medians:
    """A side's point, each channel's median: with several processes, the geometric mean of each process's own
    median (:func:`~tui.engine.measure.stats.typical_medians`, read for each group of ``together`` at once, the
    other channels alone), as a ``--repeat`` group's row reads it; the pooled samples' median where that rule has
    none (a process without the channel's samples, or a median at zero) and with one process. The pooled median
    alone is not the point: across processes at different levels it is a time none of them measured."""
    point: list[float | None] = [percentile(values, 50) if values else None for values in pooled]
    if len(cleaned) < 2:
        return tuple(point)
    grouped = {c for group in together for c in group}
    for group in [*together, *([c] for c in range(len(pooled)) if c not in grouped)]:
        own = [tuple(_median_of(units, c) for c in group) for units in cleaned]
        typical = typical_medians(own)
        if typical is not None:
            for channel, value in zip(group, typical, strict=True):
                point[channel] = value
    return tuple(point)


def _median_of(units: list[list[list[float]]], channel: int) -> float | None:
    values = sorted(chain.from_iterable(unit[channel] for unit in units))
    return percentile(values, 50) if values else None


def _channel_medians(groups: list[list[float]], pooled: list[float], grid_points: int,
                     weights: Weights) -> list[float | None]:
    """Each resample's median of one channel (None where the resample holds none of its samples)."""
    from tui.engine.measure.resample import ResampledMedian

    if not pooled:
        return [None] * len(weights)
    medians = ResampledMedian(groups, pooled, grid_points).medians(weights)
    return [None if math.isnan(m) else m for m in medians.tolist()]


def ratio_of(top: float | None, bottom: float | None) -> float | None:
    """``top / bottom``, None when either is missing or ``bottom`` is not positive."""
    if top is None or bottom is None or bottom <= 0:
        return None
    return top / bottom


def change_interval(base: SideDraws, new: SideDraws, statistic: Callable[[Medians], float | None],
                    confidence: float = 0.95) -> SpeedupCI:
    """``statistic(NEW) / statistic(BASE)`` with its percentile interval over paired resamples.

    ``statistic`` maps a side's channel medians to its value (a channel, or a ratio of two).
    No interval when a side has no resamples, or when fewer than half the resamples give a
    ratio; no point when a side's value is missing or BASE's is not positive.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    point = ratio_of(statistic(new.point), statistic(base.point))
    if point is None or not base.draws or not new.draws:
        return SpeedupCI(point, None, None)
    ratios = sorted(r for b, n in zip(base.draws, new.draws, strict=False)
                    if (r := ratio_of(statistic(n), statistic(b))) is not None)
    if len(ratios) < max(2, min(len(base.draws), len(new.draws)) // 2):
        return SpeedupCI(point, None, None)
    tail = (1 - confidence) / 2 * 100
    low, high = percentile(ratios, tail), percentile(ratios, 100 - tail)
    return SpeedupCI(point, min(low, point), max(high, point))  # the point held, as a group's is


def bootstrap_change(base: Sequence[Sequence[Iterable[float]]], new: Sequence[Sequence[Iterable[float]]],
                     resamples: int = 2000, confidence: float = 0.95, seed: int = 0, *,
                     max_units: int = MAX_UNITS) -> SpeedupCI:
    """``median(NEW) / median(BASE)`` of one quantity, each side given as processes of blocks.

    ``base[p]``: the blocks (lists of samples) of BASE's process ``p``; likewise ``new``. The
    sides are resampled independently (seeds ``seed`` and ``seed + 1``), hierarchically when a
    side has two or more processes. The one-channel case of :func:`resample_side` and
    :func:`change_interval`.
    """
    def sides(processes: Sequence[Sequence[Iterable[float]]], side_seed: int) -> SideDraws:
        units = [[(list(block),) for block in process] for process in processes]
        return resample_side(units, 1, resamples, side_seed, max_units=max_units)

    return change_interval(sides(base, seed), sides(new, seed + 1), lambda medians: medians[0], confidence)
