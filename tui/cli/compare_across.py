"""What ``compile-lab compare SELECTION --across FIELD`` prints: the kinds side by side, rich or Markdown.

One row per configuration; a column group per kind of the gated metric: the baseline's value and
processes, then for each other kind its value, its change against the baseline with the 95%
interval, and its verdict. Each cell's noise reasons, notes and hints follow the table, by row
number and kind; then one summary line per kind and the gate's lines.
"""

from __future__ import annotations

from typing import Any

from tui.present.format import MISSING, VERDICT_STYLES
from tui.present.compare_render import (
    MAX_REASONS, WITHIN, WITHIN_LEGEND, change_text, fail_note, gate_verdict, key_label, key_names, markdown_cell,
    number_text, print_whole, title_settings, whole_column,
)  # fmt: skip
from tui.engine.compare import METRICS, Across, AcrossRow, ConfigKey, KindCell
from tui.engine.compare.across import ACROSS_FIELDS, COMPARED, NO_BASELINE, NOT_RUN
from tui.engine.measure.verdict import RERUN_HINT
from tui.typed import printable

__all__ = ["print_across", "across_markdown_lines", "across_gate_lines"]

_STYLES = {NOT_RUN: "dim", NO_BASELINE: "yellow"}


def _unit(across: Across) -> str:
    """The gated metric's one unit: ``x`` for the speedup; µs when every time shown is under 1 ms."""
    metric = across.settings.metric
    if not METRICS[metric].time:
        return "x"
    values = [v for row in across.rows for cell in row.cells if (v := cell.values.get(metric)) is not None]
    return "µs" if values and max(values) < 1 else "ms"


def _procs(cell: KindCell) -> str:
    return f"{cell.processes} proc{'s' if cell.processes != 1 else ''}" if cell.runs else ""


def _value_parts(cell: KindCell, across: Across, unit: str) -> list[str]:
    """The cell's value, its change against the baseline and the interval, its processes."""
    if cell.status == NOT_RUN:
        return [MISSING]
    metric = across.settings.metric
    parts = [number_text(cell.values.get(metric), unit)]
    change = cell.result.change(metric) if cell.result is not None else None
    if change is not None:
        parts += list(change_text(change, unit)[1:])
    return [*parts, _procs(cell)]


def _verdict(cell: KindCell) -> tuple[str, str, list[str]]:
    """(word, its style, the notes under it) of a kind other than the baseline."""
    word, notes = cell.verdict, []
    result = cell.result
    if result is not None and result.status == COMPARED and result.within_process:
        notes.append(WITHIN)
    note = fail_note(result) if result is not None else None
    if note:
        notes.append(note)
    elif cell.fails:
        notes.append("FAIL (--strict)")
    style = VERDICT_STYLES.get(word, _STYLES.get(word, "bold red" if result is not None else ""))
    return word, style, notes


def _shared(across: Across) -> tuple[set[str], str]:
    """The fields every row has with one value (and their label), when there are two rows or more."""
    keys = [ConfigKey(tuple(row.key.items())) for row in across.rows]
    if len(keys) < 2:
        return set(), ""
    names = {name for name, value in keys[0].fields if all(k.value(name) == value for k in keys[1:])}
    names.discard("workload")  # a row reads better with its workload
    return names, ConfigKey(tuple((n, v) for n, v in keys[0].fields if n in names)).label()


def _label(row: AcrossRow, skip: set[str], across: Across) -> str:
    """The row's configuration, its workload by its name among the rows (compare_render.key_names)."""
    return key_label(row.key, skip, key_names(other.key for other in across.rows)) or row.label


def _title(across: Across) -> str:
    ignore = [name for name in across.settings.ignore if name != across.across]
    return (f"compile-lab compare: {printable(across.selection)} across {across.across}, baseline "
            f"{printable(across.baseline)} · {title_settings(across.settings, ignore)}")


def _header(across: Across, kind: str, unit: str) -> str:
    metric = {"compiled": "compiled", "eager": "eager", "speedup": "speedup", "host": "compiled host"}
    what = f"{metric[across.settings.metric]} {unit}"
    return f"{printable(kind)} (baseline) {what}" if kind == across.baseline else f"{printable(kind)} {what}"


