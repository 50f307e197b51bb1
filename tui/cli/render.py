"""What the command line prints after its runs: the results table, where the host time goes, the warnings (rich)."""

from __future__ import annotations

import re
from typing import Any

from tui.present.format import (
    MISSING, VERDICT_STYLES, hanging_lines, input_label, or_missing, ratio, significant, TIMES, times, workload_names,
)  # fmt: skip
from tui.present.option_fields import FIELDS_BY_KEY, differing, option_words
from tui.engine.explain.host_time import HOST_LABELS, graph_break_rows
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary
from tui.typed import printable
from tui.engine.status import RunStatus, ended_reason

__all__ = ["print_table", "print_host_time", "host_time_lines", "print_warnings", "processes_text", "speedup_text",
           "verdict_text", "not_significant"]  # fmt: skip
#: The run column's widest: every mode's short form fits, a custom backend's long name may be cut.
RUN_MAX_WIDTH = 24
#: Under the table when a speedup cell says n.s.
NOT_SIGNIFICANT_LEGEND = "n.s.: not significant: the speedup's 95% interval includes 1×, so no difference was shown"
#: Graph-break reasons shown per run (the JSON and the app have all of them).
MAX_REASONS = 3
#: Host-time categories under this share of the call are left off the line (the JSON has them).
MIN_SHARE = 0.005


def _ms(stats: Any) -> str:
    if stats is None:
        return MISSING
    value = float(f"{stats.median:.3g}")  # 0.99996 ms is 1.00 ms, not 1e+03 µs
    if value >= 100:
        return f"{stats.median:.0f} ms"
    if value >= 1:
        return f"{significant(value, 3)} ms"
    return f"{significant(value * 1000, 3)} µs"


def not_significant(summary: RunSummary) -> bool:
    """A speedup with an interval that includes 1: its cell says ``n.s.`` and the legend explains it."""
    low, high = summary.speedup_ci_low, summary.speedup_ci_high
    return summary.speedup is not None and low is not None and high is not None and not summary.significant


def speedup_text(summary: RunSummary) -> Any:
    """``1.23x`` over ``[1.10, 1.35]``: green/red when significant, dim (``n.s.``) when not.

    A launch-bound run is marked, with its host-inclusive speedup (``host 1.31×``) under it:
    the headline is device time, the host figure is what a loop that never synchronises pays.
    """
    from rich.text import Text

    speedup = summary.speedup
    if speedup is None:
        return Text(MISSING)
    low, high = summary.speedup_ci_low, summary.speedup_ci_high
    significant = bool(summary.significant)
    style = ("bold green" if speedup > 1 else "bold red") if significant else "dim"
    if summary.verdict == "noisy":
        style = "dim strike" if summary.speedup_ci_low is None else "dim"
    text = Text(times(speedup), style=style)
    if low is not None and high is not None:
        text.append(f"\n[{ratio(low)}, {ratio(high)}]", style=style)
        if not_significant(summary):
            text.append("\nn.s.", style="dim")
    if summary.launch_bound:
        text.append("\nlaunch-bound", style="yellow")
        host = summary.host_speedup
        if host is not None:
            text.append(f"\nhost {times(host)}", style="dim" if summary.host_verdict == "noisy" else "bold yellow")
            host_low, host_high = summary.host_speedup_ci_low, summary.host_speedup_ci_high
            if host_low is not None and host_high is not None:
                text.append(f"\n[{ratio(host_low)}, {ratio(host_high)}]", style="yellow")
    return text


def verdict_text(record: RunRecord) -> Any:
    """The verdict word (and ``host <word>`` for a launch-bound run); a failed run's status instead."""
    from rich.text import Text

    summary = record.summary()
    if summary.verdict is None:
        styles: dict[str, str] = {RunStatus.FAILED: "bold red", RunStatus.CANCELLED: "yellow"}
        style = styles.get(record.status, "dim")
        return Text(MISSING if record.status == RunStatus.DONE else record.status, style=style)
    text = Text(summary.verdict, style=VERDICT_STYLES.get(summary.verdict, ""))
    if summary.host_verdict is not None:
        text.append(f"\nhost {summary.host_verdict}", style=VERDICT_STYLES.get(summary.host_verdict, ""))
    return text


