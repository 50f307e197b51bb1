"""The app's Tune action at 80x24 through the fake worker: the dialog, the leaderboard, the answer, the stop.

The fake worker gives each configuration its own compiled time (``FAKE_WORKER_TIMES``, as
``tests/test_cli_tune.py`` uses it) and the probe answers without torch.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re

import pytest
from rich.console import Console
from textual.app import App
from textual.geometry import Region
from textual.widgets import Input, TextArea
from tui.app.components.chooser import Chooser

from app_helpers import fake_runner, notifications, wait_until
from terminal_model import TerminalModel
from tui.app.components.leaderboard import Leaderboard
from tui.app.components.notice_line import NoticeLine
from tui.app.components.picker import Picker
from tui.app.components.tune_dialog import TuneDialog
from tui.app.components.tune_screen import AnswerArea, TuneScreen
from tui.app.tune_run import STOPPED, Board, BoardKeeper
from tui.engine.tune import probe as probe_module
from tui.engine.runner.torch_probe import TorchOptions
from tui.engine.tune.answer import TuneResult
from tui.engine.tune.objective import Score
from tui.engine.tune.search import Standing
from tui.engine.tune.space import Candidate
from tui.present.tune_answer import answer_lines, answer_text, headline
from tui.telemetry.fake import FakeSource

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def _probe_without_torch(monkeypatch):
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="0.0.0+fake", defaults={"aggressive_fusion": False}))


def _tuned_app(make_app, times: dict, **env: str):
    runner = fake_runner("ok", FAKE_WORKER_TIMES=json.dumps(times), **env)
    return make_app(runner=runner, load_history=False)


def _text(static) -> str:
    """What a Static shows, as plain text."""
    console = Console(width=76, file=io.StringIO(), record=True)
    console.print(static.content)
    return console.export_text()


async def _open_dialog(app, pilot) -> TuneDialog:
    app.query_one(Picker).query_one("#iters", Input).value = "40"  # 4 blocks: an interval
    app.table.focus()
    await pilot.press("u")
    await wait_until(pilot, lambda: isinstance(app.screen, TuneDialog), what="the tune dialog")
    return app.screen


async def _start_tune(app, pilot, space: str, key: str = "enter"):
    """Open the dialog, set the space, start the search; the app's tune once its screen is up."""
    dialog = await _open_dialog(app, pilot)
    dialog.query_one("#tune-space", Input).value = space
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, TuneScreen), what="the tune screen")
    return app.lab.tune


