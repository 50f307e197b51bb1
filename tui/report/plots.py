"""The report's plots as inline SVG, drawn by matplotlib (the ``compile-lab[report]`` extra).

matplotlib is imported by :func:`load_matplotlib` only, when a report is made: ``import tui.cli``
never loads it. Figures are made without pyplot (no global figure state) on the Agg backend and
saved as SVG with text as text (small, searchable), mathtext off (a ``$`` in a workload's name is
a dollar sign), a fixed hash salt per figure (ids the same on every run, different between figures)
and no date or creator in the metadata, so the same runs give the same bytes.

Every configuration's mark has an id of its own: ``forest-row-N`` (its speedup and interval, one
line with its marker), ``forest-host-N`` (the host-inclusive one of a launch-bound run),
``dist-N-eager`` / ``dist-N-compiled`` (a side's box and ``...-points`` its quantiles).
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from html import escape
from typing import Any, ParamSpec, TypeVar

from tui.present.format import MISSING, fmt_speedup
from tui.engine.store.report_data import Interval, ReportRow, SideData
from tui.report.colors import BAND, NO_VERDICT, SIDE_COLOURS, UNITY, VERDICT_COLOURS, verdict_colour
from tui.engine.status import RunStatus

__all__ = ["MatplotlibMissing", "INSTALL_HINT", "load_matplotlib", "forest_svg", "distribution_svg",
           "speedup_words", "whole_parentheses", "FOREST_ID"]

INSTALL_HINT = 'pip install "compile-lab[report]"'
FOREST_ID = "forest-plot"
_RC = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "path.simplify": True,
}
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_AUTO_ID = re.compile(r' id="[A-Za-z][\w.]*_\d+"')
_PARENTHESES, _NBSP = re.compile(r"\([^()]*\)"), "\u00a0"
_TICKS = (1.0, 2.0, 0.5, 10.0, 0.1, 5.0, 0.2, 1.5, 0.67, 100.0, 0.01, 1.25, 0.8, 3.0, 20.0, 0.05, 50.0, 0.02, 4.0,
          0.25, 1.1, 0.9)
"""The speedup axis's tick values, the roundest first: the first ones with room for their labels are drawn."""
_TICK_CHAR_POINTS, _TICK_GAP_POINTS = 0.62 * 9, 9.0
"""The width of a tick label's character at font size 9, and the least space between two labels, in points."""
_LABEL_CHARS = 56
"""A configuration's label wraps at words to lines this long (a longer word keeps a line of its own), never cut."""
_ROW_INCHES, _LINE_INCHES, _WIDTH_INCHES = 0.34, 0.15, 12.0
"""A one-line row's height, each further label line's, and the figure's width (inches)."""


class MatplotlibMissing(ImportError):
    """matplotlib is not installed; the message is the one line to print."""


def load_matplotlib() -> Any:
    """The matplotlib module, on the Agg backend; :class:`MatplotlibMissing` when it is not installed."""
    try:
        import matplotlib
    except ImportError as exc:
        raise MatplotlibMissing(f"the report needs matplotlib: {INSTALL_HINT}") from exc
    matplotlib.use("Agg")
    return matplotlib


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _styled(draw: Callable[_P, _R]) -> Callable[_P, _R]:
    """``draw`` with the report's matplotlib settings, from making the figure to writing its SVG."""

    @functools.wraps(draw)
    def styled(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with load_matplotlib().rc_context(_RC):
            return draw(*args, **kwargs)

    return styled


def _figure(height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(_WIDTH_INCHES, height), layout="constrained")


def _svg(fig: Any, salt: str, svg_id: str, label: str) -> str:
    """The figure as an ``<svg>`` element to put in HTML: no XML prolog, no auto ids, its own id."""
    matplotlib = load_matplotlib()
    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"compile-lab-{salt}"}):
        fig.savefig(out, format="svg", metadata=_NO_METADATA)
    text = out.getvalue()
    text = _AUTO_ID.sub("", text[text.index("<svg"):])
    attributes = f'<svg id="{escape(svg_id)}" class="plot" role="img" aria-label="{escape(label)}" '
    return text.replace("<svg ", attributes, 1).strip()


def whole_parentheses(text: str) -> str:
    """``text`` with the spaces of each part in parentheses made no-break spaces, so that no line breaks it:
    ``(tune: stage 2)`` stays whole in the forest plot's labels and in the page's cells and headings."""
    return _PARENTHESES.sub(lambda part: part.group(0).replace(" ", _NBSP), text)


def _wrapped(text: str) -> str:
    """``text`` whole, on lines of at most ``_LABEL_CHARS`` characters broken at spaces: a word is never split
    (``layout_optimization=False``, a path), nor a part in parentheses (``(tune: stage 2)``), and however many
    lines a label takes, none is cut."""
    import textwrap

    kept = whole_parentheses(text)
    lines = textwrap.wrap(kept, _LABEL_CHARS, break_on_hyphens=False, break_long_words=False) or [""]
    return "\n".join(lines).replace(_NBSP, " ")


