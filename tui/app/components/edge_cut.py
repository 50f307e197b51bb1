"""A results cell the pane's edge cuts ends in an ellipsis, and never shows a piece of a number.

The results table scrolls sideways: a column can end past the pane's right edge, or start under
the fixed status and speedup columns once scrolled. Drawn as it is, a cell would show a piece of
its text, and a piece of a number reads as another number (``0.00`` of ``0.00120``, ``LB 1.0`` of
``LB 1.05×``, ``3.4`` of ``123.4``). The rule for a text too long for its own column (Rich's
``overflow="ellipsis"``, :class:`~tui.app.components.result_cells.Cell`) applies at the edge too: the
part of the text that fits, in its place, and ``…`` at the edge where it goes on; the part is
shortened to leave out any number it would cut (``redu…``, ``n= …``, ``LB  …``, ``   …``). A cell
whose text is whole on screen, or none of it, is left as it is, and so are the headers: a word cut
reads as no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import DataTable

__all__ = ["EdgeCut", "cut_at_edges", "drawn_text", "edge_cut", "redrawn", "run_on_line"]

ELLIPSIS = "…"
_NUMBER = frozenset("0123456789.")
"""The characters of a number as the table writes them (tui.present.format): a cut between two is inside one."""


@dataclass(frozen=True)
class EdgeCut:
    """What the screen cells ``[start, end)`` of a cut cell show instead (``text``, as many cells wide)."""

    start: int
    end: int
    text: str


def cut_at_edges(table: DataTable, strip: Strip, cells: Mapping[str, Any], scroll_x: int) -> Strip:
    """A row's line of ``table`` as DataTable draws it (``strip``, scrolled ``scroll_x`` cells sideways), each
    cell the edge cuts redrawn; ``cells``: the row's cells (``plain`` and ``justify``) by column key.

    The fixed columns stay put from the left edge; the others scroll under them."""
    padding, width = table.cell_padding, table.size.width
    columns = table.ordered_columns
    fixed = sum(column.get_render_width(table) for column in columns[:table.fixed_columns])
    start = 0
    for index, column in enumerate(columns):
        cell = cells.get(column.key.value) if column.key.value is not None else None
        content, low = (start + padding, 0) if index < table.fixed_columns else (start + padding - scroll_x, fixed)
        start += column.get_render_width(table)
        if cell is None:
            continue
        offset, text = drawn_text(cell.plain, cell.justify, column.width)
        cut = edge_cut(text, content + offset, low, width)
        if cut is not None:
            strip = redrawn(strip, cut)
    return strip


def run_on_line(table: DataTable, y: int) -> str | None:
    """The key of the row that ``table``'s line ``y`` (of the widget, as ``render_line`` counts) shows; None on the
    header and below the last row. The header and the fixed rows stay put and the others scroll, as DataTable
    places them; every row is one line (:class:`~tui.app.components.table_rows.BulkRowTable`)."""
    header = table.header_height if table.show_header else 0
    if y < header:
        return None
    index = y - header
    if index >= table.fixed_rows:
        index += table.scroll_offset.y
    rows = table.ordered_rows
    return rows[index].key.value if index < len(rows) else None


def drawn_text(plain: str, justify: str, width: int) -> tuple[int, str]:
    """Where in its column's ``width`` cells a cell's text starts, and the text drawn (as Rich draws one
    line: justified, and ended by ``…`` when too long)."""
    if cell_len(plain) > width:
        return 0, _head(plain, width - 1, whole_numbers=False) + ELLIPSIS
    spare = width - cell_len(plain)
    return {"right": spare, "center": spare // 2}.get(justify, 0), plain


def edge_cut(text: str, at: int, low: int, high: int) -> EdgeCut | None:
    """The cut of a cell's drawn ``text`` that starts at screen cell ``at``, where the screen shows
    ``[low, high)`` of the line; None when the text is whole on screen or none of it is."""
    end = at + cell_len(text)
    first, last = max(at, low), min(end, high)
    if first >= last or (at >= low and end <= high):
        return None
    if at >= low:  # the right end hidden: the head that fits, the ellipsis at the edge
        return EdgeCut(at, last, _fill(_head(text, last - at - 1), last - at - 1) + ELLIPSIS)
    if end <= high:  # the left end hidden: the ellipsis at the edge, the tail that fits
        tail = _tail(text, end - first - 1)
        return EdgeCut(first, end, ELLIPSIS + " " * (end - first - 1 - cell_len(tail)) + tail)
    return EdgeCut(first, last, _fill(ELLIPSIS, last - first))  # both ends hidden


def _fill(text: str, cells: int) -> str:
    return text + " " * (cells - cell_len(text))


def _head(plain: str, cells: int, whole_numbers: bool = True) -> str:
    """The longest start of ``plain`` in ``cells`` cells (that does not end inside a number)."""
    size, used = 0, 0
    for char in plain:
        used += cell_len(char)
        if used > cells:
            break
        size += 1
    while whole_numbers and 0 < size < len(plain) and plain[size - 1] in _NUMBER and plain[size] in _NUMBER:
        size -= 1
    return plain[:size]


def _tail(plain: str, cells: int) -> str:
    """The longest end of ``plain`` in ``cells`` cells that does not start inside a number."""
    return _head(plain[::-1], cells)[::-1]


def redrawn(strip: Strip, cut: EdgeCut) -> Strip:
    """``strip`` with the cut's cells showing its text, each cell in the style it had (the cursor's row keeps
    its highlight, a coloured value its colour)."""
    before, inside, after = strip.divide([cut.start, cut.end, strip.cell_length])
    segments = list(inside)
    pieces = Segment.divide([Segment(cut.text)], accumulate(segment.cell_length for segment in segments))
    new = [Segment("".join(piece.text for piece in parts), segment.style)
           for segment, parts in zip(segments, pieces, strict=True)]
    return Strip([*before, *new, *after])
