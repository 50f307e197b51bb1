"""``target_ci``: the worker measures on until the speedup's interval is narrow enough, or the budget runs out.

The Benchmark runs with a scripted clock (each block's times drawn from a seeded generator)
and a virtual time that advances by what each block took, so budgets in seconds cost nothing.
Calls take 200 ms (eager) and 100 ms (compiled) of virtual time, so a budget is a few rounds
and the test runs few bootstraps (each costs real time; the virtual clock does not see it, so
every round is checked).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tui.engine.measure.clocks import PERF_COUNTER  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed  # noqa: E402
from tui.engine.measure.stats import bootstrap_speedup  # noqa: E402
from tui.engine.measure.summary import MIN_INTERVAL_BLOCKS  # noqa: E402
from tui.engine.worker import blocks, measure  # noqa: E402
from tui.engine.worker.clocks import BlockRun  # noqa: E402


class VirtualTime:
    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


class NoisyClock:
    """Each call takes its side's time times (1 + a uniform draw within +-noise); time advances by it."""

    info = PERF_COUNTER

    def __init__(self, bench: Any, clock: VirtualTime, noise: dict[str, float], seed: int = 1) -> None:
        self.bench, self.clock, self.noise = bench, clock, noise
        self.base = {"eager": 200.0, "compiled": 100.0}
        self.rng = random.Random(seed)
        self.rounds = 0

    def sync(self) -> None:
        pass

    def run_block(self, step: Callable, calls: list, prepare: Any = None) -> BlockRun:
        side = "eager" if step is self.bench.built.eager_step else "compiled"
        ms = [self.base[side] * (1 + self.rng.uniform(-1, 1) * self.noise[side]) for _ in calls]
        start = self.clock.now
        self.clock.now += sum(ms) / 1e3
        return BlockRun(ms, sum(ms) / len(ms), start, self.clock.now)

    def run_round(self, specs: list, done: Callable[[int, BlockRun], None]) -> None:
        self.rounds += 1
        for index, spec in enumerate(specs):
            done(index, self.run_block(spec.step, spec.calls, spec.prepare))


@dataclass
class _Built:
    eager_step: Callable
    compile_step: Callable
    input_sets: list
    labels: list | None = None
    train: bool = False


def _measure(
    monkeypatch, noise: dict[str, float], **option_fields
) -> tuple[Any, list[BlockTimed], list[str], NoisyClock]:
    virtual = VirtualTime()
    monkeypatch.setattr(
        measure, "time", SimpleNamespace(perf_counter=virtual.perf_counter, monotonic=virtual.monotonic)
    )
    events: list[BlockTimed] = []
    warnings: list[str] = []

    def eager(args: tuple) -> None:
        pass

    def compiled(args: tuple) -> None:
        pass

    built = _Built(eager, lambda compile_fn: compiled, [()])
    bench = measure.Benchmark(built, RunOptions(**option_fields), torch.device("cpu"),
                              lambda e: events.append(e) if isinstance(e, BlockTimed) else None, warnings.append)
    bench.compiled_step = compiled
    clock = bench.clock = NoisyClock(bench, virtual, noise)
    bench.measure()
    return bench, [e for e in events if e.stage == "measure"], warnings, clock


def _width(measured: list[BlockTimed]) -> float:
    per_side = {side: [list(b.ms) for b in measured if b.side == side] for side in ("eager", "compiled")}
    interval = bootstrap_speedup(per_side["eager"], per_side["compiled"], 2000, seed=0)
    return interval.high / interval.low - 1


def test_measuring_goes_on_until_the_interval_meets_the_target_then_stops(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.2, "compiled": 0.2},
                                                iters=20, block_size=5, target_ci=0.06, time_budget_s=3600)
    assert warnings == []
    assert bench.measured["eager"] > 20 and bench.measured["eager"] == bench.measured["compiled"]
    # the parent's interval over the same blocks meets the target: the worker computed exactly it
    assert _width(measured) <= 0.06
    assert bench.target.width == pytest.approx(_width(measured))
    # and it stopped at the first check that met it: one round less would not have
    shorter = measured[:-2]
    assert len(shorter) // 2 < MIN_INTERVAL_BLOCKS or _width(shorter) > 0.06


