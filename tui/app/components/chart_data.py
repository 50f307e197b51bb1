"""Data side of the iteration chart: read a run's timing blocks, downsample them to columns.

Pure Python (no textual), so it can be tested and timed alone. A run's record exposes
``record.samples = {"eager": [block, ...], "compiled": [block, ...]}``; each block has
``.stage`` ("compile" | "warmup" | "measure"), ``.index`` (block number per side and stage)
and ``.ms`` (per-iteration times). :class:`RecordLike` and :class:`BlockLike` say so as
protocols: anything with these attributes works.

Downsampling keeps what matters at any size: per column of the chart, the minimum, the
median, the maximum and the 95th percentile of the iterations that fall into it, so 100k
iterations cost one pass of slicing and sorting small buckets, and the drawing code only
ever sees about two columns per terminal cell.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple, Protocol
from collections.abc import Mapping, Sequence

from rich.cells import cell_len, chop_cells

from tui.engine.measure.stats import percentile
from tui.engine.status import RunStatus, ended_reason
from tui.present.cells import wrap_cells
from tui.typed import printable

__all__ = [
    "SIDES",
    "STAGE_ORDER",
    "BlockLike",
    "RecordLike",
    "Series",
    "Bucket",
    "series_from_record",
    "SeriesCache",
    "downsample",
    "format_ms",
    "LegendPart",
    "legend_parts",
    "fit_legend",
    "placeholder_text",
    "FAILED_PLACEHOLDER",
    "failure_lines",
    "chart_title",
]

SIDES = ("eager", "compiled")
STAGE_ORDER = {"compile": 0, "warmup": 1, "measure": 2}

CLIPPED_MARK = "↑"
"""Over a chart column on the top row: steady-state iterations slower than the plot's range (the help says so)."""

MEDIAN_MARK = "▶"
"""On the y axis, in a side's colour: the row of that side's median (the help says so)."""


class BlockLike(Protocol):
    """One streamed block of per-iteration times (read only, so a frozen Block qualifies)."""

    @property
    def stage(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def ms(self) -> Sequence[float]: ...


class RecordLike(Protocol):
    """What the chart reads of a run: its blocks per side (read only, so a record's dict of lists qualifies)."""

    @property
    def samples(self) -> Mapping[str, Sequence[BlockLike]]: ...


@dataclass(frozen=True)
class Series:
    """All iterations of one side in order (compile, warm-up, then measure); non-finite times dropped.

    Attributes:
        side: "eager" or "compiled".
        ms: per-iteration times, iteration index = position.
        stages: ``(stage, start, stop)`` runs of iteration positions, in order.
        median: median of the measure stage (``None`` before any measurement).
        measured: the measure stage's times, sorted (empty before any measurement).
    """

    side: str
    ms: Sequence[float]
    stages: tuple[tuple[str, int, int], ...]
    median: float | None
    measured: Sequence[float] = ()

    def stage_start(self, stage: str) -> int | None:
        """First iteration position of ``stage``, or ``None``."""
        return next((start for name, start, _ in self.stages if name == stage), None)

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile (0..100) of the measure stage, or ``None`` before any measurement."""
        return percentile(self.measured, q) if self.measured else None

    def count_above(self, value: float) -> int:
        """How many measure-stage times are greater than ``value``."""
        return len(self.measured) - bisect_right(self.measured, value)


@dataclass(frozen=True)
class Bucket:
    """The iterations of one stage that fall into one chart column."""

    column: int
    stage: str
    lo: float
    median: float
    p95: float
    hi: float
    count: int


def _blocks(record: RecordLike | None, side: str) -> Sequence[BlockLike]:
    samples = getattr(record, "samples", None) or {}
    return samples.get(side) or ()


def series_from_record(record: RecordLike | None) -> dict[str, Series]:
    """One :class:`Series` per side that has blocks (missing sides and empty blocks are skipped)."""
    return SeriesCache().series(record)


class SeriesCache:
    """Builds series from a record, reusing the previous result when blocks were only appended.

    A live run grows by appending blocks; then the measure-stage values already sorted for the
    median are merged with the new ones (Timsort on a sorted run plus a short tail: near linear)
    instead of sorting 100k values again.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[tuple, list[float], list[tuple[str, int, int]], list[float]]] = {}

    def series(self, record: RecordLike | None) -> dict[str, Series]:
        """The series of ``record``'s sides, in :data:`SIDES` order."""
        out: dict[str, Series] = {}
        last: dict = {}
        for side in SIDES:
            blocks = sorted(
                (b for b in _blocks(record, side) if getattr(b, "ms", None)),
                key=lambda b: (STAGE_ORDER.get(b.stage, len(STAGE_ORDER)), b.index),
            )
            keys = tuple((id(b), b.stage, b.index, len(b.ms)) for b in blocks)
            prev_keys, ms, stages, measured = self._last.get(side, ((), [], [], []))
            if keys[: len(prev_keys)] == prev_keys:
                ms, stages = list(ms), list(stages)
                fresh = blocks[len(prev_keys) :]
            else:
                ms, stages, measured = [], [], []
                fresh = blocks
            new_measured: list[float] = []
            for block in fresh:
                start = len(ms)
                values = _finite(block.ms)
                if not values:
                    continue
                ms.extend(values)
                if stages and stages[-1][0] == block.stage:
                    stages[-1] = (block.stage, stages[-1][1], len(ms))
                else:
                    stages.append((block.stage, start, len(ms)))
                if block.stage == "measure":
                    new_measured.extend(values)
            if new_measured:
                measured = sorted(measured + new_measured)
            last[side] = (keys, ms, stages, measured)
            if not ms:
                continue
            out[side] = Series(side=side, ms=ms, stages=tuple(stages), median=_median(measured), measured=measured)
        self._last = last
        return out


