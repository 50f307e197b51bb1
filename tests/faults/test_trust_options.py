"""Trust: config, history and hidden options (issue 11, items 4, 5 and 6).

* Options that start a program (``python``, inductor options) and did not come from the user
  in this session (the saved config, a history row) are shown and run only after a yes; a
  re-run of a history row shows its full options first; the options without a picker field
  are shown under the picker and in the row's details.
* A history line of valid JSON with a wrong type loads, names its file, line and field, and
  the app goes on.
* A bad config (not UTF-8, not JSON, wrong types, values the run refuses) never stops the app:
  each bad setting is named with the file and takes its default.

Every program here is a script in the test's ``tmp_path`` that logs each start to a file: the
log is how a test sees that nothing ran before the yes (the real runner starts it, warm spare
included). Nothing outside ``tmp_path`` and the test's ``COMPILE_LAB_HOME`` is written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, SelectionList, Static

from app_helpers import fake_runner, no_gpu_source, notifications, raised_notices, wait_until
from tui import paths
from tui.app.components import picker as picker_module
from tui.app.components.details import render_details
from tui.app.components.dialogs import ConfirmScreen
from tui.app.components.picker import Cycler, Picker
from tui.app.components.sweep_dialog import SweepScreen
from tui.app.config import load_config
from tui.app.controller import LabController
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner
from tui.engine.store.stored_options import CODE_FIELDS, HIDDEN_FIELDS

SIZE = (160, 48)


def _program(tmp_path: Path, name: str = "python-from-a-file") -> tuple[Path, Path]:
    """An executable script that appends a line to its log each time it starts, then exits 3."""
    log = tmp_path / f"{name}.log"
    script = tmp_path / name
    script.write_text(f'#!/bin/sh\necho "started $*" >> "{log}"\nexit 3\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


def _write_config(data: object) -> Path:
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _real_runner(keep_spare: bool = True) -> WorkerRunner:
    return WorkerRunner(telemetry=no_gpu_source(), keep_spare=keep_spare)


def _question(app) -> str:
    screen = app.screen
    assert isinstance(screen, ConfirmScreen), screen
    return screen.question


def _details(app) -> str:
    return str(app.screen.query_one("#confirm-details", Static).content)


def _text(renderable) -> str:
    console = Console(width=160, record=True, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


async def _asked(pilot, app) -> str:
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
    return _question(app)


async def _answer(pilot, app, key: str) -> None:
    await pilot.press(key)
    await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog to close")


# ----- 4: settings that start a program ------------------------------------------------------------


async def test_a_python_from_the_config_is_shown_and_starts_only_after_a_yes(make_app, tmp_path):
    """The issue's case: a config ``python`` pointing at a script ran it on ``r`` (and as a warm spare)."""
    script, log = _program(tmp_path)
    _write_config({"options": {"python": str(script), "iters": 10}})
    app = make_app(runner=_real_runner(keep_spare=True))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        also = app.query_one("#picker-also", Static)
        assert also.display and f"python={script}" in str(also.content)
        app.action_run()
        question = await _asked(pilot, app)
        assert f"python = {script}\n" in question and str(paths.config_file()) in question
        assert app.table.row_count == 0 and not app.session.records and not log.exists()
        await _answer(pilot, app, "n")
        assert "Nothing was queued." in notifications(app)[-1]
        app.action_run()  # a no is not remembered: asked again
        await _asked(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="closed")
        assert app.table.row_count == 0 and not app.session.records and not log.exists()
        app.action_run()
        await _asked(pilot, app)
        await _answer(pilot, app, "y")
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run")
        (record,) = app.session.records
        assert record.options.python == str(script) and record.status == "failed"
        assert log.exists()  # what a yes means: the program ran
        app.action_run()  # the yes holds for these values: no second question
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_until(pilot, lambda: app.table.row_count == 2 and app.settled, what="the second run")


