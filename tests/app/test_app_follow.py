"""Following the run at 80x24 with a history: the app opens at the newest stored run (in view, in
the chart); the running or just-finished row stays in view until the user moves the cursor; a new
run queued by a key press, or the cursor put back on the last row, follows again. And the chart of
a failed run says so."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from textual.widgets import Input

from app_helpers import fake_runner, wait_until
from big_history import write_big_history
from tui import paths
from tui.app.components.chart import IterationChart
from tui.app.components.picker import FILE_CHOICE, Picker
from tui.app.components.results_table import ResultsTable
from tui.present.format import workload_label

HISTORY = 120  # far more rows than the table shows at 80x24


def visible_rows(table) -> range:
    """The rows the table shows now (its header excluded)."""
    top = round(table.scroll_y)
    return range(top, top + table.scrollable_content_region.height - table.header_height)


async def in_view(pilot, table, row: int) -> None:
    """The cursor is on ``row`` and the table scrolls it into view (after a refresh: awaited)."""
    assert table.cursor_row == row
    await wait_until(pilot, lambda: row in visible_rows(table), timeout=5, what=f"row {row} in view")


async def loaded(app, pilot, count: int) -> None:
    """Wait for the history's load to end: its ``count`` rows are in and the newest followed (its last message
    comes after the last chunk's rows, which may be added out of view: tui.app.previous_runs)."""
    await wait_until(pilot, lambda: app.previous.done, what="the history's load")
    assert app.table.row_count == count


@contextlib.asynccontextmanager
async def opened_at_the_newest(make_app, size: tuple[int, int]):
    """An app started at ``size`` with HISTORY stored runs, their load ended and the newest in view:
    ``(app, pilot, table)``."""
    write_big_history(paths.history_file(), HISTORY)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await loaded(app, pilot, HISTORY)
        await in_view(pilot, app.table, HISTORY - 1)
        yield app, pilot, app.table


async def start(app, pilot) -> None:
    """Wait for the history's rows, ask for short runs, focus the table (the sidebar hidden: more rows fit)."""
    await loaded(app, pilot, HISTORY)
    app.query_one(Picker).query_one("#iters", Input).value = "20"
    app.table.focus()
    await pilot.pause()


async def measuring(app, pilot, row: int) -> None:
    """Wait until row ``row`` is a run held mid-measurement by the closed gate."""
    def held() -> bool:
        ids = app.table.run_ids
        return len(ids) > row and app.records[ids[row]].status == "measuring"

    await wait_until(pilot, held, what=f"row {row} measuring")


async def run_ended_row(app, pilot, count: int) -> None:
    """Wait until the table has ``count`` rows and every run ended and shows its final row."""
    await wait_until(pilot, lambda: app.table.row_count == count, what=f"{count} rows")
    await wait_until(pilot, lambda: app.settled, what="settled")


async def test_the_running_row_stays_in_view_until_the_user_moves_the_cursor(make_app, tmp_path):
    write_big_history(paths.history_file(), HISTORY)
    gate = tmp_path / "gate"  # runs hold after their first measure round until it exists
    app = make_app(runner=fake_runner(FAKE_WORKER_GATE=str(gate)))
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        table = app.table
        await in_view(pilot, table, HISTORY - 1)  # the app opened at the newest stored run
        await pilot.press("r")
        await measuring(app, pilot, HISTORY)
        await in_view(pilot, table, HISTORY)  # the running row
        gate.touch()
        await run_ended_row(app, pilot, HISTORY + 1)
        await in_view(pilot, table, HISTORY)  # the just-finished row
        assert table.following

        # The user moves the cursor up: a run queued without a key press does not move the view.
        await pilot.press("up", "up")
        assert not table.following
        where, scroll = table.cursor_row, table.scroll_y
        app.enqueue([app.picker.current_options().validated()])
        await run_ended_row(app, pilot, HISTORY + 2)
        assert (table.cursor_row, table.scroll_y) == (where, scroll)
        assert HISTORY + 1 not in visible_rows(table)

        # A run started by a key press follows again: its row is in view while it runs and after.
        gate.unlink()
        await pilot.press("r")
        await measuring(app, pilot, HISTORY + 2)
        assert table.following
        await in_view(pilot, table, HISTORY + 2)
        gate.touch()
        await run_ended_row(app, pilot, HISTORY + 3)
        assert table.following
        await in_view(pilot, table, HISTORY + 2)


