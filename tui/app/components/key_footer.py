"""KeyFooter: Textual's Footer, recomposed only when the keys it shows change.

Textual's :class:`~textual.widgets.Footer` rebuilds its keys (a widget each, styled, laid out and
drawn) every time the screen says its bindings may have changed: at each focus change, each time a
screen is shown, and after the screen's first refresh. Many of those change nothing it shows (the
main screen's start publishes one set of keys three times; a move between two picker fields changes
none), yet each rebuild restyles, lays out and redraws every key. This footer remembers which keys
its last rebuild was asked for and rebuilds only when the shown keys (the binding, whether it is
enabled, its tooltip) differ.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.screen import Screen
from textual.widgets import Footer

__all__ = ["KeyFooter"]


class KeyFooter(Footer):
    """A Footer that recomposes only when the keys it would show change."""

    # Footer's compact rule gives every key a one-column right margin, the palette's key docked at the right edge
    # too: the keys scrolled under it showed through that column (a stray letter at the screen's last column).
    DEFAULT_CSS = """
    KeyFooter.-compact FooterKey.-command-palette {
        margin-right: 0;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._wanted: Hashable | None = None
        """The keys (:meth:`_shown`) the latest rebuild was asked for; None before the first."""

    def _shown(self, screen: Screen) -> Hashable:
        """What a compose would show now: each shown binding with its state, and the palette's key."""
        palette = self.app.COMMAND_PALETTE_BINDING
        keys = tuple(
            (key, active.binding, active.enabled, active.tooltip)
            for key, active in screen.active_bindings.items()
            if active.binding.show or key == palette
        )
        return keys, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def bindings_changed(self, screen: Screen) -> None:
        """Textual's Footer rebuilds the keys after the next refresh: let it, unless a rebuild already asked
        for shows these keys (a focus change publishes the bindings more than once)."""
        if screen.app.app_focus and self.is_attached and screen is self.screen:  # where Footer rebuilds
            shown = self._shown(screen)
            if shown == self._wanted:
                return
            self._wanted = shown
        super().bindings_changed(screen)