async def test_inductor_options_from_the_config_need_a_yes_once_and_only_where_they_apply(make_app):
    _write_config({"options": {"inductor_options": {"cpp.cxx": "/opt/nowhere/c++", "max_autotune": True}}})
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        assert "inductor_options.cpp.cxx=/opt/nowhere/c++" in str(app.query_one("#picker-also", Static).content)
        picker = app.query_one(Picker)
        picker.query_one("#backend", Cycler).value = "eager"  # the picker drops them: nothing to ask
        await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="the eager run")
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.session.records[0].options.inductor_options == {}
        picker.query_one("#backend", Cycler).value = "inductor"
        await pilot.pause()
        app.action_run()
        question = await _asked(pilot, app)
        assert "inductor_options.cpp.cxx = /opt/nowhere/c++\n" in question
        assert "inductor_options.max_autotune = true\n" in question
        await _answer(pilot, app, "y")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="the inductor run")
        assert app.session.records[1].options.inductor_options == {"cpp.cxx": "/opt/nowhere/c++", "max_autotune": True}
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 3, what="the next run, not asked")
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_a_sweep_with_a_python_from_the_config_asks_once_for_all_its_runs(make_app, tmp_path):
    script, log = _program(tmp_path)
    _write_config({"options": {"python": str(script), "iters": 10},
                   "sweep": {"modes": ["default", "max-autotune"], "fullgraphs": [False], "dynamics": ["auto"]}})
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        for answer, rows in (("n", 0), ("y", 2)):
            app.action_sweep()
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="the sweep dialog")
            await wait_until(pilot, lambda: bool(app.screen.query(SelectionList)), what="its lists")
            await pilot.press("ctrl+s")
            question = await _asked(pilot, app)
            assert f"python = {script}\n" in question
            await _answer(pilot, app, answer)
            await wait_until(pilot, lambda rows=rows: app.table.row_count == rows, what=f"{rows} rows")
        assert "Queued 2 run(s)." in notifications(app)
        assert [r.options.mode for r in app.session.records] == ["default", "max-autotune"]
        await wait_until(pilot, lambda: app.settled, what="settled")
    assert not log.exists()  # the fake worker's runner never starts options.python


async def test_options_without_a_picker_field_are_shown_under_the_picker_and_in_the_details(make_app):
    _write_config({"options": {"block_size": 5, "timeout_s": 30, "seed": 7, "iters": 10}})
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        also = app.query_one("#picker-also", Static)
        assert also.display and str(also.content) == "also: seed=7"  # block size and timeout have fields (item 7)
        assert [app.query_one(f"#{name}", Input).value for name in ("block-size", "timeout")] == ["5", "30"]
        app.action_run()  # nothing that starts a program: no question
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run")
        assert not isinstance(app.screen, ConfirmScreen)
        (record,) = app.session.records
        assert (record.options.block_size, record.options.timeout_s, record.options.seed) == (5, 30.0, 7)
        details = _text(render_details(record))
        for name, value in (("block_size", "5"), ("timeout_s", "30"), ("seed", "7"), ("python", "n/a")):
            assert any(line.split()[:2] == [name, value] for line in details.splitlines()), name


def test_every_option_is_a_picker_field_or_shown_under_the_picker():
    """A new RunOptions field must get a picker field or join HIDDEN_FIELDS (shown in the also-line)."""
    fields = {f.name for f in dataclasses.fields(RunOptions)}
    own = {name for name in picker_module._FIELD_WIDGETS if name not in HIDDEN_FIELDS} | {"params"}
    assert own | set(HIDDEN_FIELDS) == fields and not own & set(HIDDEN_FIELDS)
    assert set(CODE_FIELDS) <= set(HIDDEN_FIELDS)