@pytest.mark.parametrize("count", [10, HISTORY])  # one chunk of the loader; several (tui.app.previous_runs)
async def test_a_restart_opens_at_the_newest_stored_run_with_the_chart_on_it(make_app, count, monkeypatch):
    """A user coming back sees their latest runs: more than the table shows at 80x24 are stored, and the
    cursor, the view and the chart are on the newest (the oldest, row 0, is off-screen). Only the first chunk
    and the load's end follow here, as on a box where the chunks come faster than FOLLOW_EVERY_S."""
    from tui.app import previous_runs

    monkeypatch.setattr(previous_runs, "FOLLOW_EVERY_S", 3600.0)
    freeze = previous_runs._freeze
    monkeypatch.setattr(previous_runs, "_freeze", lambda: (time.sleep(0.3), freeze()))  # a loaded box's loader
    run_ids = write_big_history(paths.history_file(), count)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot, count)
        table = app.table
        await in_view(pilot, table, count - 1)
        assert 0 not in visible_rows(table) and table.following
        await wait_until(pilot, lambda: app.screen.chart_run is app.records[run_ids[-1]], what="the chart")
        newest = app.records[run_ids[-1]]
        title = app.query_one(IterationChart).border_title
        assert title.startswith(f"iterations · {workload_label(newest.options)[:20]}"), title  # cut at 80 columns


async def test_the_table_follows_the_loading_history_at_most_every_second_and_at_its_end(make_app, monkeypatch):
    """Each follow draws every visible line anew: a chunk that comes within FOLLOW_EVERY_S of the last follow adds
    its rows out of view, and the load's end brings the newest into view."""
    from tui.app import previous_runs
    from tui.app.components.results_table import history_cells
    from tui.app.messages import HistoryLoaded
    from tui.engine.store.history import History

    monkeypatch.setattr(previous_runs, "FOLLOW_EVERY_S", 3600.0)
    write_big_history(paths.history_file(), 60)
    records = History(paths.history_file()).load()[0]
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.table
        chunks = [records[:20], records[20:]]
        drawn = [threading.Event() for _ in chunks]
        for part, event in zip(chunks, drawn, strict=True):
            app.post_message(HistoryLoaded(part, [], [history_cells(r) for r in part], final=False, drawn=event))
            await wait_until(pilot, event.is_set, what="a chunk drawn (and followed, if it is)")
            assert table.row_count == records.index(part[-1]) + 1
            assert table.cursor_row == 19 and table.following  # the first chunk was followed, the second not yet
        assert not app.previous.done
        app.post_message(HistoryLoaded([], [], final=True))
        await wait_until(pilot, lambda: app.previous.done, what="the load's end")
        await in_view(pilot, table, 59)  # followed by the time the load reads as done


async def test_a_cursor_moved_while_the_history_loads_stays_where_the_user_put_it(make_app):
    """Following the newest stored run stops once the user moves: a later chunk does not take the cursor away."""
    from tui.app.components.results_table import history_cells
    from tui.app.messages import HistoryLoaded
    from tui.engine.store.history import History

    write_big_history(paths.history_file(), 30)
    records = History(paths.history_file()).load()[0]
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.table

        async def chunk(part) -> None:
            app.post_message(HistoryLoaded(part, [], [history_cells(r) for r in part], final=False))
            await wait_until(pilot, lambda: table.row_count == records.index(part[-1]) + 1, what="a chunk")

        await chunk(records[:20])
        await in_view(pilot, table, 19)
        table.focus()
        await pilot.press("up")
        assert not table.following
        await chunk(records[20:])
        assert table.cursor_row == 18 and table.selected_run_id == records[18].run_id


