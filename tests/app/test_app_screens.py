"""Details, help, the command palette, bindings, themes, quitting and clean exits."""

from __future__ import annotations

import logging
import os
import signal

import pytest
from rich.console import Console
from textual.binding import Binding
from textual.command import CommandList, CommandPalette

from app_helpers import FAKE_WORKER, fake_runner, fake_worker_children, process_gone, wait_until
from fakes.records import cuda_run_record
from tui.app import app as app_module
from tui.app.app import CompileLabApp, run_app
from tui.app.components.details import DetailsScreen, render_details, tab_ids
from tui.app.components.dialogs import ConfirmScreen
from tui.app.components.help import HelpScreen
from tui.engine.runner import WorkerRunner


def _screen_text(screen: DetailsScreen) -> str:
    """What every tab of the details screen shows, one after the other."""
    return "\n".join(_text(screen.tab_content(tab)) for tab in tab_ids())


def _text(renderable) -> str:
    console = Console(width=140, record=True, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


async def test_details_of_a_done_run(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a run")
        app.table.focus()
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, DetailsScreen) and bool(app.screen.query("#details-summary")),
            what="details",
        )
        text = _screen_text(app.screen)
        assert "pointwise n=512" in text and "done" in text
        assert "significant: compiled is faster" in text
        for label in ("median", "mean", "std", "p10", "p90", "IQR", "IQR/median"):
            assert label in text
        # a CPU run: one loop times both clocks, so no host columns repeat the per-call ones
        assert "eager (perf_counter)" in text and "compiled (perf_counter)" in text and "(host)" not in text
        assert "graph-break reasons:" in text and "recompile reasons:" in text
        assert "Environment" in text and "0.0.0+fake" in text
        assert "Accuracy" in text and "largest absolute error" in text and "max_abs_err" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailsScreen)


async def test_details_of_a_failed_run_show_the_error(make_app):
    app = make_app(runner=fake_runner("fail"))
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a failed run")
        app.action_details()
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, DetailsScreen) and bool(app.screen.query("#details-summary")),
            what="details",
        )
        text = _screen_text(app.screen)
        assert "failed" in text
        assert "compile_error: compile failed: fake inductor error" in text
        assert "RuntimeError: fake inductor error" in text  # the detail (traceback)
        assert "no diagnostics" in text


def _line_of(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.lstrip().startswith(label))


async def test_a_launch_bound_run_tells_its_host_speedup_in_the_row_and_the_details(make_app):
    app = make_app()
    bound, plain = cuda_run_record("20250101-000000-bound1"), cuda_run_record("20250101-000000-plain1", 0.11)
    async with app.run_test(size=(160, 48)) as pilot:
        app.inject_record(bound)
        app.inject_record(plain)
        await pilot.pause()
        assert app.table.cell_text(bound.run_id, "launch_bound") == "LB 1.31×"
        assert app.table.cell_text(plain.run_id, "launch_bound") == ""
        details = {}
        for record in (bound, plain):
            app.action_details(record.run_id)
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, DetailsScreen) and bool(app.screen.query("#details-summary")),
                what="details",
            )
            details[record.run_id] = _screen_text(app.screen)
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, DetailsScreen), what="back")
    assert "0.86×" in _line_of(details[bound.run_id], "speedup")
    host_line = _line_of(details[bound.run_id], "host-inclusive speedup")
    assert "1.31×" in host_line and "launch-bound" in host_line
    host_line = _line_of(details[plain.run_id], "host-inclusive speedup")
    assert "0.93×" in host_line and "launch-bound" not in host_line  # 0.11 / 0.118 ms


async def test_help_opens_on_f1_and_question_mark(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for key in ("f1", "question_mark"):
            await pilot.press(key)
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, HelpScreen) and bool(app.screen.query("#help-content")),
                what=f"help on {key}",
            )
            text = _text(app.screen.query_one("#help-content").content)
            assert "Run" in text and "Export" in text and "Cancel all" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)


