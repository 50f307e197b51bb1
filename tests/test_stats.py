"""tui.engine.measure.stats: hand-computed summaries and a bootstrap whose answer is known."""

from __future__ import annotations

import math
import random
import time
from itertools import chain

import pytest

from tui.engine.measure.resample import draw_weights
from tui.engine.measure.stats import (
    Moments,
    SampleAccumulator,
    SpeedupCI,
    Stats,
    bootstrap_speedup,
    is_significant,
    median,
    percentile,
    summarize,
)


def test_summarize_one_to_ten_by_hand():
    s = summarize(range(1, 11))
    assert s.n == 10
    assert s.median == 5.5
    assert s.mean == 5.5
    # sum of squared deviations = 82.5; sample std divides by n - 1 = 9
    assert s.std == pytest.approx(math.sqrt(82.5 / 9))
    assert (s.min, s.max) == (1.0, 10.0)
    # linear interpolation at h = (n - 1) * q / 100
    assert s.p10 == pytest.approx(1.9)  # h = 0.9
    assert s.q1 == pytest.approx(3.25)  # h = 2.25
    assert s.q3 == pytest.approx(7.75)  # h = 6.75
    assert s.p90 == pytest.approx(9.1)  # h = 8.1
    assert s.iqr == pytest.approx(4.5)


def test_summarize_unsorted_three_values():
    s = summarize([4, 1, 3])
    assert s.median == 3
    assert s.mean == pytest.approx(8 / 3)
    assert s.std == pytest.approx(math.sqrt(7 / 3))
    assert s.p10 == pytest.approx(1.4)  # h = 0.2 between 1 and 3
    assert s.q1 == pytest.approx(2.0)  # h = 0.5
    assert s.q3 == pytest.approx(3.5)  # h = 1.5 between 3 and 4
    assert s.p90 == pytest.approx(3.8)  # h = 1.8


def test_summarize_single_value_has_no_std():
    s = summarize([2.5])
    assert s.n == 1 and s.std is None
    assert s.median == s.min == s.max == s.p10 == s.p90 == 2.5
    assert s.iqr == 0


def test_summarize_empty_raises():
    with pytest.raises(ValueError):
        summarize([])


def test_percentile_ends_and_range():
    values = [1.0, 2.0, 4.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 75) == 3.0
    with pytest.raises(ValueError):
        percentile(values, 101)
    assert median([5, 1, 2, 8]) == 3.5


def test_percentiles_match_numpy_linear_default():
    np = pytest.importorskip("numpy")
    rng = random.Random(3)
    values = [rng.expovariate(1.0) for _ in range(101)]
    s = summarize(values)
    for q, got in ((10, s.p10), (25, s.q1), (50, s.median), (75, s.q3), (90, s.p90)):
        assert got == pytest.approx(float(np.percentile(values, q)), rel=1e-12)
    assert s.std == pytest.approx(float(np.std(values, ddof=1)), rel=1e-12)


def test_moments_combine_like_one_pass():
    rng = random.Random(1)
    values = [rng.gauss(100, 3) for _ in range(1000)]
    m = Moments()
    for start in range(0, 1000, 37):
        m.add(values[start : start + 37])
    direct = summarize(values)
    assert m.n == 1000
    assert m.mean == pytest.approx(direct.mean, rel=1e-12)
    assert m.std == pytest.approx(direct.std, rel=1e-9)


def test_accumulator_matches_summarize_as_values_arrive():
    rng = random.Random(2)
    acc = SampleAccumulator()
    assert acc.stats() is None
    seen: list[float] = []
    for _ in range(20):
        batch = [rng.random() for _ in range(13)]
        acc.add(batch)
        seen.extend(batch)
        got, want = acc.stats(), summarize(seen)
        assert got.n == want.n and got.median == want.median and got.p90 == want.p90
        assert got.mean == pytest.approx(want.mean) and got.std == pytest.approx(want.std)
    assert acc.stats() is acc.stats()  # cached until the next add


def test_stats_dict_round_trip():
    s = summarize([1, 2, 3, 4])
    assert Stats.from_dict({**s.to_dict(), "extra": 1}) == s
    assert s.relative_iqr == pytest.approx(s.iqr / s.median)