async def test_putting_the_cursor_back_on_the_last_row_follows_again(make_app):
    write_big_history(paths.history_file(), HISTORY)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        table = app.table
        await pilot.press("ctrl+home")  # the oldest row: away from the newest
        assert table.cursor_row == 0 and not table.following
        app.enqueue([app.picker.current_options().validated()])
        await run_ended_row(app, pilot, HISTORY + 1)
        assert table.cursor_row == 0 and HISTORY not in visible_rows(table)

        await pilot.press("ctrl+end")  # back on the last row
        assert table.following
        app.enqueue([app.picker.current_options().validated()])
        await run_ended_row(app, pilot, HISTORY + 2)
        await in_view(pilot, table, HISTORY + 1)

        # A click on another row is a move too.
        top = visible_rows(table)[0]
        assert await pilot.click(ResultsTable, offset=(4, 2))  # under the border and the header
        assert table.cursor_row == top and not table.following


async def test_the_chart_of_a_failed_run_says_it_failed(make_app):
    app = make_app(behaviour="fail")
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(IterationChart)
        assert chart.border_title == "iterations"
        await wait_until(pilot, lambda: "no run selected" in _chart_text(chart), what="no run selected")
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run ended")
        # At 80x24 the run moved the sidebar aside; the chart says why the run failed under the placeholder.
        await wait_until(
            pilot,
            lambda: "run failed: no timing blocks" in _chart_text(chart)
            and "compile_error: compile failed: fake inductor error" in _chart_text(chart),
            what="the failure in the chart",
        )
        assert "waiting" not in _chart_text(chart)


async def test_a_done_runs_chart_plots_at_80x24_and_says_no_room_where_the_pane_has_none(make_app):
    """At 80x24 the done run's blocks are plotted, the options beside the chart or not. In a terminal so narrow that
    the options leave the chart no room for a plot, it said "no timing blocks to show" of a run whose blocks were
    there, cut mid-word ("no timin"); it says there is no room, and plots again when the room is back."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(IterationChart)
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run ended")
        await wait_until(pilot, lambda: "iteration" in _chart_text(chart), what="the plot")
        if chart.size.width >= 70:  # the run moved the options aside: bring them back beside the chart
            await pilot.press("b")
            await wait_until(pilot, lambda: chart.size.width < 70, what="the options beside the chart")
        await wait_until(pilot, lambda: "iteration" in _chart_text(chart), what="the plot beside the options")
        assert "no room" not in _chart_text(chart) and "timing" not in _chart_text(chart)
        await pilot.resize_terminal(45, 20)
        await wait_until(pilot, lambda: _folded(chart) == "━eagernoroomtoplot", what="no room, said whole")
        assert "timing" not in _chart_text(chart)
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: "iteration" in _chart_text(chart), what="the plot again")


async def test_at_80x24_a_failed_user_files_row_and_chart_say_which_file_and_why(make_app, tmp_path):
    """The table has no room for the error at 80 columns and the notice goes in seconds: the chart under the
    table keeps the reason, folded to its width, the sidebar beside it or not; the row names the file."""
    model = tmp_path / "model.py"
    model.write_text("def make_workload(device, dtype):\n    raise RuntimeError('no')\n")
    message = f"the workload raised ValueError at {model}:4 in forward: expected 128 features, got 64"
    app = make_app(runner=fake_runner("fail", FAKE_WORKER_FAIL_KIND="runtime_error",
                                      FAKE_WORKER_FAIL_MESSAGE=message))
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(IterationChart)
        picker = app.query_one(Picker)
        picker.query_one("#workload").value = FILE_CHOICE
        await wait_until(pilot, lambda: not picker.query_one("#user-path-row").has_class("-hidden"), what="path row")
        picker.query_one("#user-path", Input).value = str(model)
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run ended")
        run_id = app.table.run_ids[0]
        assert app.table.cell_text(run_id, "status") == "failed"
        assert app.table.cell_text(run_id, "workload") == "model.py"  # not model.py:make_workload
        assert chart.border_title.startswith("iterations · model.py inductor")
        await wait_until(pilot, lambda: "runtime_error: the workload raised" in _chart_text(chart), what="the reason")
        assert "run failed: no timing blocks" in _chart_text(chart)
        if chart.size.width < 70:  # the options beside the chart: hide them
            await pilot.press("b")
            await wait_until(pilot, lambda: chart.size.width >= 70, what="the chart wide")
        whole = "".join(f"runtime_error: {message}".split())
        await wait_until(pilot, lambda: whole in _folded(chart), what="the whole reason")
        assert "…" not in _chart_text(chart)
        await pilot.press("b")  # the options back beside it: the reason folds to the narrower chart
        await wait_until(pilot, lambda: chart.size.width < 50, what="the options beside the chart")
        await wait_until(pilot, lambda: max(map(len, _chart_text(chart).split("\n"))) == chart.size.width
                         and whole[:60] in _folded(chart), what="the reason at the narrow width")
        assert "run failed: no timing blocks" in _chart_text(chart)


def _folded(chart: IterationChart) -> str:
    """The chart's text without its white space: a reason folded over lines (a long path cut) reads as one."""
    return "".join(_chart_text(chart).split())


