"""Lanes: where a session's runs go, one at a time each (tui.engine.run.session runs them).

A unit of work runs in a lane: the shared lane (everything in turn, the host to itself), a GPU's
lane (``cuda:N``: one worker per GPU, ``--device cuda:all``) or a cluster's slot (``cluster:N``, on
another machine). :class:`RunUnit` is one run to make; a pooled unit may take any free lane of its
pool, and :class:`LaneHealth` leaves a broken GPU out of the rest of a session's pools.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.status import RunStatus

__all__ = ["SHARED_LANE", "CLUSTER_LANE", "RETIRE_AFTER", "RunUnit", "LaneHealth", "is_local", "lane_of",
           "options_in"]

SHARED_LANE = "local"
"""The one lane of a session that runs everything in turn."""
CLUSTER_LANE = "cluster:"
"""Prefix of a cluster's lanes (``cluster:0`` ...): runs elsewhere, never on this host."""
RETIRE_AFTER = 2
"""A pooled GPU whose runs fail this many times in a row before the worker reports its GPU is left out of the pool."""


@dataclass(frozen=True)
class RunUnit:
    """One run to make: a record (its configuration), which repeat it is, and its lane.

    ``pool``: the lanes it may run in (a GPU pool: any free one, chosen when it starts; ``lane``
    is then the one it got); empty: ``lane`` alone.
    """

    record: RunRecord
    repeat: int
    lane: str
    pool: tuple[str, ...] = ()


def is_local(lane: str) -> bool:
    """Whether a lane runs on this host (a cluster's lanes run elsewhere and never hold it)."""
    return not lane.startswith(CLUSTER_LANE)


def lane_of(options: RunOptions, parallel: bool) -> str:
    """The lane of a run: one shared lane, or with ``parallel`` one per GPU and the host for CPU runs."""
    if not parallel or options.device == "cpu":
        return SHARED_LANE
    return options.device


@dataclass
class LaneHealth:
    """Which pooled GPUs a session left out, and why (``retired``); see :meth:`judge`."""

    retired: dict[str, str] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)

    def lanes_for(self, unit: RunUnit) -> list[str]:
        """The lanes ``unit`` may start in: its pool's still in use (all of them when every one was retired:
        better a failed row than a run that never starts), or its own lane."""
        if not unit.pool:
            return [unit.lane]
        return [lane for lane in unit.pool if lane not in self.retired] or list(unit.pool)

    def judge(self, unit: RunUnit) -> None:
        """Leave a pooled GPU out once :data:`RETIRE_AFTER` runs in a row could not open it (a broken or lost
        GPU), while another lane of the pool is still in use. A later pool made only of retired GPUs still
        uses them (better a failed row than a run that never starts)."""
        record, lane = unit.record, unit.lane
        if not gpu_failed(record):
            self.failures[lane] = 0
            return
        self.failures[lane] = failures = self.failures.get(lane, 0) + 1
        others = [other for other in unit.pool if other != lane and other not in self.retired]
        if failures >= RETIRE_AFTER and others and lane not in self.retired:
            why = (f"{lane} was left out of the rest of this session's pool: its last {failures} runs failed "
                   f"before the worker could report its GPU ({record.error_message or record.error_kind})")
            self.retired[lane] = why
            record.warnings.append(why)


def options_in(unit: RunUnit, lane: str) -> RunOptions:
    """``unit``'s options as they run in ``lane``: a pooled CUDA run's device is the lane's GPU."""
    options = unit.record.options
    if unit.pool and lane.startswith("cuda") and options.device.startswith("cuda"):
        return dataclasses.replace(options, device=lane)
    return options


def gpu_failed(record: RunRecord) -> bool:
    """A failure that says more about the GPU than the configuration: the worker never reported its
    environment (it died, or the device could not be opened, before anything of the configuration ran).
    A crash later may be the configuration's (inductor's code), so it does not count."""
    if record.status != RunStatus.FAILED or record.error_kind in ("cancelled", "timeout"):
        return False
    return record.env.torch is None
