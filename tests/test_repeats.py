"""Repeats across processes: the hierarchical bootstrap, groups, their verdict and row, the interleaved
queue and ``repeats="auto"`` (tui.engine.measure.stats, tui.engine.store.repeats, tui.engine.run.session)."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import random

import pytest

from fakes.records import cuda_run_record, full_group
from tui.engine.store.export import write_csv
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.present.warning_groups import merged_processes
from tui.engine.store.repeats import (
    AUTO_CPU_MAX_PROCESSES,
    AUTO_MAX_PROCESSES, GroupRecord, GroupSummary, group_records, group_rows, members_of, parse_repeat,
    summarize_group, wants_another_process,
)  # fmt: skip
from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord
from tui.engine.run.session import RunSession
from tui.engine.measure.stats import bootstrap_speedup, bootstrap_speedup_processes, percentile
from tui.engine.measure.verdict import ONE_PROCESS_HOST
from tui.telemetry.model import RunTelemetry

# ----- the hierarchical bootstrap ----------------------------------------------------------------


def _process(rng: random.Random, blocks: int = 50, calls: int = 10, eager: float = 2.0, compiled: float = 1.0):
    """One process's blocks: eager and compiled times with 2-3% noise."""
    return ([[rng.gauss(eager, 0.05) for _ in range(calls)] for _ in range(blocks)],
            [[rng.gauss(compiled, 0.03) for _ in range(calls)] for _ in range(blocks)])  # fmt: skip


def _width(ci) -> float:
    return ci.high - ci.low


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_processes_that_do_not_differ_give_about_the_interval_of_their_blocks_pooled(seed):
    rng = random.Random(seed)
    processes = [_process(rng, blocks=20) for _ in range(5)]
    across = bootstrap_speedup_processes(processes, resamples=1000)
    pooled = bootstrap_speedup([b for e, _ in processes for b in e], [b for _, c in processes for b in c],
                               resamples=1000)  # fmt: skip
    assert across.point == pooled.point
    assert across.low < across.point < across.high
    # Both levels resampled: within-process noise counts about twice (sqrt 2 wider), never narrower.
    assert 0.95 <= _width(across) / _width(pooled) <= 2.0


def test_one_deviant_process_widens_the_interval_and_moves_it():
    rng = random.Random(7)
    alike = [_process(rng, blocks=20) for _ in range(5)]
    deviant = [*alike[:4], _process(random.Random(8), blocks=20, compiled=1.10)]  # compiled 10% slower in one
    calm, wide = bootstrap_speedup_processes(alike), bootstrap_speedup_processes(deviant)
    assert _width(wide) > 3 * _width(calm)
    assert wide.low < calm.low
    # The within-run view of all blocks pooled misses the process-to-process difference.
    flat = bootstrap_speedup([b for e, _ in deviant for b in e], [b for _, c in deviant for b in c])
    assert _width(wide) > 2 * _width(flat)


def test_the_bootstrap_is_seeded_and_deterministic():
    rng = random.Random(3)
    processes = [_process(rng, blocks=10) for _ in range(4)]
    first = bootstrap_speedup_processes(processes, resamples=500, seed=5)
    assert bootstrap_speedup_processes(processes, resamples=500, seed=5) == first
    assert bootstrap_speedup_processes(processes, resamples=500, seed=6) != first


def test_fewer_than_two_processes_with_blocks_give_no_interval():
    rng = random.Random(4)
    one = _process(rng, blocks=10)
    assert bootstrap_speedup_processes([one]).low is None
    assert bootstrap_speedup_processes([one, ([], [])]).high is None
    point, low, high = bootstrap_speedup_processes([one, ([], [])])
    assert point == pytest.approx(bootstrap_speedup(*one).point) and (low, high) == (None, None)
    assert bootstrap_speedup_processes([]) == (None, None, None)
    assert bootstrap_speedup_processes([([[1.0]], [[0.0]]), ([[1.0]], [[0.0]])]) == (None, None, None)


