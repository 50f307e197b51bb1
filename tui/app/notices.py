"""How the app tells about noisy runs without burying the table in notices: once a queue.

When a queue runs empty (nothing runs, waits or is being saved), its noisy runs are told in one
notice: the run's reason and the way out when one run was noisy, the count and the first one's
reason when several were. A notice per run covered most of the results pane at 80x24 on a busy
machine, where every run can be noisy; the status column says ``noisy`` on each row anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tui.present.format import options_label, workload_label
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import RERUN_HINT

__all__ = ["NoisyNotices"]


class NoisyNotices:
    """Counts the noisy runs of a queue and notifies through ``notify`` (``App.notify``'s signature)."""

    def __init__(self, notify: Callable[..., None], names: Mapping[str, str] | None = None) -> None:
        self._notify = notify
        self.names = names
        """The user files' names in the table (``a/model.py`` beside ``b/model.py``); None: each by its file name."""
        self._count = 0
        self._first = ""

    def saved(self, record: RunRecord, reasons: tuple[str, ...] | None, *, queue_ended: bool) -> None:
        """A run of the queue was saved; ``reasons``: why it is noisy (None: it is not); ``queue_ended``:
        nothing runs, waits or is being saved after it. The count starts again with the next queue."""
        if reasons is not None:
            self._count += 1
            if self._count == 1:
                more = f" (+{len(reasons) - 1} more in details)" if len(reasons) > 1 else ""
                first = reasons[0] if reasons else "the measurement cannot support a number"
                label = f"{workload_label(record.options, self.names)} {options_label(record.options)}"
                self._first = f"{label}: {first}{more}"
        if not queue_ended:
            return
        if self._count == 1:
            self._notify(f"{self._first}. {RERUN_HINT}.", title="Noisy: no number to trust", severity="warning",
                         markup=False, timeout=8)
        elif self._count > 1:
            self._notify(f"{self._count} runs of this queue were noisy (their status says so); the first: "
                         f"{self._first}. {RERUN_HINT}.", title="Noisy runs", severity="warning", markup=False,
                         timeout=8)
        self._count, self._first = 0, ""
