"""The ``compile-lab`` command line: run, sweep, env, workloads; no subcommand opens the app.

This module imports neither torch nor textual: runs happen in worker processes
(:class:`tui.engine.runner.WorkerRunner`), the environment check's torch part runs in a
subprocess (``python -m tui.engine.worker.envcheck``), and the app is imported only when
it is opened (the summary table borrows ``tui.app.format``, which imports no textual).

Exit codes: 0 when every run succeeded, 1 when one failed, 2 on bad usage (one line
``compile-lab: error: <field>: <what is allowed>`` on stderr), 130 after Ctrl-C and
128 + N after signal N (the workers are killed first; runs that ended are still exported
and in the history).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import Any, Sequence

from tui import __version__
from tui.engine.catalog import USER_WORKLOAD_HELP, WORKLOADS
from tui.engine.options import (
    BACKENDS,
    DTYPES,
    DYNAMIC_CHOICES,
    MODES,
    OptionsError,
    RunOptions,
    parse_dynamic,
    parse_key_values,
)

__all__ = ["main", "build_parser", "options_from_args", "configs_from_args", "make_runner"]

PROG = "compile-lab"
ENVCHECK_TIMEOUT_S = 600


class UsageError(Exception):
    """Bad usage: the message is one line (without the ``compile-lab: error:`` prefix)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and raise instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(" ".join(message.split()))


# ----------------------------------------------------------------------------------------------
# parser