def test_many_blocks_are_merged_so_the_cost_stays_bounded():
    rng = random.Random(5)
    processes = [_process(rng, blocks=400, calls=2) for _ in range(5)]
    result = bootstrap_speedup_processes(processes, resamples=300)
    assert result.low < result.point < result.high


# ----- groups --------------------------------------------------------------------------------------


def test_records_group_by_group_id_in_first_seen_order_each_by_repeat():
    a0, b0, a1, b1 = (RunRecord(f"r{n}", group_id=g, repeat=k) for n, (g, k) in enumerate(
        [("a", 0), ("b", 0), ("a", 1), ("b", 1)]))  # fmt: skip
    alone = RunRecord("alone")
    assert group_records([a1, b0, alone, a0, b1]) == [[a0, a1], [b0, b1], [alone]]
    rows = group_rows([a0, b0, a1, b1, alone])
    assert [type(r).__name__ for r in rows] == ["GroupRecord", "GroupRecord", "RunRecord"]
    assert members_of(rows) == [a0, a1, b0, b1, alone]
    assert group_rows(rows) == rows  # a row that is already a group stays one


def test_a_group_pools_its_processes_and_reports_their_spread():
    records = full_group(scales=(1.0, 1.06, 0.97))
    group = summarize_group(records)
    assert (group.processes, group.done, group.status) == (3, 3, "done")
    assert group.run_ids == tuple(r.run_id for r in records)
    speedups = [r.summary().speedup for r in records]
    assert group.process_speedups == tuple(speedups)
    assert group.speedup_process_spread == pytest.approx(max(speedups) / min(speedups))
    assert group.speedup_xproc_ci_low <= min(speedups) * 1.01 and group.speedup_xproc_ci_high >= max(speedups) * 0.99
    assert group.launch_bound is True and group.host_speedup_xproc_ci_low < group.host_speedup_xproc_ci_high
    row = GroupRecord.of(records)
    summary = row.summary()
    assert summary.eager.iter.n == sum(r.summary().eager.iter.n for r in records)  # the blocks pooled
    assert (summary.speedup_ci_low, summary.speedup_ci_high) == (
        group.speedup_xproc_ci_low,
        group.speedup_xproc_ci_high,
    )
    assert summary.verdict == group.verdict and summary.live is False
    # every process said it: each process's line, said once where it is shown, named as theirs (not the pooled row's)
    assert [w for w in summary.warnings if w.endswith(": a finished warning")] == [
        f"process {n} of 3: a finished warning" for n in (1, 2, 3)]
    assert "processes 1–3 of 3: a finished warning" in merged_processes(summary.warnings)
    assert list(row.raw_rows()) == [line for r in records for line in r.raw_rows()]


def test_a_groups_warnings_number_its_processes_among_all_of_them_a_failed_one_included():
    # A failed first process: the row's error named it "process 1 of 3" while the others' warnings were numbered
    # among the done ones, "processes 1–2 of 2"
    records = full_group()
    failed = records[0]
    failed.status, failed.error_kind, failed.error_message = RunStatus.FAILED, "runtime_error", "boom"
    row = GroupRecord.of(records)
    assert row.error_message == "process 1 of 3: boom"
    shown = merged_processes(row.summary().warnings)
    assert "processes 2–3 of 3: a finished warning" in shown
    assert not [line for line in shown if " of 2:" in line or line.startswith("process 1 of 3")]


def _cpu_process(n: int, eager: float, speedup: float, blocks: int = 12, compiled: float | None = None) -> RunRecord:
    """A done CPU run (group ``cpu-0``, repeat ``n``): eager times from ``eager`` ms with a tail of slow calls,
    compiled ``eager / speedup`` ms (or ``compiled``) each time."""
    record = RunRecord(f"cpu-{n}", RunOptions(workload="pointwise", device="cpu"), group_id="cpu-0", repeat=n)
    for index in range(blocks):
        for side, ms in (("eager", [eager * (1 + 0.5 * (i / 9) ** 4) for i in range(10)]),
                         ("compiled", [eager / speedup if compiled is None else compiled] * 10)):
            record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index, clock="perf_counter",
                                    ms=ms))
    record.apply(make_event("finished", 9.0))
    return record