# ----- bootstrap -------------------------------------------------------------------------


def _blocks(rng: random.Random, count: int, size: int, centre: float, spread: float) -> list[list[float]]:
    return [[rng.gauss(centre, spread) for _ in range(size)] for _ in range(count)]


def test_constant_sides_give_an_exact_interval():
    eager = [[2.0] * 5 for _ in range(10)]
    compiled = [[1.0] * 5 for _ in range(10)]
    ci = bootstrap_speedup(eager, compiled)
    assert ci == SpeedupCI(2.0, 2.0, 2.0)
    assert ci.significant is True


def test_identical_distributions_are_not_significant():
    rng = random.Random(11)
    eager = _blocks(rng, 40, 25, 1.0, 0.05)
    compiled = _blocks(rng, 40, 25, 1.0, 0.05)
    point, low, high = bootstrap_speedup(eager, compiled)
    assert low < 1 < high
    assert low <= point <= high
    assert high - low < 0.05
    assert is_significant(low, high) is False


def test_clear_two_x_is_tight_and_significant():
    rng = random.Random(12)
    eager = _blocks(rng, 40, 25, 2.0, 0.05)
    compiled = _blocks(rng, 40, 25, 1.0, 0.025)
    ci = bootstrap_speedup(eager, compiled)
    assert ci.point == pytest.approx(2.0, rel=0.01)
    assert 1.98 < ci.low <= ci.point <= ci.high < 2.02
    assert ci.significant is True


def test_point_is_the_ratio_of_pooled_medians():
    eager = [[3.0, 1.0], [2.0, 10.0]]  # pooled median 2.5
    compiled = [[1.0], [2.0, 0.5]]  # pooled median 1.0
    assert bootstrap_speedup(eager, compiled).point == 2.5


def test_deterministic_with_the_seed():
    rng = random.Random(13)
    eager = _blocks(rng, 30, 10, 1.5, 0.2)
    compiled = _blocks(rng, 30, 10, 1.0, 0.2)
    first = bootstrap_speedup(eager, compiled, seed=7)
    assert bootstrap_speedup(eager, compiled, seed=7) == first
    assert bootstrap_speedup(eager, compiled, seed=8) != first


def _brute_force(eager, compiled, resamples, confidence, seed):
    """The definition, spelled out: the same unit draws, pooled medians recomputed from the samples."""
    ratios = []
    for weights in draw_weights([len(eager)], resamples, seed).tolist():
        top = median(chain.from_iterable(eager[u] * w for u, w in enumerate(weights)))
        bottom = median(chain.from_iterable(compiled[u] * w for u, w in enumerate(weights)))
        ratios.append(top / bottom)
    ratios.sort()
    tail = (1 - confidence) / 2 * 100
    return percentile(ratios, tail), percentile(ratios, 100 - tail)


@pytest.mark.parametrize("bimodal", [False, True])
def test_exact_path_equals_the_definition(bimodal):
    rng = random.Random(14)
    # few distinct values (coarse timer): the grid holds every value, medians are exact
    eager = [[round(rng.gauss(3, 0.5), 1) for _ in range(6)] for _ in range(15)]
    compiled = [[round(rng.gauss(2, 0.5), 1) for _ in range(7)] for _ in range(15)]
    if bimodal:  # half the blocks ran at another clock: resampled medians jump far from the pooled one
        compiled = [[x * 3 if u % 2 else x for x in block] for u, block in enumerate(compiled)]
    _, low, high = bootstrap_speedup(eager, compiled, resamples=300, confidence=0.9, seed=5)
    want_low, want_high = _brute_force(eager, compiled, 300, 0.9, 5)
    assert low == pytest.approx(want_low, rel=1e-12)
    assert high == pytest.approx(want_high, rel=1e-12)


