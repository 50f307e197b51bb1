"""One worker per GPU in the app: ``cuda:all`` in the device field and the sweep dialog's GPUs, with four fake GPUs.

The telemetry fake gives the GPUs (the pane's, the device field's and the runners' UUIDs); each GPU lane's
runner starts the fake worker with its GPU's CUDA_VISIBLE_DEVICES, as it would the real one. Runs that must
be seen side by side wait at a gate file after their first measured round (``FAKE_WORKER_GATE``), so every
check waits for a state, never for time.
"""

from __future__ import annotations

import json

import pytest
from textual.widgets import Input, SelectionList
from tui.app.components.chooser import Chooser

from app_helpers import fake_runner, no_gpu_source, notifications, wait_until
from tui import paths
from tui.app.components.gpu_pane import GpuPane
from tui.app.components.picker import Picker
from tui.app.components.queue_view import QueueView
from tui.app.components.sweep_dialog import SweepScreen
from tui.app.config import AppConfig, load_config, save_config
from tui.engine.options import RunOptions
from tui.engine.cpu_list import CPUS_ENV
from tui.engine.run.placement import POOL_ALL, allowed_cpus
from tui.engine.runner.gpu_lock import pool_cpu_env, visible_devices_value
from tui.telemetry.fake import FakeSource

POOL = tuple(f"cuda:{index}" for index in range(4))


@pytest.fixture(autouse=True)
def _every_gpu_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def _device_values(app) -> list[str]:
    return [value for _, value in app.query_one(Picker).query_one("#device", Chooser).options if isinstance(value, str)]


async def _gpus_offered(pilot, app) -> None:
    await wait_until(pilot, lambda: POOL_ALL in _device_values(app), what="cuda:all offered")


async def _run_on_every_gpu(pilot, app, repeat: str) -> None:
    """``cuda:all`` in the device field, ``repeat`` processes, and ``r``."""
    picker = app.query_one(Picker)
    picker.query_one("#device", Chooser).value = POOL_ALL
    picker.query_one("#repeat", Input).value = repeat
    await pilot.pause()
    app.table.focus()
    await pilot.press("r")


def _spans(app) -> list[tuple[str, str, str]]:
    """Every start and end of a run, in the order the session reported them: (what, device, run id)."""
    events: list[tuple[str, str, str]] = []
    listener = app.session.listener
    started, finished = listener.run_started, listener.run_finished

    def run_started(record):
        events.append(("start", record.options.device, record.run_id))
        started(record)

    def run_finished(record):
        events.append(("end", record.options.device, record.run_id))
        finished(record)

    listener.run_started, listener.run_finished = run_started, run_finished
    return events


def _never_two_on_one_gpu(events: list[tuple[str, str, str]]) -> int:
    """Replays the starts and ends: no GPU starts a run while it runs one; returns the most runs at once."""
    busy: dict[str, str] = {}
    most = 0
    for what, device, run_id in events:
        if what == "start":
            assert device not in busy, f"{run_id} started on {device} while {busy.get(device)} ran there"
            busy[device] = run_id
            most = max(most, len(busy))
        elif busy.get(device) == run_id:
            del busy[device]
    return most


def _measuring(app) -> int:
    return sum(1 for unit in app.session.running.values() if unit.record.status == "measuring")


