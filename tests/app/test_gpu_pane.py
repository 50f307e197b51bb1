"""GpuPane in a tiny host app: fields, unavailable, faults mid-run, lost GPU, non-blocking polls."""

from __future__ import annotations

import asyncio
import sys
import threading

from textual.app import App, ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.components.gpu_pane import PANE_FIELDS, GpuPane
from tui.telemetry.fake import FakeSource
from tui.telemetry.nvml import NvmlSource

TIMEOUT = 10.0


class PaneHost(App):
    """Mounts one GpuPane and records its messages; ``x`` counts key presses.

    The default interval is long: tests trigger polls with ``poll_now()`` and wait for the
    resulting message, so the app is idle between steps (``pilot.pause()`` returns at once).
    """

    BINDINGS = [("x", "count", "Count")]

    def __init__(self, source, *, interval: float = 60.0, active_uuid: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.interval = interval
        self.active_uuid = active_uuid
        self.updates: list[GpuPane.Updated] = []
        self.failures: list[GpuPane.PollFailed] = []
        self.keys = 0
        self._changed = asyncio.Event()

    def compose(self) -> ComposeResult:
        pane = GpuPane(self.source, interval=self.interval)
        pane.active_uuid = self.active_uuid
        yield pane
        yield Static("the rest of the app")

    def on_gpu_pane_updated(self, message: GpuPane.Updated) -> None:
        self.updates.append(message)
        self._changed.set()

    def on_gpu_pane_poll_failed(self, message: GpuPane.PollFailed) -> None:
        self.failures.append(message)
        self._changed.set()

    def action_count(self) -> None:
        self.keys += 1

    async def until(self, condition, timeout: float = TIMEOUT) -> None:
        """Wait for pane messages until ``condition()`` holds."""
        async def changes() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(changes(), timeout)  # not asyncio.timeout: that is Python 3.11+

    @property
    def pane(self) -> GpuPane:
        return self.query_one(GpuPane)

    @property
    def shown(self) -> str:
        return self.pane.content.plain


class GatedSource(FakeSource):
    """A FakeSource whose polls wait for the test to open a gate; tracks overlapping polls."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.active = 0
        self.max_active = 0
        self._count_lock = threading.Lock()

    def snapshot(self):
        with self._count_lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.entered.set()
            self.gate.wait(TIMEOUT)
            return super().snapshot()
        finally:
            with self._count_lock:
                self.active -= 1


async def test_pane_shows_the_fake_gpu_fields():
    source = FakeSource(vary=False)
    source.set_field(0, throttle_reasons=("GPU idle", "SW power cap"))
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        text = app.shown
        # Exact lines: fields are two spaces apart, a label one space from its value.
        assert text.splitlines()[:4] == [
            "  GPU0 Fake H200  P0",
            "  util 50% mem-ctl 20%  mem 4.0/140.4 GiB  temp 40°C  power 150/700 W",
            "  clock SM 1980/1980 MHz  mem 3201 MHz  throttle GPU idle, SW power cap",
            "  procs 4242 python 3.9 GiB",
        ], text
        assert "this run" not in text  # no active uuid: nothing highlighted
        assert len(text.splitlines()) <= 7
        update = app.updates[0]
        assert update.pane is app.pane and update.available
        assert update.snapshot_for(source.uuids[0].upper()).temp_c == 40.0


async def test_active_gpu_in_full_others_one_line_each():
    source = FakeSource(gpus=3, vary=False)
    source.set_field(1, throttle_reasons=("HW thermal slowdown",))
    app = PaneHost(source, active_uuid=source.uuids[2][4:].upper())  # torch-style uuid
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        lines = app.shown.splitlines()
        assert lines[0].startswith("▶ GPU2 Fake H200") and "this run" in lines[0]
        assert len(lines) == 4 + 2
        assert lines[4].startswith("  GPU0 Fake H200") and "4.0/140.4 GiB" in lines[4]
        assert lines[5].startswith("  GPU1") and lines[5].endswith("HW thermal slowdown")
        # Changing the active GPU re-renders at once, without waiting for a poll.
        app.pane.active_uuid = source.uuids[0]
        assert app.shown.splitlines()[0].startswith("▶ GPU0 Fake H200")


async def test_gpus_running_at_once_each_get_an_entry_marked_with_their_run():
    """A pool of GPUs (cuda:all): every GPU one line, the busy ones ▶ with their run's name (text, not colour)."""
    source = FakeSource(gpus=4, vary=False)
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.until(lambda: app.updates)
        assert len(app.shown.splitlines()) == 4 + 3  # nothing busy: the first GPU in full, as before
        app.pane.busy = {source.uuids[0]: "default", source.uuids[2]: "reduce-overhead fullgraph"}
        await pilot.pause()
        lines = app.shown.splitlines()
        assert lines == [
            "▶ GPU0 default  50%  4.0/140.4 GiB  40°C  150 W",
            "  GPU1  60%  5.0/140.4 GiB  42°C  175 W",
            "▶ GPU2 reduce-overhead fullgraph  70%  6.0/140.4 GiB  44°C  200 W",
            "  GPU3  80%  7.0/140.4 GiB  46°C  225 W",
        ], lines
        app.pane.busy = {}
        await pilot.pause()
        assert app.shown.splitlines()[0] == "  GPU0 Fake H200  P0"


async def test_more_gpus_than_lines_go_side_by_side():
    """At 80x24 the app's pane has two lines: four GPUs two by two, the one running marked even when alone."""
    source = FakeSource(gpus=4, vary=False)
    source.set_field(3, throttle_reasons=("HW thermal slowdown",))
    app = PaneHost(source, active_uuid=source.uuids[1])
    async with app.run_test(size=(80, 24)) as pilot:
        app.pane.styles.max_height = 2
        await app.until(lambda: app.updates)
        await pilot.pause()
        app.pane.busy = {source.uuids[1]: "max-autotune"}
        await pilot.pause()
        lines = app.shown.splitlines()
        assert len(lines) == 2 and [line.count("GPU") for line in lines] == [2, 2], lines
        assert lines[0].startswith("  GPU0  50%") and "▶ GPU1 max-autotune  60%" in lines[0]
        assert lines[1].startswith("  GPU2  70%") and "  GPU3  80%" in lines[1]
        assert all(len(line) <= 78 for line in lines)  # the pane's width less its padding


async def test_unavailable_telemetry_is_a_message_and_polling_stops():
    source = FakeSource()
    source.make_unavailable("NVML Shared Library Not Found")
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.until(lambda: app.updates)
        assert app.shown == "GPU telemetry unavailable: NVML Shared Library Not Found"
        assert app.updates[0].available is False and app.updates[0].snapshots == ()
        await pilot.press("x")
        await pilot.pause(0.1)
        assert app.keys == 1 and source.calls == 1  # the app goes on; the pane stopped polling


async def test_nvml_without_the_bindings_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    app = PaneHost(NvmlSource())
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        assert app.shown == "GPU telemetry unavailable: nvidia-ml-py is not installed"


async def test_a_field_going_na_mid_run_and_a_failing_poll():
    source = FakeSource(vary=False)
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.until(lambda: app.updates)
        source.set_field(0, temp_c=None, processes=None)  # e.g. NVML said "Not Supported"
        app.pane.poll_now()
        await app.until(lambda: len(app.updates) == 2)
        assert "temp n/a" in app.shown and "procs n/a" in app.shown
        assert "power 150/700 W" in app.shown  # the other fields are untouched
        source.raise_on_poll(RuntimeError("NVML hiccup"), count=1)
        app.pane.poll_now()
        await app.until(lambda: app.failures)
        assert app.failures[0].error == "RuntimeError: NVML hiccup"
        assert app.shown == "GPU telemetry error: RuntimeError: NVML hiccup"
        await pilot.press("x")
        assert app.keys == 1  # the app goes on
        app.pane.poll_now()
        await app.until(lambda: len(app.updates) == 3)
        assert "GPU0 Fake H200" in app.shown and "temp n/a" in app.shown


async def test_polling_goes_on_after_a_failure():
    source = FakeSource(vary=False)
    source.raise_on_poll(RuntimeError("NVML hiccup"), count=2)
    app = PaneHost(source, interval=0.02)
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: len(app.updates) >= 2)
        assert len(app.failures) == 2 and app.pane.polls >= 4
        assert "GPU0 Fake H200" in app.shown