def _finite(values: Sequence[float]) -> list[float]:
    """The finite numbers of a block, in order (NaN, inf and None are dropped)."""
    try:
        return list(filter(math.isfinite, values))
    except TypeError:  # None or a non-number inside: the slow path
        out = []
        for v in values:
            try:
                if math.isfinite(v):
                    out.append(float(v))
            except TypeError:
                continue
        return out


def _median(ordered: Sequence[float]) -> float | None:
    return percentile(ordered, 50) if ordered else None


_EXACT = 255  # buckets up to this size are sorted whole; larger ones estimate median and p95


def downsample(series: Series, columns: int, span: int) -> list[Bucket]:
    """Buckets of ``series`` for a chart ``columns`` wide showing iterations ``0 .. span-1``.

    Iteration ``i`` falls into column ``i * columns // span``; each stage is bucketed on its
    own, so a column on a stage boundary yields one bucket per stage. ``lo`` and ``hi`` are
    exact; in buckets of more than 255 iterations, median and p95 are estimated from an evenly
    strided subset of at most 255 of them (deterministic; far finer than one braille dot).
    """
    if columns <= 0 or span <= 0:
        return []
    out: list[Bucket] = []
    ms = series.ms
    for stage, start, stop in series.stages:
        stop = min(stop, span)
        if start >= stop:
            continue
        first = start * columns // span
        last = (stop - 1) * columns // span
        for column in range(first, last + 1):
            a = max(start, -(-column * span // columns))
            b = min(stop, -(-(column + 1) * span // columns))
            if a >= b:
                continue
            chunk = ms[a:b]
            n = len(chunk)
            ordered = sorted(chunk if n <= _EXACT else chunk[:: -(-n // _EXACT)])
            out.append(
                Bucket(
                    column=column,
                    stage=stage,
                    lo=min(chunk),
                    median=percentile(ordered, 50),
                    p95=percentile(ordered, 95),
                    hi=max(chunk),
                    count=n,
                )
            )
    return out


def format_ms(value: float) -> str:
    """A time given in milliseconds, with its unit, in at most 6 characters: ``"812µs"``, ``"1.23ms"``, ``"31.2s"``.

    Rounded to 3 significant figures before the unit is chosen, so 0.9998 ms reads ``1ms``, not ``1e+03µs``.
    """
    value = float(f"{value:.3g}")
    if value < 1.0:
        return f"{value * 1000:.3g}µs"
    if value < 1000.0:
        return f"{value:.3g}ms"
    return f"{value / 1000:.3g}s"


# ----- legend, title, placeholder (text only; the widget maps style names to colours) -----

_KEEP = 9
"""Priority of the parts never dropped (a side's mark and name)."""


class LegendPart(NamedTuple):
    """A piece of the legend: its text, its component class (``"chart--axis"``, ...) and its priority.

    :func:`fit_legend` drops the parts of the lowest priority first, all of that priority at once
    (both sides alike), so a narrow legend loses whole words, never half of one.
    """

    text: str
    style: str
    priority: int


def legend_parts(series: Mapping[str, Series], off_scale: float | None = None,
                 clipped: Mapping[str, int] | None = None) -> list[LegendPart]:
    """The full legend: per side its mark, name, median and clipped count; then compile/warm-up.

    Priorities, dropped first to last: the word "median" (2), the slowest off-scale compile or
    warm-up time (3), the compile/warm-up item (4), the clipped counts (5), the median values (6).
    """
    parts: list[LegendPart] = []
    for side in SIDES:
        s = series.get(side)
        if s is None:
            continue
        if parts:
            parts.append(LegendPart("  ", "chart--axis", _KEEP))
        parts.append(LegendPart("━ ", f"chart--{side}", _KEEP))
        parts.append(LegendPart(side, "chart--axis", _KEEP))
        if s.median is not None:
            parts.append(LegendPart(" median", "chart--axis", 2))
            parts.append(LegendPart(f" {format_ms(s.median)}", "chart--axis", 6))
        if clipped and clipped.get(side):
            parts.append(LegendPart(f" {CLIPPED_MARK}{clipped[side]}", f"chart--{side}", 5))
    parts.append(LegendPart("  " if parts else "", "chart--axis", 4))
    parts.append(LegendPart("⠒ ", "chart--warmup", 4))
    parts.append(LegendPart("compile/warm-up", "chart--axis", 4))
    if off_scale is not None:
        parts.append(LegendPart(f" ({format_ms(off_scale)}{CLIPPED_MARK})", "chart--axis", 3))
    return [part for part in parts if part.text]


def fit_legend(parts: Sequence[LegendPart], width: int) -> list[LegendPart]:
    """``parts`` without their least important ones until they fit in ``width`` cells.

    Whole priority levels go at once; if the parts that are never dropped still do not fit, whole
    items go from the end (a side's separator, mark and name together). Nothing is cut mid-word.
    """
    kept = list(parts)
    for level in sorted({part.priority for part in parts if part.priority < _KEEP}):
        if _width(kept) <= width:
            break
        kept = [part for part in kept if part.priority != level]
    while kept and _width(kept) > width:
        kept.pop()
        while kept and kept[-1].text in ("  ", "━ ", "⠒ "):
            kept.pop()  # no mark or separator left without its name
    return kept


def _width(parts: Sequence[LegendPart]) -> int:
    return sum(len(part.text) for part in parts)


#: What the chart says of a failed run, its reason (:func:`failure_lines`) under it.
FAILED_PLACEHOLDER = "run failed: no timing blocks"
#: What the chart says of a run whose timing blocks it has no room to plot (a pane narrower or lower than a plot).
NO_ROOM = "no room to plot"


def placeholder_text(record: object | None, width: int = 80, *, blocks: bool = False) -> str:
    """What the chart says where it plots nothing: why, read from the run's status.

    ``record`` may be any object; one without a ``status`` (a test double) is taken as running.
    A failed run's error kind is named where it fits in ``width``. ``blocks``: the run has timing
    blocks and the pane has no room for them, which is said rather than a missing block.
    """
    if record is None:
        return "no run selected"
    status = getattr(record, "status", None)
    if blocks:
        return f"run failed: {NO_ROOM}" if status == RunStatus.FAILED else NO_ROOM
    if status == RunStatus.FAILED:
        kind = getattr(record, "error_kind", None)
        text = f"run failed ({kind}): no timing blocks"
        return text if kind and len(text) <= width else FAILED_PLACEHOLDER
    if status == RunStatus.CANCELLED:
        return "cancelled before any timing block"
    if status == RunStatus.QUEUED:
        return "queued: no timing blocks yet"
    if status == RunStatus.DONE:
        return "no timing blocks to show"
    return "waiting for timing blocks…"


def fold_words(text: str, width: int) -> list[str]:
    """``text`` folded between words to ``width`` cells; nothing where one of its words is wider than that (a
    piece of a word, or the words that fit without it, would say something else)."""
    if width < 1 or any(cell_len(word) > width for word in text.split()):
        return []
    return wrap_cells(text, width, break_long_words=False)


def failure_lines(record: object | None, width: int) -> list[str]:
    """A failed run's reason (``kind: message``) folded between words to ``width``, for the chart to show under
    its placeholder: at 80 columns the table has no room for it, and the run's notice is gone in seconds.
    Nothing for a run that did not fail or has no message (its kind alone fits in :func:`placeholder_text`)."""
    if getattr(record, "status", None) != RunStatus.FAILED or not getattr(record, "error_message", None) or width < 1:
        return []
    reason = ended_reason(getattr(record, "error_kind", None), getattr(record, "error_message", None))
    return wrap_cells(printable(" ".join(reason.split())), width)


TITLE = "iterations"
"""The chart pane's title; the run's label follows it where the whole label fits."""


MIN_TITLE_LABEL = 16
"""The fewest characters of a run's label the chart's title shows (cut with ``…``); fewer: none."""


def chart_title(label: str | None, width: int) -> str:
    """``"iterations · pointwise n=512 inductor"`` when that fits a border ``width`` cells wide; else the label
    cut at its end with ``…`` (its workload and parameters come first) while at least ``MIN_TITLE_LABEL``
    characters of it fit, else ``"iterations"``."""
    if label:
        room = width - 6 - len(f"{TITLE} · ")  # the border's corners and the spaces around the title
        if cell_len(label) <= room:
            return f"{TITLE} · {label}"
        if room >= MIN_TITLE_LABEL:  # cut by cells: a CJK file name's character takes two
            return f"{TITLE} · {chop_cells(label, room - 1)[0].rstrip()}…"
    return TITLE
