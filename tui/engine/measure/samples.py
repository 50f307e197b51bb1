"""A run's timing blocks as the parent keeps them: compact, per side, in arrival order.

Times read back from a file (a JSON export, a history samples file) are checked where they enter,
in :meth:`Block.from_json`: each must be a number of milliseconds above 0 and at most :data:`MAX_MS`.
NaN, an infinity, 1e308 (finite, but its sums overflow), zero or a negative time is no measurement:
:class:`TimingError` names the field (``samples.compiled[0].ms[3]``) and its value, and the reader
refuses the run (``compare`` and ``report`` exit 2) rather than compute with it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tui.engine.measure.clocks import clock_info
from tui.engine.protocol import SIDES, STAGES, BlockTimed
from tui.typed import printable

__all__ = ["Block", "Samples", "new_samples", "samples_to_json", "samples_from_json", "TimingError", "MAX_MS",
           "checked_ms", "SamplesUnavailable", "SamplesPruned", "SamplesInvalid", "kept_samples"]

MAX_MS = 1e9
"""The longest time a stored iteration may take, in ms (11.6 days: beyond the longest run a timeout allows, 7 days)."""
_ALLOWED = f"(allowed: a number of milliseconds above 0 and at most {MAX_MS:g})"
_ALLOWED_ZERO = f"(allowed: a number of milliseconds from 0 to {MAX_MS:g})"


class SamplesUnavailable(LookupError):
    """A record's per-iteration samples were stored apart and could not be loaded."""


class SamplesPruned(SamplesUnavailable):
    """``compile-lab prune`` deleted them: the run is kept (exports write its samples as null)."""


class SamplesInvalid(SamplesUnavailable):
    """They hold a time no measurement gives (a :class:`TimingError`: NaN, an infinity, a negative or absurd
    time, a zero block or median); the message names the run, the file and the field."""


def kept_samples(source: Any) -> Samples | None:
    """``source.loaded_samples()``, or None where they were pruned or cannot be read (an export keeps the run with
    its stored summary and no samples); samples that hold an impossible time still raise :class:`SamplesInvalid`."""
    try:
        return source.loaded_samples()
    except SamplesInvalid:
        raise
    except SamplesUnavailable:
        return None


class TimingError(ValueError):
    """A stored time that no measurement gives: ``samples.compiled[0].ms[3]: nan is not a time (allowed: ...)``."""


def checked_ms(value: Any, where: str, zero: bool = False) -> float:
    """``value`` as a time in ms, or TimingError naming ``where``: a finite number above 0, at most MAX_MS.

    ``zero`` admits 0 as well: one call's time can read 0 where it is below its clock's resolution
    (a CUDA event pair resolves about half a microsecond); a median or a block's time per call cannot.
    """
    allowed = _ALLOWED_ZERO if zero else _ALLOWED
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = printable(repr(value))
        raise TimingError(f"{where}: {shown[:40] + ('…' if len(shown) > 40 else '')} is not a number {allowed}")
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits: JSON allows it, a float cannot hold it
        raise TimingError(f"{where}: an integer of {len(str(abs(value)))} digits is not a time {allowed}") from None
    if not ((0 <= number if zero else 0 < number) and number <= MAX_MS):  # NaN fails this too
        raise TimingError(f"{where}: {number!r} is not a time {allowed}")
    return number


