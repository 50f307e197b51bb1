"""The block plan (torch-free) and the clocks' names: what the worker and the fake worker share."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tui.engine.measure.clocks import CLOCKS, CUDA_EVENT, PERF_COUNTER, clock_info
from tui.engine.worker import blocks

WORKER_DIR = Path(__file__).resolve().parents[1] / "tui" / "engine" / "worker"


def test_chunks_end_with_a_short_block():
    assert blocks.chunks(7, 3) == [3, 3, 1]
    assert blocks.chunks(6, 3) == [3, 3]
    assert blocks.chunks(0, 3) == []
    assert blocks.chunks(2, 10) == [2]


def test_a_host_sub_block_repeats_its_calls_to_last_the_minimum():
    assert blocks.host_block_repeats(10, None) == 1  # nothing known yet
    assert blocks.host_block_repeats(10, 0.0) == 1
    assert blocks.host_block_repeats(10, float("nan")) == 1
    # 10 calls of 0.31 ms (a CUDA-graph replay of ResNet-18 at batch 1): 17 repeats, 52.7 ms
    assert blocks.host_block_repeats(10, 0.31) == 17
    assert 10 * 17 * 0.31 >= blocks.HOST_BLOCK_MIN_MS > 10 * 16 * 0.31
    assert blocks.host_block_repeats(5, 21.7) == 1  # a block of GEMMs already lasts 108 ms
    # a step of 1 us would want 5000 repeats of 10 calls: capped at HOST_BLOCK_MAX_CALLS calls
    assert blocks.host_block_repeats(10, 0.001) * 10 == blocks.HOST_BLOCK_MAX_CALLS
    assert blocks.host_block_repeats(7000, 0.001) == 1


def test_measure_rounds_alternate_and_stop_each_side_at_iters():
    measured = {"eager": 0, "compiled": 0}
    rounds = []
    while min(measured.values()) < 7:
        plan = blocks.measure_round(7, 3, measured)
        rounds.append(plan)
        for side, n in plan:
            measured[side] += n
    assert rounds == [[("eager", 3), ("compiled", 3)]] * 2 + [[("eager", 1), ("compiled", 1)]]
    assert blocks.measure_round(7, 3, {"eager": 7, "compiled": 4}) == [("compiled", 3)]


def test_rounds_alternate_which_side_goes_first():
    measured = {"eager": 0, "compiled": 0}
    order = []
    for round_index in range(4):
        plan = blocks.measure_round(12, 3, measured, round_index)
        order += [side for side, _ in plan]
        for side, n in plan:
            measured[side] += n
    assert order == ["eager", "compiled", "compiled", "eager"] * 2  # ABBA
    assert blocks.extra_round(5, 1) == [("compiled", 5), ("eager", 5)]


def test_the_target_budget():
    assert blocks.target_budget_s(None, 600.0) == blocks.TARGET_BUDGET_S == 60.0
    assert blocks.target_budget_s(None, 20.0) == 5.0  # a quarter of the timeout when that is shorter
    assert blocks.target_budget_s(300.0, 20.0) == 300.0  # the user's budget as given


def test_the_interval_is_checked_only_when_its_cost_is_a_tenth_of_the_time_measured():
    now = [0.0]

    def clock():
        return now[0]

    target = blocks.IntervalTarget(0.02, clock)
    assert target.due()
    pairs = [[1.0, 1.01, 0.99]] * 6
    real = blocks.bootstrap_speedup

    def slow_bootstrap(*args, **kwargs):
        now[0] += 0.5  # this check costs 0.5 s
        return real(*args, **kwargs)

    blocks.bootstrap_speedup, saved = slow_bootstrap, real
    try:
        assert target.check(pairs, [[0.5, 0.505, 0.495]] * 6) is True
        assert target.width is not None and target.width <= 0.02 and target.checks == 1
        now[0] += 4.9
        assert not target.due()  # 4.9 s measured since: not yet worth 0.5 s
        now[0] += 0.1
        assert target.due()
        assert target.check(pairs, [[0.5, 0.505, 0.495]] * 6) is True and target.checks == 1  # same blocks
    finally:
        blocks.bootstrap_speedup = saved


def test_too_few_pairs_have_no_interval_and_the_warning_says_so():
    target = blocks.IntervalTarget(0.02)
    assert target.check([[1.0, 1.1]] * 3, [[0.5, 0.6]] * 3) is False
    assert target.width is None and target.pairs == 3
    assert target.unmet_warning(0.5).startswith("target interval 2% not met: no interval (3 block pairs, 4 needed) "
                                                "after 0.5 s of measuring")
    wide = blocks.IntervalTarget(0.02)
    assert wide.check([[v] * 3 for v in (1.0, 1.5, 0.8, 1.2, 1.1)], [[0.5, 0.6, 0.45]] * 5) is False
    assert wide.unmet_warning(120.4).startswith(f"target interval 2% not met: {wide.width * 100:.3g}% (5 block pairs) "
                                                "after 120 s of measuring")


def test_relative_width():
    from tui.engine.measure.stats import SpeedupCI

    assert blocks.relative_width(SpeedupCI(1.5, 1.47, 1.53)) == pytest.approx(1.53 / 1.47 - 1)
    assert blocks.relative_width(SpeedupCI(1.5, None, None)) is None


@pytest.mark.parametrize(("warmup", "sets", "expected"), [(0, 1, 3), (5, 1, 5), (2, 3, 9), (20, 3, 20)])
def test_the_fixed_compiled_warm_up(warmup, sets, expected):
    assert blocks.compiled_warmup_calls(warmup, sets) == expected


def test_eager_set_up_covers_every_input_set():
    assert blocks.eager_setup_calls(1) == 2  # three calls, the first one alone
    assert blocks.eager_setup_calls(5) == 4


def test_the_settler_ignores_a_short_baseline_and_compares_medians():
    settler = blocks.Settler([1.0, 1.0])  # a leftover chunk of two calls is no baseline
    assert settler.add([5.0] * 3) is False
    assert settler.add([4.0] * 3) is False and settler.change == pytest.approx(0.2)
    assert settler.add([3.9] * 3) is True
    assert blocks.Settler([0.0] * 3).add([0.0005] * 3) is True  # below the clocks' resolution


def test_an_unsettled_warning_says_by_how_much():
    settler = blocks.Settler([1.0] * 3)
    settler.add([2.0] * 3)
    assert settler.unsettled_warning("eager", 18).startswith(
        "eager warm-up did not settle within 18 extra calls (the last two blocks' medians differed by 100%, "
        "more than the 5% their spread allows)")
    assert "differed" not in blocks.Settler(None).unsettled_warning("compiled", 3)


def test_clock_metadata_is_known_by_name():
    assert clock_info(CUDA_EVENT.name) is CUDA_EVENT and clock_info(PERF_COUNTER.name) is PERF_COUNTER
    assert CUDA_EVENT.device_time and not PERF_COUNTER.device_time
    assert clock_info(None) is None and clock_info("sundial") is None


def test_the_worker_names_its_clocks_only_through_their_metadata():
    """No clock name as a string literal in the worker: each clock says it through ``info``."""
    pattern = re.compile("|".join(rf"[\"']{re.escape(name)}[\"']" for name in CLOCKS))
    offenders = [f"{path.name}:{n}" for path in sorted(WORKER_DIR.glob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


def test_the_worker_clocks_name_themselves():
    pytest.importorskip("torch")
    from tui.engine.worker.clocks import CpuClock, CudaClock

    assert CpuClock.info is PERF_COUNTER and CudaClock.info is CUDA_EVENT


def test_what_the_fake_worker_imports_from_the_worker_package_needs_no_torch():
    probe = ("import json, sys\n"
             "import tui.engine.worker, tui.engine.worker.blocks, tui.engine.worker.channel\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert json.loads(out) == []
