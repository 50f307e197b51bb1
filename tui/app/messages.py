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
    import threading

    from tui.app.components.results_table import Cell
    from tui.engine.store.results import RunRecord

__all__ = ["RunsQueued", "RunStarted", "RunFinished", "RunsExported", "HistoryLoaded"]


class RunsQueued(Message):
    """One or more runs were added to the queue (a Run, a Sweep or a Re-run)."""

    def __init__(self, records: list[RunRecord], origin: str) -> None:
        super().__init__()
        self.records = records
        """The queued records, in queue order."""
        self.origin = origin
        """What queued them: ``run``, ``sweep``, ``rerun`` or ``tune`` (a search's runs, one at a time)."""


class RunStarted(Message):
    """The queue handed a record to the runner (its worker is being started)."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__()
        self.record = record
        """The record now running."""


class RunFinished(Message):
    """A run ended: done, failed or cancelled (``record.status`` says which)."""

    def __init__(self, record: RunRecord) -> None:
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
    """A chunk of previous sessions' runs was read from the history file (off the UI thread).

    The loader posts one per chunk (40 runs first, a screenful, then 500 at a time), then a ``final``
    one with every problem found, so the first rows show within a moment of the start and no
    chunk holds the UI thread for long (issue 11, item 7).
    """

    def __init__(
        self,
        records: list[RunRecord],
        problems: list[str],
        cells: list[dict[str, Cell]] | None = None,
        *,
        final: bool = True,
        drawn: threading.Event | None = None,
    ) -> None:
        super().__init__()
        self.records = records
        """The records of this chunk, oldest first (a run id met again replaces the earlier record)."""
        self.problems = problems
        """One line per history entry that could not be read (all of them, in the final message)."""
        self.cells = cells if cells is not None else []
        """Each record's row cells (``history_cells``), made in the loader's thread."""
        self.final = final
        """Whether this is the last message of the load."""
        self.drawn = drawn
        """Set by the app once the chunk's rows were drawn (the loader waits for it before the next chunk)."""
