"""Previous sessions' runs: read at start off the UI thread, shown first in the table, ``h`` hides them.

The history file is read in a thread once the first frame is drawn; the records arrive in a
:class:`~tui.app.messages.HistoryLoaded` message and join the app's model as final (their
stored summaries are read, never recomputed). Whether they are rows is the main screen's
``show_history``; the choice is saved in the config. :class:`PreviousRuns` is mixed into the app.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from textual import work

from tui.app.messages import HistoryLoaded

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp

__all__ = ["PreviousRuns"]


class PreviousRuns:
    """Loading and showing previous sessions' runs (a mixin of :class:`~tui.app.app.CompileLabApp`)."""

    @work(thread=True, group="history", exit_on_error=False, description="load history")
    def _load_history(self: CompileLabApp) -> None:
        """Read previous runs off the UI thread."""
        try:
            records, problems = self.history.load()
        except Exception as exc:  # History.load is tolerant; this is the last guard
            records, problems = [], [f"history could not be read: {exc}"]
        for record in records:
            with contextlib.suppress(Exception):
                record.summary()  # stored summaries: cheap, and cached before the UI reads them
        self.post_message(HistoryLoaded(records, problems))

    def on_history_loaded(self: CompileLabApp, message: HistoryLoaded) -> None:
        """Previous runs join the model as final (runs this session knows stay as they are)."""
        fresh = [r for r in message.records if r.run_id not in self.records]
        for record in fresh:
            self.records[record.run_id] = record
            self._finalized.add(record.run_id)
        self.history_ids = [r.run_id for r in fresh] + self.history_ids
        if self.main_screen.show_history and fresh:
            self.main_screen.show_history_rows()
        if message.problems:
            first = message.problems[0]
            more = f" (+{len(message.problems) - 1} more)" if len(message.problems) > 1 else ""
            self.notify(first + more, title="History", severity="warning", markup=False, timeout=8)

    def action_toggle_history(self: CompileLabApp) -> None:
        """Show or hide previous sessions' runs."""
        screen = self.main_screen
        screen.show_history = not screen.show_history  # the screen adds or removes the rows
        self.config.show_history = screen.show_history
        if screen.show_history:
            self.notify(f"Showing {len(self.history_ids)} previous run(s).")
        else:
            self.notify("Previous runs hidden.")
