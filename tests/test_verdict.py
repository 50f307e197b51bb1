"""tui.engine.measure.verdict on constructed samples: each noisy reason and note alone, each edge of the
interval rule."""

from __future__ import annotations

import pytest

from tui.engine.measure.stats import summarize
from tui.engine.measure.verdict import (
    FASTER,
    INCONCLUSIVE,
    NO_CHANGE,
    NOISY,
    ONE_PROCESS_HOST,
    SLOWER,
    Machine,
    Outliers,
    SideSeries,
    VerdictPolicy,
    classify_outliers,
    judge_interval,
    series_checks,
    verdict_for,
)


def series(name: str, blocks: list[list[float]]) -> SideSeries:
    stats = summarize([x for block in blocks for x in block])
    return SideSeries(name, blocks, stats.median, stats.q1, stats.q3, stats.max)


def steady(name: str, base: float, blocks: int = 8, per_block: int = 10) -> SideSeries:
    """Quiet samples: base +- 1% in a fixed pattern, the same in every block."""
    pattern = [base * (1 + 0.01 * ((i % 5) - 2) / 2) for i in range(per_block)]
    return series(name, [list(pattern) for _ in range(blocks)])


QUIET_EAGER, QUIET_COMPILED = steady("eager", 2.0), steady("compiled", 1.0)


@pytest.mark.parametrize(
    ("low", "high", "word"),
    [
        (1.0201, 1.05, FASTER),  # lo just above 1 + t
        (1.02, 1.05, INCONCLUSIVE),  # lo at 1 + t: not faster, and not inside the band either
        (0.95, 0.9799, SLOWER),  # hi just below 1 - t
        (0.95, 0.98, INCONCLUSIVE),
        (0.98, 1.02, NO_CHANGE),  # the band's own edges are inside it
        (0.99, 1.01, NO_CHANGE),
        (0.9799, 1.01, INCONCLUSIVE),  # crosses the band's low edge
        (0.99, 1.0201, INCONCLUSIVE),  # crosses its high edge
        (0.9, 1.1, INCONCLUSIVE),
        (None, None, INCONCLUSIVE),  # too few blocks for an interval
    ],
)
def test_the_interval_rule_at_each_boundary(low, high, word):
    assert judge_interval(low, high, 0.02) == word


def test_the_threshold_moves_the_boundaries():
    assert judge_interval(1.03, 1.06, 0.02) == FASTER
    assert judge_interval(1.03, 1.06, 0.05) == INCONCLUSIVE
    assert judge_interval(0.96, 1.04, 0.05) == NO_CHANGE


def test_a_quiet_run_gets_the_interval_word_without_reasons():
    verdict = verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02)
    assert (verdict.word, verdict.reasons, verdict.notes) == (FASTER, (), ())


def reasons_of(eager: SideSeries, compiled: SideSeries, low: float = 1.98, high: float = 2.02,
               machine: Machine | None = None, **kwargs) -> tuple[str, ...]:
    verdict = verdict_for(eager, compiled, low, high, machine=machine, **kwargs)
    assert (verdict.word == NOISY) == bool(verdict.reasons)
    return verdict.reasons


def test_spread_alone_is_a_note_and_the_interval_decides():
    wide = series("compiled", [[1.0, 0.9, 1.1, 0.8, 1.2, 1.0, 0.95, 1.05]] * 8)  # IQR/median 12%
    verdict = verdict_for(QUIET_EAGER, wide, 1.98, 2.02)
    assert verdict.word == FASTER and verdict.reasons == ()
    assert len(verdict.notes) == 1 and verdict.notes[0].startswith("compiled time spread IQR/median 12% > 10%")
    assert verdict_for(QUIET_EAGER, wide, 1.98, 2.02, policy=VerdictPolicy(max_relative_iqr=0.2)).notes == ()


def long_tailed(name: str, base: float, blocks: int = 10) -> SideSeries:
    """Stationary but long-tailed: in every block of 20, 14 calls within 2% and 6 from 1.15x to 40x the median."""
    tail = (1.15, 1.25, 1.3, 2.0, 7.0, 40.0)
    pattern = [base * (1 + 0.02 * ((i % 5) - 2) / 2) for i in range(14)] + [base * f for f in tail]
    return series(name, [list(pattern) for _ in range(blocks)])