async def test_a_tune_from_the_app_shows_the_leaderboard_then_the_answer(make_app, compile_lab_home, monkeypatch):
    app = _tuned_app(make_app, {"freezing=true": 0.6, "cpp_wrapper=true": "fail"})
    stages: list[str] = []
    drawn: list[str] = []
    draw, update = Leaderboard._draw, BoardKeeper.update

    def drawing(pane: Leaderboard, board) -> None:  # every board the pane is given, as it draws it
        draw(pane, board)
        if board is not None:
            # the pane's own Statics: the first board may come before the pane's children are mounted
            drawn.append(_text(pane._status) + _text(pane._out_lines))

    def updating(keeper: BoardKeeper, **changes) -> None:  # every step of the search, shown or not
        update(keeper, **changes)
        stages.append(keeper.board.stage)

    monkeypatch.setattr(Leaderboard, "_draw", drawing)
    monkeypatch.setattr(BoardKeeper, "update", updating)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await _open_dialog(app, pilot)
        dialog.query_one("#tune-budget", Input).value = "ten"
        dialog.query_one("#tune-calls", Input).value = "0"  # bad too, lower down: the top field is named first
        await pilot.press("ctrl+s")
        error = str(dialog.query_one("#tune-error").render())
        assert error.startswith("budget: 'ten' is not allowed") and dialog.query_one("#tune-budget").has_class(
            "-invalid")
        dialog.query_one("#tune-calls", Input).value = ""
        dialog.query_one("#tune-budget", Input).value = "5x"  # still bad: the line follows the field as it changes
        await pilot.pause()
        assert str(dialog.query_one("#tune-error").render()).startswith("budget: '5x' is not allowed")
        dialog.query_one("#tune-budget", Input).value = "5m"  # corrected: the line and the mark go at once
        await pilot.pause()
        assert str(dialog.query_one("#tune-error").render()) == ""
        assert not dialog.query_one("#tune-budget").has_class("-invalid")
        dialog.query_one("#tune-space", Input).value = "freezing,cpp_wrapper"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, TuneScreen), what="the tune screen")
        board = app.screen.query_one(Leaderboard)
        await wait_until(pilot, lambda: board.board is not None and board.board.done, timeout=60, what="the answer")
        assert any(s.startswith("screening: 3 candidate(s)") for s in stages)
        assert any(s.startswith("confirming freezing=True") for s in stages)
        assert any(re.search(r"incumbent freezing=True  \d\.\d\d× \[\d\.\d\d, \d\.\d\d\] over eager", text)
                   and "s left of 300 s" in text for text in drawn)  # the leaderboard as the race went
        assert any("cpp_wrapper=True: out: failed" in text for text in drawn)
        # each candidate is listed with its speedup as soon as its run ends, while the screening goes on
        assert any(re.search(r"scored\s+default  \d\.\d\d× \[", text) and "freezing=True  " not in text
                   for text in drawn)
        answer = app.screen.query_one("#tune-answer", TextArea).text
        assert answer.startswith("best: freezing=True, confirmed faster than the default compile")
        assert "compiled = torch.compile(model, options={'freezing': True})" in answer
        assert "torch._inductor.config.freezing = True" in answer
        assert "freezing=True vs default compile: 1." in answer and "freezing=True vs eager: " in answer
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        await pilot.press("y")
        assert copied == [app.lab.tune.board.answer]  # unfolded, as the CLI's lines are before a terminal folds them
        await pilot.press("escape")
        assert app.screen is app.main_screen  # the table caught up while the tune screen was on top
        assert not app.query_one("#left").display  # at 80x24 the options stepped aside for the candidates' rows
        await wait_until(pilot, lambda: app.settled, what="settled")
        tune_id = app.lab.tune.tune_id
        assert app.table.row_count >= 3 + 2  # the screening's three, and a row per side of the confirmation
        assert {app.records[run_id].tune_id for run_id in app.table.run_ids} == {tune_id}
    history = (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()
    assert {json.loads(line)["tune_id"] for line in history} == {tune_id}


async def test_the_cancel_key_stops_the_search_and_keeps_the_ended_runs(make_app, compile_lab_home):
    # each run takes a moment: the stop lands after the first runs ended, before the race is over
    app = _tuned_app(make_app, {"freezing=true": 0.6}, FAKE_WORKER_DELAY="0.05")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        tune = await _start_tune(app, pilot, "modes,freezing")
        await wait_until(pilot, lambda: tune.board.runs >= 2, timeout=60, what="two runs ended")
        await pilot.press("x")
        await wait_until(pilot, lambda: tune.board.done, timeout=30, what="the answer")
        assert tune.board.headline.startswith("best so far: ") and f"(unconfirmed: {STOPPED}" in tune.board.headline
        assert any("The search stops" in n for n in notifications(app))
        assert "unconfirmed" in app.screen.query_one("#tune-answer", TextArea).text
        assert app.screen.check_action("stop", ()) is False  # its footer shows no Stop: nothing to stop
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.settled, what="settled")
        ended = [app.records[run_id] for run_id in tune.own]
        done = [r for r in ended if r.status == "done"]
        assert len(done) >= 2 and len(ended) < 6  # stopped before every candidate ran
        assert all(app.lab.row_of(app.records[run_id]) in app.table.run_ids for run_id in tune.own)
        again = await _open_dialog(app, pilot)  # the next search's dialog opens with the fields of this one
        assert again.query_one("#tune-space", Input).value == "modes,freezing"
        assert again.query_one("#tune-budget", Input).value == "10m"
    history = [json.loads(line) for line in (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()]
    assert {h["run_id"] for h in history if h["status"] == "done"} >= {r.run_id for r in done}


async def test_the_leaderboard_names_the_candidate_running_now_and_its_phase(make_app):
    """Between two scores the screen said only "incumbent none yet" and a time left counting down: nothing named
    the run going on, as the results table's row does (``compiling 12 s``)."""
    app = _tuned_app(make_app, {}, FAKE_WORKER_COMPILE_S="1.5")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        tune = await _start_tune(app, pilot, "freezing")
        board = app.screen.query_one(Leaderboard)
        compiling = re.compile(r"^(default|freezing=True): compiling \d+ s$")
        seen: list[tuple[str, str, str]] = []  # the line, the status drawn, the candidate of the run going on

        def compiling_shown() -> bool:
            lines, units = board.running, list(app.session.running.values())
            if len(lines) == 1 and compiling.match(lines[0]) and len(units) == 1:
                seen.append((lines[0], _text(board.query_one("#lb-status")),
                             tune.driver.names.get(units[0].record.run_id)))
            return bool(seen)

        await wait_until(pilot, compiling_shown, timeout=30, what="a candidate compiling")
        line, status, candidate = seen[0]
        assert "running" in status and line in status, status
        assert line.split(":")[0] == candidate
        await pilot.press("x")
        await wait_until(pilot, lambda: tune.board.done, timeout=30, what="the answer")
        assert "running" not in _text(board.query_one("#lb-status"))


async def test_quitting_while_a_tune_searches_asks_about_the_search(make_app):
    """The question said "A run is active. Stop it and quit?" though a search of many runs was going."""
    from tui.app.components.dialogs import ConfirmScreen

    app = _tuned_app(make_app, {}, FAKE_WORKER_DELAY="0.05")
    async with app.run_test(size=SIZE) as pilot:
        tune = await _start_tune(app, pilot, "modes,freezing")
        await wait_until(pilot, lambda: app.run_active, what="the search's first run")
        await app.action_quit()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert app.screen.question == "A tune is searching. Stop it (ended runs stay in the history) and quit?"
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the question gone")
        # a run of the user's own beside the search, long enough (4000 iterations, a round every 0.05 s) to be
        # queued or running still when the question is asked: quitting stops it too
        app.query_one(Picker).query_one("#iters", Input).value = "4000"
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: any(r.run_id not in tune.own for r in app.records.values()),
                         what="the user's run")
        await app.action_quit()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question again")
        assert app.screen.question == ("A tune is searching and 1 run(s) of yours. Stop them (ended runs stay in "
                                       "the history) and quit?")
        await pilot.press("n")
        tune.stop("the test is over")


