"""A run's status as one enum whose members are the very strings the history, the CSV and the JSON store.

``RunStatus`` mixes in ``str`` (Python 3.10 has no ``StrEnum``): a member equals, hashes and
formats as its value (``RunStatus.DONE == "done"``, ``f"{RunStatus.DONE}"`` is ``done``), so a
status read back from a file as a plain string compares equal to its member, and a member
written to a file is the same text as before. The phases between ``starting`` and ``done`` are the
worker's (:data:`tui.engine.protocol.PHASES`, in the same order).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["RunStatus"]


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
