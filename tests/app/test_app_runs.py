"""Runs through the fake worker: a row filled to done, sweeps, the queue, cancel, re-run."""

from __future__ import annotations

import json
import re

from textual.widgets import Input, SelectionList

from app_helpers import fake_runner, notifications, process_gone, wait_until
from tui.app.components.picker import Picker
from tui.app.components.queue_view import QueueView
from tui.app.components.sweep_dialog import SweepScreen
from tui.app.messages import RunFinished, RunsQueued, RunStarted


def _record(app, index: int = 0):
    return app.records[app.table.run_ids[index]]


async def test_a_run_fills_its_row_to_done_with_numbers(make_app):
    app = make_app()
    seen: list[type] = []
    async with app.run_test(size=(160, 48), message_hook=lambda m: seen.append(type(m))) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "40"
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        run_id = app.table.run_ids[0]
        # A done run's status cell shows its verdict: the fake worker's steady times are "faster".
        await wait_until(pilot, lambda: app.table.cell_text(run_id, "status") == "faster", what="done: faster")
        await wait_until(pilot, lambda: app.settled, what="settled")
        await wait_until(pilot, lambda: app.table.cell_text(run_id, "speedup").startswith("1.9"), what="speedup CI")
        cell = app.table.cell_text
        assert (cell(run_id, "workload"), cell(run_id, "params")) == ("pointwise", "n=512")
        assert [
            cell(run_id, key) for key in ("backend", "mode", "fullgraph", "dynamic", "dtype", "device", "flags")
        ] == ["inductor", "default", "", "auto", "fp32", "cpu", ""]
        assert app.table.border_title == "Results · pointwise n=512 inductor dyn=auto fp32 cpu"  # one row: all shared
        assert cell(run_id, "compile_s") == "0.25"
        assert float(cell(run_id, "eager_ms")) == 2.02  # the fake worker's medians
        assert float(cell(run_id, "compiled_ms")) == 1.02
        assert "[" in cell(run_id, "speedup")  # the interval once the run ended
        assert app.table._cells[run_id]["speedup"].style == "bold green"  # significant, faster
        assert cell(run_id, "graph_breaks") == "0" and cell(run_id, "recompiles") == "0"
        assert cell(run_id, "accuracy") == "pass"
        record = app.records[run_id]
        assert sum(len(b.ms) for b in record.samples["compiled"] if b.stage == "measure") == 40
        assert {RunsQueued, RunStarted, RunFinished} <= set(seen)
        assert app.current is None and not app.queue


async def test_the_running_row_shows_progress_before_the_end(make_app):
    app = make_app(behaviour="slow", delay=0.15)
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "60"
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        run_id = app.table.run_ids[0]
        await wait_until(pilot, lambda: app.table.cell_text(run_id, "status").startswith("measuring")
                         and not app.table.cell_text(run_id, "status").endswith(" 0%"), what="measuring x%")
        status = app.table.cell_text(run_id, "status")
        assert status.endswith("%") and not status.endswith("100%")
        assert app.table.cell_text(run_id, "eager_ms") != "–"  # live median while measuring
        assert "▶" in str(app.query_one(QueueView).render())
        app.action_cancel_all()
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_a_sweep_queues_the_right_combinations(make_app):
    app = make_app()
    started: list[str] = []
    active: list[int] = []

    def hook(message):
        if isinstance(message, RunStarted):
            started.append(message.record.run_id)
            active.append(
                sum(1 for r in app.records.values() if r.status not in ("queued", "done", "failed", "cancelled"))
            )

    async with app.run_test(size=(160, 48), notifications=True, message_hook=hook) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.table.focus()
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="sweep dialog")
        screen = app.screen
        modes = screen.query_one("#sweep-modes", SelectionList)
        modes.deselect_all()
        modes.select("default")
        modes.select("max-autotune")
        fullgraphs = screen.query_one("#sweep-fullgraphs", SelectionList)
        fullgraphs.select_all()
        dynamics = screen.query_one("#sweep-dynamics", SelectionList)
        dynamics.deselect_all()
        dynamics.select("auto")
        dynamics.select("false")
        backends = screen.query_one("#sweep-backends", SelectionList)
        backends.select("inductor")
        backends.select("eager")
        await pilot.pause()
        preview = str(screen.query_one("#sweep-preview").render())
        # inductor: 2 modes x 2 fullgraph x 2 dynamic = 8; eager ignores mode: 2 x 2 = 4.
        assert preview.startswith("12 run(s)"), preview
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.table.row_count == 12, what="12 rows")
        labels = [app.records[rid].options.label() for rid in app.table.run_ids]
        assert labels == [
            "inductor dyn=auto fp32",
            "inductor dyn=false fp32",
            "inductor fullgraph dyn=auto fp32",
            "inductor fullgraph dyn=false fp32",
            "inductor/max-autotune dyn=auto fp32",
            "inductor/max-autotune dyn=false fp32",
            "inductor/max-autotune fullgraph dyn=auto fp32",
            "inductor/max-autotune fullgraph dyn=false fp32",
            "eager dyn=auto fp32",
            "eager dyn=false fp32",
            "eager fullgraph dyn=auto fp32",
            "eager fullgraph dyn=false fp32",
        ]
        assert "Queued 12 run(s)." in notifications(app)
        await wait_until(pilot, lambda: all(app.records[r].status == "done" for r in app.table.run_ids),
                         timeout=60, what="all 12 done")
        await wait_until(pilot, lambda: app.settled, what="settled")
        # One worker at a time, in queue order.
        assert started == app.table.run_ids
        assert max(active) == 1


