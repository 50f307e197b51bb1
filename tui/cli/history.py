"""``compile-lab history [RUNS ...]``: the stored runs listed, so their ids can be given to ``compare`` and ``report``.

With no RUNS the newest runs of the history; RUNS are the history's selections as ``compare`` reads them
(:data:`~tui.engine.compare.selection.HISTORY_SELECTION_HELP`), several adding up. Samples are not read: a
run's speedup and verdict are its stored summary's. Output:

* a table that fits 80 columns, newest last, each session's runs under a row naming it (its id, the
  ``session:last-N`` it is, its runs); under it how ``compare`` and ``report`` select them, with the ids shown;
* ``--sessions``: one line per session (its id, its first run's time, its runs, workloads, tunes);
* ``--json``: a JSON list on stdout, one object per run with the keys :data:`RUN_KEYS`, or with ``--sessions``
  one per session with :data:`SESSION_KEYS` (the names are the CSV's where it has them; a script's input, kept
  stable).

Exit codes: 0 (an empty history too: a line says where it is), 2 on bad usage: a selection that names no run or
a file (one line, as ``compare`` says it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from tui.cli.parse import PROG, UsageError, problem_warnings
from tui.cli.usage import number_flag
from tui.engine.compare.selection import HISTORY_SELECTION_HELP
from tui.typed import finite, printable

if TYPE_CHECKING:
    from tui.engine.compare.selection import SessionRuns
    from tui.engine.store.history import History
    from tui.engine.store.results import RunRecord

__all__ = ["add_history_parser", "cmd_history", "run_object", "session_object", "RUN_KEYS", "SESSION_KEYS",
           "DEFAULT_LIMIT"]  # fmt: skip

DEFAULT_LIMIT = 20
"""Runs (or sessions) listed without ``--limit``: the newest."""
LIMIT_ALLOWED = "a whole number of runs, 0 for all"
"""What ``--limit`` allows, as its refusals say it."""
RUN_KEYS = ("run_id", "group_id", "session_id", "tune_id", "timestamp", "workload", "label", "status", "speedup",
            "speedup_ci_low", "speedup_ci_high", "verdict")  # fmt: skip
"""The keys of each run object of ``--json``, in order; a missing value is null."""
SESSION_KEYS = ("session_id", "first_timestamp", "last_timestamp", "runs", "workloads", "tune_ids")
"""The keys of each session object of ``--sessions --json``, in order."""
_LABEL_MAX_WIDTH = 24
"""The configuration column's narrowest, at most: its widest word, so no word is ever cut (a file's name may be)."""


def add_history_parser(sub: Any) -> None:
    """The ``history`` subcommand on ``sub`` (argparse subparsers)."""
    parser = sub.add_parser(
        "history", help="list the stored runs and sessions, with the ids compare and report select",
        description="List the runs of the history, newest last: run id, time, configuration, status, speedup with "
                    "its 95% interval, verdict; and how compare and report select them. RUNS (none: the newest "
                    f"runs): {HISTORY_SELECTION_HELP}; several add up.",
    )
    parser.add_argument("runs", nargs="*", metavar="RUNS", help="what to list (compare's history selections)")
    parser.add_argument("--sessions", action="store_true",
                        help="one line per session instead: its id, when, how many runs, workloads, tune ids")
    parser.add_argument("--limit", type=number_flag("--limit", LIMIT_ALLOWED, integer=True), default=DEFAULT_LIMIT,
                        metavar="N",
                        help=f"list the newest N runs (with --sessions: sessions); 0: all (default {DEFAULT_LIMIT})")
    parser.add_argument("--json", action="store_true",
                        help=f"print a JSON list instead, for a script: one object per run ({', '.join(RUN_KEYS)}), "
                             f"or per session with --sessions ({', '.join(SESSION_KEYS)})")


def _iso(seconds: float) -> str | None:
    """The CSV's ``timestamp`` form of a moment; None where no date can show it (a damaged history line)."""
    from tui.engine.store.run_ids import iso_utc

    try:
        return iso_utc(seconds)
    except (OverflowError, OSError, ValueError):
        return None


def run_object(record: RunRecord) -> dict[str, Any]:
    """One run of ``--json`` (:data:`RUN_KEYS`): its ids, queue time (ISO 8601 UTC), configuration, ending and
    stored speedup; its label says every field that is not the default, whatever else is listed."""
    from tui.cli.run_lines import run_label

    summary = record.summary()
    values = (record.run_id, record.group_id, record.session_id, record.tune_id, _iso(record.created),
              record.options.workload, run_label(record.options), str(record.status), summary.speedup,
              summary.speedup_ci_low, summary.speedup_ci_high, summary.verdict)  # fmt: skip
    return finite(dict(zip(RUN_KEYS, values, strict=True)))


def session_object(session: SessionRuns) -> dict[str, Any]:
    """One session of ``--sessions --json`` (:data:`SESSION_KEYS`)."""
    values = (session.session_id, _iso(session.first), _iso(session.last), session.runs, list(session.workloads),
              list(session.tune_ids))  # fmt: skip
    return finite(dict(zip(SESSION_KEYS, values, strict=True)))