def test_processes_at_different_levels_give_a_speedup_within_their_own():
    """A tester's two CPU processes at two levels (eager 23.5 and 25.9 us), each a little slower compiled: their
    samples pooled read faster than either, a median no process measured. The group reads the geometric mean of
    their own speedups, its interval holds it, and the row's eager and compiled times give that speedup."""
    records = [_cpu_process(0, 0.0235, 0.96), _cpu_process(1, 0.0259, 0.97)]
    own = [r.summary().speedup for r in records]
    blocks = [tuple([list(b.ms) for b in r.samples[side] if b.stage == "measure"] for side in ("eager", "compiled"))
              for r in records]
    assert bootstrap_speedup_processes(blocks, 200, seed=0).point > max(own)  # the case this test exists for
    group = summarize_group(records)
    assert group.speedup == pytest.approx((own[0] * own[1]) ** 0.5)
    assert min(own) <= group.speedup <= max(own)
    assert group.speedup_xproc_ci_low <= group.speedup <= group.speedup_xproc_ci_high
    summary = GroupRecord.of(records).summary()
    assert summary.speedup == pytest.approx(group.speedup)
    assert summary.eager.iter.median / summary.compiled.iter.median == pytest.approx(group.speedup)
    medians = [r.summary().eager.iter.median for r in records]
    assert summary.eager.iter.median == pytest.approx((medians[0] * medians[1]) ** 0.5)


def test_the_point_widens_an_interval_that_leaves_it_out():
    from tui.engine.measure.stats import SpeedupCI
    from tui.engine.store.repeats import _around_typical

    pooled = SpeedupCI(1.02, 1.01, 1.03)
    assert _around_typical(pooled, (2.0, 2.0)) == SpeedupCI(1.0, 1.0, 1.03)  # 2.0 / 2.0 below the pooled interval
    assert _around_typical(pooled, (2.1, 2.0)) == SpeedupCI(1.05, 1.01, 1.05)
    assert _around_typical(pooled, (2.04, 2.0)) == SpeedupCI(1.02, 1.01, 1.03)
    assert _around_typical(pooled, None) == pooled  # no typical medians: the pooled reading
    assert _around_typical(SpeedupCI(1.02, None, None), (2.0, 2.0)) == SpeedupCI(1.0, None, None)


def test_a_process_without_a_clock_or_with_a_zero_median_leaves_both_sides_pooled_in_the_group_and_its_row():
    """One rule for the group's speedup and its row: where a process lacks the host clock, or times a zero median,
    that clock's eager and compiled medians are both the pooled ones, never one of each."""
    records = _group((0.080, 0.090, 0.085))
    blocks = records[1].samples["compiled"]
    records[1].samples["compiled"] = [dataclasses.replace(b, host_ms_per_call=None) for b in blocks]
    records[1]._live = None  # type: ignore[assignment]  # its statistics read again from the samples
    records[1].set_samples(records[1].samples)
    assert records[1].summary().compiled.host is None and records[1].summary().compiled.iter is not None
    group, row = summarize_group(records), GroupRecord.of(records).summary()
    own = [r.summary().speedup for r in records]
    assert group.speedup == pytest.approx((own[0] * own[1] * own[2]) ** (1 / 3))  # the iter clock: typical
    assert row.speedup == pytest.approx(group.speedup)
    assert row.host_speedup == pytest.approx(group.host_speedup)  # the host clock: pooled, in both
    assert row.host_speedup == pytest.approx(row.eager.host.median / row.compiled.host.median)
    zero = [_cpu_process(0, 0.02, 1.1), _cpu_process(1, 0.03, 1.2), _cpu_process(2, 0.02, 1.0, compiled=0.0)]
    assert zero[2].summary().compiled.iter.median == 0 and zero[2].summary().speedup is None
    group, row = summarize_group(zero), GroupRecord.of(zero).summary()
    pooled = [sorted(x for r in zero for b in r.samples[side] if b.stage == "measure" for x in b.ms)
              for side in ("eager", "compiled")]
    assert (row.eager.iter.median, row.compiled.iter.median) == tuple(percentile(v, 50) for v in pooled)
    assert row.speedup == pytest.approx(group.speedup) and group.speedup == pytest.approx(
        percentile(pooled[0], 50) / percentile(pooled[1], 50))  # the pooled reading, in the group and its row


