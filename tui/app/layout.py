"""Layout constants every screen shares (imports nothing of the app, so any screen can read them)."""

__all__ = ["NARROW_WIDTH", "NARROW_HEIGHT", "NOTICE_LINE_FRAME", "HORIZONTAL_BREAKPOINTS", "breakpoint_classes",
           "notices_in_line"]

NARROW_WIDTH = 120
"""Below this many columns the screens take their narrow layout (the app's -narrow breakpoint)."""

HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
"""The app's breakpoints (``App.HORIZONTAL_BREAKPOINTS``): screens get ``-narrow`` below NARROW_WIDTH columns,
``-wide`` from there (the compact layout in compile_lab.tcss)."""

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


def breakpoint_classes(width: int) -> dict[str, bool]:
    """The breakpoint classes a screen ``width`` columns wide has (True) and has not (False).

    Textual sets them when the screen gets its first resize, after its widgets were styled: a
    screen that takes them as it composes (``update_classes(..., update=False)``) spares that
    first restyle of every widget.
    """
    return {"-narrow": width < NARROW_WIDTH, "-wide": width >= NARROW_WIDTH}
