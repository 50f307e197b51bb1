"""Chooser: a one-line choice from a list that builds its list only when it is opened.

Textual's ``Select`` composes six widgets (its current value, three labels, and its option list,
hidden until opened), and every widget costs the app's start its styling, layout and drawing
(docs/BENCHMARKS.md §12). A Chooser is one widget that draws ``value  ▼`` itself and mounts its
list over the screen, under itself, only while it is open.

Keys as a Select's: Enter, Space, Up or Down opens the list (a click too); in the list, the arrow
keys move, typing jumps to the first option containing what was typed, Enter picks, Escape or
leaving the list closes it without a change.
"""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Iterable

from rich.text import Text
from textual import events, on
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import OptionList

__all__ = ["Chooser"]

_SEARCH_RESET_S = 0.7
"""Seconds after the last key press when typing in an open list starts a new search."""


class ChooserList(OptionList):
    """A Chooser's open list: picks with Enter, closes on Escape or when it loses the focus."""

    BINDINGS = [Binding("escape", "close", "Close the list")]

    class Closed(Message):
        """The list closes: ``picked`` says whether with a pick, ``value`` is the value picked."""

        def __init__(self, picked: bool, value: Any = None, lost_focus: bool = False) -> None:
            super().__init__()
            self.picked = picked
            """True when the user picked an option (False: Escape, or the focus went elsewhere)."""
            self.value = value
            """The picked option's value (None without a pick)."""
            self.lost_focus = lost_focus
            """True when it closed because the focus went elsewhere (the Chooser does not take it back)."""

    def __init__(self, options: list[tuple[str, Any]], value: Any) -> None:
        super().__init__(compact=True)  # no border, as a compact Select's list
        self._values: list[Any] = []
        self._typed = ""
        self._typed_at = 0.0
        self._done = False
        self.show(options, value)

    def show(self, options: list[tuple[str, Any]], value: Any) -> None:
        """List ``options`` (``(text, value)`` pairs), ``value``'s highlighted: a pick reads the values listed."""
        self.clear_options()
        self.add_options([text for text, _ in options])
        self._values = [option_value for _, option_value in options]
        self.highlight(value)

    def highlight(self, value: Any) -> None:
        """Move the highlight to ``value``'s option (the first when it is not listed), in view."""
        self.highlighted = self._values.index(value) if value in self._values else 0
        if self.is_mounted:
            self.scroll_to_highlight()

    def on_mount(self) -> None:
        """The highlighted option in view."""
        self.scroll_to_highlight()

    def _close(self, picked: bool, value: Any = None, lost_focus: bool = False) -> None:
        if not self._done:
            self._done = True
            self.post_message(self.Closed(picked, value, lost_focus))

    def action_close(self) -> None:
        """Close without a change."""
        self._close(False)

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._close(True, self._values[event.option_index])

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()  # the Chooser's parent hears of a pick, not of each move

    def _on_blur(self, event: events.Blur) -> None:
        self._close(False, lost_focus=True)

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        """Printable keys search the list (the app's one-letter bindings wait while it is open)."""
        return character is not None and character.isprintable()

    async def _on_key(self, event: events.Key) -> None:
        if event.character is None or not event.is_printable:
            return
        event.stop()
        event.prevent_default()
        now = time.monotonic()
        if now - self._typed_at > _SEARCH_RESET_S:
            self._typed = ""
        self._typed, self._typed_at = self._typed + event.character.lower(), now
        where = [str(self.get_option_at_index(i).prompt).lower().find(self._typed) for i in range(self.option_count)]
        found = [(at, index) for index, at in enumerate(where) if at >= 0]
        if found:
            self.highlighted = min(found)[1]  # the option with the typed text earliest in it
            self.scroll_to_highlight()