async def test_cancel_marks_the_row_cancelled_and_ends_the_worker(make_app):
    app = make_app(behaviour="hang")
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        run_id = app.table.run_ids[0]
        await wait_until(pilot, lambda: app.records[run_id].status == "measuring", what="measuring")
        pid = app.runner.last_pid
        assert pid is not None
        app.table.focus()
        await pilot.press("x")
        await wait_until(pilot, lambda: app.table.cell_text(run_id, "status") == "cancelled", what="cancelled row")
        assert await process_gone(pid), "the worker outlived its cancel"
        assert app.current is None
        assert app.records[run_id].error_message == "by the user (x)"  # the history says what cancelled it


async def test_cancel_all_empties_the_queue(make_app):
    app = make_app(behaviour="hang")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        app.action_run()
        app.action_run()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 3, what="3 rows")
        await wait_until(pilot, lambda: app.current is not None and app.current.status == "measuring", what="measuring")
        pid = app.runner.last_pid
        app.table.focus()
        await pilot.press("X")
        await wait_until(pilot, lambda: all(app.records[r].status == "cancelled" for r in app.table.run_ids),
                         what="all cancelled")
        assert await process_gone(pid)
        assert not app.queue and app.current is None
        assert "Cancelled 2 queued run(s)." in notifications(app)
        messages = [app.records[r].error_message for r in app.table.run_ids]
        assert messages == ["by the user (X, with the queue)"] + ["cancelled before it started"] * 2
        await wait_until(pilot, lambda: app.table.cell_text(app.table.run_ids[2], "status") == "cancelled", what="row")


async def test_rerun_queues_the_selected_rows_options(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#iters", Input).value = "10"
        await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and _record(app).finished, what="first run")
        picker.query_one("#iters", Input).value = "30"  # the picker changes; the re-run must not
        app.table.focus()
        await pilot.press("a")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="re-run row")
        assert _record(app, 1).options == _record(app, 0).options
        await wait_until(pilot, lambda: _record(app, 1).finished, what="re-run done")
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_a_failed_run_notifies_and_keeps_the_queue_going(make_app):
    app = make_app(runner=fake_runner("fail"))
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        app.action_run()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 2 and all(
            app.records[r].finished for r in app.table.run_ids), what="both failed")
        await wait_until(pilot, lambda: app.settled, what="settled")
        await wait_until(pilot, lambda: app.table.cell_text(app.table.run_ids[1], "status") == "failed", what="row")
        assert any("compile_error: compile failed: fake inductor error" in m for m in notifications(app))


async def _run_each(app, pilot, field: str, values: tuple[str, ...]) -> None:
    """Queue one 10-iteration run for each of ``values`` of the picker's ``field``, and wait until all ended."""
    picker = app.query_one(Picker)
    picker.query_one("#iters", Input).value = "10"
    for value in values:
        picker.query_one(field).value = value
        await pilot.pause()
        app.action_run()
    await wait_until(pilot, lambda: app.table.row_count == len(values) and all(
        app.records[r].finished for r in app.table.run_ids), what=f"{len(values)} runs")
    await wait_until(pilot, lambda: app.settled, what="settled")


