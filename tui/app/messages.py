"""The app's run pipeline as past-tense messages (harlequin style).

``RunsQueued`` -> ``RunStarted`` -> ``RunFinished``; ``RunsExported`` closes an export.
Messages that belong to one widget (``Picker.RunRequested``, ``ResultsTable.RunHighlighted``,
``GpuPane.Updated``) are nested in that widget's class instead; these are the app-wide ones,
posted by :class:`~tui.app.app.CompileLabApp` to itself and handled with ``@on(...)``.

Per-event worker traffic is deliberately *not* a message: the runner applies each event to
the run's record and the app only marks the row dirty; a timer redraws (docs/METHOD.md, "What watching costs").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tui.engine.results import RunRecord

__all__ = ["RunsQueued", "RunStarted", "RunFinished", "RunsExported", "HistoryLoaded"]


class RunsQueued(Message):
    """One or more runs were added to the queue (a Run, a Sweep or a Re-run)."""

    def __init__(self, records: list["RunRecord"], origin: str) -> None:
        super().__init__()
        self.records = records
        """The queued records, in queue order."""
        self.origin = origin
        """What queued them: ``run``, ``sweep`` or ``rerun``."""


class RunStarted(Message):
    """The queue handed a record to the runner (its worker is being started)."""

    def __init__(self, record: "RunRecord") -> None:
        super().__init__()
        self.record = record
        """The record now running."""


class RunFinished(Message):
    """A run ended: done, failed or cancelled (``record.status`` says which)."""

    def __init__(self, record: "RunRecord") -> None:
        super().__init__()
        self.record = record
        """The finished record (already appended to the history)."""


class RunsExported(Message):
    """An export wrote its files."""

    def __init__(self, paths: list[Path], count: int) -> None:
        super().__init__()
        self.paths = paths
        """Every file written (CSV, raw CSV, JSON)."""
        self.count = count
        """How many runs were exported."""


class HistoryLoaded(Message):
    """Previous sessions' runs were read from the history file."""

    def __init__(self, records: list["RunRecord"], problems: list[str]) -> None:
        super().__init__()
        self.records = records
        """The records read, oldest first."""
        self.problems = problems
        """One line per history entry that could not be read."""