def test_long_tailed_but_stationary_and_tight_is_decisive():
    # The quiet CPU runs of calibration: a third of the calls in a long tail (the 3-IQR fence and a
    # stall of 40x), the same in every block, and an interval that agrees with the next process.
    eager, compiled = long_tailed("eager", 2.0), long_tailed("compiled", 1.0)
    verdict = verdict_for(eager, compiled, 1.96, 2.05)
    assert (verdict.word, verdict.reasons) == (FASTER, ())
    assert any("beyond the 3-IQR fence" in note for note in verdict.notes)
    assert any("spread IQR/median" in note for note in verdict.notes)
    assert verdict_for(eager, compiled, 0.99, 1.01).word == NO_CHANGE  # the word is the interval's


def test_a_wide_interval_is_a_note_and_its_word_stands():
    verdict = verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.8, 2.26)  # hi/lo 1.256
    assert (verdict.word, verdict.reasons) == (FASTER, ())
    assert verdict.notes == ("the time speedup's interval is wide (hi/lo 1.26 > 1.25): the number is imprecise",)
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.8, 2.24).notes == ()  # 1.244
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 0.8, 1.4).word == INCONCLUSIVE  # too wide to decide: no word


def test_severe_outliers_alone_are_a_note():
    # 5 of 80 samples (6%) far above the 3-IQR fence, the rest quiet: spread and median barely move.
    blocks = [list(b) for b in QUIET_COMPILED.blocks]
    for i in range(5):
        blocks[i][0] = 5.0
    verdict = verdict_for(QUIET_EAGER, series("compiled", blocks), 1.98, 2.02)
    assert verdict.word == FASTER and len(verdict.notes) == 1
    assert "5 of 80 samples beyond the 3-IQR fence (6% > 5%)" in verdict.notes[0]
    blocks[4][0] = 1.0  # 4 of 80 = 5%: not above the limit
    assert verdict_for(QUIET_EAGER, series("compiled", blocks), 1.98, 2.02).notes == ()


def test_a_slower_first_call_of_every_block_is_not_noise():
    # The H200's CNN b64 compiled side (docs/BENCHMARKS.md, "Verdicts on the H200"): IQR about
    # 0.5% of the median, and the first call of each 20-call block, after the other side ran,
    # about 6% slower: 1 in 20 samples (and up to 8% with a few more) sat beyond a 1%-floored fence.
    base = 0.117
    pattern = [base * (1 + 0.005 * ((i % 5) - 2) / 2) for i in range(20)]
    blocks = [[base * 1.065] + pattern[1:] for _ in range(20)]
    for block in blocks[:6]:
        block[1] = base * 1.06  # 26 of 400 samples (6.5%) about 6% slow
    assert verdict_for(QUIET_EAGER, series("compiled", blocks), 1.98, 2.02).notes == ()


def ramp(top: float, name: str = "compiled", base: float = 1.0, blocks: int = 8) -> SideSeries:
    """``blocks`` blocks of constant times rising evenly from ``base`` to ``base * top``."""
    return series(name, [[base * (1.0 + (top - 1.0) * i / (blocks - 1))] * 10 for i in range(blocks)])


def test_a_drift_that_changes_the_word_makes_a_run_noisy():
    # Compiled climbs from 0.95 to 1.10 against a steady eager 1.0: the first quarter (pairs 0-1) reads
    # 1.041x, faster; the last (pairs 6-7) 0.917x, slower. Stopped early or started late, the run says another word.
    reasons = reasons_of(steady("eager", 1.0), ramp(1.16, base=0.95), low=0.95, high=1.0)
    assert reasons == ("the time speedup drifted -12% from the first quarter of block pairs to the last (> 10%):"
                       " 1.041x (faster) to 0.917x (slower)",)