async def test_a_failing_poll_is_shown():
    source = FakeSource()
    source.raise_on_poll(RuntimeError("driver went away"), count=None)
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.failures)
        assert app.shown.startswith("GPU telemetry error: RuntimeError: driver went away")
        assert not app.updates


async def test_lost_gpu():
    source = FakeSource(gpus=2, vary=False)
    app = PaneHost(source, active_uuid=source.uuids[0])
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        source.lose(0)
        source.lose(1)
        app.pane.poll_now()
        await app.until(lambda: len(app.updates) == 2)
        lines = app.shown.splitlines()
        assert lines[0] == "▶ GPU0 Fake H200  GPU lost (fell off the bus)"
        assert lines[1] == "  GPU1 Fake H200  GPU lost"
        assert app.updates[-1].snapshots[0].lost


async def test_polls_run_in_a_thread_and_never_overlap():
    source = GatedSource(vary=False)
    app = PaneHost(source, interval=0.0)  # the next poll as soon as the last one ended
    async with app.run_test(size=(80, 24)) as pilot:
        await asyncio.to_thread(source.entered.wait, TIMEOUT)
        # The first poll is stuck in the source, yet the UI handles keys.
        await pilot.press("x", "x")
        assert app.keys == 2 and app.pane.polls == 0 and not app.updates
        for _ in range(5):
            app.pane.poll_now()  # asks for another poll; must not start a second one now
        await pilot.pause()
        assert source.active == 1
        source.gate.set()
        await app.until(lambda: len(app.updates) >= 5)
        assert source.max_active == 1


