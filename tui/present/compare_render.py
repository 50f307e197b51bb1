"""What ``compile-lab compare`` prints: a rich table, or a GitHub Markdown table, and the gate's lines.

One row per matched configuration, then one per configuration on one side only. Each metric's cell
holds BASE -> NEW and the change with its 95% interval; the gated metric's column is marked, and
its verdict is the row's. The fields every row shares are said once, above the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tui.present.format import MISSING, VERDICT_STYLES, hanging_lines, ratio, significant, workload_names
from tui.engine.catalog import is_user_workload
from tui.engine.compare import METRICS, Change, CompareSettings, Comparison, ConfigKey, PairResult, UnmatchedRow
from tui.engine.compare.comparison import NOTHING_COMPARED
from tui.engine.compare.judge import COMPARED
from tui.engine.measure.verdict import RERUN_HINT, SLOWER
from tui.typed import printable

__all__ = ["print_comparison", "markdown_lines", "gate_lines", "summary_line", "change_text", "columns", "number_text",
           "markdown_cell", "title_settings", "whole_column", "print_whole", "key_names", "key_label", "WITHIN",
           "WITHIN_LEGEND", "MAX_REASONS", "fail_note"]  # fmt: skip

WITHIN = "1 proc/side"
"""Beside a verdict whose interval holds only the noise within a process."""
MAX_REASONS = 3
"""Noise reasons shown per pair (the JSON has every one)."""
WITHIN_LEGEND = (f"{WITHIN}: a side ran in one process, so the interval holds only the noise within it "
                 "(run with --repeat 3 for one across processes)")
HOST_IS_COMPILED_LEGEND = ("compiled: the gated host time per call too: on the CPU one clock gives both (the time of "
                           "each call, its host's included)")


def _unit(comparison: Comparison, metric: str) -> str:
    """A column's one unit: ``x`` for the speedup; a time column in µs when every time in it is under 1 ms."""
    if not METRICS[metric].time:
        return "x"
    values = [v for p in comparison.pairs if (c := p.change(metric)) is not None for v in (c.base, c.new)
              if v is not None]
    return "µs" if values and max(values) < 1 else "ms"


def number_text(value: float | None, unit: str) -> str:
    """Four significant digits (trailing zeros kept, so a column's numbers line up), in ``unit``."""
    if value is None:
        return MISSING
    if unit == "x":
        return ratio(value)
    return significant(value * 1000 if unit == "µs" else value, 4)


def _percent(ratio: float, sign: bool = True) -> str:
    change = (ratio - 1) * 100
    return f"{change:+.1f}" if sign else f"{change:.1f}"


def change_text(change: Change | None, unit: str) -> tuple[str, ...]:
    """``("1.000 → 2.000", "+99.8%", "[+99.1, +100.5]")``: the values in ``unit``, the change, its 95% interval in %.

    A dash for a metric neither side has; fewer parts without a ratio or an interval.
    """
    if change is None or (change.base is None and change.new is None):
        return (MISSING,)
    parts = [f"{number_text(change.base, unit)} → {number_text(change.new, unit)}"]
    if change.ratio is not None:
        parts.append(f"{_percent(change.ratio)}%")
        if change.ratio_low is not None and change.ratio_high is not None:
            parts.append(f"[{_percent(change.ratio_low)}, {_percent(change.ratio_high)}]")
    return tuple(parts)


def columns(comparison: Comparison) -> list[str]:
    """The metrics shown: compiled, eager, speedup, and host when it is gated or a pair is launch-bound, unless it
    repeats the compiled column (:func:`host_is_compiled`)."""
    shown = ["compiled", "eager", "speedup"]
    if (comparison.settings.metric == "host" or any(p.launch_bound for p in comparison.pairs)) \
            and not host_is_compiled(comparison):
        shown.append("host")
    return shown


