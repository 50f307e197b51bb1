"""A session's wiring, shared by both front ends: the runner of each lane and the pools a submission goes to.

:class:`LaneRunners` is a :class:`~tui.engine.run.session.RunSession`'s ``runner_for``: the shared lane
(and any lane no pool pinned) gets the front end's one runner, each GPU lane of a pool a runner of
its own pinned to whole cores near its GPU (:func:`tui.engine.runner.gpu_lock.pool_cpu_env`), and a
Ray cluster's lanes (``cluster:N``) the cluster's one runner (:class:`tui.engine.cluster.link.ClusterLink`,
which both front ends connect through). :func:`plan_pools` is the rule for a pool of GPUs of several kinds
(the pools to submit to and the repeats to submit with, or a refusal); :func:`one_kind_pool` the stricter
rule of a tune, whose runs all compare with each other (one GPU kind, or a refusal). The front ends make the runners
(``make_gpu_runner``: the CLI's ``make_runner``, the app's copy of its runner) and say what the
decisions mean to the user (the CLI's lines, the app's notices).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.engine.run.lanes import SHARED_LANE, is_local
from tui.engine.options import OptionsError
from tui.engine.run.placement import check_kinds, kinds_of, lane_cpu_env, repeats_for_kinds

__all__ = ["LaneRunners", "PoolPlan", "plan_pools", "one_kind_pool"]

logger = logging.getLogger(__name__)


class LaneRunners:
    """The runner of each lane of a session (see the module docstring).

    Args:
        shared: the shared lane's runner, asked once when that lane first runs.
        make_gpu_runner: a pinned GPU lane's runner from its worker environment (``base_env`` and the
            lane's cores), made on the lane's first run.
        telemetry: the telemetry source :meth:`pin` asks which cores are near which GPU (None: NVML).
        cluster: a ClusterLink (its ``runner`` serves every cluster lane), or None.
        base_env: worker environment every GPU lane's runner starts from (the app's runner's).
    """

    def __init__(self, shared: Callable[[], Any], make_gpu_runner: Callable[[dict[str, str]], Any], *,
                 telemetry: Any = None, cluster: Any = None, base_env: Mapping[str, str] | None = None) -> None:
        self._shared = shared
        self._make_gpu_runner = make_gpu_runner
        self.telemetry = telemetry
        self.cluster = cluster
        self.base_env = dict(base_env or {})
        self._envs: dict[str, dict[str, str]] = {}
        self.made: dict[str, Any] = {}
        """The runners made for GPU lanes, by lane."""
        self.lock = asyncio.Lock()
        """Held while a pool is pinned and queued: pools queued in a row start in that order."""

    def __call__(self, lane: str) -> Any:
        if not is_local(lane):  # a Ray cluster's slot: one runner serves them all
            return self.cluster.runner
        if lane == SHARED_LANE or lane not in self._envs:
            return self._shared()
        runner = self._make_gpu_runner(self._env(lane))
        self.made[lane] = runner
        return runner

    def _env(self, lane: str) -> dict[str, str]:
        return {**self.base_env, **self._envs.get(lane, {})}

    async def pin(self, pool: Sequence[str]) -> None:
        """Give each GPU lane of ``pool`` whole cores near its GPU (:func:`~tui.engine.runner.gpu_lock.pool_cpu_env`,
        which asks NVML: in a thread). The plan covers every lane pinned so far too, so a second pool never
        shares cores with the first (a run already going keeps its cores until it ends). An app's callers
        hold :attr:`lock`, so pools queued one after the other keep their order."""
        from tui.engine.runner.gpu_lock import pool_cpu_env

        lanes = self._every_lane(pool)
        if set(lanes) == set(self._envs):
            return  # these GPUs are pinned already: the plan stands
        try:
            envs = await asyncio.to_thread(pool_cpu_env, lanes, self.telemetry)
        except Exception as exc:  # NVML gone: the cores split without knowing which are near which GPU
            logger.warning("GPU cores unknown (%s): lanes split the cores evenly", exc, exc_info=exc)
            envs = lane_cpu_env(lanes)
        self._use(lanes, envs)

    def pinned(self, pool: Sequence[str]) -> None:
        """:meth:`pin` without asking NVML (cores split evenly), for a pool queued without it."""
        if any(lane not in self._envs for lane in pool):
            lanes = self._every_lane(pool)
            self._use(lanes, lane_cpu_env(lanes))

    def _every_lane(self, pool: Sequence[str]) -> tuple[str, ...]:
        """The lanes pinned so far and ``pool``'s, in GPU order."""
        def index(lane: str) -> tuple[int, str]:
            tail = lane.rpartition(":")[2]
            return (int(tail) if tail.isdigit() else 1 << 20, lane)

        return tuple(sorted(set(self._envs) | set(pool), key=index))

    def _use(self, pool: Sequence[str], envs: dict[str, dict[str, str]]) -> None:
        self._envs.update({lane: envs.get(lane, {}) for lane in pool})
        for lane in pool:
            if lane in self.made:
                self.made[lane].env = self._env(lane)

    def keep_spares(self, waiting: Iterable[Any], wanted: bool) -> None:
        """A GPU lane's runner keeps a warm spare worker only while runs of its pool wait (``waiting``: the
        session's queued units) and ``wanted`` (the shared runner keeps one)."""
        pools = [set(getattr(unit, "pool", ())) for unit in waiting]
        for lane, runner in self.made.items():
            runner.keep_spare = wanted and any(lane in pool for pool in pools)


@dataclass(frozen=True)
class PoolPlan:
    """Where a submission goes: the pools (one, or one per GPU kind), the repeats, and a note to show (or None)."""

    pools: tuple[tuple[str, ...], ...]
    repeats: int | str
    note: str | None = None


def plan_pools(pool: Sequence[str], names: Mapping[str, str | None], repeats: int | str, *,
               each_kind: bool = False) -> PoolPlan:
    """The pools a submission of ``repeats`` processes goes to on ``pool`` (``names``: each GPU's product name).

    A pool of one GPU or none is itself. ``each_kind``: one pool per GPU kind (every configuration on each).
    Otherwise a pool of several kinds deals each configuration to whichever GPU is free: a note says so,
    ``auto`` becomes one process, and a count above one is refused (OptionsError, field ``repeat``: one row's
    processes would run on different hardware; :func:`tui.engine.run.placement.check_kinds`).
    """
    pool = tuple(pool)
    if len(pool) <= 1:
        return PoolPlan((pool,), repeats)
    kinds = kinds_of(pool, names)
    if each_kind:
        return PoolPlan(tuple(lanes for _, lanes in kinds), repeats)
    note = check_kinds(kinds, repeats)
    return PoolPlan((pool,), repeats_for_kinds(kinds, repeats), note)


def one_kind_pool(pool: Sequence[str], names: Mapping[str, str | None]) -> tuple[str, ...]:
    """``pool`` for runs that are all compared with each other (``compile-lab tune``): every GPU of one kind.

    A pool that :func:`plan_pools` splits into several kinds is refused (OptionsError, field ``device``: one
    line naming each kind and its GPUs, so one of them can be chosen): a candidate measured on one kind
    would race one measured on another.
    """
    if len(plan_pools(pool, names, 1, each_kind=True).pools) <= 1:
        return tuple(pool)
    kinds = kinds_of(pool, names)
    listed = "; ".join(f"{kind}: {','.join(lanes)}" for kind, lanes in kinds)
    raise OptionsError("device", f"the GPUs are of several kinds ({listed}) and a tune compares its runs with each "
                                 f"other (allowed: GPUs of one kind, e.g. --device {','.join(kinds[0][1])})")
