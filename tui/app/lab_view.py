"""LabView: what the controller (:class:`tui.app.controller.LabController`) tells its observer, the app
or a test's recorder; a protocol of its own so neither side imports the other for it."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tui.engine.protocol import Event
    from tui.engine.store.results import RunRecord

__all__ = ["LabView"]


class LabView(Protocol):
    """What the controller tells its observer (the app; a test's recorder). Every call is on the event loop."""

    def notify(self, message: str, *, title: str = ..., severity: Any = ..., timeout: float | None = ...,
               markup: bool = ...) -> None:
        """A notice for the user (``App.notify``'s signature)."""

    def show_queued(self, records: list[RunRecord], rows: list[RunRecord], origin: str) -> None:
        """Runs were queued by a request (``rows``: those that get a row of their own)."""

    def show_started(self, record: RunRecord) -> None:
        """A worker started ``record``."""

    def show_event(self, record: RunRecord, event: Event) -> None:
        """``record`` applied a worker event (its row and the chart are out of date)."""

    def show_finished(self, record: RunRecord) -> None:
        """``record`` ended (done, failed or cancelled); its final summary is being made."""

    def show_saved(self, record: RunRecord) -> None:
        """``record``'s final summary and history line are made."""

    def show_dirty(self, row_id: str | None) -> None:
        """The row ``row_id`` (None: every row and the queue) is out of date."""

    def spawn(self, work: Coroutine[Any, Any, None], group: str) -> None:
        """Run ``work`` on the event loop without waiting for it (errors are the view's to show)."""
