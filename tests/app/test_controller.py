"""The app's controller without Textual: queue runs on an in-process fake runner, watch the rows, export.

:class:`tui.app.controller.LabController` owns the session's state; the app only observes it through
:class:`~tui.app.lab_view.LabView`. Here a recorder is the view, and no textual module is needed:
the controller's imports are read from the source and none reaches textual.
"""

from __future__ import annotations

import asyncio
import csv
import json
import sys
from pathlib import Path
from typing import Any

from tui.app.controller import LabController
from tui.engine.store.export import default_formats
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_import_graph import ROOT, import_graph  # noqa: E402


class InProcessRunner:
    """A runner that measures nothing: each run gets a measuring phase, four block pairs and its end."""

    keep_spare = False

    def __init__(self, eager_ms: float = 2.0, compiled_ms: float = 1.0) -> None:
        self.eager_ms, self.compiled_ms = eager_ms, compiled_ms
        self.ran: list[str] = []
        self.closed = False

    async def run(self, record: Any, on_event: Any = None) -> Any:
        self.ran.append(record.run_id)
        events = [make_event("phase", 0.1, phase="measuring")]
        for index in range(4):
            for side, ms in (("eager", self.eager_ms), ("compiled", self.compiled_ms)):
                events.append(make_event("block", 0.2, side=side, stage="measure", index=index,
                                         clock="perf_counter", ms=[ms] * 10, host_ms_per_call=ms))
        events.append(make_event("finished", 0.3))
        for event in events:
            record.apply(event)
            if on_event is not None:
                on_event(event)
            await asyncio.sleep(0)
        return record

    async def aclose(self) -> None:
        self.closed = True

    def kill_all(self) -> None:
        pass


