"""A run's status as one enum whose members are the very strings the history, the CSV and the JSON store.

``RunStatus`` mixes in ``str`` (Python 3.10 has no ``StrEnum``): a member equals, hashes and
formats as its value (``RunStatus.DONE == "done"``, ``f"{RunStatus.DONE}"`` is ``done``), so a
status read back from a file as a plain string compares equal to its member, and a member
written to a file is the same text as before. The phases between ``starting`` and ``done`` are the
worker's (:data:`tui.engine.protocol.PHASES`, in the same order).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["RunStatus", "STATUSES", "TERMINAL_STATUSES", "ACTIVE_STATUSES", "ended_reason"]


class RunStatus(str, Enum):
    """Where a run is: queued, starting, one of the worker's phases, or ended (done, failed, cancelled)."""

    QUEUED = "queued"
    STARTING = "starting"
    BUILDING = "building"
    COMPILING = "compiling"
    WARMING_UP = "warming_up"
    CHECKING_ACCURACY = "checking_accuracy"
    MEASURING = "measuring"
    DIAGNOSING = "diagnosing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        """The value (``done``), as files and messages show it, not ``RunStatus.DONE``."""
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        """The value, formatted as a string (``f"{status:>9}"``), on every Python from 3.10."""
        return str.__format__(str(self), format_spec)


STATUSES = tuple(status.value for status in RunStatus)
TERMINAL_STATUSES = frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})
"""A record in one of these will not change any more."""
ACTIVE_STATUSES = frozenset(RunStatus) - TERMINAL_STATUSES - {RunStatus.QUEUED}
"""A record in one of these has a live worker."""


def ended_reason(kind: str | None, message: str | None, after: str = "") -> str:
    """A failed or cancelled run's kind and message joined by ``": "``, each left out where it says what the part
    before it said; ``after``: the word shown before them (the run's status). A cancelled run reads
    ``cancelled``, never ``cancelled: cancelled``; "" when nothing is left to say."""
    parts = [after]
    for part in (kind, message):
        if part and part != parts[-1]:
            parts.append(part)
    return ": ".join(parts[1:])
