"""The cells of a results table row: the text shown, its style and the value it sorts by.

A row has a cell for every available column of :data:`tui.app.table_columns.TABLE_COLUMNS`,
shown or not, so showing a column never remakes rows. Previous sessions' rows are made off the UI
thread (:func:`history_cells`, in the history loader's thread). An option cell depends on the
options alone and few values repeat over thousands of rows: one cell object per text is shared.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from collections.abc import Mapping, Sequence

from rich.text import Text

from tui.present.format import (
    ACTIVE_STATUSES,
    ListingNames,
    MISSING,
    STATUS_LABELS,
    VERDICT_STYLES,
    accuracy_label,
    active_status_text,
    clock_label,
    fmt_mib,
    fmt_ms,
    fmt_seconds,
    fmt_speedup,
    input_label,
    or_missing,
)
from tui.present.option_fields import FIELDS_BY_KEY, OPTION_FIELDS, flags_text
from tui.engine.catalog import is_user_workload
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary
from tui.typed import printable
from tui.engine.status import RunStatus

__all__ = ["Cell", "FileCell", "FileNames", "config_cell", "row_cells", "history_cells"]

_STATUS_STYLES: dict[str, str] = {
    RunStatus.QUEUED: "dim",
    RunStatus.DONE: "green",
    RunStatus.FAILED: "bold red",
    RunStatus.CANCELLED: "dim italic",
}
_GPU_VENDOR_PREFIXES = ("NVIDIA ",)
"""Said by every GPU name, so left out of the GPU column."""


class Cell:
    """One table cell: the text shown, its Rich style and the value the column sorts by.

    Cells compare equal when they look the same, which is how the table skips updates.
    """

    __slots__ = ("plain", "style", "sort_key", "justify")

    def __init__(self, plain: str, style: str = "", sort_key: Any = None, justify: str = "left") -> None:
        self.plain = plain
        self.style = style
        # Missing values sort last in ascending order; (0, v) pairs keep one type per column.
        self.sort_key = (1, 0) if sort_key is None else (0, sort_key)
        self.justify = justify

    def __rich__(self) -> Text:
        return Text(self.plain, style=self.style, no_wrap=True, overflow="ellipsis", justify=self.justify)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and (self.plain, self.style) == (other.plain, other.style)

    def __hash__(self) -> int:
        return hash((self.plain, self.style))

    def __repr__(self) -> str:
        return f"Cell({self.plain!r})"


class FileCell(Cell):
    """A user workload's cell, which knows the workload it names: the table names it by its listing's rule
    (:class:`tui.present.format.ListingNames`: ``a/model.py`` beside ``b/model.py``)."""

    __slots__ = ("workload",)

    def __init__(self, plain: str, workload: str) -> None:
        super().__init__(plain, sort_key=plain)
        self.workload = workload

    def named(self, plain: str) -> FileCell:
        """This cell with the name ``plain``."""
        return self if plain == self.plain else FileCell(plain, self.workload)


class FileNames:
    """The table's user files, named by the rule of their listing (every row, shown or not): files of one name
    told apart by their folders (:class:`tui.present.format.ListingNames`)."""

    def __init__(self) -> None:
        self._names = ListingNames()

    def name(self, cells: dict[str, Cell]) -> set[str]:
        """Name the file of a new row's ``cells`` (in place); the workloads of other rows whose names this changed."""
        cell = cells["workload"]
        if not isinstance(cell, FileCell):
            return set()
        changed = set(self._names.add(cell.workload))
        cells["workload"] = cell.named(self._names.name(cell.workload))
        return changed

    @property
    def listing(self) -> Mapping[str, str]:
        """The workloads' names as the table's rows name them, for the app's other lines (the queue, the chart's
        title, the notices; :func:`tui.present.format.workload_label` reads it): a file told apart by its folders
        from the files of its name among every row. One mapping that grows with the table."""
        return self._names

    def renamed(self, cells: Mapping[str, Cell], workloads: set[str]) -> dict[str, Cell] | None:
        """A row's cells with its file's new name when it is one of ``workloads``; else None (the row stays)."""
        cell = cells["workload"]
        if not isinstance(cell, FileCell) or cell.workload not in workloads:
            return None
        return {**cells, "workload": cell.named(self._names.name(cell.workload))}


_NO_BASE = Cell("")


