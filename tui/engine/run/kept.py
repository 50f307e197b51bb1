"""A run stopped after its measurement keeps it: the one rule of both runners (a local worker's, a cluster's).

The worker sends ``measured`` (:class:`~tui.engine.protocol.Measured`) once its timing blocks, diagnostics,
accuracy check and FLOPs are in, before the profile pass, which re-compiles and can take minutes (max-autotune).
A run that its timeout or a cancel stops after that event is a measured run: the runner adds the events
:func:`kept_events` gives (its profile unavailable, saying what stopped it, and a warning saying the same) and
ends the record ``done`` (:meth:`~tui.engine.store.results.RunRecord.end_measured`), so the table, the exports,
the history and a tune read it as any other measured run. Stopped before that event, the run fails (``timeout``)
or is cancelled, as ever.

A cancel keeps the measurement as the timeout does: what the user stops then is the profile pass (often the
longest part of a max-autotune run); the blocks, compile time and accuracy are complete and were on screen, and
throwing them away would make the user run it all again. A worker that dies or fails after ``measured`` still
fails the run: that says something about the configuration (it crashed when compiled again), a timeout or a
cancel does not.
"""

from __future__ import annotations

from tui.engine.explain.kernels import Profile
from tui.engine.protocol import Event, Profiled, WorkerWarning
from tui.engine.store.results import RunRecord

__all__ = ["CANCELLED_THEN", "timed_out", "kept_events"]

CANCELLED_THEN = "was stopped by a cancel"
"""What a cancel did to a run after its measurement (``the profile pass was stopped by a cancel``)."""


def timed_out(timeout_s: float) -> str:
    """What the run's timeout did to it after its measurement: ``did not end within the run's timeout (40 s)``."""
    return f"did not end within the run's timeout ({timeout_s:g} s)"


def kept_events(record: RunRecord, stopped: str, t: float = 0.0) -> tuple[Event, ...]:
    """The events that say why a run stopped after its measurement lacks the rest (``stopped``: :func:`timed_out`,
    :data:`CANCELLED_THEN`; ``t``: the worker's last time): its profile unavailable, why, and a runner's warning
    saying the same; the warning alone when no profile pass was to come or its profile arrived. Nothing for a
    record without its measurement, or ended."""
    if record.finished or not record.measured:
        return ()
    if record.profile is None and record.options.profile:
        why = f"the profile pass {stopped}"
        return (Profiled(t=t, profile=Profile(available=False, why=why)),
                WorkerWarning(t=t, message=f"profile unavailable: {why}", source="runner"))
    return (WorkerWarning(t=t, message=f"the worker {stopped} after its measurement", source="runner"),)
