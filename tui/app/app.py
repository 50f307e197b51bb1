"""CompileLabApp: the Textual app over the benchmark engine (never imports torch).

Pipeline (messages in ``tui.app.messages``)::

    Run / Sweep / Re-run -> RunsQueued -> (queue, one worker at a time) -> RunStarted
        -> runner.run(record, on_event) in an async worker -> RunFinished
        -> summary + history append in one thread, in the order runs ended -> row refreshed

Live updates follow dolphie/toolong: ``on_event`` only marks the run's row and the chart
dirty; an 8 Hz timer rewrites the changed cells inside ``batch_update()``. The timer pauses
when nothing runs, and nothing is redrawn while another screen (details, a dialog) is on top.

Dependencies are injectable for tests: ``runner`` (a ``WorkerRunner``), ``telemetry`` (an
``NvmlSource``/``FakeSource``), ``history`` (a ``History``), ``config_path``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header
from textual.worker import Worker, WorkerState

from tui.app.components.chart import IterationChart
from tui.app.components.gpu_pane import GpuPane
from tui.app.components.picker import Picker
from tui.app.components.queue_view import QueueView
from tui.app.components.results_table import COLUMNS, ResultsTable
from tui.app.config import DEFAULT_THEME, load_config, save_config
from tui.app.format import TERMINAL_STATUSES, options_label, workload_label
from tui.engine.protocol import Event, Started
from tui.app.messages import HistoryLoaded, RunFinished, RunsExported, RunsQueued, RunStarted
from tui.engine.options import OptionsError, RunOptions
from tui.telemetry.model import normalize_uuid

if TYPE_CHECKING:  # imported where used: screens and the engine's records are not needed for the first frame
    from tui.engine.results import RunRecord

__all__ = ["CompileLabApp", "run_app", "THEME_ALIASES", "REFRESH_HZ"]

REFRESH_HZ = 8.0
"""How often the running row, the queue and the chart are redrawn (never per event)."""

THEME_ALIASES = {"textual-ansi": "ansi-dark", "ansi": "ansi-dark"}
"""Theme names accepted on the command line that Textual 8 spells differently."""


def resolve_theme(name: str | None, available: Iterable[str]) -> str:
    """The Textual theme for ``name`` (aliases applied); ValueError naming the choices."""
    if not name:
        return DEFAULT_THEME
    name = THEME_ALIASES.get(name, name)
    names = sorted(available)
    if name not in names:
        raise ValueError(f"theme {name!r} is unknown (available: {', '.join(names)}, textual-ansi)")
    return name


class CompileLabApp(App[int]):
    """The compile-lab terminal app.

    Args:
        runner: a ``WorkerRunner`` (default: a real one sharing ``telemetry``).
        telemetry: a telemetry source (default: ``NvmlSource()``, initialised lazily off the UI thread).
        history: a ``History`` (default: the user's history file).
        config_path: the config file (default: ``paths.config_file()``).
        theme: a Textual theme name (``--theme``); None: the one saved in the config.
        gpu_interval: seconds between GPU pane polls.
        load_history: read previous sessions' runs at start.
        install_signal_handlers: on SIGTERM/SIGHUP kill the workers, then exit (``run_app`` sets it).
    """

    CSS_PATH = str(Path(__file__).with_name("compile_lab.tcss"))  # absolute: subclasses live elsewhere
    TITLE = "compile-lab"
    SUB_TITLE = "eager vs torch.compile, honestly"

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    """Screens get ``-narrow`` below 120 columns (the compact layout in compile_lab.tcss)."""

    BINDINGS = [
        Binding("r", "run", "Run", id="run", tooltip="Run the picker's configuration"),
        Binding("ctrl+r", "run", "Run (in a text field)", id="run_ctrl", show=False),
        Binding("w", "sweep", "Sweep", id="sweep", tooltip="Queue modes x fullgraph x dynamic"),
        Binding("x", "cancel_current", "Cancel", id="cancel_current"),
        Binding("X", "cancel_all", "Cancel all", id="cancel_all", show=False),
        Binding("a", "rerun", "Re-run", id="rerun", tooltip="Queue the selected row's options again"),
        Binding("e", "export", "Export", id="export"),
        Binding("E", "export_to", "Export to...", id="export_to", show=False),
        Binding("h", "toggle_history", "History", id="toggle_history"),
        Binding("s", "sort", "Sort", id="sort"),
        Binding("S", "sort_reverse", "Reverse sort", id="sort_reverse", show=False),
        Binding("o", "focus_picker", "Options", id="focus_picker", show=False),
        Binding("b", "toggle_sidebar", "Sidebar", id="toggle_sidebar", show=False,
                tooltip="Hide or show the run options column"),
        Binding("z", "zoom", "Zoom", id="zoom", show=False, tooltip="Maximize the focused pane, or restore it"),
        Binding("escape", "focus_table", "To the table", id="focus_table", show=False),
        Binding("f1,question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
    ]

    def __init__(
        self,
        runner: Any = None,
        telemetry: Any = None,
        history: Any = None,
        *,
        config_path: Path | None = None,
        theme: str | None = None,
        gpu_interval: float = 1.0,
        load_history: bool = True,
        install_signal_handlers: bool = False,
    ) -> None:
        super().__init__()
        if telemetry is None:
            from tui.telemetry.nvml import NvmlSource

            telemetry = NvmlSource()
        self.telemetry = telemetry
        """The GPU telemetry source (shared by the GPU pane and the runner)."""
        if runner is None:
            from tui.engine.runner import WorkerRunner

            runner = WorkerRunner(telemetry=telemetry)
        self.runner = runner
        """The WorkerRunner that starts one worker per run."""
        if history is None:
            from tui.engine.history import History

            history = History()
        self.history = history
        """Where ended runs are appended and previous runs are read from."""
        self.config_path = config_path
        self.config, self._config_warning = load_config(config_path)
        self.gpu_interval = gpu_interval
        self.load_history_at_start = load_history
        self.install_signal_handlers = install_signal_handlers
        if theme is not None or self.config.theme:
            try:
                self.theme = resolve_theme(theme or self.config.theme, self.available_themes)
            except ValueError:
                if theme is not None:
                    raise
                self.theme = DEFAULT_THEME
        self.records: dict[str, RunRecord] = {}
        """Every record the table knows, session and history, by run id."""
        self.queue: deque[RunRecord] = deque()
        """Runs waiting for the worker, in order."""
        self.current: RunRecord | None = None
        """The run the worker is executing, or None."""
        self.show_history = self.config.show_history
        self._history_ids: list[str] = []
        self._finalized: set[str] = set()
        self._to_finalize: deque[RunRecord] = deque()
        self._finalize_lock = threading.Lock()
        self._finalizing = False
        self._dirty: set[str] = set()
        self._run_worker: Worker | None = None
        self._tick: Timer | None = None
        self._main_screen: Screen | None = None
        self._shutting_down = False
        self._chart_record: RunRecord | None = None
        self._table: ResultsTable | None = None
        self._picker: Picker | None = None
        self._chart_view: IterationChart | None = None
        self._gpu_view: GpuPane | None = None
        self._queue_view: QueueView | None = None

    # ----- layout ------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """GPU pane across the top; picker on the left, table, queue and chart on the right."""
        yield Header(show_clock=False, icon="≡")
        pane = GpuPane(self.telemetry, interval=self.gpu_interval, id="gpu")
        pane.border_title = "GPU"
        yield pane
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Picker(self.config.options, id="picker")
            with Vertical(id="right"):
                yield ResultsTable(id="results")
                yield QueueView(id="queue")
                yield IterationChart(id="chart")
        yield Footer()

    def on_mount(self) -> None:
        """Start the redraw timer (paused), the history load and the signal handlers."""
        self._main_screen = self.screen
        # Looked up once: the timer and every worker event use them, and later queries would
        # search whichever screen is on top.
        self._chart_view = self.query_one("#chart", IterationChart)
        self._gpu_view = self.query_one("#gpu", GpuPane)
        self._queue_view = self.query_one("#queue", QueueView)
        self._tick = self.set_interval(1 / REFRESH_HZ, self._refresh_live, pause=True, name="live-refresh")
        self._queue_view.show(None, [])
        if self._config_warning:
            self.notify(self._config_warning, title="Config ignored", severity="warning", markup=False, timeout=8)
        if self.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    loop.add_signal_handler(signum, self._on_terminate_signal, signum)
        self.query_one(ResultsTable).focus()

    # ----- widgets --------------------------------------------------------------------

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

    def on_ready(self) -> None:
        """After the first frame: read the history (a thread that must not delay that frame)."""
        if self.load_history_at_start:
            self._load_history()

    def _highlight_gpu(self, uuid: str | None) -> None:
        """Show the GPU a run uses (its uuid in any form ``normalize_uuid`` takes) first in the GPU pane."""
        if uuid and self._gpu_view is not None:
            self._gpu_view.active_uuid = normalize_uuid(uuid)

    # ----- running --------------------------------------------------------------------

    def action_run(self) -> None:
        """Validate the picker's options and queue one run (refused with the reason)."""
        options = self._validated_picker_options()
        if options is None:
            return
        self.enqueue([options], origin="run")

    @on(Picker.RunRequested)
    def _picker_run_requested(self, message: Picker.RunRequested) -> None:
        """Enter in a picker field runs, like ``r``."""
        self.action_run()

    def _validated_picker_options(self) -> RunOptions | None:
        picker = self.picker
        try:
            raw = picker.current_options()
            options = raw.validated()
        except OptionsError as exc:
            picker.mark_invalid(exc)
            self.notify(str(exc), title="Run refused", severity="error", markup=False)
            return None
        picker.clear_invalid()
        self.config.options = raw
        self._save_config()
        return options

    def enqueue(self, options_list: list[RunOptions], origin: str = "run") -> list[RunRecord]:
        """Queue one record per options (already validated); returns the records."""
        from tui.engine.results import RunRecord

        records = [RunRecord.new(options) for options in options_list]
        if not records:
            return records
        for record in records:
            self.records[record.run_id] = record
            self._finalized.add(record.run_id)  # nothing to compute yet
        self.queue.extend(records)
        with self.batch_update():
            self.table.add_records(records)
        self.post_message(RunsQueued(records, origin))
        self._start_next()
        self._mark_dirty(None)
        return records

    def inject_record(self, record: RunRecord, *, current: bool = False) -> None:
        """Show a record made elsewhere (tests, demos, snapshots): a row, the chart, its GPU.

        No worker is started. ``current=True`` displays it as the running run (the queue line,
        the GPU pane's highlight) until it ends or is replaced; an ended record is taken as
        final as it is (its summary is computed here, on the calling thread).
        """
        self.records[record.run_id] = record
        if record.finished:
            record.summary()
            self._finalized.add(record.run_id)
        else:
            self._finalized.discard(record.run_id)
        if current:
            self.current = record
        self.table.add_records([record])
        self._show_in_chart(record)
        if current:
            self._highlight_gpu(_device_gpu_uuid(record.options.device))
        self._mark_dirty(record.run_id)

    def _start_next(self) -> None:
        if self.current is not None or not self.queue or self._shutting_down:
            return
        record = self.queue.popleft()
        self.current = record
        self._finalized.discard(record.run_id)
        with contextlib.suppress(Exception):
            record.set_status("starting")
        self._run_worker = self._execute(record)
        self.post_message(RunStarted(record))

    @work(group="runs", exclusive=True, exit_on_error=False, description="benchmark run")
    async def _execute(self, record: RunRecord) -> None:
        """Drive one run (cancelling this worker kills the run's process group)."""
        await self.runner.run(record, on_event=self._on_run_event)

    def _on_run_event(self, event: Event) -> None:
        """Called for every worker event (after the runner applied it): only marks things dirty."""
        record = self.current
        if record is None:
            return
        self._dirty.add(record.run_id)
        if self._chart_record is record and self._chart_view is not None:
            self._chart_view.mark_dirty()
        if isinstance(event, Started):
            self._highlight_gpu(event.env.gpu_uuid)
        if self._tick is not None:
            self._tick.resume()

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        self._show_in_chart(message.record)
        self._mark_dirty(message.record.run_id)
        self._highlight_gpu(_device_gpu_uuid(message.record.options.device))

    @on(Worker.StateChanged)
    def _worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._run_worker:
            return
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        record = self.current
        self.current = None
        self._run_worker = None
        if record is None:
            return
        if not record.finished:
            if event.state == WorkerState.ERROR:
                error = event.worker.error
                record.fail("crash", f"the run task failed: {type(error).__name__}: {error}")
            else:
                record.fail("cancelled", "cancelled")
        if self._gpu_view is not None:
            self._gpu_view.active_uuid = None
        self.post_message(RunFinished(record))
        self._start_next()

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        record = message.record
        if record.status == "failed":
            self.notify(
                f"{workload_label(record.options)} {options_label(record.options)}: "
                f"{record.error_kind}: {record.error_message}",
                title="Run failed",
                severity="error",
                markup=False,
            )
        self._finalize(record)
        if self.current is None and not self.queue:
            self._mark_dirty(None)

    def _finalize(self, record: RunRecord) -> None:
        """Queue an ended run for its final summary and history append (in the order runs end)."""
        with self._finalize_lock:
            self._to_finalize.append(record)
            if self._finalizing:
                return  # the running finalizer takes it after the ones before it
            self._finalizing = True
        self._finalize_worker()

    @work(thread=True, group="finalize", exit_on_error=False, description="summaries and history")
    def _finalize_worker(self) -> None:
        """Off the UI thread, one run at a time: so history.jsonl keeps the order the runs ended in."""
        while True:
            with self._finalize_lock:
                if not self._to_finalize:
                    self._finalizing = False  # under the lock: a run ending now starts a new finalizer
                    return
                record = self._to_finalize.popleft()
            try:
                self._finalize_one(record)
            except BaseException:
                with self._finalize_lock:
                    self._finalizing = False  # the next run that ends picks up what is left
                raise

    def _finalize_one(self, record: RunRecord) -> None:
        """The final summary (bootstrap interval) and the history append of one run."""
        try:
            record.summary()
        except Exception:  # a view never dies on data; the row shows what it can
            pass
        problem = None
        try:
            self.history.append(record)
        except Exception as exc:  # HistoryError, SamplesUnavailable, OSError
            problem = f"run {record.run_id} was not saved to the history: {exc}"
        try:
            self.call_from_thread(self._finalized_record, record, problem)
        except RuntimeError:  # the app stopped; the runs queued after this one still reach the history
            pass

    def _finalized_record(self, record: RunRecord, problem: str | None) -> None:
        self._finalized.add(record.run_id)
        self._mark_dirty(record.run_id)
        if problem:
            self.notify(problem, title="History", severity="warning", markup=False)

    # ----- cancelling -----------------------------------------------------------------

    def action_cancel_current(self) -> None:
        """Cancel the running run (its worker's process group is killed)."""
        if self._run_worker is None:
            self.notify("No run is active.", severity="information")
            return
        self._run_worker.cancel()

    def action_cancel_all(self) -> None:
        """Cancel the running run and drop every queued one."""
        dropped = self._drop_queue()
        running = self._run_worker is not None
        if running:
            self._run_worker.cancel()  # type: ignore[union-attr]
        if not dropped and not running:
            self.notify("Nothing to cancel.", severity="information")
        elif dropped:
            self.notify(f"Cancelled {dropped} queued run(s).", markup=False)

    def _drop_queue(self) -> int:
        dropped = 0
        while self.queue:
            record = self.queue.popleft()
            record.fail("cancelled", "cancelled before it started")
            self._dirty.add(record.run_id)
            dropped += 1
        self._mark_dirty(None)
        return dropped

    # ----- sweep and re-run -----------------------------------------------------------------

    def action_sweep(self) -> None:
        """Open the sweep dialog for the picker's options."""
        try:
            base = self.picker.current_options()
            base.validated()
        except OptionsError as exc:
            self.picker.mark_invalid(exc)
            self.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        from tui.app.components.sweep_dialog import SweepScreen

        self.push_screen(SweepScreen(self.config.sweep, lambda choice: self._sweep_preview(base, choice)),
                         callback=lambda choice: self._sweep_chosen(base, choice))

    def sweep_options(self, base: RunOptions, choice: dict[str, list[Any]]) -> list[RunOptions]:
        """The validated options a sweep choice expands to (OptionsError for a bad combination)."""
        from tui.app.components.sweep_dialog import choice_to_expand_kwargs
        from tui.engine.sweep import expand

        expanded = expand(base, **choice_to_expand_kwargs(choice))
        return [options.validated() for options in expanded]

    def _sweep_preview(self, base: RunOptions, choice: dict[str, list[Any]]) -> tuple[int, str]:
        try:
            options = self.sweep_options(base, choice)
        except (OptionsError, ValueError) as exc:
            return 0, f"refused: {exc}"
        if not options:
            return 0, "no meaningful combination: check at least one value per axis"
        labels = ", ".join(o.label() for o in options[:4])
        more = f", +{len(options) - 4} more" if len(options) > 4 else ""
        return len(options), labels + more

    def _sweep_chosen(self, base: RunOptions, choice: dict[str, list[Any]] | None) -> None:
        if choice is None:
            return
        self.config.sweep = choice
        try:
            options = self.sweep_options(base, choice)
        except (OptionsError, ValueError) as exc:
            self.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        if not options:
            self.notify("The sweep has no meaningful combination.", title="Sweep", severity="warning")
            return
        self.config.options = base
        self._save_config()
        self.enqueue(options, origin="sweep")
        self.notify(f"Queued {len(options)} run(s).", title="Sweep", markup=False)

    def action_rerun(self) -> None:
        """Queue the selected row's options again."""
        run_id = self.table.selected_run_id
        record = self.records.get(run_id) if run_id else None
        if record is None:
            self.notify("Select a row first.", severity="information")
            return
        try:
            options = record.options.validated()
        except OptionsError as exc:
            self.notify(str(exc), title="Re-run refused", severity="error", markup=False)
            return
        self.enqueue([options], origin="rerun")

    # ----- the live redraw ----------------------------------------------------------------

    def _mark_dirty(self, run_id: str | None) -> None:
        if run_id is not None:
            self._dirty.add(run_id)
        if self._tick is not None:
            self._tick.resume()

    def _refresh_live(self) -> None:
        """Timer callback: rewrite dirty rows' changed cells, the queue and the chart."""
        if self._main_screen is not None and self.screen is not self._main_screen:
            return  # dolphie: no redraw under a dialog or the details; it catches up on return
        table = self._table
        if table is None or not table.accepts_updates or not self.is_running:
            return
        dirty, self._dirty = self._dirty, set()
        with self.batch_update():
            for run_id in dirty:
                record = self.records.get(run_id)
                if record is None or not table.has_run(run_id):
                    continue
                if record.finished and run_id not in self._finalized:
                    self._dirty.add(run_id)  # its summary is being computed off-thread
                    continue
                table.refresh_record(record)
            if self._queue_view is not None:
                self._queue_view.show(self.current, list(self.queue))
        if not self._dirty and self.current is None and self._tick is not None:
            self._tick.pause()

    def _show_in_chart(self, record: RunRecord | None) -> None:
        chart = self._chart_view
        if chart is None or record is self._chart_record:
            return
        if record is not None and record.finished and record.run_id not in self._finalized:
            return
        self._chart_record = record
        chart.set_run(record)

    @on(ResultsTable.RunHighlighted)
    def _run_highlighted(self, message: ResultsTable.RunHighlighted) -> None:
        record = self.records.get(message.run_id)
        if record is not None:
            self._show_in_chart(record)

    @on(ResultsTable.DetailsRequested)
    def _details_requested(self, message: ResultsTable.DetailsRequested) -> None:
        self.action_details(message.run_id)

    def action_details(self, run_id: str | None = None) -> None:
        """Open the details screen of a run (default: the selected row)."""
        run_id = run_id or self.table.selected_run_id
        record = self.records.get(run_id) if run_id else None
        if record is None:
            self.notify("Select a row first.", severity="information")
            return
        if record.finished and record.run_id not in self._finalized:
            self.notify("Its statistics are being computed; try again in a moment.", severity="information")
            return
        from tui.app.components.details import DetailsScreen

        self.push_screen(DetailsScreen(record))

    # ----- GPU pane -> picker devices -------------------------------------------------------

    def on_gpu_pane_updated(self, message: GpuPane.Updated) -> None:
        """The GPU pane polled: offer its GPUs in the device field."""
        self.picker.set_devices([(s.name or "GPU", s.uuid) for s in message.snapshots if s.uuid])

    # ----- export -----------------------------------------------------------------------------

    def action_export(self) -> None:
        """Export every ended run in the table to the default exports directory."""
        self._export(None)

    def action_export_to(self) -> None:
        """Ask for a directory (or a .csv path), then export there."""
        from tui import paths

        from tui.app.components.dialogs import ExportScreen

        self.push_screen(ExportScreen(str(paths.exports_dir())), callback=self._export_chosen)

    def _export_chosen(self, target: str | None) -> None:
        if target is None:
            return
        self._export(target or None)

    def exportable_records(self) -> tuple[list[RunRecord], int]:
        """(ended runs shown in the table in display order, how many unfinished rows were skipped)."""
        records, skipped = [], 0
        for run_id in self.table.run_ids:
            record = self.records.get(run_id)
            if record is None:
                continue
            if record.status in TERMINAL_STATUSES and run_id in self._finalized:
                records.append(record)
            else:
                skipped += 1
        return records, skipped

    def _export(self, target: str | None) -> None:
        records, skipped = self.exportable_records()
        if not records:
            self.notify("Nothing to export: no run has ended yet.", title="Export", severity="warning")
            return
        self._export_worker(records, target, skipped)

    @work(thread=True, group="export", exclusive=True, exit_on_error=False, description="export")
    def _export_worker(self, records: list[RunRecord], target: str | None, skipped: int) -> None:
        from tui.engine.export import ExportError, default_export_paths, write_csv, write_json, write_raw_csv

        try:
            destinations = export_paths(target, default_export_paths)
            write_csv(records, destinations["csv"])
            write_raw_csv(records, destinations["raw_csv"])
            write_json(records, destinations["json"])
        except (ExportError, OSError, ValueError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            self.call_from_thread(self.notify, message, title="Export failed", severity="error", markup=False)
            return
        paths_written = [destinations["csv"], destinations["raw_csv"], destinations["json"]]
        self.call_from_thread(self.post_message, RunsExported(paths_written, len(records)))
        note = f" ({skipped} unfinished row(s) skipped)" if skipped else ""
        self.call_from_thread(
            self.notify,
            f"{len(records)} run(s) -> {destinations['csv']} (+ -raw.csv, .json){note}",
            title="Exported",
            markup=False,
            timeout=10,
        )

    # ----- history ------------------------------------------------------------------------------

    @work(thread=True, group="history", exit_on_error=False, description="load history")
    def _load_history(self) -> None:
        """Read previous runs off the UI thread."""
        try:
            records, problems = self.history.load()
        except Exception as exc:  # History.load is tolerant; this is the last guard
            records, problems = [], [f"history could not be read: {exc}"]
        for record in records:
            with contextlib.suppress(Exception):
                record.summary()  # stored summaries: cheap, and cached before the UI reads them
        self.post_message(HistoryLoaded(records, problems))

    @on(HistoryLoaded)
    def _history_loaded(self, message: HistoryLoaded) -> None:
        fresh = [r for r in message.records if r.run_id not in self.records]
        for record in fresh:
            self.records[record.run_id] = record
            self._finalized.add(record.run_id)
        self._history_ids = [r.run_id for r in fresh] + self._history_ids
        if self.show_history and fresh:
            self._show_history_rows()
        if message.problems:
            first = message.problems[0]
            more = f" (+{len(message.problems) - 1} more)" if len(message.problems) > 1 else ""
            self.notify(first + more, title="History", severity="warning", markup=False, timeout=8)

    def _show_history_rows(self) -> None:
        table = self.table
        history = set(self._history_ids)
        session = [rid for rid in table.run_ids if rid not in history]
        with self.batch_update():
            # History first (oldest first), then this session's rows: rebuild in that order.
            session_records = [self.records[rid] for rid in session]
            table.remove_records(session)
            table.add_records([self.records[rid] for rid in self._history_ids], history=True)
            table.add_records(session_records)

    def action_toggle_history(self) -> None:
        """Show or hide previous sessions' runs."""
        self.show_history = not self.show_history
        self.config.show_history = self.show_history
        if self.show_history:
            self._show_history_rows()
            self.notify(f"Showing {len(self._history_ids)} previous run(s).")
        else:
            self.table.remove_records(self._history_ids)
            self.notify("Previous runs hidden.")

    # ----- sorting, focus, help -------------------------------------------------------------------

    def action_sort(self) -> None:
        """Sort by the next column."""
        column = self.table.cycle_sort()
        label = dict((key, label) for key, label, _ in COLUMNS).get(column or "", "queue order")
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
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        target = self.focused if self.focused is not None else self.table
        if self.picker in target.ancestors_with_self:
            target = self.picker
        screen.maximize(target)

    def help_keys(self) -> list[tuple[str, str]]:
        """(key, description) of every binding, for the help screen."""
        keys = []
        for binding in self.BINDINGS:
            if isinstance(binding, Binding):
                shown = ", ".join(self.get_key_display(Binding(k.strip(), "")) for k in binding.key.split(","))
                keys.append((shown, binding.description))
        keys += [
            ("enter", "Details of the selected row"),
            ("tab / shift+tab", "Next / previous field or pane"),
            ("ctrl+p", "Command palette (every action)"),
            ("ctrl+q", "Quit"),
        ]
        return keys

    def action_help(self) -> None:
        """Show the help screen."""
        from tui.app.components.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_keys()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Command palette entries: Textual's own plus every compile-lab action."""
        yield from super().get_system_commands(screen)
        yield SystemCommand("Run", "Run the picker's configuration (r)", self.action_run)
        yield SystemCommand("Sweep", "Queue modes x fullgraph x dynamic combinations (w)", self.action_sweep)
        yield SystemCommand("Cancel current run", "Stop the running benchmark (x)", self.action_cancel_current)
        yield SystemCommand("Cancel all", "Stop the running benchmark and clear the queue (X)", self.action_cancel_all)
        yield SystemCommand("Re-run selected", "Queue the selected row's options again (a)", self.action_rerun)
        yield SystemCommand("Details", "Every statistic of the selected row (enter)", self.action_details)
        yield SystemCommand("Export", "All ended rows to CSV, raw CSV and JSON (e)", self.action_export)
        yield SystemCommand("Export to...", "Export to a directory you type (E)", self.action_export_to)
        yield SystemCommand("Toggle history", "Show or hide previous sessions' runs (h)", self.action_toggle_history)
        yield SystemCommand("Sort by next column", "Cycle the sort column (s)", self.action_sort)
        yield SystemCommand("Reverse sort", "Flip the sort direction (S)", self.action_sort_reverse)
        yield SystemCommand("Toggle sidebar", "Hide or show the run options column (b)", self.action_toggle_sidebar)
        yield SystemCommand("Zoom", "Maximize the focused pane or restore it (z)", self.action_zoom)
        yield SystemCommand("Options", "Focus the run options picker (o)", self.action_focus_picker)
        yield SystemCommand("Help", "Keys and what compile-lab measures (F1, ?)", self.action_help)

    # ----- quitting -------------------------------------------------------------------------------

    @property
    def run_active(self) -> bool:
        """Whether a run executes or waits in the queue."""
        return self.current is not None or bool(self.queue)

    @property
    def settled(self) -> bool:
        """No run active or queued, every ended run finalized (summary, history) and shown."""
        return not self.run_active and not self._dirty and all(
            run_id in self._finalized for run_id, record in self.records.items() if record.finished
        )

    async def action_quit(self) -> None:
        """Quit; asks first when a run is active."""
        if self._shutting_down:
            return
        if self.run_active:
            from tui.app.components.dialogs import ConfirmScreen

            if isinstance(self.screen, ConfirmScreen):
                return
            waiting = len(self.queue)
            question = "A run is active" + (f" and {waiting} more wait" if waiting else "") + ". Stop it and quit?"
            self.push_screen(ConfirmScreen(question, yes="Quit", no="Stay"), callback=self._quit_answered)
            return
        await self.shutdown()

    async def _quit_answered(self, answer: bool | None) -> None:
        if answer:
            await self.shutdown()

    async def shutdown(self, return_code: int = 0) -> None:
        """Stop every run and worker process, save the config, exit."""
        if self._shutting_down:
            return
        self._shutting_down = True
        self._drop_queue()
        worker = self._run_worker
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(worker.wait()), timeout=3.0)
        await self._close_runner()
        self._save_config()
        self.exit(return_code=return_code)

    async def _close_runner(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runner.aclose(), timeout=3.0)
        with contextlib.suppress(Exception):
            self.runner.kill_all()

    def _on_terminate_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP (the SSH session is gone): kill the workers at once, then exit."""
        with contextlib.suppress(Exception):
            self.runner.kill_all()
        self._shutting_down = True
        self.exit(return_code=128 + int(signum))

    async def on_unmount(self) -> None:
        """Last guard: no worker process outlives the app."""
        if self._run_worker is not None:
            self._run_worker.cancel()
        await self._close_runner()
        if self.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(signum)

    # ----- config ---------------------------------------------------------------------------------

    def _save_config(self) -> None:
        self.config.theme = self.theme
        try:
            save_config(self.config, self.config_path)
        except OSError as exc:
            self.notify(f"config not saved: {exc}", severity="warning", markup=False)

    def watch_theme(self, theme: str) -> None:
        """Remember a theme chosen from the palette."""
        if hasattr(self, "config"):
            self.config.theme = theme


def _device_gpu_uuid(device: str) -> str | None:
    """The uuid a ``cuda:GPU-<uuid>`` device names; None for ``cpu``, ``cuda`` and ``cuda:N``."""
    return device.partition(":")[2] if device.startswith("cuda:GPU-") else None


def export_paths(target: str | None, defaults: Any) -> dict[str, Path]:
    """The three export files: defaults, in a typed directory, or next to a typed ``.csv`` path."""
    base = defaults()
    if not target:
        return base
    path = Path(target).expanduser()
    if path.suffix.lower() == ".csv":
        stem = path.with_suffix("")
        return {"csv": path, "raw_csv": stem.with_name(stem.name + "-raw.csv"), "json": stem.with_suffix(".json")}
    path.mkdir(parents=True, exist_ok=True)
    return {key: path / value.name for key, value in base.items()}


def run_app(no_mouse: bool = False, theme: str | None = None, **kwargs: Any) -> int:
    """Start the app in this terminal; returns the exit code (``--no-mouse``, ``--theme``).

    An unknown theme is a usage error: one line on stderr, exit code 2, no app.
    """
    import sys

    try:
        app = CompileLabApp(theme=theme, install_signal_handlers=True, **kwargs)
    except ValueError as exc:
        sys.stderr.write(f"compile-lab: error: {exc}\n")
        return 2
    result = app.run(mouse=not no_mouse)
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(result or 0)
