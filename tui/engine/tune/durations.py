"""How long a tune's runs take: the estimate the driver's budget checks use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord

__all__ = ["DurationModel", "measured_seconds", "seconds_apart"]


class DurationModel:
    """How long a run of ``iters`` iterations takes, from the runs so far.

    A run's wall time is its fixed part (start-up, building, compile, warm-up, the profile pass) and
    its measuring, which grows with the iterations: each run seen says both (``measured_s``: the
    time its measured blocks took, both sides), and a run of ``iters`` is estimated as the mean of
    each seen run's fixed part plus its measuring scaled to ``iters``. The largest of those rather than the
    mean would stop more often than need be; the mean of a few runs, with a run's own noise, is
    what the budget check uses. None before any run.

    Candidates differ: a max-autotune run can take several times the default compile's. A run is
    seen with its candidate's name, and :meth:`estimate` of a ``name`` reads that candidate's own
    runs where it has any (the confirmation runs two known candidates); the next screening run,
    of a candidate not run yet, reads every run.

    The search's first run pays once for what the later runs find ready: a worker without a spare that had
    imported torch, and a compile cache that nothing had warmed (the first compile builds what every later one
    reuses). So the first run's candidate (the default compile, screened first) is read from its later runs once
    it has any; while that first run is its only one, it is estimated as the lower of that run and the later
    runs' mean: the later runs' when they are the quicker, its own when the later ones are slower candidates (a
    max-autotune's). Read from the first run, the confirmation's default compile would count at its cold cost
    on every repeat.

    A run its timeout or a cancel stopped after its measurement (:mod:`tui.engine.run.kept`: done, its profile
    pass cut) would have run longer than it did, by how much nobody knows: it counts as at least its cut time,
    and at least what the runs before it estimate of it, so a cut never makes a candidate look quicker than its
    runs so far say (``cut`` of :meth:`add`). Left out, it would leave the candidate to every run's mean, which
    can be well below the time it had already taken.
    """

    def __init__(self) -> None:
        self.seen: list[tuple[int, float, float, str]] = []

    def add(self, iters: int, seconds: float, measured_s: float = 0.0, name: str = "", cut: bool = False) -> None:
        """A run of ``name`` with ``iters`` took ``seconds``, ``measured_s`` of them measuring; ``cut``: it was
        stopped after its measurement, and counts as the longer of ``seconds`` and its estimate before it."""
        if cut:
            seconds = max(seconds, self.estimate(iters, name) or 0.0)
        self.seen.append((iters, seconds, min(max(0.0, measured_s), seconds), name))

    def ended(self, records: Sequence[RunRecord], seconds: float, names: Mapping[str, str]) -> None:
        """``records`` ended, each in ``seconds`` of wall time, under the candidate each ran (``names``: run id ->
        name): each done or failed one is seen (a cancelled one ran for as long as the stop let it), a run stopped
        after its measurement (:attr:`RunRecord.kept`) as cut."""
        for record in records:
            if record.finished and record.status != RunStatus.CANCELLED:
                self.add(record.options.iters, seconds, measured_seconds(record), names[record.run_id],
                         cut=record.kept)

    def estimate(self, iters: int, name: str | None = None) -> float | None:
        """The wall time of a run of ``iters`` of candidate ``name`` (None: any candidate); None before any run."""
        own = [run for run in self.seen if name is not None and run[3] == name]
        if own and own[0] is self.seen[0] and len(self.seen) > 1:  # the search's first run is this candidate's
            if len(own) > 1:
                return _mean_scaled(own[1:], iters)
            return min(_mean_scaled(own, iters), _mean_scaled(self.seen[1:], iters))
        runs = own or self.seen
        return _mean_scaled(runs, iters) if runs else None

    def side_by_side(self, iters: int, names: Sequence[str], lanes: int) -> float | None:
        """The wall time of a run of ``iters`` of each of ``names`` on ``lanes`` lanes (one after another on one, at
        once on several: ``names`` no more than the lanes); None before any run."""
        needs = [self.estimate(iters, name) for name in names]
        known = [need for need in needs if need is not None]
        if len(known) < len(needs):
            return None
        return sum(known) if lanes == 1 else max(known, default=0.0)

    def still_needed(self, going: Sequence[tuple[int, str, float]]) -> float:
        """How much longer runs going side by side still need: the longest of their estimates less the time each
        has run (``going``: the iterations, the candidate's name and the seconds run of each); 0 with none going,
        and for a run past its estimate."""
        return max((max(0.0, (self.estimate(iters, name) or 0.0) - ran) for iters, name, ran in going), default=0.0)


def _mean_scaled(runs: Sequence[tuple[int, float, float, str]], iters: int) -> float:
    """The mean of ``runs``' wall times, each with its measuring scaled to ``iters``."""
    return sum(seconds - measured + measured * iters / max(1, seen) for seen, seconds, measured, _ in runs) / len(runs)


def measured_seconds(record: RunRecord) -> float:
    """The time a run's measured blocks took, both sides (a GPU block runs its calls twice: host and device loop)."""
    total = sum(sum(block.ms) for blocks in record.samples.values() for block in blocks if block.stage == "measure")
    loops = 2 if record.options.device.startswith("cuda") else 1
    return total * loops / 1000


def seconds_apart(parts: Sequence[float], other: float) -> int:
    """The decimals (0, else 1, else 2) at which a note's figures read as far apart as they are: the sum of ``parts``
    (each shown rounded, as a reader adds them) against ``other``. Whole seconds unless both round to the same
    figure, where "about 7 s does not fit in the 7 s left" would read as a contradiction (7.4 s against 6.6 s)."""
    for places in range(2):
        if round(sum(round(p, places) for p in parts), places) != round(other, places):
            return places
    return 2