def test_each_input_shape_of_a_group_reads_its_processes_geometric_mean_too():
    """A dynamic-shapes group's per-shape speedups follow the group's rule, not a pooled median's."""
    def process(n: int, level: float, speedups: tuple[float, float]) -> RunRecord:
        record = RunRecord(f"dyn-{n}", RunOptions(workload="dynamic_shapes", device="cpu"), group_id="dyn-0", repeat=n)
        for index in range(8):
            for side in ("eager", "compiled"):
                ms = [level * (2 if side == "eager" else 2 / speedups[0]) * (1 + 0.01 * (index % 3)),
                      level * (4 if side == "eager" else 4 / speedups[1]) * (1 + 0.01 * (index % 3))]
                record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index,
                                        clock="perf_counter", ms=ms, labels=["batch=8", "batch=16"]))
        record.apply(make_event("finished", 9.0))
        return record

    records = [process(0, 1.0, (1.2, 1.5)), process(1, 1.9, (1.1, 1.4))]
    row = GroupRecord.of(records).summary()
    for label in ("batch=8", "batch=16"):
        own = [r.summary().per_label[label].speedup for r in records]
        assert row.per_label[label].speedup == pytest.approx((own[0] * own[1]) ** 0.5)
        assert row.per_label[label].eager.median / row.per_label[label].compiled.median == pytest.approx(
            row.per_label[label].speedup)


def test_a_group_of_one_is_that_run():
    record = cuda_run_record()
    record.group_id = record.run_id
    group = summarize_group([record])
    summary = record.summary()
    assert (group.verdict, group.host_verdict, group.speedup) == (
        summary.verdict,
        summary.host_verdict,
        summary.speedup,
    )
    assert group.speedup_xproc_ci_low is None and group.speedup_process_spread is None
    assert group_rows([record]) == [record]
    assert wants_another_process(group)  # launch-bound, and no interval across processes yet


def _measured(record: RunRecord, compiled: float = 0.116, host: float = 0.160, blocks: int = 6) -> RunRecord:
    """``record`` after a clean launch-bound CUDA run: eager 0.100 ms (host ``host``), compiled ``compiled``."""
    for index in range(blocks):
        for side, ms, host_ms in (("eager", 0.100, host), ("compiled", compiled, 0.118)):
            record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index, clock="cuda_event",
                                    ms=[ms * (1 + 0.004 * (i % 3)) for i in range(10)], host_ms_per_call=host_ms))
    record.apply(make_event("finished", 9.0))
    return record


def _group(compiled: tuple[float, ...], host: tuple[float, ...] | None = None) -> list[RunRecord]:
    options = RunOptions(workload="pointwise", device="cuda")
    records = [RunRecord(f"run-{n}", options, group_id="run-0", repeat=n) for n in range(len(compiled))]
    return [_measured(r, c, h) for r, c, h in zip(records, compiled, host or (0.160,) * len(compiled), strict=True)]


def test_the_group_verdict_is_judged_on_the_interval_across_processes():
    agree = summarize_group(_group((0.080, 0.0802, 0.0799)))
    assert (agree.verdict, agree.noise_reasons) == ("faster", ())
    assert agree.host_verdict == "faster" and agree.launch_bound
    slower = summarize_group(_group((0.116, 0.117, 0.115)))
    assert slower.verdict == "slower"
    apart = summarize_group(_group((0.080, 0.116, 0.070)))  # processes that disagree: their interval holds it
    assert (apart.verdict, apart.noise_reasons) == ("inconclusive", ())
    straddles = summarize_group(_group((0.098, 0.102, 0.1)))
    assert straddles.verdict == "inconclusive"