async def test_cuda_all_and_r_run_the_processes_on_every_gpu_at_once(make_app, tmp_path):
    gate = tmp_path / "gate"
    source = FakeSource(gpus=4, vary=False)
    app = make_app(telemetry=source, runner=fake_runner(FAKE_WORKER_GATE=str(gate)), load_history=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _gpus_offered(pilot, app)
        events = _spans(app)
        await _run_on_every_gpu(pilot, app, "4")
        await wait_until(pilot, lambda: _measuring(app) == 4, what="four processes measuring at once")
        assert {lane: unit.record.options.device for lane, unit in app.session.running.items()} == dict(
            zip(POOL, POOL, strict=True)
        )
        pane = app.query_one(GpuPane)
        assert set(pane.busy) == set(source.uuids)  # every GPU marked
        assert [line[:6] for line in pane.render_text().plain.splitlines()] == [f"▶ GPU{i}" for i in range(4)]
        await wait_until(pilot, lambda: str(app.query_one(QueueView).render()).count("▶ cuda:") == 4, what="queue")
        gate.touch()
        await wait_until(pilot, lambda: app.settled, timeout=60, what="settled")
        assert not app.query_one(GpuPane).busy  # nothing runs: nothing marked
    records = app.session.records
    assert [r.status for r in records] == ["done"] * 4 and len({r.group_id for r in records}) == 1
    assert sorted(r.options.device for r in records) == list(POOL)
    for record in records:  # each worker was given its GPU by UUID
        index = int(record.options.device.rpartition(":")[2])
        assert record.env.cuda_visible_devices == visible_devices_value(source.uuids[index])
        assert record.concurrent_runs == 3
    assert _never_two_on_one_gpu(events) == 4
    assert json.loads(paths.config_file().read_text())["options"]["device"] == POOL_ALL  # kept as chosen


async def test_cuda_all_and_w_deal_a_sweep_to_free_gpus_at_80x24(make_app, tmp_path):
    gate = tmp_path / "gate"
    source = FakeSource(gpus=4, vary=False)
    app = make_app(telemetry=source, runner=fake_runner(FAKE_WORKER_GATE=str(gate)), load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _gpus_offered(pilot, app)
        events = _spans(app)
        app.query_one(Picker).query_one("#device", Chooser).value = POOL_ALL
        await pilot.pause()
        app.table.focus()
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="sweep dialog")
        gpus = app.screen.query_one("#sweep-gpus", SelectionList)
        assert list(gpus.selected) == list(POOL)  # cuda:all: every GPU checked
        await pilot.pause()
        preview = str(app.screen.query_one("#sweep-preview").render())
        # The repeat default, auto: one process each, more for a launch-bound one.
        # what tells the configurations apart first, then the processes and the pool
        assert preview == ("6 run(s): default no-fullgraph, default fullgraph, reduce-overhead no-fullgraph, "
                           "reduce-overhead fullgraph, +2 more; 1 process each, more where one does not settle it "
                           "(auto); on 4 GPUs at once"), preview
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: _measuring(app) == 4, what="four runs measuring at once")
        assert "Queued 6 run(s) over 4 GPUs." in notifications(app)
        assert len(app.queue) == 2 and all(r.options.device == "cuda" for r in app.queue)  # some GPU, not yet known
        lines = app.query_one(GpuPane).render_text().plain.splitlines()
        assert len(lines) == 2 and [line.count("▶ GPU") for line in lines] == [2, 2], lines  # two lines at 80x24
        await wait_until(pilot, lambda: "device" in app.table.shown_columns, what="the device column")
        gate.touch()
        await wait_until(pilot, lambda: app.settled, timeout=60, what="settled")
        assert app.table.shown_columns[:5] == ("status", "speedup", "mode", "fullgraph", "device")
        assert "gpu" not in app.table.shown_columns  # one kind of GPU: the device tells the rows apart
    records = app.session.records
    assert [r.status for r in records] == ["done"] * 6
    assert {r.options.device for r in records} == set(POOL)  # every GPU used
    assert _never_two_on_one_gpu(events) == 4


async def test_the_sweep_dialogs_gpus_list_chooses_the_pool(make_app):
    source = FakeSource(gpus=4, vary=False, near_cpus={1: [1], 3: [0]})  # NVML's word on which cores are near
    app = make_app(telemetry=source, load_history=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _gpus_offered(pilot, app)
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.table.focus()
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen), what="sweep dialog")
        screen = app.screen
        gpus = screen.query_one("#sweep-gpus", SelectionList)
        assert gpus.option_count == 4 and not gpus.selected and gpus.border_subtitle == "none: cpu"
        modes = screen.query_one("#sweep-modes", SelectionList)
        modes.deselect_all()
        modes.select("default")
        gpus.select("cuda:3")
        gpus.select("cuda:1")
        await pilot.pause()
        assert gpus.border_subtitle == ""
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.table.row_count == 2, what="two rows")
        await wait_until(pilot, lambda: app.settled, timeout=60, what="settled")
    records = app.session.records
    assert [r.status for r in records] == ["done"] * 2
    assert sorted(r.options.device for r in records) == ["cuda:1", "cuda:3"]  # dealt together, one each
    planned = pool_cpu_env(("cuda:1", "cuda:3"), source)  # each lane its own cores, near its GPU where known
    assert {lane: runner.env.get(CPUS_ENV) for lane, runner in app.lanes.made.items()} == {
        lane: env.get(CPUS_ENV) for lane, env in planned.items()}
    if {0, 1} <= set(allowed_cpus()):
        assert planned == {"cuda:1": {CPUS_ENV: "1"}, "cuda:3": {CPUS_ENV: "0"}}
        assert {r.options.device: r.env.cpu_affinity for r in records} == {"cuda:1": "1", "cuda:3": "0"}
    assert "gpus" not in app.config.sweep and app.config.options.device == "cpu"  # the picker's device stays


