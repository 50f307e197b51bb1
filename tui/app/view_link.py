"""AppView: what the controller tells the app (:class:`~tui.app.lab_view.LabView`), as messages and redraws.

The session's calls reach the controller, which keeps the model and tells its view; this view
posts the app's messages (``RunsQueued``, ``RunStarted``, ``RunFinished``: handled by the app with
``@on``) and marks the main screen's rows out of date. It holds the app, not its class: no
module of ``tui.app`` imports ``tui.app.app``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Coroutine

from textual.app import App

from tui.app.messages import RunFinished, RunsQueued, RunStarted

if TYPE_CHECKING:
    from tui.app.baseline_actions import BaselineActions
    from tui.app.main_screen import MainScreen
    from tui.engine.protocol import Event
    from tui.engine.store.results import RunRecord

__all__ = ["AppView"]


class AppView:
    """The app as the controller's observer (data down: the screen reads the controller when it redraws)."""

    def __init__(self, app: App[Any], screen: Callable[[], MainScreen], baselines: BaselineActions) -> None:
        self.app, self.screen, self.baselines = app, screen, baselines

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """A toast."""
        self.app.notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def show_queued(self, records: list[RunRecord], rows: list[RunRecord], origin: str) -> None:
        """Queued runs get their rows; ``RunsQueued`` is posted."""
        self.screen().add_rows(rows)
        self.app.post_message(RunsQueued(records, origin))

    def show_started(self, record: RunRecord) -> None:
        """A worker took ``record``: ``RunStarted`` is posted."""
        self.app.post_message(RunStarted(record))

    def show_event(self, record: RunRecord, event: Event) -> None:
        """A worker event: the run's row and the chart are out of date."""
        self.screen().run_event(record, event)

    def show_finished(self, record: RunRecord) -> None:
        """``record`` ended: ``RunFinished`` is posted."""
        self.app.post_message(RunFinished(record))

    def show_saved(self, record: RunRecord) -> None:
        """``record`` is final: its row shows its final figures, and the baseline judges it again."""
        screen = self.screen()
        screen.mark_dirty(record.run_id)
        screen.run_saved(record)
        self.baselines.row_saved(record)

    def show_dirty(self, row_id: str | None) -> None:
        """A row (None: the queue) is redrawn at the next tick."""
        self.screen().mark_dirty(row_id)

    def spawn(self, work: Coroutine[Any, Any, None], group: str) -> None:
        """The controller's background work, as an app worker (ended with the app)."""
        self.app.run_worker(work, group=group, exit_on_error=False)
