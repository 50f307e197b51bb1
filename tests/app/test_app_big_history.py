"""A big history (issue 11, item 7): chunks off the UI thread, ``h`` in one batch, no long UI stalls.

Before: ``h`` removed rows one by one (O(rows) each: 2.4 s for 2,000 rows, 14 s for 5,000, about
8 minutes for 20,000) and a 20,000-line history showed its first rows after 18 s, the UI thread
blocked for 10 s. ``benchmarks/history_perf.py`` measures the figures; these tests hold bounds
on them. A 50 Hz timer on the app (:class:`Ticks`) records when it fires: the longest gap
between two ticks, less the period, is the longest time the UI thread could not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import time
from itertools import pairwise
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.strip import Strip
from textual.widgets import DataTable

from big_history import big_run_id, write_big_history
from terminal_model import wait_quietly
from tui import paths
from tui.app.components.edge_cut import run_on_line
from tui.app.components.results_table import ResultsTable, history_cells
from tui.app.components.table_rows import BulkRowTable
from tui.app.messages import HistoryLoaded
from tui.app.previous_runs import CHUNK, FIRST_CHUNK, _freeze
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord

TICK_S = 0.02


def now() -> tuple[float, float]:
    """(wall clock, this thread's CPU time)."""
    return time.perf_counter(), time.thread_time()


class Ticks:
    """When a 50 Hz timer of the app fired: wall clock and the UI thread's CPU time (it runs there)."""

    def __init__(self) -> None:
        self.times: list[tuple[float, float]] = []

    def tick(self) -> None:
        self.times.append(now())

    def stalls(self, since: tuple[float, float]) -> tuple[float, float]:
        """Seconds after ``since`` (a :func:`now` on the UI thread): the longest gap between ticks less
        the period, and the most CPU time the UI thread used within one gap.

        The first is what a user sees, but on a busy 2-core box it includes other processes' turns;
        the second is the UI thread's own work between two ticks, whatever the machine does.
        """
        times = [since, *(t for t in self.times if t[0] > since[0])]
        pairs = list(pairwise(times))
        gap = max((b[0] - a[0] for a, b in pairs), default=0.0) - TICK_S
        work = max((b[1] - a[1] for a, b in pairs), default=0.0)
        return gap, work

    async def next(self, timeout: float = 10.0) -> None:
        """Until the timer fired once more (the UI thread ran again)."""
        count = len(self.times)
        await wait_quietly(lambda: len(self.times) > count, timeout, "a tick")


async def jump_work(app: App, ticks: Ticks, count: int) -> float:
    """The UI thread's work in one gap when the cursor jumps to rows never drawn, every visible line drawn anew:
    what one follow of a loading history costs on this box now. The median of nine jumps, in seconds: one jump
    reads from 30 to 75 ms on this 2-core box within one run, and a median is not moved by the odd jump that a
    regression (a full collection) also slows (docs/BENCHMARKS.md §12).

    The rows are mid-chunk (:data:`CHUNK`), 100 rows apart, where no follow of the load brought them into view.
    """
    table = app.query_one(ResultsTable)
    works = []
    for row in (FIRST_CHUNK + CHUNK * k + offset for k in (0, 1, 2) for offset in (100, 200, 300)):
        assert row < count
        await ticks.next()
        began = now()
        table.move_cursor(row=row, animate=False)
        await ticks.next()
        await ticks.next()
        works.append(ticks.stalls(began)[1])
    return statistics.median(works)


def ui_work_bound(jump: float) -> float:
    """The most UI work one gap of a history load may hold, once its first rows are drawn: 100 ms, or two and a
    half jumps (:func:`jump_work`) on a box where that is more, and never over 250 ms (a change that slows every
    line drawn slows the jumps too). A load's longest piece is then one follow's redraw (the chunk's rows are
    handled in a frame of their own), the most of 15-50 of them: up to 2.1 jumps in six readings of the two tests,
    as this box's pace moves between the load and the jumps; a full collection over the history's objects read 6.5
    (docs/BENCHMARKS.md §12)."""
    return min(max(0.1, 2.5 * jump), 0.25)


def _history_rows(count: int) -> list[tuple[str, dict]]:
    """``count`` history rows (run id, cells) made from the eight template runs of a big history."""
    path = Path(paths.data_dir()) / "template-history.jsonl"
    write_big_history(path, 8)
    templates = [history_cells(record) for record in History(path).load()[0]]
    return [(big_run_id(i), templates[i % len(templates)]) for i in range(count)]


class _Probe:
    """A ticking timer on a running app."""

    def __init__(self, app: App) -> None:
        self.ticks = Ticks()
        app.set_interval(TICK_S, self.ticks.tick, name="stall-probe")


async def test_a_history_loads_in_chunks_off_the_ui_thread_without_long_stalls(make_app, timed):
    count = 2000
    run_ids = write_big_history(paths.history_file(), count)
    # The app starts in a fresh process; here the heap holds every earlier test's objects, and one full
    # collection over them took 0.42 s inside a chunk's UI work in a whole-suite run (53-57 ms alone).
    # Out of the collector's way, as in a fresh process; the app's own allocations are still collected.
    gc.collect()
    gc.freeze()
    before = gc.get_freeze_count()
    app = make_app(load_history=False)
    seen: list[HistoryLoaded] = []
    async with app.run_test(
        size=(160, 48), message_hook=lambda m: isinstance(m, HistoryLoaded) and seen.append(m)
    ) as pilot:
        await pilot.pause()
        probe = _Probe(app)
        await probe.ticks.next()
        await probe.ticks.next()  # the app's start is behind: what follows is the history's doing
        began = now()
        app._load_history()
        await wait_quietly(lambda: app.table.row_count > 0, 5, "first rows")
        first = time.perf_counter() - began[0]
        await probe.ticks.next()
        await probe.ticks.next()
        drawn = probe.ticks.times[-1]  # the table's first rows and first layout are behind: one-off, bounded by first
        await wait_quietly(lambda: app.table.row_count == count, 30, "all rows")
        await wait_quietly(lambda: bool(seen) and seen[-1].final, 10, "the loader's last message")
        await probe.ticks.next()
        stall, work = probe.ticks.stalls(drawn)
        jump = await jump_work(app, probe.ticks, count) if timed else 0.0  # the bound's measure, where it is held
        print(f"first rows {first:.3f} s, all {time.perf_counter() - began[0]:.2f} s, longest stall "
              f"{stall * 1000:.0f} ms, UI work in one gap {work * 1000:.0f} ms (a jump's {jump * 1000:.0f} ms)")
        assert app.table.run_ids == run_ids
        sizes = [FIRST_CHUNK] + [CHUNK] * ((count - FIRST_CHUNK) // CHUNK) + [(count - FIRST_CHUNK) % CHUNK]
        assert [len(m.records) for m in seen] == [size for size in sizes if size] + [0]
        assert seen[-1].final and not seen[0].final
        assert gc.get_freeze_count() > before  # the history's objects are out of the collector's way
        if timed:
            assert first < 1.0
            assert work < ui_work_bound(jump) and stall < 0.5
    assert gc.get_freeze_count() == 0  # given back when the app ends


# ----- the table's rows, set at once, are what Textual's own add_row / remove_row make ------------


class _UncutTable(ResultsTable):
    """The results table drawn as DataTable draws it: a cell the pane's edge cuts shows its piece, as the
    reference's does (the ellipsis there is the results table's own rule, tested in test_app_edge_cut)."""

    def render_line(self, y: int) -> Strip:
        return BulkRowTable.render_line(self, y)


class _Tables(App):
    """The results table and a plain DataTable fed through Textual's public row API, side by side."""

    CSS = "ResultsTable, DataTable { width: 100; height: 20; }"

    def compose(self) -> ComposeResult:
        yield _UncutTable(id="results")
        yield DataTable(id="reference", cursor_type="row", zebra_stripes=True)


def _reference_rows(reference: DataTable, rows: list[tuple[str, dict]], table: ResultsTable) -> None:
    """The reference gets the rows and the columns the results table shows now (they follow its rows)."""
    reference.clear(columns=True)
    for column in table.ordered_columns:
        reference.add_column(column.label, key=column.key.value, width=column.width)
    for run_id, cells in rows:
        reference.add_row(*(cells[key] for key in table.shown_columns), key=run_id)


def _reference_run_on_line(reference: DataTable, y: int) -> str | None:
    """The run whose row Textual's own DataTable draws on the widget's line ``y`` (its header's line below 1)."""
    header = reference.header_height if reference.show_header else 0
    try:
        key, _ = reference._get_offsets(y if y < header else y + int(reference.scroll_y))
    except LookupError:
        return None
    return None if y < header else key.value


async def _same_table(pilot, table: ResultsTable, reference: DataTable) -> None:
    reference.move_cursor(row=table.cursor_row, animate=False)
    await pilot.pause()
    reference.scroll_to(y=table.scroll_y, animate=False, immediate=True)
    await pilot.pause()
    assert table.row_count == reference.row_count
    keys = [row.key.value for row in reference.ordered_rows]
    assert table.run_ids == keys
    assert [table.get_row_at(i) for i in range(table.row_count)] == [
        reference.get_row_at(i) for i in range(reference.row_count)
    ]
    assert [table.get_row_index(key) for key in keys] == list(range(len(keys)))
    assert [table._y_offsets[y] for y in range(len(table._y_offsets))] == list(reference._y_offsets)
    assert table.virtual_size.height == reference.virtual_size.height
    rows = [0, 1, table.row_count // 2, table.row_count - 1, table.row_count]  # the last: no such row
    assert [table._get_row_region(i) for i in rows] == [reference._get_row_region(i) for i in rows]
    cells = [Coordinate(i, j) for i in rows for j in (0, 3, len(table.columns) - 1, len(table.columns))]
    assert [table._get_cell_region(c) for c in cells] == [reference._get_cell_region(c) for c in cells]
    region = table.size.region  # drawn alike (the header, which shows the sort, aside)
    shown = [_reference_run_on_line(reference, y) for y in range(1, region.height)]
    assert [run_on_line(table, y) for y in range(1, region.height)] == shown  # the row each line's edge cut reads
    assert [strip.text for strip in table.render_lines(region)][1:] == [
        strip.text for strip in reference.render_lines(region)
    ][1:]


async def test_rows_set_at_once_match_textuals_own_row_api():
    rows = _history_rows(600)
    session = [RunRecord(f"session-{i}", RunOptions(workload="pointwise").validated()) for i in range(3)]
    session_rows = [(record.run_id, None) for record in session]
    app = _Tables()
    async with app.run_test(size=(200, 30)) as pilot:
        table, reference = app.query_one(ResultsTable), app.query_one("#reference", DataTable)
        table.add_history(rows[:300])  # appended
        table.add_records(session)
        table.add_history(rows[300:])  # before this session's rows: rebuilt
        await pilot.pause()
        session_rows = [(run_id, table._cells[run_id]) for run_id, _ in session_rows]
        _reference_rows(reference, rows + session_rows, table)
        await pilot.pause()
        await _same_table(pilot, table, reference)

        table.move_cursor(row=600)  # a session row, then hide the history under it
        table.show_history(False)
        _reference_rows(reference, session_rows, table)
        await pilot.pause()
        await _same_table(pilot, table, reference)
        assert table.selected_run_id == "session-0"

        table.show_history(True)
        _reference_rows(reference, rows + session_rows, table)
        await pilot.pause()
        await _same_table(pilot, table, reference)
        assert table.selected_run_id == "session-0"  # the cursor stays on its run

        table.sort_by("speedup", reverse=True)
        reference.sort("speedup", key=lambda cell: cell.sort_key, reverse=True)
        await pilot.pause()
        assert table.run_ids == [row.key.value for row in reference.ordered_rows]
        assert table.selected_run_id == "session-0"

        run_id = rows[5][0]
        table.update_cell(run_id, "status", rows[6][1]["workload"])  # rows set at once take updates
        reference.update_cell(run_id, "status", rows[6][1]["workload"])
        await pilot.pause()
        await _same_table(pilot, table, reference)

        table.show_history(False)  # hidden sorted, shown again in queue order
        table.sort_by(None)
        table.show_history(True)
        _reference_rows(reference, rows + session_rows, table)
        reference.update_cell(run_id, "status", rows[6][1]["workload"])
        await pilot.pause()
        await _same_table(pilot, table, reference)
        assert table.selected_run_id == "session-0"


async def test_a_rows_place_is_found_without_walking_the_rows_above_it(monkeypatch):
    """DataTable sums the heights of every row above a row to place it, on each cursor move and row refresh: with
    one-line rows the place is the index (a history's load moved the cursor 50 times over 20,000 rows)."""
    app = _Tables()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(ResultsTable)
        table.add_history(_history_rows(500))
        await pilot.pause()
        header = table.header_height

        def walked(_):
            raise AssertionError("the rows in order were read")

        monkeypatch.setattr(ResultsTable, "ordered_rows", property(walked))
        assert table._get_row_region(499).y == 499 + header
        assert table._get_cell_region(Coordinate(499, 2)).y == 499 + header


# ----- h with 20,000 rows -------------------------------------------------------------------------


async def test_twenty_thousand_history_rows_hide_and_show_within_a_second(make_app, timed):
    count = 20000
    rows = _history_rows(count)
    app = make_app(load_history=False)
    async with app.run_test(size=(160, 48)):
        probe = _Probe(app)
        screen, table = app.main_screen, app.table
        app.history_ids = [run_id for run_id, _ in rows]
        for start in range(0, count, 2000):  # as the loader's chunks arrive (500 a chunk there)
            screen.add_history_rows(rows[start : start + 2000])
            await probe.ticks.next()
        _freeze()  # what the loader does after each chunk
        app._history_frozen = True
        session = RunRecord.new(RunOptions(workload="pointwise").validated())
        app.inject_record(session)  # a run of this session, below the history
        await probe.ticks.next()
        session_id = session.run_id
        timings = {}
        for step, expected in (("hide", 1), ("show", count + 1), ("hide again", 1), ("show again", count + 1)):
            began = now()
            app.action_toggle_history()
            await wait_quietly(lambda expected=expected: table.row_count == expected, 10, step)
            await probe.ticks.next()
            timings[step] = (time.perf_counter() - began[0], *probe.ticks.stalls(began))
        print(
            {step: tuple(round(v * 1000) for v in values) for step, values in timings.items()},
            "(ms: took, stall, UI work)",
        )
        assert table.run_ids[-1] == session_id and table.run_ids[0] == rows[0][0]
        for step, (took, _stall, work) in timings.items():
            if timed:
                assert took < 1.0, step
                assert work < 0.25, step


# ----- a 20,000-line history, end to end ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.perf  # wall-clock bounds: run serially (.ci/run's perf pass), never beside the parallel suite
@pytest.mark.usefixtures("python_gc")  # its bounds hold under the collector's thresholds a user's app has
async def test_a_twenty_thousand_line_history_shows_rows_within_a_second_and_never_stalls_the_ui():
    from app_helpers import fake_runner, no_gpu_source
    from tui.app.app import CompileLabApp

    count = 20000
    run_ids = write_big_history(paths.history_file(), count)
    mounted: list[tuple[float, float]] = []
    ticks = Ticks()

    class Timed(CompileLabApp):
        def on_mount(self) -> None:
            super().on_mount()
            mounted.append(now())
            self.set_interval(TICK_S, ticks.tick, name="stall-probe")

    app = Timed(runner=fake_runner(), telemetry=no_gpu_source(), gpu_interval=0.2)
    try:
        async with app.run_test(size=(160, 48)):
            await wait_quietly(lambda: bool(mounted), 10, "mounted")
            await wait_quietly(lambda: app.table.row_count > 0, 5, "first rows")
            first = time.perf_counter() - mounted[0][0]
            await ticks.next()
            await ticks.next()
            drawn = ticks.times[-1]  # the app's start and the table's first full redraw are behind
            await wait_quietly(lambda: app.table.row_count == count, 120, "all rows")
            loaded = time.perf_counter() - mounted[0][0]
            await ticks.next()
            stall, work = ticks.stalls(drawn)
            jump = await jump_work(app, ticks, count)
            began = now()
            app.action_toggle_history()
            await wait_quietly(lambda: app.table.row_count == 0, 5, "hidden")
            await ticks.next()
            hide = time.perf_counter() - began[0]
            began = now()
            app.action_toggle_history()
            await wait_quietly(lambda: app.table.row_count == count, 5, "shown")
            await ticks.next()
            show = time.perf_counter() - began[0]
            print(f"first rows {first:.2f} s, all {loaded:.1f} s, longest stall {stall * 1000:.0f} ms "
                  f"(UI work {work * 1000:.0f} ms, a jump's {jump * 1000:.0f} ms), "
                  f"h off {hide * 1000:.0f} ms, on {show * 1000:.0f} ms")
            assert app.table.run_ids == run_ids
            assert first < 1.0
            assert work < ui_work_bound(jump) and stall < 0.5
            assert hide < 1.0 and show < 1.0
    finally:
        app.runner.kill_all()
    gc.collect()  # this test's 20,000 records, given back to the collector at exit: freed here, not in a later test


async def test_quitting_while_the_history_loads_stops_the_loader_cleanly(make_app):
    from textual.worker import WorkerCancelled, WorkerState

    write_big_history(paths.history_file(), 5000)
    app = make_app()
    async with app.run_test(size=(160, 48)):
        await wait_quietly(lambda: app.table.row_count > 0, 5, "first rows")
        [loader] = [worker for worker in app.workers if worker.group == "history"]
        assert app.table.row_count < 5000
    # run_test re-raises what the app raised: a chunk arriving while the app closes is dropped
    with contextlib.suppress(WorkerCancelled):
        await asyncio.wait_for(loader.wait(), 5)
    assert loader.state in (WorkerState.CANCELLED, WorkerState.SUCCESS)
    assert gc.get_freeze_count() == 0


def test_a_loader_that_would_freeze_after_the_exit_unfroze_freezes_nothing():
    """The race behind a flaky quit test: the loader, between two chunks when the app quit, froze the objects
    after the exit had unfrozen them, and they stayed out of the collector (793,724 of them)."""
    from tui.app.previous_runs import PreviousRuns

    previous = PreviousRuns(None, None, lambda: None, lambda: None)  # type: ignore[arg-type]
    try:
        assert previous._freeze_unless_closed() and gc.get_freeze_count() > 0
        previous.unfreeze()  # the exit
        assert gc.get_freeze_count() == 0
        assert not previous._freeze_unless_closed()  # the loader's next chunk, after the exit
        assert gc.get_freeze_count() == 0 and not previous.frozen
    finally:
        gc.unfreeze()


async def test_hidden_history_is_named_under_the_table(make_app):
    """History hidden (at the last quit, or with h): the pane says how many runs it hides, not an empty table."""
    rows = _history_rows(3)
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, table = app.main_screen, app.table
        app.history_ids = [run_id for run_id, _ in rows]
        screen.add_history_rows(rows)
        await pilot.pause()
        # At 80 columns the columns telling the rows apart fold into one config cell: none is off screen.
        shown = ""
        assert table.border_subtitle == shown and "config" in table.shown_columns
        app.action_toggle_history()
        await wait_quietly(lambda: table.row_count == 0, 5, "hidden")
        assert table.border_subtitle == "3 previous runs hidden · h shows them"
        app.action_toggle_history()
        await wait_quietly(lambda: table.row_count == 3, 5, "shown")
        assert table.border_subtitle == shown