def test_grid_approximation_stays_close_to_exact():
    rng = random.Random(15)
    eager = _blocks(rng, 60, 40, 1.3, 0.2)
    compiled = _blocks(rng, 60, 40, 1.0, 0.2)
    exact = bootstrap_speedup(eager, compiled, resamples=500, grid_points=10**9)
    approx = bootstrap_speedup(eager, compiled, resamples=500, grid_points=64)
    assert approx.point == exact.point
    width = exact.high - exact.low
    assert approx.low == pytest.approx(exact.low, abs=0.05 * width)
    assert approx.high == pytest.approx(exact.high, abs=0.05 * width)


def test_many_blocks_are_merged_and_still_cover_the_truth():
    rng = random.Random(16)
    eager = _blocks(rng, 500, 4, 3.0, 0.3)
    compiled = _blocks(rng, 500, 4, 2.0, 0.3)
    ci = bootstrap_speedup(eager, compiled, resamples=500, max_units=50)
    assert ci.low < 1.5 < ci.high
    assert ci.significant


def test_uneven_block_counts_mid_run():
    rng = random.Random(17)
    eager = _blocks(rng, 11, 10, 2.0, 0.1)
    compiled = _blocks(rng, 10, 10, 1.0, 0.05)
    ci = bootstrap_speedup(eager, compiled, resamples=200)
    assert ci.low is not None and ci.low < ci.point < ci.high


def test_degenerate_inputs():
    assert bootstrap_speedup([], [[1.0]]) == SpeedupCI(None, None, None)
    assert bootstrap_speedup([[1.0]], [[0.0]]) == SpeedupCI(None, None, None)
    one_pair = bootstrap_speedup([[2.0, 2.0]], [[1.0, 1.0]])
    assert one_pair == SpeedupCI(2.0, None, None) and one_pair.significant is None
    with pytest.raises(ValueError):
        bootstrap_speedup([[1.0]], [[1.0]], resamples=0)
    with pytest.raises(ValueError):
        bootstrap_speedup([[1.0]], [[1.0]], confidence=1.0)


def test_is_significant():
    assert is_significant(1.1, 1.3) is True
    assert is_significant(0.7, 0.9) is True
    assert is_significant(0.9, 1.1) is False
    assert is_significant(1.0, 1.2) is False
    assert is_significant(None, 1.2) is None


@pytest.mark.perf  # a CPU-time bound
def test_cost_for_200k_samples_over_2000_blocks():
    rng = random.Random(18)
    eager = [[rng.lognormvariate(0.7, 0.1) for _ in range(50)] for _ in range(2000)]
    compiled = [[rng.lognormvariate(0.0, 0.1) for _ in range(50)] for _ in range(2000)]
    started = time.process_time()  # CPU time: the machine is shared, wall time is not ours
    ci = bootstrap_speedup(eager, compiled)
    elapsed = time.process_time() - started
    assert elapsed < 1.0, f"bootstrap of 200k samples took {elapsed:.2f} s of CPU"
    assert ci.low < math.exp(0.7) < ci.high


# ----- the draws -------------------------------------------------------------------------


def test_draws_pick_processes_then_their_own_units():
    """Each process's units are drawn a multiple of its size times (the times it was picked)."""
    weights = draw_weights([3, 5, 2], resamples=400, seed=1)
    assert weights.shape == (400, 10)
    for row in weights.tolist():
        picked = [sum(row[0:3]) / 3, sum(row[3:8]) / 5, sum(row[8:10]) / 2]
        assert all(times == int(times) for times in picked) and sum(picked) == 3
    assert len({tuple(row) for row in weights.tolist()}) > 300  # the rows differ


def test_one_process_draws_each_unit_once_on_average():
    weights = draw_weights([20], resamples=4000, seed=2)
    assert (weights.sum(axis=1) == 20).all()
    mean, variance = weights.mean(axis=0), weights.var(axis=0)
    assert abs(mean - 1).max() < 0.1  # binomial(20, 1/20): mean 1, variance 0.95
    assert abs(variance - 0.95).max() < 0.15


def test_draws_are_deterministic_with_the_seed():
    first = draw_weights([4, 6], resamples=50, seed=7)
    assert (draw_weights([4, 6], resamples=50, seed=7) == first).all()
    assert (draw_weights([4, 6], resamples=50, seed=8) != first).any()