def test_a_target_met_by_the_iterations_measures_nothing_more(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.01, "compiled": 0.01},
                                                iters=20, block_size=5, target_ci=0.05)
    assert bench.measured == {"eager": 20, "compiled": 20} and warnings == []
    assert bench.target.checks == 1


def test_a_target_not_met_within_the_time_budget_says_so(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.9, "compiled": 0.9},
                                                iters=10, block_size=5, target_ci=0.001, time_budget_s=15.0)
    assert len(warnings) == 1
    message = warnings[0]
    assert message.startswith("target interval 0.1% not met: ")
    width = _width(measured)
    assert f"{width * 100:.3g}% ({len(measured) // 2} block pairs) after 15 s of measuring" in message
    # it measured for the whole budget (each round takes 1.5 s of virtual time, give or take), then stopped
    elapsed = sum(sum(b.ms) for b in measured) / 1e3
    assert 15.0 <= elapsed < 15.0 + 3.0


def test_without_a_time_budget_the_target_gets_a_default_cap(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.9, "compiled": 0.9},
                                                iters=10, block_size=5, target_ci=0.0001, timeout_s=40.0)
    elapsed = sum(sum(b.ms) for b in measured) / 1e3
    assert blocks.target_budget_s(None, 40.0) == 10.0  # a quarter of the timeout, below 60 s
    assert blocks.target_budget_s(None, 600.0) == 60.0 and blocks.target_budget_s(5.0, 600.0) == 5.0
    assert 10.0 <= elapsed < 10.0 + 3.0
    assert len(warnings) == 1 and "after 10 s of measuring" in warnings[0]


def test_a_cpu_run_without_a_target_measures_on_towards_the_default_for_a_second_without_a_warning(monkeypatch):
    # calls of 200 and 100 ms (virtual): 2 iterations take 0.6 s, then rounds go on until 1 s has passed
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.9, "compiled": 0.9}, iters=2, block_size=1)
    assert bench.target is not None and bench.target.target == blocks.CPU_DEFAULT_TARGET and warnings == []
    elapsed = sum(sum(b.ms) for b in measured) / 1e3
    assert bench.measured["eager"] > 2 and blocks.CPU_DEFAULT_TARGET_S <= elapsed < blocks.CPU_DEFAULT_TARGET_S + 1.0
    quiet, *_ = _measure(monkeypatch, {"eager": 0.001, "compiled": 0.001}, iters=20, block_size=5)
    assert quiet.measured == {"eager": 20, "compiled": 20}  # met by the iterations: nothing more


def test_with_a_time_budget_and_no_target_nothing_changes(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.9, "compiled": 0.9}, iters=10, block_size=5,
                                                time_budget_s=3600)
    assert bench.measured == {"eager": 10, "compiled": 10} and bench.target is None and warnings == []


def test_the_default_target_is_the_cpus_alone():
    assert blocks.interval_target(None, None, 600.0, cpu=True) == (blocks.CPU_DEFAULT_TARGET,
                                                                    blocks.CPU_DEFAULT_TARGET_S, False)
    assert blocks.interval_target(None, None, 600.0, cpu=False) is None  # a GPU's intervals are narrow already
    assert blocks.interval_target(None, 5.0, 600.0, cpu=True) is None
    assert blocks.interval_target(0.02, None, 600.0, cpu=False) == (0.02, 60.0, True)


def test_a_time_budget_that_ends_before_the_iterations_keeps_its_own_warning(monkeypatch):
    bench, measured, warnings, clock = _measure(monkeypatch, {"eager": 0.1, "compiled": 0.1},
                                                iters=1000, block_size=5, target_ci=0.01, time_budget_s=5)
    assert len(warnings) == 1 and warnings[0].startswith("the time budget of 5 s ran out after")
    assert bench.target is None
