"""Where a run's wall time goes: seconds in each part of its life, as the parent process saw them.

A run's compile and measuring are timed by the worker, but a run takes longer than they do: it may wait for
its GPU, the worker imports torch and initialises the device, checks accuracy, runs the profile pass and exits.
These parts are the ones a search's budget pays for, so the record keeps each one's wall time
(:class:`WallTime`), stamped on the parent's monotonic clock as the events arrive (:class:`PartClock`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from time import monotonic

from tui.engine.protocol import PHASES
from tui.typed import JsonRecord

__all__ = ["PARTS", "WallTime", "PartClock"]

PARTS = ("waiting", "starting", *PHASES, "ending")
"""A run's parts in order: ``waiting`` (for its GPU, whose lock another run held: another compile-lab's, or
another session's), ``starting`` (from the run's start, handed to its runner, to the worker's first phase: getting
a worker and sending it the command, the worker importing torch and initialising the device, unless a spare worker
had imported it), the worker's phases, and ``ending`` (from the run's end, its last event or the runner's timeout
or cancel, until the worker exited and was reaped)."""


@dataclass(frozen=True)
class WallTime(JsonRecord):
    """Wall seconds in each of :data:`PARTS` (None: the run never reached it, or a record stored without it)."""

    waiting_s: float | None = None
    starting_s: float | None = None
    building_s: float | None = None
    compiling_s: float | None = None
    warming_up_s: float | None = None
    checking_accuracy_s: float | None = None
    measuring_s: float | None = None
    diagnosing_s: float | None = None
    ending_s: float | None = None

    def plus(self, part: str, seconds: float) -> WallTime:
        """This with ``seconds`` added to ``part`` (one of :data:`PARTS`)."""
        name = f"{part}_s"
        return replace(self, **{name: (getattr(self, name) or 0.0) + max(0.0, seconds)})

    def parts(self) -> Iterator[tuple[str, float]]:
        """(part, seconds) for each part the run reached, in order."""
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None:
                yield item.name.removesuffix("_s"), value

    @classmethod
    def summed(cls, times: Iterable[WallTime]) -> WallTime:
        """Each part added up over ``times`` (a group row's processes: what the configuration cost); None where
        none of them reached it."""
        total = cls()
        for one in times:
            for part, seconds in one.parts():
                total = total.plus(part, seconds)
        return total

    @property
    def total_s(self) -> float | None:
        """The run's wall time from its start to the worker's exit (None: no part timed)."""
        values = [seconds for _, seconds in self.parts()]
        return sum(values) if values else None


class PartClock:
    """Stamps the part a run is in; each change adds the time since the last one to its :class:`WallTime`."""

    def __init__(self) -> None:
        self.times = WallTime()
        self._part: str | None = None
        self._since = 0.0

    @property
    def running(self) -> bool:
        """Whether the clock is in a part (entered, and not stopped)."""
        return self._part is not None

    def elapsed(self) -> float | None:
        """Seconds since the run entered the part it is in (None while the clock is stopped)."""
        return monotonic() - self._since if self._part is not None else None

    def end(self) -> None:
        """The run's end is decided: its ``ending`` part from now (a clock stopped, or never started, stays so)."""
        if self.running:
            self.enter("ending")

    def enter(self, part: str | None) -> None:
        """The run is now in ``part`` (None: its clock stops); entering the part it is in changes nothing."""
        if part == self._part:
            return
        now = monotonic()
        if self._part is not None:
            self.times = self.times.plus(self._part, now - self._since)
        self._part, self._since = part, now