def _selected(texts: list[str], records: list[RunRecord], history: History) -> list[RunRecord]:
    """The runs the RUNS name, each once, oldest first; every run without RUNS. UsageError for one that names none."""
    from tui.engine.compare.selection import SelectionError, each_run_once, parse_selection, pick_from_history

    if not texts:
        return sorted(records, key=lambda r: r.created)
    chosen: list[RunRecord] = []
    seen: set[str] = set()
    for text in texts:
        try:
            found = pick_from_history(parse_selection(text), records, history)
        except SelectionError as exc:
            raise UsageError(f"RUNS: {exc}") from None
        chosen += each_run_once(found, seen)[0]
    return sorted(chosen, key=lambda r: r.created)


def _newest(items: list[Any], limit: int) -> list[Any]:
    return items[-limit:] if limit and len(items) > limit else items


def cmd_history(args: argparse.Namespace) -> int:
    """Run ``history``: read the history, list the runs (or sessions) selected; the exit code.

    UsageError for bad usage (the caller prints it as one line and exits 2).
    """
    from rich.console import Console

    from tui.engine.compare.selection import session_runs
    from tui.engine.store.history import History

    if args.limit < 0:
        raise UsageError(f"--limit: {args.limit} is not allowed (allowed: {LIMIT_ALLOWED})")
    history = History()
    records, problems = history.load()
    _warn(problems)
    out = Console(file=sys.stdout, soft_wrap=False)
    if not records and not args.runs:
        if args.json:
            sys.stdout.write("[]\n")
        _say(f"no runs in the history yet ({history.path}): run, sweep, tune and the app add theirs",
             sys.stderr if args.json else sys.stdout)
        return 0
    chosen = _selected(args.runs, records, history)
    if args.sessions:
        listed = session_runs(chosen)
        shown = _newest(listed, args.limit)
        if args.json:
            sys.stdout.write(json.dumps([session_object(s) for s in shown], indent=2, allow_nan=False) + "\n")
        else:
            _print_sessions(shown, len(listed), chosen, records, out)
        return 0
    shown = _newest(chosen, args.limit)
    if args.json:
        sys.stdout.write(json.dumps([run_object(r) for r in shown], indent=2, allow_nan=False) + "\n")
        return 0
    print_runs(shown, records, out)
    _print_footer(shown, len(chosen), out)
    return 0


def _warn(problems: list[str]) -> None:
    for line in problem_warnings(problems, "the history"):
        _say(line, sys.stderr)


def _say(line: str, stream: Any) -> None:
    stream.write(line.replace("\n", " ") + "\n")
    stream.flush()


# ----- the table ------------------------------------------------------------------------------------


def _label(record: RunRecord, differs: frozenset[str], processes: Counter[str], shared: bool,
           names: dict[str, str]) -> str:
    """The configuration, the fields that tell the listed runs apart first (``shared``: those alone, the rest said
    once above the table); ``process N`` for a --repeat's. ``names``: the listed runs' workload names."""
    from tui.cli.run_lines import run_label
    from tui.present.option_fields import FIELDS_BY_KEY, option_words

    if shared:
        alike = tuple(key for key in FIELDS_BY_KEY if key not in differs)
        label = " ".join(option_words(record.options, differs, skip=alike, names=names))
    else:
        label = run_label(record.options, differs, names)
    if record.group_id is not None and processes[record.group_id] > 1:
        label += f" process {record.repeat + 1}"
    return label