async def test_a_space_with_nothing_left_to_race_runs_nothing_and_says_why(make_app, compile_lab_home):
    # on the CPU every knob of this space is left out (it applies to cuda only): only the default compile is
    # left, and a search of it alone would answer "no configuration beats the default compile", comparing nothing
    app = _tuned_app(make_app, {})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        tune = await _start_tune(app, pilot, "layout_optimization", key="ctrl+s")
        await wait_until(pilot, lambda: tune.board.done, timeout=30, what="the answer")
        assert tune.board.headline.startswith("nothing ran: nothing to race against the default compile")
        assert "no configuration beats" not in tune.board.answer
        assert "left out on cpu" in tune.board.answer  # the note that says why
        assert tune.own == set() and tune.board.runs == 0
    assert not (compile_lab_home / "data" / "history.jsonl").exists()


async def test_a_cuda_device_on_a_torch_without_cuda_runs_nothing_and_says_why_in_one_line(
        make_app, compile_lab_home, monkeypatch):
    # NVML sees a GPU (the device field offers cuda) but the worker's torch is a CPU build: every run would fail
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="2.13.0+cpu", defaults={"aggressive_fusion": False}, cuda=False))
    app = make_app(telemetry=FakeSource(gpus=1, vary=False), runner=fake_runner("ok"), load_history=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        device = app.query_one(Picker).query_one("#device", Chooser)

        def gpu() -> str | None:
            return next((v for _, v in device.options if isinstance(v, str) and v.startswith("cuda:")), None)

        await wait_until(pilot, lambda: gpu() is not None, what="the GPU offered")
        device.value = gpu()
        tune = await _start_tune(app, pilot, "modes,freezing,cpp.simdlen")  # cpp.simdlen: left out on cuda
        await wait_until(pilot, lambda: tune.board.done, timeout=30, what="the answer")
        assert tune.board.headline == (f"nothing ran: device: {gpu()} is not allowed: this machine's torch "
                                       "(2.13.0+cpu) cannot use CUDA (allowed: cpu)"), tune.board.headline
        assert "left out" not in tune.board.note  # no plan for a search refused, as the CLI
        assert tune.own == set() and tune.board.runs == 0
    assert not (compile_lab_home / "data" / "history.jsonl").exists()


async def test_at_80x24_the_tune_screens_footer_fits_whole_and_shows_a_key_only_while_it_does_something(make_app):
    """The tune screen's keys beside the app's overflowed 80 columns ("a Re-ru▏^p paletteh"). ``x Stop`` stayed
    after the search ended and ``y Copy answer`` showed before there was an answer: each shows only while it
    does something, and ``x`` after the end stops nothing (never the app's Cancel of a table row)."""
    from app_helpers import footer_whole

    app = _tuned_app(make_app, {})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _open_dialog(app, pilot)
        await pilot.press("escape")
        running = _screening_board(2)
        app.push_screen(TuneScreen(running))
        await wait_until(pilot, lambda: isinstance(app.screen, TuneScreen), what="the tune screen")
        footer = await footer_whole(pilot, app)
        assert "x Stop" in footer and "Copy answer" not in footer  # the word of the pane's Stop button
        assert "Cancel" not in footer
        result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=_DEFAULT, winner_options=None,
                            confirmation=None, standings=(_DEFAULT,), stopped=STOPPED, runs=1, elapsed_s=9.0)
        app.screen.show(dataclasses.replace(running, done=True, stage="ended: unconfirmed", headline=headline(result),
                                            answer=answer_text(result), answer_lines=tuple(answer_lines(result))))
        terminal = TerminalModel(app)
        await wait_until(pilot, lambda: "Copy answer" in terminal.text(Region(0, SIZE[1] - 1, SIZE[0], 1)),
                         what="the footer's Copy answer")
        footer = terminal.text(Region(0, SIZE[1] - 1, SIZE[0], 1)).rstrip()
        assert footer.endswith("^p palette") and "y Copy answer" in footer, footer  # whole, at 80 columns
        assert "Stop" not in footer and "Cancel" not in footer, footer
        cancelled: list[str] = []
        app.action_cancel_current = lambda: cancelled.append("x")  # type: ignore[method-assign]
        await pilot.press("x")
        assert cancelled == [] and any("nothing to stop" in n for n in notifications(app))


