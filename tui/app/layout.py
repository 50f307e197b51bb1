"""Layout constants every screen shares (imports nothing of the app, so any screen can read them)."""

__all__ = ["NARROW_WIDTH", "NARROW_HEIGHT", "SHORT_HEIGHT", "NOTICE_LINE_FRAME", "HORIZONTAL_BREAKPOINTS",
           "VERTICAL_BREAKPOINTS", "breakpoint_classes",
           "notices_in_line"]

NARROW_WIDTH = 120
"""Below this many columns the screens take their narrow layout (the app's -narrow breakpoint)."""

HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
"""The app's breakpoints (``App.HORIZONTAL_BREAKPOINTS``): screens get ``-narrow`` below NARROW_WIDTH columns,
``-wide`` from there (the compact layout in compile_lab.tcss)."""

SHORT_HEIGHT = 40
"""Below this many rows the screens take their short layout (the app's -short breakpoint): the chart's 16 rows, with
the wide layout's, left the results table 4 rows at 120x30."""

VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_HEIGHT, "-tall")]
"""The app's vertical breakpoints (``App.VERTICAL_BREAKPOINTS``): ``-short`` below SHORT_HEIGHT rows, ``-tall``
from there."""

NARROW_HEIGHT = 30
"""Below this many rows (or NARROW_WIDTH columns) notices go to the notice line, not to toasts."""

NOTICE_LINE_FRAME = 2
"""Columns of the notice line that its text does not get (its padding, one each side)."""


def notices_in_line(width: int, height: int) -> bool:
    """Whether a terminal of this size shows notices on the notice line rather than as toasts.

    Textual's toast is up to 60 columns wide and several rows high, docked at the bottom right: at
    80x24 one covered half the results table or the chart.
    """
    return width < NARROW_WIDTH or height < NARROW_HEIGHT


def breakpoint_classes(width: int, height: int) -> dict[str, bool]:
    """The breakpoint classes a screen ``width`` columns wide and ``height`` rows high has (True) and has not (False).

    Textual sets them when the screen gets its first resize, after its widgets were styled: a
    screen that takes them as it composes (``update_classes(..., update=False)``) spares that
    first restyle of every widget.
    """
    return {"-narrow": width < NARROW_WIDTH, "-wide": width >= NARROW_WIDTH,
            "-short": height < SHORT_HEIGHT, "-tall": height >= SHORT_HEIGHT}