def print_runs(records: list[RunRecord], history: list[RunRecord], console: Any) -> None:
    """The runs as a table that fits 80 columns: run id over its time (UTC), configuration (folded between words, a
    name too wide after a separator: tui.present.fold_text), status, speedup over its 95% interval, verdict; each
    session's runs under a row naming it (its id, its ``session:last-N`` and its runs in ``history``, the whole
    history's runs)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tui.cli.render import NOT_SIGNIFICANT_LEGEND, not_significant, speedup_text
    from tui.present.fold_text import SeparatorText
    from tui.present.format import MISSING, STATUS_LABELS, VERDICT_STYLES, fmt_when, workload_names
    from tui.present.option_fields import differing, option_words

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    differs = differing(record.options for record in records)
    names = workload_names(record.options.workload for record in records)
    # What every listed run shares is said once, above the table: the rows keep what tells them apart.
    shared = (" ".join(option_words(records[0].options, skip=tuple(differs), names=names))
              if differs and len(records) > 1 else "")
    if shared:
        _print_lines([f"every run listed: {shared}"], console, style="dim")
    processes = Counter(record.group_id for record in records if record.group_id is not None)
    table.add_column("run (UTC)", no_wrap=True)
    table.add_column("configuration", ratio=1, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("speedup\n95% CI", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    heads = _session_heads(history)
    status_styles = {"failed": "bold red", "cancelled": "yellow"}
    for number, record in enumerate(records):
        if number == 0 or records[number - 1].session_id != record.session_id:
            session, what = heads.get(record.session_id or "", ("no session id", "an older history's runs"))
            table.add_row(Text(printable(session), style="bold cyan"), Text(what, style="cyan"))
        summary = record.summary()
        status, verdict = str(record.status), summary.verdict
        table.add_row(
            Text(printable(record.run_id)) + Text(f"\n{fmt_when(record.created)}", style="dim"),
            SeparatorText(_label(record, differs, processes, bool(shared), names)),
            Text(STATUS_LABELS.get(status, status), style=status_styles.get(status, "")),
            speedup_text(summary),
            Text(verdict or MISSING, style=VERDICT_STYLES.get(verdict or "", "dim")),
            end_section=True,  # a blank line between runs
        )
    console.print(table)
    if any(not_significant(record.summary()) for record in records):
        _print_lines([NOT_SIGNIFICANT_LEGEND], console, style="dim")


def _aliases(history: list[RunRecord]) -> dict[str, tuple[str, int]]:
    """Each session id of the whole history -> (``session:last``, ``session:last-1``, ...; its run count)."""
    from tui.engine.compare.selection import sessions

    return {session: (f"session:last{f'-{back}' if back else ''}", count)
            for back, (session, count) in enumerate(reversed(sessions(history)))}


def _session_heads(history: list[RunRecord]) -> dict[str, tuple[str, str]]:
    """Each session id of the whole history -> (the id, ``session:last-N (K runs)``): the row above its runs."""
    return {session: (session, f"{alias} ({count} run{'s' if count != 1 else ''})")
            for session, (alias, count) in _aliases(history).items()}


def _print_footer(shown: list[RunRecord], selected: int, console: Any) -> None:
    """How many runs are listed, and how compare and report select them (an example with the ids shown)."""
    order = list(dict.fromkeys(record.session_id for record in shown))
    lines = []
    if selected > len(shown):
        lines.append(f"the newest {len(shown)} of {selected} runs (--limit N lists more, --limit 0 all)")
    tunes = list(dict.fromkeys(record.tune_id for record in shown if record.tune_id))
    if tunes:
        lines.append(f"{'tunes' if len(tunes) > 1 else 'tune'} above: {printable(', '.join(tunes))}")
    lines.append(f"compare and report select runs by history:RUNID[,RUNID...], session:ID, session:last[-N], tune:ID "
                 f"or since:DATE, e.g. {_example(order, shown[-1].run_id)}")
    _print_lines(lines, console)


def _print_lines(lines: list[str], console: Any, style: str = "") -> None:
    """Prose lines folded between words to the console's width (continuations indented), never markup."""
    from tui.present.format import hanging_lines

    for line in lines:
        console.print("\n".join(hanging_lines(line, max(40, console.width))), style=style, markup=False,
                      highlight=False, soft_wrap=True)


def _example(order: list[str | None], run_id: str) -> str:
    """A command line with the ids listed: the last two sessions compared, or the last one reported (without a
    session, the last run)."""
    named = [session for session in order if session]
    if len(named) >= 2:
        example = f"{PROG} compare session:{named[-2]} session:{named[-1]}"
    else:
        example = f"{PROG} report {f'session:{named[-1]}' if named else f'history:{run_id}'} -o report.html"
    return printable(example)


# ----- the sessions ---------------------------------------------------------------------------------


def _print_sessions(shown: list[SessionRuns], total: int, records: list[RunRecord], history: list[RunRecord],
                    console: Any) -> None:
    """One line per session, newest last: id, first run's time (UTC), its ``session:last-N``, runs, workloads,
    tunes (folded to the console's width, continued indented); then how to select them."""
    from tui.present.format import fmt_when, workload_names

    names = workload_names(workload for session in shown for workload in session.workloads)
    aliases = {session: alias for session, (alias, _) in _aliases(history).items()}
    width = max((len(aliases.get(session.session_id, "")) for session in shown), default=0)
    for session in shown:
        runs = f"{session.runs} run{'s' if session.runs != 1 else ''}"
        words = [printable(session.session_id), fmt_when(session.first),
                 aliases.get(session.session_id, "").ljust(width), f"{runs:>8}",
                 ", ".join(names[w] for w in session.workloads)]
        if session.tune_ids:
            words.append(f"tune{'s' if len(session.tune_ids) > 1 else ''} {printable(', '.join(session.tune_ids))}")
        _print_lines(["  ".join(words)], console)  # folded: the workloads and tunes go on under the line
    lines = []
    if total > len(shown):
        lines.append(f"the newest {len(shown)} of {total} sessions (--limit N lists more, --limit 0 all)")
    alone = sum(1 for record in records if not record.session_id)
    if alone:
        lines.append(f"{alone} run{'s' if alone != 1 else ''} without a session id (an older history's): "
                     "history:RUNID or since:DATE select them")
    if shown:
        lines.append(f"compare and report select a session by session:ID or session:last[-N], e.g. "
                     f"{_example([session.session_id for session in shown], '')}")
    _print_lines(lines, console)
