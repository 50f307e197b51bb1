"""A DataTable whose rows are set in bulk: thousands of rows added, moved or swapped in one step.

Textual's ``DataTable`` (the pinned 8.2.8) removes a row in O(rows) (20,000 history rows took
8 minutes to hide one by one), adds one in ~40 µs, measures every new cell when idle (~0.4 ms a
row: 8 s of UI thread for 20,000 rows), and after every change, a rewritten cell included,
rebuilds in O(rows) its list of rows in order and of lines (for the next redraw, a cursor move,
a scroll). :class:`BulkRowTable` is for tables of fixed-width columns and one-line rows, which
need none of that: it keeps each row's ``RowKey``, ``Row`` and cell dict, sets the table's row
maps (``rows``, ``_data``, ``_row_locations``) at once, reads the order of rows and lines from
the row map, and measures nothing. These are ``DataTable`` internals:
``tests/app/test_app_big_history.py`` checks every operation against Textual's own ``add_row``
(rows, order, lines, what is drawn, the cursor), so a Textual upgrade that changes them fails there.

Its columns are set at once too (:meth:`BulkRowTable._set_columns`): a row keeps a value for
every column it could show (:meth:`BulkRowTable._set_value_keys`), so showing, hiding or moving
columns touches the columns alone, whatever the number of rows (``DataTable.add_column`` and
``remove_column`` visit every row).

It also follows a row (:meth:`BulkRowTable.follow`: the cursor goes to it, so it is in view) until
the user moves the cursor elsewhere by key or click; putting the cursor back on the last row, or
:meth:`BulkRowTable.resume_following`, follows again.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Sequence

from textual import events
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, Column, ColumnKey, Row, RowKey

from tui.app.components.one_line_cell import OneLineCells

__all__ = ["BulkRowTable"]

_Parts = tuple[RowKey, Row, dict[ColumnKey, Any]]
SegmentLines = list[list[Segment]]


class _RowLines:
    """``DataTable._y_offsets`` for one-line rows: line ``y`` is ``(row key, 0)``, found in O(1)."""

    __slots__ = ("_locations", "_count")

    def __init__(self, locations: TwoWayDict[RowKey, int], count: int) -> None:
        self._locations = locations
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, y: int) -> tuple[RowKey, int]:
        key = self._locations.get_key(y) if 0 <= y < self._count else None
        if key is None:
            raise IndexError(y)
        return key, 0

    def clear(self) -> None:
        """Nothing is cached (``DataTable.clear`` calls it)."""


class BulkRowTable(DataTable):
    """A DataTable of fixed-width columns and one-line rows keyed by strings, changed in bulk.

    A subclass names the values a row keeps (:meth:`_set_value_keys`), gives a row's values
    (:meth:`_row_values`) and may re-sort after a change (:meth:`_after_rows_changed`); it adds
    rows with :meth:`_append_rows` / :meth:`_insert_rows`, replaces them all with :meth:`_set_rows`,
    swaps them out and back with :meth:`_stash_rows` / :meth:`_unstash_rows`, and shows columns
    with :meth:`_set_columns`.
    """

    _ordered: tuple[TwoWayDict[RowKey, int], list[Row]] | None = None
    """:attr:`ordered_rows` and the row map it was made from (a class default: DataTable's
    ``__init__`` already reads it)."""
    _one_line: OneLineCells | None = None
    """Draws the body's one-line cells (made with the app's console on the first draw)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._parts: dict[str, _Parts] = {}
        """A row's key, Row and cell dict, made once and reused when it is shown again."""
        self._value_keys: list[ColumnKey] = []
        self._following = True

    # ----- following a row ----------------------------------------------------------

    @property
    def following(self) -> bool:
        """Whether :meth:`follow` moves the cursor: until the user moves it off the last row."""
        return self._following

    def follow(self, key: str) -> None:
        """Keep row ``key`` in view (the cursor on it), unless the user has moved the cursor away."""
        if not self._following:
            return
        row = self._row_locations.get(RowKey(key))
        if row is None:
            return
        if row != self.cursor_row:
            self.move_cursor(row=row, animate=False)
        else:
            # The same row may have been scrolled away (mouse wheel): bring it back after layout.
            self.call_after_refresh(self._scroll_cursor_into_view)

    def resume_following(self) -> None:
        """Follow again, wherever the cursor is (the user asked for something new to watch)."""
        self._following = True

    def _user_moved_cursor(self) -> None:
        # Moving away stops following; coming back to the last row (the newest) resumes it. A key in an empty table
        # (every previous run hidden) moves nothing.
        if self.row_count:
            self._following = self.cursor_row == self.row_count - 1

    def action_cursor_up(self) -> None:
        """Move the cursor up (the user's move: see :attr:`following`)."""
        super().action_cursor_up()
        self._user_moved_cursor()

    def action_cursor_down(self) -> None:
        """Move the cursor down (the user's move: see :attr:`following`)."""
        super().action_cursor_down()
        self._user_moved_cursor()

    def action_page_up(self) -> None:
        """Move the cursor a page up (the user's move: see :attr:`following`)."""
        super().action_page_up()
        self._user_moved_cursor()

    def action_page_down(self) -> None:
        """Move the cursor a page down (the user's move: see :attr:`following`)."""
        super().action_page_down()
        self._user_moved_cursor()

    def action_scroll_top(self) -> None:
        """Move the cursor to the first row (the user's move: see :attr:`following`)."""
        super().action_scroll_top()
        self._user_moved_cursor()

    def action_scroll_bottom(self) -> None:
        """Move the cursor to the last row (the user's move: see :attr:`following`)."""
        super().action_scroll_bottom()
        self._user_moved_cursor()

    def action_cursor_right(self) -> None:
        """In a row table, scroll sideways to the next stop (:meth:`_column_stops`): Textual's row cursor scrolls one
        cell a press, and at 80x24 reaching the compile column took some 90 presses."""
        if self.cursor_type != "row":
            return super().action_cursor_right()
        stops = self._column_stops()
        self.scroll_to(x=next((x for x in stops if x > self.scroll_x + 0.5), self.max_scroll_x), animate=False)

    def action_cursor_left(self) -> None:
        """In a row table, scroll sideways back to the previous stop (see :meth:`action_cursor_right`)."""
        if self.cursor_type != "row":
            return super().action_cursor_left()
        stops = self._column_stops()
        self.scroll_to(x=max((x for x in stops if x < self.scroll_x - 0.5), default=0), animate=False)

    def _column_stops(self) -> list[int]:
        """The sideways scroll offsets that put a scrolling column (past the fixed ones) at the view's left edge,
        and those that put its right end at the view's right edge: where the view is narrower than a column (6
        cells beside the fixed ones at 80x24), its right-aligned number is whole only at the second."""
        fixed = sum(column.get_render_width(self) for column in self.ordered_columns[:self.fixed_columns])
        view = max(1, self.scrollable_content_region.width - fixed)
        top = int(self.max_scroll_x)
        stops, x = {0, top}, 0
        for column in self.ordered_columns[self.fixed_columns:]:
            width = column.get_render_width(self)
            stops.update((x, x + width - view))
            x += width
        return sorted({min(max(stop, 0), top) for stop in stops})

    async def _on_click(self, event: events.Click) -> None:
        before = self.cursor_coordinate
        await super()._on_click(event)
        if self.cursor_coordinate != before:  # a header click sorts, it does not move the cursor
            self._user_moved_cursor()

    # ----- for subclasses ---------------------------------------------------------

    def _set_value_keys(self, keys: Sequence[str]) -> None:
        """The values every row keeps, shown as a column or not (before the first row is added)."""
        self._value_keys = [ColumnKey(key) for key in keys]

    def _row_values(self, key: str) -> Sequence[Any]:
        """The values of row ``key``, in the order of :meth:`_set_value_keys`."""
        raise NotImplementedError

    def _set_value(self, key: str, column: str, value: Any) -> None:
        """Change one value of row ``key`` (shown or not; ``update_cell`` then redraws a shown one)."""
        parts = self._parts.get(key)
        if parts is not None:
            parts[2][ColumnKey(column)] = value

    def _values_redrawn(self) -> None:
        """After :meth:`_set_value` changed many rows' values at once: every line is drawn again, in one redraw."""
        self._clear_caches()
        self._update_count += 1
        self.refresh()

    def _after_rows_changed(self, selected: str | None, resort: bool) -> None:
        """After rows changed: keep the cursor on ``selected``'s row (a subclass may sort first)."""
        self._restore_cursor(selected)

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor, or None for an empty table."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def _forget_row(self, key: str) -> None:
        """Make row ``key`` again from :meth:`_row_values` next time it is shown (not while it is a row)."""
        self._parts.pop(key, None)

    # ----- bulk changes -----------------------------------------------------------

    def _row_parts(self, key: str) -> _Parts:
        # The cell dict is the one update_cell writes to: it stays what the row shows.
        parts = self._parts.get(key)
        if parts is None:
            row_key = RowKey(key)
            values = dict(zip(self._value_keys, self._row_values(key), strict=False))
            parts = self._parts[key] = (row_key, Row(row_key, 1), values)
        return parts

    def _append_rows(self, keys: list[str]) -> None:
        """Rows for ``keys`` at the end, in O(len(keys)).

        The rows above keep their places, so what is drawn of them stays valid: the rendered
        lines are kept (``_update_count`` keys them; a bump would redraw every visible cell,
        ~50 ms on a busy 2-core box, for each chunk of a history).
        """
        selected = self.selected_key
        self._add_at_end(keys)
        self._rows_changed(selected, redraw=False)

    def _add_at_end(self, keys: Iterable[str]) -> None:
        locations, rows, data = self._row_locations, self.rows, self._data
        ordered = self._ordered[1] if self._ordered is not None and self._ordered[0] is locations else None
        index = len(rows)
        added = []
        for key in keys:
            row_key, row, values = self._row_parts(key)
            locations[row_key] = index
            rows[row_key] = row
            data[row_key] = values
            added.append(row)
            index += 1
        if ordered is not None and len(ordered) + len(added) == len(rows):
            self._ordered = (locations, ordered + added)

    def _insert_rows(self, keys: list[str], at: int) -> None:
        """Rows for ``keys`` at display index ``at``, the rows from there moving down: O(new + moved).

        For an unsorted table: the moved rows are re-inserted in the cell map too, whose order
        ``DataTable.sort`` keeps as the insertion order.
        """
        selected = self.selected_key
        locations, rows, data = self._row_locations, self.rows, self._data
        moved = [locations.get_key(index) for index in range(at, len(rows))]
        parts = [self._row_parts(key) for key in keys]
        parts += [(row_key, rows.pop(row_key), data.pop(row_key)) for row_key in moved if row_key is not None]
        for index, (row_key, row, values) in enumerate(parts, start=at):
            locations[row_key] = index  # every index from ``at`` on is set again: the reverse map stays exact
            rows[row_key] = row
            data[row_key] = values
        self._rows_changed(selected, redraw=True)

    def _set_rows(self, keys: Iterable[str], selected: str | None) -> None:
        """The rows become ``keys``, in this order, in one pass; the cursor stays on ``selected``'s row."""
        known = self._parts.get
        parts = [known(key) or self._row_parts(key) for key in keys]
        self.rows.clear()
        self.rows.update([(row_key, row) for row_key, row, _ in parts])
        self._data.clear()
        self._data.update([(row_key, values) for row_key, _, values in parts])
        self._row_locations = TwoWayDict({row_key: index for index, (row_key, _, _) in enumerate(parts)})
        self._ordered = (self._row_locations, [row for _, row, _ in parts])
        self._rows_changed(selected, redraw=True)

    def _stash_rows(self) -> tuple:
        """Take the row maps out (the table is left without rows, to be set): O(1)."""
        stash = (self.rows, self._data, self._row_locations, self._ordered)
        self.rows, self._data = {}, {}
        return stash

    def _unstash_rows(self, stash: tuple, more: Iterable[str], selected: str | None, *, resort: bool) -> None:
        """Put back row maps taken by :meth:`_stash_rows`, then rows for ``more`` at the end: O(len(more))."""
        self.rows, self._data, self._row_locations, self._ordered = stash
        self._add_at_end(more)
        self._rows_changed(selected, redraw=True, resort=resort)

    def _set_columns(self, columns: Sequence[tuple[str, Text, int]]) -> None:
        """The columns shown become ``(key, label, width)``, in this order: O(columns), the rows untouched.

        Every key must be one of :meth:`_set_value_keys`' (the rows have its values).
        """
        self.columns = {}
        locations = {}
        for index, (key, label, width) in enumerate(columns):
            column_key = ColumnKey(key)
            self.columns[column_key] = Column(column_key, label, width, content_width=cell_len(label.plain))
            locations[column_key] = index
        self._column_locations = TwoWayDict(locations)
        self._updated_cells.clear()
        self._clear_caches()
        self._update_count += 1
        self._require_update_dimensions = True
        self.check_idle()
        self.refresh()

    def _rows_changed(self, selected: str | None, *, redraw: bool, resort: bool = False) -> None:
        """After the row maps changed: caches, dimensions, then the order and the cursor."""
        self._new_rows.clear()  # nothing to measure (see _update_dimensions)
        self._updated_cells.clear()
        if redraw:
            self._clear_caches()
            self._update_count += 1
        self._require_update_dimensions = True
        self._after_rows_changed(selected, resort)
        self.check_idle()
        self.refresh()

    def _restore_cursor(self, selected: str | None) -> None:
        """The cursor on ``selected``'s row, or where it was (clamped) when that row is gone."""
        if not self.rows:
            return
        row = self._row_locations.get(RowKey(selected)) if selected is not None else None
        if row is None:
            row = min(self.cursor_row, len(self.rows) - 1)
        if row == self.cursor_row and selected is not None and self.selected_key == selected:
            return  # rows were added below: the cursor's row is where it was, nothing to scroll
        before = self.cursor_coordinate
        self.move_cursor(row=row, animate=False)
        if self.cursor_coordinate == before and self.selected_key != selected:
            self._highlight_cursor()  # the same place shows another row: say so

    # ----- DataTable's per-change work, for one-line rows of fixed-width columns ----

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> SegmentLines:
        """A body cell of one line drawn straight to segments (:meth:`_one_line_cell`); the header, the labels and
        anything else as DataTable draws them."""
        lines = self._one_line_cell(row_index, column_index, base_style, width, cursor, hover)
        if lines is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        return lines

    def _one_line_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool,
                       hover: bool) -> SegmentLines | None:
        """A body cell of a one-line row drawn by :class:`OneLineCells`, cached under DataTable's own key; None for
        the header's row, the labels' column and a cell that is not one line of text."""
        if row_index < 0 or column_index < 0:
            return None
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        row = self.rows.get(row_key) if row_key is not None else None
        if row_key is None or column_key is None or row is None or row.height != 1:
            return None
        key = (row_key, column_key, base_style, cursor, hover, self._show_hover_cursor, self._update_count,
               self._pseudo_class_state)
        lines = self._cell_render_cache.get(key)
        if lines is not None:
            return lines
        cells = self._get_row_renderables(row_index).cells
        if column_index >= len(cells):
            return None
        fixed = row_index < self.fixed_rows or column_index < self.fixed_columns
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, fixed, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css",
        )
        if self._one_line is None or self._one_line.console is not self.app.console:
            self._one_line = OneLineCells(self.app.console)
        meta = Style.from_meta({"row": row_index, "column": column_index})
        lines = self._one_line.draw(cells[column_index], width, self.cell_padding, base_style + component_style,
                                    post_style, meta)
        if lines is not None:
            self._cell_render_cache[key] = lines
        return lines

    @property
    def ordered_rows(self) -> list[Row]:
        """The rows in display order, made again only when the rows change (not per rewritten cell)."""
        locations = self._row_locations
        cached = self._ordered
        if cached is not None and cached[0] is locations and len(cached[1]) == len(self.rows):
            return cached[1]
        rows = self.rows
        get_key = locations.get_key
        ordered = [rows[get_key(index)] for index in range(len(rows))]  # type: ignore[index]
        self._ordered = (locations, ordered)
        return ordered

    @property
    def _y_offsets(self) -> _RowLines:  # type: ignore[override]
        """Which row each line shows: with one-line rows, read from the row map (no list of every line)."""
        return _RowLines(self._row_locations, len(self.rows))

    def _get_row_region(self, row_index: int) -> Region:
        """The region of row ``row_index``: with one-line rows its top is its index (DataTable sums the heights of
        every row above it, O(rows) on each cursor move and row refresh)."""
        if not self.is_valid_row_index(row_index):
            return Region(0, 0, 0, 0)
        width = sum(column.get_render_width(self) for column in self.columns.values()) + self._row_label_column_width
        return Region(0, self._row_top(row_index), max(self.size.width, width), 1)

    def _get_cell_region(self, coordinate: Coordinate) -> Region:
        """The region of the cell at ``coordinate``, its top found as :meth:`_get_row_region` finds it."""
        if not self.is_valid_coordinate(coordinate):
            return Region(0, 0, 0, 0)
        row_index, column_index = coordinate
        columns = self.ordered_columns
        x = sum(column.get_render_width(self) for column in columns[:column_index]) + self._row_label_column_width
        return Region(x, self._row_top(row_index), columns[column_index].get_render_width(self), 1)

    def _row_top(self, row_index: int) -> int:
        return row_index + (self.header_height if self.show_header else 0)

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The scrollable size; nothing to measure with fixed-width columns and one-line rows."""
        header = self.header_height if self.show_header else 0
        width = sum(column.get_render_width(self) for column in self.columns.values()) + self._row_label_column_width
        self.virtual_size = Size(width, len(self.rows) + header)