def test_every_binding_has_a_description_and_an_id():
    bindings = [b for b in CompileLabApp.BINDINGS if isinstance(b, Binding)]
    assert len(bindings) == len(CompileLabApp.BINDINGS)
    for binding in bindings:
        assert binding.description and binding.id, binding
    assert len({b.id for b in bindings}) == len(bindings)


async def test_the_command_palette_has_every_action(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)):
        titles = {command.title for command in app.get_system_commands(app.screen)}
        callbacks = {
            c.callback.__name__ for c in app.get_system_commands(app.screen) if hasattr(c.callback, "__name__")
        }
    for title in ("Run", "Sweep", "Cancel current run", "Cancel all", "Re-run selected", "Details", "Export",
                  "Export to...", "Toggle history", "Sort by next column", "Reverse sort", "Help", "Quit",
                  "Toggle sidebar", "Zoom", "Options"):
        assert title in titles
    actions = {b.action for b in CompileLabApp.BINDINGS}
    for action in actions - {"quit", "focus_table"}:
        assert f"action_{action}" in callbacks, action


async def test_the_palette_runs_a_command(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"toggle sidebar")

        def toggle_sidebar_on_top() -> bool:  # the search's hits arrive in batches, a quarter second apart
            palette = app.screen
            if not isinstance(palette, CommandPalette) or not palette._list_visible:
                return False
            hits = palette.query_one(CommandList)
            return hits.highlighted == 0 and "Toggle sidebar" in str(hits.get_option_at_index(0).prompt)

        await wait_until(pilot, toggle_sidebar_on_top, what="'Toggle sidebar' as the first hit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.query_one("#left").display, what="sidebar hidden")


def test_themes_include_the_ansi_one(make_app):
    assert CompileLabApp(runner=fake_runner(), telemetry=object(), theme="textual-ansi").theme == "ansi-dark"
    assert CompileLabApp(runner=fake_runner(), telemetry=object(), theme="nord").theme == "nord"
    with pytest.raises(ValueError, match="unknown"):
        CompileLabApp(runner=fake_runner(), telemetry=object(), theme="no-such-theme")


def test_run_app_passes_no_mouse_and_theme(monkeypatch):
    """--no-mouse and --theme reach App.run and the theme (run_app also installs the signal handlers)."""
    seen = {}

    def fake_run(self, **kwargs):
        seen.update(kwargs, theme=self.theme, signals=self.install_signal_handlers)
        return 0

    monkeypatch.setattr(CompileLabApp, "run", fake_run)
    assert run_app(no_mouse=True, theme="textual-ansi", runner=fake_runner(), telemetry=object()) == 0
    assert seen == {"mouse": False, "theme": "ansi-dark", "signals": True}


def test_run_app_refuses_an_unknown_theme_in_one_line(capsys):
    assert run_app(theme="no-such-theme", runner=fake_runner(), telemetry=object()) == 2
    err = capsys.readouterr().err
    assert err.startswith("compile-lab: error: theme 'no-such-theme' is unknown") and err.count("\n") == 1


async def test_quit_with_a_run_active_asks_first(make_app, caplog):
    app = make_app(behaviour="hang")
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.current is not None and app.current.status == "measuring", what="run")
        pid = app.runner.last_pid
        app.table.focus()
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.current is not None and app.current.status == "measuring"
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation again")
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running, what="exit")
    assert app.return_code == 0
    assert await process_gone(pid)
    # the cancelled run is saved while the app closes, after its screens are gone: nothing may reach them
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_quit_without_a_run_leaves_no_worker_behind(make_app):
    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=True, env={"FAKE_WORKER_BEHAVIOUR": "ok"})
    app = make_app(runner=runner)
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a run")
        await wait_until(pilot, lambda: runner.spare_pid is not None, what="the warm spare")
        spare = runner.spare_pid
        assert spare in fake_worker_children()
        app.table.focus()
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, what="exit")
    assert await process_gone(spare)
    assert fake_worker_children() == []


