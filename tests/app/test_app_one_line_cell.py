"""One-line cells drawn straight to segments are what Textual's own ``DataTable._render_cell`` draws.

:class:`~tui.app.components.one_line_cell.OneLineCells` skips Textual's Padding / Styled /
render_lines chain for speed; these tests draw every cell both ways, in every cursor and hover
state, at widths that fit, pad, cut and leave no room, and need the same segments: the text, its
styles, the padding and the row / column meta a click reads. A Textual or Rich upgrade that draws
cells another way fails here.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from big_history import write_big_history
from tui import paths
from tui.app.components.result_cells import Cell
from tui.app.components.results_table import ResultsTable, history_cells
from tui.app.components.table_rows import BulkRowTable
from tui.engine.options import RunOptions
from tui.engine.store.history import History
from tui.engine.store.results import RunRecord
from tui.engine.status import RunStatus


class _Table(BulkRowTable):
    """A bulk table of arbitrary cells: Text with spans and every justification and overflow, markup
    strings, numbers, wide characters, an empty cell, a renderable that is not text."""

    def __init__(self, rows: dict[str, list[object]], widths: list[int]) -> None:
        super().__init__(cursor_type="cell", zebra_stripes=True)
        self._rows, self._widths = rows, widths
        self.fixed_columns = 1

    def on_mount(self) -> None:
        keys = [f"c{i}" for i in range(len(self._widths))]
        self._set_value_keys(keys)
        self._set_columns([(key, Text(key), width) for key, width in zip(keys, self._widths, strict=True)])
        self._set_rows(list(self._rows), None)

    def _row_values(self, key: str) -> list[object]:
        return self._rows[key]


def _cells() -> list[object]:
    spanned = Text("fast 1.19× [1.19, 1.20]", style="green")
    spanned.stylize("bold", 5, 10)
    return [
        Cell("run-0001"),
        spanned,
        Text("right", justify="right"),
        Text("centred", justify="center", style="italic"),
        Text("a very long text that is cut", overflow="ellipsis", no_wrap=True),
        Text("crop me, this is long", overflow="crop", no_wrap=True),
        Text("full justified words", justify="full"),
        "[bold red]markup[/] string",
        1.23456,
        "テスト幅広い文字",
        Text(""),
        Cell("1.19×", style="bold green", justify="right"),
        Text.from_markup("[@click=app.bell]go[/] there"),  # its own click meta and link: Textual draws it
        Text("two\nlines"),  # not one line: Textual draws it
        Text("tab\there"),
    ]


def _both_ways(table: BulkRowTable, row: int, column: int, width: int, cursor: bool, hover: bool) -> tuple:
    """The cell drawn by Textual's DataTable and by the bulk table, each from an empty cache."""
    base = table.rich_style
    table._cell_render_cache.clear()
    textual = DataTable._render_cell(table, row, column, base, width, cursor, hover)
    table._cell_render_cache.clear()
    ours = table._render_cell(row, column, base, width, cursor, hover)
    return textual, ours


def _segments(lines: list[list[Segment]]) -> list[list[tuple]]:
    """Each line's segments, neighbours of one style joined (as DataTable joins them in the line it draws), with
    their meta in order (Style equality compares the meta as a dict)."""
    return [[(segment, list((segment.style.meta if segment.style else {}).items())) for segment in
             Segment.simplify(line)] for line in lines]


class _One(App):
    def __init__(self, table: BulkRowTable) -> None:
        super().__init__()
        self._table = table

    def compose(self) -> ComposeResult:
        yield self._table


async def test_every_kind_of_cell_is_drawn_as_textual_draws_it():
    cells = _cells()
    rows = {f"r{i}": [cells[(i + j) % len(cells)] for j in range(len(cells))] for i in range(len(cells))}
    table = _Table(rows, widths=[12] * len(cells))
    async with _One(table).run_test(size=(200, 30)) as pilot:
        await pilot.pause()
        table.move_cursor(row=2, column=3)
        compared = drawn_fast = 0
        for row in range(table.row_count):
            for column in range(len(cells)):
                for width in (1, 2, 3, 7, 12, 30):
                    for cursor, hover in ((False, False), (True, False), (False, True), (True, True)):
                        textual, ours = _both_ways(table, row, column, width, cursor, hover)
                        assert _segments(ours) == _segments(textual), (row, column, width, cursor, hover)
                        compared += 1
        # The fast path covered most cells (the two-line one, the linked one and the no-room widths go to Textual's).
        table._cell_render_cache.clear()
        for row in range(table.row_count):
            for column in range(len(cells)):
                key = (table._row_locations.get_key(row), table._column_locations.get_key(column))
                drawn_fast += table._one_line is not None and _drawn_fast(table, row, column, key)
        assert compared == len(cells) * len(cells) * 6 * 4
        assert drawn_fast >= (len(cells) - 2) * len(cells)


def _drawn_fast(table: BulkRowTable, row: int, column: int, key: tuple) -> bool:
    """Whether the bulk table drew this cell itself (Textual's Padding chain was not called)."""
    called = []
    original = DataTable._render_cell

    def spy(*args, **kwargs):
        called.append(args)
        return original(*args, **kwargs)

    DataTable._render_cell = spy
    try:
        table._render_cell(row, column, table.rich_style, 12)
    finally:
        DataTable._render_cell = original
    return not called


async def test_the_results_tables_rows_are_drawn_as_textual_draws_them():
    path = paths.data_dir() / "history.jsonl"
    write_big_history(path, 8)
    records = History(path).load()[0]
    session = [RunRecord(f"session-{i}", RunOptions(workload="pointwise").validated()) for i in range(3)]
    session[1].status = RunStatus.FAILED
    table = ResultsTable()
    async with _One(table).run_test(size=(160, 24)) as pilot:
        table.add_history([(record.run_id, history_cells(record)) for record in records])
        table.add_records(session)
        await pilot.pause()
        table.move_cursor(row=4)
        await pilot.pause()
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        for row in range(table.row_count):
            for column, width in enumerate(widths):
                for cursor, hover in ((False, False), (True, False), (False, True)):
                    textual, ours = _both_ways(table, row, column, width, cursor, hover)
                    assert _segments(ours) == _segments(textual), (row, table.ordered_columns[column].key, cursor)
