"""The files runs keep beside the results: ``--trace`` copies, TORCH_TRACE and tlparse, ``compile-lab prune``.

After the runs (:func:`report_artifacts`, called by :mod:`tui.cli.run` after the exports):

* ``--trace PATH``: each traced run wrote ``trace.json`` into its data folder (the worker, from the
  profile pass); it is copied to PATH for ``run`` (a file: its first row's; a later row, one GPU kind's
  of ``--each-gpu-kind``, says where its own is kept), or into the directory PATH for ``sweep``
  as ``NN-<workload>-<options>.json``, NN the configuration's row in the results table (``-2``, ``-3``, ...
  where the name is taken: nothing in the folder is replaced). Written like
  the exports (a temporary file renamed; never through a link, onto a device or into compile-lab's
  data). A traced run that ended without a trace is an error (exit 1) and says why.
* ``--torch-trace``: each run's TORCH_TRACE directory is printed; with ``--tlparse`` tlparse makes
  its report (when it is on PATH) and the report's path is printed.

``compile-lab prune`` (:func:`cmd_prune`) deletes older runs' files (:mod:`tui.engine.store.prune`).
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from typing import Any

from tui.cli.parse import PROG
from tui.engine.store.results import RunRecord
from tui.engine.status import RunStatus

__all__ = ["report_artifacts", "trace_target", "cmd_prune", "check_prune_args", "PRUNE_ALLOWED"]

PRUNE_ALLOWED = {"--keep-last": "a whole number of runs, 0 or more", "--older-than": "a number of days, 0 or more",
                 "--max-size": "a number of GB, 0 or more"}
"""What each of ``prune``'s rules allows, as its refusals say it."""


def _say(console: Any, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=_-]+", "-", text).strip("-")[:80] or "run"


def trace_target(row: RunRecord, number: int, args: argparse.Namespace) -> Path | None:
    """Where row ``number``'s trace goes: PATH for ``run``'s first row (None for a later one, such as a row of
    ``--each-gpu-kind``'s: PATH names one file, and no other name was given to write), ``PATH/NN-<workload>-
    <options>.json`` for ``sweep``. The user named PATH's folder, not its files: where that name is taken (an
    earlier sweep's trace, a file of theirs), ``-2``, ``-3``, ... makes it new, and nothing there is replaced."""
    from tui.engine.store.export import free_suffix

    if args.command != "sweep":
        return Path(args.trace) if number == 1 else None
    options = row.options
    workload = Path(options.workload.partition(":")[0]).stem if ":" in options.workload else options.workload
    params = "-".join(f"{k}={v}" for k, v in sorted(options.params.items()))
    stem = Path(args.trace) / f"{number:02d}-{_slug('-'.join(p for p in (workload, params, options.label()) if p))}"

    def named(suffix: str) -> Path:
        return Path(f"{stem}{suffix}.json")

    return named(free_suffix(lambda suffix: [named(suffix)]))


def _copy(source: str, target: Path) -> None:
    from tui.engine.store.export import atomic_writer, check_target

    check_target(target)
    with open(source, encoding="utf-8") as reader, atomic_writer(target, newline=None) as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)


def _traces(rows: list[RunRecord], args: argparse.Namespace, err: Any) -> bool:
    """Copy each traced row's trace; True when one was asked for and not written."""
    from tui.engine.explain.artifacts import artifact_paths
    from tui.engine.store.export import ExportError

    failed = False
    if args.command == "sweep":
        try:
            Path(args.trace).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _say(err, f"{PROG}: error: --trace: cannot create {args.trace}: {exc.strerror or exc}")
            return True
    for number, row in enumerate(rows, 1):
        traced = row.options.trace or any(m.options.trace for m in getattr(row, "members", ()))
        if not traced or row.status == RunStatus.CANCELLED:
            continue
        found = artifact_paths(row)
        if found.trace is None:
            why = row.error_message if row.status == RunStatus.FAILED else _no_trace_why(row)
            _say(err, f"{PROG}: error: --trace: run {number} wrote no trace ({why})")
            failed = True
            continue
        target = trace_target(row, number, args)
        if target is None:
            _say(err, f"run {number}: its trace is kept in {found.trace} (--trace {args.trace} holds run 1's)")
            continue
        try:
            _copy(found.trace, target)
        except (ExportError, OSError) as exc:
            _say(err, f"{PROG}: error: --trace: {exc}")
            failed = True
            continue
        if not args.quiet:
            _say(err, f"wrote {target} (the profile pass, eager and compiled; open it in ui.perfetto.dev)")
    return failed