@lru_cache(maxsize=4096)
def _text_cell(plain: str) -> Cell:
    """A plain cell sorted by its text, shared by every row that shows this text (cells are never changed)."""
    return Cell(plain, sort_key=plain)


def row_cells(record: RunRecord, summary: RunSummary | None = None, *, history: bool = False,
              members: Sequence[RunRecord] | None = None) -> dict[str, Cell]:
    """Every cell of a record's row, by column key (``summary`` saves recomputing it).

    ``members``: the processes of a configuration repeated across processes, whose row
    ``record`` is (tui.engine.store.repeats.GroupRecord, or the first process before one ended): the
    flags say how many there are, the status follows the one that runs now.
    """
    status = record.status
    if summary is None:
        early = (RunStatus.QUEUED, RunStatus.STARTING, RunStatus.BUILDING)  # no samples yet
        summary = record.summary() if status not in early else RunSummary()
    eager, compiled = summary.eager.iter, summary.compiled.iter
    eager_ms = eager.median if eager else None
    compiled_ms = compiled.median if compiled else None
    breaks, recomp = record.diagnostics.graph_breaks, record.diagnostics.recompiles
    peak = record.memory.peak_mb
    acc_text, acc_style = accuracy_label(record)
    clock_text, clock_style = clock_label(record)
    compile_s = record.compile_s
    return {
        "status": _group_status_cell(record, members) if members else _status_cell(record, history),
        "speedup": _speedup_cell(summary),
        "vs_base": _NO_BASE,  # the table puts the baseline's cell here (tui.app.baselines)
        "config": _NO_BASE,  # the table puts the compact configuration here when it is a column (config_cell)
        **_option_cells(record, members, summary),
        "verdict": _verdict_cell(summary.verdict if status == RunStatus.DONE else None),
        "eager_ms": Cell(fmt_ms(eager_ms), sort_key=eager_ms, justify="right"),
        "compiled_ms": Cell(fmt_ms(compiled_ms), sort_key=compiled_ms, justify="right"),
        "accuracy": Cell(acc_text, acc_style, sort_key=acc_text),
        "launch_bound": _launch_bound_cell(bool(summary.launch_bound), summary.host_speedup, summary.host_verdict),
        "graph_breaks": Cell(or_missing(breaks), "bold yellow" if breaks else "",
                             sort_key=breaks, justify="right"),
        "recompiles": Cell(or_missing(recomp), "bold yellow" if recomp else "",
                           sort_key=recomp, justify="right"),
        "compile_s": Cell(fmt_seconds(compile_s), sort_key=compile_s,
                          justify="right"),
        "peak_mem": Cell(fmt_mib(peak), sort_key=peak, justify="right"),
        "sm_clock": Cell(clock_text, clock_style, sort_key=record.telemetry.sm_clock_mean_mhz),
        "gpu": _text_cell(_gpu_name(record.env.gpu_name)),
        "node": _text_cell(printable(record.env.node) if record.env.node else MISSING),
    }


def history_cells(record: RunRecord) -> dict[str, Cell]:
    """A previous run's row (dimmed, marked ↺) from its stored summary; made off the UI thread."""
    return row_cells(record, history=True)


def _option_cells(record: RunRecord, members: Sequence[RunRecord] | None, summary: RunSummary) -> dict[str, Cell]:
    """A cell per option field (tui.present.option_fields); the flags spell the inductor options (a tune's
    candidates differ by one option alone, and ``1 opt`` reads alike for each) and end with the processes mark,
    and a user workload's parameters with the name its factory gave its inputs (``"linear 256"``)."""
    options = record.options
    cells = {field.key: _text_cell(field.value(options)) for field in OPTION_FIELDS}
    cells["flags"] = _text_cell(flags_text(options, spell=True))
    if is_user_workload(options.workload):
        cells["workload"] = FileCell(cells["workload"].plain, options.workload)
    label = input_label(record, summary)
    if label:
        cells["params"] = _text_cell(f"{cells['params'].plain} {label}".strip())
    processes = _processes_label(record, members)
    if processes:
        cells["flags"] = _text_cell(f"{cells['flags'].plain} {processes}".strip())
    return cells


def _gpu_name(name: str | None) -> str:
    if not name:
        return MISSING
    for prefix in _GPU_VENDOR_PREFIXES:
        name = name.removeprefix(prefix)
    return printable(name)


