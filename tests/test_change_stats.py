"""tui.engine.measure.change_stats: the change NEW / BASE of medians, against distributions whose answer is known."""

from __future__ import annotations

import math
import random

import pytest

from tui.engine.measure.change_stats import bootstrap_change, change_interval, ratio_of, resample_side

MEDIAN_SE = math.sqrt(math.pi / 2)
"""The median of n normal samples has a standard error of sqrt(pi / 2) * sigma / sqrt(n) (about 1.2533)."""


def _blocks(rng: random.Random, mu: float, sigma: float, blocks: int = 30, size: int = 10) -> list[list[float]]:
    return [[rng.gauss(mu, sigma) for _ in range(size)] for _ in range(blocks)]


def test_the_point_is_the_ratio_of_each_sides_processes_geometric_mean_median():
    base = [[[1.0, 2.0, 3.0], [4.0, 5.0]]]  # one process: its median, 3
    new = [[[6.0], [7.0, 8.0]], [[9.0, 10.0]]]  # medians 7 and 9.5 (their samples pooled: 8)
    change = bootstrap_change(base, new, resamples=50)
    assert change.point == pytest.approx(math.sqrt(7 * 9.5) / 3)
    assert change.low <= change.point <= change.high


def test_channels_read_together_fall_back_to_their_pooled_medians_together():
    """A speedup's eager and compiled channels are read by one rule: the geometric mean of the processes' medians
    where every process has both, positive; else both pooled (the second process has no compiled host time)."""
    first = [[[2.0, 2.0], [1.0, 1.0], [3.0], [1.5]], [[2.0], [1.0], [3.0], [1.5]]]
    second = [[[8.0, 8.0], [2.0, 2.0], [6.0], []], [[8.0], [2.0], [6.0], []]]
    point = resample_side([first, second], 4, resamples=20, together=((0, 1), (2, 3))).point
    assert point[:2] == pytest.approx((4.0, 2.0 ** 0.5))  # geometric means: gm(2, 8), gm(1, 2)
    assert point[2:] == (4.5, 1.5)  # pooled, both: [3, 3, 6, 6] and [1.5, 1.5]
    alone = resample_side([first, second], 4, resamples=20).point
    assert alone[2:] == (pytest.approx(18 ** 0.5), 1.5)  # read alone, the eager host channel has its gm


def test_normal_sides_give_the_width_the_median_standard_error_predicts():
    """BASE ~ N(1.0, 0.05), NEW ~ N(1.1, 0.05), 300 samples each: the 95% interval of the ratio of medians
    is 2 * 1.96 * SE wide, SE from the delta method; the mean over 12 seeded data sets is within 15%."""
    rng, widths, covered = random.Random(7), [], 0
    for trial in range(12):
        ci = bootstrap_change([_blocks(rng, 1.0, 0.05)], [_blocks(rng, 1.1, 0.05)], resamples=400, seed=trial)
        widths.append(ci.high - ci.low)
        covered += ci.low <= 1.1 <= ci.high
        assert ci.point == pytest.approx(1.1, rel=0.02)
    se = MEDIAN_SE * 0.05 / math.sqrt(300)
    expected = 2 * 1.96 * 1.1 * math.sqrt((se / 1.0) ** 2 + (se / 1.1) ** 2)
    assert sum(widths) / len(widths) == pytest.approx(expected, rel=0.15)
    assert covered >= 10  # 95% nominal: 10 or more of 12 (binomial: 98% likely)


def test_lognormal_sides_cover_the_true_ratio_of_medians():
    """Skewed times (lognormal): the median is exp(mu), so NEW / BASE is exp(mu_new - mu_base) = e^-0.1."""
    rng = random.Random(3)
    base = [[[rng.lognormvariate(0.0, 0.3) for _ in range(20)] for _ in range(40)]]
    new = [[[rng.lognormvariate(-0.1, 0.3) for _ in range(20)] for _ in range(40)]]
    ci = bootstrap_change(base, new, resamples=600)
    truth = math.exp(-0.1)
    assert ci.low < truth < ci.high
    assert ci.high < 1  # NEW is clearly faster
    assert ci.point == pytest.approx(truth, rel=0.03)


