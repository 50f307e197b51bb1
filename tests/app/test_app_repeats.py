"""Repeats across processes in the app: the picker's and the sweep's repeat field, one row per
configuration from its group, details listing the processes, exports of every process."""

from __future__ import annotations

import json

from textual.widgets import Input, SelectionList

from app_helpers import notifications, wait_until
from tui.app.components.details import render_details
from tui.app.components.picker import Picker
from tui.app.components.sweep_dialog import SweepScreen
from tui.app.config import AppConfig, load_config
from tui.engine.store.repeats import GroupRecord


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=160, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


async def test_a_run_in_three_processes_is_one_row_from_its_group(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#iters", Input).value = "20"
        picker.query_one("#repeat", Input).value = "3"
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        [row_id] = app.table.run_ids
        assert len(app.session.records) == 3 and app.config.repeat == 3
        await wait_until(pilot, lambda: app.settled and app.table.cell_text(row_id, "status") == "faster",
                         what="the group done", timeout=30)
        assert app.table.row_count == 1  # the other processes have no row of their own
        assert app.table.cell_text(row_id, "flags") == "×3"
        row = app.row_record(row_id)
        assert isinstance(row, GroupRecord) and row.group.done == 3
        assert app.table.cell_text(row_id, "speedup").startswith("1.9") and "[" in app.table.cell_text(
            row_id, "speedup"
        )
        text = _text(render_details(row))
        assert "Processes" in text and all(r.run_id in text for r in app.session.records)
        records, skipped = app.exportable_records()
        assert records == app.group_members(row_id) and skipped == 0


async def test_a_sweep_in_two_processes_each_interleaves_them(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.action_sweep()
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen) and bool(app.screen.query("#sweep-repeat")),
                         what="sweep dialog")
        screen = app.screen
        screen.query_one("#sweep-modes", SelectionList).deselect_all()
        screen.query_one("#sweep-modes", SelectionList).select("default")
        screen.query_one("#sweep-fullgraphs", SelectionList).deselect_all()
        screen.query_one("#sweep-sizes", Input).value = "n=64,128"
        repeat = screen.query_one("#sweep-repeat", Input)
        label = screen.query_one("#sweep-repeat-label")
        assert str(label.render()) == "repeat" and label.region.right <= repeat.region.x  # labelled, on its left
        repeat.value = "zero"
        await pilot.pause()
        assert "refused: repeat:" in str(screen.query_one("#sweep-preview").render())
        repeat.value = "2"
        await pilot.pause()
        assert str(screen.query_one("#sweep-preview").render()) == "4 run(s): n=64, n=128; 2 configurations, 2 " \
            "processes each"
        repeat.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="2 rows")
        assert [r.options.params["n"] for r in app.session.records] == [64, 128, 64, 128]  # interleaved
        assert app.config.repeat == 2 and "repeat" not in app.config.sweep
        await wait_until(pilot, lambda: app.settled, what="settled", timeout=30)
        assert [app.table.cell_text(r, "flags") for r in app.table.run_ids] == ["×2", "×2"]


async def test_a_bad_repeat_is_refused_at_its_field(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#repeat", Input).value = "101"
        app.action_run()
        await pilot.pause()
        assert app.table.row_count == 0
        assert any(m.startswith("repeat: 101 is not allowed") for m in notifications(app))
        assert picker.query_one("#repeat", Input).has_class("-refused")


def test_the_config_keeps_the_repeat_and_refuses_a_bad_one(tmp_path):
    path = tmp_path / "config.json"
    assert AppConfig(repeat="auto").to_dict()["repeat"] == "auto"
    path.write_text(json.dumps({**AppConfig(repeat="auto").to_dict()}))
    assert load_config(path)[0].repeat == "auto"
    path.write_text(json.dumps({"repeat": 0}))
    config, warning = load_config(path)
    assert config.repeat == "auto" and "repeat: 0 is not allowed" in warning  # the default


def test_the_repeat_default_is_auto_and_an_old_configs_default_1_reads_as_auto(tmp_path):
    # Version 1 saved its default, 1, whether or not the user chose it: the new default replaces it.
    path = tmp_path / "config.json"
    assert AppConfig().repeat == "auto" and AppConfig().to_dict()["version"] == 2
    path.write_text(json.dumps({"version": 1, "repeat": 1}))
    assert load_config(path)[0].repeat == "auto"
    path.write_text(json.dumps({"version": 1, "repeat": 3}))
    assert load_config(path)[0].repeat == 3  # a count the user chose stays
    path.write_text(json.dumps({**AppConfig(repeat=1).to_dict()}))
    assert load_config(path)[0].repeat == 1  # chosen under version 2: kept


async def test_repeat_auto_runs_once_where_the_first_process_is_decisive(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#iters", Input).value = "40"
        picker.query_one("#repeat", Input).value = "auto"
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        await wait_until(pilot, lambda: app.settled, what="settled", timeout=30)
        [row_id] = app.table.run_ids
        assert app.config.repeat == "auto" and len(app.session.records) == 1  # faster from its first process
        assert app.table.cell_text(row_id, "status") == "faster"