async def test_sorting_by_a_column(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _run_each(app, pilot, "#workload", ("pointwise", "matmul", "mlp"))

        def workloads():
            return [app.records[r].options.workload for r in app.table.run_ids]

        app.table.sort_by("workload")
        await pilot.pause()
        assert workloads() == ["matmul", "mlp", "pointwise"]
        assert str(app.table.columns["workload"].label) == "workload ▲"
        app.table.focus()
        await pilot.press("S")  # reverse
        await pilot.pause()
        assert workloads() == ["pointwise", "mlp", "matmul"]
        await pilot.press("s")  # the next column
        await pilot.pause()
        assert app.table.sort_column == "params"  # the next column on screen: the workloads' sizes differ too
        app.table.sort_by(None, reverse=False)
        await pilot.pause()
        assert workloads() == ["pointwise", "matmul", "mlp"]  # queue order back


async def test_rows_that_finish_while_sorted_take_their_place(make_app):
    """A sort stays true as runs end: a row whose speedup arrives after the sort moves to its place."""
    times = {"mode=reduce-overhead": 0.5, "mode=max-autotune": 1.5}  # compiled ms: 4x, 2x, 1.33x faster
    app = make_app(runner=fake_runner("ok", FAKE_WORKER_TIMES=json.dumps(times)))
    async with app.run_test(size=(160, 48)) as pilot:
        app.table.sort_by("speedup", reverse=True)  # fastest first, before any run has a speedup
        await _run_each(app, pilot, "#mode", ("max-autotune", "default", "reduce-overhead"))
        assert [app.records[r].options.mode for r in app.table.run_ids] == [
            "reduce-overhead", "default", "max-autotune"]


async def test_a_sweep_over_sizes(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.action_sweep()
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen) and bool(app.screen.query("#sweep-sizes")),
                         what="sweep dialog")
        screen = app.screen
        screen.query_one("#sweep-modes", SelectionList).deselect_all()
        screen.query_one("#sweep-modes", SelectionList).select("default")
        screen.query_one("#sweep-fullgraphs", SelectionList).deselect_all()
        sizes = screen.query_one("#sweep-sizes", Input)
        sizes.value = "n=0,64"
        await pilot.pause()
        assert "refused" in str(screen.query_one("#sweep-preview").render())  # n=0 is below the minimum
        sizes.value = "n=64,128"
        await pilot.pause()
        assert str(screen.query_one("#sweep-preview").render()).startswith("2 run(s)")
        sizes.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="2 rows")
        assert [app.records[r].options.params for r in app.table.run_ids] == [{"n": 64}, {"n": 128}]
        assert app.config.sweep["sizes"] == ["n=64,128"]
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_queueing_a_sweep_the_preview_refuses_is_refused_in_a_notice_not_a_crash(make_app):
    """Ctrl+S under a preview that reads 'refused' (an empty size, a malformed one) raised out of the app."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        for typed in ("n=64,,128", "n"):
            app.action_sweep()
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen)
                             and bool(app.screen.query("#sweep-sizes")), what="sweep dialog")
            app.screen.query_one("#sweep-sizes", Input).value = typed
            await pilot.pause()
            assert str(app.screen.query_one("#sweep-preview").render()).startswith("refused: ")
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen), what="the dialog closed")
            said = repr(typed)
            await wait_until(pilot, lambda: any(said in n for n in notifications(app)), what="the refusal")  # noqa: B023
        assert app.is_running and app.table.row_count == 0


async def test_a_sweep_over_precisions(make_app):
    """The precision list of the sweep dialog: each checked value one run, the picker's when none is checked."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.action_sweep()
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, SweepScreen) and bool(app.screen.query("#sweep-preview")),
            what="sweep dialog",
        )
        screen = app.screen
        screen.query_one("#sweep-modes", SelectionList).deselect_all()
        screen.query_one("#sweep-modes", SelectionList).select("default")
        screen.query_one("#sweep-fullgraphs", SelectionList).deselect_all()
        precisions = screen.query_one("#sweep-precisions", SelectionList)
        await pilot.pause()
        assert precisions.border_subtitle == "none: default"  # the picker's precision
        precisions.select("ieee")
        precisions.select("tf32")
        await pilot.pause()
        assert str(screen.query_one("#sweep-preview").render()).startswith("2 run(s)")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="2 rows")
        assert [app.records[r].options.precision for r in app.table.run_ids] == ["ieee", "tf32"]
        assert app.config.sweep["precisions"] == ["ieee", "tf32"]
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_a_saved_sweep_without_modes_still_gets_the_cpus_first_modes(make_app):
    """A config whose sweep saved only its sizes filled the modes from the GPU's defaults on the CPU, reduce-overhead
    included (a reviewer's finding); a saved list of modes is kept."""
    app = make_app(load_history=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for saved, modes in (({"sizes": ["n=64,128"]}, ["default", "max-autotune-no-cudagraphs"]),
                             ({"modes": ["reduce-overhead"]}, ["reduce-overhead"])):
            app.lab.config.sweep = saved
            app.action_sweep()
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="sweep dialog")
            await pilot.pause()
            assert app.screen.query_one("#sweep-modes", SelectionList).selected == modes
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen), what="dialog closed")