async def test_run_from_the_tune_screen_goes_back_to_the_table_where_its_row_shows(make_app):
    """``r`` on the tune screen queued the picker's run behind it, with nothing said: the row showed only once the
    user left the screen."""
    app = _tuned_app(make_app, {})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "40"
        app.push_screen(TuneScreen(_screening_board(2)))
        await wait_until(pilot, lambda: isinstance(app.screen, TuneScreen), what="the tune screen")
        await pilot.press("r")
        await wait_until(pilot, lambda: app.screen is app.main_screen, what="the table")
        await wait_until(pilot, lambda: len(app.session.records) == 1, what="the run's row")
        assert app.table.row_count == 1
        app.push_screen(TuneScreen(_screening_board(2)))
        await wait_until(pilot, lambda: isinstance(app.screen, TuneScreen), what="the tune screen again")
        app.table.move_cursor(row=0)
        await pilot.press("a")
        await wait_until(pilot, lambda: len(app.session.records) == 2, what="the re-run's row")
        assert app.screen is app.main_screen


class _BoardApp(App):
    """The tune screen of a fixed board (no search runs)."""

    def __init__(self, board: Board) -> None:
        super().__init__()
        self.board = board

    def on_mount(self) -> None:
        self.push_screen(TuneScreen(self.board))


def _screening_board(scored: int, candidates: int = 8) -> Board:
    """A screening of ``candidates`` of which the first ``scored`` ran."""
    standings = tuple(Standing(Candidate((("k", n),)), Score(1.0 + n / 100, 0.99, 1.2, 1), stage=0) if n < scored
                      else Standing(Candidate((("k", n),))) for n in range(candidates))
    return Board(tune_id="01JTUNE", what="pointwise on cpu", budget_s=300.0, stage="screening: 8 candidate(s)",
                 standings=standings, time_left_s=250.0, runs=scored)


async def test_at_80x24_the_leaderboard_says_how_many_are_in_the_race_and_how_many_have_yet_to_run():
    # "8 candidate(s) left" after 2 of 8 ran read as "8 not yet run": the pane says each count
    app = _BoardApp(_screening_board(2))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = _text(app.screen.query_one(Leaderboard)._status)
        assert re.search(r"progress\s+8 in the race, 6 not yet run · 2 run\(s\) · 250 s left of 300 s", text), text
        assert "left  " not in text and "candidate(s) left" not in text


