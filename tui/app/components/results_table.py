"""The results table: one row per run, keyed by run id, updated cell by cell.

Rows are never added per iteration or event: the app adds a row when a run is queued (or
loaded from the history) and calls :meth:`ResultsTable.refresh_record` from its redraw timer,
which rewrites only the cells whose text or colour changed (dolphie's rule). Every cell
carries the value it sorts by, so any column sorts numerically (press ``s`` / ``S`` or
click a header).

Previous sessions' runs (thousands of them) are rows too: their cells are made off the UI thread
(:func:`history_cells`, in the history loader's thread) and kept while hidden; a chunk of them
is added in one step and ``h`` swaps them out and back in one step, whatever their number
(:class:`~tui.app.components.table_rows.BulkRowTable`).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from tui.app.components.table_rows import BulkRowTable
from tui.app.format import (
    VERDICT_STYLES,
    ACTIVE_STATUSES,
    STATUS_LABELS,
    accuracy_label,
    clock_label,
    fmt_mib,
    fmt_ms,
    fmt_seconds,
    fmt_speedup,
    options_label,
    workload_label,
)
from tui.engine.results import RunRecord
from tui.engine.summary import RunSummary

__all__ = ["ResultsTable", "Cell", "COLUMNS", "row_cells", "history_cells"]

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("status", "status", 14),
    ("speedup", "speedup [95% CI]", 18),
    ("workload", "workload", 16),
    ("options", "options", 22),
    ("eager_ms", "eager ms", 8),
    ("compiled_ms", "comp. ms", 8),
    ("compile_s", "compile s", 9),
    ("launch_bound", "LB", 9),
    ("graph_breaks", "brk", 3),
    ("recompiles", "rcp", 3),
    ("peak_mem", "peak mem", 9),
    ("accuracy", "acc.", 4),
    ("sm_clock", "SM clock", 10),
)
"""(column key, header label, width) in display order."""

COLUMN_KEYS = tuple(key for key, _, _ in COLUMNS)

_STATUS_STYLES = {
    "queued": "dim",
    "done": "green",
    "failed": "bold red",
    "cancelled": "dim italic",
}


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


def row_cells(record: RunRecord, summary: RunSummary | None = None, *, history: bool = False,
              members: Sequence[RunRecord] | None = None) -> dict[str, Cell]:
    """Every cell of a record's row, by column key (``summary`` saves recomputing it).

    ``members``: the processes of a configuration repeated across processes, whose row
    ``record`` is (tui.engine.repeats.GroupRecord, or the first process before one ended): the
    options say how many there are, the status follows the one that runs now.
    """
    status = record.status
    if summary is None:
        summary = record.summary() if status not in ("queued", "starting", "building") else RunSummary()
    options = record.options
    eager, compiled = summary.eager.iter, summary.compiled.iter
    eager_ms = eager.median if eager else None
    compiled_ms = compiled.median if compiled else None
    breaks, recomp = record.diagnostics.graph_breaks, record.diagnostics.recompiles
    peak = record.memory.peak_mb
    acc_text, acc_style = accuracy_label(record)
    clock_text, clock_style = clock_label(record)
    compile_s = record.compile_s
    label = options_label(options) + _processes_label(record, members)
    return {
        "status": _group_status_cell(record, members) if members else _status_cell(record, history),
        "workload": Cell(workload_label(options), sort_key=workload_label(options)),
        "options": Cell(label, sort_key=label),
        "compile_s": Cell(fmt_seconds(compile_s) if compile_s is not None else "–", sort_key=compile_s, justify="right"),
        "eager_ms": Cell(fmt_ms(eager_ms), sort_key=eager_ms, justify="right"),
        "compiled_ms": Cell(fmt_ms(compiled_ms), sort_key=compiled_ms, justify="right"),
        "speedup": _speedup_cell(summary),
        "launch_bound": _launch_bound_cell(bool(summary.launch_bound), summary.host_speedup, summary.host_verdict),
        "graph_breaks": Cell("–" if breaks is None else str(breaks), "bold yellow" if breaks else "",
                             sort_key=breaks, justify="right"),
        "recompiles": Cell("–" if recomp is None else str(recomp), "bold yellow" if recomp else "",
                           sort_key=recomp, justify="right"),
        "peak_mem": Cell(fmt_mib(peak), sort_key=peak, justify="right"),
        "accuracy": Cell(acc_text, acc_style, sort_key=acc_text),
        "sm_clock": Cell(clock_text, clock_style, sort_key=record.telemetry.sm_clock_mean_mhz),
    }


def history_cells(record: RunRecord) -> dict[str, Cell]:
    """A previous run's row (dimmed, marked ↺) from its stored summary; made off the UI thread."""
    return row_cells(record, history=True)


