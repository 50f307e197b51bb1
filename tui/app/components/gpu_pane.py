"""The GPU pane: live NVML telemetry of this machine's GPUs, the run's GPU first and in full.

With several GPUs busy at once (a pool: ``cuda:all``), or more GPUs than the full layout has
room for (80x24), the pane shows one compact entry per GPU instead, in as many columns as it
takes to show them all, each busy one marked ``▶`` with the name of the run it runs
(:attr:`GpuPane.busy`): readable without colour.

The pane polls a telemetry source (``NvmlSource``, or ``FakeSource`` in tests) in a thread
worker, so a slow NVML call never blocks the UI. Polls never overlap: the next one is scheduled
``interval`` seconds after the last one finished. Results are applied on the UI thread (worker
state change), and the view is not re-rendered while another screen (a modal) is on top; polling
and :class:`GpuPane.Updated` go on, so the app can still warn about other processes on the GPU.

When telemetry is unavailable (no driver, no nvidia-ml-py) the pane says
``GPU telemetry unavailable: <reason>`` and stops polling; the rest of the app is unaffected.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Protocol

from rich.text import Text
from textual import work
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from tui.telemetry.model import IDLE_REASON, GpuSnapshot, normalize_uuid

__all__ = ["GpuPane", "PANE_FIELDS", "TelemetrySource"]

logger = logging.getLogger(__name__)

_POLL_GROUP = "gpu-pane-poll"
#: The fields the pane shows: everything but the energy counter, NVML's one costly read (~4 ms).
PANE_FIELDS = (
    "util_gpu_pct", "util_mem_pct", "mem_used_mb", "temp_c", "power_w", "sm_clock_mhz",
    "mem_clock_mhz", "pstate", "throttle_reasons", "processes",
)
_NA = "n/a"


class TelemetrySource(Protocol):
    """What the pane needs from a source (NvmlSource, FakeSource); ``fields`` is optional."""

    @property
    def available(self) -> bool:  # pragma: no cover - protocol
        """Whether the source has telemetry at all."""
        ...

    @property
    def reason(self) -> str:  # pragma: no cover - protocol
        """Why not, when it has none."""
        ...

    def snapshot(self, fields: Any = None) -> list[GpuSnapshot]:  # pragma: no cover - protocol
        """One snapshot per GPU, reading only ``fields`` (all when None)."""
        ...


@dataclass(frozen=True)
class _Poll:
    """One poll's outcome, handed from the worker thread to the UI thread."""

    snapshots: tuple[GpuSnapshot, ...]
    available: bool
    reason: str
    error: str | None = None


