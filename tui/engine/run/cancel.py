"""How a cancelled run ends: one rule for the runners, which end its record, and the session, which knows why.

A run is cancelled by the user (the app's ``x``), a stop (a tune's Ctrl-C) or a close. The runner whose task is
cancelled ends the record, but only the session knows what cancelled it (:meth:`RunSession.cancel_running`'s
reason). :func:`cancel` ends a record as cancelled with what cancelled it as its message, ``cancelled`` where
nothing said, and a record the runner already ended that way takes the session's reason; a queued run that a cancel
dropped says :data:`CANCELLED_BEFORE_START`. :func:`~tui.engine.status.ended_reason` reads them back as
``cancelled: the tune was stopped (Ctrl-C)``, or ``cancelled`` alone.
"""

from __future__ import annotations

from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord

__all__ = ["CANCELLED", "CANCELLED_BEFORE_START", "cancel"]

CANCELLED = "cancelled"
"""A cancelled run's error kind, and its message where nothing said what cancelled it."""
CANCELLED_BEFORE_START = "cancelled before it started"
"""The message of a queued run that a cancel dropped: it never ran."""


def cancel(record: RunRecord, reason: str | None = None) -> None:
    """End ``record`` as cancelled, its message ``reason`` (what cancelled it) or :data:`CANCELLED`. A record that
    ended on its own (done or failed) keeps its end; one already cancelled takes a ``reason`` given, and keeps its
    message without one."""
    if not record.finished or (record.status == RunStatus.CANCELLED and reason is not None):
        record.fail(CANCELLED, reason or CANCELLED)
