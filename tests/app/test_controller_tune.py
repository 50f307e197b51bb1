"""The app's tune without Textual: the controller owns the search, its runs are the table's and the history's.

A recorder is the view (as in ``test_controller.py``); an in-process runner gives each configuration its
own compiled time, and the probe answers without torch.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from test_controller import HangingRunner, InProcessRunner, Recorder
from tui.app.controller import LabController
from tui.app.tune_run import STOPPED, Board
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.history import History
from tui.engine.tune import probe as probe_module
from tui.engine.runner.torch_probe import TorchOptions
from tui.engine.tune.request import check_request


@pytest.fixture(autouse=True)
def _probe_without_torch(monkeypatch):
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="0.0.0+fake", defaults={"aggressive_fusion": False}))


class TunedRunner(InProcessRunner):
    """Each run's compiled time from its inductor options (``times``: option key -> ms; else 1.0), a little jitter."""

    def __init__(self, times: dict[str, float]) -> None:
        super().__init__(eager_ms=2.0)
        self.times = times

    async def run(self, record: Any, on_event: Any = None) -> Any:
        self.ran.append(record.run_id)
        compiled = next((ms for key, ms in self.times.items() if key in record.options.inductor_options), 1.0)
        events = [make_event("phase", 0.1, phase="measuring")]
        for index in range(4):
            for side, ms in (("eager", self.eager_ms), ("compiled", compiled)):
                values = [ms * (1 + 0.002 * math.sin(index * 10 + j)) for j in range(10)]
                events.append(make_event("block", 0.2, side=side, stage="measure", index=index,
                                         clock="perf_counter", ms=values, host_ms_per_call=ms))
        events.append(make_event("finished", 0.3))
        for event in events:
            record.apply(event)
            if on_event is not None:
                on_event(event)
            await asyncio.sleep(0)
        return record


def _lab(runner: Any) -> tuple[LabController, Recorder]:
    lab = LabController(runner, telemetry=object(), history=History())
    view = Recorder()
    lab.attach(view)
    return lab, view


BASE = RunOptions(workload="pointwise", device="cpu", iters=20, block_size=5,
                  noise_limits={"max_other_cpu_cores": 1000.0}).validated()


def test_the_controller_runs_a_tune_whose_runs_are_rows_and_history_lines():
    async def scenario() -> None:
        lab, view = _lab(TunedRunner({"freezing": 0.6}))
        boards: list[Board] = []
        tune = lab.start_tune(BASE, check_request(space="freezing,cpp_wrapper", budget="5m"), boards.append)
        assert tune is not None and lab.tune is tune
        assert lab.start_tune(BASE, check_request(), None) is None  # one search at a time
        await asyncio.wait_for(asyncio.gather(*view.tasks), 60)
        board = tune.board
        assert board.done and board.headline.startswith("best: freezing=True, confirmed faster")
        assert "compiled = torch.compile(model, options={'freezing': True})" in board.answer
        assert any(b.incumbent is not None and not b.done for b in boards)  # the pane heard the race as it ran
        assert any(b.stage.startswith("screening: 3 candidate(s)") for b in boards)
        queued = view.said("queued")
        assert queued and {origin for _, origin in queued} == {"tune"}
        lines = [json.loads(line) for line in lab.history.path.read_text().splitlines()]
        assert len(lines) == len(tune.own) >= 3 + 6 and {line["tune_id"] for line in lines} == {tune.tune_id}
        assert all(lab.records[run_id].tune_id == tune.tune_id for run_id in tune.own)
        assert not lab.stop_tune()  # ended: nothing to stop
        await lab.close()

    asyncio.run(scenario())


