"""``compile-lab run`` and ``sweep``: a :class:`~tui.engine.run.session.RunSession` driven from a terminal.

Progress goes to stderr (rich), the table and warnings to stdout. Ctrl-C or SIGTERM/SIGHUP
kill the workers at once; the runs that ended (cancelled ones included) are still in the
history and in the exports, and the exit code says what stopped it (130, 128 + N). Stopped
before any run was done or failed, nothing is exported: an existing file stays as it was.

No write to the terminal can stop the exports: every one goes through a
:class:`~tui.cli.terminal.TerminalFile`, which drops what it cannot write once the terminal is gone (closed:
EIO; a reader that left: EPIPE), so a SIGHUP mid-sweep still ends with the exports written,
the history appended and exit code 129.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any

from tui.present.format import workload_names
from tui.present.option_fields import differing, option_words
from tui.cli.parse import PROG, UsageError
from tui.cli.usage import refusal
from tui.cli.run_lines import RunCounter, RunLines, failed_lines
from tui.cli.terminal import TerminalFile, forget_cancel, signal_words, signals_deferred, signals_stop
from tui.engine.cluster.address import ClusterError
from tui.engine.options import RunOptions
from tui.engine.protocol import Event, WorkerWarning
from tui.engine.store.repeats import AUTO, keeps_spare
from tui.engine.store.results import RunRecord
from tui.engine.run.session import RunSession, SessionListener
from tui.logs import suppressed
from tui.engine.status import RunStatus

__all__ = ["run_configs", "HISTORY_NOT_SAVED"]

log = logging.getLogger(__name__)

HISTORY_NOT_SAVED = 4
"""The exit code when every run ended as it should (0, or 3 with ``--strict``) but a run's history line
could not be written: each such run was said on stderr at once, naming the file and why."""


async def run_configs(configs: list[RunOptions], args: argparse.Namespace,
                      make_runner: Callable[..., Any]) -> int:
    """Run every configuration in turn; returns the exit code (see ``tui.cli``)."""
    from rich.console import Console

    out, err_file = TerminalFile(sys.stdout), TerminalFile(sys.stderr)
    err = Console(file=err_file.as_io())
    cluster = _cluster(args)
    try:
        cluster_lanes = await _cluster_pools(cluster, configs) if cluster else None
    except ClusterError as exc:
        _say(err, f"{PROG}: error: {exc}")
        return 2
    telemetry = None if cluster else _telemetry(configs)
    history = None
    if not args.no_history:
        from tui.engine.store.history import History

        history = History()
    pool = tuple(getattr(args, "device_pool", ()) or ())
    try:
        pools = cluster_lanes or _pools_by_kind(pool, telemetry, args, err)
    except UsageError as exc:
        _say(err, f"{PROG}: error: {exc}")
        return 2
    repeats = getattr(args, "repeat", 1)  # after the pools: auto on GPUs of several kinds is one process
    per_config = repeats if isinstance(repeats, int) else 1
    # A log (stderr not a terminal) gets a line per run as it starts and ends; a live bar only draws at the end there.
    # one counter for the log lines and the bars: each pool (--each-gpu-kind) runs every configuration
    counter = RunCounter(len(configs) * len(pools), by_configuration=repeats == AUTO)
    lines = None if args.quiet or err_file.isatty() else RunLines(err_file, configs, counter=counter)
    progress = _Progress(err, len(configs) * per_config * len(pools), enabled=not args.quiet and lines is None,
                         lines=lines)
    progress.counter = counter
    progress.differs, progress.names = differing(configs), workload_names(o.workload for o in configs)
    progress.pooled = len(getattr(args, "device_pool", ()) or ()) > 1
    runner_for = await _runners(pool, make_runner, _keep_spare(configs, repeats), telemetry, cluster)
    session = RunSession(runner_for, history, progress, max_running=1 if getattr(args, "serial", False) else None)
    stopped_by: list[int] = []
    with signals_stop(session, stopped_by, cancelled="stopped"):
        interrupted = await _run_all(session, configs, progress, repeats, pools)
    interrupted = interrupted or bool(stopped_by)  # a signal while closing counts too
    if telemetry is not None:
        with suppressed(log, "closing the GPU telemetry"):
            telemetry.close()
    stopped_before = len(stopped_by)
    with signals_deferred(stopped_by):  # a signal now waits until the results are written whole
        code = _report(session.records, exported(session, args, err), args, (out, err), interrupted, stopped_by)
    code = _history_code(code, progress.unsaved)
    if not interrupted and len(stopped_by) > stopped_before:
        _say(err, f"{PROG}: signal {stopped_by[stopped_before]} came while the results were written; they were "
                  "written whole")
        code = 128 + stopped_by[stopped_before]
    for stream in (out, err_file):
        stream.let_go()
    return code


def exported(session: RunSession, args: argparse.Namespace, err: Any) -> list[RunRecord]:
    """What the exports hold: every run that ended, in order, those whose save to the history outlasted the close's
    wait included (where an export was asked for, a line on stderr names each: its history line may still follow as
    the process exits)."""
    from tui.engine.store.export import EXPORT_FORMATS

    if any(getattr(args, fmt.name, None) for fmt in EXPORT_FORMATS):
        for record in session.still_saving():
            _say(err, f"{PROG}: run {record.run_id} ended, but its save to the history had not finished when the "
                      "runs closed; the exports hold it")
    return [r for r in session.records if r.finished]


def _history_code(code: int, unsaved: list[str]) -> int:
    """:data:`HISTORY_NOT_SAVED` where ``code`` says all went well (0, or 3: only a verdict) but a run is not in
    the history; each such run was said on stderr as it happened."""
    return HISTORY_NOT_SAVED if code in (0, 3) and unsaved else code


def _cluster(args: argparse.Namespace) -> Any:
    """``--cluster``: the engine's :class:`~tui.engine.cluster.link.ClusterLink` (the app's too), or None."""
    if not getattr(args, "cluster", None):
        return None
    from tui.engine.cluster.link import ClusterLink

    return ClusterLink(args.cluster, args.cluster_cpus)


async def _cluster_pools(cluster: Any, configs: list[RunOptions]) -> list[tuple[str, ...]]:
    """Connect to the cluster: its lanes as the one pool (ClusterError, one line, when it cannot be used).

    ``open_cluster`` is looked up on :mod:`tui.engine.cluster` when called: tests replace it there.
    """
    return [await cluster.lanes(configs)]


async def _runners(pool: tuple[str, ...], make_runner: Callable[..., Any], keep_spare: bool,
                   telemetry: Any, cluster: Any) -> Callable[[str], Any]:
    """The runner of each lane (:class:`tui.engine.runner.wiring.LaneRunners`, the app's too): one for every
    lane, or with a GPU pool one per GPU, pinned to whole cores near its GPU; a cluster's lanes its runner."""
    from tui.engine.runner import wiring

    shared: list[Any] = []

    def one() -> Any:
        if not shared:
            shared.append(make_runner(keep_spare=keep_spare, telemetry=telemetry))
        return shared[0]

    lanes = wiring.LaneRunners(one, lambda env: make_runner(keep_spare=keep_spare, telemetry=telemetry, env=env),
                               telemetry=telemetry, cluster=cluster)
    if len(pool) > 1:
        await lanes.pin(pool)
    return lanes


def _keep_spare(configs: list[RunOptions], repeats: int | str) -> bool:
    """A spare worker pays when a second run will follow: several runs, or auto that may grow on a GPU."""
    per_config = repeats if isinstance(repeats, int) else 1
    return len(configs) * per_config > 1 or (repeats == AUTO and any(keeps_spare(c) for c in configs))


def _pools_by_kind(pool: tuple[str, ...], telemetry: Any, args: argparse.Namespace, err: Any) -> list[tuple[str, ...]]:
    """The pools the configurations are submitted to: the pool itself, or one per GPU kind (``--each-gpu-kind``).

    A pool of several kinds without the flag runs each configuration on whichever GPU is free: said on
    stderr, and refused with ``--repeat`` (one row's processes would run on different hardware).
    """
    each = getattr(args, "each_gpu_kind", False)
    if len(pool) <= 1 and each:
        raise UsageError("--each-gpu-kind needs a GPU list (--device cuda:all or cuda:0,cuda:3)")
    from tui.engine.options import OptionsError
    from tui.engine.runner import wiring
    from tui.engine.runner.gpu_lock import pool_gpu_names

    names = pool_gpu_names(pool, telemetry) if len(pool) > 1 else {}
    try:
        plan = wiring.plan_pools(pool, names, getattr(args, "repeat", 1), each_kind=each)
    except OptionsError as exc:
        raise UsageError(refusal(exc)) from None
    if plan.note and not args.quiet:
        _say(err, plan.note)
    args.repeat = plan.repeats
    return list(plan.pools)


def _telemetry(configs: list[RunOptions]) -> Any:
    if not any(c.device.startswith("cuda") for c in configs):
        return None
    from tui.telemetry.nvml import NvmlSource

    return NvmlSource()


async def _run_all(session: RunSession, configs: list[RunOptions], progress: _Progress,
                   repeats: int | str = 1, pools: list[tuple[str, ...]] | None = None) -> bool:
    """Submit (once per pool: one for each GPU kind with --each-gpu-kind), wait, close; True when Ctrl-C or a
    signal stopped it."""
    interrupted = False
    with progress:
        try:
            for pool in pools or [()]:
                session.submit(configs, repeats=repeats, pool=pool or None)
            await session.wait_settled()
        except asyncio.CancelledError:
            interrupted = True
            forget_cancel()
        finally:
            await session.aclose(timeout=5.0)
    return interrupted


def _report(records: list[RunRecord], ended: list[RunRecord], args: argparse.Namespace,
            terminal: tuple[TerminalFile, Any], interrupted: bool, stopped_by: list[int]) -> int:
    """Exports first, then the table; the exit code. No terminal write here can raise."""
    from rich.console import Console

    from tui.cli.ab_render import print_ab_diff
    from tui.cli.artifacts import report_artifacts
    from tui.cli.render import print_host_time, print_table, print_warnings

    from tui.engine.store.repeats import group_rows

    out, err = terminal
    # One row per configuration: the repeats of one are a group (the bootstrap across processes, once).
    ended_rows = group_rows(ended)
    rows = ended_rows if len(ended) == len(records) else group_rows(records)
    export_failed = _export(ended_rows, args, err)
    export_failed = report_artifacts(ended_rows, args, err) or export_failed
    if not args.quiet:
        print_table(rows, Console(file=out.as_io()))
        print_host_time(rows, Console(file=out.as_io()))
        print_warnings(rows, Console(file=out.as_io()))
        print_ab_diff(ended, Console(file=out.as_io()))
    for line in failed_lines(records) if args.quiet else []:
        _say(err, f"{PROG}: {line}")  # one line, however long: a log keeps it whole
    if interrupted:
        signum = stopped_by[0] if stopped_by else signal.SIGINT
        reason = signal_words(signum)
        done = sum(r.status in (RunStatus.DONE, RunStatus.FAILED) for r in records)
        _say(err, f"{PROG}: stopped by {reason}; {done} run(s) ended before it")
        return 128 + signum
    if export_failed or any(r.status != RunStatus.DONE for r in records):
        return 1
    if getattr(args, "strict", False) and _unconfident(rows):
        _say(err, f"{PROG}: --strict: {_unconfident(rows)}")
        return 3
    return 0


def _unconfident(records: list[RunRecord]) -> str:
    """``run 2: noisy, run 3: inconclusive, run 4: accuracy fail`` for the rows whose verdict states no number or
    whose compiled output failed the accuracy check ('' if none): what ``--strict`` exits 3 on."""
    from tui.engine.measure.verdict import CONFIDENT

    found = []
    for number, record in enumerate(records, 1):
        summary = record.summary()
        for what, word in (("", summary.verdict), ("host ", summary.host_verdict)):
            if word is not None and word not in CONFIDENT:
                found.append(f"run {number}: {what}{word}")
        if record.accuracy.verdict == "fail":
            found.append(f"run {number}: accuracy fail")
    return ", ".join(found)


def _say(console: Any, text: str) -> None:
    """One line on a console, as it is (no markup), never wrapped."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _export(records: list[RunRecord], args: argparse.Namespace, err: Any,
            json_extra: Mapping[str, Any] | None = None) -> bool:
    """Write the requested exports of ``records`` (rows: a group stands for its runs); True when one failed.
    ``json_extra``: top-level keys the JSON export adds (``tune``'s answer).

    Only when a run was done or failed: stopped before that (nothing, or cancelled runs only),
    no file is touched, an existing one stays as it was, and stderr says so.
    """
    from tui.engine.store import export

    formats = [fmt for fmt in export.EXPORT_FORMATS if getattr(args, fmt.name, None)]
    targets = {fmt.name: getattr(args, fmt.name) for fmt in formats}
    if targets and not export.anything_to_export(records):
        names = ", ".join(f"{fmt.flag} {targets[fmt.name]}" for fmt in formats)
        _say(err, f"{PROG}: no run ended, so no export was written ({names}); an existing file is left as it was")
        return False
    failed = False
    for outcome in export.export_records(records, targets, json_extra=json_extra):
        if isinstance(outcome.result, export.ExportError):
            failed = True
            _say(err, f"{PROG}: error: {outcome.fmt.flag}: {outcome.result}")
        elif not args.quiet:
            _say(err, f"wrote {outcome.target}")
    return failed


ECHO_MARGIN = 3
"""Columns the live progress leaves free at its right: the terminal echoes ``^C`` after its last line."""
WIDE_BARS = 110
"""From this many columns the progress bar is 24 wide, below it 10: the label needs the room more."""
STATE_WIDTH = 22
"""The columns a run's state keeps from 80 columns up (``measuring 500/1000 it``, ``waiting for the GPU``)."""
LABEL_WIDTH = 20
"""The columns a run's label keeps however narrow the terminal: its counter and the start of what tells it apart."""


def _progress_bars(console: Any) -> Any:
    """Rich's live progress, ``ECHO_MARGIN`` columns narrower than the terminal.

    Drawn full width, the ``^C`` that the terminal echoes after the last line wrapped onto a new line;
    Rich's redraw goes back up as many lines as it drew, so it went one line short and the first
    progress line stayed on screen twice.
    """
    from rich.constrain import Constrain
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    class Bars(Progress):
        def get_renderable(self) -> Any:
            return Constrain(super().get_renderable(), width=max(1, console.width - ECHO_MARGIN))

    # The label gives way first (its end, what the runs share, goes under an ellipsis); the state keeps its room,
    # and the bar narrows below WIDE_BARS columns. Left to share alike, an 80-column line cut the state to
    # "measuring 50/1…" and dropped the bar and the time. Below 80 columns the bar goes, and the state keeps what
    # the label's LABEL_WIDTH and the time leave it.
    width = console.width
    bar = [BarColumn(bar_width=24 if width >= WIDE_BARS else 10)] if width >= 80 else []
    state = STATE_WIDTH if width >= 80 else max(8, min(STATE_WIDTH, width - ECHO_MARGIN - LABEL_WIDTH - 10))
    return Bars(TextColumn("{task.description}", table_column=Column(ratio=1, min_width=LABEL_WIDTH, no_wrap=True,
                                                                     overflow="ellipsis")),
                *bar,
                TextColumn("{task.fields[state]}", table_column=Column(min_width=state, max_width=state, no_wrap=True,
                                                                       overflow="ellipsis")),
                TimeElapsedColumn(), console=console, transient=False, expand=True)


class _Progress(SessionListener):
    """Rich progress on stderr: one line per run with its phase and measured iterations.

    With ``lines`` (stderr is a log) a :class:`~tui.cli.run_lines.RunLines` writes each run's
    start and end instead.
    """

    def __init__(self, console: Any, total: int, enabled: bool, lines: RunLines | None = None) -> None:
        self.console = console
        self.lines = lines
        self.total = total
        self.tasks: dict[str, Any] = {}
        self.notes: dict[str, str] = {}
        self.differs: frozenset[str] = frozenset()
        """The option fields that differ among the runs (tui.present.option_fields.differing)."""
        self.names: dict[str, str] = {}
        """The runs' workload names (tui.present.format.workload_names: files of one name told apart)."""
        self.pooled = False
        """Runs are dealt to a pool of GPUs: each line names the GPU its run got."""
        self.unsaved: list[str] = []
        """Run ids whose history line could not be written (each said on stderr as it happened)."""
        self.progress = _progress_bars(console) if enabled else None
        self.counter = RunCounter(total, by_configuration=False)
        """The ``[i/N]`` and the process's number of each bar (by configuration under ``--repeat auto``, as the log
        lines)."""

    def __enter__(self) -> _Progress:
        if self.progress is not None:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.progress is not None:
            with contextlib.suppress(OSError, ValueError):  # its console's file never raises; belt and braces
                self.progress.__exit__(*exc_info)

    def runs_queued(self, records: list[RunRecord]) -> None:
        self.total += len(records)

    def run_saved(self, record: RunRecord, problem: str | None) -> None:
        if problem is not None:
            self.unsaved.append(record.run_id)
            with contextlib.suppress(OSError, ValueError):
                _say(self.console, f"{PROG}: error: {problem}")
        if self.lines is not None:
            with contextlib.suppress(OSError, ValueError):
                self.lines.total = self.total
                self.lines.saved(record)

    def data_pruned(self, result: Any) -> None:
        from tui.engine.explain.artifacts import format_bytes

        with contextlib.suppress(OSError, ValueError):
            for note in result.notes:
                _say(self.console, f"{PROG}: warning: {note}")
            if result.runs:
                _say(self.console, f"the data dir's size cap (COMPILE_LAB_MAX_DATA_GB) deleted the files of "
                                   f"{result.runs} older run(s), {format_bytes(result.bytes_freed)}; their history "
                                   "lines stay")
            for error in result.errors:
                _say(self.console, f"{PROG}: the size cap could not delete {error}")

    def run_started(self, record: RunRecord) -> None:
        self.counter.started(record)
        if self.lines is not None:
            self.lines.total = self.total
            with contextlib.suppress(OSError, ValueError):
                self.lines.started(record)
        if self.progress is None:
            return
        # which process and GPU, then what differs among the runs: a narrow terminal cuts the description's end
        where = [process] if (process := self.counter.process(record)) else []
        if self.pooled:
            where.append(f"on {record.options.device}")
        label = " ".join([self.counter.text(record, self.total) + (f" {' '.join(where)}:" if where else ""),
                          *option_words(record.options, self.differs, names=self.names)])
        with contextlib.suppress(OSError):
            self.tasks[record.run_id] = self.progress.add_task(label, total=1.0, state="starting")

    def run_event(self, record: RunRecord, event: Event) -> None:
        if isinstance(event, WorkerWarning) and event.source == "runner":
            self.notes[record.run_id] = "waiting for the GPU"
        elif not isinstance(event, WorkerWarning):
            self.notes.pop(record.run_id, None)
        self._update(record)

    def run_finished(self, record: RunRecord) -> None:
        if self.lines is not None:
            self.lines.finished(record)
        self._update(record)

    def _update(self, record: RunRecord) -> None:
        if self.progress is None or record.run_id not in self.tasks:
            return
        measured = sum(len(b.ms) for side in record.samples.values() for b in side if b.stage == "measure")
        state = self.notes.get(record.run_id) or record.status.replace("_", " ")
        if record.status == RunStatus.MEASURING or measured:
            state += f" {measured}/{2 * record.options.iters} it"
        if record.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            state = f"[red]{record.status}[/red]"
        elif record.status == RunStatus.DONE:
            state = "[green]done[/green]"
        with contextlib.suppress(OSError):
            self.progress.update(self.tasks[record.run_id], completed=record.progress(), state=state)
