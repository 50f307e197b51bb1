"""The column chooser (``c``, the palette's "Columns"), the choice kept in the config, and bad settings of it."""

from __future__ import annotations

import json

from textual.widgets import SelectionList

from app_helpers import notifications, wait_until
from test_snapshots_table import SWEEP, sweep_record
from tui import paths
from tui.app.components.columns_dialog import ColumnsScreen
from tui.app.palette import lab_commands


async def _open_chooser(pilot) -> SelectionList:
    app = pilot.app
    app.table.focus()
    await pilot.press("c")
    await wait_until(pilot, lambda: isinstance(app.screen, ColumnsScreen) and bool(app.screen.query("#columns-list")),
                     what="the column chooser")
    return app.screen.query_one("#columns-list", SelectionList)


async def test_the_chooser_hides_and_shows_columns_and_the_next_start_keeps_the_choice(make_app):
    first = make_app(load_history=False)
    async with first.run_test(size=(120, 40)) as pilot:
        for index, (mode, dynamic) in enumerate(SWEEP):
            first.inject_record(sweep_record(index, mode, dynamic))
        await wait_until(pilot, lambda: first.table.row_count == len(SWEEP), what="rows")
        assert first.table.shown_columns[:4] == ("status", "speedup", "mode", "dynamic")
        assert "Columns" in [command.title for command in lab_commands(first)]
        listed = await _open_chooser(pilot)
        assert listed.get_option("status").disabled  # the one column that always shows
        listed.deselect("eager_ms")
        listed.deselect("dynamic")
        listed.select("verdict")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(first.screen, ColumnsScreen), what="the chooser closed")
        shown = first.table.shown_columns
        assert "eager_ms" not in shown and "dynamic" not in shown and "verdict" in shown
        assert shown[:3] == ("status", "speedup", "mode")
        assert first.table.cell_text("20250101-000000-swp000", "verdict") == "faster"
        assert "dyn=" not in first.table.border_title  # hidden: not said in the title either
        expected = {"eager_ms": False, "dynamic": False, "verdict": True}
        assert first.config.columns == expected
        assert json.loads(paths.config_file().read_text())["columns"] == expected  # kept at once
    second = make_app(load_history=False)
    async with second.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert second.table.column_choice["eager_ms"] is False and second.table.column_choice["verdict"] is True
        assert "eager_ms" not in second.table.shown_columns and "verdict" in second.table.shown_columns
        listed = await _open_chooser(pilot)
        await pilot.press("d")  # the defaults, applied
        await wait_until(pilot, lambda: "verdict" not in listed.selected, what="defaults checked")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "eager_ms" in second.table.shown_columns, what="defaults applied")
        assert second.config.columns == {} and "verdict" not in second.table.shown_columns


async def test_escape_leaves_the_columns_as_they_were(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        before = app.table.shown_columns
        listed = await _open_chooser(pilot)
        listed.deselect("speedup")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ColumnsScreen), what="the chooser closed")
        assert app.table.shown_columns == before and app.config.columns == {}


async def test_bad_column_settings_warn_one_line_each_and_the_app_starts(make_app):
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"columns": {"status": False, "nope": True, "peak_mem": "no", "verdict": True}}))
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(notifications(app)), what="the config warning")
        [warning] = notifications(app)
        lines = warning.splitlines()
        assert len(lines) == 3 and all(line.startswith(f"config {path}: columns.") for line in lines)
        assert [line.split(": ")[1] for line in lines] == ["columns.status", "columns.nope", "columns.peak_mem"]
        assert app.table.column_choice["verdict"] is True  # the good entry is kept
        assert app.table.shown_columns[0] == "status" and "peak_mem" in app.table.shown_columns