class Chooser(Widget, can_focus=True):
    """One value out of a few, drawn as ``value  ▼``; its list opens over the screen, under it."""

    DEFAULT_CSS = """
    Chooser {
        height: 1;
        width: 1fr;
        background: $surface;
        color: $foreground;
        pointer: pointer;
    }
    Chooser:focus {
        background-tint: $foreground 5%;
    }
    Chooser:disabled {
        color: $text-disabled;
    }
    Chooser > .chooser--arrow {
        color: $foreground 50%;
    }
    Chooser > ChooserList {
        overlay: screen;
        constrain: none inside;
        offset-y: 1;
        width: 1fr;
        height: auto;
        max-height: 12;
        background: $surface;
        color: $foreground;
    }
    Chooser > ChooserList:focus {
        background-tint: $foreground 5%;
    }
    Chooser > ChooserList > .option-list--option {
        padding: 0 1;
    }
    """

    BINDINGS = [Binding("enter,down,space,up", "open", "Show the list", show=False)]

    COMPONENT_CLASSES = {"chooser--arrow"}

    value: reactive[Any] = reactive(None, init=False, layout=False)
    """The chosen option's value (always one of the options')."""

    class Changed(Message):
        """The value changed (by the user or by code)."""

        def __init__(self, chooser: Chooser, value: Any) -> None:
            super().__init__()
            self.chooser = chooser
            """The Chooser that changed."""
            self.value = value
            """Its new value."""

        @property
        def control(self) -> Chooser:
            """The Chooser that changed (for ``@on(Chooser.Changed, "#id")``)."""
            return self.chooser

    def __init__(self, options: Iterable[tuple[str, Any]], value: Any, *, id: str | None = None,
                 tooltip: str | None = None, disabled: bool = False) -> None:
        """``options``: ``(shown text, value)`` pairs; ``value`` one of their values (else the first is chosen)."""
        super().__init__(id=id, disabled=disabled)
        self._options = self._checked(options)
        self.set_reactive(Chooser.value, value if value in self.values else self._options[0][1])
        if tooltip:
            self.tooltip = tooltip

    @staticmethod
    def _checked(options: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        found = [(str(text), value) for text, value in options]
        if not found:
            raise ValueError("a Chooser needs at least one option")
        return found

    @property
    def options(self) -> list[tuple[str, Any]]:
        """The ``(shown text, value)`` pairs offered, in order."""
        return list(self._options)

    @property
    def values(self) -> list[Any]:
        """The options' values, in order."""
        return [value for _, value in self._options]

    @property
    def expanded(self) -> bool:
        """True while the list is open."""
        return bool(self.children)

    def validate_value(self, value: Any) -> Any:
        """Only an option's value can be chosen."""
        if value not in self.values:
            raise ValueError(f"{value!r} is not one of this chooser's options ({', '.join(map(repr, self.values))})")
        return value

    def set_options(self, options: Iterable[tuple[str, Any]]) -> None:
        """Offer these options; the value stays when it is still one of them, else becomes the first. An open
        list shows the new options at once (a GPU that comes or goes while the device list is open)."""
        self._options = self._checked(options)
        if self.value not in self.values:
            self.value = self._options[0][1]
        for listing in self.query(ChooserList):
            listing.show(self._options, self.value)
        self.refresh()

    def render(self) -> Text:
        """``shown text   ▼`` (▲ while open), the arrow at the right edge."""
        shown = next((text for text, value in self._options if value == self.value), str(self.value))
        width = max(1, self.size.width)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(shown[: max(0, width - 3)].ljust(max(0, width - 2)))
        text.append("▲" if self.expanded else "▼", style=self.get_component_rich_style("chooser--arrow"))
        return text

    def watch_value(self, value: Any) -> None:
        """Redraw, move an open list's highlight to the new value, and tell the parent."""
        for listing in self.query(ChooserList):
            listing.highlight(value)
        self.refresh()
        self.post_message(self.Changed(self, value))

    async def action_open(self) -> None:
        """Open the list, the current value highlighted."""
        if self.expanded or self.disabled:
            return
        listing = ChooserList(self._options, self.value)
        await self.mount(listing)
        listing.focus(scroll_visible=False)
        self.refresh()

    async def _on_click(self, event: events.Click) -> None:
        event.stop()
        if not self.disabled and not self.expanded:
            await self.action_open()

    @on(ChooserList.Closed)
    async def _list_closed(self, event: ChooserList.Closed) -> None:
        event.stop()
        if event.picked and event.value in self.values:  # what the list showed, still an option
            self.value = event.value
        if not event.lost_focus:
            self.focus()
        await self.remove_children()
        self.refresh()