@dataclass
class Block:
    """One timing block of one side.

    ``ms`` holds the per-call times of ``clock`` (8 bytes per call); ``host_ms_per_call`` the
    block's host-inclusive time per call; ``labels`` one input label per call, or None;
    ``t_start`` / ``t_end`` the worker's monotonic seconds around the block (None: unknown).
    """

    stage: str
    index: int
    clock: str
    ms: array
    host_ms_per_call: float | None = None
    labels: list[str] | None = None
    t_start: float | None = None
    t_end: float | None = None

    @property
    def host_ms(self) -> Sequence[float]:
        """The block's host-inclusive times as every statistic takes them: the one rule for both clocks.

        A device-time clock (CUDA events) measures the host apart, in a plain loop with no events
        (docs/METHOD.md, "Two clocks"): its one time per call, ``(host_ms_per_call,)``, or none.
        A host clock (``perf_counter`` on the CPU) times each call inside the very loop whose wall
        time is the host-inclusive time, so the per-call times *are* the host-inclusive times: the
        host statistics, speedup and interval come from the same samples by the same median and
        block bootstrap as the per-call ones, and cannot contradict them. (The CPU block's
        ``host_ms_per_call`` is the mean of its calls plus about 0.1 us of timing each; a mean
        of ten calls carries a stall in full, so a median of five such means swings with a few
        stalls. It stays in the raw data.) A block of an unknown clock keeps its ``host_ms_per_call``.
        """
        info = clock_info(self.clock)
        if info is not None and not info.device_time:
            return self.ms
        return () if self.host_ms_per_call is None else (self.host_ms_per_call,)

    @property
    def span(self) -> tuple[float, float] | None:
        """(t_start, t_end) in the worker's ``time.monotonic()`` seconds, or None when not known."""
        if self.t_start is None or self.t_end is None or self.t_end < self.t_start:
            return None
        return self.t_start, self.t_end

    @classmethod
    def from_event(cls, event: BlockTimed, intern: Callable[[str], str] = str) -> Block:
        """The block an event carries (a null time, non-finite in the worker, is dropped)."""
        ms = array("d", (v for v in event.ms if v is not None))
        labels = [intern(x) for x in event.labels] if event.labels is not None and len(ms) == len(event.ms) else None
        return cls(event.stage, event.index, event.clock, ms, event.host_ms_per_call, labels,
                   _finite_or_none(event.t_start), _finite_or_none(event.t_end))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite times become null)."""
        return {
            "stage": self.stage,
            "index": self.index,
            "clock": self.clock,
            "ms": [x if math.isfinite(x) else None for x in self.ms],
            "host_ms_per_call": _finite_or_none(self.host_ms_per_call),
            "labels": self.labels,
            "t_start": _finite_or_none(self.t_start),
            "t_end": _finite_or_none(self.t_end),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], intern: Callable[[str], str] = str) -> Block:
        """Build from :meth:`to_json` output; ValueError/TypeError when malformed, TimingError (naming the
        field) for a time no measurement gives (a null time is one the worker could not take: skipped)."""
        values = data.get("ms")
        if not isinstance(values, list):
            raise TypeError("ms is not a list")
        ms = array("d", (checked_ms(v, f"ms[{i}]", zero=True) for i, v in enumerate(values) if v is not None))
        labels = data.get("labels")
        if labels is not None:
            labels = [intern(str(x)) for x in labels] if len(labels) == len(ms) else None
        stage = data.get("stage", "measure")
        if stage not in STAGES:
            raise ValueError(f"stage {stage!r}")
        host = data.get("host_ms_per_call")
        return cls(
            stage=stage,
            index=int(data.get("index") or 0),
            clock=str(data.get("clock") or ""),
            ms=ms,
            host_ms_per_call=None if host is None else checked_ms(host, "host_ms_per_call"),
            labels=labels,
            t_start=_optional_float(data.get("t_start")),
            t_end=_optional_float(data.get("t_end")),
        )


Samples = dict[str, list[Block]]
"""Blocks per side (``"eager"``, ``"compiled"``), in arrival order."""


def new_samples() -> Samples:
    """An empty block list per side."""
    return {side: [] for side in SIDES}


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _optional_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return _finite_or_none(float(value))
    except OverflowError:  # an integer too long for a float: as unknown as an infinity
        return None


def samples_to_json(samples: Samples) -> dict[str, list[dict[str, Any]]]:
    """Blocks per side as JSON-ready dicts."""
    return {side: [block.to_json() for block in samples.get(side, ())] for side in SIDES}


def samples_from_json(data: dict[str, Any], intern: Callable[[str], str] = str) -> Samples:
    """Blocks per side from :func:`samples_to_json` output; malformed blocks are dropped.

    TimingError, naming the field (``samples.compiled[0].ms[3]``), for a time no measurement gives: a
    block of impossible times is not dropped quietly, it makes the whole run's samples unusable.
    """
    result = new_samples()
    for side in SIDES:
        for number, item in enumerate(data.get(side) or ()):
            if not isinstance(item, dict):
                continue
            try:
                result[side].append(Block.from_json(item, intern))
            except TimingError as exc:
                raise TimingError(f"samples.{side}[{number}].{exc}") from None
            except (TypeError, ValueError):
                continue
    return result
