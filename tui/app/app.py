"""CompileLabApp: the Textual app over the benchmark engine (never imports torch).

The app is thin: it wires the engine and holds the model; :class:`~tui.app.main_screen.MainScreen`
(its first screen) owns the layout and keeps it up to date. Pipeline (messages in
``tui.app.messages``)::

    Run / Sweep / Re-run -> enqueue -> RunSession (queue; one worker at a time, or one per GPU) -> RunStarted
        -> runner.run(record, on_event) -> RunFinished
        -> final summary + history append off the loop, in the order runs ended -> row final

The app owns the run session and its runner, telemetry and history, the records by run id and
which of them are final, the key bindings, the config and theme, quitting and signals. State
flows down (the app calls the screen, whose reactives its panes watch); widgets' messages flow
up (``Picker.RunRequested`` to the app, ``ResultsTable.RunHighlighted`` to the screen).
What to queue or cancel (run, sweep, re-run) lives in :mod:`tui.app.queueing`, previous
sessions' runs in :mod:`tui.app.previous_runs`, export in :mod:`tui.app.exporting`, the
palette's entries and the help's keys in :mod:`tui.app.palette`.

Dependencies are injectable for tests: ``runner`` (a ``WorkerRunner``), ``telemetry`` (an
``NvmlSource``/``FakeSource``), ``history`` (a ``History``), ``config_path``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from tui.app.components.picker import Picker
from tui.app.baseline_actions import BaselineActions
from tui.app.column_choice import ColumnActions
from tui.app.components.results_table import ResultsTable
from tui.app.config import DEFAULT_THEME, THEME_ALIASES, load_config, resolve_theme, save_config
from tui.app.exporting import ExportActions, export_paths
from tui.present.format import options_label, workload_label
from tui.app.grouping import GroupRows
from tui.app.main_screen import NARROW_WIDTH, REFRESH_HZ, MainScreen
from tui.app.notices import NoisyNotices
from tui.app.messages import RunFinished, RunsQueued, RunStarted
from tui.app.palette import help_keys, lab_commands
from tui.app.previous_runs import PreviousRuns
from tui.app.queueing import QueueActions
from tui.app.trust import TrustActions
from tui.engine.options import RunOptions

if TYPE_CHECKING:  # imported where used: screens and the engine's records are not needed for the first frame
    from tui.engine.results import RunRecord

__all__ = ["CompileLabApp", "run_app", "resolve_theme", "export_paths", "THEME_ALIASES", "REFRESH_HZ"]


class CompileLabApp(QueueActions, TrustActions, PreviousRuns, ExportActions, GroupRows, ColumnActions, BaselineActions,
                    App[int]):
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

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
    """Screens get ``-narrow`` below 120 columns (the compact layout in compile_lab.tcss)."""

    SCREENS = {"main": MainScreen}
    MODES = {"main": "main"}
    DEFAULT_MODE = "main"
    """The main screen is the first on the stack (a mode: the app starts once it has composed)."""

    BINDINGS = [
        Binding("r", "run", "Run", id="run", tooltip="Run the picker's configuration"),
        Binding("ctrl+r", "run", "Run (in a text field)", id="run_ctrl", show=False),
        Binding("w", "sweep", "Sweep", id="sweep", tooltip="Queue modes x fullgraph x dynamic"),
        Binding("x", "cancel_current", "Cancel", id="cancel_current"),
        Binding("X", "cancel_all", "Cancel all", id="cancel_all", show=False),
        # the footer shows keys in this order and drops the last ones first at 80 columns
        Binding("f1,question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("a", "rerun", "Re-run", id="rerun", tooltip="Queue the selected row's options again"),
        Binding("e", "export", "Export", id="export"),
        Binding("E", "export_to", "Export to...", id="export_to", show=False),
        Binding("h", "toggle_history", "History", id="toggle_history"),
        Binding("s", "sort", "Sort", id="sort"),
        Binding("S", "sort_reverse", "Reverse sort", id="sort_reverse", show=False),
        Binding("c", "choose_columns", "Columns", id="choose_columns", show=False,
                tooltip="Show or hide the results table's columns"),
        Binding("m", "mark_baseline", "Baseline", id="mark_baseline", show=False,
                tooltip="Mark the selected row as the baseline (again: clear it)"),
        Binding("M", "mark_session_baseline", "Session as baseline", id="mark_session_baseline", show=False),
        Binding("o", "focus_picker", "Options", id="focus_picker", show=False),
        Binding("b", "toggle_sidebar", "Sidebar", id="toggle_sidebar", show=False,
                tooltip="Hide or show the run options column"),
        Binding("z", "zoom", "Zoom", id="zoom", show=False, tooltip="Maximize the focused pane, or restore it"),
        Binding("escape", "focus_table", "To the table", id="focus_table", show=False),
        Binding("t", "cycle_trace", "Trace next runs", id="cycle_trace", show=False,
                tooltip="Cycle: no traces, the Chrome trace of the profile pass, and TORCH_TRACE too"),
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
        cluster: Any = None,
    ) -> None:
        super().__init__()
        self.cluster = cluster
        """Where every run goes when the app was started with ``--cluster`` (a ClusterLink), else None."""
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
        from tui.app.gpu_pool import LaneRunners
        from tui.app.session_link import SessionEvents
        from tui.engine.session import RunSession

        self.lanes = LaneRunners(self)
        """The runner of each lane: ``runner`` for single runs, one per GPU of a pool (``cuda:all``)."""
        self.session = RunSession(self.lanes, self.history, SessionEvents(self), spare="runner")
        """Queues, runs, ends and saves the runs (the same policies as the command line)."""
        self.pooled: set[str] = set()
        """Run ids of the runs dealt to a pool of GPUs (their GPU is named where they are shown)."""
        self.records: dict[str, RunRecord] = {}
        """Every record the table knows, session and history, by run id."""
        self.history_ids: list[str] = []
        """Previous sessions' runs (oldest first): the table's history rows."""
        self.confirmed_code: set[tuple[str, str]] = set()
        """Settings that start a program (``python``, inductor options) the user confirmed in this session."""
        self.trace_next = "off"
        """What the next runs record besides their numbers (``t``; :data:`tui.app.queueing.TRACE_CHOICES`)."""
        self.data_usage_line = ""
        """The data dir's size, measured off the UI thread after the history loaded (shown in the help)."""
        self._injected: RunRecord | None = None
        self._finalized: set[str] = set()
        self._noisy = NoisyNotices(self.notify)
        self._shutting_down = False
        self._init_groups()

    # ----- the main screen and its widgets ----------------------------------------------

    @property
    def main_screen(self) -> MainScreen:
        """The layout (GPU pane, picker, table, queue, chart), whichever screen is on top."""
        return self.get_screen("main", MainScreen)

    @property
    def table(self) -> ResultsTable:
        """The results table."""
        return self.main_screen.table

    @property
    def picker(self) -> Picker:
        """The option picker."""
        return self.main_screen.picker

    def on_mount(self) -> None:
        """Warn about an ignored config; install the signal handlers."""
        if self._config_warning:
            self.notify(self._config_warning, title="Config ignored", severity="warning", markup=False, timeout=8)
        if self.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    loop.add_signal_handler(signum, self._on_terminate_signal, signum)

    def on_ready(self) -> None:
        """After the first frame: read the history (a thread that must not delay that frame)."""
        if self.load_history_at_start:
            self._load_history()

    # ----- the model ----------------------------------------------------------------------

    @property
    def current(self) -> RunRecord | None:
        """The run a worker executes now (or a record shown as running), or None."""
        for unit in self.session.running.values():
            return unit.record
        return self._injected

    @property
    def running(self) -> list[RunRecord]:
        """Every run a worker executes now (several with a pool of GPUs), or the record shown as running."""
        records = [unit.record for unit in self.session.running.values()]
        return records or ([self._injected] if self._injected is not None else [])

    @property
    def queue(self) -> list[RunRecord]:
        """Runs waiting for a worker, in order."""
        return [unit.record for unit in self.session.queue]

    def computing(self, record: RunRecord) -> bool:
        """Whether ``record`` ended and its final summary and history line are still being made."""
        return record.finished and record.run_id not in self._finalized

    @property
    def run_active(self) -> bool:
        """Whether a run executes or waits in the queue."""
        return self.session.active or self._injected is not None

    @property
    def settled(self) -> bool:
        """No run active or queued, every ended run finalized (summary, history) and shown."""
        if self.run_active or not self.session.settled or self.main_screen.redraw_pending or self.regrouping:
            return False
        return not any(self.computing(record) for record in self.records.values())

    # ----- running --------------------------------------------------------------------

    @on(Picker.RunRequested)
    def _picker_run_requested(self, message: Picker.RunRequested) -> None:
        """Enter in a picker field runs, like ``r``."""
        self.action_run()

    def enqueue(self, options_list: list[RunOptions], origin: str = "run", repeats: int | str = 1,
                pool: tuple[str, ...] = ()) -> list[RunRecord]:
        """Queue each options (already validated) in ``repeats`` processes (or ``"auto"``); returns the records.

        A configuration in several processes gets one row, its group's (:mod:`tui.app.grouping`).
        ``pool``: the GPUs the runs are dealt to, one run each at a time (:mod:`tui.app.gpu_pool`).
        """
        if not options_list or self._shutting_down:
            return []
        from tui.engine.session import is_local

        if pool and is_local(pool[0]):
            self.lanes.pinned(pool)  # queued by a key: pinned near the GPUs already (TrustActions._queue_now)
        records = self.session.submit(self.traced(options_list), repeats=repeats, pool=pool or None)
        self.pooled.update(r.run_id for r in records if pool)
        self._known(records)
        self.main_screen.add_rows([r for r in records if r.group_id in (None, r.run_id)])
        self.post_message(RunsQueued(records, origin))
        return records

    def _known(self, records: list[RunRecord]) -> None:
        for record in records:
            self.records[record.run_id] = record
            self._finalized.add(record.run_id)  # nothing to compute yet
        self._add_members(records)

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
            self._injected = record
        self.main_screen.show_record(record, running=current)

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        self.main_screen.run_started(message.record)

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        record = message.record
        if self._injected is record:
            self._injected = None
        self.main_screen.run_ended(record)
        if record.status == "failed":
            self.notify(
                f"{workload_label(record.options)} {options_label(record.options)}: "
                f"{record.error_kind}: {record.error_message}",
                title="Run failed",
                severity="error",
                markup=False,
            )

    def _run_saved(self, record: RunRecord, problem: str | None) -> None:
        """The session computed the final summary and appended the run to the history."""
        self._finalized.add(record.run_id)
        self.main_screen.mark_dirty(record.run_id)
        self.main_screen.run_saved(record)
        if record.group_id is not None:
            self._regroup(record.group_id)
        self._baseline_row_saved(record)
        if problem:
            self.notify(problem, title="History", severity="warning", markup=False)
        summary = record.summary()  # computed by the session already: cached
        if summary.verdict == "noisy" and record.group_id is None:
            self._noisy.saved(record, summary.noise_reasons, queue_ended=not self.queue and self.current in (None, record))

    # ----- the main screen's actions (bound here, so the footer lists them in this order) ---------

    def action_details(self, run_id: str | None = None) -> None:
        """Open the details screen of a run (default: the selected row)."""
        self.main_screen.action_details(run_id)

    def action_sort(self) -> None:
        """Sort by the next column."""
        self.main_screen.action_sort()

    def action_sort_reverse(self) -> None:
        """Reverse the sort direction."""
        self.main_screen.action_sort_reverse()

    def action_focus_table(self) -> None:
        """Move the focus to the results table (leaves a text field)."""
        self.main_screen.action_focus_table()

    def action_focus_picker(self) -> None:
        """Move the focus to the first picker field (showing the sidebar if it was hidden)."""
        self.main_screen.action_focus_picker()

    def action_toggle_sidebar(self) -> None:
        """Hide or show the picker column: a full-width table on small terminals."""
        self.main_screen.action_toggle_sidebar()

    def action_zoom(self) -> None:
        """Maximize the focused pane, or restore the layout (of the screen on top)."""
        screen = self.screen
        if screen is self.main_screen:
            self.main_screen.action_zoom()
        elif screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused)

    # ----- help and the command palette -----------------------------------------------------------

    def action_help(self) -> None:
        """Show the help screen."""
        from tui.app.components.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(help_keys(self), data_line=self.data_usage_line))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Command palette entries: Textual's own plus every compile-lab action."""
        yield from super().get_system_commands(screen)
        yield from lab_commands(self)

    # ----- quitting -------------------------------------------------------------------------------

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
        await self._close_runner()
        self._save_config()
        self.exit(return_code=return_code)

    async def _close_runner(self) -> None:
        """Cancel what runs (ended runs are saved), drop the queue, close the runner."""
        with contextlib.suppress(Exception):
            await self.session.aclose(timeout=3.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runner.aclose(), timeout=3.0)
        with contextlib.suppress(Exception):
            self.runner.kill_all()

    def _on_terminate_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP (the SSH session is gone): kill the workers at once, then exit."""
        self.session.kill_all()
        with contextlib.suppress(Exception):
            self.runner.kill_all()
        self._shutting_down = True
        self.exit(return_code=128 + int(signum))

    async def on_unmount(self) -> None:
        """Last guard: no worker process outlives the app."""
        self.session.kill_all()
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
            aside = save_config(self.config, self.config_path)
        except OSError as exc:
            self.notify(f"config not saved: {exc}", severity="warning", markup=False)
            return
        if aside is not None:
            self.notify(f"The config file no longer parsed (changed by hand?): kept as {aside}, and this session's "
                        "settings saved anew.", title="Config", severity="warning", markup=False)

    def watch_theme(self, theme: str) -> None:
        """Remember a theme chosen from the palette."""
        if hasattr(self, "config"):
            self.config.theme = theme


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
