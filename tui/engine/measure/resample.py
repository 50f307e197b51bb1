"""Bootstrap resampling in numpy: hierarchical unit draws and the pooled medians they give.

A resample is a row of integer *weights*, one per resampling unit: how many times the unit was
drawn. :func:`draw_weights` draws ``resamples`` rows at once (processes with replacement, then
the units of each drawn process with replacement). :class:`ResampledMedian` reads the median of
the weighted union of the units' samples for every row at once, from per-unit cumulative counts
on a grid of values, without pooling or sorting samples again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["draw_weights", "ResampledMedian"]

Weights = npt.NDArray[np.int64]
"""``(resamples, units)``: how many times each unit was drawn in each resample."""


def draw_weights(sizes: Sequence[int], resamples: int, seed: int) -> Weights:
    """Unit weights of ``resamples`` hierarchical draws; ``sizes[p]``: the units of process ``p``.

    A draw picks as many processes as there are, with replacement; a process picked ``c`` times
    then draws ``c`` times its number of units from its own units, with replacement (``c``
    independent draws of its units are one draw of ``c`` times as many). With one process this is
    the plain bootstrap of its units. Columns follow the processes' units in order. The same
    ``seed`` gives the same weights (numpy's PCG64 stream for a given numpy version).
    """
    rng = np.random.default_rng(seed)
    processes = len(sizes)
    times = rng.multinomial(processes, np.full(processes, 1 / processes), size=resamples)
    return np.hstack([rng.multinomial(times[:, p] * n, np.full(n, 1 / n)) for p, n in enumerate(sizes)])


class ResampledMedian:
    """Medians of a weighted union of sample groups, for many weight rows at once.

    Keeps, for a grid of values, how many samples of each group are <= each grid value. Under
    weights ``w`` the pooled count <= ``grid[k]`` is ``w @ counts[:, k]``, and each row's median
    is found by bisecting the grid (all rows together). When a side has at most ``grid_points``
    distinct values the grid is every distinct value and the median is exact; otherwise the grid
    holds evenly spaced order statistics and the median is interpolated linearly inside its grid
    cell (an error well below the spacing of neighbouring grid values).
    """

    def __init__(self, groups: Sequence[Sequence[float]], pooled: Sequence[float], grid_points: int) -> None:
        """``pooled`` is every value of every group, sorted."""
        values = np.asarray(pooled, dtype=np.float64)
        distinct = np.unique(values)
        self.exact = distinct.size <= grid_points
        self.grid: npt.NDArray[np.float64] = distinct
        if not self.exact:
            ranks = np.round(np.arange(grid_points) * (values.size - 1) / (grid_points - 1)).astype(np.intp)
            self.grid = np.unique(values[ranks])
        sizes = [len(group) for group in groups]
        self.sizes = np.asarray(sizes, dtype=np.int64)
        # Each value counts for every grid value >= it: histogram of the first such grid index, then cumulate.
        cells = np.searchsorted(self.grid, np.fromiter((x for g in groups for x in g), np.float64, sum(sizes)))
        flat = np.repeat(np.arange(len(sizes)), sizes) * self.grid.size + cells
        histogram = np.bincount(flat, minlength=len(sizes) * self.grid.size).reshape(len(sizes), self.grid.size)
        self.counts = histogram.cumsum(axis=1)

    def _count(self, weights: Weights, k: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """Each row's pooled count <= ``grid[k[row]]``."""
        return np.einsum("ru,ur->r", weights, self.counts[:, k])

    def _first_reaching(self, weights: Weights, rank: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
        """Each row's smallest grid index k with count(<= grid[k]) >= rank (rank <= the row's total)."""
        # Invariant: count(low) < rank <= count(high); count(-1) is 0, count(last) is the row's total.
        low = np.full(len(weights), -1, dtype=np.intp)
        high = np.full(len(weights), self.grid.size - 1, dtype=np.intp)
        while (open_ := high - low > 1).any():
            mid = np.where(open_, (low + high) // 2, high)
            reached = self._count(weights, mid) >= rank
            high = np.where(reached, mid, high)
            low = np.where(reached, low, mid)
        return high

    def medians(self, weights: Weights) -> npt.NDArray[np.float64]:
        """Each row's median of the union where group u appears ``weights[row, u]`` times; NaN when empty."""
        totals = weights @ self.sizes
        grid = self.grid
        if self.exact:
            # The mean of the order statistics at ranks (n + 1) // 2 and n // 2 + 1 (one and the same when n is odd).
            low = grid[self._first_reaching(weights, (totals + 1) // 2)]
            result = (low + grid[self._first_reaching(weights, totals // 2 + 1)]) / 2
        else:
            rank = (totals + 1) / 2
            k = self._first_reaching(weights, rank)
            at = self._count(weights, k)
            below = np.where(k > 0, self._count(weights, np.maximum(k - 1, 0)), 0)
            inside = (k > 0) & (at > below)
            previous = grid[np.maximum(k - 1, 0)]
            interpolated = previous + (grid[k] - previous) * (rank - below) / np.where(inside, at - below, 1)
            result = np.where(inside, interpolated, grid[k])
        return np.where(totals > 0, result, np.nan)