def host_is_compiled(comparison: Comparison) -> bool:
    """Whether every compared pair's host time per call is its compiled time, figure for figure: CPU runs, whose
    one clock gives both (a column of the same numbers beside it pushed the table past 80 columns)."""
    def figures(change: Change | None) -> tuple[float | None, ...] | None:
        return None if change is None else (change.base, change.new, change.ratio, change.ratio_low, change.ratio_high)

    compared = [p for p in comparison.pairs if p.change("compiled") is not None]
    return bool(compared) and all(figures(p.change("host")) == figures(p.change("compiled")) for p in compared)


def _header(comparison: Comparison, metric: str) -> str:
    label = {"compiled": "compiled", "eager": "eager", "speedup": "speedup", "host": "compiled host"}[metric]
    label += f" {_unit(comparison, metric)}"
    return f"{label} (gated)" if metric == _gated_column(comparison) else label


def legends(comparison: Comparison) -> list[str]:
    """The lines under the table that say what a mark or a column means, where the table has one."""
    said = [WITHIN_LEGEND] if any(p.within_process for p in comparison.pairs) else []
    if _gated_column(comparison) != comparison.settings.metric:
        said.append(HOST_IS_COMPILED_LEGEND)
    return said


def _gated_column(comparison: Comparison) -> str:
    """The column of the gated metric: the compiled one for a gated host time that is the compiled time."""
    gated = comparison.settings.metric
    return "compiled" if gated == "host" and host_is_compiled(comparison) else gated


def _keys(comparison: Comparison) -> list[ConfigKey]:
    rows: list[PairResult | UnmatchedRow] = [*comparison.pairs, *comparison.unmatched]
    return [ConfigKey(tuple(row.key.items())) for row in rows]


def shared_fields(comparison: Comparison) -> tuple[set[str], str]:
    """The fields every row has with one value (and the label of those): said once under the table, a row's cell
    keeps its workload and what tells it apart. One row too, whose cell would otherwise wrap its every option over
    several lines at 80 columns."""
    keys = _keys(comparison)
    if not keys:
        return set(), ""
    names = {name for name, value in keys[0].fields if all(k.value(name) == value for k in keys[1:])}
    names.discard("workload")  # a row reads better with its workload
    shared = ConfigKey(tuple((n, v) for n, v in keys[0].fields if n in names))
    return names, shared.label()


def fail_note(row: PairResult) -> str | None:
    """Why a pair fails the gate, in the table's words; None when it passes. Wrong numbers and runs that fail now
    say so; a slowdown past ``--fail-above`` is a plain FAIL; what fails only because of ``--strict`` says that."""
    if not row.fails:
        return None
    if row.accuracy_broke:
        return "FAIL: accuracy"
    if row.broke:
        return f"FAIL: {row.new_failed} failed" if row.status == COMPARED else "FAIL"
    if row.status == COMPARED and row.verdict == SLOWER:
        return "FAIL"
    return "FAIL (--strict)"


def _verdict_words(row: PairResult | UnmatchedRow) -> tuple[str, str, list[str]]:
    """(word, its style, the notes under it)."""
    if isinstance(row, UnmatchedRow):
        return f"only in {row.side.upper()}", "yellow", ["FAIL (--strict)"] if row.fails else []
    note = fail_note(row)
    if row.status != COMPARED:
        return row.status, "bold red", [note] if note else []
    word = row.verdict or MISSING
    notes = [WITHIN] if row.within_process else []
    return word, VERDICT_STYLES.get(word, ""), notes + ([note] if note else [])


def _unmatched_procs(row: UnmatchedRow) -> str:
    return f"{len(row.runs)}/{MISSING}" if row.side == "base" else f"{MISSING}/{len(row.runs)}"


def _rows(comparison: Comparison) -> Iterable[tuple[int, PairResult | UnmatchedRow]]:
    yield from enumerate((*comparison.pairs, *comparison.unmatched), 1)