def test_a_drift_that_keeps_the_word_is_a_note():
    # First quarter (pairs 0-1) speedup 2/1.01, last quarter (6-7) 2/1.13: -11%, faster at both ends.
    verdict = verdict_for(QUIET_EAGER, ramp(1.14), 1.8, 1.95)
    assert (verdict.word, verdict.reasons) == (FASTER, ())
    assert verdict.notes == ("the time speedup drifted -11% from the first quarter of block pairs to the last"
                             " (> 10%): 1.980x to 1.770x, faster at both ends; the number is imprecise",)
    assert verdict_for(QUIET_EAGER, ramp(1.10), 1.8, 1.95).notes == ()  # -8%: within the limit
    # A tighter limit keeps the rule: the same drift is still a note while both ends say faster.
    tight = verdict_for(QUIET_EAGER, ramp(1.10), 1.8, 1.95, policy=VerdictPolicy(max_drift=0.05))
    assert (tight.word, len(tight.notes)) == (FASTER, 1)


def test_both_sides_drifting_alike_leave_the_speedup_be():
    # The machine slowed down by 30% across the run, both sides alike (their blocks are interleaved).
    assert reasons_of(ramp(1.3, "eager", 2.0), ramp(1.3)) == ()


def test_drift_needs_a_trend_not_just_quarters_apart():
    # Block pairs that scatter: the last quarter's speedup lies 20% below the first's, but the blocks go
    # up and down: the interval carries that scatter, it is no drift, though the two quarters read
    # faster (1.11x) and slower (0.90x).
    levels = [0.9, 0.9, 1.125, 0.855, 1.08, 0.873, 1.08, 1.125]
    scatter = series("compiled", [[level] * 10 for level in levels])
    assert reasons_of(steady("eager", 1.0), scatter, low=0.9, high=1.1) == ()
    # With five block pairs (the default 50 iterations) no order is a trend, not even a steady ramp.
    assert reasons_of(steady("eager", 1.0, blocks=5), ramp(1.35, base=0.9, blocks=5), low=0.8, high=1.1) == ()
    assert len(reasons_of(steady("eager", 1.0, blocks=6), ramp(1.35, base=0.9, blocks=6), low=0.8, high=1.1)) == 1


def test_a_single_series_drifts_on_its_own():
    # compare's time metrics judge one series: a 30% climb is drift, a flat series is not.
    assert series_checks(ramp(1.3), VerdictPolicy()).reasons == (
        "compiled time drifted +25% from the first quarter of blocks to the last (> 10%)",)
    assert series_checks(QUIET_COMPILED, VerdictPolicy()).reasons == ()
    assert series_checks(ramp(1.3), VerdictPolicy(), drift=False).reasons == ()


def test_timer_ticks_in_a_constant_side_are_not_outliers():
    # A short kernel on a 0.5 us clock: most calls one tick, a few the next: IQR 0.
    ticks = series("compiled", [[0.0046] * 9 + [0.00461]] * 8)
    assert ticks.outliers().severe == 0
    assert verdict_for(QUIET_EAGER, ticks, 434, 435).notes == ()


def test_a_stall_that_leaves_the_median_is_a_note():
    blocks = [list(b) for b in QUIET_EAGER.blocks]
    blocks[3][2] = 2.0 * 100  # one iteration 100x the median
    verdict = verdict_for(series("eager", blocks), QUIET_COMPILED, 1.98, 2.02)
    assert (verdict.word, verdict.reasons) == (FASTER, ())
    assert verdict.notes[0].startswith("eager time: a stall (200 ms, 100x the median: the worker was paused or the "
                                       "machine was busy); the median moved")
    blocks[3][2] = 2.0 * 99
    assert verdict_for(series("eager", blocks), QUIET_COMPILED, 1.98, 2.02).notes == ()


def test_stalls_that_move_the_median_make_a_run_noisy():
    # A fifth of the calls stalled: without them the median is 1.5% lower, beyond t/2 = 1%.
    blocks = [[1.0] * 4 + [1.03] * 4 + [150.0] * 2 for _ in range(8)]
    reasons = reasons_of(QUIET_EAGER, series("compiled", blocks))
    assert len(reasons) == 1 and reasons[0].startswith(
        "compiled time: a stall (150 ms, 146x the median: the worker was paused or the machine was busy) moved the "
        "median by"
    )
    # The same stalls judged against a threshold of 5% (t/2 = 2.5%) do not threaten the conclusion.
    assert reasons_of(QUIET_EAGER, series("compiled", blocks), policy=VerdictPolicy(threshold=0.05)) == ()


