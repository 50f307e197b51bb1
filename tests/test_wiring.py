"""The session's wiring and the export are the engine's: both front ends call the one function of each.

:class:`tui.engine.runner.wiring.LaneRunners` (each lane's runner), :func:`tui.engine.runner.wiring.plan_pools`
(a pool of several GPU kinds) and :func:`tui.engine.store.export.export_records` (the files) are watched
while the command line runs and while the app's controller queues and exports, on an in-process runner.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tui import cli
from tui.app.controller import LabController
from tui.cli import run as cli_run
from tui.engine.options import OptionsError, RunOptions
from tui.engine.runner import wiring
from tui.engine.store import export
from tui.engine.store.history import History
from tui.telemetry.fake import FakeSource

sys.path.insert(0, str(Path(__file__).resolve().parent / "app"))
from test_controller import InProcessRunner, Recorder, _settle  # noqa: E402


@pytest.fixture
def calls(monkeypatch):
    """Who called the engine's wiring and export: a list of (function, caller's module)."""
    seen: list[tuple[str, str]] = []

    def caller() -> str:
        frame = sys._getframe(2)
        while frame.f_globals.get("__name__", "").startswith(("tui.engine", "test_wiring")):
            frame = frame.f_back
        return frame.f_globals["__name__"]

    init, plan, write = wiring.LaneRunners.__init__, wiring.plan_pools, export.export_records

    def watched_init(self, *args, **kwargs):
        seen.append(("LaneRunners", caller()))
        init(self, *args, **kwargs)

    def watched_plan(*args, **kwargs):
        seen.append(("plan_pools", caller()))
        return plan(*args, **kwargs)

    def watched_write(*args, **kwargs):
        seen.append(("export_records", caller()))
        return write(*args, **kwargs)

    monkeypatch.setattr(wiring.LaneRunners, "__init__", watched_init)
    monkeypatch.setattr(wiring, "plan_pools", watched_plan)
    monkeypatch.setattr(export, "export_records", watched_write)
    return seen


def test_the_command_line_wires_and_exports_through_the_engine(calls, monkeypatch, tmp_path, compile_lab_home):
    from tui.engine.runner import torch_probe

    telemetry = FakeSource(gpus=2, names=["Fake H100", "Fake A100"])
    monkeypatch.setattr(torch_probe, "cpu_build_here", lambda: None)  # a GPU machine's torch may have CUDA
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(cli_run, "_telemetry", lambda configs: telemetry)
    made: list[InProcessRunner] = []
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None: made.append(
        InProcessRunner()) or made[-1])
    out = tmp_path / "runs.csv"
    argv = ["sweep", "--workload", "pointwise", "--mode", "default,reduce-overhead", "--iters", "40",
            "--block-size", "10", "--device", "cuda:all", "--repeat", "1", "--no-history", "--quiet", "--csv", str(out)]
    assert cli.main(argv) == 0
    assert calls == [("plan_pools", "tui.cli.run"), ("LaneRunners", "tui.cli.run"), ("export_records", "tui.cli.run")]
    assert len(made) == 2 and sum(len(runner.ran) for runner in made) == 2  # a runner per GPU lane
    assert len(out.read_text().splitlines()) == 3


def test_the_apps_controller_wires_and_exports_through_the_engine(calls, tmp_path, compile_lab_home):
    async def scenario() -> None:
        lab = LabController(InProcessRunner(), telemetry=FakeSource(gpus=2), history=History())
        view = Recorder()
        lab.attach(view)
        options = RunOptions(workload="pointwise", device="cpu", iters=40, block_size=10).validated()
        (record,) = lab.enqueue([options])
        await _settle(lab, view)
        written = lab.write_export([record], str(tmp_path / "out.csv"))
        assert written[0] == tmp_path / "out.csv" and written[0].exists()
        await lab.close()

    asyncio.run(scenario())
    assert calls == [("LaneRunners", "tui.app.gpu_pool"), ("export_records", "tui.app.controller")]


def test_the_apps_pool_of_two_kinds_asks_the_engines_rule(calls):
    from tui.app.queueing import QueueActions

    notices: list[str] = []
    snapshots = FakeSource(gpus=2, names=["Fake H100", "Fake A100"]).snapshot()
    app = SimpleNamespace(query_one=lambda kind: SimpleNamespace(snapshots=snapshots),
                          notify=lambda message, **kwargs: notices.append(message))
    actions = QueueActions(app, lab=None, screen=lambda: None, trust=None)  # type: ignore[arg-type]
    assert actions.check_pool_kinds(("cuda:0", "cuda:1"), "auto") == 1
    assert notices and notices[0].startswith("The GPUs are of several kinds")
    with pytest.raises(OptionsError, match="^repeat: "):
        actions.check_pool_kinds(("cuda:0", "cuda:1"), 3)
    assert calls == [("plan_pools", "tui.app.queueing")] * 2


def test_plan_pools_per_kind_and_alone():
    names = {"cuda:0": "H100", "cuda:1": "A100", "cuda:2": "H100"}
    pool = ("cuda:0", "cuda:1", "cuda:2")
    assert wiring.plan_pools(pool, names, 3, each_kind=True) == wiring.PoolPlan((("cuda:0", "cuda:2"), ("cuda:1",)), 3)
    assert wiring.plan_pools(("cuda:0",), names, 3) == wiring.PoolPlan((("cuda:0",),), 3)
    same = wiring.plan_pools(("cuda:0", "cuda:2"), names, "auto")
    assert same == wiring.PoolPlan((("cuda:0", "cuda:2"),), "auto")


def test_export_records_goes_on_after_a_failure_unless_told_to_stop(tmp_path):
    from fakes.records import cuda_run_record

    record = cuda_run_record()
    targets = {"csv": tmp_path, "json": tmp_path / "runs.json"}  # a directory is refused
    first, second = export.export_records([record], targets)
    assert isinstance(first.result, export.ExportError) and second.result == tmp_path / "runs.json"
    (tmp_path / "runs.json").unlink()
    (only,) = export.export_records([record], targets, keep_going=False)
    assert isinstance(only.result, export.ExportError) and not (tmp_path / "runs.json").exists()
