"""Baselines in the app (issue 15 item 3): m marks one, the vs base column compares, clearing removes it."""

from __future__ import annotations

import re
import threading

from rich.console import Console

from app_helpers import wait_until
from fakes.timed import pointwise, timed_run
from tui.app.baseline_actions import BaselineCompareScreen
from tui.app.baselines import summary_text
from tui.engine.store.history import History

SIZE = (160, 48)
BASE, SLOWER, FASTER, OTHER = (f"20261201-00000{i}-{c * 6}" for i, c in enumerate("abcd"))


def _runs():
    """A baseline, a slower and a faster run of its workload with other options, and another workload's run."""
    return [
        timed_run(BASE, compiled=1.0, seed=1),
        timed_run(SLOWER, pointwise(mode="max-autotune"), compiled=1.10, seed=2),
        timed_run(FASTER, pointwise(fullgraph=True), compiled=0.85, seed=3),
        timed_run(OTHER, pointwise(params={"n": 64}), compiled=1.0, seed=4),
    ]


async def _show_runs(pilot, app) -> None:
    """The four runs of :func:`_runs` as this session's rows."""
    for record in _runs():
        app.inject_record(record)
    await wait_until(pilot, lambda: app.table.row_count == 4, what="rows")


def _judged(app, *rows):
    return lambda: not app.baseline_busy and all(app.table.cell_text(r, "vs_base") not in ("", "…") for r in rows)


async def test_a_baseline_shows_the_change_of_each_comparable_row_and_clearing_removes_the_column(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        await _show_runs(pilot, app)
        assert "vs_base" not in app.table.shown_columns
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(BASE))
        await pilot.press("m")
        await wait_until(pilot, _judged(app, SLOWER, FASTER), what="the rows compared")
        assert "vs_base" in app.table.shown_columns
        cell = app.table.cell_text
        assert cell(BASE, "vs_base") == "◆ baseline"
        assert re.fullmatch(r"\+(9\.\d|1[01])% slower", cell(SLOWER, "vs_base")), cell(SLOWER, "vs_base")
        assert re.fullmatch(r"-1[3-7]% faster", cell(FASTER, "vs_base")), cell(FASTER, "vs_base")
        assert cell(OTHER, "vs_base") == "–"  # another workload's parameters: not comparable
        # The details' Summary says it too, and the compare view shows compare's table.
        from tui.app.baseline_actions import baseline_summary
        from tui.app.components.details import render_tab

        record = app.records[SLOWER]
        console = Console(width=200, record=True, file=None)
        with console.capture() as captured:
            console.print(render_tab(record, "summary", baseline_summary(app, record)))
        assert "vs baseline: +" in captured.get() and "slower" in captured.get()
        app.action_compare_baseline()
        await wait_until(pilot, lambda: isinstance(app.screen, BaselineCompareScreen) and app.screen.text.plain,
                         what="compare view")
        shown = app.screen.text.plain
        assert "slower" in shown and "faster" in shown
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, BaselineCompareScreen), what="view closed")
        from tui.app.components.details import DetailsScreen

        app.action_details(SLOWER)  # the details screen itself says it
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, DetailsScreen) and bool(app.screen.query("#details-summary")),
            what="details",
        )
        with console.capture() as captured:
            console.print(app.screen.tab_content("summary"))
        assert "vs baseline: +" in captured.get()
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DetailsScreen), what="details closed")
        # m on the baseline again clears it: the column goes.
        app.table.focus()
        await pilot.press("m")
        await wait_until(pilot, lambda: "vs_base" not in app.table.shown_columns, what="column removed")
        assert app.baseline_rows == ()


async def test_a_previous_sessions_row_as_the_baseline_loads_its_samples_off_the_ui_thread(make_app):
    base = timed_run(BASE, compiled=1.0, seed=1, session_id="old")
    History().append(base)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.table.is_history(BASE), what="the history row")
        stored = app.records[BASE]
        # The chart reads the selected row's blocks off the UI thread as well: let it finish, then drop them,
        # so the baseline's own load below starts from a row whose samples are on disk.
        await app.workers.wait_for_complete()
        stored.release_samples()
        assert not stored.samples_loaded  # a history row keeps its samples on disk
        loader, threads = stored._samples_loader, []

        def spy(record):
            threads.append(threading.current_thread())
            return loader(record)

        stored._samples_loader = spy
        for record in _runs()[1:3]:
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 3, what="rows")
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(BASE))
        await pilot.press("M")  # its whole session: the one row
        await wait_until(pilot, _judged(app, SLOWER, FASTER), what="the rows compared")
        assert app.baseline_rows == (BASE,)
        assert app.table.cell_text(BASE, "vs_base") == "◆ baseline"
        assert app.table.cell_text(SLOWER, "vs_base").endswith("slower")
        assert app.table.cell_text(FASTER, "vs_base").endswith("faster")
        assert threads and threading.main_thread() not in threads  # read off the UI thread


def test_summary_text_says_the_change_and_the_baseline_runs():
    from tui.app.baselines import judge_row

    base, slower = _runs()[:2]
    result = judge_row([base], [slower])
    text = summary_text(result)
    assert text.startswith("vs baseline: +") and "slower" in text and BASE in text
    assert summary_text(None) is None and summary_text(None, is_baseline=True).startswith("vs baseline: this row")
    assert judge_row([base], [_runs()[3]]) is None  # other parameters: no pair