async def test_the_default_config_shows_no_extra_line(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not app.query_one("#picker-also", Static).display


# ----- 4: re-running a history row -----------------------------------------------------------------


def _history_with(*options: RunOptions) -> list[RunRecord]:
    history = History()
    records = []
    for item in options:
        record = RunRecord.new(item)
        record.fail("crash", "stored by the test")
        history.append(record)
        records.append(record)
    return records


async def _select(pilot, app, run_id: str) -> None:
    await wait_until(pilot, lambda: run_id in app.table.run_ids, what="the history row")
    app.table.focus()
    app.table.move_cursor(row=app.table.run_ids.index(run_id), animate=False)
    await pilot.pause()
    assert app.table.selected_run_id == run_id


async def test_rerunning_a_history_row_shows_its_full_options_and_its_program_first(make_app, tmp_path):
    """The issue's case: a history line's ``options.python`` ran on ``a`` from a row that looked like any other."""
    script, log = _program(tmp_path)
    (stored,) = _history_with(RunOptions(workload="matmul", params={"n": 64}, iters=10, timeout_s=30.0,
                                         python=str(script)))  # fmt: skip
    app = make_app(runner=_real_runner(keep_spare=False))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _select(pilot, app, stored.run_id)
        await pilot.press("a")
        question = await _asked(pilot, app)
        assert question.startswith(f"Re-run with these options? They come from an earlier session (the history "
                                   f"{paths.history_file()}).")  # fmt: skip
        assert f"python = {script}\n" in question
        table = _details(app).splitlines()
        assert f"python             {script}   <- starts a program" in table
        assert "timeout_s          30.0" in table and 'params             {"n": 64}' in table
        assert "time_budget_s      unset" in table and "fullgraph          false" in table
        assert len(table) == len(RunOptions.__dataclass_fields__)
        await _answer(pilot, app, "n")
        assert not app.session.records and not log.exists()
        await pilot.press("a")
        await _asked(pilot, app)
        await _answer(pilot, app, "y")
        await wait_until(pilot, lambda: len(app.session.records) == 1 and app.settled, what="the re-run")
        assert app.session.records[0].options == stored.options.validated()
        assert log.exists()


async def test_rerunning_any_history_row_asks_and_a_row_of_this_session_does_not(make_app):
    (stored,) = _history_with(RunOptions(iters=10))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await _select(pilot, app, stored.run_id)
        await pilot.press("a")
        question = await _asked(pilot, app)
        assert "start programs" not in question and "iters" in _details(app)
        await _answer(pilot, app, "y")
        await wait_until(pilot, lambda: len(app.session.records) == 1 and app.settled, what="the re-run")
        session_row = app.session.records[0].run_id
        await _select(pilot, app, session_row)
        await pilot.press("a")
        await wait_until(pilot, lambda: len(app.session.records) == 2, what="a direct re-run")
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_until(pilot, lambda: app.settled, what="settled")


# ----- 5: a history line of valid JSON with a wrong type -----------------------------------------


async def test_a_history_line_with_wrong_types_is_a_named_warning_and_the_app_goes_on(make_app):
    """The issue's case: ``"options": {"params": "n=64"}`` crashed the app at every start."""
    good, bad, worse = _history_with(RunOptions(iters=10), RunOptions(workload="matmul"), RunOptions())
    path = paths.history_file()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["options"]["params"] = "n=64"
    lines[2].update(status=5, summary="x", warnings="w", options={"workload": 5, "iters": "x", "dynamic": [1]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: app.table.row_count == 3, what="three history rows")
        await wait_until(pilot, lambda: any(n.title == "History" for n in raised_notices(app)), what="the warning")
        warning = next(n for n in raised_notices(app) if n.title == "History")
        assert warning.message.startswith(f"{path} line 2: record.options.params: expected an object, got str")
        assert app.records[bad.run_id].options == RunOptions(workload="matmul")
        app.action_details(worse.run_id)  # the details of the worst row open
        await wait_until(pilot, lambda: bool(app.screen.query("#details-summary")), what="details")
        await pilot.press("escape")
        for _ in range(2):
            app.action_toggle_history()
            await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: len(app.session.records) == 1 and app.settled, what="a new run")
        assert app.session.records[0].status == "done"


# ----- 6: a bad config --------------------------------------------------------------------------------


BAD_CONFIGS = [
    pytest.param(b"\xff\xfe\x00\x81garbage", "is corrupt (not UTF-8 text: byte 0xff at offset 0); using defaults",
                 id="binary"),
    pytest.param(b'{"options": {"workload": "matmul"', "is corrupt (line 1 column 34: Expecting ',' delimiter); "
                 "using defaults", id="torn-json"),
    pytest.param(b"[" * 100_000, "is corrupt (nested too deeply)", id="nested-too-deep"),
    # Python's own words: 3.11 says "(4300 digits)", 3.10 "(4300) for integer string conversion".
    pytest.param(b'{"seed": ' + b"1" * 5000 + b"}", "is corrupt (Exceeds the limit (4300", id="huge-number"),
    pytest.param(b"[]", " is not a config (the top level is list, not an object); using defaults", id="not-an-object"),
    pytest.param(b'{"options": {"workload": 5}}', ": options.workload: expected str, got int (default used)",
                 id="workload-5"),
    pytest.param(b'{"options": {"backend": null}}', ": options.backend: expected a value, got null (default used)",
                 id="backend-null"),
    pytest.param(b'{"backend": null}', ": backend: unknown setting (ignored)", id="top-level-backend"),
    pytest.param(b'{"options": {"timeout_s": "abc"}}', ": options.timeout_s: expected float, got str (default used)",
                 id="timeout-text"),
    pytest.param(b'{"options": {"timeout_s": -5}}', ": options.timeout_s: -5.0 is not allowed (allowed: a number "
                 "of seconds above 0 and at most 604800 (7 days)) (default used)", id="timeout-negative"),
    pytest.param(b'{"options": {"python": "/nonexistent/python3"}}', ": options.python: /nonexistent/python3 is not "
                 "an executable file (default used)", id="python-missing"),
    pytest.param(b'{"options": {"params": "n=64"}}', ": options.params: expected an object, got str (default used)",
                 id="params-text"),
    pytest.param(b'{"theme": 5, "show_history": "yes"}', ": theme: expected a theme name, got 5 (default used)",
                 id="theme-and-toggle"),
    pytest.param(b'{"sweep": {"modes": "all"}}', ": sweep.modes: expected a list of values, got 'all' (default used)",
                 id="sweep-not-a-list"),
]


def _bad_config(content: bytes) -> Path:
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content, expected", BAD_CONFIGS)
def test_a_bad_config_is_named_with_its_file_and_field_and_runs_still_run(content, expected):
    """Each bad config, read as the app reads it (its controller, without Textual): the warning names the file and
    the field, and a run of the options it gave still runs. The app's part, the same for each, is the next test."""
    path = _bad_config(content)

    async def scenario() -> RunRecord:
        lab = LabController(fake_runner("ok"), telemetry=no_gpu_source(), history=History())
        warning = lab.config_warning or ""
        assert warning.startswith(f"config {path}") and expected in warning, warning
        (record,) = lab.enqueue([dataclasses.replace(lab.config.options, iters=10).validated()])
        await lab.session.wait_settled()
        await lab.close()
        return record

    record = asyncio.run(scenario())
    assert record.status == "done" and record.options.timeout_s == 600.0 and record.options.python is None


@pytest.mark.parametrize("content, expected", [
    param for param in BAD_CONFIGS if param.id in ("binary", "timeout-negative")  # a corrupt file, a bad field
])
async def test_the_app_names_a_bad_config_in_a_notice_and_runs_still_run(make_app, content, expected):
    path = _bad_config(content)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        (warning,) = [n for n in raised_notices(app) if n.title == "Config ignored"]
        assert warning.message.startswith(f"config {path}") and expected in warning.message, warning.message
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: len(app.session.records) == 1 and app.settled, what="a run")
        (record,) = app.session.records
        assert record.status == "done" and record.options.timeout_s == 600.0 and record.options.python is None


