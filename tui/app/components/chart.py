"""Per-iteration chart of one run: eager and compiled times over iteration index.

Hand-drawn with braille dots (2 x 4 per cell) through Textual's line API; no plotting library.
Per side and per chart column it draws the spread of the iterations in that column (min to max,
dark) and their median (bright), so a run of 100k iterations looks like one of 100. Compile and
warm-up iterations are grey and left of a dotted separator; steady state (measure) is coloured.
The measure medians are dashed horizontal lines, with their values in the legend.

The y range comes from steady state alone, robustly: from the fastest measured iteration to the
99th percentile of the slower side, or that side's severe-outlier fence (the verdict's 3-IQR fence)
when it is lower, and never above ``MEDIAN_SPAN`` times the slower median (on a busy CPU more than a
quarter of the iterations can be slow, which puts the fence among them too), padded by 5%. Rare slow
iterations (a GC pause, a page fault: 27 ms in a steady state of 46 µs) and the compile call would otherwise squash both
series onto the bottom row. Steady-state iterations above the range are clipped to the top row,
which shows ``↑`` in the side's colour over their columns, and the legend counts them per side
(``↑3``); compile and warm-up iterations above the range sit on the top edge and the legend
gives the slowest one's time.

The legend fits its width by dropping whole words by priority (``chart_data.fit_legend``: the word
"median" first, then the off-scale time, then compile/warm-up, before any median value), never by
cutting one. The pane's title is "iterations", with the run's label where it fits whole; without a
plot the chart says why, from the run's status (``chart_data.placeholder_text``): no run selected,
run failed, cancelled before any timing block, waiting for timing blocks, or, for a run with blocks in a
pane too small for a plot, no room to plot; folded between words, never a piece of one.

Redraws are timer-driven: ``set_run(record)`` and ``mark_dirty()`` only flag the chart; a
timer (``max_fps``, 10 Hz by default) redraws from the record when flagged, never more than
once per tick, and backs off so redrawing takes at most about a tenth of a core. Nothing is
redrawn while another screen (e.g. a modal) is on top.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from collections.abc import Callable

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from tui.engine.thresholds import MIN_IQR_SHARE
from tui.engine.measure.verdict import severe_fences

from tui.app.components.chart_data import (
    CLIPPED_MARK,
    MEDIAN_MARK,
    TITLE,
    Bucket,
    RecordLike,
    FAILED_PLACEHOLDER,
    Series,
    SeriesCache,
    chart_title,
    downsample,
    fit_legend,
    format_ms,
    failure_lines,
    fold_words,
    legend_parts,
    placeholder_text,
)

__all__ = ["IterationChart", "RecordLike", "format_ms"]

logger = logging.getLogger(__name__)

_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))  # [dx][dy]
_GUTTER = 6
MAX_REASON_ROWS = 3
"""At most this many rows of a failed run's reason under its plot (the details have it whole)."""
MIN_PLOT_ROWS = 3
"""The plot rows a failed run's reason leaves, at least (fewer rows: the reason gives way)."""
# Layers, lowest priority first: a cell takes the colour of its highest layer.
_LAYERS = (
    "chart--separator",
    "chart--eager-median",
    "chart--compiled-median",
    "chart--eager-spread",
    "chart--compiled-spread",
    "chart--warmup",
    "chart--eager",
    "chart--compiled",
)
_LAYER = {name: i for i, name in enumerate(_LAYERS)}


@dataclass
class _Canvas:
    """Braille dot masks per layer over a plot of ``width`` x ``height`` cells."""

    width: int
    height: int

    def __post_init__(self) -> None:
        self.masks = [bytearray(self.width * self.height) for _ in _LAYERS]
        self.clipped: dict[int, int] = {}  # top-row cell x -> layer of a series clipped there

    @property
    def dots_x(self) -> int:
        return self.width * 2

    @property
    def dots_y(self) -> int:
        return self.height * 4

    def dot(self, layer: int, x: int, y: int) -> None:
        if 0 <= x < self.dots_x and 0 <= y < self.dots_y:
            cx, dx = divmod(x, 2)
            cy, dy = divmod(y, 4)
            self.masks[layer][cy * self.width + cx] |= _DOTS[dx][dy]

    def vline(self, layer: int, x: int, y0: int, y1: int) -> None:
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.dot(layer, x, y)