def processes_text(record: RunRecord) -> Any:
    """A configuration run in several processes: ``3 processes, spread 1.06× (host 1.41×)``; else nothing.

    Its speedup cell then holds the interval across processes (tui.engine.store.repeats).
    """
    from rich.text import Text

    group = getattr(record, "group", None)
    if group is None:
        return Text()
    text = f"\n{group.processes} processes"
    if group.done != group.processes:
        text += f" ({group.done} done)"
    spreads = [f"{what}{value:.2f}{TIMES}" for what, value in (("", group.speedup_process_spread),
                                                          ("host ", group.host_speedup_process_spread))
               if value is not None and (what == "" or record.summary().launch_bound)]  # fmt: skip
    if spreads:
        text += f", spread {spreads[0]}" + (f" ({spreads[1]})" if len(spreads) > 1 else "")
    return Text(text, style="cyan")


def where_words(record: RunRecord, records: list[RunRecord]) -> list[str]:
    """Where a run ran, when the rows ran in more than one place: ``@node`` and the GPU's name."""
    words = []
    if len({r.env.node for r in records if r.env.node}) > 1:
        words.append(f"@{record.env.node or '?'}")
    if len({r.env.gpu_name for r in records if r.env.gpu_name}) > 1 and record.env.gpu_name:
        words.append(record.env.gpu_name.removeprefix("NVIDIA ").replace(" ", "-"))
    return words


def print_table(records: list[RunRecord], console: Any) -> None:
    """The summary table, one row per run or group of runs; failed runs' errors follow it, numbered like the rows.

    Pass :func:`tui.engine.store.repeats.group_rows` of the records for one row per configuration.
    """
    from rich.text import Text

    from tui.present.fold_text import SeparatorText
    from tui.present.format import accuracy_label

    title, labels = _title_and_labels(records)
    errors, rows = [], []
    names = workload_names(record.options.workload for record in records)
    for number, record in enumerate(records, 1):
        summary = record.summary()
        o = record.options
        words = [f"{k}={v}" for k, v in (o.params or {}).items()] + [input_label(record, summary) or ""]
        params = " ".join(word for word in words if word)
        what = SeparatorText()
        what.append(f"{number} {names[o.workload]}", style="bold")
        label = labels[number - 1]
        what.append(printable(f" {params}" + (f"\n{label}" if label else "")).rstrip())
        what.append(processes_text(record))
        compile_s = f"{record.compile_s:.3g} s" if record.compile_s is not None else MISSING
        if record.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            errors.append(f"run {number}: {_why(record.error_kind, record.error_message)}")
        rows.append((
            what,
            verdict_text(record),
            compile_s,
            _ms(summary.eager.iter),
            _ms(summary.compiled.iter),
            speedup_text(summary),
            f"{_count(record.diagnostics.graph_breaks)}/{_count(record.diagnostics.recompiles)}",
            Text(*accuracy_label(record)),
        ))  # fmt: skip
    run_width = _run_width(records, labels)
    compact = _least_width(run_width, rows) > console.width
    table = _filled_table(title, run_width, rows, padding=0 if compact else 1)
    console.print(table)
    if any(not_significant(record.summary()) for record in records):
        console.print(NOT_SIGNIFICANT_LEGEND, style="dim", markup=False, highlight=False)
    for line in errors:
        console.print(Text(line, style="red"), soft_wrap=True)


def _least_width(run_width: int, rows: list[tuple[Any, ...]]) -> int:
    """How wide the table is drawn with its run column at its least width (its labels fold) and two spaces between
    columns: drawn, not measured, since Rich measured such a table as fitting 80 columns and drew it at 82."""
    import io

    from rich.console import Console

    drawn = io.StringIO()
    Console(file=drawn, width=10_000, color_system=None).print(
        _filled_table(None, run_width, [("", *row[1:]) for row in rows], padding=1))
    return max((len(line.rstrip()) for line in drawn.getvalue().splitlines()), default=0)  # a cut edge space is no loss


