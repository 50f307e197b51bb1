"""NoticeLine: the app's notices on a line of their own at narrow sizes, never over the table or the chart.

Textual's toasts are up to 60 columns wide, docked at the bottom right, and stack: at 80x24 a run and
an export covered half the results table and the chart. Below 120 columns or 30 rows
(:func:`~tui.app.layout.notices_in_line`) the app shows no toast and each notice goes to the line of
the screen on top (the main screen's when a dialog is on top): its title and text in its severity's
colour, until its timeout; the next notice replaces it. The line takes its rows from the layout
(the panes above it shrink), so it covers nothing, and it is hidden while it has nothing to say.
A notice naming a path folds the path's folders, never its file name
(:func:`~tui.present.format.fold_path`), to the width :func:`~tui.app.export_target.notice_text_width` gives.
"""

from __future__ import annotations

import contextlib
from typing import Any

from textual.app import ScreenStackError
from textual.content import Content
from textual.notifications import Notification
from textual.timer import Timer
from textual.widgets import Static

from tui.app.layout import notices_in_line

__all__ = ["NoticeLine", "route", "hide_toasts"]


def route(app: Any, notification: Notification) -> None:
    """Below 120 columns or 30 rows show ``notification`` on the notice line of the screen on top, else of the
    one under the dialog on top; Textual keeps it in its notifications as well."""
    if not notices_in_line(*app.size):
        return
    for screen in reversed(app.screen_stack):
        for line in screen.query(NoticeLine):
            line.show(notification)
            return


def hide_toasts(app: Any) -> bool:
    """At narrow sizes take the toasts off the screen on top and say True: the app's ``_refresh_notifications``
    then shows none. Textual calls that after each notice, when a screen resumes and when the size changes, so a
    terminal made wide shows the notices whose time is not up as toasts, and one made narrow drops them."""
    if not notices_in_line(*app.size):
        return False
    with contextlib.suppress(ScreenStackError):
        for rack in app.screen.query("ToastRack"):
            rack.remove_children()
            rack.display = False
    return True


class NoticeLine(Static):
    """The latest notice, above the footer; hidden when there is none."""

    # padding: NOTICE_LINE_FRAME in tui/app/layout.py
    DEFAULT_CSS = """
    NoticeLine {
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $boost;
        display: none;
    }
    NoticeLine.-warning {
        color: $text-warning;
    }
    NoticeLine.-error {
        color: $text-error;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.notification: Notification | None = None
        """The notice shown, or None."""
        self._expiry: Timer | None = None

    def show(self, notification: Notification) -> None:
        """Show ``notification`` in place of the one before, for its timeout."""
        self.notification = notification
        body = Content.from_markup(notification.message) if notification.markup else Content(notification.message)
        title = Content.styled(f"{notification.title}: ", "bold") if notification.title else Content("")
        self.update(Content.assemble(title, body))
        self.set_class(notification.severity == "warning", "-warning")
        self.set_class(notification.severity == "error", "-error")
        self.display = True
        if self._expiry is not None:
            self._expiry.stop()
        self._expiry = self.set_timer(max(notification.timeout, 0.1), self.clear, name="notice-expiry")

    def on_click(self) -> None:
        """A click dismisses the notice, as it does a toast."""
        self.clear()

    def clear(self) -> None:
        """Hide the line (its notice's time is up)."""
        self.notification = None
        self.update("")
        self.display = False
