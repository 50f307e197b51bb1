"""CompileLabApp: the Textual app over the benchmark engine (never imports torch).

The app is thin: the session's state lives in a Textual-free controller
(:class:`~tui.app.controller.LabController`, ``app.lab``), and the app composes, binds keys and
delegates. Pipeline (messages in ``tui.app.messages``)::

    Run / Sweep / Re-run -> lab.enqueue -> RunSession (queue; one worker at a time, or one per GPU) -> RunStarted
        -> runner.run(record, on_event) -> RunFinished
        -> final summary + history append off the loop, in the order runs ended -> row final

Data flows down: :class:`~tui.app.main_screen.MainScreen` (the first screen) reads the controller
and its panes watch the screen's reactives. Requests flow up: widgets' messages
(``Picker.RunRequested``, ``ResultsTable.RunHighlighted``) and key bindings reach the app, whose
actions delegate to its parts, each an object of one job that holds the app and the controller:
:class:`~tui.app.queueing.QueueActions` (run, sweep, re-run, cancel), :class:`~tui.app.trust.TrustActions`
(asking before options from a file run), :class:`~tui.app.exporting.ExportActions`,
:class:`~tui.app.baseline_actions.BaselineActions`, :class:`~tui.app.previous_runs.PreviousRuns` and
:class:`~tui.app.column_choice.ColumnActions`; the palette's entries and the help's keys are in
:mod:`tui.app.palette`. The controller tells the app what happened through :class:`~tui.app.lab_view.LabView`
(:class:`~tui.app.view_link.AppView`), which posts the app's messages. No module of ``tui.app`` imports this one.

Dependencies are injectable for tests: ``runner`` (a ``WorkerRunner``), ``telemetry`` (an
``NvmlSource``/``FakeSource``), ``history`` (a ``History``), ``config_path``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.notifications import Notify
from textual.screen import Screen

from tui.app.baseline_actions import BaselineActions
from tui.app.column_choice import ColumnActions
from tui.app.components.leaderboard import Leaderboard
from tui.app.components.notice_line import hide_toasts, route
from tui.app.components.picker import Picker
from tui.app.components.results_table import ResultsTable
from tui.app.config import DEFAULT_THEME, THEME_ALIASES, resolve_theme
from tui.app.controller import LabController
from tui.app.delegation import FromLab, FromPart
from tui.app.export_target import export_paths
from tui.app.exporting import ExportActions
from tui.app.keys import APP_KEYS
from tui.app.layout import HORIZONTAL_BREAKPOINTS, VERTICAL_BREAKPOINTS
from tui.app.main_screen import REFRESH_HZ, MainScreen
from tui.app.messages import HistoryLoaded, RunFinished, RunStarted
from tui.app.palette import help_keys, lab_commands
from tui.app.previous_runs import PreviousRuns
from tui.app.queueing import QueueActions
from tui.app.trust import TrustActions
from tui.app.tuning import TuneActions
from tui.app.view_link import AppView
from tui.present.format import options_label, workload_label
from tui.engine.status import RunStatus

if TYPE_CHECKING:  # imported where used: the engine's records are not needed for the first frame
    from tui.app.components.help import HelpScreen
    from tui.engine.store.results import RunRecord

__all__ = ["CompileLabApp", "run_app", "resolve_theme", "export_paths", "THEME_ALIASES", "REFRESH_HZ"]


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

    HORIZONTAL_BREAKPOINTS = HORIZONTAL_BREAKPOINTS
    """Screens get ``-narrow`` below 120 columns (the compact layout in compile_lab.tcss)."""
    VERTICAL_BREAKPOINTS = VERTICAL_BREAKPOINTS
    """And ``-short`` below 40 rows (a smaller chart)."""

    SCREENS = {"main": MainScreen}
    MODES = {"main": "main"}
    DEFAULT_MODE = "main"
    """The main screen is the first on the stack (a mode: the app starts once it has composed)."""

    BINDINGS = APP_KEYS


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
        self.lab = LabController(runner, telemetry, history, config_path=config_path, cluster=cluster)
        """The session's state and the requests that change it (no textual)."""
        self.gpu_interval = gpu_interval
        self.load_history_at_start = load_history
        self.install_signal_handlers = install_signal_handlers
        if theme is not None or self.lab.config.theme:
            try:
                self.theme = resolve_theme(theme or self.lab.config.theme, self.available_themes)
            except ValueError:
                if theme is not None:
                    raise
                self.theme = DEFAULT_THEME
        self.lab.current_theme = lambda: self.theme
        screen = self._main
        self.trust = TrustActions(self, self.lab, screen)
        self.queueing = QueueActions(self, self.lab, screen, self.trust)
        self.exporting = ExportActions(self, self.lab, screen)
        self.baselines = BaselineActions(self, self.lab, screen)
        self.previous = PreviousRuns(self, self.lab, screen, self.baselines.refresh)
        self.columns = ColumnActions(self, self.lab, screen)
        self.tuning = TuneActions(self, self.lab, screen, self.queueing)
        self.lab.attach(AppView(self, screen, self.baselines))

    def _main(self) -> MainScreen:
        return self.main_screen

    # ----- the main screen and its widgets ----------------------------------------------

    def clear_selection(self) -> None:
        """Clear the text selection of the screen on top, if a screen is on the stack yet.

        Under Python 3.12's eager tasks (``App.run`` installs them) the main screen composes the
        moment Textual registers it, before it is on the stack, and each picker ``Input`` clears
        the selection as it takes its first value: Textual's own method then raises
        ``ScreenStackError`` and the app dies at start.
        """
        if self.screen_stack:
            super().clear_selection()

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
        if self.lab.config_warning:
            self.notify(self.lab.config_warning, title="Config ignored", severity="warning", markup=False, timeout=8)
        if self.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    loop.add_signal_handler(signum, self._on_terminate_signal, signum)

    def on_ready(self) -> None:
        """After the first frame: read the history (a thread that must not delay that frame)."""
        if self.load_history_at_start:
            self._load_history()

    # ----- the controller's state and requests, reached through the app (tests, demos, the palette) -------

    session = FromLab()
    runner = FromLab()
    telemetry = FromLab()
    history = FromLab()
    cluster = FromLab()
    config = FromLab()
    records = FromLab()
    history_ids = FromLab(writable=True)
    trace_next = FromLab(writable=True)
    data_usage_line = FromLab()
    current = FromLab()
    running = FromLab()
    queue = FromLab()
    run_active = FromLab()
    computing = FromLab()
    group_members = FromLab()
    row_of = FromLab()
    row_record = FromLab()
    enqueue = FromLab()
    lanes = FromLab()
    pooled = FromLab()
    confirmed_code = FromLab()
    _finalized = FromLab("finalized")
    _known = FromLab("known")
    _run_saved = FromLab("run_saved")
    groups = FromPart("lab.groups", "rows")
    baseline_rows = FromPart("lab.baseline", "rows")
    baseline_results = FromPart("lab.baseline", "results")
    baseline_busy = FromPart("lab.baseline", "busy")
    exportable_records = FromPart("exporting")
    _export = FromPart("exporting", "export")
    sweep_options = FromPart("queueing")
    _sweep_chosen = FromPart("queueing", "_sweep_chosen")
    queue_confirmed = FromPart("trust")
    set_baseline = FromPart("baselines")
    _load_history = FromPart("previous", "load")
    _save_config = FromPart("lab", "save_config")
    _history_frozen = FromPart("previous", "frozen", writable=True)

    @property
    def settled(self) -> bool:
        """No run active or queued, every ended run finalized (summary, history) and shown."""
        return self.lab.settled and not self.main_screen.redraw_pending

    def inject_record(self, record: RunRecord, *, current: bool = False) -> None:
        """Show a record made elsewhere (tests, demos, snapshots): a row, the chart, its GPU.

        No worker is started. ``current=True`` displays it as the running run (the queue line,
        the GPU pane's highlight) until it ends or is replaced; an ended record is taken as
        final as it is (its summary is computed here, on the calling thread).
        """
        self.lab.inject_record(record, current=current)
        self.main_screen.show_record(record, running=current)

    # ----- messages -----------------------------------------------------------------------------

    @on(Picker.RunRequested)
    def _picker_run_requested(self, message: Picker.RunRequested) -> None:
        """Enter in a picker field runs, like ``r``."""
        self.action_run()

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        if self.is_running:  # see _run_finished
            self.main_screen.run_started(message.record)

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        """A run ended: its row and GPU, and a toast if it failed. Not while the app closes: Textual removes
        the screens, then handles the messages still queued, and a run may have ended meanwhile."""
        if not self.is_running:
            return
        record = message.record
        if self.lab.injected is record:  # a record shown as running ended (tests post this themselves)
            self.lab.injected = None
        self.main_screen.run_ended(record)
        if record.status == RunStatus.FAILED:
            label = f"{workload_label(record.options, self.table.names.listing)} {options_label(record.options)}"
            self.notify(f"{label}: {record.error_kind}: {record.error_message}", title="Run failed", severity="error",
                        markup=False)

    @on(Notify)
    def _notice(self, message: Notify) -> None:
        """At narrow sizes a notice also goes to the notice line (:func:`~tui.app.components.notice_line.route`)."""
        route(self, message.notification)

    def _refresh_notifications(self) -> None:
        """Textual's toasts where they cover nothing (after each notice, a resume, a resize); none at narrow sizes."""
        if not hide_toasts(self):
            super()._refresh_notifications()

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        """A chunk of previous runs joins the model."""
        self.previous.loaded(message)

    # ----- actions (bound above, so the footer lists them in that order): each is one of the parts' ---------

    def action_run(self) -> None:
        """Validate the picker's options and queue them."""
        self.queueing.run()

    def action_sweep(self) -> None:
        """Open the sweep dialog for the picker's options."""
        self.queueing.sweep()

    def action_rerun(self) -> None:
        """Queue the selected row's options again."""
        self.queueing.rerun()

    def action_cancel_current(self) -> None:
        """Stop the search while one runs; else cancel the selected row's run when it runs, else every running run."""
        if not self.tuning.stop():
            self.queueing.cancel_current()

    def action_cancel_all(self) -> None:
        """Stop the search, cancel every running run and drop every queued one."""
        self.tuning.stop()
        self.queueing.cancel_all()

    def action_tune(self) -> None:
        """Tune the picker's configuration (the running search's screen while one runs)."""
        self.tuning.tune()

    def action_show_tune(self) -> None:
        """The latest search's leaderboard and answer."""
        self.tuning.show()

    @on(Leaderboard.StopRequested)
    def _stop_tune(self) -> None:
        self.tuning.stop()

    def action_toggle_serial(self) -> None:
        """One run at a time over a pool of GPUs, or one per GPU at once again."""
        self.queueing.toggle_serial()

    def action_cycle_trace(self) -> None:
        """Cycle what the next runs record."""
        self.queueing.cycle_trace()

    def action_tlparse(self) -> None:
        """Make the selected run's tlparse report."""
        self.queueing.tlparse()

    def action_export(self) -> None:
        """Export every ended row to the default exports directory."""
        self.exporting.export(None)

    def action_export_to(self) -> None:
        """Ask where, then export."""
        self.exporting.export_to()

    def action_toggle_history(self) -> None:
        """Show or hide previous sessions' runs."""
        self.previous.toggle()

    def action_choose_columns(self) -> None:
        """Show or hide the results table's columns."""
        self.columns.choose()

    def action_mark_baseline(self) -> None:
        """The selected row becomes the baseline (again: clears it)."""
        self.baselines.mark()

    def action_mark_session_baseline(self) -> None:
        """Every row of the selected row's session becomes the baseline."""
        self.baselines.mark_session()

    def action_clear_baseline(self) -> None:
        """No baseline."""
        self.baselines.set_baseline(())

    def action_compare_baseline(self) -> None:
        """The rows compared with the baseline, as ``compile-lab compare`` prints them."""
        self.baselines.compare()

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
        help_screen = HelpScreen(help_keys(self, self.screen), data_line=self.lab.data_usage_line)
        self.push_screen(help_screen)
        self.run_worker(lambda: self._measure_data_dir(help_screen), thread=True, group="data-usage",
                        exit_on_error=False, description="measure the data dir")

    def _measure_data_dir(self, help_screen: HelpScreen) -> None:
        """The data dir measured again (it grows with every run) for the help opened now (in a thread)."""
        from tui.app.previous_runs import measure_data_dir

        measure_data_dir(self, self.lab, warn=False)
        with contextlib.suppress(RuntimeError):  # the app closed meanwhile
            self.call_from_thread(help_screen.show_data_line, self.lab.data_usage_line)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Command palette entries: Textual's own plus every compile-lab action."""
        yield from super().get_system_commands(screen)
        yield from lab_commands(self)

    # ----- quitting -------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; asks first when a run is active."""
        if self.lab.shutting_down:
            return
        if self.run_active:
            from tui.app.components.dialogs import ConfirmScreen

            if isinstance(self.screen, ConfirmScreen):
                return
            question = self._quit_question()
            self.push_screen(ConfirmScreen(question, yes="Quit", no="Stay"), callback=self._quit_answered)
            return
        await self.shutdown()

    def _quit_question(self) -> str:
        """What quitting stops: a tune's search (and the user's own runs beside it), or the runs active and waiting."""
        waiting = len(self.queue)
        return self.tuning.quit_question() or (
            "A run is active" + (f" and {waiting} more wait" if waiting else "") + ". Stop it and quit?")

    async def _quit_answered(self, answer: bool | None) -> None:
        if answer:
            await self.shutdown()

    async def shutdown(self, return_code: int = 0) -> None:
        """Stop every run and worker process, save the config, exit."""
        if self.lab.shutting_down:
            return
        self.lab.shutting_down = True
        await self.lab.close()
        self._save_config()
        self.exit(return_code=return_code)

    def _on_terminate_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP (the SSH session is gone): kill the workers at once, then exit."""
        self.lab.kill_all()
        self.lab.shutting_down = True
        self.exit(return_code=128 + int(signum))

    async def on_unmount(self) -> None:
        """Last guard: no worker process outlives the app; the history loader's frozen objects are given back."""
        self.lab.session.kill_all()
        await self.lab.close()
        if self.install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    loop.remove_signal_handler(signum)
        self.previous.unfreeze()

    # ----- config ---------------------------------------------------------------------------------

    def watch_theme(self, theme: str) -> None:
        """Remember a theme chosen from the palette."""
        if hasattr(self, "lab"):
            self.lab.config.theme = theme


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