def _reason_rows(reason: list[str], rows: int, width: int) -> list[str]:
    """The first ``rows`` lines of a failed run's reason (folded to ``width`` - 2), the last one ending in an
    ellipsis where the reason goes on: the details (enter) have it whole."""
    shown = reason[:max(0, rows)]
    if shown and len(shown) < len(reason):
        shown[-1] = chop_cells(shown[-1], max(1, width - 3))[0] + "…"  # cells: a CJK reason's row is no wider
    return shown


def _centred(line: str, width: int) -> str:
    """``line`` in the middle of ``width`` cells, as ``str.center`` places it by characters."""
    room = max(0, width - cell_len(line))
    left = room // 2 + (room & width & 1)  # str.center's rounding
    return " " * left + line + " " * (room - left)


class IterationChart(Widget):
    """Eager vs compiled time per iteration for one run, redrawn at most ``max_fps`` times a second.

    Call :meth:`set_run` with a record (see :class:`~tui.app.components.chart_data.RecordLike`)
    when the selected run changes and :meth:`mark_dirty` when its blocks grow.

    Attributes:
        redraw_count: redraws done so far (tests count them).
        last_redraw_s: how long the last redraw took, in seconds.

    Component classes (colours, themable in CSS): ``chart--eager``, ``chart--compiled`` (medians
    per column), ``chart--eager-spread``, ``chart--compiled-spread`` (min..max per column),
    ``chart--eager-median``, ``chart--compiled-median`` (median lines), ``chart--warmup``
    (compile and warm-up), ``chart--separator``, ``chart--axis``.
    """

    COMPONENT_CLASSES = set(_LAYERS) | {"chart--axis"}

    # xterm-256 colours, so 256-colour terminals show exactly these.
    DEFAULT_CSS = """
    IterationChart {
        height: 12;
        min-height: 5;
    }
    IterationChart > .chart--eager { color: #5fafff; text-style: bold; }
    IterationChart > .chart--compiled { color: #ffaf00; text-style: bold; }
    IterationChart > .chart--eager-spread { color: #005f87; }
    IterationChart > .chart--compiled-spread { color: #875f00; }
    IterationChart > .chart--eager-median { color: #87d7ff; }
    IterationChart > .chart--compiled-median { color: #ffd787; }
    IterationChart > .chart--warmup { color: #8a8a8a; }
    IterationChart > .chart--separator { color: #585858; }
    IterationChart > .chart--axis { color: #8a8a8a; }
    """

    def __init__(
        self,
        record: RecordLike | None = None,
        *,
        max_fps: float = 10.0,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Args: record: the run to show (or ``None``); max_fps: redraws per second at most (<= 10 advised)."""
        super().__init__(name=name, id=id, classes=classes)
        self._record = record
        self._label: str | None = None
        self._note: str | None = None
        self._max_fps = max_fps
        self._dirty = True
        self._not_before = 0.0
        self._cache = SeriesCache()
        self._strips: list[Strip] = []
        self.redraw_count = 0
        self.last_redraw_s = 0.0

    # -- public API ----------------------------------------------------------------------

    @property
    def record(self) -> RecordLike | None:
        """The run shown."""
        return self._record

    def set_run(self, record: RecordLike | None, label: str | None = None, note: str | None = None) -> None:
        """Show another run (or none), drawn at the next timer tick.

        ``label`` names it in the title where it fits; ``note`` is said instead of the plot's
        absence explained from the run's status (e.g. "loading timing blocks…").
        """
        self._record = record
        self._label = label
        self._note = note
        self._dirty = True
        self._set_title()

    def _set_title(self) -> None:
        self.border_title = chart_title(self._label, self.outer_size.width)

    def mark_dirty(self) -> None:
        """The record's blocks changed; cheap, call it on every event."""
        self._dirty = True

    # -- scheduling ----------------------------------------------------------------------

    def on_mount(self) -> None:
        """Start the redraw timer; the pane's title."""
        self.border_title = TITLE
        self.set_interval(1.0 / self._max_fps, self._tick, name="iteration-chart-redraw")

    def on_resize(self) -> None:
        """Redraw at the new size (at once for the first frame); the title shows the run's label if it fits."""
        self._dirty = True
        self._set_title()
        if not self._strips:  # the first frame: draw now rather than a tick later
            self._tick()

    def notify_style_update(self) -> None:
        """Redraw with the new colours (a theme change)."""
        super().notify_style_update()
        self._dirty = True  # colours come from component classes

    def _tick(self) -> None:
        if not self._dirty or not self.size.area:
            return
        now = time.monotonic()
        if now < self._not_before:
            return
        try:
            if not self.screen.is_active:  # a modal or another screen is on top
                return
        except Exception:  # not on a screen (yet, or any more): nothing to draw
            logger.debug("the chart has no screen", exc_info=True)
            return
        self._dirty = False
        start = time.perf_counter()
        self._strips = self._draw(self.size.width, self.size.height)
        self.last_redraw_s = time.perf_counter() - start
        self._not_before = now + 9.0 * self.last_redraw_s  # about 10% of a core at most
        self.redraw_count += 1
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the last redraw (blank before the first)."""
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)

    # -- drawing -------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def _draw(self, width: int, height: int) -> list[Strip]:
        base = self.rich_style
        series = self._cache.series(self._record)
        plot_w = width - _GUTTER - 1
        plot_h = height - 2
        if not series or plot_w < 4 or plot_h < 1:
            return [Strip(line).adjust_cell_length(width, base) for line in self._placeholder(series, width, height)]
        # a run that failed after some blocks: its reason under the plot (the table has no room for it at 80
        # columns, and the notice is gone in seconds), where the plot keeps MIN_PLOT_ROWS rows
        reason = [] if self._note else failure_lines(self._record, width - 2)
        shown = _reason_rows(reason, min(MAX_REASON_ROWS, plot_h - MIN_PLOT_ROWS), width)
        lines = self._plot(series, plot_w, plot_h - len(shown))[:height - len(shown)]
        lines += [[Segment(" " + line, self._style("chart--axis"))] for line in shown]
        return [Strip(line).adjust_cell_length(width, base) for line in lines]

    def _placeholder(self, series: dict[str, Series], width: int, height: int) -> list[list[Segment]]:
        """The legend and, mid-height, why there is no plot (no blocks yet, or no room for them), folded between
        words to the pane's width: a failed run's reason under it, as much as fits."""
        reason = [] if self._note else failure_lines(self._record, width - 2)
        text = self._note or (FAILED_PLACEHOLDER if reason and not series
                              else placeholder_text(self._record, width, blocks=bool(series)))
        message = fold_words(text, width)
        lines: list[list[Segment]] = [self._legend(series, width) if series else []]
        lines.extend([] for _ in range(1, height))
        top = 1 if series else 0  # no legend: its line too
        if height > top and message:
            style = self._style("chart--axis")
            message = message[: height - top]
            first = max(top, min(height // 2, height - len(message) - len(reason)))
            for offset, line in enumerate(message):
                lines[first + offset] = [Segment(_centred(line, width), style)]
            first += len(message) - 1
            shown = _reason_rows(reason, height - first - 1, width)
            pad = " " * max(1, (width - max(map(cell_len, shown), default=0)) // 2)
            for offset, line in enumerate(shown, 1):
                lines[first + offset] = [Segment(pad + line, style)]
        return lines

    def _plot(self, series: dict[str, Series], plot_w: int, plot_h: int) -> list[list[Segment]]:
        """Legend, plot rows and x axis of the series on a ``plot_w`` x ``plot_h`` cell plot."""
        span = max(len(s.ms) for s in series.values())
        canvas = _Canvas(plot_w, plot_h)
        buckets = {side: downsample(s, canvas.dots_x, span) for side, s in series.items()}
        lo, hi = _y_range(series, buckets)
        y_of = _y_mapper(lo, hi, canvas.dots_y)
        measure_x = [x for x in (s.stage_start("measure") for s in series.values()) if x]
        if measure_x:
            _paint_separator(canvas, min(measure_x) * canvas.dots_x // span)
        off_scale: list[float] = []
        for side, s in series.items():
            if s.median is not None:
                start = (s.stage_start("measure") or 0) * canvas.dots_x // span
                _paint_median(canvas, side, start, y_of(s.median))
            off_scale.extend(_paint_columns(canvas, side, buckets[side], hi, y_of))
        clipped = {side: s.count_above(hi) for side, s in series.items()}
        lines = [self._legend(series, plot_w + _GUTTER + 1, max(off_scale) if off_scale else None, clipped)]
        markers = {y_of(s.median) // 4: f"chart--{side}" for side, s in series.items() if s.median is not None}
        lines.extend(self._plot_rows(canvas, lo, hi, markers))
        lines.append(self._x_axis(plot_w, span, series))
        return lines

    def _legend(
        self, series: dict[str, Series], width: int, off_scale: float | None = None,
        clipped: dict[str, int] | None = None,
    ) -> list[Segment]:
        """The legend, fitted to ``width`` by dropping its least important words (never cut mid-word)."""
        parts = fit_legend(legend_parts(series, off_scale, clipped), width)
        return [Segment(part.text, self._style(part.style)) for part in parts]

    def _plot_rows(self, canvas: _Canvas, lo: float, hi: float, markers: dict[int, str]) -> list[list[Segment]]:
        """The plot rows: y labels, the axis (``▶`` in a side's colour marks its median's row), the dots."""
        styles = [self._style(name) for name in _LAYERS]
        axis = self._style("chart--axis")
        base = self.rich_style
        labelled = {0: hi, canvas.height - 1: lo}
        if canvas.height >= 5:
            middle = (canvas.height - 1) // 2
            labelled[middle] = hi - (hi - lo) * (middle * 4 + 1.5) / (canvas.dots_y - 1)
        rows = []
        for cy in range(canvas.height):
            label = format_ms(labelled[cy]).rjust(_GUTTER) if cy in labelled else " " * _GUTTER
            segments = [Segment(label, axis)]
            if cy in markers:
                segments.append(Segment(MEDIAN_MARK, self._style(markers[cy])))
            else:
                segments.append(Segment("┤" if cy in labelled else "│", axis))
            run_text: list[str] = []
            run_style: Style | None = None
            for cx in range(canvas.width):
                i = cy * canvas.width + cx
                mask = 0
                top = -1
                for layer, masks in enumerate(canvas.masks):
                    if masks[i]:
                        mask |= masks[i]
                        top = layer
                if cy == 0 and cx in canvas.clipped:
                    char, style = CLIPPED_MARK, styles[canvas.clipped[cx]]
                else:
                    char, style = (chr(0x2800 + mask), styles[top]) if mask else (" ", base)
                if style is not run_style and run_text:
                    segments.append(Segment("".join(run_text), run_style))
                    run_text = []
                run_style = style
                run_text.append(char)
            if run_text:
                segments.append(Segment("".join(run_text), run_style))
            rows.append(segments)
        return rows

    def _x_axis(self, plot_w: int, span: int, series: dict[str, Series]) -> list[Segment]:
        axis = self._style("chart--axis")
        cells = ["─"] * plot_w
        starts = [x for s in series.values() if (x := s.stage_start("measure"))]
        if starts:
            cells[min(plot_w - 1, min(starts) * plot_w // span)] = "┴"
        first, last = "0", f"{span - 1}"
        text = "".join(cells)
        label = f" iteration {last}"
        if plot_w > len(label) + len(first) + 2:
            text = first + text[len(first) : plot_w - len(label)] + label
        return [Segment(" " * _GUTTER + "└" + text, axis)]


def _y_mapper(lo: float, hi: float, dots_y: int) -> Callable[[float], int]:
    """Time -> dot row (0 at the top, ``hi``); values outside ``lo..hi`` land on the edge rows."""
    scale = (dots_y - 1) / (hi - lo)

    def y_of(value: float) -> int:
        return max(0, min(dots_y - 1, round((hi - value) * scale)))

    return y_of


def _paint_separator(canvas: _Canvas, x: int) -> None:
    """The dotted line between warm-up and steady state."""
    for y in range(0, canvas.dots_y, 2):
        canvas.dot(_LAYER["chart--separator"], x, y)


def _paint_median(canvas: _Canvas, side: str, start: int, y: int) -> None:
    """A side's steady-state median: a dashed line from where it starts measuring."""
    for x in range(start, canvas.dots_x, 3):
        canvas.dot(_LAYER[f"chart--{side}-median"], x, y)


def _paint_columns(
    canvas: _Canvas, side: str, buckets: list[Bucket], hi: float, y_of: Callable[[float], int]
) -> list[float]:
    """One side's columns: steady-state spread and median dots, joined within a stage.

    Steady-state columns above ``hi`` are marked for the top row's ``↑``; returns the maxima of
    the compile and warm-up columns above ``hi`` (the legend names the slowest).
    """
    steady_layer = _LAYER[f"chart--{side}"]
    off_scale: list[float] = []
    previous: Bucket | None = None
    for bucket in buckets:
        steady = bucket.stage == "measure"
        if bucket.hi > hi:
            if steady:
                canvas.clipped[bucket.column // 2] = steady_layer
            else:
                off_scale.append(bucket.hi)
        if steady:
            canvas.vline(_LAYER[f"chart--{side}-spread"], bucket.column, y_of(bucket.lo), y_of(bucket.hi))
        layer = steady_layer if steady else _LAYER["chart--warmup"]
        y = y_of(bucket.median)
        if previous is not None and previous.stage == bucket.stage and previous.column == bucket.column - 1:
            canvas.vline(layer, bucket.column, (y + y_of(previous.median)) // 2, y)
        canvas.dot(layer, bucket.column, y)
        previous = bucket
    return off_scale


_Y_PERCENTILE = 99  # the top of the y range: at most this percentile of the slower side's steady state
MEDIAN_SPAN = 4.0
"""The top of the y range is at most this many times the slower side's median: the medians stay readable."""


def _steady_top(series: Series) -> float | None:
    """A side's top of the y range: its p99, or its severe-outlier fence when that is lower.

    The fence is the verdict's own (3 IQR beyond the upper quartile, the IQR at least
    ``MIN_IQR_SHARE`` of the median): a long tail of slow iterations (18% of them on a busy CPU)
    would put the p99 among the outliers and squash the medians onto the bottom rows.
    """
    top = series.percentile(_Y_PERCENTILE)
    q1, median, q3 = (series.percentile(q) for q in (25, 50, 75))
    if top is None or q1 is None or median is None or q3 is None:
        return top
    return min(top, severe_fences(q1, q3, MIN_IQR_SHARE * median)[1])


def _steady_range(measured: list[Series]) -> tuple[float, float]:
    """The fastest measured iteration .. the highest :func:`_steady_top`, at most ``MEDIAN_SPAN`` x the slower
    median."""
    lo = min(s.measured[0] for s in measured)
    tops = [top for s in measured if (top := _steady_top(s)) is not None]
    hi = max(tops) if tops else lo
    medians = [s.median for s in measured if s.median is not None]
    return lo, min(hi, MEDIAN_SPAN * max(medians)) if medians else hi


def _y_range(series: dict[str, Series], buckets: dict[str, list[Bucket]]) -> tuple[float, float]:
    """The y range: steady state when there is any (fastest time .. :func:`_steady_top`), else all but
    the compile call (column p95s)."""
    measured = [s for s in series.values() if s.measured]
    if measured:
        lo, hi = _steady_range(measured)
    else:
        chosen = [b for bs in buckets.values() for b in bs if b.stage != "compile"]
        if not chosen:
            chosen = [b for bs in buckets.values() for b in bs]
        lo = min(b.lo for b in chosen)
        hi = max(b.p95 for b in chosen)
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1e-3
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return max(0.0, lo - pad), hi + pad