async def test_at_80x24_the_sweep_preview_is_whole(make_app):
    """The preview's last part ("... more where one does not settle it (auto)") was cut at 80x24: it has three lines
    there, and a longer sweep names fewer configurations rather than lose its counts or its notes."""
    from terminal_model import TerminalModel

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        app.action_sweep()
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen)
                         and bool(app.screen.query("#sweep-preview")), what="sweep dialog")
        screen = app.screen
        preview = screen.query_one("#sweep-preview")

        async def shown() -> str:
            await pilot.pause()
            await pilot.pause()
            return " ".join(terminal.text(preview.region).split())

        text = " ".join(str(preview.render()).split())
        assert text.startswith("4 run(s): default no-fullgraph, default fullgraph, max-autotune-no-cg")
        assert text.endswith("; 1 process each, more where one does not settle it (auto)")
        assert await shown() == text
        screen.query_one("#sweep-dynamics", SelectionList).select_all()
        screen.query_one("#sweep-dtypes", SelectionList).select_all()
        screen.query_one("#sweep-sizes", Input).value = "n=256,512,1024"
        await pilot.pause()
        text = " ".join(str(preview.render()).split())
        assert text.startswith("108 run(s): ") and "+" in text and text.endswith("(auto)"), text
        assert preview.size.height <= 3 and await shown() == text
        assert preview.region.bottom <= screen.query_one("#sweep-queue").region.y  # the buttons below it


async def test_a_compiling_run_counts_its_seconds_in_the_row_and_the_queue(make_app):
    # before it measures nothing moves a run's measured share: a long compile read "compiling   0%" and looked stuck
    # (a 4 s compile: seconds 1 to 3 show even where a loaded machine holds the UI back for a second)
    app = make_app(runner=fake_runner(FAKE_WORKER_COMPILE_S="4"))
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        run_id = app.table.run_ids[0]
        await wait_until(pilot, lambda: re.fullmatch(r"compiling [1-3] s", app.table.cell_text(run_id, "status"))
                         is not None, what="compiling 1 s")
        assert re.search(r"compiling [1-3] s", str(app.query_one(QueueView).render()))  # the same tick drew both
        await pilot.press("x")  # seen: the rest of the compile tells nothing more
        await wait_until(pilot, lambda: app.settled, what="settled")
        assert app.table.cell_text(run_id, "status") == "cancelled"


def test_a_running_status_shows_seconds_before_it_measures_and_a_share_after():
    from tui.present.format import active_status_text

    assert active_status_text("compiling", 0.0, 12.4) == "compiling 12 s"
    assert active_status_text("warming_up", 0.0, 0.2) == "warming up 0 s"
    assert active_status_text("compiling", 0.0, None) == "compiling"
    assert active_status_text("measuring", 0.0, 3.0) == "measuring   0%"
    assert active_status_text("measuring", 0.4, 3.0) == "measuring  40%"
    assert active_status_text("measuring", 0.4, 3.0, aligned=False) == "measuring 40%"