def test_a_noisy_process_makes_the_group_noisy_and_is_named():
    records = _group((0.080, 0.080))
    records[1].set_telemetry(RunTelemetry(other_gpu_processes=("python (77)",)))
    group = summarize_group(records)
    assert group.verdict == "noisy"
    assert group.noise_reasons == ("process 2 of 2: other processes used the GPU while measuring: python (77)",)
    shared = summarize_group(full_group())  # every process had the same reason: said once, naming them
    assert any(
        reason.startswith("processes 1, 2, 3 of 3: other processes used the GPU") for reason in shared.noise_reasons
    )


def test_host_tight_within_each_process_but_swinging_across_them_is_not_decisive():
    # Each process's host time is the same in every block (a tight interval), but the processes
    # disagree: 0.85x in one, 1.27x in the other. Alone, each would have read slower or faster.
    records = _group((0.080, 0.080), host=(0.100, 0.150))
    for record in records:
        summary = record.summary()
        assert summary.launch_bound and summary.host_speedup_ci_high / summary.host_speedup_ci_low < 1.01
        assert (summary.host_verdict, summary.host_noise_reasons) == ("inconclusive", (ONE_PROCESS_HOST,))
        assert summary.verdict == "faster"  # device time: one process is decisive
    group = summarize_group(records)
    assert group.host_speedup_xproc_ci_low < 1 < group.host_speedup_xproc_ci_high
    assert (group.host_verdict, group.host_noise_reasons) == ("inconclusive", ())
    agree = summarize_group(_group((0.080, 0.080, 0.080), host=(0.150, 0.152, 0.151)))
    assert agree.host_verdict == "faster"  # processes that agree: decisive across them


def test_a_failed_process_fails_the_row_and_names_it():
    records = full_group(scales=(1.0, 1.0, 1.0))
    failed = RunRecord("failed-one", records[0].options, group_id=records[0].group_id, repeat=3)
    failed.fail("crash", "worker crashed (signal 9)")
    row = GroupRecord.of([*records, failed])
    assert (row.status, row.group.processes, row.group.done) == ("failed", 4, 3)
    assert row.error_message == "process 4 of 4: worker crashed (signal 9)"
    assert row.summary().verdict is None and row.summary().speedup is not None


@pytest.mark.parametrize(("changes", "wanted"), [
    ({}, True),
    ({"done": 1, "processes": 1, "speedup_xproc_ci_low": None, "speedup_xproc_ci_high": None}, True),
    ({"speedup_xproc_ci_low": 1.30, "speedup_xproc_ci_high": 1.31}, False),  # both intervals within 2%
    ({"launch_bound": False}, False),
    ({"status": "failed"}, False),
    ({"processes": AUTO_MAX_PROCESSES, "done": AUTO_MAX_PROCESSES}, False),
])  # fmt: skip
def test_repeat_auto_adds_a_process_while_a_launch_bound_interval_is_too_wide(changes, wanted):
    wide = dict(group_id="g", processes=2, done=2, status="done", launch_bound=True, speedup_xproc_ci_low=1.2,
                speedup_xproc_ci_high=1.4, host_speedup_xproc_ci_low=1.40, host_speedup_xproc_ci_high=1.42)
    assert wants_another_process(GroupSummary(**{**wide, **changes})) is wanted


def test_the_target_of_repeat_auto_is_target_ci():
    group = GroupSummary(processes=2, done=2, status="done", launch_bound=True, speedup_xproc_ci_low=1.0,
                         speedup_xproc_ci_high=1.04, host_speedup_xproc_ci_low=1.0, host_speedup_xproc_ci_high=1.04)
    assert wants_another_process(group) and not wants_another_process(group, target=0.05)


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("3", 3), (" Auto ", "auto"), (5, 5)])
def test_parse_repeat(text, value):
    assert parse_repeat(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "101", "many", "2.5"])
def test_parse_repeat_refuses_with_what_is_allowed(text):
    with pytest.raises(ValueError, match=r"allowed: an integer from 1 to 100, or auto"):
        parse_repeat(text)