async def test_x_cancels_the_selected_rows_run_and_otherwise_every_running_one(make_app, tmp_path):
    gate = tmp_path / "gate"
    app = make_app(telemetry=FakeSource(gpus=4, vary=False), runner=fake_runner(FAKE_WORKER_GATE=str(gate)),
                   load_history=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _gpus_offered(pilot, app)
        app.query_one(Picker).query_one("#device", Chooser).value = POOL_ALL
        await pilot.pause()
        app.table.focus()
        await pilot.press("w", "ctrl+s")  # the default sweep: 6 configurations
        await wait_until(pilot, lambda: _measuring(app) == 4, what="four runs measuring at once")
        on_gpu2 = app.session.running["cuda:2"].record
        app.table.move_cursor(row=app.table.run_ids.index(on_gpu2.run_id))
        await pilot.press("x")
        await wait_until(pilot, lambda: on_gpu2.status == "cancelled", what="the selected row's run cancelled")
        await wait_until(pilot, lambda: _measuring(app) == 4, what="the next run on the freed GPU")
        assert len(app.queue) == 1 and app.session.running["cuda:2"].record is not on_gpu2
        others = [unit.record for unit in app.session.running.values()]
        app.table.move_cursor(row=app.table.run_ids.index(on_gpu2.run_id))  # the table followed the new run
        await pilot.pause()
        await pilot.press("x")  # the selected row no longer runs: every running run
        await wait_until(pilot, lambda: all(r.status == "cancelled" for r in others), what="every running run")
        assert "Cancelled the 4 running runs; the queue goes on (X cancels it too)." in notifications(app)
        await wait_until(pilot, lambda: not app.queue and _measuring(app) == 1, what="the last one started")
        await pilot.press("X")
        await wait_until(pilot, lambda: app.settled, timeout=30, what="settled")
    assert [r.status for r in app.session.records] == ["cancelled"] * 6


def test_the_config_keeps_cuda_all(tmp_path):
    path = tmp_path / "config.json"
    save_config(AppConfig(options=RunOptions(device=POOL_ALL), repeat=3), path)
    config, warning = load_config(path)
    assert warning is None and config.options.device == POOL_ALL and config.repeat == 3


def _saved_device(device: str) -> None:
    save_config(AppConfig(options=RunOptions(device=device)))


async def test_a_saved_cuda_all_is_chosen_again_where_the_gpus_are(make_app):
    _saved_device(POOL_ALL)
    app = make_app(telemetry=FakeSource(gpus=4, vary=False), load_history=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        picker = app.query_one(Picker)
        await wait_until(pilot, lambda: picker.device == POOL_ALL, what="cuda:all chosen")
        assert picker.current_options().device == POOL_ALL
        assert not [n for n in notifications(app) if "saved device" in n]


@pytest.mark.parametrize("gpus", [1, 0])
async def test_a_saved_cuda_all_on_a_smaller_machine_falls_back_with_a_notice(make_app, gpus):
    _saved_device(POOL_ALL)
    source = FakeSource(gpus=1, vary=False) if gpus else no_gpu_source()
    app = make_app(telemetry=source, load_history=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        picker = app.query_one(Picker)
        await wait_until(pilot, lambda: any("saved device" in n for n in notifications(app)), what="the notice")
        [notice] = [n for n in notifications(app) if "saved device" in n]
        fallback = f"cuda:GPU-{source.uuids[0][4:]}" if gpus else "cpu"
        assert picker.device == fallback and POOL_ALL not in _device_values(app)
        assert notice.startswith(f"The saved device cuda:all needs two GPUs or more; this machine shows {gpus} GPU")
        assert notice.endswith(f"the device is {'Fake H200 GPU-fa4e0000…' if gpus else 'cpu'}.")
        assert picker.current_options().validated().device == fallback  # a run is not refused


async def test_the_palettes_serial_switch_caps_the_runs_at_once(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.session.max_running is None
        app.action_toggle_serial()
        await pilot.pause()
        assert app.session.max_running == 1 and any("One run at a time" in m for m in notifications(app))
        app.action_toggle_serial()
        assert app.session.max_running is None


async def test_a_box_of_two_gpu_kinds_refuses_repeats_over_cuda_all_and_says_rows_may_differ(make_app):
    source = FakeSource(gpus=2, vary=False, names=["Fake H100", "Fake A100"])
    app = make_app(telemetry=source, load_history=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _gpus_offered(pilot, app)
        await _run_on_every_gpu(pilot, app, "2")
        await wait_until(pilot, lambda: any("different hardware" in m for m in notifications(app)), what="refusal")
        assert app.session.records == []  # one row's processes would have run on an H100 and an A100
        await _run_on_every_gpu(pilot, app, "1")
        await wait_until(pilot, lambda: app.session.records and app.settled, timeout=60, what="the run")
        assert any(
            m.startswith("The GPUs are of several kinds (Fake H100 x1, Fake A100 x1)") for m in notifications(app)
        )
