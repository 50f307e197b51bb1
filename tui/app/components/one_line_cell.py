"""One-line DataTable cells drawn straight to segments: the segments Textual's ``_render_cell`` makes, cheaper.

Textual's ``DataTable`` (the pinned 8.2.8) draws each cell by wrapping it in ``Padding`` and
``Styled`` and passing that through ``Console.render_lines``, so a table drawn anew (rows added
under the cursor, a history chunk followed, a sort) costs the UI thread tens of milliseconds
(docs/BENCHMARKS.md, the history load). For a cell of one line of :class:`~rich.text.Text` (or an
object whose ``__rich__`` makes one), the same segments come from the text's own wrap and render,
padded and styled the way ``Padding`` and ``Styled`` do it, and a text seen before is not drawn
again. :class:`OneLineCells` makes them, or answers None for a cell it does not cover (another
renderable, a line break, no room), which Textual then draws.
``tests/app/test_app_one_line_cell.py`` checks cells of every kind against Textual's own.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.protocol import rich_cast
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache

__all__ = ["OneLineCells"]

_NULL = Style.null()


class OneLineCells:
    """Draws one-line cells on ``console``, keeping each distinct text's unstyled line (a table's cells
    repeat: a workload, a mode, a status on thousands of rows), so a cell seen before costs only its styling."""

    def __init__(self, console: Console, size: int = 4096) -> None:
        self.console = console
        self._lines: LRUCache[tuple, list[Segment] | None] = LRUCache(size)

    def draw(self, cell: object, width: int, padding: int, pre_style: Style,
             post_style: Style, meta: Style = _NULL) -> list[list[Segment]] | None:
        """The one line of ``cell`` at ``width`` cells, ``padding`` spaces each side, styled
        ``pre_style`` under and ``post_style`` over the text's own styles, then ``meta`` (the cell's
        click meta) added to each segment; None when ``cell`` is not a one-line Text that fits this way.

        The styled line is kept per text and styles: cells of a column repeat (a workload, a mode, a
        status), and only the meta, a cell's own, is added anew.
        """
        text = rich_cast(cell)  # a cell object that draws itself as Text (``__rich__``), as Console.render does
        if not isinstance(text, Text) or _linked(text):
            return None
        key = (text.plain, text.style, text.justify, text.overflow, text.no_wrap, text.tab_size,
               tuple(text.spans), width, padding, pre_style, post_style)
        styled = self._lines.get(key, _MISSING)
        if styled is _MISSING:
            line = _unstyled_line(self.console, text, width - 2 * padding, padding)
            styled = None if line is None else list(Segment.simplify(Segment.apply_style(line, pre_style, post_style)))
            self._lines[key] = styled
        if styled is None:
            return None
        if not meta:
            return [list(styled)]
        return [[Segment(segment.text, segment.style + meta if segment.style else meta) for segment in styled]]


_MISSING: Any = object()


def _linked(text: Text) -> bool:
    """Whether ``text`` has a link or click meta of its own (``[@click=...]``): Textual draws it, so that the cell's
    meta goes under the span's and hover marks the span's segments alone, as Textual's own drawing does."""
    styles = [text.style, *(span.style for span in text.spans)]
    return any(isinstance(style, Style) and (style.link or style.meta) or isinstance(style, str) and
               ("@" in style or "link" in style) for style in styles)


def _unstyled_line(console: Console, text: Text, inner: int, padding: int) -> list[Segment] | None:
    """The segments of ``text`` on one line of ``inner`` cells, ``padding`` spaces each side, as
    ``Padding`` inside ``Console.render_lines`` makes them; None when it is not one line.

    The console options Textual draws a one-line cell with (``App.console_options`` with
    ``no_wrap``) set no justification or overflow of their own: the text's, or Rich's defaults.
    """
    if inner < 1 or "\n" in text.plain:
        return None
    lines = text.wrap(
        console, inner,
        justify=text.justify or "default",
        overflow=text.overflow or "fold",
        tab_size=text.tab_size or console.tab_size or 8,
        no_wrap=text.no_wrap if text.no_wrap is not None else True,
    )
    if len(lines) != 1:
        return None
    # Joined as Text.__rich_console__ joins its lines: the text's own style becomes a span.
    joined = Text("\n").join(lines)
    line = Segment.adjust_line_length(list(joined.render(console, end="")), inner, style=_NULL, pad=True)
    if padding:
        pad = Segment(" " * padding, _NULL)
        line = [pad, *line, pad]
    return line