@pytest.mark.slow  # 100 bootstraps: about 3 s
def test_coverage_is_near_95_percent():
    rng, covered = random.Random(11), 0
    for trial in range(100):
        ci = bootstrap_change([_blocks(rng, 1.0, 0.05)], [_blocks(rng, 0.9, 0.05)], resamples=300, seed=trial)
        covered += ci.low <= 0.9 <= ci.high
    assert 88 <= covered <= 100


def test_processes_that_differ_widen_the_interval_to_their_spread():
    """Three processes a side whose medians differ by +-5% (what changes between processes): the hierarchical
    interval holds that spread; the same samples as one process of 30 blocks give a narrower one."""
    rng = random.Random(5)
    base = [_blocks(rng, mu, 0.01, blocks=10) for mu in (0.95, 1.0, 1.05)]
    new = [_blocks(rng, mu, 0.01, blocks=10) for mu in (0.95, 1.0, 1.05)]
    across = bootstrap_change(base, new, resamples=600)
    pooled = bootstrap_change([[b for p in base for b in p]], [[b for p in new for b in p]], resamples=600)
    assert across.low < 1 < across.high
    assert (across.high - across.low) > 2 * (pooled.high - pooled.low)
    assert across.high - across.low > 0.05


def test_the_same_runs_on_both_sides_read_exactly_one():
    rng = random.Random(1)
    units = [[([rng.gauss(2, 0.1) for _ in range(10)], [rng.gauss(1, 0.05) for _ in range(10)]) for _ in range(8)]]
    draws = resample_side(units, 2, resamples=200, seed=42)
    for statistic in (lambda m: m[1], lambda m: ratio_of(m[0], m[1])):
        assert tuple(change_interval(draws, draws, statistic)) == (1.0, 1.0, 1.0)


def test_channels_share_one_draw_so_a_speedup_keeps_its_block_pairs():
    """Eager and compiled drift together (block i of both is slow): the speedup of one side is nearly
    constant across resamples because each unit carries both channels."""
    units = [[([1.0 + i / 10] * 5, [0.5 + i / 20] * 5) for i in range(10)]]
    draws = resample_side(units, 2, resamples=300, seed=0)
    speedups = [ratio_of(m[0], m[1]) for m in draws.draws]
    compiled = [m[1] for m in draws.draws]
    assert max(speedups) / min(speedups) < 1.03
    assert max(compiled) / min(compiled) > 1.2


def test_seeded_and_deterministic():
    rng = random.Random(2)
    base, new = [_blocks(rng, 1.0, 0.1, blocks=8)], [_blocks(rng, 1.0, 0.1, blocks=8)]
    assert bootstrap_change(base, new, resamples=200, seed=4) == bootstrap_change(base, new, resamples=200, seed=4)
    assert bootstrap_change(base, new, resamples=200, seed=4) != bootstrap_change(base, new, resamples=200, seed=5)


def test_degenerate_sides():
    assert tuple(bootstrap_change([], [[[1.0]]], resamples=10)) == (None, None, None)
    one_unit = bootstrap_change([[[1.0, 2.0, 3.0]]], [[[2.0, 4.0, 6.0]]], resamples=10)
    assert one_unit.point == pytest.approx(2.0) and one_unit.low is None  # one block: no interval
    empty = resample_side([[([], [])]], 2, resamples=10)
    assert empty.point == (None, None) and empty.draws == () and empty.units == 0
    with pytest.raises(ValueError):
        resample_side([], 0)


def test_many_units_are_merged_to_the_cap():
    units = [[([float(i)],) for i in range(1000)]]
    draws = resample_side(units, 1, resamples=20, max_units=100)
    assert draws.units == 100 and draws.point == (499.5,)
