"""The app's traces (``t``), the tlparse palette command and the data dir's size in the help, on the fake worker."""

from __future__ import annotations

import os
import stat
import sys

from rich.console import Console
from textual.widgets import Input, Static

from app_helpers import fake_runner, notifications, wait_until
from tui import paths
from tui.app.components.help import HelpScreen
from tui.app.components.picker import Picker
from tui.engine.explain.artifacts import artifact_paths, run_folder


async def test_t_cycles_the_traces_the_next_runs_record(make_app):
    app = make_app(runner=fake_runner(FAKE_WORKER_CODE="1"))
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.table.focus()
        assert app.trace_next == "off"
        await pilot.press("t")
        assert app.trace_next == "trace" and "Chrome trace" in notifications(app)[-1]
        await pilot.press("t")
        assert app.trace_next == "trace+torch_trace" and "TORCH_TRACE" in notifications(app)[-1]
        await pilot.press("r")
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a saved run")
        record = app.records[app.table.run_ids[0]]
        assert record.options.trace and record.options.torch_trace and record.status == "done"
        found = artifact_paths(record)  # what the details screen shows
        assert found.trace == str(run_folder(record.run_id) / "trace.json") and found.torch_trace is not None
        await pilot.press("t")
        assert app.trace_next == "off" and notifications(app)[-1] == "The next runs record no traces."


async def test_the_palettes_tlparse_says_where_the_report_is(make_app, tmp_path, monkeypatch):
    script = tmp_path / "tlparse"
    script.write_text(
        f"#!{sys.executable}\nimport pathlib, sys\nout = pathlib.Path(sys.argv[sys.argv.index('-o') + 1])\n"
        "out.mkdir(parents=True, exist_ok=True)\n(out / 'index.html').write_text('ok')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.trace_next = "trace+torch_trace"
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a saved run")
        app.action_tlparse()
        report = run_folder(app.table.run_ids[0]) / "tlparse" / "index.html"
        await wait_until(pilot, lambda: f"Report: {report}" in notifications(app), what="the report's path")


async def test_the_help_shows_the_data_dirs_size(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: bool(app.data_usage_line), what="the data dir measured")
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        console = Console(width=400, record=True, file=open(os.devnull, "w"))
        console.print(app.screen.query_one("#help-content", Static).content)
        text = console.export_text()
        assert f"Data dir {paths.data_dir()}: " in text and "compile-lab prune" in text


async def test_the_help_measures_the_data_dir_again_when_it_opens(make_app):
    """The data dir grows with every run: the help measured it once at start and said "0 B" after a session's runs.
    Opened at 80x24 after the data dir grew, it says the new size."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(app.data_usage_line), what="the data dir measured")
        runs = paths.data_dir() / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        (runs / "20261201-000000-aaaaaa.json").write_bytes(b"x" * 3_000_000)
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")

        def shown() -> str:
            console = Console(width=400, record=True, file=open(os.devnull, "w"))
            console.print(app.screen.query_one("#help-content", Static).content)
            return console.export_text()

        await wait_until(pilot, lambda: "runs 3.0 MB" in shown(), what="the help saying the runs' new size")