def _filled_table(title: Any, run_width: int, rows: list[tuple[Any, ...]], padding: int) -> Any:
    """The results table with ``rows``, a blank line between them. ``padding`` 0 (a space between columns, not two,
    and none at the edges) where the table would otherwise not fit the terminal: Rich cuts a table wider than it,
    and the columns on the right went first."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  padding=(0, padding), show_edge=padding > 0)
    # A name wider than the column folds onto the next line rather than losing its end (a file's name), after a
    # separator (example_ / workload.py: SeparatorText), as the words of a label fold between words.
    table.add_column("run", min_width=run_width, ratio=1, overflow="fold")
    table.add_column("verdict")  # ``host inconclusive`` folds between its words where room is short
    for name in ("compile", "eager", "compiled", "speedup", "brk/rec"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("acc", no_wrap=True)
    for number, row in enumerate(rows, 1):
        table.add_row(*row, end_section=number < len(rows))
    return table


def _run_width(records: list[RunRecord], labels: list[str]) -> int:
    """The run column's least width: its labels' widest word, kept whole (a mode's short form), between 12 and
    RUN_MAX_WIDTH. An inductor option a label names (a tune's candidates: ``layout_optimization=False``) counts
    its widest piece only: it folds at its separators rather than widen the table past 80 columns."""
    from tui.present.fold_text import word_pieces

    named = {f"{key}={value}" for record in records for key, value in record.options.inductor_options.items()}
    widest = max([len(piece) for label in labels for word in label.split()
                  for piece in (word_pieces(word) if word in named else [word])], default=0)
    return min(max(12, widest), RUN_MAX_WIDTH)


def _title_and_labels(records: list[RunRecord]) -> tuple[Any, list[str]]:
    """The table's title, with what every row shares said once (as the app's pane title says it), and each row's
    label: the words that tell it apart (its workload and parameters are written before it). No word is ever cut
    (tui.present.option_fields)."""
    from rich.text import Text

    differs = differing(record.options for record in records)
    said = ("workload", "params")
    shared = " ".join(option_words(records[0].options, skip=(*said, *differs))) if records else ""
    title = Text(printable("compile-lab results" + (f" · {shared}" if shared else "")), style="italic")
    alike = tuple(key for key in FIELDS_BY_KEY if key not in differs)
    labels = [" ".join(option_words(record.options, differs, skip=(*said, *alike)) + where_words(record, records))
              for record in records]
    return title, labels


def print_warnings(records: list[RunRecord], console: Any) -> None:
    """Why a verdict is noisy (with the hint to re-run) or not decisive, first, by run number; then the warnings, each
    said once for the runs that share it (:func:`tui.present.warning_groups.grouped_warnings`)."""
    from tui.engine.measure.verdict import INCONCLUSIVE, NOISY, RERUN_HINT, undecided_reason
    from tui.engine.store.repeats import members_of
    from tui.engine.thresholds import VerdictPolicy
    from tui.present.warning_groups import grouped_warnings

    lines = []
    summaries = [record.summary() for record in records]
    for number, (record, summary) in enumerate(zip(records, summaries, strict=True), 1):
        threshold = VerdictPolicy.of(record.options.noise_threshold).threshold
        for what, word, reasons, interval in (
                ("", summary.verdict, summary.noise_reasons, (summary.speedup_ci_low, summary.speedup_ci_high)),
                ("host ", summary.host_verdict, summary.host_noise_reasons,
                 (summary.host_speedup_ci_low, summary.host_speedup_ci_high))):
            if word == INCONCLUSIVE and not reasons:
                started = len(members_of([record]))  # a --repeat row's processes, failed ones too
                reasons = (undecided_reason(*interval, threshold, started),)
            if reasons:
                more = f"; and {len(reasons) - 3} more (the CSV's noise_reasons)" if len(reasons) > 3 else ""
                hint = f" ({RERUN_HINT})" if word == NOISY else ""
                lines.append(f"  run {number}: {what}{word}: {'; '.join(reasons[:3])}{more}{hint}")
    lines += [f"  {line}" for line in grouped_warnings([(n, s.warnings) for n, s in enumerate(summaries, 1)])]
    if lines:
        console.print("warnings:", style="yellow")
        width = max(40, console.width)
        for line in lines:  # a long warning's next lines indented under its text, not at the margin
            console.print("\n".join(hanging_lines(line, width)), markup=False, highlight=False, soft_wrap=True)




def _short_ms(value: float) -> str:
    """A time in ms at a precision a reader can use: ``0.118``, ``1.25``, ``12.5``; ``<0.001`` for a trace."""
    if value >= 1:
        return significant(value, 3)
    return f"{value:.3f}" if value >= 0.0005 or value == 0 else "<0.001"


def _share(share: float) -> str:
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def _parts(rows: Any) -> str:
    """``guards 0.012 (10%), graph 0.070 (59%)``: (label, ms per call, share) rows."""
    return ", ".join(f"{label} {_short_ms(ms)} ({_share(share)})" for label, ms, share in rows)


def host_time_lines(record: RunRecord, number: int) -> list[str]:
    """Where run ``number``'s compiled call spends its host time, for a launch-bound run or one with graph
    breaks (else nothing): the split by category, and with breaks each graph's share, the eager code
    between graphs and the break reasons. Times are the profile pass's, per call."""
    profile = record.profile
    if profile is None or not profile.available:
        return []
    split = profile.host
    breaks = record.diagnostics.graph_breaks or 0
    if split is None or not (record.summary().launch_bound or breaks):
        return []
    eager = f" (eager {_short_ms(split.eager_ms_per_call)} ms)" if split.eager_ms_per_call is not None else ""
    rows = [(HOST_LABELS.get(row.category, row.category), row.ms_per_call, row.share) for row in split.rows
            if row.share >= MIN_SHARE]
    lines = [f"run {number}: host per compiled call {_short_ms(split.total_ms_per_call)} ms{eager}: {_parts(rows)}"]
    graphs = graph_break_rows(profile.regions, split) if breaks else ()
    if graphs:
        plural = "s" if breaks != 1 else ""
        parts = _parts((row.label, row.ms_per_call, row.share) for row in graphs)
        lines.append(f"run {number}: {breaks} graph break{plural}, per compiled call: {parts}")
    reasons = record.diagnostics.graph_break_reasons if breaks else ()
    for reason in reasons[:MAX_REASONS]:
        lines.append(f"  break: {printable(' '.join(reason.split()))}")
    if len(reasons) > MAX_REASONS:
        lines.append(f"  and {len(reasons) - MAX_REASONS} more break reasons (the JSON has them all)")
    return lines


def print_host_time(records: list[RunRecord], console: Any) -> None:
    """:func:`host_time_lines` of every run, wrapped to the console's width (nothing when no run has any)."""
    lines = [line for number, record in enumerate(records, 1) for line in host_time_lines(record, number)]
    if not lines:
        return
    console.print("where the compiled call's host time goes (profile pass, per call):", style="cyan")
    width = max(40, console.width)
    for line in lines:
        console.print("\n".join(_wrapped("  " + line, width)), markup=False, highlight=False, soft_wrap=True)


def _wrapped(line: str, width: int) -> list[str]:
    """``line`` folded to ``width``, continuation lines indented two more: a list of parts (``run N: ...``) breaks
    only between its parts (``guards 0.012 (10%)`` stays whole), prose (a break reason) between words."""
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    if line.lstrip().startswith("run "):
        out = [""]
        for atom in re.split(r"(?<=, )|(?<=: )", line):
            if out[-1].strip() and len(out[-1]) + len(atom.rstrip()) > width:
                out[-1] = out[-1].rstrip()
                out.append(indent)
            out[-1] += atom
        if all(len(part) <= width for part in out):
            return out
    return hanging_lines(line, width)


def _why(kind: str | None, message: str | None) -> str:
    """``kind: message``, once where the two say the same (:func:`~tui.engine.status.ended_reason`)."""
    return ended_reason(kind, message) or "no reason given"


def _count(value: int | None) -> str:
    """A count, ``0`` included; :data:`~tui.present.format.MISSING` only where it is not known."""
    return or_missing(value)