def _status_cell(record: RunRecord, history: bool) -> Cell:
    status = record.status
    label = STATUS_LABELS.get(status, status)
    if status in ACTIVE_STATUSES:
        progress = record.progress()
        return Cell(active_status_text(status, progress, record.part_elapsed_s()), "bold yellow",
                    sort_key=(1, progress * 100))
    orders: dict[str, int] = {RunStatus.QUEUED: 0, RunStatus.DONE: 3, RunStatus.FAILED: 4, RunStatus.CANCELLED: 5}
    order = orders.get(status, 2)
    style = _STATUS_STYLES.get(status, "")
    verdict = record.summary().verdict if status == RunStatus.DONE else None
    if verdict is not None:
        # A done run shows what its measurement supports (tui.engine.measure.verdict), not just "done".
        label, style = verdict, VERDICT_STYLES.get(verdict, style)
    if history:
        style = f"{style} dim".strip()
    return Cell(("↺ " if history else "") + label, style, sort_key=(order, label))


def _verdict_cell(verdict: str | None) -> Cell:
    if verdict is None:
        return _text_cell(MISSING)
    return Cell(verdict, VERDICT_STYLES.get(verdict, ""), sort_key=verdict)


def _processes_label(record: RunRecord, members: Sequence[RunRecord] | None) -> str:
    """``×3`` for a group of three processes; ``#2`` for a previous session's second process shown alone."""
    if members:
        return f"×{len(members)}"
    return f"#{record.repeat + 1}" if record.group_id is not None and record.repeat else ""


def _group_status_cell(row: RunRecord, members: Sequence[RunRecord]) -> Cell:
    """``measuring 2/3`` while process 2 of 3 runs, ``queued 3/3`` while the next waits, else the group's word."""
    count = len(members)
    for number, member in enumerate(members, 1):
        if member.status in ACTIVE_STATUSES:
            label = STATUS_LABELS.get(member.status, member.status)
            return Cell(f"{label} {number}/{count}", "bold yellow", sort_key=(1, number / count))
    if row.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
        for number, member in enumerate(members, 1):
            if member.status == RunStatus.QUEUED and number > 1:
                return Cell(f"queued {number}/{count}", "yellow", sort_key=(1, (number - 1) / count))
    return _status_cell(row, history=False)


def _speedup_cell(summary: RunSummary) -> Cell:
    """Green or red when the interval excludes 1, dim otherwise, and dim whenever the verdict is noisy."""
    speedup = summary.speedup
    if speedup is None or not summary.significant or summary.verdict == "noisy":
        style = "dim"
    else:
        style = "bold green" if speedup >= 1 else "bold red"
    return Cell(fmt_speedup(speedup, summary.speedup_ci_low, summary.speedup_ci_high), style, sort_key=speedup)


def _launch_bound_cell(launch_bound: bool, host_speedup: float | None, host_verdict: str | None = None) -> Cell:
    """``LB 1.31×``: the mark, then the host-inclusive speedup a loop pays (dim when noisy)."""
    if not launch_bound:
        return Cell("", sort_key=(0, 0.0))
    text = "LB" if host_speedup is None else f"LB {fmt_speedup(host_speedup)}"
    return Cell(text, "dim magenta" if host_verdict == "noisy" else "bold magenta", sort_key=(1, host_speedup or 0.0))


def config_cell(cells: Mapping[str, Cell], keys: Sequence[str]) -> Cell:
    """The compact configuration of a row: the words of its option cells ``keys`` (those that tell the rows
    apart), in their short forms (tui.present.option_fields), the parameters last."""
    # The parameters last: long, and mostly what the workload already says; the options after the workload tell
    # one workload's rows apart, so they come before what a narrow cell cuts. A field at the value a label leaves
    # unsaid (the default mode, no fullgraph, no flags) goes unsaid here too, so the words that tell a row apart
    # (``freezing=True``) come before the cell's edge; a row with nothing else to say says those values.
    ordered = sorted((key for key in keys if key in cells), key=lambda key: key == "params")
    words = [FIELDS_BY_KEY[key].word(cells[key].plain) for key in ordered]
    if not any(words):
        words = [FIELDS_BY_KEY[key].word(cells[key].plain, differs=True) for key in ordered]
    text = " ".join(word for word in words if word)
    return _text_cell(text or MISSING)