def _slots(names: Sequence[str]) -> tuple[list[float], float]:
    """Each row's centre on the y axis (inches from the top) and the rows' height: a row is as tall as its label."""
    centres, top = [], 0.0
    for name in names:
        height = _ROW_INCHES + _LINE_INCHES * name.count("\n")
        centres.append(top + height / 2)
        top += height
    return centres, top


def speedup_words(interval: Interval | None) -> str:
    """``1.28× [1.23, 1.33]``, ``1.28×`` without an interval, ``–`` without a speedup."""
    return MISSING if interval is None else fmt_speedup(interval.point, interval.low, interval.high)


def _right_label(row: ReportRow) -> str:
    if row.speedup is None:
        return row.status if row.status != RunStatus.DONE else "no speedup"
    text = f"{speedup_words(row.speedup)} {row.verdict or row.status}"
    if row.shows_host:
        text += f"; host {speedup_words(row.host_speedup)} {row.host_verdict or ''}".rstrip()
    return text


def _values(interval: Interval) -> list[float]:
    if interval.low is None or interval.high is None:
        return [interval.point]
    return [interval.low, interval.point, interval.high]


def _limits(rows: Sequence[ReportRow]) -> tuple[float, float]:
    values = [1.0]
    for row in rows:
        for interval in (row.speedup, row.host_speedup if row.shows_host else None):
            if interval is not None:
                values += [v for v in _values(interval) if v > 0 and math.isfinite(v)]
    low, high = math.log(min(values)), math.log(max(values))
    pad = max(0.04, (high - low) * 0.08)
    return math.exp(low - pad), math.exp(high + pad)


def _ticks(low: float, high: float, axis_points: float) -> list[float]:
    """The ticks between ``low`` and ``high`` whose labels do not touch on an axis ``axis_points`` long (log
    scale): the roundest values first (1, 2, 0.5, ...), each kept when it has room beside those kept."""
    span = math.log(high) - math.log(low)
    if span <= 0 or axis_points <= 0:
        return []
    points_per_unit = axis_points / span

    def half_width(value: float) -> float:
        return (len(f"{value:g}×") * _TICK_CHAR_POINTS + _TICK_GAP_POINTS) / 2

    kept: list[float] = []
    for value in _TICKS:
        if not low <= value <= high:
            continue
        room = all(abs(math.log(value) - math.log(other)) * points_per_unit >= half_width(value) + half_width(other)
                   for other in kept)
        if room:
            kept.append(value)
    return sorted(kept)


def _mark(ax: Any, interval: Interval, y: float, colour: str, gid: str, host: bool) -> None:
    values = _values(interval)
    middle = 1 if len(values) == 3 else 0
    (line,) = ax.plot(values, [y] * len(values), color=colour, lw=2.2 if not host else 1.4,
                      ls="--" if host else "-", marker="D" if host else "o", markevery=[middle],
                      ms=5.5 if host else 6.5, mfc="white" if host else colour, mec=colour, mew=1.4, zorder=3)
    line.set_gid(gid)


def _legend(fig: Any, rows: Sequence[ReportRow], band: float | None) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    seen = {v for row in rows for v in (row.verdict, row.host_verdict if row.shows_host else None) if v}
    handles: list[Any] = [Line2D([], [], color=colour, lw=2.2, marker="o", label=verdict)
                          for verdict, colour in VERDICT_COLOURS.items() if verdict in seen]
    if any(row.shows_host for row in rows):
        handles.append(Line2D([], [], color=NO_VERDICT, lw=1.4, ls="--", marker="D", mfc="white",
                              label="host-inclusive (launch-bound runs)"))
    if band is not None:
        handles.append(Patch(color=BAND, label=f"no change: within ±{band:.0%}"))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), frameon=False)


def _band(rows: Sequence[ReportRow]) -> float | None:
    thresholds = {row.options.noise_threshold for row in rows}
    return thresholds.pop() if len(thresholds) == 1 else None


