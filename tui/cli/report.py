"""``compile-lab report RUNS -o report.html``: runs as one self-contained HTML file to share.

Exit codes: 0 written, 1 when the file could not be written (the line says why; an existing file is
left as it was), 2 on bad usage (one line): a refused ``-o`` path (checked before anything is read or
written), RUNS that cannot be read, no matplotlib (``pip install "compile-lab[report]"``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tui.cli.outputs import check_outputs, selection_inputs
from tui.cli.parse import PROG, UsageError, problem_warnings
from tui.engine.compare.selection import SELECTION_HELP

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord
    from tui.present.tune_json import StoredAnswer

__all__ = ["add_report_parser", "cmd_report", "load_runs", "Loaded"]


def add_report_parser(sub: Any) -> None:
    """The ``report`` subcommand on ``sub`` (argparse subparsers)."""
    parser = sub.add_parser(
        "report", help="write runs as one HTML file to share (forest plot, distributions, telemetry)",
        description="Write one self-contained HTML file (it opens offline): a forest plot of the speedups with "
                    "their 95% intervals coloured by verdict, each side's per-iteration distribution, the GPU "
                    "telemetry and environment of each run, the options, and why noisy runs are noisy. "
                    'Needs matplotlib: pip install "compile-lab[report]"',
    )
    parser.add_argument("runs", nargs="+", metavar="RUNS",
                        help=f"what to report: {SELECTION_HELP}; several add up (compare's selections)")
    parser.add_argument("-o", "--output", required=True, metavar="PATH",
                        help="the HTML file to write (a regular file or a new one; not a link, a directory or "
                             "compile-lab's own files)")


def _check_output(args: argparse.Namespace) -> None:
    """Refuse ``-o`` before anything is read: the rule for every output, and never one of the RUNS files."""
    check_outputs(args, (("-o", "output"),), selection_inputs(("one of the RUNS", text) for text in args.runs))


class Loaded(NamedTuple):
    """What the RUNS arguments hold (:func:`load_runs`)."""

    records: list[RunRecord]
    """Every run, in order, each once."""
    problems: list[str]
    """The problems met reading them (the runs', then the answers')."""
    origins: dict[str, str]
    """Each run's argument: run id -> the text that selected it first."""
    answers: list[StoredAnswer | str]
    """The searches' answers among them (the ``tune`` object of a ``tune --json`` export) and, for a ``tune:``
    selection, its text: the history keeps a search's runs, not its answer."""


def load_runs(texts: Sequence[str]) -> Loaded:
    """The runs of every RUNS argument (``compile-lab compare``'s selections) and the searches' answers, each
    export read once. UsageError (one line) for an argument that cannot be read; an answer that cannot be read is
    a problem."""
    from tui.engine.compare.selection import SelectionError, each_run_once, load_selection, parse_selection, read_export
    from tui.present.tune_json import stored_answer

    loaded = Loaded([], [], {}, [])
    answer_problems: list[str] = []
    seen: set[str] = set()
    for text in texts:
        try:
            selection = parse_selection(text)
            export = read_export(selection) if selection.kind == "file" else None
            found, found_problems = load_selection(selection, export=export)
        except SelectionError as exc:
            raise UsageError(f"RUNS: {exc}") from None
        if selection.kind == "tune":
            loaded.answers.append(text)
        try:
            answer = stored_answer(export, text) if export is not None else None
        except ValueError as exc:
            answer_problems.append(f"{text}: the search's answer cannot be read ({exc})")
        else:
            loaded.answers.extend([answer] if answer is not None else [])
        found, repeated = each_run_once(found, seen)
        if selection.kind != "file":  # a history lists runs as they ended; number them as queued, as `history` does
            found = sorted(found, key=lambda record: record.created)
        loaded.records.extend(found)
        loaded.origins.update((record.run_id, text) for record in found)
        loaded.problems.extend(found_problems + repeated)
    loaded.problems[:] = list(dict.fromkeys(loaded.problems)) + answer_problems
    return loaded


def cmd_report(args: argparse.Namespace) -> int:
    """Run ``report``: check ``-o``, check matplotlib, read the runs, write the page; the exit code.

    UsageError for bad usage (the caller prints it as one line and exits 2).
    """
    from tui.engine.compare.matching import config_key
    from tui.engine.store.export import ExportError
    from tui.engine.store.report_data import gather_report
    from tui.report import require_matplotlib, write_report
    from tui.report.plots import MatplotlibMissing

    _check_output(args)
    try:
        require_matplotlib()
    except MatplotlibMissing as exc:
        raise UsageError(str(exc)) from None
    loaded = load_runs(args.runs)
    for line in problem_warnings(loaded.problems, "the runs (listed in the report)"):
        _say(line)
    data = gather_report(loaded.records, sources=args.runs, problems=loaded.problems, configuration=config_key,
                         origins=loaded.origins)
    try:
        path = write_report(data, args.output, loaded.answers)
    except ExportError as exc:
        _say(f"{PROG}: error: -o: {exc}")
        return 1
    _say(f"wrote {path} ({data.counts})")
    return 0


def _say(line: str) -> None:
    sys.stderr.write(line.replace("\n", " ") + "\n")
    sys.stderr.flush()