def print_across(across: Across, console: Any) -> None:
    """The rich table, its legend and each cell's notes and noise reasons, by row number and kind."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tui.present.fold_text import SeparatorText

    skip, shared = _shared(across)
    unit = _unit(across)
    # The title and caption are lines of their own, wrapped at words (Rich cut a table's title).
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    whole_column(table, "#", "right")
    whole_column(table, "configuration")
    for kind in across.kinds:
        whole_column(table, _header(across, kind, unit), "right")
        if kind != across.baseline:
            whole_column(table, "verdict")
    for number, row in enumerate(across.rows, 1):
        cells: list[Any] = []
        for cell in row.cells:
            cells.append("\n".join(part for part in _value_parts(cell, across, unit) if part))
            if cell.kind == across.baseline:
                continue
            word, style, notes = _verdict(cell)
            text = Text(word, style=style)
            for note in notes:
                text.append(f"\n{note}", style="bold red" if note.startswith("FAIL") else "dim")
            cells.append(text)
        table.add_row(str(number), SeparatorText(printable(_label(row, skip, across)), style="bold"), *cells,
                      end_section=number < len(across.rows))
    console.print(_title(across), markup=False, highlight=False)
    print_whole(table, console)
    if shared:
        console.print(f"every row: {shared}", markup=False, highlight=False)
    if any(cell.result is not None and cell.result.within_process for row in across.rows for cell in row.cells):
        console.print(WITHIN_LEGEND, style="dim", markup=False, highlight=False)
    for line in detail_lines(across):
        console.print(line, markup=False, highlight=False)
    if any(cell.verdict == "noisy" for row in across.rows for cell in row.cells):
        console.print(f"  noisy: {RERUN_HINT}", style="dim", markup=False, highlight=False)


def _cell_lines(cell: KindCell) -> list[str]:
    """A cell's noise reasons (of the gated metric), notes and hint."""
    gated = cell.result.change(cell.result.metric) if cell.result is not None else None
    reasons = gated.reasons if gated is not None else ()
    lines = [f"noisy: {reason}" for reason in reasons[:MAX_REASONS]]
    if len(reasons) > MAX_REASONS:
        lines.append(f"and {len(reasons) - MAX_REASONS} more reasons (--json has them all)")
    lines += [note for note in cell.notes if not note.startswith("one process on a side")]  # said by the legend
    lines += [cell.hint] if cell.hint else []
    return lines


def detail_lines(across: Across) -> list[str]:
    """Each cell's reasons, notes and hints (``  2 NVIDIA H100: ...``), said once per row; the runs left out."""
    lines = []
    for number, row in enumerate(across.rows, 1):
        said: dict[str, str] = {}
        for cell in row.cells:
            for line in _cell_lines(cell):
                said.setdefault(line, cell.kind)
        lines += [f"  {number} {printable(kind)}: {printable(line)}" for line, kind in said.items()]
    if across.left_out:
        why = "a CPU run has none" if across.across == "gpu_name" else "a run from before it was recorded has none"
        lines.append(f"  left out: {len(across.left_out)} run{'s' if len(across.left_out) != 1 else ''} without a "
                     f"{across.across} ({why})")
    return lines


def across_gate_lines(across: Across) -> list[str]:
    """A summary line per kind against the baseline, then ``gate: pass`` or ``gate: FAIL`` and a line per failure."""
    word = ACROSS_FIELDS[across.across]
    lines = [f"{len(across.rows)} configuration{'s' if len(across.rows) != 1 else ''} on {len(across.kinds)} "
             f"{word}s, baseline {printable(across.baseline)}"]
    for kind in across.kinds[1:]:
        counts = across.counts(kind)
        said = ", ".join(f"{count} {what}" for what, count in counts.items())
        lines.append(f"{printable(kind)}: {said or MISSING}")
    return lines + gate_verdict([printable(line) for line in across.failures()])


def _markdown_row(number: int, row: AcrossRow, across: Across, unit: str, skip: set[str]) -> str:
    cells = [str(number), _label(row, skip, across)]
    for cell in row.cells:
        value, *more = _value_parts(cell, across, unit)
        procs = more.pop() if more else ""
        cells.append(" ".join([value, *more]) + (f" ({procs})" if procs else ""))
        if cell.kind != across.baseline:
            word, _, notes = _verdict(cell)
            cells.append(f"**{word}**" + "".join(f" ({note})" for note in notes))
    return "| " + " | ".join(markdown_cell(c) for c in cells) + " |"


def _markdown_footer(across: Across) -> list[str]:
    """The legend, the details, the summary (a list item per kind) and the gate's lines."""
    lines = []
    if any(cell.result is not None and cell.result.within_process for row in across.rows for cell in row.cells):
        lines += [markdown_cell(WITHIN_LEGEND), ""]
    details = detail_lines(across)
    if details:
        lines += [f"- {markdown_cell(line)}" for line in details] + [""]
    first, *rest = across_gate_lines(across)
    kinds, gate = rest[:len(across.kinds) - 1], rest[len(across.kinds) - 1:]
    lines += [markdown_cell(first), ""] + [f"- {markdown_cell(line)}" for line in kinds] + [""]
    lines += [f"- {markdown_cell(line)}" if line.startswith("  ") else f"**{markdown_cell(line)}**" for line in gate]
    return lines


def across_markdown_lines(across: Across) -> list[str]:
    """A GitHub Markdown table with a title line above it and the summary and gate's lines below."""
    skip, shared = _shared(across)
    unit = _unit(across)
    header = ["#", "configuration"]
    for kind in across.kinds:
        header.append(_header(across, kind, unit))
        header += ["verdict"] if kind != across.baseline else []
    lines = [f"**{markdown_cell(_title(across))}**", ""]
    if shared:
        lines += [f"Every row: {markdown_cell(shared)}", ""]
    lines += ["| " + " | ".join(markdown_cell(h) for h in header) + " |",
              "|" + "|".join("---:" if h == "#" else "---" for h in header) + "|"]  # fmt: skip
    lines += [_markdown_row(number, row, across, unit, skip) for number, row in enumerate(across.rows, 1)]
    return [*lines, "", *_markdown_footer(across)]