def test_stopping_keeps_the_finished_runs_and_says_unconfirmed():
    async def scenario() -> None:
        runner = HangingRunner()
        lab, view = _lab(runner)
        tune = lab.start_tune(BASE, check_request(space="freezing", budget="5m"))
        assert tune is not None
        await asyncio.wait_for(runner.measuring.wait(), 30)
        assert lab.stop_tune()
        await asyncio.wait_for(asyncio.gather(*view.tasks), 30)
        assert tune.board.done and tune.board.headline == f"best so far: none (unconfirmed: {STOPPED})"
        (line,) = lab.history.path.read_text().splitlines()  # the cancelled run is saved, tagged
        assert json.loads(line)["tune_id"] == tune.tune_id and json.loads(line)["status"] == "cancelled"
        await lab.close()

    asyncio.run(scenario())


def test_nothing_faster_than_the_default_is_said_in_those_words():
    async def scenario() -> None:
        lab, view = _lab(TunedRunner({"freezing": 1.3}))
        tune = lab.start_tune(BASE, check_request(space="freezing", budget="5m"))
        assert tune is not None
        await asyncio.wait_for(asyncio.gather(*view.tasks), 60)
        assert tune.board.headline == "no configuration beats the default compile by more than 2%"
        assert "torch.compile(" not in tune.board.answer and tune.board.stage == "nothing beats the default compile"
        await lab.close()

    asyncio.run(scenario())


class FailingRunner(InProcessRunner):
    """Every run fails as a workload that raises does (``runtime_error``), before it measures anything."""

    async def run(self, record: Any, on_event: Any = None) -> Any:
        self.ran.append(record.run_id)
        record.fail("runtime_error", "the workload raised RuntimeError: boom")
        return record


def test_a_search_that_measured_nothing_says_nothing_measured_and_why_once():
    async def scenario() -> None:
        lab, view = _lab(FailingRunner())
        tune = lab.start_tune(BASE, check_request(space="freezing", budget="5m"))
        assert tune is not None
        await asyncio.wait_for(asyncio.gather(*view.tasks), 60)
        assert tune.board.stage == "nothing measured"  # the reason is the headline's, said once
        assert tune.board.headline.startswith("nothing was measured, so no configuration can be judged")
        assert "boom" in tune.board.headline
        await lab.close()

    asyncio.run(scenario())


def test_the_board_counts_the_candidates_in_the_race_and_those_yet_to_run_in_the_stage():
    # "left" alone read as "not yet run": the board keeps the two counts apart, per stage
    async def scenario() -> None:
        lab, view = _lab(TunedRunner({"freezing": 0.6, "cpp_wrapper": 0.61}))  # two close: a second stage
        boards: list[Board] = []
        tune = lab.start_tune(BASE, check_request(space="freezing,cpp_wrapper", budget="5m"), boards.append)
        assert tune is not None
        await asyncio.wait_for(asyncio.gather(*view.tasks), 60)
        screening = [(b.left, b.waiting, b.runs) for b in boards if b.stage.startswith("screening") and b.runs]
        assert screening[0] == (3, 2, 1)  # one of three scored: three in the race, two yet to run
        assert (3, 0, 3) in screening
        second = [(b.left, b.waiting) for b in boards if b.stage.startswith("stage 2")]
        assert second[0][0] == second[0][1] >= 2  # a new stage: each one still in has yet to run in it
        assert second[-1][1] == 0
        await lab.close()

    asyncio.run(scenario())


def test_a_pinned_option_the_probe_says_torch_lacks_runs_nothing_and_says_why(monkeypatch):
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="0.0.0+fake", defaults={k: False for k in keys if k != "freezng"},
        missing=tuple(k for k in keys if k == "freezng")))

    async def scenario() -> None:
        runner = TunedRunner({})
        lab, view = _lab(runner)
        base = RunOptions(workload="pointwise", device="cpu", iters=20, block_size=5,
                          inductor_options={"freezng": True}).validated()
        tune = lab.start_tune(base, check_request(space="freezing,cpp_wrapper", budget="5m"), None)
        assert tune is not None
        await asyncio.wait_for(asyncio.gather(*view.tasks), 60)
        assert tune.board.headline == ("nothing ran: option: 'freezng' is not an inductor option of this machine's "
                                       "torch (did you mean freezing?)"), tune.board.headline
        assert runner.ran == [] and tune.board.runs == 0

    asyncio.run(scenario())