def key_names(keys: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The rows' workloads by their names in the table (tui.present.format.workload_names: a user file by its name,
    files of one name told apart by their folders); ``--json`` and the CSV keep the whole paths."""
    return workload_names(key["workload"] for key in keys if "workload" in key)


def key_label(key: Mapping[str, str], skip: Iterable[str], names: Mapping[str, str]) -> str:
    """A row's configuration (:meth:`ConfigKey.label`), its workload by its name in the table (:func:`key_names`)."""
    return ConfigKey(tuple((name, names.get(value, value) if name == "workload" else value)
                           for name, value in key.items())).label(skip)


def _label(row: PairResult | UnmatchedRow, skip: set[str], names: Mapping[str, str]) -> str:
    return key_label(row.key, skip, names) or row.label


_VALUE_EDGES = re.compile(r"([\s{},]+)")
"""What separates the values in a row's extra line (``workload: A -> B``, ``{A, B}``, ``NEW has it with workload A,
mode x``): a piece between two is a value, a user's file when :func:`~tui.engine.catalog.is_user_workload` says so."""


def _pieces(line: str) -> list[str]:
    """``line`` cut at :data:`_VALUE_EDGES`, the edges kept (joined again, the pieces are the line)."""
    return _VALUE_EDGES.split(line)


def _extra(row: PairResult | UnmatchedRow) -> tuple[str, ...]:
    """The lines under a row's configuration: the ignored fields that differ, or where the other side has it."""
    return row.differences if isinstance(row, PairResult) else ((row.hint,) if row.hint else ())


def _names(comparison: Comparison) -> dict[str, str]:
    """Every workload the table says (the rows' and those of their extra lines) by its name in the table."""
    rows = [row for _, row in _rows(comparison)]
    said = [piece for row in rows for line in _extra(row) for piece in _pieces(line) if is_user_workload(piece)]
    return key_names([*(row.key for row in rows), *({"workload": file} for file in said)])


def _extra_lines(row: PairResult | UnmatchedRow, names: Mapping[str, str]) -> list[str]:
    """:func:`_extra`, each file named as the rows name it (``--json`` keeps the whole paths)."""
    return ["".join(names.get(piece, piece) if is_user_workload(piece) else piece for piece in _pieces(line))
            for line in _extra(row)]


def title_settings(settings: CompareSettings, ignore: Iterable[str] | None = None) -> str:
    """``gated: compiled time, threshold 2%, fail above 5% · ignoring backend`` (``ignore``: those said)."""
    ignore = tuple(settings.ignore if ignore is None else ignore)
    return (f"gated: {METRICS[settings.metric].label}, threshold {settings.threshold:.0%}, fail above "
            f"{settings.fail_above:g}%" + (" · ignoring " + ", ".join(ignore) if ignore else ""))


def _title(comparison: Comparison) -> str:
    return (f"compile-lab compare: {printable(comparison.base)} → {printable(comparison.new)} · "
            + title_settings(comparison.settings))