async def test_sigterm_kills_the_workers_then_exits(make_app):
    app = make_app(behaviour="hang", install_signal_handlers=True)
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.current is not None and app.current.status == "measuring", what="run")
        pid = app.runner.last_pid
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the app's loop handler, not the default
        await wait_until(pilot, lambda: not app.is_running, what="exit")
    assert app.return_code == 128 + signal.SIGTERM
    assert await process_gone(pid)
    assert fake_worker_children() == []


def test_render_details_survives_an_empty_record():
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    text = _text(render_details(RunRecord("r1", RunOptions())))
    assert "queued" in text and "n/a" in text


def test_the_app_module_never_imports_torch_in_a_fresh_interpreter():
    import subprocess
    import sys

    probe = "import sys, tui.app.app; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]
    assert app_module.__name__ == "tui.app.app"


async def test_at_80x24_the_code_tabs_footer_keeps_every_key_whole(make_app):
    """The Code tab's two graph keys took 25 columns of the footer: at 80x24 ``x`` lost its label, ``f1 Help``
    was gone, and the palette's key read ``^p palettee``."""
    from terminal_model import TerminalModel
    from test_details_tabs import code_record
    from textual.geometry import Region
    from tui.app.components.details.code import CodeView

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        record = code_record()
        app.inject_record(record)
        await pilot.pause()
        app.action_details(record.run_id)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailsScreen)
                         and bool(app.screen.query("#details-summary")), what="the details")
        app.screen.action_show_tab("code")
        view = app.screen.query_one(CodeView)
        await wait_until(pilot, lambda: view.listing is not None, what="the code")
        await pilot.pause()
        footer = terminal.text(Region(0, 23, 80, 1))
        assert "[ ] Graph" in footer and "x Cancel" in footer and "f1 Help" in footer, footer
        assert footer.rstrip().endswith("^p palette"), footer


async def test_the_help_opened_from_the_details_lists_the_details_keys_not_the_ones_they_replace(make_app):
    """On the details ``r`` reloads, ``y`` copies the command and ``q`` goes back; the help opened there (F1, at
    80x24) said ``r  Run`` and ``q  Quit``. It lists the screen's own keys and leaves out the app's it takes."""
    from fakes.timed import timed_run
    from tui.app.components.details import DetailsScreen
    from tui.app.components.help import HelpScreen

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        record = timed_run("20261201-000000-aaaaaa")
        app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        app.action_details(record.run_id)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailsScreen), what="the details")
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        keys = dict(app.screen.keys)
        assert keys["r"] == "Reload" and keys["y"] == "Copy command" and keys["esc, q"] == "Back", sorted(keys.items())
        assert "Run" not in keys.values() and "Quit" not in [keys.get("q")], keys
        assert keys["←→"] == "Tab" and "→" not in keys, sorted(keys.items())  # one row for the pair
        assert keys["w"] == "Sweep"  # the app's keys that work there too are still listed
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, (HelpScreen, DetailsScreen)), what="the table")
        await pilot.press("f1")  # from the main screen: the app's keys as before
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        keys = dict(app.screen.keys)
        assert keys["r"] == "Run" and keys["q"] == "Quit" and "y" not in keys, keys


async def test_under_a_dialog_the_last_line_shows_the_dialogs_keys_not_the_screens_beneath(make_app):
    """The main screen's footer said ``r Run`` and ``q Quit`` under the help and the sweep dialog, where those
    keys do nothing: each dialog shows its own keys on the terminal's last line (80x24)."""
    from terminal_model import TerminalModel
    from textual.geometry import Region
    from tui.app.components.help import HelpScreen
    from tui.app.components.sweep_dialog import SweepScreen

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        await pilot.pause()
        footer = terminal.text(Region(0, 23, 80, 1))
        assert "Close help" in footer and "Run" not in footer and "Quit" not in footer, footer
        await pilot.press("escape", "w")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="the sweep dialog")
        await pilot.pause()
        footer = terminal.text(Region(0, 23, 80, 1))
        assert "Queue sweep" in footer and "Run" not in footer, footer