async def test_at_80x24_a_title_too_wide_ends_in_an_ellipsis_and_names_a_file_by_its_name():
    """The title was cut without a mark ("... on cpu, objective device") and named a user's file by its whole path."""
    from tui.app.tune_run import TuneRun
    from tui.engine.options import RunOptions
    from tui.engine.tune.objective import Objective
    from tui.engine.tune.request import TuneRequest

    base = RunOptions(workload="/tmp/some/deep/folder/of/models/syntax_checked_model.py", device="cpu")
    run = TuneRun(None, base, TuneRequest(budget_s=300.0, objective=Objective(calls=1000)))
    what = run.keeper.board.what
    assert what.startswith("syntax_checked_model.py on cpu, objective") and "/tmp/" not in what
    with_params = dataclasses.replace(base, params={"d": 64})  # as the dialog names it: the title dropped them
    assert TuneRun(None, with_params, TuneRequest(budget_s=300.0)).keeper.board.what.startswith(
        "syntax_checked_model.py d=64 on cpu, objective")
    app = _BoardApp(dataclasses.replace(_screening_board(2), what=what))
    async with app.run_test(size=SIZE) as pilot:
        terminal = TerminalModel(app)  # before the first frame: it records what the app writes from now on
        await wait_until(pilot, lambda: bool(app.screen.query("#lb-title")), what="the leaderboard")
        title = app.screen.query_one(Leaderboard).query_one("#lb-title")

        def row() -> str:
            return terminal.text(Region(title.region.x, title.region.y, title.region.width, 1)).rstrip()

        await wait_until(pilot, lambda: row().startswith("Tune syntax_checked_model.py"), what="the title")
        assert len(f"Tune {what}") > title.region.width and row().endswith("…"), row()


def test_the_count_in_the_race_follows_the_drops_and_cuts_a_stage_makes_between_progress_steps():
    # the pane said "8 in the race" while confirming, with 3 dropped and 3 cut listed under it: the count came
    # from the last progress step, before the screening's judgement
    standings = list(_screening_board(8).standings)
    keeper = BoardKeeper(Board(tune_id="01JTUNE", what="pointwise on cpu", budget_s=90.0), standings=lambda: standings)
    keeper.stage_started(0, [s.name for s in standings], 50)
    assert keeper.board.left == 8
    standings[2:] = [dataclasses.replace(s, gone="dropped: below default") for s in standings[2:]]
    keeper.confirming(standings[1], 3)
    assert keeper.board.left == 2 and len(keeper.board.out) == 6


_DEFAULT = Standing(Candidate(), Score(3.01, 2.95, 3.07, 1), stage=0, screened=Score(3.01, 2.95, 3.07, 1))
_WRAPPER = Standing(Candidate((("cpp_wrapper", True),)), Score(3.04, 2.98, 3.10, 1), stage=0,
                    screened=Score(3.04, 2.98, 3.10, 1))


async def test_at_80x24_the_answer_folds_its_prose_under_its_text_and_copies_it_unfolded():
    # the answer's wrapped lines started at column 0; they hang under their text now, as the CLI's do
    dropped = Standing(Candidate((("mode", "max-autotune-no-cudagraphs"),)), Score(2.50, 2.40, 2.60, 1), stage=0,
                       screened=Score(2.50, 2.40, 2.60, 1), gone="dropped: below default (≤ 2.600x vs ≥ 2.950x)")
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=_DEFAULT, winner_options=None,
                        confirmation=None, standings=(_WRAPPER, _DEFAULT, dropped), stopped=STOPPED, runs=3,
                        elapsed_s=9.0)
    lines = tuple(answer_lines(result))
    board = dataclasses.replace(_screening_board(0), done=True, stage="ended: unconfirmed", headline=headline(result),
                                answer=answer_text(result), answer_lines=lines)
    app = _BoardApp(board)
    async with app.run_test(size=SIZE) as pilot:
        area = app.screen.query_one("#tune-answer", AnswerArea)
        await wait_until(pilot, lambda: area.text != board.answer, what="the answer folded")
        shown = area.text.splitlines()
        assert shown[0].startswith("best so far: default (unconfirmed: ")
        assert shown[1].startswith("not told apart: cpp_wrapper=True 3.04×") and len(shown[1]) <= area.wrap_width
        assert shown[2].startswith("  ") and shown[2].strip()  # its second line hangs under its text
        row = next(n for n, line in enumerate(shown) if line.startswith("  max-autotune-no-cudagraphs: "))
        assert shown[row + 1].startswith("    ") and shown[row + 1].strip()  # a candidate's: under its text
        # the race ended after its screening: no candidate says its screened figure (its latest one), as in the CLI
        assert not [line for line in shown if "screened" in line], shown
        assert area.wrapped_document.height == len(shown)  # nothing left for the soft wrap to start at column 0
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        await pilot.press("y")
        assert copied == [board.answer] and "\n  " not in board.answer.split("\n")[0]