def _chart_text(chart: IterationChart) -> str:
    return "\n".join(chart.render_line(y).text for y in range(chart.size.height))


async def test_a_queue_of_runs_is_followed_to_its_last_run(make_app):
    write_big_history(paths.history_file(), HISTORY)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        table = app.table
        await pilot.press("ctrl+home")
        assert not table.following
        options = app.picker.current_options().validated()
        # What the sweep dialog's confirmation calls: three runs queued by one key press.
        app.queue_confirmed([options, options, options], "sweep", source="a test")
        await run_ended_row(app, pilot, HISTORY + 3)
        assert table.following
        await in_view(pilot, table, HISTORY + 2)  # the last one to run


async def test_the_chart_of_a_run_cancelled_before_any_block_says_so(make_app, tmp_path):
    gate = tmp_path / "gate"  # never opened: the first run holds mid-measurement
    app = make_app(runner=fake_runner(FAKE_WORKER_GATE=str(gate)))
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(IterationChart)
        app.table.focus()
        await pilot.press("r", "r")
        await measuring(app, pilot, 0)
        await wait_until(pilot, lambda: app.table.row_count == 2, what="the second run queued")
        await pilot.press("X")  # the running run and the queued one
        await wait_until(pilot, lambda: app.settled, what="both ended")
        await pilot.press("ctrl+end")  # the run cancelled while queued
        await wait_until(pilot, lambda: "cancelled before any timing block" in _chart_text(chart),
                         what="the cancel in the chart")
        assert "waiting" not in _chart_text(chart)


async def _first_history_row(app, pilot) -> IterationChart:
    """The chart, once the app shows the history's two rows and the cursor is on the first."""
    await wait_until(pilot, lambda: app.table.row_count == 2, what="the history's rows")
    app.table.focus()
    await pilot.press("ctrl+home")
    return app.query_one(IterationChart)


async def test_the_chart_reads_a_previous_runs_stored_blocks(make_app):
    from tui.engine.store.history import History

    first = make_app()
    async with first.run_test(size=(80, 24)) as pilot:
        first.query_one(Picker).query_one("#iters", Input).value = "20"
        first.table.focus()
        await pilot.press("r", "r")
        await wait_until(pilot, lambda: first.table.row_count == 2 and first.settled, what="two runs saved")
    history = History(paths.history_file())
    records = history.load()[0]
    assert len(records) == 2 and all(history.samples_path(r) is not None for r in records)
    history.samples_path(records[1]).unlink()  # the second run's blocks are lost

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = await _first_history_row(app, pilot)
        await wait_until(pilot, lambda: "━ eager" in _chart_text(chart) and "└0" in _chart_text(chart),
                         what="the first run's plot")
        shown = chart.record
        assert shown is not None and shown.samples_loaded
        await pilot.press("down")
        await wait_until(pilot, lambda: "timing blocks could not be read" in _chart_text(chart), what="the lost blocks")
        # The chart keeps one stored run's blocks in memory: walking a long history stays flat.
        assert not shown.samples_loaded and shown.summary().speedup is not None

    # the user's own prune is said as such, as the details say it (it read "could not be read")
    from tui.engine.store.prune import apply_prune, plan_prune, scan_runs

    assert apply_prune(plan_prune(scan_runs(), keep_last=0)).runs == 1  # the first run: the second has no files
    again = make_app()
    async with again.run_test(size=(80, 24)) as pilot:
        chart = await _first_history_row(again, pilot)
        await wait_until(pilot, lambda: "timing blocks pruned (compile-lab prune)" in _chart_text(chart),
                         what="the pruned blocks")