def _no_trace_why(row: RunRecord) -> str:
    """Why ``row`` (a run, or a ``--repeat`` row: its processes' own warnings) wrote no trace, in a few words."""
    profile = row.profile
    if profile is not None and not profile.available:
        return f"the profile pass did not run: {profile.why}"
    from tui.engine.store.repeats import members_of

    trace_warnings = [w for run in members_of([row]) for w in run.warnings if w.startswith("trace:")]
    return trace_warnings[0] if trace_warnings else "the worker reported none"


def _torch_traces(rows: list[RunRecord], args: argparse.Namespace, err: Any) -> None:
    from tui.engine.explain.artifacts import artifact_paths
    from tui.engine.explain.tlparse import run_tlparse

    for number, row in enumerate(rows, 1):
        if not (row.options.torch_trace or any(m.options.torch_trace for m in getattr(row, "members", ()))):
            continue
        found = artifact_paths(row)
        if found.torch_trace is None:
            _say(err, f"run {number}: no TORCH_TRACE logs were kept")
            continue
        if not args.tlparse:
            _say(err, f"run {number}: TORCH_TRACE logs in {found.torch_trace} "
                      f"(tlparse {found.torch_trace} --latest makes a report; or --tlparse)")
            continue
        result = run_tlparse(row)
        if result.report is not None:
            _say(err, f"run {number}: tlparse report {result.report}")
        else:
            _say(err, f"run {number}: no tlparse report: {result.why}")


def report_artifacts(rows: list[RunRecord], args: argparse.Namespace, err: Any) -> bool:
    """Copy the traces asked for and report TORCH_TRACE / tlparse; True when a trace asked for was not written."""
    failed = False
    if getattr(args, "trace", None):
        failed = _traces(rows, args, err)
    from tui.engine.store.repeats import members_of

    if any(record.options.torch_trace for record in members_of(rows)):
        _torch_traces(rows, args, err)
    return failed


# ----- prune -----------------------------------------------------------------------------------


def check_prune_args(args: argparse.Namespace) -> str | None:
    """One line naming the flag and what is allowed, or None when the flags make a prune."""
    for flag, value in (("--keep-last", args.keep_last), ("--older-than", args.older_than),
                        ("--max-size", args.max_size)):  # fmt: skip
        if value is not None and not (value >= 0 and value == value and value != float("inf")):
            return f"{flag}: {value:g} is not allowed (allowed: {PRUNE_ALLOWED[flag]})"
    if args.keep_last is None and args.older_than is None and args.max_size is None:
        return "prune: give --keep-last N, --older-than DAYS or --max-size GB (allowed: any of them; --dry-run first)"
    return None


def cmd_prune(args: argparse.Namespace) -> int:
    """``compile-lab prune``: delete older runs' files (never a history line); 2 on bad flags, 1 if a file stayed."""
    from rich.console import Console

    from tui.engine.explain.artifacts import format_bytes
    from tui.engine.store.prune import apply_prune, data_usage, describe, plan_prune, scan_runs

    problem = check_prune_args(args)
    if problem is not None:
        Console(stderr=True).print(f"{PROG}: error: {problem}", markup=False, highlight=False, soft_wrap=True)
        return 2
    out = Console()
    runs = scan_runs()
    plan = plan_prune(runs, keep_last=args.keep_last, older_than_days=args.older_than,
                      max_bytes=None if args.max_size is None else int(args.max_size * 1e9))
    if args.dry_run:
        _say(out, f"would prune the files of {len(plan.runs)} of {len(runs)} run(s): {format_bytes(plan.bytes)}; "
                  f"{format_bytes(plan.kept_bytes)} stays; the history lines stay")
        for line in describe(plan):
            _say(out, f"  {line}")
        _say(out, f"data dir {data_usage().line()}")
        return 0
    result = apply_prune(plan)
    _say(out, f"pruned the files of {result.runs} run(s): {format_bytes(result.bytes_freed)} freed; "
              "the history lines stay")
    for error in result.errors:
        _say(out, f"{PROG}: could not delete {error}")
    _say(out, f"data dir {data_usage().line()}")
    return 1 if result.errors else 0