def _status_cell(record: RunRecord, history: bool) -> Cell:
    status = record.status
    label = STATUS_LABELS.get(status, status)
    if status in ACTIVE_STATUSES:
        pct = record.progress() * 100
        return Cell(f"{label} {pct:3.0f}%", "bold yellow", sort_key=(1, pct))
    order = {"queued": 0, "done": 3, "failed": 4, "cancelled": 5}.get(status, 2)
    style = _STATUS_STYLES.get(status, "")
    verdict = record.summary().verdict if status == "done" else None
    if verdict is not None:
        # A done run shows what its measurement supports (tui.engine.verdict), not just "done".
        label, style = verdict, VERDICT_STYLES.get(verdict, style)
    if history:
        style = f"{style} dim".strip()
    return Cell(("↺ " if history else "") + label, style, sort_key=(order, label))


def _processes_label(record: RunRecord, members: Sequence[RunRecord] | None) -> str:
    """`` ×3`` for a group of three processes; `` #2`` for a previous session's second process shown alone."""
    if members:
        return f" ×{len(members)}"
    return f" #{record.repeat + 1}" if record.group_id is not None and record.repeat else ""


def _group_status_cell(row: RunRecord, members: Sequence[RunRecord]) -> Cell:
    """``measuring 2/3`` while process 2 of 3 runs, ``queued 3/3`` while the next waits, else the group's word."""
    count = len(members)
    for number, member in enumerate(members, 1):
        if member.status in ACTIVE_STATUSES:
            label = STATUS_LABELS.get(member.status, member.status)
            return Cell(f"{label} {number}/{count}", "bold yellow", sort_key=(1, number / count))
    if row.status not in ("failed", "cancelled"):
        for number, member in enumerate(members, 1):
            if member.status == "queued" and number > 1:
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
    """``LB 1.31×``: the mark, then the host-inclusive speedup a launch-bound run's loop pays (dim when noisy)."""
    if not launch_bound:
        return Cell("", sort_key=(0, 0.0))
    text = "LB" if host_speedup is None else f"LB {fmt_speedup(host_speedup)}"
    return Cell(text, "dim magenta" if host_verdict == "noisy" else "bold magenta", sort_key=(1, host_speedup or 0.0))