def test_snapshot_the_vs_base_column_at_120x40(snap_compare):
    from app_helpers import no_gpu_source
    from test_snapshots_app import _app, _settle

    async def run_before(pilot):
        app = pilot.app
        await _show_runs(pilot, app)
        app.set_baseline((BASE,))
        await wait_until(pilot, _judged(app, SLOWER, FASTER), what="the rows compared")
        app.clear_notifications()
        app.action_toggle_sidebar()  # the table's width: every column through vs base in view
        app.table.focus()
        app.table.move_cursor(row=0)
        await _settle(pilot)

    assert snap_compare(_app(no_gpu_source()), terminal_size=(120, 40), run_before=run_before)


async def test_a_run_saved_after_the_baseline_was_marked_is_compared_with_it(make_app):
    from textual.widgets import Input

    from tui.app.components.picker import Picker

    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "40"  # 4 blocks a side: enough for an interval
        await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the first run")
        first = app.table.run_ids[0]
        app.set_baseline((first,))
        await wait_until(pilot, lambda: "vs_base" in app.table.shown_columns, what="the column")
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 2 and app.settled, what="the second run")
        second = app.table.run_ids[1]
        await wait_until(pilot, lambda: app.table.cell_text(second, "vs_base") not in ("", "…", "–"),
                         what="the new row compared")
        assert app.table.cell_text(first, "vs_base") == "◆ baseline"
        assert app.table.cell_text(second, "vs_base") != "not compared"
        assert app.baseline_results[second].base_runs == (first,)


def test_a_row_pairs_with_the_baseline_runs_nearest_its_own_options():
    from tui.app.baselines import baseline_pair

    default, autotune = timed_run(BASE, seed=1), timed_run(SLOWER, pointwise(mode="max-autotune"), seed=2)
    row = timed_run(FASTER, pointwise(mode="max-autotune"), compiled=0.9, seed=3)
    assert [r.run_id for r in baseline_pair([default, autotune], [row]).base] == [SLOWER]  # a session: like with like
    assert [r.run_id for r in baseline_pair([default], [row]).base] == [BASE]  # one run: whatever the options
    assert baseline_pair([row], [row]) is None  # the baseline is not compared with itself


async def test_a_table_sorted_by_vs_base_stays_sorted_when_another_baseline_is_marked(make_app):
    # the vs base cells change all at once: the rows take their places in one re-sort
    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        await _show_runs(pilot, app)
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(BASE))
        await pilot.press("m")
        await wait_until(pilot, _judged(app, SLOWER, FASTER), what="the rows compared")
        app.table.sort_by("vs_base", reverse=False)
        await pilot.pause()
        assert app.table.run_ids[:3] == [FASTER, BASE, SLOWER]
        app.table.move_cursor(row=app.table.run_ids.index(OTHER))  # another size: the others become not comparable
        await pilot.press("m")
        await wait_until(pilot, lambda: not app.baseline_busy
                         and app.table.cell_text(OTHER, "vs_base") == "◆ baseline"
                         and app.table.cell_text(SLOWER, "vs_base") == "–", what="the new baseline")
        shown = app.table.run_ids
        app.table.sort_by(None)
        app.table.sort_by("vs_base", reverse=False)  # a sort made now, from the cells as they are
        assert shown == app.table.run_ids and shown[0] == OTHER, (shown, app.table.run_ids)


async def _refused_in_one_line(pilot, app, key: str) -> str:
    """Press ``key`` on a row with no times: refused (no baseline, no ``vs base``) in one notice line at 80
    columns; the line's text."""
    from app_helpers import notifications
    from tui.app.components.notice_line import NoticeLine

    await pilot.press(key)
    await wait_until(pilot, lambda: any("no times" in n for n in notifications(app)), what="the refusal")
    assert app.baseline_rows == ()
    assert "vs_base" not in app.table.shown_columns
    line = app.screen.query_one(NoticeLine)
    await wait_until(pilot, lambda: line.display and line.size.height > 0, what="the notice line")
    assert line.size.height == 1, line.render()
    return str(line.render())


async def test_m_on_a_failed_row_is_refused_in_one_line_saying_why(make_app):
    """A failed run has no times: as the baseline every ``vs base`` cell would be "–". m says so and marks nothing."""

    failed = timed_run(OTHER, failed=True)
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        for record in (*_runs()[:2], failed):
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 3, what="rows")
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(OTHER))
        text = await _refused_in_one_line(pilot, app, "m")
        assert "failed" in text and "done run" in text, text
        # A done row is a baseline as before.
        app.table.move_cursor(row=app.table.run_ids.index(BASE))
        await pilot.press("m")
        await wait_until(pilot, lambda: app.baseline_rows == (BASE,), what="the baseline")


async def test_M_refuses_a_session_with_no_done_run_and_leaves_failed_rows_out_as_m_does(make_app):
    """``M`` agrees with ``m``: a session whose runs all failed has no times (refused in one line at 80 columns);
    a session with a done run is the baseline without its failed rows."""

    old_failed = timed_run(BASE, failed=True, session_id="old")
    History().append(old_failed)
    done = timed_run(SLOWER, pointwise(mode="max-autotune"), compiled=1.1, seed=2)
    failed = timed_run(OTHER, failed=True)
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_until(pilot, lambda: app.table.is_history(BASE), what="the history row")
        for record in (done, failed):
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 3, what="rows")
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(BASE))
        await _refused_in_one_line(pilot, app, "M")
        # This session has a done run and a failed one: the done one is the baseline, the failed one is not.
        app.table.move_cursor(row=app.table.run_ids.index(OTHER))
        await pilot.press("M")
        await wait_until(pilot, lambda: app.baseline_rows != (), what="the baseline")
        assert app.baseline_rows == (SLOWER,)