class Recorder:
    """A LabView that writes down what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.notices: list[str] = []
        self.tasks: list[asyncio.Task[None]] = []

    def notify(self, message: str, **kwargs: Any) -> None:
        self.notices.append(message)

    def show_queued(self, records, rows, origin):
        self.calls.append(("queued", ([r.run_id for r in rows], origin)))

    def show_started(self, record):
        self.calls.append(("started", record.run_id))

    def show_event(self, record, event):
        self.calls.append(("event", record.run_id))

    def show_finished(self, record):
        self.calls.append(("finished", record.run_id))

    def show_saved(self, record):
        self.calls.append(("saved", record.run_id))

    def show_dirty(self, row_id):
        self.calls.append(("dirty", row_id))

    def spawn(self, work, group):
        self.tasks.append(asyncio.ensure_future(work))

    def said(self, kind: str) -> list[Any]:
        return [what for name, what in self.calls if name == kind]


def _controller(runner: Any) -> tuple[LabController, Recorder]:
    lab = LabController(runner, telemetry=object(), history=History())
    view = Recorder()
    lab.attach(view)
    return lab, view


async def _settle(lab: LabController, view: Recorder) -> None:
    for _ in range(2000):
        await asyncio.sleep(0.005)
        if lab.settled and all(task.done() for task in view.tasks):
            return
    raise AssertionError("the controller never settled")


def test_the_controller_imports_no_textual():
    """Read from the source: nothing the controller imports (transitively, inside tui) imports textual."""
    graph = import_graph(ROOT)
    seen, todo = set(), ["tui.app.controller"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(name for name in graph.get(module, ()) if name in graph)
    reached = {name for module in seen for name in graph[module]}
    assert "tui.app.grouping" in seen and "tui.engine.run.session" in seen  # the walk follows the imports
    assert not {name for name in reached if name == "textual" or name.startswith("textual.")}


def test_a_queued_run_becomes_a_final_row_and_exports(tmp_path):
    async def scenario() -> None:
        runner = InProcessRunner()
        lab, view = _controller(runner)
        options = RunOptions(workload="pointwise", device="cpu", iters=40, block_size=10).validated()
        (record,) = lab.enqueue([options], origin="run")
        assert view.said("queued") == [([record.run_id], "run")]
        assert lab.records[record.run_id] is record and lab.row_record(record.run_id) is record
        assert lab.run_active and not lab.settled
        await _settle(lab, view)
        assert runner.ran == [record.run_id]
        assert [name for name, _ in view.calls if name != "event"] == ["queued", "started", "finished", "saved"]
        assert view.said("event")  # the row was marked out of date as events arrived
        assert record.status == "done" and not lab.computing(record) and lab.current is None
        (line,) = lab.history.path.read_text().splitlines()
        assert json.loads(line)["run_id"] == record.run_id

        records, skipped = lab.exportable_records([record.run_id])
        assert records == [record] and skipped == 0
        written = lab.write_export(records, str(tmp_path / "out.csv"))
        assert [p.name for p in written] == ["out" + fmt.suffix for fmt in default_formats()]
        assert [p.name for p in written][:3] == ["out.csv", "out.json", "out-raw.csv"]
        with open(written[0], newline="") as handle:
            (row,) = list(csv.DictReader(handle))
        assert row["run_id"] == record.run_id and row["status"] == "done"
        assert json.loads(written[1].read_text())["runs"][0]["run_id"] == record.run_id
        await lab.close()
        assert runner.closed and lab.enqueue([options]) == []  # closed: nothing more is queued

    asyncio.run(scenario())


def test_repeats_share_one_row_rebuilt_as_processes_are_saved():
    async def scenario() -> None:
        lab, view = _controller(InProcessRunner())
        options = RunOptions(workload="pointwise", device="cpu", iters=40, block_size=10).validated()
        records = lab.enqueue([options], repeats=2)
        group = records[0].run_id
        assert view.said("queued") == [([group], "run")]  # one row for the two processes
        assert [lab.row_of(r) for r in records] == [group, group]
        await _settle(lab, view)
        assert group in view.said("dirty")  # the group's row was rebuilt, then redrawn
        row = lab.row_record(group)
        assert row is not None and row is not records[0] and len(lab.group_members(group)) == 2
        assert lab.exportable_records([group]) == (lab.group_members(group), 0)

    asyncio.run(scenario())


def test_traces_and_confirmed_settings_are_the_controllers():
    lab, _ = _controller(InProcessRunner())
    options = RunOptions(workload="pointwise", device="cpu", python="/opt/other/python3")
    assert lab.unconfirmed([options]) == [("python", "/opt/other/python3")]
    lab.confirmed_code.add(("python", "/opt/other/python3"))
    assert lab.unconfirmed([options]) == []
    assert lab.traced([options]) == [options]
    assert "Chrome trace" in lab.cycle_trace() and lab.trace_next == "trace"
    (traced,) = lab.traced([options])
    assert traced.trace == options.profile and not traced.torch_trace


class HangingRunner(InProcessRunner):
    """A runner whose run reaches measuring and then waits until it is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.measuring = asyncio.Event()

    async def run(self, record: Any, on_event: Any = None) -> Any:
        self.ran.append(record.run_id)
        event = make_event("phase", 0.1, phase="measuring")
        record.apply(event)
        if on_event is not None:
            on_event(event)
        self.measuring.set()
        await asyncio.Event().wait()
        return record


def test_closing_saves_the_cancelled_run_without_telling_the_view():
    """The app's screens are gone while it closes: the run cancelled then is saved, and the view hears nothing."""

    async def scenario() -> None:
        runner = HangingRunner()
        lab, view = _controller(runner)
        options = RunOptions(workload="pointwise", device="cpu", iters=40, block_size=10).validated()
        (record,) = lab.enqueue([options], origin="run")
        await asyncio.wait_for(runner.measuring.wait(), 10)
        told = len(view.calls)
        await lab.close()
        assert record.status == "cancelled" and record.finished
        (line,) = lab.history.path.read_text().splitlines()  # saved all the same, saying what ended it
        assert json.loads(line)["run_id"] == record.run_id
        assert json.loads(line)["error_message"] == "as the app quit"
        assert view.calls[told:] == [] and view.notices == []

    asyncio.run(scenario())