class ResultsTable(BulkRowTable):
    """The table of runs (row key = run id): previous sessions' runs first, then this session's."""

    BORDER_TITLE = "Results"

    sort_column: reactive[str | None] = reactive(None, init=False)
    """The column key rows are sorted by, or None for queue order."""

    sort_reverse: reactive[bool] = reactive(False, init=False)
    """Descending order when True."""

    class RunHighlighted(Message):
        """The cursor moved to a run's row."""

        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id
            """The run under the cursor."""

    class DetailsRequested(Message):
        """The user pressed Enter (or clicked) on a run's row."""

        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id
            """The run whose details to show."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._cells: dict[str, dict[str, Cell]] = {}
        """The rows shown, in queue order (history first): their cells by column key."""
        self._history: dict[str, dict[str, Cell]] = {}
        """Every previous run's cells, shown or not, oldest first."""
        self._session: dict[str, dict[str, Cell]] = {}
        """This session's runs' cells, in queue order."""
        self._history_shown = True
        self._stash: tuple | None = None
        """The row maps shown before ``h`` hid the history (put back by the next ``h``)."""

    def on_mount(self) -> None:
        """Create the columns."""
        for key, label, width in COLUMNS:
            self.add_column(Text(label), key=key, width=width)

    # ----- rows -----------------------------------------------------------------

    @property
    def run_ids(self) -> list[str]:
        """The run ids in display order."""
        return [row.key.value for row in self.ordered_rows if row.key.value is not None]

    @property
    def selected_run_id(self) -> str | None:
        """The run id under the cursor, or None for an empty table."""
        return self.selected_key

    @property
    def accepts_updates(self) -> bool:
        """Whether rows may be rewritten now: attached to a running app and not being removed."""
        return self.is_attached and not (self._closing or self._closed)

    @property
    def history_shown(self) -> bool:
        """Whether previous runs are rows (see :meth:`show_history`)."""
        return self._history_shown

    def update_hint(self) -> None:
        """The pane's subtitle says how many previous runs are hidden (an empty table is not empty history)."""
        hidden = 0 if self._history_shown else len(self._history)
        self.border_subtitle = f"{hidden} previous run{'s' if hidden != 1 else ''} hidden · h shows them" if hidden else ""

    def has_run(self, run_id: str) -> bool:
        """Whether the table has a row for this run."""
        return run_id in self._cells

    def is_history(self, run_id: str) -> bool:
        """Whether this is a previous run's row (shown or hidden)."""
        return run_id in self._history

    def add_records(self, records: Iterable[RunRecord]) -> None:
        """Rows for this session's runs at the end (runs already shown are skipped), one re-sort at the end."""
        added = []
        for record in records:
            run_id = record.run_id
            if run_id in self._session or run_id in self._history:
                continue
            self._session[run_id] = self._cells[run_id] = row_cells(record)
            added.append(run_id)
        if added:
            self._append_rows(added)

    def add_history(self, rows: Sequence[tuple[str, dict[str, Cell]]]) -> int:
        """Previous runs' rows (cells from :func:`history_cells`) after the known ones, before this session's.

        A run id already in the history takes the new cells (a later line of the file); one of
        this session's runs is left as it is. Returns how many rows are new.
        """
        added = []
        for run_id, cells in rows:
            if run_id in self._session:
                continue
            known = run_id in self._history
            self._history[run_id] = cells
            if not self._history_shown:
                self._forget_row(run_id)  # its row is made again from these cells when shown
                self._stash = None
                continue
            if known:
                self._rewrite(run_id, cells)
            else:
                self._cells[run_id] = cells
                added.append(run_id)
        if not added:
            return 0
        if not self._session:
            self._append_rows(added)
        elif self.sort_column is None:
            self._insert_rows(added, len(self.rows) - len(self._session))  # before this session's rows
        else:
            self._rebuild_rows(self.selected_run_id)
        return len(added)

    def show_history(self, show: bool) -> None:
        """Show or hide previous runs' rows, in one step whatever their number.

        Hiding keeps the row maps shown until then; showing puts them back (with this session's
        rows added meanwhile) when the history did not change, else rebuilds them in one pass.
        """
        if show == self._history_shown:
            return
        self._history_shown = show
        selected = self.selected_run_id
        if show and self._stash is not None:
            maps, session_count, order = self._stash
            self._stash = None
            self._cells = {**self._history, **self._session}
            resort = order != (self.sort_column, self.sort_reverse)
            self._unstash_rows(maps, list(self._session)[session_count:], selected, resort=resort)
            return
        if not show:
            self._stash = (self._stash_rows(), len(self._session), (self.sort_column, self.sort_reverse))
        self._rebuild_rows(selected)

    def refresh_record(self, record: RunRecord, summary: RunSummary | None = None, *,
                       members: Sequence[RunRecord] | None = None) -> int:
        """Rewrite the cells of this run's (or group's: ``members``, see :func:`row_cells`) row that changed.

        Returns how many did.
        """
        run_id = record.run_id
        if run_id not in self._cells:
            return 0
        return self._rewrite(run_id, row_cells(record, summary, history=run_id in self._history, members=members))

    def _rewrite(self, run_id: str, new: dict[str, Cell]) -> int:
        old = self._cells.get(run_id)
        if old is None:
            return 0
        changed = 0
        for key in COLUMN_KEYS:
            if new[key] != old[key]:
                try:
                    self.update_cell(run_id, key, new[key])
                except CellDoesNotExist:
                    return changed
                changed += 1
        self._cells[run_id] = new
        (self._history if run_id in self._history else self._session)[run_id] = new
        return changed

    def cell_text(self, run_id: str, column: str) -> str:
        """The plain text shown in one cell (for tests and the command line)."""
        return self._cells[run_id][column].plain

    # ----- the rows, set in bulk (BulkRowTable) -----------------------------------

    def _row_values(self, key: str) -> list[Cell]:
        cells = self._cells[key]
        return [cells[column] for column in COLUMN_KEYS]

    def _rebuild_rows(self, selected: str | None) -> None:
        """The rows become the queue order (history first when shown, then this session's), in one pass."""
        self._cells = {**self._history, **self._session} if self._history_shown else dict(self._session)
        self._set_rows(self._cells, selected)

    def _after_rows_changed(self, selected: str | None, resort: bool) -> None:
        if self.sort_column is not None or resort:
            self._apply_sort(selected)
        else:
            self._restore_cursor(selected)

    # ----- sorting ----------------------------------------------------------------

    def sort_by(self, column: str | None, reverse: bool | None = None) -> None:
        """Sort by a column key (None: back to queue order); ``reverse`` None keeps the direction."""
        if column is not None and column not in COLUMN_KEYS:
            raise ValueError(f"unknown column {column!r}")
        if reverse is not None:
            self.sort_reverse = reverse
        self.sort_column = column

    def cycle_sort(self) -> str | None:
        """Sort by the next column (after the last one: queue order); returns the new column key."""
        order: list[str | None] = [None, *COLUMN_KEYS]
        index = order.index(self.sort_column) if self.sort_column in order else 0
        self.sort_by(order[(index + 1) % len(order)])
        return self.sort_column

    def watch_sort_column(self) -> None:
        """Re-sort when the sort column changes."""
        self._apply_sort(self.selected_run_id)

    def watch_sort_reverse(self) -> None:
        """Re-sort when the direction changes."""
        self._apply_sort(self.selected_run_id)

    def _apply_sort(self, selected: str | None) -> None:
        column = self.sort_column
        # DataTable.sort is stable over insertion (= queue) order, so ties keep queue order.
        if column is None:
            self.sort(key=lambda _cells: 0)
        else:
            self.sort(column, key=lambda cell: cell.sort_key, reverse=self.sort_reverse)
        for key, label, _ in COLUMNS:
            arrow = ""
            if key == column:
                arrow = " ▼" if self.sort_reverse else " ▲"
            if key in self.columns:
                self.columns[key].label = Text(label + arrow)  # type: ignore[index]
        self._restore_cursor(selected)
        self.refresh()

    # ----- events -------------------------------------------------------------------

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.RunHighlighted(event.row_key.value))

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.DetailsRequested(event.row_key.value))

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = event.column_key.value
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_by(column)
