"""What a real terminal would show: the compositor's updates applied to a grid of characters.

Snapshot tests and ``export_screenshot`` render the widget tree afresh, and ``Pilot.pause``
itself wakes every widget and forces a screen update; none of them can see a widget whose new
content never reaches the terminal. :class:`TerminalModel` records only what the app writes:
it wraps ``App._display`` (headless apps call it too, then drop the output) and applies each
``LayoutUpdate`` / ``ChopsUpdate`` to its grid, skipping what a batch update would drop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import ControlType
from textual._compositor import CompositorUpdate

if TYPE_CHECKING:
    from textual.app import App
    from textual.geometry import Region

__all__ = ["TerminalModel", "wait_quietly"]


class TerminalModel:
    """The characters on a terminal of the app's size, as written by the app (attach after start)."""

    def __init__(self, app: App) -> None:
        self.app = app
        width, height = app.size
        self.cells = [[" "] * width for _ in range(height)]
        self.updates = 0
        original = app._display

        def display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
            if isinstance(renderable, CompositorUpdate) and not app._batch_count and screen is app.screen:
                self._apply(renderable)
            original(screen, renderable)

        app._display = display  # type: ignore[method-assign]

    def _apply(self, update: CompositorUpdate) -> None:
        self.updates += 1
        console = self.app.console
        x = y = 0
        for segment in update.__rich_console__(console, console.options):  # type: ignore[attr-defined]
            if segment.control:
                for code in segment.control:
                    if code[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = int(code[1]), int(code[2])
                continue
            for char in segment.text:
                if char == "\n":
                    x, y = 0, y + 1
                    continue
                if 0 <= y < len(self.cells) and 0 <= x < len(self.cells[y]):
                    self.cells[y][x] = char
                x += max(1, cell_len(char))

    def text(self, region: Region) -> str:
        """The lines of ``region`` (screen coordinates) as shown, joined by newlines."""
        return "\n".join("".join(self.cells[y][region.x : region.right]) for y in range(region.y, region.bottom))


async def wait_quietly(predicate: Callable[[], bool], timeout: float, what: str = "") -> None:
    """Let the app run until ``predicate()`` holds, without poking it (``Pilot.pause`` repaints).

    Polls with plain ``asyncio.sleep``: the thing awaited here is a repaint that may never come,
    and the usual ``wait_until`` would itself cause it.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.02)
