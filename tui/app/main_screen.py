"""MainScreen: the layout of compile-lab and everything that keeps it up to date.

The app's controller (:class:`~tui.app.controller.LabController`, ``app.lab``) owns the model: the
run session, the records by run id and which of them are final. This screen reads it (data down)
and owns the view of it:

* the layout: the GPU pane across the top; the picker on the left; the results table, the queue
  and the iteration chart on the right (the app's first screen: Header and Footer are here too);
* the live redraw: worker events only mark a row dirty (:meth:`MainScreen.run_event`); an
  8 Hz timer rewrites the changed cells inside ``batch_update()``, pauses when nothing runs, and
  draws nothing while another screen (details, a dialog) is on top: it catches up on return;
* what flows down as reactive state: :attr:`MainScreen.chart_run` (the run the chart draws)
  and :attr:`MainScreen.show_history` (whether previous sessions' rows are in the table);
* the table's and the GPU pane's messages (a row highlighted or opened, GPUs polled) and the
  view actions: sort, zoom, the sidebar, focus, details;
* following the run: the table's cursor goes to the newest stored run as the history loads, and to
  a run's row as it starts and ends, until the user moves it (:meth:`MainScreen.follow_runs` follows
  again after a key press queued runs);
  a previous session's run's timing blocks are read for the chart off the UI thread.
"""

from __future__ import annotations

import logging
import contextlib
from typing import TYPE_CHECKING
from collections.abc import Iterable, Sequence

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Header

from tui.app.components.key_footer import KeyFooter
from tui.app.components.chart import IterationChart
from tui.app.components.gpu_pane import GpuPane
from tui.app.components.notice_line import NoticeLine
from tui.app.components.picker import Picker
from tui.app.components.queue_view import QueueView
from tui.app.components.results_table import Cell, ResultsTable
from tui.app.controller import LabController
from tui.app.gpu_pool import run_gpu, run_labels
from tui.app.layout import NARROW_WIDTH, breakpoint_classes
from tui.present.format import options_label, phase_seconds, workload_label
from tui.engine.protocol import Event, Started
from tui.telemetry.model import normalize_uuid

if TYPE_CHECKING:  # records are not needed for the first frame
    from tui.engine.store.results import RunRecord

__all__ = ["MainScreen", "REFRESH_HZ", "NARROW_WIDTH"]

logger = logging.getLogger(__name__)

REFRESH_HZ = 8.0
"""How often the running row, the queue and the chart are redrawn (never per event)."""


