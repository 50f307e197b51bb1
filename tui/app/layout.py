"""Layout constants every screen shares (imports nothing of the app, so any screen can read them)."""

__all__ = ["NARROW_WIDTH"]

NARROW_WIDTH = 120
"""Below this many columns the screens take their narrow layout (the app's -narrow breakpoint)."""
