"""IterationChart in a tiny host app, and its data side (series, downsampling)."""

from __future__ import annotations

import asyncio
import math
import statistics
import time

import pytest
from rich.cells import cell_len
from app_helpers import ChartBlock, ChartRecord
from textual.app import App, ComposeResult
from textual.screen import ModalScreen

from tui.app.components.chart import IterationChart, format_ms
from tui.app.components.chart_data import (
    SeriesCache,
    chart_title,
    downsample,
    fit_legend,
    legend_parts,
    placeholder_text,
    series_from_record,
)

TIMEOUT = 10.0


def make_record(per_side: int = 200, block: int = 50) -> ChartRecord:
    """Eager ~1.25 ms, compiled ~0.83 ms, a 31 s compile call and warm-up; deterministic."""
    record = ChartRecord()
    record.samples["eager"].append(ChartBlock("warmup", 0, [2.4, 1.5, 1.3]))
    record.samples["compiled"].append(ChartBlock("compile", 0, [31234.0]))
    record.samples["compiled"].append(ChartBlock("warmup", 0, [3.1, 1.1, 0.9]))
    for b in range(per_side // block):
        base = b * block
        record.samples["eager"].append(
            ChartBlock("measure", b, [1.25 + 0.05 * math.sin((base + j) / 7.0) for j in range(block)])
        )
        record.samples["compiled"].append(
            ChartBlock("measure", b, [0.83 + 0.03 * math.cos((base + j) / 5.0) for j in range(block)])
        )
    return record


class ChartHost(App):
    def __init__(self, record=None, **chart_kwargs) -> None:
        super().__init__()
        self.record = record
        self.chart_kwargs = chart_kwargs

    def compose(self) -> ComposeResult:
        yield IterationChart(self.record, **self.chart_kwargs)

    @property
    def chart(self) -> IterationChart:
        return self.query_one(IterationChart)

    def lines(self) -> list[str]:
        chart = self.chart
        return [chart.render_line(y).text for y in range(chart.size.height)]

    def colours(self) -> set[str]:
        chart = self.chart
        return {
            seg.style.color.name
            for y in range(chart.size.height)
            for seg in chart.render_line(y)
            if seg.style and seg.style.color and seg.text.strip()
        }


async def redrawn(pilot, chart: IterationChart, after: int) -> None:
    """Wait (on the app's own timer) until the chart has redrawn more than ``after`` times."""
    async def redraws() -> None:
        while chart.redraw_count <= after:
            await pilot.pause(0.05)

    await asyncio.wait_for(redraws(), TIMEOUT)  # not asyncio.timeout: that is Python 3.11+


async def redraw(pilot, chart: IterationChart) -> None:
    """Mark the chart dirty (its record changed) and wait for the redraw that follows."""
    before = chart.redraw_count
    chart.mark_dirty()
    await redrawn(pilot, chart, before)


# -- widget --------------------------------------------------------------------------------


async def test_chart_draws_both_series_warmup_and_medians():
    record = make_record()
    eager = statistics.median(v for b in record.samples["eager"] if b.stage == "measure" for v in b.ms)
    compiled = statistics.median(v for b in record.samples["compiled"] if b.stage == "measure" for v in b.ms)
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        assert chart.redraw_count == 1  # drawn at once on the first layout
        lines = app.lines()
        assert len(lines) == 12
        legend = lines[0]
        assert (format_ms(eager), format_ms(compiled)) == ("1.26ms", "831µs")
        assert "━ eager median 1.26ms  ━ compiled median 831µs" in legend
        assert "compile/warm-up (31.2s↑)" in legend  # the compile call is off scale, said so
        plot = lines[1:-1]
        assert all(len(line) == 80 for line in lines)
        assert sum(ch >= "\u2800" and ch <= "\u28ff" for line in plot for ch in line) > 100
        assert sum("▶" in line[:8] for line in plot) == 2  # one median marker per side
        assert lines[-1].startswith("      └0") and lines[-1].endswith("iteration 203")
        colours = app.colours()
        assert {"#5fafff", "#ffaf00", "#8a8a8a"} <= colours  # eager, compiled, warm-up


async def test_rare_slow_iterations_do_not_squash_the_y_axis():
    # A real CPU run: a steady state of ~50 µs with three 25 ms hiccups (a GC pause, a page fault).
    record = ChartRecord()
    record.samples["compiled"].append(ChartBlock("compile", 0, [4321.0]))
    eager = [0.05 + 0.004 * math.sin(j / 7.0) for j in range(1000)]
    compiled = [0.04 + 0.003 * math.cos(j / 5.0) for j in range(1000)]
    for j in (100, 500, 900):
        eager[j] = 25.0
    record.samples["eager"].append(ChartBlock("measure", 0, eager))
    record.samples["compiled"].append(ChartBlock("measure", 0, compiled))
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = app.lines()
        top = lines[1][:6].strip()
        assert top.endswith("µs") and float(top[:-2]) < 100, top  # the axis fits the steady state
        assert "eager median 50.1µs ↑3  ━ compiled median 40µs  " in lines[0]  # clipped, counted
        assert "compile/warm-up (4.32s↑)" in lines[0]
        assert lines[1].count("↑") == 3  # the clipped iterations' columns, on the top row
        plot = lines[1:-1]
        # Both series spread over the plot's rows instead of lying flat on the bottom line.
        rows_with_dots = [y for y, line in enumerate(plot) if any("\u2800" < ch <= "\u28ff" for ch in line[7:])]
        assert len(rows_with_dots) >= len(plot) // 2, rows_with_dots


async def test_a_long_tail_of_slow_iterations_leaves_the_medians_readable():
    # A busy CPU: 18% of each side's iterations 20-100x slower than its steady state (the p99 is among them).
    record = ChartRecord()
    eager = [0.060 + 0.002 * math.sin(j / 7.0) for j in range(500)]
    compiled = [0.040 + 0.002 * math.cos(j / 5.0) for j in range(500)]
    for j in range(0, 500, 11):  # 46 of 500 per side, and a few more below
        eager[j], compiled[j] = 6.0, 3.5
    for j in range(5, 500, 12):
        eager[j] = 1.2
    record.samples["eager"].append(ChartBlock("measure", 0, eager))
    record.samples["compiled"].append(ChartBlock("measure", 0, compiled))
    assert sorted(eager)[int(0.99 * len(eager))] > 1.0  # the p99 alone would put the top at milliseconds
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = app.lines()
        top = lines[1][:6].strip()
        assert top.endswith("µs") and float(top[:-2]) < 100, top  # the axis follows the medians
        assert "↑" in lines[0] and "↑" in lines[1]  # the slow ones are marked at the top edge and counted
        plot = lines[1:-1]
        rows_with_dots = [y for y, line in enumerate(plot) if any("\u2800" < ch <= "\u28ff" for ch in line[7:])]
        assert len(rows_with_dots) >= len(plot) // 2, rows_with_dots


async def test_chart_empty_and_partial_records():
    app = ChartHost(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        assert any(line.strip() == "no run selected" for line in app.lines())
        before = chart.redraw_count
        record = ChartRecord()
        chart.set_run(record)
        await redrawn(pilot, chart, before)
        assert any("waiting for timing blocks" in line for line in app.lines())
        # Only the compile call so far: drawn, on its own scale.
        record.samples["compiled"].append(ChartBlock("compile", 0, [31234.0]))
        await redraw(pilot, chart)
        lines = app.lines()
        assert "━ compiled  " in lines[0] and "median" not in lines[0]
        # Eager warm-up, no measurement yet.
        record.samples["eager"].append(ChartBlock("warmup", 0, [2.0, 1.5, 1.2]))
        record.samples["eager"].append(ChartBlock("measure", 0, []))  # an empty block is harmless
        await redraw(pilot, chart)
        assert "━ eager  ━ compiled" in app.lines()[0]
        # One side measured only.
        record.samples["eager"].append(ChartBlock("measure", 1, [1.0, 1.1, 0.9]))
        await redraw(pilot, chart)
        assert "eager median 1ms  ━ compiled  " in app.lines()[0]


async def test_chart_with_100k_iterations_per_side_is_bounded():
    record = make_record(per_side=100_000, block=1000)
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        assert chart.redraw_count == 1
        assert chart.last_redraw_s < 1.0, chart.last_redraw_s  # ~60 ms cold on a laptop core
        # A live update (one more block) reuses the sorted data: cheaper than the cold draw.
        record.samples["eager"].append(ChartBlock("measure", 10_000, [1.2] * 1000))
        await redraw(pilot, chart)
        assert chart.last_redraw_s < 0.5, chart.last_redraw_s
        assert "eager median 1.25ms" in app.lines()[0]


async def test_redraws_are_timer_driven_not_per_event():
    record = make_record(per_side=100, block=50)
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        before = chart.redraw_count
        for i in range(1000):  # a burst of events, each growing the run
            record.samples["compiled"].append(ChartBlock("measure", 100 + i, [0.8]))
            chart.mark_dirty()
        assert chart.redraw_count == before  # nothing drawn per event
        await redrawn(pilot, chart, before)
        await pilot.pause(0.3)
        assert chart.redraw_count == before + 1  # one redraw for the whole burst
        # Events spread over time: at most max_fps redraws a second.
        start = time.monotonic()
        before = chart.redraw_count
        for i in range(1000):
            chart.mark_dirty()
            if i % 50 == 0:
                await pilot.pause(0.01)  # let the event loop (and its timers) run
        await redrawn(pilot, chart, before)
        elapsed = time.monotonic() - start
        assert chart.redraw_count - before <= 2 + 10 * elapsed


async def test_no_redraw_while_a_modal_is_open():
    app = ChartHost(make_record())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        app.push_screen(ModalScreen())
        await pilot.pause()
        before = chart.redraw_count
        chart.mark_dirty()
        await pilot.pause(0.3)
        assert chart.redraw_count == before
        app.pop_screen()
        await redrawn(pilot, chart, before)


# -- data ----------------------------------------------------------------------------------


def test_series_order_stages_and_medians():
    record = ChartRecord()
    # Blocks arrive interleaved and out of order; the chart orders them by stage, then index.
    record.samples["compiled"] += [
        ChartBlock("measure", 1, [3.0, 4.0]),
        ChartBlock("compile", 0, [900.0]),
        ChartBlock("measure", 0, [1.0, 2.0]),
        ChartBlock("warmup", 0, [5.0]),
    ]
    series = series_from_record(record)
    assert list(series) == ["compiled"]
    s = series["compiled"]
    assert list(s.ms) == [900.0, 5.0, 1.0, 2.0, 3.0, 4.0]
    assert s.stages == (("compile", 0, 1), ("warmup", 1, 2), ("measure", 2, 6))
    assert s.median == 2.5 and s.stage_start("measure") == 2 and s.stage_start("nope") is None
    assert list(s.measured) == [1.0, 2.0, 3.0, 4.0]
    assert (s.percentile(0), s.percentile(50), s.percentile(100)) == (1.0, 2.5, 4.0)
    assert (s.count_above(2.0), s.count_above(4.0), s.count_above(0.5)) == (2, 0, 4)
    assert series_from_record(None) == {}


def test_series_skips_non_finite_times():
    from array import array

    record = ChartRecord()
    record.samples["eager"] += [
        ChartBlock("measure", 0, array("d", [1.0, float("nan"), 3.0, float("inf")])),
        ChartBlock("measure", 1, [None, 2.0]),
        ChartBlock("measure", 2, [float("nan")]),
    ]
    s = series_from_record(record)["eager"]
    assert list(s.ms) == [1.0, 3.0, 2.0] and s.median == 2.0
    assert s.stages == (("measure", 0, 3),)


def test_series_cache_matches_a_full_rebuild_as_blocks_stream():
    record = ChartRecord()
    cache = SeriesCache()
    for i in range(30):
        side = "eager" if i % 2 else "compiled"
        record.samples[side].append(ChartBlock("measure", i // 2, [float((7 * i + j) % 13) for j in range(i % 5 + 1)]))
        assert cache.series(record) == series_from_record(record)
    other = make_record()
    assert cache.series(other) == series_from_record(other)  # another run: rebuilt


def test_downsample_buckets():
    record = ChartRecord()
    record.samples["eager"] += [
        ChartBlock("warmup", 0, [9.0, 8.0]),
        ChartBlock("measure", 0, [1.0, 3.0, 2.0, 4.0, 6.0, 5.0]),
    ]
    s = series_from_record(record)["eager"]
    # Fewer points than columns: one bucket per point, at column i * columns // span.
    sparse = downsample(s, columns=16, span=8)
    assert [(b.column, b.stage, b.median) for b in sparse] == [
        (0, "warmup", 9.0), (2, "warmup", 8.0), (4, "measure", 1.0), (6, "measure", 3.0),
        (8, "measure", 2.0), (10, "measure", 4.0), (12, "measure", 6.0), (14, "measure", 5.0),
    ]
    # More points than columns: 2 per column, each stage bucketed on its own.
    dense = downsample(s, columns=4, span=8)
    assert [(b.column, b.stage, b.lo, b.median, b.hi, b.count) for b in dense] == [
        (0, "warmup", 8.0, 8.5, 9.0, 2),
        (1, "measure", 1.0, 2.0, 3.0, 2),
        (2, "measure", 2.0, 3.0, 4.0, 2),
        (3, "measure", 5.0, 5.5, 6.0, 2),
    ]
    assert downsample(s, columns=0, span=8) == []


def test_downsample_100k_is_fast_and_exact_at_the_extremes(timed):
    values = [1.0 + (i * 7919 % 1000) / 1000.0 for i in range(100_000)]
    values[54_321] = 50.0
    record = ChartRecord()
    record.samples["eager"].append(ChartBlock("measure", 0, values))
    s = series_from_record(record)["eager"]
    start = time.perf_counter()
    buckets = downsample(s, columns=146, span=len(values))
    if timed:
        assert time.perf_counter() - start < 0.5
    assert len(buckets) == 146 and sum(b.count for b in buckets) == 100_000
    assert max(b.hi for b in buckets) == 50.0 and min(b.lo for b in buckets) == 1.0
    assert all(1.4 < b.median < 1.6 for b in buckets)  # estimated from a strided subset


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0.000812, "0.812µs"), (0.812, "812µs"), (1.234, "1.23ms"), (123.4, "123ms"), (31234.0, "31.2s"),
     (0.9998, "1ms"), (999.8, "1s"), (0.99949, "999µs")],
)
def test_format_ms(ms, text):
    assert format_ms(ms) == text


# -- legend, placeholder, title ----------------------------------------------------------------


def _full_legend_series():
    record = make_record()
    return series_from_record(record)


def _text(parts) -> str:
    return "".join(part.text for part in parts)


def test_the_full_legend_fits_where_there_is_room():
    parts = legend_parts(_full_legend_series(), 31234.0, {"eager": 3, "compiled": 12})
    assert _text(parts) == "━ eager median 1.26ms ↑3  ━ compiled median 831µs ↑12  ⠒ compile/warm-up (31.2s↑)"
    assert fit_legend(parts, 200) == parts


@pytest.mark.parametrize(
    "width, text",
    [
        (81, "━ eager median 1.26ms ↑3  ━ compiled median 831µs ↑12  ⠒ compile/warm-up (31.2s↑)"),
        (80, "━ eager 1.26ms ↑3  ━ compiled 831µs ↑12  ⠒ compile/warm-up (31.2s↑)"),
        (66, "━ eager 1.26ms ↑3  ━ compiled 831µs ↑12  ⠒ compile/warm-up"),
        # 80 columns with the sidebar (43 cells): compile/warm-up goes before any median.
        (43, "━ eager 1.26ms ↑3  ━ compiled 831µs ↑12"),
        (38, "━ eager 1.26ms  ━ compiled 831µs"),
        (31, "━ eager  ━ compiled"),
        (12, "━ eager"),
        (3, ""),
    ],
)
def test_a_narrow_legend_drops_whole_words_by_priority(width, text):
    parts = legend_parts(_full_legend_series(), 31234.0, {"eager": 3, "compiled": 12})
    fitted = fit_legend(parts, width)
    assert _text(fitted) == text
    assert len(_text(fitted)) <= width
    assert all(part in parts for part in fitted)  # parts are dropped whole, never cut


async def test_the_legend_is_never_cut_mid_word_in_the_widget():
    record = make_record()
    record.samples["eager"][1].ms[0] = 40.0  # one clipped eager iteration: ↑1
    for width in (45, 80, 120):
        app = ChartHost(record)
        async with app.run_test(size=(width, 24)) as pilot:
            await pilot.pause()
            legend = app.lines()[0].rstrip()
            full = "━ eager median 1.26ms ↑1  ━ compiled median 831µs  ⠒ compile/warm-up (31.2s↑)"
            words = full.split()
            assert all(word in words for word in legend.split()), legend
            assert "1.26ms" in legend and "831µs" in legend
            if width < len(full):
                assert "median" not in legend


class _Run(ChartRecord):
    def __init__(self, status: str, error_kind: str | None = None) -> None:
        super().__init__()
        self.status = status
        self.error_kind = error_kind


@pytest.mark.parametrize(
    "record, text",
    [
        (None, "no run selected"),
        (_Run("failed"), "run failed: no timing blocks"),
        (_Run("failed", "compile_error"), "run failed (compile_error): no timing blocks"),
        (_Run("cancelled"), "cancelled before any timing block"),
        (_Run("queued"), "queued: no timing blocks yet"),
        (_Run("done"), "no timing blocks to show"),
        (_Run("measuring"), "waiting for timing blocks…"),
        (ChartRecord(), "waiting for timing blocks…"),
    ],
)
def test_the_placeholder_says_what_is_true(record, text):
    assert placeholder_text(record) == text


def test_the_placeholder_leaves_out_an_error_kind_that_does_not_fit():
    record = _Run("failed", "compile_error")
    assert placeholder_text(record, 44) == "run failed (compile_error): no timing blocks"
    assert placeholder_text(record, 43) == "run failed: no timing blocks"


def test_the_title_names_the_run_where_it_fits():
    assert chart_title(None, 80) == "iterations"
    assert chart_title("pointwise n=512 inductor dyn=auto fp32 cpu", 80) == (
        "iterations · pointwise n=512 inductor dyn=auto fp32 cpu")
    assert chart_title("pointwise n=512 inductor dyn=auto fp32 cpu", 45) == "iterations · pointwise n=512 inductor…"
    assert chart_title("pointwise n=512 inductor dyn=auto fp32 cpu", 30) == "iterations"  # too little of it fits
    # a CJK file name's characters take two cells each: the title fits its border in cells, not characters
    wide = chart_title("模型文件名字很长的模型.py n=512 inductor", 45)
    assert wide.endswith("…") and cell_len(wide) <= 45 - 6, wide


async def test_a_failed_run_without_blocks_says_so_and_the_title_names_it():
    app = ChartHost(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.chart
        assert chart.border_title == "iterations"
        before = chart.redraw_count
        chart.set_run(_Run("failed", "worker_crashed"), "cnn inductor")
        await redrawn(pilot, chart, before)
        assert any(line.strip() == "run failed (worker_crashed): no timing blocks" for line in app.lines())
        assert not any("waiting" in line for line in app.lines())
        assert chart.border_title == "iterations · cnn inductor"


async def test_a_quarter_of_slow_iterations_still_leaves_the_medians_readable():
    """A real CPU sweep on a shared 2-core box: over 25% of the iterations 10-100x slow, so the 3-IQR fence
    (q3 among the slow ones) put the top at 16 ms over medians of 0.43 and 0.66 ms, both on the bottom row."""
    record = ChartRecord()
    eager = [0.43 + 0.02 * math.sin(j / 3.0) for j in range(400)]
    compiled = [0.66 + 0.03 * math.cos(j / 4.0) for j in range(400)]
    for j in range(0, 400, 3):  # a third of each side
        eager[j], compiled[j] = 4.0 + (j % 7) * 3.0, 4.3 + (j % 5) * 5.0
    record.samples["eager"].append(ChartBlock("measure", 0, eager))
    record.samples["compiled"].append(ChartBlock("measure", 0, compiled))
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = app.lines()
        top = lines[1][:6].strip()
        assert top.endswith("ms") and float(top[:-2]) <= 4 * 0.69 * 1.05 + 0.01, top
        markers = [y for y, line in enumerate(lines[1:-1]) if "▶" in line[:8]]
        assert len(markers) == 2, lines  # each median on a row of its own: told apart
        assert "↑" in lines[1]


class _TwoLineHost(ChartHost):
    CSS = "IterationChart { height: 2; min-height: 2; }"


async def test_a_failed_run_with_blocks_in_a_two_line_chart_shows_its_legend_and_why():
    """Two lines leave no room to plot, nor for the failure's reason under the placeholder: the legend and the
    placeholder are drawn, the reason (no line left for it) is not. The run has timing blocks, so the placeholder
    says there is no room for them (it said "no timing blocks"). The app's chart is taller (its min-height and
    border), but the drawing takes any size its widget is given."""
    record = make_record()
    record.status, record.error_kind, record.error_message = "failed", "compile_error", "boom " * 30
    app = _TwoLineHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = app.lines()
        assert app.chart.size.height == 2 and "eager" in lines[0]
        assert lines[1].strip() == "run failed: no room to plot"


async def test_a_run_that_failed_after_its_warm_up_says_why_under_its_plot():
    """README: "a failed run's chart says why it failed". It did only without timing blocks: a run that failed in
    the compiled warm-up plotted eager's blocks, and the reason was in a notice gone in seconds."""
    record = make_record()
    record.status, record.error_kind = "failed", "compile_error"
    record.error_message = "inductor failed to compile: NotADirectoryError: '/home/me/cache'"
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = [line.rstrip() for line in app.lines()]
        assert "eager" in lines[0] and any("▶" in line for line in lines)  # still the plot
        tail = " ".join(line.strip() for line in lines[-3:])
        assert "compile_error: inductor failed to compile: NotADirectoryError" in tail, lines


@pytest.mark.parametrize("blocks", [True, False], ids=["under-its-plot", "without-blocks"])
async def test_a_wide_character_reason_is_placed_by_cells_and_keeps_its_ellipsis(blocks):
    """The reason's rows were cut and centred by characters: a Chinese reason's rows (two cells a character) were
    padded as if half as wide, and the pane's edge cropped their ends, the ellipsis that says the details (enter)
    have the rest with them."""
    record = make_record() if blocks else ChartRecord()
    record.status, record.error_kind = "failed", "compile_error"
    record.error_message = "编译失败：找不到缓存目录 " * 40
    app = ChartHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = [line.rstrip() for line in app.lines()]
        width = app.chart.size.width
        reason = [line for line in lines if "编译" in line or line.endswith("…")]
        assert len(reason) >= 2 and reason[-1].endswith("…"), lines
        assert all(cell_len(line) <= width - 1 for line in reason), reason  # none reaches the pane's edge


class _NarrowHost(ChartHost):
    CSS = "IterationChart { width: 10; }"


@pytest.mark.parametrize("status", ["done", "measuring"])
async def test_a_run_with_blocks_in_a_pane_too_narrow_to_plot_says_there_is_no_room(status):
    """A pane narrower than a plot said "no timing blocks to show" (or "waiting for timing blocks") of a run
    whose blocks were there, cut mid-word at the pane's edge; it says there is no room, folded between words."""
    record = make_record()
    record.status = status
    app = _NarrowHost(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = [line.strip() for line in app.lines()]
        assert app.chart.size.width == 10 and "eager" in lines[0]
        assert [line for line in lines[1:] if line] == ["no room to", "plot"], lines
        assert not any("timing" in line or "waiting" in line for line in lines)


def test_the_placeholder_folds_between_words_and_drops_a_word_that_cannot_fit():
    from tui.app.components.chart_data import fold_words

    assert fold_words("no room to plot", 8) == ["no room", "to plot"]
    assert fold_words("no room to plot", 3) == []  # "ro…" or "no" and "to" alone would say something else
    assert placeholder_text(_Run("done"), blocks=True) == "no room to plot"
    assert placeholder_text(_Run("failed", "compile_error"), blocks=True) == "run failed: no room to plot"


def test_the_help_explains_every_mark_the_chart_draws():
    """The chart's marks are not self-evident (a user asked what ``↑9`` and ``▶`` mean): the help says."""
    from tui.app.components.chart_data import CLIPPED_MARK, MEDIAN_MARK
    from tui.app.components.help import INTRO

    chart = next(paragraph for paragraph in INTRO.split("\n\n") if "iterations pane" in paragraph)
    assert f"{MEDIAN_MARK} on the axis" in chart and "median" in chart
    assert f"show {CLIPPED_MARK} on the top row" in chart and f"({CLIPPED_MARK}21)" in chart
    assert "grey" in chart and "dotted line" in chart  # compile and warm-up, as drawn
