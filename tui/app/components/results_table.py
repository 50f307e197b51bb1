"""The results table: one row per run, keyed by run id, updated cell by cell.

Rows are never added per iteration or event: the app adds a row when a run is queued (or
loaded from the history) and calls :meth:`ResultsTable.refresh_record` from its redraw timer,
which rewrites only the cells whose text or colour changed (dolphie's rule). Every cell
carries the value it sorts by, so any column sorts numerically (press ``s`` / ``S`` or
click a header).

Which columns show, in what order, is :mod:`tui.app.table_columns`' rule: by priority, the option
fields that tell the rows apart right after the speedup, one an option every row shares said once
in the pane's title; the user's choice (``c``, the config's ``columns``) shows or hides them.
The columns follow the rows: counted as they are added (:class:`~tui.app.table_columns.Variety`),
and set at once when a field starts or stops telling rows apart.

Previous sessions' runs (thousands of them) are rows too: their cells are made off the UI thread
(:func:`~tui.app.components.result_cells.history_cells`, in the history loader's thread) and kept
while hidden; a chunk of them is added in one step and ``h`` swaps them out and back in one step,
whatever their number (:class:`~tui.app.components.table_rows.BulkRowTable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from tui.app.components.edge_cut import cut_at_edges, run_on_line
from tui.app.components.result_cells import Cell, FileNames, config_cell, history_cells, row_cells
from tui.app.components.table_rows import BulkRowTable
from tui.app.table_columns import (
    CELL_KEYS,
    COLUMNS_BY_KEY,
    COUNTED_KEYS,
    TableLayout,
    Variety,
    default_choice,
    table_layout,
)
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary

__all__ = ["ResultsTable", "Cell", "row_cells", "history_cells"]

TITLE = "Results"
_NO_CELL = Cell("")


class ResultsTable(BulkRowTable):
    """The table of runs (row key = run id): previous sessions' runs first, then this session's.

    ``columns``: the user's choice of columns (column key -> shown; missing keys take their default).
    """

    BORDER_TITLE = TITLE

    sort_column: reactive[str | None] = reactive(None, init=False)
    """The column key rows are sorted by, or None for queue order."""

    sort_reverse: reactive[bool] = reactive(False, init=False)
    """Descending order when True."""

    class RunMessage(Message):
        """A message about one run's row."""

        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id
            """The run under the cursor, or whose details to show."""

    class RunHighlighted(RunMessage):
        """The cursor moved to a run's row."""

    class DetailsRequested(RunMessage):
        """The user pressed Enter (or clicked) on a run's row."""

    class OptionsRequested(Message):
        """The user pressed Enter on a table with no rows: there is nothing to open, so the options are wanted."""

    def __init__(self, *, id: str | None = None, columns: Mapping[str, bool] | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.fixed_columns = 2  # status and speedup stay on screen while the rest scrolls sideways
        self._set_value_keys(CELL_KEYS)
        self._cells: dict[str, dict[str, Cell]] = {}
        """The rows shown, in queue order (history first): their cells by column key."""
        self._history: dict[str, dict[str, Cell]] = {}
        """Every previous run's cells, shown or not, oldest first."""
        self._session: dict[str, dict[str, Cell]] = {}
        """This session's runs' cells, in queue order."""
        self._history_shown = True
        self._stash: tuple | None = None
        """The row maps shown before ``h`` hid the history (put back by the next ``h``)."""
        self._choice = {**default_choice(), **(columns or {})}
        self._variety = Variety()
        self._layout: TableLayout | None = None
        self._vs_base: dict[str, Cell] | None = None
        """Each row's ``vs base`` cell while a baseline is marked (tui.app.baselines), else None: no column."""
        self._sort_stale = False
        """A rewrite changed cells of the sorted column since the last sort (:meth:`_keep_sorted`)."""
        self._compact: tuple[str, ...] = ()
        """The option columns the ``config`` cells fold now (none: no ``config`` column)."""
        self.names = FileNames()
        """Every row's workload names (shown or not; the queue, chart and notices use them too): files told apart."""

    def on_mount(self) -> None:
        """Create the columns (unless rows added before made them)."""
        self._apply_layout()

    # ----- columns ----------------------------------------------------------------

    @property
    def column_choice(self) -> dict[str, bool]:
        """The user's choice: every available column key -> shown."""
        return dict(self._choice)

    def choose_columns(self, choice: Mapping[str, bool]) -> None:
        """Show or hide columns (column key -> shown; missing keys keep their choice; status always shows)."""
        self._choice.update({key: bool(shown) for key, shown in choice.items() if key in self._choice})
        if self.sort_column is not None and not self._choice.get(self.sort_column, True):
            self.sort_column = None  # rows sorted by a column the user no longer sees would look unsorted
        self._apply_layout()

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The keys of the columns on screen, in order."""
        return self._layout.keys if self._layout is not None else ()

    def header_of(self, column: str | None) -> str:
        """A column's header (``queue order`` for None)."""
        return COLUMNS_BY_KEY[column].header if column in COLUMNS_BY_KEY else "queue order"

    def _apply_layout(self) -> None:
        """Columns and title for the rows, the choice and the width now; the columns are set again only when
        they changed (and every row's ``config`` cell when the columns it folds changed)."""
        choice = {**self._choice, "vs_base": self._choice["vs_base"] and self._vs_base is not None}
        width = self.scrollable_content_region.width if self.is_mounted and self.size.width else None
        layout = table_layout(choice, self._variety, self._history_shown, width, self.cell_padding)
        if layout == self._layout:
            return
        if self._layout is None or layout.compact != self._layout.compact:
            self._fold_config(layout.compact)
        if self._layout is None or layout.columns != self._layout.columns:
            self._set_columns([(c.key, self._header_text(c.key), c.width) for c in layout.columns])
        self._layout = layout
        self.border_title = " · ".join([TITLE, " ".join(layout.shared)] if layout.shared else [TITLE])
        self.update_hint()

    def _fold_config(self, keys: tuple[str, ...]) -> None:
        """Every row's ``config`` cell for the columns ``keys`` it folds (none: empty), in one pass and one redraw.

        The cells change in place (a row's dict is shared by the maps it is in); a shown row's value too, a
        hidden previous row's is made again when the history shows (its stashed row is dropped).
        """
        self._compact = keys
        changed = False
        for rows in (self._history, self._session):
            for run_id, cells in rows.items():
                new = config_cell(cells, keys) if keys else _NO_CELL
                if new == cells["config"]:
                    continue
                cells["config"] = new
                changed = True
                if run_id in self._cells:
                    self._set_value(run_id, "config", new)
                else:
                    self._stash = None
        if changed:
            self._values_redrawn()

    def _with_config(self, cells: dict[str, Cell]) -> dict[str, Cell]:
        cells["config"] = config_cell(cells, self._compact) if self._compact else _NO_CELL
        return cells

    def _header_text(self, key: str) -> Text:
        arrow = (" ▼" if self.sort_reverse else " ▲") if key == self.sort_column else ""
        return Text(self.header_of(key) + arrow)

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

    def update_hint(self) -> None:
        """The pane's subtitle says how many previous runs are hidden (an empty table is not empty history),
        and which columns that tell the rows apart do not fit (the sidebar hidden or the pane zoomed widens it)."""
        hints = []
        layout, width = self._layout, self.scrollable_content_region.width
        off_screen = layout.off_screen(width, self.cell_padding) if layout is not None and self.size.width else []
        if off_screen:
            names = ", ".join(off_screen)
            if len(names) > self.size.width // 3:
                names = f"{len(off_screen)} columns"
            hints.append(f"{names} off screen · b/z widen")
        hidden = 0 if self._history_shown else len(self._history)
        if hidden:
            hints.append(f"{hidden} previous run{'s' if hidden != 1 else ''} hidden · h shows them")
        self.border_subtitle = " · ".join(hints)

    def on_resize(self) -> None:
        """The columns that tell the rows apart may fit now (``b``, ``z``), or no longer; while the table follows the
        newest run, its row stays in view (a smaller terminal, or the queue growing under the table, keeps the top
        row and would hide it). A cursor the user moved, and a view scrolled away from it, stay where they are."""
        self._apply_layout()
        self.update_hint()
        if self.row_count and self.following:
            self.call_after_refresh(self._scroll_cursor_into_view)

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
            cells = self._session[run_id] = self._cells[run_id] = self._with_config(
                self._with_base(run_id, self._named(row_cells(record))))
            self._variety.add(cells, history=False)
            added.append(run_id)
        if added:
            self._append_rows(added)
            self._apply_layout()

    def add_history(self, rows: Sequence[tuple[str, dict[str, Cell]]]) -> int:
        """Previous runs' rows (cells from :func:`history_cells`) after the known ones, before this session's.

        A run id already in the history takes the new cells (a later line of the file); one of
        this session's runs is left as it is. Returns how many rows are new.
        """
        added = []
        for run_id, cells in rows:
            if run_id in self._session:
                continue
            cells = self._named(cells)
            known = self._history.get(run_id)
            if known is not None:
                self._variety.add(known, history=True, sign=-1)
            self._variety.add(cells, history=True)
            cells = self._history[run_id] = self._with_config(self._with_base(run_id, cells))
            if not self._history_shown:
                self._forget_row(run_id)  # its row is made again from these cells when shown
                self._stash = None
                continue
            if known is not None:
                self._rewrite(run_id, cells)
            else:
                self._cells[run_id] = cells
                added.append(run_id)
        self._apply_layout()
        if not added:
            self._keep_sorted()
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
        else:
            if not show:
                self._stash = (self._stash_rows(), len(self._session), (self.sort_column, self.sort_reverse))
            self._rebuild_rows(selected)
        self._apply_layout()

    def refresh_record(self, record: RunRecord, summary: RunSummary | None = None, *,
                       members: Sequence[RunRecord] | None = None) -> int:
        """Rewrite the cells of this run's (or group's: ``members``, see :func:`row_cells`) row that changed.

        Returns how many did. A change in the sorted column moves the row to its place (:meth:`_keep_sorted`).
        """
        run_id = record.run_id
        if run_id not in self._cells:
            return 0
        history = run_id in self._history
        old = self._cells[run_id]
        cells = self._named(row_cells(record, summary, history=history, members=members))
        changed = self._rewrite(run_id, self._with_config(self._with_base(run_id, cells)))
        if changed and any(old[key] is not self._cells[run_id][key] for key in COUNTED_KEYS):
            self._variety.add(old, history, sign=-1)  # a group's process count in its flags, a pooled run's GPU
            self._variety.add(self._cells[run_id], history)
            self._apply_layout()
        self._keep_sorted()
        return changed

    def _rewrite(self, run_id: str, new: dict[str, Cell]) -> int:
        """Write the cells of a shown row that changed; a change in the sorted column leaves the order to
        :meth:`_keep_sorted`, which the caller runs once after its rewrites."""
        old = self._cells.get(run_id)
        if old is None:
            return 0
        shown = self._column_locations
        changed = 0
        for key in CELL_KEYS:
            if new[key] != old[key]:
                self._sort_stale = self._sort_stale or key == self.sort_column
                if key in shown:
                    try:
                        self.update_cell(run_id, key, new[key])
                    except CellDoesNotExist:
                        return changed
                else:
                    self._set_value(run_id, key, new[key])
                changed += 1
        self._cells[run_id] = new
        (self._history if run_id in self._history else self._session)[run_id] = new
        return changed

    # ----- the baseline's column -----------------------------------------------------

    def _with_base(self, run_id: str, cells: dict[str, Cell]) -> dict[str, Cell]:
        if self._vs_base is not None and run_id in self._vs_base:
            cells["vs_base"] = self._vs_base[run_id]
        return cells

    def _rebased(self, run_id: str, old: dict[str, Cell]) -> dict[str, Cell] | None:
        new = self._with_base(run_id, {**old, "vs_base": _NO_CELL})
        return None if new["vs_base"] == old["vs_base"] else new

    def show_vs_base(self, cells: dict[str, Cell] | None) -> None:
        """Each row's ``vs base`` cell (rows left out show none); None: no baseline, no column."""
        self._vs_base = None if cells is None else dict(cells)
        self._rewrite_rows(self._rebased)
        self._apply_layout()
        self._keep_sorted()

    def _rewrite_rows(self, change: Callable[[str, dict[str, Cell]], dict[str, Cell] | None]) -> None:
        """Every row, shown or hidden, whose cells ``change`` makes anew (None: it stays), counted again."""
        for rows, history in ((self._history, True), (self._session, False)):
            for run_id, old in list(rows.items()):
                new = change(run_id, old)
                if new is None:
                    continue
                self._variety.add(old, history, sign=-1)
                self._variety.add(new, history)
                if run_id in self._cells:
                    self._rewrite(run_id, new)
                else:
                    rows[run_id] = new
                    self._stash = None  # a hidden row changed: showing the history rebuilds the rows

    def _named(self, cells: dict[str, Cell]) -> dict[str, Cell]:
        """``cells`` with a user's file named by the listing's rule; the rows of the files of its name that it
        tells apart now (``model.py`` -> ``a/model.py``) are written again."""
        changed = self.names.name(cells)
        if changed:
            self._rewrite_rows(lambda _, old: None if (new := self.names.renamed(old, changed)) is None
                               else self._with_config(new))
        return cells

    def _keep_sorted(self) -> None:
        """Re-sort, once, after rewrites changed cells of the sorted column: the sort stays true as runs end and
        as a new baseline changes the ``vs base`` cells (the cursor stays on its run)."""
        if self._sort_stale:
            self._apply_sort(self.selected_run_id)

    def cell_text(self, run_id: str, column: str) -> str:
        """The plain text of one cell, shown or not (for tests and the command line)."""
        return self._cells[run_id][column].plain

    # ----- the rows, set in bulk (BulkRowTable) -----------------------------------

    def _row_values(self, key: str) -> list[Cell]:
        cells = self._cells[key]
        return [cells[column] for column in CELL_KEYS]

    def _rebuild_rows(self, selected: str | None) -> None:
        """The rows become the queue order (history first when shown, then this session's), in one pass."""
        self._cells = {**self._history, **self._session} if self._history_shown else dict(self._session)
        self._set_rows(self._cells, selected)

    def _after_rows_changed(self, selected: str | None, resort: bool) -> None:
        if self.sort_column is not None or resort:
            self._apply_sort(selected)
        else:
            self._restore_cursor(selected)

    # ----- drawing -----------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        """DataTable's line ``y`` of the widget, each cell the pane's edge cuts ending in ``…`` without a piece of a
        number (tui.app.components.edge_cut): a piece of a number reads as another number."""
        strip = super().render_line(y)
        run_id = run_on_line(self, y)
        cells = self._cells.get(run_id) if run_id is not None else None
        return strip if cells is None else cut_at_edges(self, strip, cells, self.scroll_offset.x)

    # ----- sorting ----------------------------------------------------------------

    def sort_by(self, column: str | None, reverse: bool | None = None) -> None:
        """Sort by a column key (None: back to queue order); ``reverse`` None keeps the direction."""
        if column is not None and column not in CELL_KEYS:
            raise ValueError(f"unknown column {column!r}")
        if reverse is not None:
            self.sort_reverse = reverse
        self.sort_column = column

    def cycle_sort(self) -> str | None:
        """Sort by the next column on screen (after the last one: queue order); returns the new column key."""
        order: list[str | None] = [None, *self.shown_columns]
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
        self._sort_stale = False
        column = self.sort_column
        # DataTable.sort is stable over insertion (= queue) order, so ties keep queue order.
        if column is None:
            self.sort(key=lambda _cells: 0)
        else:
            self.sort(column, key=lambda cell: cell.sort_key, reverse=self.sort_reverse)
        for key in self.shown_columns:
            if key in self.columns:
                self.columns[key].label = self._header_text(key)  # type: ignore[index]
        self._restore_cursor(selected)
        self.refresh()

    # ----- events -------------------------------------------------------------------

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key  # None for a key pressed in an empty table (every previous run hidden)
        if key is not None and key.value is not None:
            self.post_message(self.RunHighlighted(key.value))

    def action_select_cursor(self) -> None:
        """Enter on a row opens its details; on an empty table (a first start) it goes to the run options."""
        if self.row_count == 0:
            self.post_message(self.OptionsRequested())
            return
        super().action_select_cursor()

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
