"""The queue pane: the running run (every one, several at once with a pool of GPUs), then the runs waiting
for a worker, in order. A pooled run's line names the GPU it got."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tui.present.format import active_status_text, options_label, phase_seconds, workload_label
from tui.engine.store.results import RunRecord

__all__ = ["QueueView"]


class QueueView(Static):
    """Shows what runs now and what waits; empty queue -> one dim line."""

    DEFAULT_CSS = """
    QueueView {
        height: auto;
        max-height: 7;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    max_lines: reactive[int] = reactive(5)
    """How many waiting runs are listed before ``+N more``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        # Not ``_running``: Textual's MessagePump keeps whether the widget's message loop runs
        # there; a None there stopped the widget from ever going idle, so a refresh to "idle"
        # never reached the screen (issue 11, item 9; tests/app/test_app_repaint.py).
        self._active: list[RunRecord] = []
        self._waiting: list[RunRecord] = []
        self._pooled: Collection[str] = ()
        self._last: tuple | None = None
        self.names: Mapping[str, str] | None = None
        """A user file's name in the results table (the main screen sets it), so a line names it as its row does."""

    def show(self, running: RunRecord | Sequence[RunRecord] | None, waiting: Sequence[RunRecord],
             pooled: Collection[str] = ()) -> None:
        """Display ``running`` (a record, several, or None) and the ``waiting`` records (only repaints on
        change); a running run whose id is in ``pooled`` was dealt a GPU of a pool: its line names it."""
        self._active = [] if running is None else [running] if isinstance(running, RunRecord) else list(running)
        self._waiting = list(waiting)
        self._pooled = pooled
        signature = (
            tuple((r.run_id, r.status, round(r.progress() * 100), r.options.device, phase_seconds(r))
                  for r in self._active),
            tuple(r.run_id for r in self._waiting),
            self.max_lines,
        )
        if signature == self._last:
            return
        self._last = signature
        self.border_title = f"Queue ({len(self._waiting)} waiting)"
        self.update(self._render_queue())

    def _render_queue(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self._active and not self._waiting:
            text.append("idle: press r to run, w to sweep", style="dim")
            return text
        for number, running in enumerate(self._active):
            status = running.status
            text.append("\n▶ " if number else "▶ ", style="bold yellow")
            if running.run_id in self._pooled:
                text.append(f"{running.options.device} ", style="bold")
            text.append(f"{workload_label(running.options, self.names)} {options_label(running.options)}")
            text.append(f"  {active_status_text(status, running.progress(), running.part_elapsed_s(), aligned=False)}",
                        style="yellow")
        for index, record in enumerate(self._waiting[: self.max_lines], start=1):
            if text.plain:
                text.append("\n")
            text.append(f"{index}. ", style="dim")
            text.append(f"{workload_label(record.options, self.names)} {options_label(record.options)}")
        extra = len(self._waiting) - self.max_lines
        if extra > 0:
            text.append(f"\n   +{extra} more", style="dim")
        return text
