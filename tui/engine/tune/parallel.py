"""The tuner on several lanes (a GPU pool of one kind, a Ray cluster's lanes): how the confirmation's runs go out.

The race's candidates are independent: the driver keeps one run per lane going, each on the first
free lane (:class:`~tui.engine.run.session.RunSession` deals them). The confirmation compares two
configurations, so its runs must be measured in the same conditions: on a pool, runs beside each other
share the host (its memory bandwidth, caches, the driver; ``concurrent_runs``), and a launch-bound
model's host time moves with that. :func:`confirm_waves` runs them in **matched pairs**: the winner and
the default compile of one repeat start together, each pair beside the others of its wave, so every
process of the winner has a process of the default compile measured beside the same neighbours. Their
order swaps from pair to pair, so neither side keeps the first free lane (a GPU of its own).
On one lane the runs alternate one at a time (winner, default, winner, ...), as they always did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord
from tui.engine.tune import notes
from tui.engine.tune.durations import DurationModel
from tui.engine.tune.objective import failure_reason

WINNER, DEFAULT = "winner", "default"

__all__ = ["WINNER", "DEFAULT", "confirm_waves", "waves_cost", "failed_growth"]


def confirm_waves(repeats: int, lanes: int, first: int = 0) -> list[list[tuple[int, str]]]:
    """The confirmation's runs of repeats ``first`` to ``repeats - 1`` as waves of (repeat, side): a wave starts
    once the one before it ended (``first`` > 0: the repeats a confirmation adds while it is inconclusive).

    One lane: one run a wave, winner and default alternating. Two or more: ``lanes // 2`` matched pairs a wave
    (the winner and the default of one repeat side by side), the pair's order swapped each repeat.
    """
    numbers = range(first, repeats)
    if lanes <= 1:
        return [[(repeat, side)] for repeat in numbers for side in (WINNER, DEFAULT)]
    pairs = [[(repeat, WINNER), (repeat, DEFAULT)][:: 1 if repeat % 2 == 0 else -1] for repeat in numbers]
    at_once = lanes // 2
    return [[run for pair in pairs[start:start + at_once] for run in pair] for start in range(0, len(pairs), at_once)]


def waves_cost(durations: DurationModel, iters: int, names: Mapping[str, str | None], repeats: int, lanes: int,
               first: int = 0) -> float | None:
    """The estimated wall time of :func:`confirm_waves` (``repeats``, ``lanes``, ``first``) of runs of ``iters``: each
    wave as long as its longest run, each side's run estimated from its candidate's runs (``names``: side -> name;
    None: a candidate not run yet); None before any run ended."""
    lengths = {side: durations.estimate(iters, name) for side, name in names.items()}
    if None in lengths.values():
        return None
    return sum(max(lengths[side] or 0.0 for _, side in wave) for wave in confirm_waves(repeats, lanes, first=first))


def failed_growth(runs: Mapping[str, Sequence[RunRecord]], first: int) -> str | None:
    """Why the confirmation stops growing: every process it added from repeat ``first`` on failed, both sides (a
    machine that no longer runs a worker fails the next ones alike); None when one of them measured."""
    added = [record for side in (WINNER, DEFAULT) for record in runs[side][first:]]
    if not added or any(record.status != RunStatus.FAILED for record in added):
        return None
    return notes.growth_failed(first, failure_reason(added[0]))