async def test_no_rendering_while_a_modal_is_open():
    source = FakeSource(vary=False)
    app = PaneHost(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.until(lambda: app.updates)
        assert "temp 40°C" in app.shown
        app.push_screen(ModalScreen())
        await pilot.pause()
        source.set_field(0, temp_c=None)
        app.pane.poll_now()
        await app.until(lambda: len(app.updates) == 2)  # polling and messages go on
        assert app.updates[-1].snapshots[0].temp_c is None
        assert "temp 40°C" in app.shown  # but the hidden pane was not re-rendered
        app.pop_screen()
        app.pane.poll_now()
        await app.until(lambda: len(app.updates) == 3)
        assert "temp n/a" in app.shown


async def test_pane_skips_the_energy_counter_and_takes_plain_sources():
    class Recording(FakeSource):
        def __init__(self, **kwargs) -> None:
            super().__init__(**kwargs)
            self.asked: list = []

        def snapshot(self, fields=None):
            self.asked.append(fields)
            return super().snapshot(fields)

    class Plain:  # a source whose snapshot() takes no fields
        available, reason = True, ""

        def snapshot(self):
            return FakeSource(vary=False).snapshot()

    recording = Recording(vary=False)
    app = PaneHost(recording)
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        assert recording.asked == [PANE_FIELDS] and "energy_mj" not in PANE_FIELDS
        assert app.updates[0].snapshots[0].energy_mj is None
    app = PaneHost(Plain())
    async with app.run_test(size=(80, 24)):
        await app.until(lambda: app.updates)
        assert "GPU0 Fake H200" in app.shown and not app.failures


def test_updated_messages_replace_older_ones_of_the_same_pane():
    source = FakeSource()
    pane, other = GpuPane(source), GpuPane(source)
    older = GpuPane.Updated(pane, (), True, "")
    assert older.can_replace(GpuPane.Updated(pane, (), True, ""))
    assert not older.can_replace(GpuPane.Updated(other, (), True, ""))
    assert not older.can_replace(GpuPane.PollFailed(pane, "RuntimeError: x"))
    assert older.control is pane