def test_the_csv_has_one_row_per_configuration(tmp_path):
    group, alone = full_group(), cuda_run_record()
    write_csv([group[0], alone, *group[1:]], tmp_path / "r.csv")
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [(r["run_id"], r["repeats"], r["group_id"]) for r in rows] == [
        (group[0].run_id, "3", group[0].run_id), (alone.run_id, "1", "")]
    assert rows[0]["speedup_ci_low"] == rows[0]["speedup_xproc_ci_low"] != ""
    assert rows[1]["speedup_xproc_ci_low"] == rows[1]["speedup_process_spread"] == ""


# ----- the session: interleaved repeats, and auto ----------------------------------------------------


class ProcessRunner:
    """Finishes every run at once with launch-bound CUDA-event blocks; ``host_scale(record)`` per process,
    ``compiled_ms(record)`` the compiled side's time (eager's is 0.100 ms), which moves by ``jitter``
    (a share) from block to block."""

    keep_spare = False

    def __init__(self, host_scale=lambda record: 1.0, compiled_ms=lambda record: 0.116, jitter=0.0) -> None:
        self.host_scale = host_scale
        self.compiled_ms = compiled_ms
        self.jitter = jitter
        self.started: list[RunRecord] = []

    async def run(self, record, on_event=None):
        self.started.append(record)
        await asyncio.sleep(0)
        clock = "cuda_event" if record.options.device.startswith("cuda") else "perf_counter"
        scale = self.host_scale(record)
        for index in range(6):
            compiled = self.compiled_ms(record) * (1 + self.jitter * (index % 3 - 1))
            for side, ms, host in (("eager", 0.100, 0.160), ("compiled", compiled, 0.118)):
                record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index,
                                        clock=clock, ms=[ms + 0.001 * (i % 3) for i in range(10)],
                                        host_ms_per_call=host * (scale if side == "eager" else 1.0)))  # fmt: skip
        record.apply(make_event("finished", 9.0))
        return record

    async def aclose(self) -> None:
        pass

    def kill_all(self) -> None:
        pass


def _config(n: int) -> RunOptions:
    return RunOptions(workload="pointwise", params={"n": n}, device="cuda")


async def test_repeats_are_interleaved_and_grouped():
    runner = ProcessRunner()
    session = RunSession(lambda lane: runner)
    records = session.submit([_config(1), _config(2)], repeats=3)
    assert [(r.options.params["n"], r.repeat) for r in records] == [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]
    assert [u.record for u in session.queue] == records
    assert [r.group_id for r in records] == [records[0].run_id, records[1].run_id] * 3
    await session.wait_settled()
    assert runner.started == records
    assert [len(g) for g in group_records(session.ended())] == [3, 3]


async def test_one_repeat_makes_no_group():
    session = RunSession(lambda lane: ProcessRunner())
    [record] = session.submit([_config(1)])
    assert (record.group_id, record.repeat) == (None, 0)
    await session.wait_settled()


class Queued:
    def __init__(self) -> None:
        self.rounds: list[list[RunRecord]] = []

    def runs_queued(self, records):
        self.rounds.append(records)

    def __getattr__(self, name):
        return lambda *args: None


async def test_repeat_auto_grows_launch_bound_configurations_until_the_cap_or_the_target():
    # n=1: host time differs from process to process (interval never within 2%): grows to the cap.
    # n=2: processes agree: two are enough. n=3 on the CPU reads slower from its first process: one.
    def host_scale(record):
        return 1.0 + 0.15 * (record.repeat % 2) if record.options.params["n"] == 1 else 1.0

    runner, heard = ProcessRunner(host_scale), Queued()
    session = RunSession(lambda lane: runner, listener=heard)
    cpu = RunOptions(workload="pointwise", params={"n": 3}, device="cpu")
    first = session.submit([_config(1), _config(2), cpu], repeats="auto")
    assert len(first) == 3 and all(r.group_id == r.run_id for r in first[:2])
    assert first[2].group_id == first[2].run_id  # under auto every configuration is a group from its first
    await asyncio.wait_for(session.wait_settled(), 30)
    counts = {g[0].options.params["n"]: len(g) for g in group_records(session.records)}
    assert counts == {1: AUTO_MAX_PROCESSES, 2: 2, 3: 1}
    assert [[r.options.params["n"] for r in batch] for batch in heard.rounds] == [[1, 2], [1], [1], [1]]
    assert [r.repeat for r in session.records if r.options.params["n"] == 1] == [0, 1, 2, 3, 4]
    assert all(r.status == "done" for r in session.records)


