"""Rich text that folds a word too wide for its column at a separator, not at whatever letter the width falls on.

A table cell narrower than a file's name folded it by letters: ``example_workload.py`` read ``example_workl`` /
``oad.py`` in a 13-column run column. :class:`SeparatorText` folds such a word after a ``_``, ``.``, ``/``, ``-``
or ``=`` (``example_`` / ``workload.py``, ``max-autotune-`` / ``no-cudagraphs``, ``optimization=`` / ``False`` of an
inductor option a label names), and by letters only where a piece between
separators is itself wider than the column; words that fit are wrapped between words as Rich wraps them. What is
measured and drawn otherwise is Rich's own :class:`rich.text.Text`.
"""

from __future__ import annotations

import re
from typing import Any

from rich.cells import cell_len, chop_cells
from rich.containers import Lines
from rich.measure import Measurement
from rich.text import Text

__all__ = ["SeparatorText", "WholeWordText", "separator_breaks", "word_pieces", "SEPARATORS"]

SEPARATORS = "_./-="
"""Where a word too wide for its column may break: after any of these."""
_WORD = re.compile(r"[^\S\xa0]*(?:\S|\xa0)+[^\S\xa0]*")
"""A word and the spaces around it; a no-break space (U+00A0) joins, as its name says (Rich breaks at it)."""
_PIECE = re.compile(rf"[^{re.escape(SEPARATORS)}]*[{re.escape(SEPARATORS)}]+|[^{re.escape(SEPARATORS)}]+")


def word_pieces(word: str) -> list[str]:
    """``word`` cut after each run of separators: ``example_workload.py`` -> ``example_``, ``workload.``, ``py``."""
    return _PIECE.findall(word)


def separator_breaks(text: str, width: int) -> list[int]:
    """Where to break one line of ``text`` so that each part fits ``width`` cells: between words, and inside a word
    wider than ``width`` after a separator (by letters only in a piece wider than ``width``). Offsets in characters,
    as :meth:`rich.text.Text.divide` takes them."""
    breaks: list[int] = []
    used = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = cell_len(word.rstrip())
        if used + length <= width:
            used += cell_len(word)
            continue
        if length <= width:  # fits a line of its own
            if used and start:
                breaks.append(start)
            used = cell_len(word)
            continue
        used = _fold_word(word, start, used, width, breaks)
    return breaks


def _fold_word(word: str, start: int, used: int, width: int, breaks: list[int]) -> int:
    """Place a word wider than ``width`` piece by piece from ``start``, ``used`` cells into the line; the cells used
    on the line it ends on."""
    position = start
    for piece in word_pieces(word):
        length = cell_len(piece.rstrip())
        if used + length > width and used and position:
            breaks.append(position)
            used = 0
        if length <= width:
            used += cell_len(piece)
            position += len(piece)
            continue
        chunks = chop_cells(piece, width)
        for chunk in chunks[:-1]:
            position += len(chunk)
            breaks.append(position)
        used = cell_len(chunks[-1])
        position += len(chunks[-1])
    return used


class SeparatorText(Text):
    """:class:`rich.text.Text` whose words too wide for the width they are drawn in fold at a separator."""

    def __rich_measure__(self, console: Any, options: Any) -> Measurement:
        """Rich's measure, the narrowest being the widest piece between separators, not the widest word."""
        measured = super().__rich_measure__(console, options)
        narrowest = max((cell_len(piece.rstrip()) for word in self.plain.split() for piece in word_pieces(word)),
                        default=0)
        return Measurement(min(narrowest, measured.maximum), measured.maximum)

    def wrap(self, console: Any, width: int, *, justify: Any = None, overflow: Any = None, tab_size: int = 8,
             no_wrap: bool | None = None) -> Lines:
        """As Rich's, the breaks inside a word at separators (:func:`separator_breaks`)."""
        if no_wrap or self.no_wrap or overflow == "ignore":
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size,
                                no_wrap=no_wrap)
        wrap_justify = justify or self.justify or "default"
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            parts = line.divide(separator_breaks(line.plain, width))
            for part in parts:
                part.rstrip_end(width)
            parts.justify(console, width, justify=wrap_justify, overflow="fold")
            for part in parts:
                part.truncate(width, overflow="fold")
            lines.extend(parts)
        return lines


class WholeWordText(SeparatorText):
    """:class:`SeparatorText` measured as Rich measures text (its widest word whole): a table gives it the room for
    its words where it has the room, and where it has not, a word too wide folds at a separator, not mid-word."""

    def __rich_measure__(self, console: Any, options: Any) -> Measurement:
        return Text.__rich_measure__(self, console, options)
