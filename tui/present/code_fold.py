"""Python lines folded to a width so that what a screen shows is still Python when copied off it.

A terminal app draws a soft-wrapped line as separate rows, and a selection made with the terminal's own
mouse copies those rows: a comment folded at the width lost its ``#`` on the second row, and a call cut
inside a string literal no longer parsed. :func:`fold_code` folds a comment into comment lines and a
statement after a comma inside its brackets (an implicit line continuation), so every row is valid
where the whole line was; a line with no such place to fold stays whole, to be soft-wrapped.
"""

from __future__ import annotations

from rich.cells import cell_len

from tui.present.cells import wrap_cells

__all__ = ["fold_code"]

CONTINUATION_INDENT = "    "
"""The indent a statement's continuation rows take beyond its own."""


def fold_code(line: str, width: int) -> list[str]:
    """``line`` (one line of Python: a comment or a statement) as rows of at most ``width`` columns where it can
    be folded so; the rows joined with newlines are the same Python as ``line``."""
    if width <= 0 or cell_len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    if line.lstrip().startswith("#"):
        text = line.lstrip()[1:].strip()
        prefix = f"{indent}# "
        rows = wrap_cells(text, width, initial_indent=prefix, subsequent_indent=prefix, break_long_words=False)
        return rows or [line]
    return _fold_statement(line, indent, width)


def _fold_statement(line: str, indent: str, width: int) -> list[str]:
    """Fold after the commas inside brackets (outside string literals), greedily; ``[line]`` where none helps."""
    pieces = _pieces(line)
    if len(pieces) == 1:
        return [line]
    rows: list[str] = []
    current = pieces[0]
    continuation = indent + CONTINUATION_INDENT
    for piece in pieces[1:]:
        if cell_len(current) + cell_len(piece) <= width:
            current += piece
            continue
        rows.append(current.rstrip())
        current = continuation + piece.lstrip()
    rows.append(current)
    return rows


def _pieces(line: str) -> list[str]:
    """``line`` cut after each ``,`` that is inside brackets and outside a string literal (the pieces join back
    to ``line``)."""
    pieces: list[str] = []
    start = depth = 0
    quote: str | None = None
    escaped = False
    for index, char in enumerate(line):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth > 0:
            pieces.append(line[start: index + 1])
            start = index + 1
    pieces.append(line[start:])
    return pieces