class MainScreen(Screen):
    """The results table with its panes; the first screen of the app (its only mode)."""

    ALLOW_IN_MAXIMIZED_VIEW = "Footer, NoticeLine"
    """A zoomed pane (``z``) leaves the notice line on screen: at narrow sizes it is where every notice
    goes, so without it a refusal, an export's error or the trace mode ``t`` set would be unseen."""

    chart_run: var[RunRecord | None] = var(None, init=False)
    """The run the iteration chart draws (a row highlighted, a run started, a record injected)."""

    show_history: var[bool] = var(True, init=False)
    """Whether previous sessions' runs are rows of the table (history first, oldest first)."""

    AUTO_FOCUS = "#results"
    """The results table has the focus from the start: focused as the screen composes, not after Textual's
    default (the first focusable widget, a picker field) moved it there, so the start restyles the picker's
    ``:focus-within`` subtree and recomposes the footer's keys for no focus change that is ever seen."""

    def __init__(self, *, id: str | None = "main-screen") -> None:
        super().__init__(id=id)
        self._dirty: set[str] = set()
        self._seconds_shown: dict[str, int] = {}
        """Each running run's second of its phase as its row last showed it (:meth:`_ticking_rows`)."""
        self._no_samples: dict[str, str] = {}
        """Previous runs whose stored timing blocks could not be read, and what the chart says of each."""
        self._chart_loaded: RunRecord | None = None
        """The previous run whose stored blocks the chart loaded: released when it moves on."""
        self._tick: Timer | None = None
        self._table: ResultsTable | None = None
        self._picker: Picker | None = None
        self._chart: IterationChart | None = None
        self._gpu: GpuPane | None = None
        self._queue: QueueView | None = None
        self._told_sidebar = False

    @property
    def lab(self) -> LabController:
        """The app's controller, the model this screen shows: ``records``, ``current``, ``queue``, ``history_ids``."""
        lab = getattr(self.app, "lab", None)
        if not isinstance(lab, LabController):
            raise LookupError("MainScreen runs in an app with a LabController as its lab")
        return lab

    # ----- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """GPU pane across the top; picker on the left, table, queue and chart on the right; the notice line
        (narrow sizes) above the footer. The screen takes its breakpoint class first, so that its widgets are
        styled once for it."""
        self.update_classes(breakpoint_classes(*self.app.size), update=False)
        lab = self.lab
        yield Header(show_clock=False, icon="≡")
        pane = GpuPane(lab.telemetry, interval=getattr(self.app, "gpu_interval", 1.0), id="gpu")
        pane.border_title = "GPU"
        yield pane
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Picker(lab.config.options, repeat=lab.config.repeat, id="picker")
            with Vertical(id="right"):
                yield ResultsTable(id="results", columns=lab.config.columns)
                yield QueueView(id="queue")
                yield IterationChart(id="chart")
        yield NoticeLine(id="notice")
        yield KeyFooter()

    def on_resize(self) -> None:
        """Below 120 columns the footer drops its key padding, so Help and Quit keep their place."""
        self.query_one(KeyFooter).compact = self.size.width < NARROW_WIDTH

    def on_mount(self) -> None:
        """Start the redraw timer (paused), show the empty queue (the table has the focus: ``AUTO_FOCUS``)."""
        self.set_reactive(MainScreen.show_history, self.lab.config.show_history)
        self.table.show_history(self.show_history)
        self.table.update_hint()
        # Looked up once: the timer and every worker event use them.
        self._chart = self.query_one("#chart", IterationChart)
        self._gpu = self.query_one("#gpu", GpuPane)
        self._queue = self.query_one("#queue", QueueView)
        self._queue.names = self.lab.workload_names = self.table.names.listing  # the notices name files as rows do
        self._tick = self.set_interval(1 / REFRESH_HZ, self._refresh_live, pause=True, name="live-refresh")
        self._queue.show(None, [])

    @property
    def table(self) -> ResultsTable:
        """The results table."""
        if self._table is None:
            self._table = self.query_one("#results", ResultsTable)
        return self._table

    @property
    def picker(self) -> Picker:
        """The option picker."""
        if self._picker is None:
            self._picker = self.query_one("#picker", Picker)
        return self._picker

    # ----- what the app tells the view ------------------------------------------------

    def add_rows(self, records: Iterable[RunRecord]) -> None:
        """New rows at the end of the table (queued runs, an injected record)."""
        records = list(records)
        with self.app.batch_update():
            self.table.add_records(records)
            self.table.update_hint()
        # A group's row shows its processes from the first redraw on.
        self._dirty.update(r.run_id for r in records if r.group_id is not None)
        self.mark_dirty(None)

    def show_record(self, record: RunRecord, *, running: bool = False) -> None:
        """A record made elsewhere: its row, the chart, and with ``running`` its GPU first."""
        self.table.add_records([record])
        self.table.update_hint()
        self.show_in_chart(record)
        if running:
            self.table.follow(self.lab.row_of(record))
            self.highlight_gpu(_device_gpu_uuid(record.options.device))
        self.mark_dirty(record.run_id)

    def run_started(self, record: RunRecord) -> None:
        """A run left the queue: the chart follows it, its row is kept in view and its GPU comes first."""
        self.table.follow(self.lab.row_of(record))
        self.show_in_chart(record)
        self.mark_dirty(record.run_id)
        self.highlight_gpu(_device_gpu_uuid(record.options.device))
        self.mark_busy_gpus()

    def follow_runs(self, records: Sequence[RunRecord]) -> None:
        """The user queued ``records`` by a key press: the table follows the runs again.

        Its cursor goes to the running run's row, or to the first new row while nothing runs
        (that run starts next).
        """
        table = self.table
        table.resume_following()
        target = self.lab.current or (records[0] if records else None)
        if target is not None:
            table.follow(self.lab.row_of(target))
        self.make_room_for_results()

    def make_room_for_results(self) -> None:
        """Below 120 columns the picker leaves the table about 40 columns, too few for the fields that tell
        rows apart: once runs are queued (by a key, or by a search started from the app) the sidebar steps
        aside (``b`` or ``o`` brings it back)."""
        left = self.query_one("#left")
        if self.size.width >= NARROW_WIDTH or not left.display:
            return
        left.display = False
        self.table.focus()
        if not self._told_sidebar:
            self._told_sidebar = True
            self.app.notify("Run options hidden to make room for the results: b brings them back.", timeout=5)

    def run_event(self, record: RunRecord, event: Event) -> None:
        """Called for every worker event (after the runner applied it): only marks things dirty."""
        self._dirty.add(record.run_id)
        if self.chart_run is record and self._chart is not None:
            self._chart.mark_dirty()
        if isinstance(event, Started):
            self.highlight_gpu(event.env.gpu_uuid)
            self.mark_busy_gpus()
        if self._tick is not None:
            self._tick.resume()

    def run_ended(self, record: RunRecord) -> None:
        """A run ended (or was saved): redraw its row; no GPU is highlighted once nothing runs (another
        running run's GPU is, when several ran at once)."""
        if self._gpu is not None:
            current = self.lab.current
            self._gpu.active_uuid = None if current is None else run_gpu(current, self._gpu.snapshots)
        self.mark_busy_gpus()
        self.table.follow(self.lab.row_of(record))  # the just-finished row stays in view
        self.mark_dirty(record.run_id)

    def run_saved(self, record: RunRecord) -> None:
        """A run's final summary is made: the chart shows it if its row is selected (a run that ended
        before its start was handled was not shown: its summary was being computed)."""
        if self.table.selected_run_id == self.lab.row_of(record):
            self.show_in_chart(record)
            if self._chart is not None:
                self._chart.mark_dirty()

    def mark_busy_gpus(self) -> None:
        """Tell the GPU pane which GPU each running run has, and what to call the run there."""
        if self._gpu is None:
            return
        running = self.lab.running
        labels = run_labels(running)
        busy = {}
        for record in running:
            uuid = run_gpu(record, self._gpu.snapshots)
            if uuid is not None:
                busy[uuid] = labels[record.run_id]
        self._gpu.busy = busy

    def highlight_gpu(self, uuid: str | None) -> None:
        """Show the GPU a run uses (its uuid in any form ``normalize_uuid`` takes) first in the GPU pane."""
        if uuid and self._gpu is not None:
            self._gpu.active_uuid = normalize_uuid(uuid)

    # ----- the live redraw ------------------------------------------------------------

    @property
    def redraw_pending(self) -> bool:
        """Whether a row still waits for the timer to redraw it."""
        return bool(self._dirty)

    def mark_dirty(self, run_id: str | None) -> None:
        """Redraw ``run_id``'s row (and the queue) at the next tick; None: only the queue."""
        if run_id is not None:
            self._dirty.add(run_id)
        if self._tick is not None:
            self._tick.resume()

    def _refresh_live(self) -> None:
        """Timer callback: rewrite dirty rows' changed cells, the queue and the chart."""
        if self.app.screen is not self:
            return  # dolphie: no redraw under a dialog or the details; it catches up on return
        table = self._table
        lab = self.lab
        if table is None or not table.accepts_updates or not self.app.is_running:
            return
        dirty, self._dirty = self._dirty, set()
        dirty |= self._ticking_rows()
        with self.app.batch_update():
            for run_id in dirty:
                record = lab.records.get(run_id)
                if record is None:
                    continue
                row_id = lab.row_of(record)  # a process of a group shows in its group's row
                if not table.has_run(row_id):
                    continue
                if lab.computing(record):
                    self._dirty.add(run_id)  # its summary is being computed off-thread
                    continue
                members, shown = lab.group_members(row_id), lab.row_record(row_id)
                if shown is not None:
                    table.refresh_record(shown, members=members if len(members) > 1 else None)
            if self._queue is not None:
                self._queue.show(lab.running, lab.queue, pooled=lab.pooled)
        if not self._dirty and lab.current is None and self._tick is not None:
            self._tick.pause()

    def _ticking_rows(self) -> set[str]:
        """The running runs whose status counts the seconds of their phase (``compiling 12 s``) and whose shown
        second changed since the last tick: no event comes while a run compiles, so the tick redraws them."""
        shown, self._seconds_shown = self._seconds_shown, {}
        for record in self.lab.running:
            second = phase_seconds(record)
            if second is not None:
                self._seconds_shown[record.run_id] = second
        return {run_id for run_id, second in self._seconds_shown.items() if shown.get(run_id) != second}

    # ----- the chart ------------------------------------------------------------------

    def show_in_chart(self, record: RunRecord | None) -> None:
        """Draw ``record`` in the chart, unless its final summary is still being computed.

        A previous session's run has its timing blocks on disk: they are read off the UI thread
        and drawn when read (the chart says it is loading them meanwhile).
        """
        if self._chart is None or (record is not None and self.lab.computing(record)):
            return
        if self._chart_loaded is not None and self._chart_loaded is not record:
            self._chart_loaded.release_samples()  # one stored run's blocks in memory at a time
            self._chart_loaded = None
        if record is not None and not record.samples_loaded and record.run_id not in self._no_samples:
            self._chart_loaded = record
            self._load_samples(record)
        self.chart_run = record

    @work(thread=True, group="chart-samples", exclusive=True)
    def _load_samples(self, record: RunRecord) -> None:
        from textual.worker import get_current_worker

        if get_current_worker().is_cancelled:
            return  # the cursor moved on (an arrow key held down) before this one began
        from tui.engine.store.results import SamplesPruned

        unreadable = None
        try:
            record.ensure_samples()
        except SamplesPruned:  # the user's own prune: said as such, as the details say it
            unreadable = "timing blocks pruned (compile-lab prune)"
        except Exception as exc:  # a samples file the chart cannot read must not end the app: the chart says so
            logger.warning("timing blocks of run %s unreadable", record.run_id, exc_info=exc)
            unreadable = "timing blocks could not be read"
        with contextlib.suppress(RuntimeError):  # the app closed while the file was read
            self.app.call_from_thread(self._samples_read, record, unreadable)

    def _samples_read(self, record: RunRecord, unreadable: str | None) -> None:
        if unreadable is not None:
            self._no_samples[record.run_id] = unreadable
        if self.chart_run is record:
            self.watch_chart_run(record)

    def watch_chart_run(self, record: RunRecord | None) -> None:
        if self._chart is not None:
            names = self.table.names.listing
            label = (f"{workload_label(record.options, names)} {options_label(record.options)}"
                     if record is not None else None)
            note = None
            if record is not None and not record.samples_loaded:
                note = self._no_samples.get(record.run_id, "loading timing blocks…")
            self._chart.set_run(record, label, note)

    @on(ResultsTable.RunHighlighted)
    def _run_highlighted(self, message: ResultsTable.RunHighlighted) -> None:
        record = self.lab.records.get(message.run_id)
        if record is not None:
            self.show_in_chart(record)

    # ----- history rows ---------------------------------------------------------------

    def watch_show_history(self, show: bool) -> None:
        """The table shows or hides previous runs' rows. Shown again, it follows the newest stored run unless the
        user moved the cursor (``h`` is not a cursor move; a load that went on meanwhile added rows); with no row
        left to show, the chart shows none."""
        with self.app.batch_update():
            self.table.show_history(show)  # one step, whatever the number of rows
            self.table.update_hint()
            if show and self.lab.history_ids:
                self.follow_stored(self.lab.history_ids[-1])
            if not self.table.row_count:
                self.show_in_chart(None)

    def add_history_rows(self, rows: Sequence[tuple[str, dict[str, Cell]]], follow: bool = True) -> None:
        """Previous runs' rows (a chunk from the history loader; cells made off the UI thread); ``follow``: the
        table follows the chunk's last (:meth:`follow_stored`)."""
        with self.app.batch_update():
            self.table.add_history(rows)
            self.table.update_hint()
            if rows and follow:
                self.follow_stored(rows[-1][0])

    def follow_stored(self, run_id: str) -> None:
        """The table follows ``run_id``, the newest stored run so far (the history is oldest first), until this
        session has runs of its own or the user moves the cursor: a user coming back has their latest runs in view
        and the newest in the chart, not the oldest at the top of the history."""
        if len(self.lab.records) == len(self.lab.history_ids):
            self.table.follow(run_id)

    # ----- details --------------------------------------------------------------------

    @on(ResultsTable.OptionsRequested)
    def _options_requested(self) -> None:
        self.action_focus_picker()

    @on(ResultsTable.DetailsRequested)
    def _details_requested(self, message: ResultsTable.DetailsRequested) -> None:
        self.action_details(message.run_id)

    def action_details(self, run_id: str | None = None) -> None:
        """Open the details screen of a run (default: the selected row)."""
        run_id = run_id or self.table.selected_run_id
        record = self.lab.row_record(run_id) if run_id else None
        if record is None:
            self.notify("Select a row first.", severity="information")
            return
        if self.lab.computing(record):
            self.notify("Its statistics are being computed; try again in a moment.", severity="information")
            return
        from tui.app.components.details import DetailsScreen

        self.app.push_screen(DetailsScreen(record))

    # ----- GPU pane -> picker devices -------------------------------------------------

    def on_gpu_pane_updated(self, message: GpuPane.Updated) -> None:
        """The GPU pane polled: offer its GPUs in the device field (``cuda:all`` with two or more), and mark
        the running runs' GPUs (a ``cuda:N`` is known once the GPUs are)."""
        self.picker.set_devices([(s.name or "GPU", s.uuid) for s in message.snapshots if s.uuid])
        if self.lab.running:
            self.mark_busy_gpus()

    # ----- sorting, layout, focus -----------------------------------------------------

    def action_sort(self) -> None:
        """Sort by the next column."""
        column = self.table.cycle_sort()
        label = self.table.header_of(column)
        self.notify(f"Sorted by {label}.", timeout=2, markup=False)

    def action_sort_reverse(self) -> None:
        """Reverse the sort direction."""
        self.table.sort_reverse = not self.table.sort_reverse

    def action_focus_table(self) -> None:
        """Move the focus to the results table (leaves a text field)."""
        self.table.focus()

    def action_focus_picker(self) -> None:
        """Move the focus to the first picker field (showing the sidebar if it was hidden)."""
        self.query_one("#left").display = True
        self.picker.query_one("#workload").focus()

    def action_toggle_sidebar(self) -> None:
        """Hide or show the picker column: a full-width table on small terminals."""
        left = self.query_one("#left")
        left.display = not left.display
        if not left.display:
            self.table.focus()

    def action_zoom(self) -> None:
        """Maximize the focused pane (the table by default), or restore the layout."""
        if self.maximized is not None:
            self.minimize()
            return
        target = self.focused if self.focused is not None else self.table
        if self.picker in target.ancestors_with_self:
            target = self.picker
        self.maximize(target)


def _device_gpu_uuid(device: str) -> str | None:
    """The uuid a ``cuda:GPU-<uuid>`` device names; None for ``cpu``, ``cuda`` and ``cuda:N``."""
    return device.partition(":")[2] if device.startswith("cuda:GPU-") else None