class GpuPane(Static):
    """Telemetry of every GPU: the active (or first) one in full, the others one line each.

    Args:
        source: the telemetry source; only ever called from a worker thread.
        interval: seconds between the end of one poll and the start of the next.

    Messages:
        GpuPane.Updated: after every poll that returned (even an empty one).
        GpuPane.PollFailed: after a poll that raised.
    """

    DEFAULT_CSS = """
    GpuPane {
        height: auto;
        max-height: 9;
        padding: 0 1;
    }
    GpuPane > .gpu-pane--na { color: $text-muted; }
    GpuPane > .gpu-pane--label { color: $text-muted; }
    GpuPane > .gpu-pane--active { color: $accent; text-style: bold; }
    GpuPane > .gpu-pane--warning { color: $warning; text-style: bold; }
    GpuPane > .gpu-pane--error { color: $error; text-style: bold; }
    """

    COMPONENT_CLASSES = {"gpu-pane--na", "gpu-pane--label", "gpu-pane--active", "gpu-pane--warning", "gpu-pane--error"}

    active_uuid: reactive[str | None] = reactive(None)
    """The uuid of the GPU the selected or running run uses (any form, see ``normalize_uuid``).

    That GPU is shown first, in full, and highlighted; ``None`` shows the first GPU in full,
    without highlight.
    """

    busy: reactive[dict[str, str]] = reactive(dict, always_update=False)
    """The GPUs running a run of this app now: canonical uuid -> what to call the run (its differing options).

    With two or more, every GPU gets one compact entry, the busy ones marked ``▶`` and named.
    """

    class Updated(Message):
        """The pane polled its source: ``snapshots`` are the GPUs' states now.

        Attributes:
            pane: the pane that polled.
            snapshots: one :class:`GpuSnapshot` per GPU (empty when telemetry is unavailable).
            available: whether the source has telemetry at all.
            reason: why not, when it has none.

        A newer ``Updated`` from the same pane replaces one still waiting in a queue.
        """

        def __init__(self, pane: GpuPane, snapshots: tuple[GpuSnapshot, ...], available: bool, reason: str) -> None:
            super().__init__()
            self.pane = pane
            self.snapshots = snapshots
            self.available = available
            self.reason = reason

        @property
        def control(self) -> GpuPane:
            """The pane that sent the message (for ``@on(GpuPane.Updated, "#selector")``)."""
            return self.pane

        def snapshot_for(self, uuid: Any) -> GpuSnapshot | None:
            """The snapshot of the GPU with this uuid (any form), or ``None``."""
            key = normalize_uuid(uuid)
            return next((s for s in self.snapshots if s.uuid == key), None)

        def can_replace(self, message: Message) -> bool:
            """A newer poll of the same pane makes an older one still queued obsolete."""
            return isinstance(message, GpuPane.Updated) and message.pane is self.pane

    class PollFailed(Message):
        """A poll raised (the source is broken); the pane shows the error and polls again.

        Attributes:
            pane: the pane that polled.
            error: ``"<ExceptionType>: <message>"``.
        """

        def __init__(self, pane: GpuPane, error: str) -> None:
            super().__init__()
            self.pane = pane
            self.error = error

        @property
        def control(self) -> GpuPane:
            """The pane that sent the message."""
            return self.pane

    def __init__(
        self,
        source: TelemetrySource,
        interval: float = 1.0,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__("GPU telemetry: reading…", name=name, id=id, classes=classes)
        self.source = source
        self.interval = interval
        self.polls = 0
        self._last: _Poll | None = None
        self._timer: Timer | None = None
        self._in_flight = False
        self._again = False
        self._with_fields = True
        self._shown: Text | None = None

    # -- public API ----------------------------------------------------------------------

    @property
    def snapshots(self) -> tuple[GpuSnapshot, ...]:
        """The GPUs' states at the last poll (empty before the first one)."""
        return self._last.snapshots if self._last else ()

    def poll_now(self) -> None:
        """Poll at once (or right after the poll in flight); also restarts a stopped pane."""
        if self._in_flight:
            self._again = True
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._in_flight = True
        self._poll()

    # -- polling -------------------------------------------------------------------------

    def on_mount(self) -> None:
        """Poll at once."""
        self.poll_now()

    @work(thread=True, exclusive=True, exit_on_error=False, group=_POLL_GROUP, name=_POLL_GROUP)
    def _poll(self) -> _Poll:
        """Runs in a worker thread: the only place the source is called."""
        try:
            snapshots = tuple(self._snapshot())
            error = None
        except Exception as exc:  # a broken source must not take the app down: the pane shows the error
            logger.warning("GPU telemetry poll failed", exc_info=exc)
            snapshots, error = (), f"{type(exc).__name__}: {exc}"
        try:
            available, reason = bool(self.source.available), str(self.source.reason)
        except Exception as exc:  # the pane says why
            logger.warning("GPU telemetry source unreadable", exc_info=exc)
            available, reason = False, f"{type(exc).__name__}: {exc}"
        return _Poll(snapshots=snapshots, available=available, reason=reason, error=error)

    def _snapshot(self) -> list[GpuSnapshot]:
        if self._with_fields:
            try:
                return self.source.snapshot(fields=PANE_FIELDS)
            except TypeError as exc:
                if "fields" not in str(exc):
                    raise
                self._with_fields = False  # a source whose snapshot() takes no fields
        return self.source.snapshot()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A poll ended: keep its result, post Updated or PollFailed, re-render, schedule the next."""
        if event.worker.group != _POLL_GROUP or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        event.stop()
        self._in_flight = False
        self.polls += 1
        result = event.worker.result
        if event.state is WorkerState.ERROR or not isinstance(result, _Poll):
            result = _Poll(snapshots=(), available=True, reason="", error=str(event.worker.error))
        self._last = result
        if result.error is None:
            self.post_message(self.Updated(self, result.snapshots, result.available, result.reason))
        else:
            self.post_message(self.PollFailed(self, result.error))
        self._show()
        if self._again:
            self._again = False
            self.poll_now()
        elif result.available or result.error is not None:
            self._timer = self.set_timer(max(self.interval, 0.001), self._on_timer, name="gpu-pane-next-poll")

    def _on_timer(self) -> None:
        self._timer = None
        self.poll_now()

    # -- view ----------------------------------------------------------------------------

    def watch_active_uuid(self) -> None:
        """Re-render with the new GPU first."""
        self._show()

    def watch_busy(self) -> None:
        """Re-render with the GPUs' runs marked."""
        self._show()

    def on_resize(self) -> None:
        """The entries are laid out for the pane's width and height."""
        self._show()

    def _show(self) -> None:
        """Re-render from the last poll, unless another screen is on top (then on the next poll)."""
        if not self.is_mounted:
            return
        try:
            visible = self.screen.is_active
        except Exception:  # not on a screen (yet, or any more)
            logger.debug("the GPU pane has no screen", exc_info=True)
            visible = False
        if not visible and self._last is not None and self._last.available:
            return
        text = self.render_text()
        if text == self._shown:
            return
        # A new layout only when the pane's height changes (one line per GPU, error, ...).
        relayout = self._shown is None or len(text.plain.splitlines()) != len(self._shown.plain.splitlines())
        self._shown = text
        self.update(text, layout=relayout)

    def _s(self, name: str) -> Any:
        return self.get_component_rich_style(f"gpu-pane--{name}", partial=True)

    def render_text(self) -> Text:
        """The pane's text for the last poll (what the pane shows)."""
        poll = self._last
        if poll is None:
            return Text("GPU telemetry: reading…", style=self._s("na"))
        if poll.error is not None:
            return Text(f"GPU telemetry error: {poll.error}", style=self._s("error"), no_wrap=True, overflow="ellipsis")
        if not poll.available:
            return Text(f"GPU telemetry unavailable: {poll.reason}", style=self._s("warning"))
        if not poll.snapshots:
            return Text("GPU telemetry: no GPU reported", style=self._s("na"))
        active_key = normalize_uuid(self.active_uuid)
        if self._overview_wanted(len(poll.snapshots)):
            return self._overview(poll.snapshots, active_key)
        full = next((s for s in poll.snapshots if s.uuid == active_key), poll.snapshots[0])
        text = Text(no_wrap=True, overflow="ellipsis")
        self._full(text, full, highlighted=full.uuid == active_key)
        for snap in poll.snapshots:
            if snap is not full:
                text.append("\n")
                self._brief(text, snap)
        return text

    # -- several GPUs at once -----------------------------------------------------------

    def _room(self) -> int:
        """The lines the pane can show (its max-height less border and padding); a large number when unbounded."""
        try:
            limit = self.styles.max_height
            size = self.app.size
            cells = int(limit.resolve(size, size)) if limit is not None else 0
        except Exception:  # no size yet: no limit
            logger.debug("the GPU pane's height limit is unknown", exc_info=True)
            cells = 0
        return max(1, cells - self.styles.gutter.height) if cells else 1000

    def _overview_wanted(self, gpus: int) -> bool:
        """One entry per GPU: several GPUs busy, or more GPUs than the full layout fits (4 lines + one per other)."""
        return gpus > 1 and (len(self.busy) > 1 or 3 + gpus > self._room())

    def _overview(self, snapshots: tuple[GpuSnapshot, ...], active_key: str | None) -> Text:
        """Every GPU in a compact entry, row by row in as many columns as the pane's height needs."""
        columns = math.ceil(len(snapshots) / self._room())
        width = self.content_size.width or max(self.app.size.width - 4, 20)
        cell = max((width - 2 * (columns - 1)) // columns, 10)
        names = len({snap.name for snap in snapshots}) > 1
        text = Text(no_wrap=True, overflow="ellipsis")
        for index, snap in enumerate(snapshots):
            if index:
                text.append("\n" if index % columns == 0 else "  ")
            entry = self._entry(snap, active_key, names)
            entry.truncate(cell, overflow="ellipsis", pad=index % columns < columns - 1)
            text.append_text(entry)
        return text

    def _entry(self, snap: GpuSnapshot, active_key: str | None, names: bool) -> Text:
        """``▶ GPU2 reduce-overhead fullgraph  50%  4.0/140.4 GiB  40°C  150 W``: the mark and the run first."""
        run = self.busy.get(snap.uuid or "") or ("this run" if snap.uuid == active_key and active_key else None)
        entry = Text()
        self._title(entry, snap, highlighted=run is not None, name=names)
        if run is not None:
            entry.append(f" {run}", self._s("active"))
        self._vitals(entry, snap)
        return entry

    # -- one GPU in full, the others a line each -------------------------------------------

    def _value(self, text: Text, value: Any, fmt: str = "{:.0f}", unit: str = "") -> None:
        if value is None:
            text.append(_NA, self._s("na"))
        else:
            text.append(fmt.format(value) + unit)

    def _label(self, text: Text, label: str) -> None:
        text.append(label, self._s("label"))

    def _title(self, text: Text, snap: GpuSnapshot, highlighted: bool, name: bool = True) -> None:
        index = "?" if snap.index is None else snap.index
        style = self._s("active") if highlighted else None
        text.append(("▶ " if highlighted else "  ") + f"GPU{index}" + (f" {snap.name or _NA}" if name else ""), style)

    def _full(self, text: Text, snap: GpuSnapshot, highlighted: bool) -> None:
        self._title(text, snap, highlighted)
        if snap.lost:
            text.append("  GPU lost (fell off the bus)", self._s("error"))
            return
        text.append("  ")
        self._value(text, snap.pstate, "{}")
        if highlighted:
            text.append("  this run", self._s("active"))
        text.append("\n  ")
        self._label(text, "util ")
        self._value(text, snap.util_gpu_pct, unit="%")
        self._label(text, " mem-ctl ")
        self._value(text, snap.util_mem_pct, unit="%")
        self._label(text, "  mem ")
        self._value(text, _gib(snap.mem_used_mb), "{:.1f}")
        text.append("/")
        self._value(text, _gib(snap.mem_total_mb), "{:.1f}", " GiB")
        self._label(text, "  temp ")
        self._value(text, snap.temp_c, unit="°C")
        self._label(text, "  power ")
        self._value(text, snap.power_w)
        text.append("/")
        self._value(text, snap.power_limit_w, unit=" W")
        text.append("\n  ")
        self._label(text, "clock SM ")
        self._value(text, snap.sm_clock_mhz)
        text.append("/")
        self._value(text, snap.sm_clock_max_mhz, unit=" MHz")
        self._label(text, "  mem ")
        self._value(text, snap.mem_clock_mhz, unit=" MHz")
        self._label(text, "  throttle ")
        self._reasons(text, snap.throttle_reasons)
        text.append("\n  ")
        self._label(text, "procs ")
        self._processes(text, snap)

    def _reasons(self, text: Text, reasons: tuple[str, ...] | None) -> None:
        if reasons is None:
            text.append(_NA, self._s("na"))
        elif not reasons:
            text.append("none")
        else:
            for i, reason in enumerate(reasons):
                if i:
                    text.append(", ")
                text.append(reason, self._s("na") if reason == IDLE_REASON else self._s("warning"))

    def _processes(self, text: Text, snap: GpuSnapshot) -> None:
        if snap.processes is None:
            text.append(_NA, self._s("na"))
            return
        if not snap.processes:
            text.append("none")
            return
        for i, proc in enumerate(snap.processes):
            if i:
                text.append(", ")
            text.append(f"{proc.pid} {proc.name or '?'} ")
            self._value(text, _gib(proc.used_mb), "{:.1f}", " GiB")

    def _brief(self, text: Text, snap: GpuSnapshot) -> None:
        self._title(text, snap, highlighted=False)
        self._vitals(text, snap)

    def _vitals(self, text: Text, snap: GpuSnapshot) -> None:
        """``  50%  4.0/140.4 GiB  40°C  150 W`` and any slowdown reasons, or ``GPU lost``."""
        if snap.lost:
            text.append("  GPU lost", self._s("error"))
            return
        text.append("  ")
        self._value(text, snap.util_gpu_pct, unit="%")
        text.append("  ")
        self._value(text, _gib(snap.mem_used_mb), "{:.1f}")
        text.append("/")
        self._value(text, _gib(snap.mem_total_mb), "{:.1f}", " GiB")
        text.append("  ")
        self._value(text, snap.temp_c, unit="°C")
        text.append("  ")
        self._value(text, snap.power_w, unit=" W")
        slow = snap.slowdown_reasons()
        if slow:
            text.append("  " + ", ".join(slow), self._s("warning"))


def _gib(mib: float | None) -> float | None:
    return None if mib is None else mib / 1024.0
