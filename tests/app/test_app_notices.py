"""Notices that do not cover the work (issue 26 item 6).

At 80x24 Textual's toasts covered the results table and the chart: "Run options hidden ...", a noisy
run's notice, the export's notice with its path cut. Below 120 columns or 30 rows each notice goes to
the notice line above the footer instead, the latest one alone, its path's file name whole; wide
enough, toasts as before.
"""

from __future__ import annotations

from pathlib import Path

from app_helpers import notifications, raised_notices, wait_until
from terminal_model import TerminalModel
from textual.geometry import Region
from tui.app.components.notice_line import NoticeLine
from tui.app.layout import notices_in_line
from tui.engine.options import RunOptions

NOISY = RunOptions(workload="pointwise", iters=20, block_size=5, noise_limits={"stall_factor": 1e-6}).validated()
"""A stall limit every sample meets: the fake worker's steady run is noisy by that rule alone."""
CLEAN = RunOptions(workload="pointwise", iters=20, block_size=5).validated()


def _exported(app) -> Path:
    """The summary CSV the export notice names: its names' line starts with it."""
    (note,) = [n for n in raised_notices(app) if n.title == "Exported"]
    return Path(note.message.splitlines()[-1].split(", ")[0])


async def test_at_80x24_a_run_and_an_export_leave_the_table_uncovered_and_name_the_file(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        terminal = TerminalModel(app)
        app.table.focus()
        await pilot.press("r")  # a key press: the sidebar steps aside, with a notice
        await wait_until(pilot, lambda: app.settled and app.table.row_count == 1
                         and all(r.finished for r in app.session.records), what="the run")
        app.enqueue([NOISY])  # a noisy run: its notice
        await wait_until(pilot, lambda: app.settled and any("Noisy" in n.title for n in raised_notices(app)),
                         what="the noisy notice")
        app.action_export()
        await wait_until(pilot, lambda: any(n.title == "Exported" for n in raised_notices(app)), what="the export")
        await pilot.pause()
        await pilot.pause()
        assert any("Run options hidden" in m for m in notifications(app))
        table = app.table.region
        toasts = [toast.region for toast in app.screen.query("Toast")]
        assert not any(region.overlaps(table) for region in toasts), (toasts, table)
        assert not any(region.overlaps(app.query_one("#chart").region) for region in toasts)
        line = app.screen.query_one(NoticeLine)
        assert not line.region.overlaps(table) and line.region.bottom <= app.screen.query_one("Footer").region.y
        shown = terminal.text(Region(0, 0, *app.size))
        name = _exported(app).name
        assert name.endswith(".csv") and name in shown, shown
        assert "Exported" in shown and "Noisy" not in shown  # the latest notice alone


async def test_wide_enough_a_notice_is_a_toast_and_the_line_stays_hidden(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        assert not notices_in_line(*app.size)
        app.notify("hello there", title="Test")
        await wait_until(pilot, lambda: bool(app.screen.query("Toast")), what="the toast")
        assert not app.screen.query_one(NoticeLine).display


def test_notices_go_to_the_line_below_120_columns_or_30_rows():
    assert notices_in_line(80, 24) and notices_in_line(119, 50) and notices_in_line(200, 29)
    assert not notices_in_line(120, 30)


async def test_a_queue_is_told_about_its_noisy_runs_once_and_the_next_queue_counts_afresh(make_app):
    """The tester saw "4 runs of this queue were noisy" after a single run: the count of an earlier queue that
    ended on a run that was not noisy was never reset."""
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.enqueue([NOISY, NOISY, CLEAN])
        await wait_until(pilot, lambda: app.settled and len(app.session.records) == 3
                         and all(r.finished for r in app.session.records), what="the first queue")
        await wait_until(pilot, lambda: any("Noisy" in n.title for n in raised_notices(app)), what="its notice")
        told = [n.message for n in raised_notices(app) if "Noisy" in n.title]
        assert len(told) == 1 and told[0].startswith("2 runs of this queue were noisy") and "a stall" in told[0]
        app.enqueue([NOISY])
        await wait_until(pilot, lambda: app.settled and len(app.session.records) == 4
                         and all(r.finished for r in app.session.records), what="the second queue")
        await wait_until(pilot, lambda: len([n for n in notifications(app) if "stall" in n]) == 2,
                         what="the second notice")
        last = [m for m in notifications(app) if "stall" in m][-1]
        assert last.startswith("pointwise") and "runs of this queue" not in last
        line = app.screen.query_one(NoticeLine)
        assert line.display and line.notification is not None and line.notification.message == last


async def test_a_notice_raised_as_the_app_starts_is_on_the_line(make_app):
    """The config's warning is raised in the app's on_mount: at 80x24 it must reach the line, not vanish."""
    import json

    from tui import paths

    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"columns": {"nope": True}}))
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(notifications(app)), what="the config warning")
        line = app.screen.query_one(NoticeLine)
        await wait_until(pilot, lambda: line.display and line.notification is not None, what="the line")
        assert "columns.nope" in line.notification.message


async def test_at_80x24_a_notice_shows_while_a_pane_is_zoomed(make_app):
    """``z`` maximizes the table: the notice line stays on screen, or a refusal or an export's error is unseen."""
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        terminal = TerminalModel(app)
        app.table.focus()
        await pilot.press("z")
        await wait_until(pilot, lambda: app.screen.maximized is app.table, what="the zoom")
        await pilot.press("U")  # no search yet: a notice says so
        await wait_until(pilot, lambda: any("No search yet" in m for m in notifications(app)), what="the notice")
        await pilot.pause()
        await pilot.pause()
        line = app.screen.query_one(NoticeLine)
        assert not line.region.overlaps(app.table.region)
        assert "No search yet" in terminal.text(Region(0, 0, *app.size))


async def test_a_notice_is_recorded_as_it_is_raised_before_the_app_handles_it(make_app):
    """``App.notify`` posts a message; the tests' record has the notice at once, or a test that looks right after
    the code that notified (a run's save) misses it now and then under load."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.notify("raised, not yet handled")
        assert "raised, not yet handled" in notifications(app)
        assert not any(n.message == "raised, not yet handled" for n in app._notifications)  # still a message
        await pilot.pause()
        assert any(n.message == "raised, not yet handled" for n in app._notifications)
