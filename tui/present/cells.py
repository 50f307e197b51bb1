"""Prose folded to a width in terminal cells, not characters.

``textwrap`` counts characters, and a CJK character or an emoji takes two cells: a model's path or a
class name written in Chinese made a folded line wider than the screen, which the terminal then broke
again mid-word. :func:`wrap_cells` folds between words as ``textwrap.wrap`` does (a hyphen is no place to fold),
measuring each row with Rich's cell widths.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, chop_cells

__all__ = ["wrap_cells"]

_SPACES = re.compile(r"( +)")
_WHITESPACE = re.compile(r"\s")


def wrap_cells(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "",
               break_long_words: bool = True) -> list[str]:
    """``text``'s words in rows of at most ``width`` cells, the first row after ``initial_indent``, the others
    after ``subsequent_indent``; ``[]`` for blank text.

    As ``textwrap.wrap``: each whitespace character counts as a space, the spaces between two words on a row stay
    as they are (a table's aligned columns), and a row neither starts nor ends with them; the text's own leading
    spaces are dropped (give them as ``initial_indent``). A word wider than the room left on a row starts the
    next row; wider than that row's room too, it is cut by cells when ``break_long_words``, else left whole
    (wider than ``width``, for the terminal to wrap).
    """
    rows: list[str] = []
    row, empty = initial_indent, True  # empty: the row holds only its indent
    for gap, word in _words(text):
        joined = word if empty else gap + word
        if cell_len(row) + cell_len(joined) <= width:
            row, empty = row + joined, False
            continue
        if not empty:
            rows.append(row)
            row = subsequent_indent
        room = max(1, width - cell_len(row))
        while break_long_words and cell_len(word) > room:
            head = chop_cells(word, room)[0] or word[0]  # a row of one cell takes a wide character whole
            rows.append(row + head)
            word, row = word[len(head):], subsequent_indent
            room = max(1, width - cell_len(row))
        row, empty = row + word, not word
    if not empty:
        rows.append(row)
    return rows


def _words(text: str) -> list[tuple[str, str]]:
    """``text``'s words, each with the spaces before it (``""`` for the first)."""
    pieces = _SPACES.split(_WHITESPACE.sub(" ", text.expandtabs()).strip(" "))
    return [("" if n == 0 else pieces[n - 1], pieces[n]) for n in range(0, len(pieces), 2) if pieces[n]]
