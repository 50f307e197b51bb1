"""``compile-lab run`` and ``sweep``: a :class:`~tui.engine.session.RunSession` driven from a terminal.

Progress goes to stderr (rich), the table and warnings to stdout. Ctrl-C or SIGTERM/SIGHUP
kill the workers at once; the runs that ended (cancelled ones included) are still in the
history and in the exports, and the exit code says what stopped it (130, 128 + N).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from typing import Any, Callable

from tui.cli.parse import PROG
from tui.engine.options import RunOptions
from tui.engine.protocol import Event, WorkerWarning
from tui.engine.results import RunRecord
from tui.engine.session import RunSession, SessionListener

__all__ = ["run_configs"]


async def run_configs(configs: list[RunOptions], args: argparse.Namespace,
                      make_runner: Callable[..., Any]) -> int:
    """Run every configuration in turn; returns the exit code (see ``tui.cli``)."""
    from rich.console import Console

    err = Console(stderr=True)
    telemetry = _telemetry(configs)
    history = None
    if not args.no_history:
        from tui.engine.history import History

        history = History()
    progress = _Progress(err, len(configs), enabled=not args.quiet)
    runner = make_runner(keep_spare=len(configs) > 1, telemetry=telemetry)
    session = RunSession(lambda lane: runner, history, progress)
    stopped_by: list[int] = []
    with _signals_stop(session, stopped_by):
        interrupted = await _run_all(session, configs, progress)
    if telemetry is not None:
        with contextlib.suppress(Exception):
            telemetry.close()
    return _report(session.records, session.ended(), args, err, interrupted, stopped_by)


def _telemetry(configs: list[RunOptions]) -> Any:
    if not any(c.device.startswith("cuda") for c in configs):
        return None
    from tui.telemetry.nvml import NvmlSource

    return NvmlSource()


async def _run_all(session: RunSession, configs: list[RunOptions], progress: "_Progress") -> bool:
    """Submit, wait, close; True when Ctrl-C or a signal stopped it."""
    interrupted = False
    with progress:
        try:
            session.submit(configs)
            await session.wait_settled()
        except asyncio.CancelledError:
            interrupted = True
            _forget_cancel()
        finally:
            await session.aclose(timeout=5.0)
    return interrupted


def _forget_cancel() -> None:
    """Let this task await again after its cancellation was handled (Python 3.11+ counts them)."""
    task = asyncio.current_task()
    uncancel = getattr(task, "uncancel", None)
    if uncancel is not None:
        while uncancel() > 0:
            pass


@contextlib.contextmanager
def _signals_stop(session: RunSession, stopped_by: list[int]) -> Any:
    """SIGTERM and SIGHUP kill the workers and cancel the run loop, like Ctrl-C."""
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        session.kill_all()
        stopped_by.append(signum)
        if main_task is not None:
            main_task.cancel()

    installed: list[tuple[int, Any]] = []
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous = signal.getsignal(signum)
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append((signum, previous))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for signum, previous in installed:
            loop.remove_signal_handler(signum)
            with contextlib.suppress(TypeError, ValueError, OSError):
                signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


def _report(records: list[RunRecord], ended: list[RunRecord], args: argparse.Namespace, err: Any,
            interrupted: bool, stopped_by: list[int]) -> int:
    """Exports first (they must survive a terminal that is gone), then the table; the exit code."""
    from rich.console import Console

    from tui.cli.render import print_table, print_warnings

    export_failed = _export(ended, args, err)
    try:
        if not args.quiet:
            print_table(records, Console())
            print_warnings(records, Console())
        for record in records:
            if record.status == "failed" and args.quiet:
                # one line, however long: a log keeps it whole
                err.print(f"{PROG}: {record.options.workload} {record.options.label()}: {record.error_message}",
                          markup=False, highlight=False, soft_wrap=True)
        if interrupted:
            reason = f"signal {stopped_by[0]}" if stopped_by else "Ctrl-C"
            done = sum(r.status in ("done", "failed") for r in records)
            err.print(f"{PROG}: stopped by {reason}; {done} run(s) ended before it", markup=False,
                      highlight=False, soft_wrap=True)
    except OSError:  # the terminal went away (SIGHUP): the exports and the history are written
        pass
    if interrupted:
        return 128 + stopped_by[0] if stopped_by else 130
    if export_failed or any(r.status != "done" for r in records):
        return 1
    return 0


def _export(records: list[RunRecord], args: argparse.Namespace, err: Any) -> bool:
    """Write the requested exports; True when one failed (reported on stderr)."""
    from tui.engine.export import ExportError, write_csv, write_json, write_raw_csv

    failed = False
    for path, write in ((args.csv, write_csv), (args.json, write_json), (args.raw_csv, write_raw_csv)):
        if not path:
            continue
        try:
            write(records, path)
        except ExportError as exc:
            failed = True
            err.print(f"{PROG}: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        else:
            if not args.quiet:
                with contextlib.suppress(OSError):
                    err.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
    return failed


class _Progress(SessionListener):
    """Rich progress on stderr: one line per run with its phase and measured iterations."""

    def __init__(self, console: Any, total: int, enabled: bool) -> None:
        self.total = total
        self.started = 0
        self.tasks: dict[str, Any] = {}
        self.notes: dict[str, str] = {}
        self.progress = None
        if enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                TextColumn("{task.fields[state]}"),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            )

    def __enter__(self) -> "_Progress":
        if self.progress is not None:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.progress is not None:
            with contextlib.suppress(OSError):  # the terminal may be gone
                self.progress.__exit__(*exc_info)

    def run_started(self, record: RunRecord) -> None:
        self.started += 1
        if self.progress is None:
            return
        o = record.options
        label = f"[{self.started}/{self.total}] {o.workload} {o.label()}"
        with contextlib.suppress(OSError):
            self.tasks[record.run_id] = self.progress.add_task(label, total=1.0, state="starting")

    def run_event(self, record: RunRecord, event: Event) -> None:
        if isinstance(event, WorkerWarning) and event.source == "runner":
            self.notes[record.run_id] = "waiting for the GPU"
        elif not isinstance(event, WorkerWarning):
            self.notes.pop(record.run_id, None)
        self._update(record)

    def run_finished(self, record: RunRecord) -> None:
        self._update(record)

    def _update(self, record: RunRecord) -> None:
        if self.progress is None or record.run_id not in self.tasks:
            return
        measured = sum(len(b.ms) for side in record.samples.values() for b in side if b.stage == "measure")
        state = self.notes.get(record.run_id) or record.status.replace("_", " ")
        if record.status == "measuring" or measured:
            state += f" {measured}/{2 * record.options.iters} it"
        if record.status in ("failed", "cancelled"):
            state = f"[red]{record.status}[/red]"
        elif record.status == "done":
            state = "[green]done[/green]"
        with contextlib.suppress(OSError):
            self.progress.update(self.tasks[record.run_id], completed=record.progress(), state=state)