def test_a_busy_cpu_makes_a_cpu_run_noisy_but_not_a_gpu_runs_device_time():
    busy = Machine(other_cpu_cores=0.6, other_cpu_top=("stress (42) 0.6 cores",))
    reasons = reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=busy)
    assert reasons == ("other processes used 0.6 CPU cores while measuring (stress (42) 0.6 cores)",)
    assert reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=Machine(other_cpu_cores=0.5)) == ()
    gpu = Machine(other_cpu_cores=1.5, gpu=True)
    assert reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=gpu) == ()
    assert len(reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=gpu, host=True)) == 1  # host time does suffer


def test_another_process_on_the_gpu_makes_a_gpu_run_noisy():
    shared = Machine(other_gpu_processes=("python (77)",), gpu=True)
    assert reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=shared) == (
        "other processes used the GPU while measuring: python (77)",)
    assert reasons_of(QUIET_EAGER, QUIET_COMPILED, machine=Machine(gpu=True)) == ()


def test_noisy_is_checked_before_the_interval():
    shared = Machine(other_gpu_processes=("x (1)",), gpu=True)
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02, machine=shared).word == NOISY


def test_a_host_verdict_of_one_process_is_not_decisive_and_says_why():
    one = verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02, host=True, processes=1, what="host time")
    assert (one.word, one.reasons) == (INCONCLUSIVE, (ONE_PROCESS_HOST,))
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02, host=True, processes=3).word == FASTER
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02, processes=1).word == FASTER  # device time: decisive
    busy = Machine(other_cpu_cores=1.5, gpu=True)
    assert verdict_for(QUIET_EAGER, QUIET_COMPILED, 1.98, 2.02, busy, host=True, processes=1).word == NOISY


def test_outliers_are_classified_by_tukeys_fences():
    # q1 = 10, q3 = 20, IQR 10: mild fences -5 and 35, severe -20 and 50.
    values = [-25, -10, 10, 15, 20, 40, 60, -5, 35]
    assert classify_outliers(values, 10, 20) == Outliers(low_severe=1, low_mild=1, high_mild=1, high_severe=1)
    counts = classify_outliers(values, 10, 20)
    assert (counts.mild, counts.severe) == (2, 2)
    assert classify_outliers(values, 10, 20, min_iqr=30) == Outliers()  # fences -80, 110


def test_no_sides_no_verdict_beyond_inconclusive():
    assert verdict_for(None, QUIET_COMPILED, 1.5, 1.6).word == INCONCLUSIVE


def test_the_policy_takes_the_threshold_and_known_limits_only():
    policy = VerdictPolicy.of(0.05, {"max_drift": 0.2, "unknown": 3})
    assert (policy.threshold, policy.max_drift, policy.max_relative_iqr) == (0.05, 0.2, 0.10)
    assert VerdictPolicy.of() == VerdictPolicy()


def test_a_note_never_reads_its_limit_as_exceeded_by_itself():
    """Just past a limit, a rounded value read as the limit itself (``hi/lo 1.25 > 1.25``, a CLI run's
    warning; ``drifted -10% ... (> 10%)``, compare's): the value gets the decimals that tell it apart."""
    from tui.engine.measure.verdict import interval_notes, spread_note

    policy = VerdictPolicy()
    (wide,) = interval_notes(0.38902, 0.486773, policy)  # hi/lo 1.2513
    assert "hi/lo 1.251 > 1.25" in wide
    (clear,) = interval_notes(0.5, 0.7, policy)  # 1.40: two decimals already tell it apart
    assert "hi/lo 1.40 > 1.25" in clear
    assert "IQR/median 10.4% > 10%" in (spread_note("eager", 0.104, policy) or "")
    step = 0.1004 / (12 + 1.5 * 0.1004)  # 16 blocks on a line: the last quarter's median 10.04% below the first's
    drifting = [[1.0 - step * i] * 10 for i in range(16)]
    (reason,) = series_checks(series("compiled", drifting), policy).reasons
    assert "drifted -10.04% from the first quarter" in reason and "(> 10%)" in reason
