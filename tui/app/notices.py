"""How the app tells about noisy runs without burying the table in toasts.

The first noisy run of a queue is told with its reason and the way out; the ones after it are
counted and told once, when the queue runs empty. A toast per run covered most of the results
pane at 80x24 on a busy machine, where every run can be noisy; the status column says ``noisy``
on each row anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from tui.present.format import options_label, workload_label
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import RERUN_HINT

__all__ = ["NoisyNotices"]


class NoisyNotices:
    """Counts the noisy runs of a queue and notifies through ``notify`` (``App.notify``'s signature)."""

    def __init__(self, notify: Callable[..., None]) -> None:
        self._notify = notify
        self._runs: list[str] = []

    def saved(self, record: RunRecord, reasons: tuple[str, ...], *, queue_ended: bool) -> None:
        """A noisy run was saved; ``queue_ended``: nothing runs or waits after it."""
        self._runs.append(record.run_id)
        if len(self._runs) == 1:
            more = f" (+{len(reasons) - 1} more in details)" if len(reasons) > 1 else ""
            first = reasons[0] if reasons else "the measurement cannot support a number"
            self._notify(f"{workload_label(record.options)} {options_label(record.options)}: {first}{more}. "
                         f"{RERUN_HINT}.", title="Noisy: no number to trust", severity="warning", markup=False,
                         timeout=8)
        if queue_ended:
            if len(self._runs) > 1:
                self._notify(f"{len(self._runs)} runs of this queue were noisy (their status says so). {RERUN_HINT}.",
                             title="Noisy runs", severity="warning", markup=False, timeout=8)
            self._runs.clear()