async def test_at_80x24_u_after_a_restart_names_the_newest_stored_tune(make_app, compile_lab_home):
    """The app's searches are gone with it: after a restart ``U`` said "No search yet" beside a history with a
    tune's runs. It names the newest stored tune, its runs and where they are, and what makes its page."""
    from big_history import write_big_history

    from tui import paths

    history = paths.history_file()
    run_ids = write_big_history(history, 8)
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    old, new = "20250101-000000-old111", "20250102-000000-new222"
    for index, line in enumerate(lines):  # an older tune of two runs, then the newest of three
        line["tune_id"] = old if index in (1, 2) else new if index >= 5 else None
        line["created"] = 1735689600.0 + 60 * index
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: app.table.row_count == len(run_ids), what="the history's rows")
        app.table.focus()
        await pilot.press("U")
        await wait_until(pilot, lambda: any("tune 20250102-000000-new222 (" in n for n in notifications(app)),
                         what="the stored tune named")
        said = next(n for n in notifications(app) if "new222" in n)
        assert "No search yet" not in " ".join(notifications(app))
        assert "(mlp, 3 run(s), 2025-01-01 00:05) is the newest stored: its runs are in the table" in said
        assert "compile-lab report tune:20250102-000000-new222 makes its page" in said
        line = app.screen.query_one(NoticeLine)  # below 120 columns: the notice line, whole in its three rows
        await wait_until(pilot, lambda: "new222 makes its page" in " ".join(_shown(line).split()), what="all of it")
        assert _shown(line).startswith("No search in this app yet: tune 20250102-000000-new222")
        await pilot.press("h")  # the history hidden: the note says what shows it
        await pilot.press("U")
        await wait_until(pilot, lambda: any("in the history (h shows it)" in n for n in notifications(app)),
                         what="h named")


def _shown(line: NoticeLine) -> str:
    """The notice line's rows as the screen shows them."""
    return "\n".join(line.render_line(y).text for y in range(line.size.height))


async def test_at_80x24_a_stopped_search_counts_its_runs_as_the_cli_does_and_names_the_run_it_stopped():
    """After ``x`` the pane counted the cancelled run among the runs (the CLI did not), and the answer said its
    candidate was "in the race, never run": both front ends count the runs one way and say the run was stopped."""
    stopped = Standing(Candidate((("mode", "max-autotune"),)), stopped="screening")
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=_DEFAULT, winner_options=None,
                        confirmation=None, standings=(_DEFAULT, stopped), stopped=STOPPED, cut_short=STOPPED, runs=1,
                        stopped_runs=1, elapsed_s=9.0)
    lines = tuple(answer_lines(result))
    board = dataclasses.replace(_screening_board(0), done=True, stage="ended: unconfirmed", headline=headline(result),
                                answer=answer_text(result), answer_lines=lines, runs=result.runs,
                                stopped_runs=result.stopped_runs)
    app = _BoardApp(board)
    async with app.run_test(size=SIZE) as pilot:
        area = app.screen.query_one("#tune-answer", AnswerArea)
        await wait_until(pilot, lambda: area.text != board.answer, what="the answer folded")
        status = _text(app.screen.query_one(Leaderboard)._status)
        assert re.search(r"runs\s+1 run\(s\) ended on their own, 1 stopped · budget 300 s", status), status
        shown = " ".join(line.strip() for line in area.text.splitlines())
        assert f"in the race, its screening run was {STOPPED}" in shown, shown
        assert "never run" not in shown and "1 run(s) ended on their own, 1 stopped, " in shown
