"""A tune's runs as counted and told after a stop: which ended on their own, which a stop cancelled as they ran,
what those say ended them, and which GPU kinds the runs ran on.

One rule for every front end: after a stop, the CLI (Ctrl-C) and the app both read the driver's result once the
runs the stop cancelled have ended, so a run the stop reached after its measurement ends done and is scored
(:mod:`tui.engine.run.kept`) in the answer as in the history and the exports. Both count a run a stop cancelled
apart from the runs that ended on their own, and name its candidate's run as stopped rather than "never run",
its cancel landed or not (a CLI whose wait for it ran out, an app that closes).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from tui.engine.measure.verdict import NOISY
from tui.engine.run.cancel import CANCELLED_BEFORE_START
from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord
from tui.engine.tune.search import Standing

__all__ = ["CANCELLED", "was_stopped", "stopped_run_text", "ran_count", "stopped_runs", "mark_stopped", "gpu_kinds",
           "noisy_runs", "timed_out_at_the_end"]

CANCELLED = "cancelled"
"""Why the search stopped when its task was cancelled; a later :meth:`TuneDriver.stop` names the reason instead."""


def was_stopped(what: str, reason: str) -> str:
    """``the tune was stopped (Ctrl-C)``; a ``reason`` that says it already: ``the tune was stopped from the app``."""
    if reason in ("stopped", CANCELLED):
        return f"{what} was stopped"
    return f"{what} was {reason}" if reason.startswith("stopped ") else f"{what} was stopped ({reason})"


def stopped_run_text(reason: str) -> str:
    """What a run cancelled by a stop says ended it (its error message: ``cancelled: the tune was stopped
    (Ctrl-C)``), rather than the worker's last stderr lines."""
    return was_stopped("the tune", reason)


def ran_count(records: Sequence[RunRecord]) -> int:
    """How many of ``records`` ended on their own (done or failed): a run a stop cancelled is not counted, whether
    or not its cancel has landed yet."""
    return sum(r.status in (RunStatus.DONE, RunStatus.FAILED) for r in records)


def stopped_runs(records: Sequence[RunRecord]) -> list[RunRecord]:
    """Those of ``records`` (after a stop) that the stop cancelled, or is cancelling, as they ran; a queued run it
    dropped never ran."""
    return [r for r in records if (r.status == RunStatus.CANCELLED and r.error_message != CANCELLED_BEFORE_START)
            or (not r.finished and r.status != RunStatus.QUEUED)]


def mark_stopped(standings: Sequence[Standing], stopped: Sequence[RunRecord],
                 names: Mapping[str, str]) -> list[Standing]:
    """``standings``, each candidate (``names``: run id -> candidate) whose run is in ``stopped`` marked with the
    part of the search that run was in (:attr:`Standing.stopped`)."""
    parts = {names[r.run_id]: r.tune_stage or "" for r in stopped if r.run_id in names}
    return [dataclasses.replace(s, stopped=parts[s.name]) if s.name in parts else s for s in standings]


def gpu_kinds(records: Sequence[RunRecord]) -> list[str]:
    """The GPU kinds (product names) the done ones of ``records`` ran on, sorted."""
    return sorted({r.env.gpu_name for r in records if r.status == RunStatus.DONE and r.env.gpu_name})


def noisy_runs(records: Sequence[RunRecord]) -> list[RunRecord]:
    """The done ones of ``records`` whose own measurement read ``noisy`` (another process on the cores, a stall)."""
    return [r for r in records if r.status == RunStatus.DONE and r.summary().verdict == NOISY]


def timed_out_at_the_end(records: Sequence[RunRecord], timeout_s: float) -> bool:
    """Whether a run of ``records`` timed out at a limit the budget's end set, below the run options' own
    ``timeout_s``: the candidate did not fail, the budget ran out while it ran (one cut after its measurement is done:
    :mod:`tui.engine.run.kept`)."""
    own = max(1, math.floor(timeout_s))  # the limit a run gets where the budget does not limit it
    return any(r.error_kind == "timeout" and r.options.timeout_s < own for r in records)