async def test_repeat_auto_on_the_cpu_grows_only_while_inconclusive_up_to_its_cap():
    # n=1 reads 1.015x, straddling the 2% band's edge in every process: grows to the CPU's cap.
    # n=2 reads slower (0.86x) from its first process: one. n=3 straddles in its first process and reads
    # 1.11x in the next ones: the processes disagree, so their interval straddles too (the cap again).
    def compiled_ms(record):
        n = record.options.params["n"]
        if n == 3:
            return 0.0985 if record.repeat == 0 else 0.0900
        return {1: 0.0985, 2: 0.116}[n]

    runner = ProcessRunner(compiled_ms=compiled_ms, jitter=0.02)
    session = RunSession(lambda lane: runner)
    cpu = [RunOptions(workload="pointwise", params={"n": n}, device="cpu") for n in (1, 2, 3)]
    session.submit(cpu, repeats="auto")
    await asyncio.wait_for(session.wait_settled(), 30)
    groups = {g[0].options.params["n"]: g for g in group_records(session.records)}
    assert {n: len(g) for n, g in groups.items()} == {1: AUTO_CPU_MAX_PROCESSES, 2: 1, 3: AUTO_CPU_MAX_PROCESSES}
    assert [summarize_group(groups[n]).verdict for n in (1, 2, 3)] == ["inconclusive", "slower", "inconclusive"]
    assert groups[3][1].summary().verdict == "faster"  # each later process alone would have said faster
    assert not any(r.options.profile for g in groups.values() for r in g[1:])  # later processes: no profile


def test_a_cpu_group_asks_for_another_process_only_while_inconclusive():
    inconclusive = GroupSummary(status="done", processes=1, done=1, verdict="inconclusive")
    straddles = (0.99, 1.04)
    assert wants_another_process(inconclusive, device="cpu", interval=straddles)
    assert not wants_another_process(inconclusive, device="cpu")  # too few blocks for an interval: no more
    more = dataclasses.replace(inconclusive, processes=AUTO_CPU_MAX_PROCESSES)
    assert not wants_another_process(more, device="cpu", interval=straddles)
    for word in ("faster", "slower", "no change", "noisy"):
        assert not wants_another_process(dataclasses.replace(inconclusive, verdict=word), device="cpu",
                                         interval=straddles)
    assert not wants_another_process(dataclasses.replace(inconclusive, status="failed"), device="cpu",
                                     interval=straddles)
    assert wants_another_process(dataclasses.replace(inconclusive, verdict="faster", launch_bound=True))  # a GPU


async def test_repeat_auto_stops_when_the_queue_is_cancelled():
    runner = ProcessRunner()
    session = RunSession(lambda lane: runner)
    session.submit([_config(1)], repeats="auto")
    session.cancel_all()
    await session.wait_settled()
    assert len(session.records) == 1 and session.records[0].status == "cancelled"


def test_too_few_block_pairs_in_all_give_no_interval_across_processes():
    options = RunOptions(workload="pointwise", device="cuda")
    records = [_measured(RunRecord(f"run-{n}", options, group_id="run-0", repeat=n), 0.08, blocks=1) for n in range(3)]
    group = summarize_group(records)
    assert group.speedup is not None and group.speedup_xproc_ci_low is None and group.verdict == "inconclusive"
    records.append(_measured(RunRecord("run-3", options, group_id="run-0", repeat=3), 0.08, blocks=1))
    assert summarize_group(records).speedup_xproc_ci_low is not None  # four pairs: as for one run
