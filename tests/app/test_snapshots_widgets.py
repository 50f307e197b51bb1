"""SVG snapshots (pytest-textual-snapshot) of the GPU pane and the iteration chart at 80x24.

Update after a deliberate change with ``pytest tests/app/test_snapshots_widgets.py --snapshot-update``
and look at the new SVGs before committing them.
"""

from __future__ import annotations

import asyncio
import math

from app_helpers import ChartBlock, ChartRecord
from textual.app import App, ComposeResult
from textual.widgets import Static

from tui.app.components.chart import IterationChart
from tui.app.components.gpu_pane import GpuPane
from tui.telemetry.fake import FakeSource


class PaneSnapshotApp(App):
    """One fake GPU, throttled by the power cap, polled once (no timer fires during the test)."""

    def __init__(self) -> None:
        super().__init__()
        self.source = FakeSource(vary=False)
        self.source.set_field(0, throttle_reasons=("SW power cap",))
        self.polled = asyncio.Event()

    def compose(self) -> ComposeResult:
        pane = GpuPane(self.source, interval=3600.0)
        pane.active_uuid = self.source.uuids[0]
        yield pane
        yield Static("─" * 80)

    def on_gpu_pane_updated(self) -> None:
        self.polled.set()


def chart_record() -> ChartRecord:
    record = ChartRecord()
    record.samples["eager"].append(ChartBlock("warmup", 0, [2.4, 1.6, 1.4]))
    record.samples["compiled"].append(ChartBlock("compile", 0, [31234.0]))
    record.samples["compiled"].append(ChartBlock("warmup", 0, [3.1, 1.9, 1.1]))
    for b in range(8):
        record.samples["eager"].append(
            ChartBlock(
                "measure",
                b,
                [1.25 + 0.06 * math.sin((50 * b + j) / 9.0) + (0.3 if j == 17 else 0.0) for j in range(50)],
            )
        )
        record.samples["compiled"].append(
            ChartBlock("measure", b, [0.83 + 0.04 * math.cos((50 * b + j) / 6.0) for j in range(50)])
        )
    return record


class ChartSnapshotApp(App):
    def compose(self) -> ComposeResult:
        yield Static("run: resnet18 · cuda · inductor default")
        yield IterationChart(chart_record())


def test_snapshot_gpu_pane_one_gpu(snap_compare):
    app = PaneSnapshotApp()

    async def polled(pilot) -> None:
        await asyncio.wait_for(app.polled.wait(), 10)

    assert snap_compare(app, terminal_size=(80, 24), run_before=polled)


def test_snapshot_iteration_chart(snap_compare):
    assert snap_compare(ChartSnapshotApp(), terminal_size=(80, 24))


class PoolPaneSnapshotApp(App):
    """Four fake GPUs, two running a run each (a pool: cuda:all), in the app's pane at 80x24: two lines."""

    CSS = "GpuPane { border: round white; max-height: 4; }"

    def __init__(self) -> None:
        super().__init__()
        self.source = FakeSource(gpus=4, vary=False)
        self.source.set_field(3, throttle_reasons=("HW thermal slowdown",))
        self.polled = asyncio.Event()

    def compose(self) -> ComposeResult:
        pane = GpuPane(self.source, interval=3600.0)
        pane.busy = {self.source.uuids[0]: "default fullgraph", self.source.uuids[3]: "reduce-overhead"}
        yield pane
        yield Static("─" * 80)

    def on_gpu_pane_updated(self) -> None:
        self.polled.set()


def test_snapshot_gpu_pane_four_gpus_two_busy_without_colour(snap_compare, monkeypatch):
    """The busy GPUs are told by ▶ and their run's name, not by colour (NO_COLOR), two GPUs a line at 80x24."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = PoolPaneSnapshotApp()

    async def polled(pilot) -> None:
        await asyncio.wait_for(app.polled.wait(), 10)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=polled)