async def test_below_120_columns_queueing_runs_moves_the_options_aside_once_told(make_app):
    """At 80x24 the picker leaves the table ~40 columns: a key-press run hides it (b brings it back), said once."""
    from app_helpers import notifications

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        left = app.query_one("#left")
        assert left.display
        await pilot.press("r")
        await wait_until(pilot, lambda: not left.display, what="sidebar hidden")
        assert app.focused is app.table
        assert sum("Run options hidden" in n for n in notifications(app)) == 1
        await pilot.press("b")
        assert left.display
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run")
        await pilot.press("r")
        await wait_until(pilot, lambda: not left.display, what="hidden again")
        assert sum("Run options hidden" in n for n in notifications(app)) == 1  # told once
    wide = make_app()
    async with wide.run_test(size=(160, 48)) as pilot:
        await pilot.press("r")
        await wait_until(pilot, lambda: len(wide.session.records) == 1, what="a run")
        assert wide.query_one("#left").display  # room enough: nothing moves


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_followed_row_stays_in_view_when_the_terminal_gets_smaller(make_app, size):
    """A smaller terminal shortens the table: the newest run's row, followed, stays on screen, and it is still there
    once the terminal grows and shrinks again."""
    async with opened_at_the_newest(make_app, (160, 48)) as (_app, pilot, table):
        tall = table.size.height
        await pilot.resize_terminal(*size)
        await wait_until(pilot, lambda: table.size.height < tall, what="a shorter table")
        await in_view(pilot, table, HISTORY - 1)
        await pilot.resize_terminal(160, 48)
        await in_view(pilot, table, HISTORY - 1)
        await pilot.resize_terminal(size[0], size[1] - 2)
        await in_view(pilot, table, HISTORY - 1)


async def test_hiding_the_history_while_it_loads_still_ends_on_the_newest_run(make_app):
    """``h`` is not a cursor move: previous runs hidden while they load and shown after, the cursor and the chart are
    on the newest stored run; while hidden, with no row left, the chart shows none."""
    from tui.app.components.results_table import history_cells
    from tui.app.messages import HistoryLoaded
    from tui.engine.store.history import History

    write_big_history(paths.history_file(), 60)
    records = History(paths.history_file()).load()[0]
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.table
        first = threading.Event()
        app.post_message(HistoryLoaded(records[:20], [], [history_cells(r) for r in records[:20]], final=False,
                                       drawn=first))
        await wait_until(pilot, first.is_set, what="the first chunk drawn and followed")
        assert table.cursor_row == 19 and app.main_screen.chart_run is records[19]
        app.action_toggle_history()
        await wait_until(pilot, lambda: table.row_count == 0, what="the history hidden")
        assert app.main_screen.chart_run is None
        app.post_message(HistoryLoaded(records[20:], [], [history_cells(r) for r in records[20:]], final=False))
        app.post_message(HistoryLoaded([], [], final=True))
        await wait_until(pilot, lambda: app.previous.done, what="the load's end")
        app.action_toggle_history()
        await wait_until(pilot, lambda: table.row_count == 60, what="the history shown")
        await in_view(pilot, table, 59)
        await wait_until(pilot, lambda: app.main_screen.chart_run is app.records[records[59].run_id], what="the chart")


async def test_a_resize_leaves_a_view_the_user_scrolled_away_from_the_cursor(make_app):
    """A resize keeps only a followed row in view: a user who moved the cursor and scrolled away reads on."""
    async with opened_at_the_newest(make_app, (160, 48)) as (_app, pilot, table):
        table.focus()
        await pilot.press("up", "up")
        table.scroll_home(animate=False)
        await wait_until(pilot, lambda: table.scroll_y == 0, what="the view at the top")
        await pilot.resize_terminal(160, 47)
        await pilot.pause()
        await pilot.pause()
        assert table.scroll_y == 0 and table.cursor_row == HISTORY - 3


async def test_a_key_in_an_empty_table_does_not_stop_following(make_app):
    """Every previous run hidden, an arrow key moves nothing: shown again, the table is on the newest run."""
    async with opened_at_the_newest(make_app, (80, 24)) as (_app, pilot, table):
        table.focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: table.row_count == 0, what="the history hidden")
        await pilot.press("down", "up")
        assert table.following
        await pilot.press("h")
        await wait_until(pilot, lambda: table.row_count == HISTORY, what="the history shown")
        await in_view(pilot, table, HISTORY - 1)