@_styled
def forest_svg(rows: Sequence[ReportRow], labels: Sequence[str]) -> str:
    """The forest plot: one line per configuration (its speedup, 95% interval, verdict colour), a line at 1.0.

    ``labels``: one per row, as the page names the configurations. A launch-bound row's host-inclusive
    speedup is drawn below its own, dashed with a hollow marker; a row without a speedup says why.
    """
    names = [_wrapped(f"#{row.number} {label}") for row, label in zip(rows, labels, strict=True)]
    positions, height = _slots(names)
    fig = _figure(1.2 + max(height, _ROW_INCHES))
    ax = fig.add_subplot()
    low, high = _limits(rows)
    band = _band(rows)
    if band is not None:
        ax.axvspan(1 - band, 1 + band, color=BAND, zorder=0, lw=0)
    ax.axvline(1.0, color=UNITY, lw=1, zorder=1)
    for y, row in zip(positions, rows, strict=True):
        if row.speedup is None:
            ax.text(1.0, y, f"  {_right_label(row)}", va="center", ha="left", color=NO_VERDICT, style="italic")
            continue
        _mark(ax, row.speedup, y, verdict_colour(row.verdict), f"forest-row-{row.number}", host=False)
        if row.shows_host and row.host_speedup is not None:
            host_y = y + 0.3 * _ROW_INCHES
            _mark(ax, row.host_speedup, host_y, verdict_colour(row.host_verdict), f"forest-host-{row.number}", True)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    ax.set_xlabel("speedup: eager median / compiled median (log scale; right of 1: compiled is faster)")
    ax.set_ylim(height + 0.1 * _ROW_INCHES, -0.1 * _ROW_INCHES)
    ax.set_yticks(positions, labels=names)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#d0d7de", lw=0.6, zorder=0)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(positions, labels=[_right_label(row) for row in rows])
    right.tick_params(axis="y", length=0)
    for text, row in zip(right.get_yticklabels(), rows, strict=True):
        text.set_color(verdict_colour(row.verdict))
    for spine in ("top", "right", "left"):
        right.spines[spine].set_visible(False)
    _legend(fig, rows, band)
    # The ticks once the labels around the axis have taken their room: how long the axis is decides how many fit.
    fig.draw_without_rendering()
    ticks = _ticks(low, high, ax.get_position().width * _WIDTH_INCHES * 72)
    if len(ticks) >= 2:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
    return _svg(fig, "forest", FOREST_ID, "Forest plot of the speedups and their 95% intervals")


def _jitter(count: int) -> list[float]:
    """Fixed offsets in [-0.18, 0.18] (a low-discrepancy sequence): the same picture on every run."""
    return [((i * 0.6180339887) % 1 - 0.5) * 0.36 for i in range(count)]


def _box(ax: Any, side: SideData, y: float, gid: str) -> None:
    from matplotlib.patches import Rectangle

    stats, colour = side.stats, SIDE_COLOURS[side.name]
    if stats is None:
        return
    box = Rectangle((stats.q1, y - 0.28), stats.q3 - stats.q1, 0.56, facecolor=colour + "22", edgecolor=colour,
                    lw=1.2, zorder=2)
    box.set_gid(gid)
    ax.add_patch(box)
    ax.plot([stats.median, stats.median], [y - 0.28, y + 0.28], color=colour, lw=2.4, zorder=3)
    for start, end in ((stats.p10, stats.q1), (stats.q3, stats.p90)):
        ax.plot([start, end], [y, y], color=colour, lw=1, zorder=2)
    if side.quantiles:
        offsets = _jitter(len(side.quantiles))
        (points,) = ax.plot(side.quantiles, [y + dy for dy in offsets], ls="none", marker="o", ms=2.6,
                            color=colour, alpha=0.55, zorder=4)
        points.set_gid(f"{gid}-points")


def _side_label(side: SideData) -> str:
    if side.stats is None:
        return f"{side.name}: no samples"
    return f"{side.name}: median {side.stats.median:.4g} ms, n={side.stats.n}"


LOG_SPAN = 4.0
"""A distribution whose dots and whiskers span more than this many times (slowest over fastest) is drawn on a log
axis: on a linear one a few slow calls (a 6 ms stall beside 0.9 ms calls) squeezed both boxes into a few pixels."""


@_styled
def distribution_svg(row: ReportRow) -> str | None:
    """One configuration's per-iteration times, eager above compiled: box (quartiles, median), whiskers
    p10-p90, dots at evenly spaced quantiles of all samples. None when neither side has samples."""
    sides = [side for side in (row.eager, row.compiled) if side.stats is not None]
    if not sides:
        return None
    fig = _figure(1.75)
    ax = fig.add_subplot()
    for y, side in ((1.0, row.eager), (0.0, row.compiled)):
        _box(ax, side, y, f"dist-{row.number}-{side.name}")
    values = [v for side in sides if (stats := side.stats) is not None
              for v in (*side.quantiles, stats.p10, stats.p90) if v > 0]
    if values and max(values) / min(values) > LOG_SPAN:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # a span of a few times has labels
        # Plain numbers: the default log labels are mathtext, which the report turns off.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(-0.6, 1.6)
    ax.set_yticks([1.0, 0.0], labels=["eager", "compiled"])
    ax.tick_params(axis="y", length=0)
    what = f"{row.clock}: device time" if row.device_time else (row.clock or "time")
    ax.set_xlabel(f"ms per call ({what})")
    ax.grid(axis="x", color="#d0d7de", lw=0.6, zorder=0)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks([1.0, 0.0], labels=[_side_label(row.eager), _side_label(row.compiled)])
    right.tick_params(axis="y", length=0)
    for spine in ("top", "right", "left"):
        right.spines[spine].set_visible(False)
    return _svg(fig, f"dist-{row.number}", f"dist-{row.number}", f"Per-iteration times of configuration {row.number}")