def print_comparison(comparison: Comparison, console: Any) -> None:
    """The rich table, its legend and every pair's notes and noise reasons, by row number."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tui.present.fold_text import SeparatorText

    skip, shared = shared_fields(comparison)
    names = _names(comparison)
    # The title and caption are lines of their own, wrapped at words: as the table's title Rich cut them
    # ("fail above" read "fai" in a narrow terminal).
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    whole_column(table, "#", "right")
    whole_column(table, "configuration")
    shown = columns(comparison)
    for metric in shown:
        whole_column(table, _header(comparison, metric), "right")
    whole_column(table, "verdict")
    for number, row in _rows(comparison):
        # a path too wide for the column folds after a separator (tui.present.fold_text)
        what = SeparatorText(printable(_label(row, skip, names)), style="bold")
        for line in _extra_lines(row, names):
            what.append(f"\n{printable(line)}", style="dim")
        word, style, notes = _verdict_words(row)
        verdict = Text(word, style=style)
        for note in notes:  # in brackets, as the Markdown has them: a caveat under the word, not its reason
            fail = note.startswith("FAIL")
            verdict.append(f"\n{note}" if fail else f"\n({note})", style="bold red" if fail else "dim")
        if isinstance(row, PairResult):
            procs = f"{row.base_processes}/{row.new_processes}"
            cells = ["\n".join(change_text(row.change(m), _unit(comparison, m))) for m in shown]
        else:
            procs, cells = _unmatched_procs(row), ["" for _ in shown]
        if procs:
            what.append(f"\n{procs} processes", style="cyan")
        table.add_row(str(number), what, *cells, verdict, end_section=number < len(comparison.pairs)
                      + len(comparison.unmatched))  # fmt: skip
    console.print(_title(comparison), markup=False, highlight=False)
    print_whole(table, console)
    if shared:
        console.print(f"every row: {printable(shared)}", markup=False, highlight=False)
    # the legend and each pair's reasons fold with a hanging indent: a continuation at column 0 read as a line
    for legend in legends(comparison):
        for part in hanging_lines(legend, console.width):
            console.print(part, style="dim", markup=False, highlight=False, soft_wrap=True)
    for line in detail_lines(comparison):
        for part in hanging_lines(line, console.width):
            console.print(part, markup=False, highlight=False, soft_wrap=True)
    if any(p.verdict == "noisy" for p in comparison.pairs):
        console.print(f"  noisy: {RERUN_HINT}", style="dim", markup=False, highlight=False)


def whole_column(table: Any, header: str, justify: Any = "left") -> None:
    """Add a column whose header and cells never lose a letter.

    No ratio, min_width or no_wrap: with them Rich lays a squeezed table out wider than the terminal, which
    then cuts its last column ("FAIL (--stric"); "fold": a word wider than its column goes on over the next
    line rather than losing letters to an ellipsis (:func:`print_whole` keeps that rare), headers included
    (a header's own overflow: Rich does not give it the column's).
    """
    from rich.text import Text

    table.add_column(Text(header, style="bold", overflow="fold"), justify=justify, overflow="fold")


def print_whole(table: Any, console: Any) -> None:
    """Print ``table`` at the terminal's width, or where some word of it would not fit whole there, at the
    narrowest width that keeps every word of its headers and cells whole (the terminal wraps those long
    lines): squeezed, Rich folds or cuts them ("fai" for "fail").

    A word with separators in a cell of :class:`~tui.present.fold_text.SeparatorText` (a path, a file's name)
    folds after them: each piece between them is kept whole where the terminal's width allows it, and a piece
    wider than its column (a long folder's name) folds by letters rather than widening the table past the
    terminal (a path is what made compare 119 columns wide)."""

    width = console.width
    needed = _whole_width(table, console, width, pieces=True)
    if needed > width:
        needed = _whole_width(table, console, width, pieces=False)
    if needed <= width:
        console.print(table)
        return
    console.width = needed
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def _whole_width(table: Any, console: Any, width: int, pieces: bool) -> int:
    """The narrowest width from ``width`` up at which every word of ``table`` is drawn whole; in a cell of
    :class:`~tui.present.fold_text.SeparatorText` a word with separators needs each piece whole (``pieces``) or
    nothing."""
    from rich.measure import Measurement

    from tui.present.fold_text import SeparatorText, word_pieces

    def needs(cell: Any, word: str) -> list[str]:
        if not isinstance(cell, SeparatorText) or len(split := word_pieces(word)) == 1:
            return [word]
        return split if pieces else []

    words = {piece for column in table.columns for cell in (column.header, *column.cells)
             for word in _plain(cell).split() for piece in needs(cell, word)}
    measured = Measurement.get(console, console.options.update_width(10_000), table)
    for candidate in range(max(width, measured.minimum if pieces else 0), measured.maximum):
        lines = console.render_lines(table, console.options.update_width(candidate), pad=False)
        drawn = {word for line in lines for word in "".join(s.text for s in line).split()}
        if words <= drawn | {piece for word in drawn for piece in word_pieces(word)}:
            return candidate
    return max(width, measured.maximum)


def _plain(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def detail_lines(comparison: Comparison) -> list[str]:
    """Each pair's noise reasons (of the gated metric) and notes, one line each, by row number."""
    lines = []
    for number, row in _rows(comparison):
        if not isinstance(row, PairResult):
            continue
        gated = row.change(row.metric)
        reasons = gated.reasons if gated else ()
        lines += [f"  {number}: {gated.verdict if gated else ''}: {reason}" for reason in reasons[:MAX_REASONS]]
        if len(reasons) > MAX_REASONS:
            more = len(reasons) - MAX_REASONS
            lines.append(f"  {number}: {more} more reason{'s' if more != 1 else ''} (--json has them all)")
        for note in row.notes:
            if not note.startswith("one process on a side"):  # said once by the legend
                lines.append(f"  {number}: {note}")
    return lines


def summary_line(comparison: Comparison) -> str:
    """``3 pairs: 1 slower, 2 no change; 1 only in BASE``."""
    counts = comparison.counts()
    words = [f"{count} {word}" for word, count in counts.items() if word != "unmatched"]
    text = f"{len(comparison.pairs)} pair{'s' if len(comparison.pairs) != 1 else ''}"
    text += f": {', '.join(words)}" if words else ""
    sides = {side: sum(r.side == side for r in comparison.unmatched) for side in ("base", "new")}
    only = [f"{count} only in {side.upper()}" for side, count in sides.items() if count]
    return text + (f"; {', '.join(only)}" if only else "")


def gate_lines(comparison: Comparison) -> list[str]:
    """The summary, then ``gate: pass`` or ``gate: FAIL`` with a line per failing row."""
    return [summary_line(comparison), *gate_verdict(comparison.failures())]


def gate_verdict(failures: Sequence[str]) -> list[str]:
    """``gate: pass``, or ``gate: FAIL (N rows)`` and a line per failing row."""
    if not failures:
        return ["gate: pass"]
    if list(failures) == [NOTHING_COMPARED]:
        return ["gate: FAIL", f"  {NOTHING_COMPARED}"]  # no row failed: there was none to compare
    return [f"gate: FAIL ({len(failures)} row{'s' if len(failures) != 1 else ''})", *(f"  {line}" for line in failures)]


def markdown_cell(text: str) -> str:
    """A Markdown table cell: one line, ``|`` escaped."""
    return printable(" ".join(text.split())).replace("\\", "\\\\").replace("|", "\\|")


def markdown_lines(comparison: Comparison) -> list[str]:
    """A GitHub Markdown table with a title line above it and the gate's lines below (a PR comment)."""
    skip, shared = shared_fields(comparison)
    names = _names(comparison)
    shown = columns(comparison)
    header = ["#", "configuration", "procs", *(_header(comparison, m) for m in shown), "verdict"]
    lines = [f"**{markdown_cell(_title(comparison))}**", ""]
    if shared:
        lines += [f"Every row: {markdown_cell(shared)}", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if h in ("#", "procs") else "---"
                                                              for h in header) + "|"]
    for number, row in _rows(comparison):
        word, _, notes = _verdict_words(row)
        verdict = f"**{word}**" + "".join(f" ({note})" for note in notes)
        what = "; ".join([_label(row, skip, names), *_extra_lines(row, names)])
        if isinstance(row, PairResult):
            procs = f"{row.base_processes}/{row.new_processes}"
            cells = [" ".join(change_text(row.change(m), _unit(comparison, m))) for m in shown]
        else:
            procs, cells = _unmatched_procs(row), ["" for _ in shown]
        lines.append("| " + " | ".join(markdown_cell(c) for c in (str(number), what, procs, *cells, verdict)) + " |")
    lines.append("")
    for legend in legends(comparison):
        lines += [markdown_cell(legend), ""]
    details = detail_lines(comparison)
    if details:
        lines += [f"- {markdown_cell(line)}" for line in details] + [""]
    summary, *gate = gate_lines(comparison)
    lines += [markdown_cell(summary), ""]
    lines += [f"- {markdown_cell(line)}" if line.startswith("  ") else f"**{markdown_cell(line)}**" for line in gate]
    return lines