def test_a_config_keeps_every_good_setting_next_to_a_bad_one(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "theme": "textual-light", "show_history": False, "sweep": {"modes": ["default"], "dtypes": [{"x": 1}]},
        "options": {"workload": "matmul", "params": {"n": 64, "m": [1]}, "iters": "many", "timeout_s": 30,
                    "python": sys.executable, "colour": "red"},
    }))  # fmt: skip
    config, warning = load_config(path)
    assert (config.theme, config.show_history, config.sweep) == ("textual-light", False, {"modes": ["default"]})
    assert config.options == RunOptions(workload="matmul", params={"n": 64}, timeout_s=30.0, python=sys.executable)
    assert warning is not None
    assert [line.removeprefix(f"config {path}: ").split(":")[0] for line in warning.splitlines()] == [
        "options.colour", "options.iters", "options.params.m", "sweep.dtypes"]


def test_a_long_list_of_problems_is_cut_and_counted(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"options": {f"x{i}": i for i in range(20)}}))
    _, warning = load_config(path)
    lines = warning.splitlines()
    assert len(lines) == 7 and lines[-1] == "... and 14 more"


def test_a_good_config_and_no_config_give_no_warning(tmp_path):
    assert load_config(tmp_path / "missing.json")[1] is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"version": 1, "theme": "textual-dark", "show_history": True, "sweep": {},
                                "options": RunOptions(workload="matmul", python=sys.executable).to_dict()}))
    config, warning = load_config(path)
    assert warning is None and config.options.python == sys.executable


# ----- found on the way -----------------------------------------------------------------------------


async def test_a_run_saved_before_its_started_message_is_handled_stays_final(make_app):
    """A worker that exits at once (the script above): the session can save the run before the app
    handles RunStarted; the row must not then wait as "computing" (it did, for about 30 s)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        (record,) = app.enqueue([RunOptions(iters=10)])
        await wait_until(pilot, lambda: app.settled, what="settled")
        record.fail("crash", "exited at once")
        app.session.listener.run_started(record)  # what the session calls as it starts a unit
        app._run_saved(record, None)  # and what it calls once the run is saved, before the message is handled
        await pilot.pause()
        assert not app.computing(record)