def _add_run_flags(parser: argparse.ArgumentParser, sweep: bool) -> None:
    defaults = RunOptions()
    what = parser.add_argument_group("what to run")
    what.add_argument("--workload", metavar="NAME", help=f"built-in workload ({', '.join(WORKLOADS)}) or {USER_WORKLOAD_HELP} (default {defaults.workload})")
    if sweep:
        what.add_argument("--param", action="append", metavar="K=V[,V...]", help="workload parameter; a comma list sweeps it (repeatable)")
    else:
        what.add_argument("--param", action="append", metavar="K=V", help="workload parameter, e.g. n=1024 (repeatable)")
    what.add_argument("--train", action="store_true", default=None, help="time a training step (cnn, mlp, transformer_block)")
    what.add_argument("--compile-optimizer", action="store_true", default=None, help="with --train: compile the optimizer step too")
    what.add_argument("--device", metavar="DEV", help=f"cpu, cuda, cuda:N or cuda:GPU-<uuid> (default {defaults.device})")
    what.add_argument("--python", metavar="PATH", help="the interpreter the worker runs in (default: this one)")

    comp = parser.add_argument_group("torch.compile")
    if sweep:
        comp.add_argument("--backend", metavar="LIST", help=f"comma list of backends, e.g. {','.join(BACKENDS[:2])}")
        comp.add_argument("--mode", metavar="LIST", help=f"comma list of modes ({', '.join(MODES)})")
        comp.add_argument("--fullgraph", metavar="WHICH", help="both, true or false")
        comp.add_argument("--dynamic", metavar="LIST", help=f"comma list of {', '.join(DYNAMIC_CHOICES)}")
        comp.add_argument("--dtype", metavar="LIST", help=f"comma list of dtypes ({', '.join(DTYPES)})")
    else:
        comp.add_argument("--backend", metavar="NAME", help=f"{', '.join(BACKENDS)} or another registered backend (default {defaults.backend})")
        comp.add_argument("--mode", metavar="MODE", help=f"{', '.join(MODES)} (inductor only; default: {defaults.mode})")
        comp.add_argument("--fullgraph", action=argparse.BooleanOptionalAction, default=None, help="refuse graph breaks")
        comp.add_argument("--dynamic", metavar="WHICH", help=f"{', '.join(DYNAMIC_CHOICES)} (default auto)")
        comp.add_argument("--dtype", metavar="DTYPE", help=f"{', '.join(DTYPES)} (default {defaults.dtype})")
    comp.add_argument("--option", action="append", metavar="K=V", help="an inductor option, e.g. triton.cudagraphs=false (repeatable)")
    comp.add_argument("--tf32", action="store_true", default=None, help="allow TF32 for matmuls and cuDNN on both sides")
    comp.add_argument("--cold-compile", action="store_true", default=None, help="a fresh inductor/triton cache dir (true cold compile)")

    timing = parser.add_argument_group("timing")
    timing.add_argument("--warmup", type=int, metavar="N",
                        help=f"warm-up calls per side, then more until the time settles; 0: only the "
                             f"3 compiled calls CUDA graphs need (default {defaults.warmup})")
    timing.add_argument("--iters", type=int, metavar="N", help=f"measured iterations per side (default {defaults.iters})")
    timing.add_argument("--block-size", type=int, metavar="N", help=f"iterations per interleaved block (default {defaults.block_size})")
    timing.add_argument("--time-budget", type=float, metavar="S", help="stop measuring after S seconds")
    timing.add_argument("--l2-flush", action="store_true", default=None, help="flush the L2 cache between iterations (GPU)")
    timing.add_argument("--timeout", type=float, metavar="S", help=f"kill a run after S seconds (default {defaults.timeout_s:g})")
    timing.add_argument("--seed", type=int, metavar="N", help=f"random seed (default {defaults.seed})")
    timing.add_argument(
        "--memory-limit", type=float, metavar="GB",
        help="CPU runs: cap the worker's address space at GB gigabytes; a bigger allocation fails the run "
             "as out_of_memory instead of waking the system's OOM killer (default: no limit)",
    )

    out = parser.add_argument_group("output")
    out.add_argument("--csv", metavar="PATH", help="write the summary CSV")
    out.add_argument("--json", metavar="PATH", help="write every run as JSON (with per-iteration times)")
    out.add_argument("--raw-csv", metavar="PATH", help="write one CSV row per timed iteration")
    out.add_argument("--no-history", action="store_true", help="do not append the runs to the history")
    out.add_argument("--quiet", action="store_true", help="no progress and no table (errors still go to stderr)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``compile-lab`` (errors raise UsageError instead of exiting)."""
    parser = _Parser(
        prog=PROG,
        description="Benchmarks eager PyTorch against torch.compile, honestly. Without a subcommand it opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--no-mouse", action="store_true", help="app: do not capture the mouse")
    parser.add_argument("--theme", metavar="NAME", help="app: a Textual theme")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="benchmark one configuration", description="Benchmark one configuration: eager vs torch.compile.")
    _add_run_flags(run, sweep=False)
    sweep = sub.add_parser(
        "sweep",
        help="benchmark every combination of lists",
        description=(
            "Benchmark every combination of the listed modes, fullgraph, dynamic, backends, dtypes and "
            "parameter values, one after another (combinations a backend ignores run once)."
        ),
    )
    _add_run_flags(sweep, sweep=True)
    env = sub.add_parser("env", help="check torch, CUDA, triton, the C++ compiler and NVML", description="Check the environment compile-lab runs in.")
    env.add_argument("--python", metavar="PATH", help="check this interpreter instead of this one")
    sub.add_parser("workloads", help="list the built-in workloads", description="List the built-in workloads and how to use your own.")
    return parser


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def options_from_args(args: argparse.Namespace, sweep: bool = False) -> RunOptions:
    """A RunOptions from the parsed flags (not validated; sweep axes are left at their defaults)."""
    given: dict[str, Any] = {}
    for flag, name in (
        ("workload", "workload"),
        ("device", "device"),
        ("python", "python"),
        ("train", "train"),
        ("compile_optimizer", "compile_optimizer"),
        ("tf32", "tf32"),
        ("cold_compile", "cold_compile"),
        ("warmup", "warmup"),
        ("iters", "iters"),
        ("block_size", "block_size"),
        ("time_budget", "time_budget_s"),
        ("l2_flush", "l2_flush"),
        ("timeout", "timeout_s"),
        ("memory_limit", "memory_limit_gb"),
        ("seed", "seed"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            given[name] = value
    if args.option:
        given["inductor_options"] = parse_key_values(args.option, "inductor_options")
    if not sweep:
        for name in ("backend", "mode", "dtype", "fullgraph"):
            if getattr(args, name) is not None:
                given[name] = getattr(args, name)
        if args.dynamic is not None:
            given["dynamic"] = parse_dynamic(args.dynamic)
        if args.param:
            given["params"] = parse_key_values(args.param, "params")
    return RunOptions(**given)


def configs_from_args(args: argparse.Namespace) -> list[RunOptions]:
    """The validated configurations of a parsed ``run`` (one) or ``sweep`` (every combination).

    Raises OptionsError (one line: ``field: what is allowed``) for the first bad value.
    """
    if args.command == "run":
        return [options_from_args(args).validated()]
    return _sweep_configs(args)


def make_runner(keep_spare: bool, telemetry: Any = None) -> Any:
    """The WorkerRunner the CLI runs with (tests replace this to use a fake worker)."""
    from tui.engine.runner import WorkerRunner

    return WorkerRunner(keep_spare=keep_spare, telemetry=telemetry)


def _sweep_configs(args: argparse.Namespace) -> list[RunOptions]:
    from tui.engine.sweep import expand

    base = options_from_args(args, sweep=True)
    grid: dict[str, list[Any]] = {}
    for item in args.param or ():
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionsError("params", f"{item!r} is not key=value[,value...]")
        parts = [v.strip() for v in values.split(",") if v.strip()]
        if not parts:
            raise OptionsError("params", f"{key} has no value")
        grid.setdefault(key, [])
        for part in parts:
            grid[key].append(parse_key_values([f"{key}={part}"], "params")[key])
    fullgraphs = None
    if args.fullgraph is not None:
        choice = args.fullgraph.strip().lower()
        table = {"both": [False, True], "true": [True], "false": [False]}
        if choice not in table:
            raise OptionsError("fullgraph", f"{args.fullgraph!r} is not allowed (allowed: both, true, false)")
        fullgraphs = table[choice]
    return expand(
        base,
        modes=_split(args.mode),
        fullgraphs=fullgraphs,
        dynamics=_split(args.dynamic),
        backends=_split(args.backend),
        dtypes=_split(args.dtype),
        params_grid=grid or None,
    )


# ----------------------------------------------------------------------------------------------
# main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        return _usage_error(str(exc))
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    if args.command is None:
        return _open_app(args)
    if args.command == "workloads":
        return _cmd_workloads()
    if args.command == "env":
        return _cmd_env(args)
    try:
        configs = configs_from_args(args)
    except OptionsError as exc:
        return _usage_error(str(exc))
    return asyncio.run(_run_configs(configs, args))


def _usage_error(message: str) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 2


def _open_app(args: argparse.Namespace) -> int:
    try:
        from tui.app.app import run_app
    except ImportError as exc:
        print(f"{PROG}: the app could not be loaded ({exc}); `{PROG} run --help` shows the command line")
        return 0
    return int(run_app(no_mouse=args.no_mouse, theme=args.theme) or 0)


# ----------------------------------------------------------------------------------------------
# run / sweep


async def _run_configs(configs: list[RunOptions], args: argparse.Namespace) -> int:
    from rich.console import Console

    from tui.engine.results import RunRecord

    err = Console(stderr=True)
    telemetry = None
    if any(c.device.startswith("cuda") for c in configs):
        from tui.telemetry.nvml import NvmlSource

        telemetry = NvmlSource()
    runner = make_runner(keep_spare=len(configs) > 1, telemetry=telemetry)
    history = None
    if not args.no_history:
        from tui.engine.history import History

        history = History()

    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    stopped_by: list[int] = []

    def on_signal(signum: int) -> None:
        runner.kill_all()
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

    records: list[Any] = []
    interrupted = False
    progress = _Progress(err, len(configs), enabled=not args.quiet)
    try:
        with progress:
            for index, options in enumerate(configs):
                record = RunRecord.new(options)
                records.append(record)
                runner.keep_spare = index + 1 < len(configs)  # no spare after the last run
                progress.start(index, record)
                try:
                    await runner.run(record, lambda event, r=record: progress.update(r, event))
                except asyncio.CancelledError:
                    interrupted = True
                finally:
                    progress.update(record, None)
                    if history is not None:
                        _append_history(history, record, err)  # only runs that ended (done/failed)
                if interrupted:
                    break
    except asyncio.CancelledError:
        interrupted = True
    finally:
        for signum, previous in installed:
            loop.remove_signal_handler(signum)
            with contextlib.suppress(TypeError, ValueError, OSError):
                signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        uncancel = getattr(asyncio.current_task(), "uncancel", None)  # Python 3.11+; 3.10 counts no cancels
        if uncancel is not None and interrupted:
            while uncancel() > 0:
                pass
        try:
            await asyncio.wait_for(runner.aclose(), 5)
        except (asyncio.CancelledError, asyncio.TimeoutError):
            runner.kill_all()

        if telemetry is not None:
            with contextlib.suppress(Exception):
                telemetry.close()

    ended = [r for r in records if r.status in ("done", "failed")]
    export_failed = _export(ended, args, err)
    try:
        if not args.quiet:
            _print_table(records, Console())
            _print_warnings(records, Console())
        for record in records:
            if record.status == "failed" and args.quiet:
                err.print(
                    f"{PROG}: {record.options.workload} {record.options.label()}: {record.error_message}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,  # one line, however long: a log keeps it whole
                )
        if interrupted:
            reason = f"signal {stopped_by[0]}" if stopped_by else "Ctrl-C"
            err.print(f"{PROG}: stopped by {reason}; {len(ended)} run(s) ended before it", markup=False, highlight=False,
                      soft_wrap=True)
    except OSError:  # the terminal went away (SIGHUP): the exports and the history are written
        pass
    if interrupted:
        return 128 + stopped_by[0] if stopped_by else 130
    if export_failed or any(r.status != "done" for r in records):
        return 1
    return 0


def _append_history(history: Any, record: Any, err: Any) -> None:
    from tui.engine.history import HistoryError

    if record.status not in ("done", "failed"):
        return
    try:
        history.append(record)
    except (HistoryError, OSError, ValueError) as exc:
        err.print(f"{PROG}: warning: the run was not added to the history: {exc}", markup=False, highlight=False,
                  soft_wrap=True)


def _export(records: list[Any], args: argparse.Namespace, err: Any) -> bool:
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


class _Progress:
    """Rich progress on stderr: one line per run with its phase and measured iterations."""

    def __init__(self, console: Any, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.total = total
        self.tasks: dict[str, int] = {}
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
            self.progress.__exit__(*exc_info)

    def start(self, index: int, record: Any) -> None:
        if self.progress is None:
            return
        o = record.options
        label = f"[{index + 1}/{self.total}] {o.workload} {o.label()}"
        self.tasks[record.run_id] = self.progress.add_task(label, total=1.0, state="starting")

    def update(self, record: Any, event: dict[str, Any] | None) -> None:
        if self.progress is None or record.run_id not in self.tasks:
            return
        from tui.engine.protocol import WorkerWarning

        if isinstance(event, WorkerWarning) and event.source == "runner":
            self.notes[record.run_id] = "waiting for the GPU"
        elif event is not None and not isinstance(event, WorkerWarning):
            self.notes.pop(record.run_id, None)
        measured = sum(len(b.ms) for side in record.samples.values() for b in side if b.stage == "measure")
        state = self.notes.get(record.run_id) or record.status.replace("_", " ")
        if record.status == "measuring" or measured:
            state += f" {measured}/{2 * record.options.iters} it"
        if record.status in ("failed", "cancelled"):
            state = f"[red]{record.status}[/red]"
        elif record.status == "done":
            state = "[green]done[/green]"
        self.progress.update(self.tasks[record.run_id], completed=record.progress(), state=state)


def _ms(stats: Any) -> str:
    if stats is None:
        return "-"
    value = stats.median
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 1:
        return f"{value:.3g} ms"
    return f"{value * 1000:.3g} µs"


def _speedup_text(summary: Any) -> Any:
    """``1.23x`` over ``[1.10, 1.35]``: green/red when significant, dim (``n.s.``) when not.

    A launch-bound run is marked, with its host-inclusive speedup (``host 1.31x``) under it:
    the headline is device time, the host figure is what a loop that never synchronises pays.
    """
    from rich.text import Text

    speedup = summary.speedup
    if speedup is None:
        return Text("-")
    low, high = summary.speedup_ci_low, summary.speedup_ci_high
    significant = bool(summary.significant)
    style = ("bold green" if speedup > 1 else "bold red") if significant else "dim"
    text = Text(f"{speedup:.2f}x", style=style)
    if low is not None and high is not None:
        text.append(f"\n[{low:.2f}, {high:.2f}]", style=style)
        if not significant:
            text.append("\nn.s.", style="dim")
    if summary.launch_bound:
        text.append("\nlaunch-bound", style="yellow")
        host = summary.host_speedup
        if host is not None:
            text.append(f"\nhost {host:.2f}x", style="bold yellow")
            host_low, host_high = summary.host_speedup_ci_low, summary.host_speedup_ci_high
            if host_low is not None and host_high is not None:
                text.append(f"\n[{host_low:.2f}, {host_high:.2f}]", style="yellow")
    return text


def _print_table(records: list[Any], console: Any) -> None:
    """The summary table; failed runs' errors follow it, numbered like the rows."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tui.app.format import accuracy_style

    table = Table(
        title="compile-lab results", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("run", min_width=12, ratio=1)
    for name in ("compile", "eager", "compiled", "speedup", "brk/rec"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("acc", no_wrap=True)
    table.add_column("status", no_wrap=True, min_width=9)
    errors = []
    for number, record in enumerate(records, 1):
        summary = record.summary()
        o = record.options
        params = " ".join(f"{k}={v}" for k, v in (o.params or {}).items())
        what = Text()
        what.append(f"{number} {o.workload}", style="bold")
        what.append(f" {params}\n{o.label()} {o.device}".replace(" \n", "\n"))
        compile_s = f"{record.compile_s:.3g} s" if record.compile_s is not None else "-"
        accuracy = record.accuracy.verdict
        status_style = {"done": "green", "failed": "bold red", "cancelled": "yellow"}.get(record.status, "")
        if record.status in ("failed", "cancelled"):
            errors.append(f"run {number}: {record.error_kind}: {record.error_message}")
        table.add_row(
            what,
            compile_s,
            _ms(summary.eager.iter),
            _ms(summary.compiled.iter),
            _speedup_text(summary),
            f"{record.diagnostics.graph_breaks or '-'}/{record.diagnostics.recompiles or '-'}",
            Text(accuracy, style=accuracy_style(accuracy)),
            Text(record.status, style=status_style),
            end_section=number < len(records),  # a blank line between runs
        )
    console.print(table)
    for line in errors:
        console.print(Text(line, style="red"), soft_wrap=True)


def _print_warnings(records: list[Any], console: Any) -> None:
    lines = []
    for number, record in enumerate(records, 1):
        for warning in record.summary().warnings:
            lines.append(f"  run {number}: {warning}")
    if lines:
        console.print("warnings:", style="yellow")
        for line in lines:
            console.print(line, markup=False, highlight=False)


# ----------------------------------------------------------------------------------------------
# workloads


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def _cmd_workloads() -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(title="built-in workloads", title_justify="left")
    for name, justify in (("workload", "left"), ("type", "left"), ("cpu", "right"),
                          ("gpu", "right"), ("allowed", "left"), ("what it is", "left")):  # fmt: skip
        table.add_column(name, justify=justify, no_wrap=name != "what it is")  # type: ignore[arg-type]
    for number, spec in enumerate(WORKLOADS.values()):
        train = " (--train: a training step)" if spec.supports_train else ""
        table.add_row(Text(spec.name, style="bold"), "", "", "", "", spec.description + train, end_section=not spec.params)
        for index, p in enumerate(spec.params):
            gpu = p.gpu_default if p.gpu_default is not None else p.default
            if p.choices:
                allowed = ", ".join(str(c) for c in p.choices)
            else:
                low = _num(p.minimum) if p.minimum is not None else ""
                high = _num(p.maximum) if p.maximum is not None else ""
                allowed = f"{low}..{high}" if low or high else "any"
            table.add_row(
                f"  {p.name}", p.kind.__name__, _num(p.default), _num(gpu), allowed, p.help,
                end_section=index == len(spec.params) - 1 and number < len(WORKLOADS) - 1,
            )
    console.print(table)
    for paragraph in (
        "Parameters: --param name=value, e.g. compile-lab run --workload matmul --param n=2048. "
        "The cpu defaults apply with --device cpu, the gpu defaults with --device cuda.",
        "Your own workload: --workload path/to/file.py (or path/to/file.py:factory). The file defines "
        "make_workload(device, dtype, **params), or the factory you name, returning (callable, inputs_tuple) "
        "or {'model' or 'fn': callable, 'inputs': tuple, 'label': str}. It is imported only inside the "
        "worker process; --param values reach it as keyword arguments.",
    ):
        console.print()
        console.print(paragraph, markup=False, highlight=False)
    return 0


# ----------------------------------------------------------------------------------------------
# env


def _envcheck(python: str | None) -> tuple[dict[str, Any] | None, str]:
    """Run the torch part of the check in a subprocess; (report, error text)."""
    from tui.engine.runner import make_package_importable

    argv = [python or sys.executable, "-m", "tui.engine.worker.envcheck"]
    env = dict(os.environ)
    make_package_importable(argv[0], env)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=ENVCHECK_TIMEOUT_S,
            start_new_session=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"the check did not finish within {ENVCHECK_TIMEOUT_S} s"
    except OSError as exc:
        return None, f"{argv[0]} could not be started: {exc}"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode == 0 and lines:
        try:
            return json.loads(lines[-1]), ""
        except ValueError:
            pass
    tail = [line for line in done.stderr.splitlines() if line.strip()]
    return None, f"exit code {done.returncode}: {tail[-1] if tail else 'no output'}"


def _cmd_env(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    err = Console(stderr=True)
    with err.status("checking torch in a subprocess (importing torch takes a few seconds)..."):
        report, error = _envcheck(args.python)

    table = Table(title="compile-lab environment", title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_column("note", style="dim")
    ok, bad, warn = "[green]", "[red]", "[yellow]"

    def row(what: str, value: Any, note: str = "", style: str = "") -> None:
        text = "-" if value is None or value == "" else str(value)
        table.add_row(what, f"{style}{_escape(text)}" if style else _escape(text), _escape(note))

    row("compile-lab", __version__)
    row("python (CLI)", sys.version.split()[0], sys.executable)
    hints: list[str] = []
    torch_ok = False
    if report is None:
        row("torch", "the check failed", error, bad)
        hints.append("install torch into the interpreter the workers use (see --python)")
    elif report.get("torch") is None:
        row("python (worker)", report.get("python"), report.get("python_executable") or "")
        row("torch", "not importable", report.get("torch_error") or "", bad)
        hints.append("install torch into the interpreter the workers use (see --python)")
    else:
        torch_ok = True
        row("python (worker)", report.get("python"), report.get("python_executable") or "")
        row("torch", report["torch"], f"imported in {report.get('torch_import_s')} s", ok)
        cuda_build = report.get("cuda_build")
        row("CUDA build", cuda_build or "none (CPU-only build)")
        available = report.get("cuda_available")
        row("CUDA available", "yes" if available else "no", "", ok if available else warn)
        row("GPU count", report.get("gpu_count"))
        for gpu in report.get("gpus") or ():
            row(
                f"  cuda:{gpu.get('index')}",
                gpu.get("name"),
                f"{gpu.get('uuid')}, sm {gpu.get('capability')}, {gpu.get('memory_mb')} MiB",
            )
        row("cuDNN", report.get("cudnn"))
        triton_note = "" if report.get("triton") else ("inductor needs it on a GPU" if cuda_build else "not needed on the CPU")
        row("triton", report.get("triton") or "not installed", triton_note)
        cxx, cxx_path = report.get("cxx"), report.get("cxx_path")
        if cxx_path:
            row("C++ compiler (inductor, CPU)", f"{cxx} ({cxx_path})", report.get("cxx_version") or "version unknown", ok)
        else:
            row("C++ compiler (inductor, CPU)", cxx or "none", "not found on PATH", bad)
            hints.append("inductor on the CPU needs a C++ compiler: install g++ (or set CXX)")
        row("torch threads", report.get("num_threads"))
        if cuda_build and not available:
            hints.append("this torch has CUDA but sees no GPU: check the driver and CUDA_VISIBLE_DEVICES")
        if available and not report.get("triton"):
            hints.append("install triton: inductor generates triton kernels on the GPU")
        for problem in report.get("problems") or ():
            row("problem", problem, "", warn)

    from tui.telemetry.nvml import NvmlSource

    source = NvmlSource()
    try:
        if source.available:
            snapshots = source.snapshot()
            row("NVML (GPU telemetry)", f"available, {len(snapshots)} GPU(s)", "", ok)
            for snap in snapshots:
                memory = f", {snap.mem_total_mb:.0f} MiB" if snap.mem_total_mb else ""
                row(f"  NVML {snap.index}", snap.name, f"{snap.uuid}{memory}")
        else:
            row("NVML (GPU telemetry)", "unavailable", source.reason, warn)
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
    console.print(table)
    for hint in hints:
        console.print(f"hint: {hint}", markup=False, highlight=False)
    return 0 if torch_ok else 1


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

