"""tui.engine.store.results.RunRecord: scripted event sequences -> summary, CSV row, JSON, raw rows."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time

import pytest

from tui.engine.options import RunOptions
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.protocol import PROTOCOL_VERSION, BlockTimed, Event, ProtocolError, decode, make_event
from tui.engine.store.columns import CSV_COLUMNS, RAW_COLUMNS, format_value
from tui.engine.store.results import STATUSES, RunRecord
from tui.telemetry.model import RunTelemetry

EAGER = [2.0, 2.1, 1.9, 2.0, 2.02]  # median 2.0
COMPILED = [1.0, 1.05, 0.95, 1.0, 1.01]  # median 1.0


def _options(**changes) -> RunOptions:
    return RunOptions(
        **{"workload": "pointwise", "params": {"n": 256}, "iters": 20, "block_size": 5, **changes}
    ).validated()


def _script(blocks: int = 4, clock: str = "perf_counter", eager_wall: float = 2.2, compiled_wall: float = 1.2,
            labels: list[str] | None = None, finished: dict | None = None) -> list[Event]:  # fmt: skip
    events = [
        make_event("ready", 0.0, pid=123, python="3.11", torch="2.13"),
        make_event("started", 0.1, env={"torch": "2.13.0", "device": "cuda:0" if clock == "cuda_event" else "cpu",
                                         "gpu_name": "H200", "gpu_uuid": "GPU-1234"}),  # fmt: skip
        make_event("phase", 0.2, phase="building"),
        make_event("phase", 0.3, phase="compiling"),
        make_event("block", 0.4, side="eager", stage="compile", index=0, clock=clock, ms=[5.0], host_ms_per_call=5.0),
        make_event("compiled", 1.5, compile_s=2.0,
                   diagnostics={"graph_breaks": 1, "graph_break_reasons": ["x"], "recompiles": 0, "unique_graphs": 2}),
        make_event("phase", 1.6, phase="warming_up"),
        make_event("block", 1.7, side="compiled", stage="warmup", index=0, clock=clock, ms=[1.5, 1.2, 1.1]),
        make_event("phase", 1.75, phase="checking_accuracy"),
        make_event("phase", 1.8, phase="measuring"),
    ]  # fmt: skip
    for i in range(blocks):
        for side, ms, wall in (("eager", EAGER, eager_wall), ("compiled", COMPILED, compiled_wall)):
            fields = dict(side=side, stage="measure", index=i, clock=clock, ms=ms, host_ms_per_call=wall)
            if labels:
                fields["labels"] = labels
            events.append(make_event("block", 2.0 + i, **fields))
    events.append(
        make_event(
            "measured",
            10.0,
            **(
                finished
                if finished is not None
                else dict(
                    diagnostics={"cudagraph_skips": 0, "recompiles": 1},
                    accuracy={"max_abs_err": 1e-6, "max_rel_err": 2e-5, "passed": True},
                    memory={"eager_peak_mb": 100.5, "compiled_peak_mb": 80.25},
                    flops_per_call=4e9,
                    bytes_per_call=8e6,
                    warnings=["TF32 is off on both sides"],
                )
            ),
        )
    )
    events.append(make_event("finished", 10.5))
    return events


def _is_measure(event: Event, side: str) -> bool:
    return isinstance(event, BlockTimed) and event.stage == "measure" and event.side == side


def _run(events: list[Event], **option_changes) -> RunRecord:
    record = RunRecord.new(_options(**option_changes))
    for event in events:
        record.apply(event)
    return record


def test_statuses_follow_the_events():
    record = RunRecord.new(_options())
    assert record.status == "queued" and record.progress() == 0.0
    seen = []
    for event in _script():
        record.apply(event)
        seen.append(record.status)
    assert seen[0] == "starting"
    assert {"building", "compiling", "warming_up", "measuring", "checking_accuracy"} <= set(seen)
    assert record.status == "done" and record.progress() == 1.0
    assert set(seen) <= set(STATUSES)


def test_progress_counts_measured_iterations_only():
    record = RunRecord.new(_options(iters=20))
    events = _script(blocks=4)
    measure_events = [e for e in events if isinstance(e, BlockTimed) and e.stage == "measure"]
    for event in events[: events.index(measure_events[0])]:
        record.apply(event)
    assert record.progress() == 0.0  # compile and warm-up blocks are not measurement
    for event in measure_events[:4]:
        record.apply(event)
    assert record.progress() == pytest.approx(20 / 40)


def test_progress_with_a_time_budget():
    record = RunRecord.new(_options(iters=1000, time_budget_s=0.1))
    record.apply(make_event("block", 1, side="eager", stage="measure", index=0, clock="perf_counter",
                            ms=[1.0] * 10, host_ms_per_call=2.5))  # fmt: skip
    assert record.progress() == pytest.approx(0.025 / 0.1)


def test_summary_of_a_finished_cpu_run():
    record = _run(_script(blocks=4))
    s = record.summary()
    eager, compiled = s.eager.iter, s.compiled.iter
    assert (eager.n, compiled.n) == (20, 20)
    assert eager.median == 2.0 and compiled.median == 1.0
    assert eager.mean == pytest.approx(2.004) and compiled.mean == pytest.approx(1.002)
    # perf_counter: one loop times both clocks, so the host figures are the per-call ones (not the wall 2.2)
    assert s.eager.host == eager and s.compiled.host == compiled
    assert (s.host_speedup, s.host_speedup_ci_low, s.host_speedup_ci_high) == (2.0, 2.0, 2.0)
    assert s.speedup == 2.0
    # every block is identical, so every resample gives 2.0
    assert (s.speedup_ci_low, s.speedup_ci_high, s.significant) == (2.0, 2.0, True)
    assert s.launch_bound is None  # perf_counter: the two clocks measure the same thing
    assert s.break_even_calls == 2000  # 2 s / (2.0 ms - 1.0 ms)
    assert s.tflops == pytest.approx(4e9 / 1e-3 / 1e12)
    assert s.gbps == pytest.approx(8e6 / 1e-3 / 1e9)
    assert s.live is False
    assert "TF32 is off on both sides" in s.warnings
    assert not any("spread" in w or "too few" in w for w in s.warnings)


def test_live_summary_has_no_interval_yet():
    record = RunRecord.new(_options())
    for event in _script()[:-3]:
        record.apply(event)
    s = record.summary()
    assert s.live is True and s.speedup == 2.0
    assert s.speedup_ci_low is None and s.significant is None


def test_launch_bound_on_cuda_events():
    record = _run(_script(clock="cuda_event", eager_wall=2.1, compiled_wall=1.4))  # 1.4 > 1.25 * 1.0
    assert record.summary().launch_bound is True
    record = _run(_script(clock="cuda_event", eager_wall=2.1, compiled_wall=1.1))
    assert record.summary().launch_bound is False


def test_host_speedup_and_the_launch_bound_warning():
    """A launch-bound run reports the host-inclusive speedup next to the device-time one."""
    bound = _run(_script(clock="cuda_event", eager_wall=2.8, compiled_wall=1.4))
    summary = bound.summary()
    assert summary.host_speedup == pytest.approx(2.0)
    assert any(w.startswith("launch-bound:") and "2.00x" in w for w in summary.warnings)
    assert bound.to_row()["host_speedup"] == "2"
    assert RunRecord.from_json(json.loads(json.dumps(bound.to_json()))).summary().host_speedup == pytest.approx(2.0)
    plain = _run(_script(clock="cuda_event", eager_wall=2.1, compiled_wall=1.1))
    assert not any(w.startswith("launch-bound:") for w in plain.summary().warnings)


def test_the_host_speedup_has_its_own_interval_over_block_pairs():
    """Each block's host time is one unit; the interval widens with the host's spread and is exported."""
    events = _script(blocks=8, clock="cuda_event", eager_wall=2.8, compiled_wall=1.4)
    walls = iter([2.0, 3.6, 2.4, 3.2, 2.8, 2.6, 3.0, 2.2])  # eager host time per block varies
    events = [
        dataclasses.replace(e, host_ms_per_call=next(walls)) if _is_measure(e, "eager") else e for e in events
    ]
    record = _run(events)
    summary = record.summary()
    low, high = summary.host_speedup_ci_low, summary.host_speedup_ci_high
    assert summary.host_speedup == pytest.approx(2.7 / 1.4)
    assert low is not None and high is not None
    assert low < summary.host_speedup < high
    assert 2.0 / 1.4 <= low and high <= 3.6 / 1.4  # inside the range of the per-block ratios
    assert summary.speedup_ci_low == summary.speedup_ci_high  # device times did not vary
    row = record.to_row()
    assert float(row["host_speedup_ci_low"]) == pytest.approx(low, rel=1e-5)
    assert float(row["host_speedup_ci_high"]) == pytest.approx(high, rel=1e-5)
    assert any(f"[{low:.2f}, {high:.2f}]" in w for w in summary.warnings if w.startswith("launch-bound:"))
    stored = RunRecord.from_json(json.loads(json.dumps(record.to_json(samples=False)))).summary()
    assert (stored.host_speedup_ci_low, stored.host_speedup_ci_high) == (low, high)


def test_a_live_run_has_no_host_interval_yet():
    record = RunRecord.new(_options())
    for event in _script(clock="cuda_event")[:-3]:
        record.apply(event)
    assert record.summary().host_speedup is not None and record.summary().host_speedup_ci_low is None


def test_no_fake_zeros_and_no_break_even_when_slower():
    finished = dict(diagnostics={}, accuracy={}, memory={}, flops_per_call=0, bytes_per_call=None, warnings=[])
    record = RunRecord.new(_options())
    events = _script(finished=finished)
    for event in events:
        if _is_measure(event, "compiled"):
            event = dataclasses.replace(event, ms=tuple(x * 3 for x in COMPILED))
        record.apply(event)
    s = record.summary()
    assert s.tflops is None and s.gbps is None
    assert s.speedup == pytest.approx(2 / 3)
    assert s.break_even_calls is None
    assert s.significant is True  # a significant slowdown
    row = record.to_row()
    assert row["tflops"] == "" and row["gbps"] == "" and row["break_even_calls"] == ""
    assert row["accuracy"] == "n/a"


def test_stability_warnings():
    record = RunRecord.new(_options())
    record.apply(make_event("block", 1, side="eager", stage="measure", index=0, clock="perf_counter",
                            ms=[1.0, 1.0, 1.3, 1.6, 2.0], host_ms_per_call=1.5))  # fmt: skip
    record.apply(make_event("block", 1, side="compiled", stage="measure", index=0, clock="perf_counter",
                            ms=[1.0] * 12, host_ms_per_call=1.0))  # fmt: skip
    record.apply(make_event("warning", 2, message="recompiled\n8 times"))
    record.set_telemetry(
        RunTelemetry(throttle_reasons=("GPU idle", "SW thermal slowdown", "applications clocks setting"))
    )
    warnings = record.summary().warnings
    # eager: q1 = 1.0, q3 = 1.6, median 1.3 -> IQR/median = 46%
    assert "eager time spread IQR/median 46% > 10%: a wide distribution; the verdict judges by the interval" in warnings
    assert "too few eager samples (n = 5 < 10): raise iters" in warnings
    assert not any(w.startswith("compiled") or "few compiled" in w for w in warnings)
    assert "recompiled 8 times" in warnings
    assert any(w.startswith("GPU clocks were throttled during the run (SW thermal slowdown):") for w in warnings)


def test_the_warnings_and_the_verdict_read_one_spread_limit():
    # --noise-limit max_relative_iqr=0.5: an 11% spread is within it for the verdict and the warnings alike.
    def run(limits: dict[str, float]) -> RunRecord:
        record = RunRecord.new(_options(noise_limits=limits))
        for index in range(6):
            for side, base in (("eager", 2.0), ("compiled", 1.0)):
                ms = [base * f for f in (0.93, 0.95, 1.0, 1.0, 1.05, 1.07, 0.9, 1.1)]  # IQR/median 11%
                record.apply(make_event("block", 1 + index, side=side, stage="measure", index=index,
                                        clock="perf_counter", ms=ms, host_ms_per_call=base))  # fmt: skip
        record.apply(make_event("finished", 9))
        return record

    loose = run({"max_relative_iqr": 0.5}).summary()
    assert loose.verdict == "faster" and not any("spread" in w for w in loose.warnings)
    default = run({}).summary()
    assert default.verdict == "faster"
    assert [w for w in default.warnings if "spread" in w] == [
        f"{side} time spread IQR/median 11% > 10%: a wide distribution; the verdict judges by the interval"
        for side in ("eager", "compiled")]


def test_per_label_stats_for_dynamic_shapes():
    labels = ["batch=16", "batch=128", "batch=16", "batch=128", "batch=16"]
    record = _run(_script(labels=labels))
    per_label = record.summary().per_label
    assert list(per_label) == ["batch=16", "batch=128"]  # numeric order, not string order
    assert per_label["batch=16"].eager.n == 12  # 3 per block, 4 blocks
    assert per_label["batch=16"].eager.median == 2.0  # values 2.0, 1.9, 2.02
    assert per_label["batch=16"].compiled.median == 1.0
    assert per_label["batch=128"].speedup == pytest.approx(2.1 / 1.05)
    raw = list(record.raw_rows())
    assert [r["label"] for r in raw if r["stage"] == "measure"][:5] == labels


def test_to_row_values():
    record = _run(_script())
    record.created = 1_700_000_000.0
    record.set_telemetry(RunTelemetry.from_json({
        "sm_clock_mean_mhz": 1980.0, "sm_clock_min_mhz": 1755, "temp_max_c": 61, "power_mean_w": 412.345678,
        "energy_j": 1234.5, "throttle_reasons": [],
    }))  # fmt: skip
    row = record.to_row()
    assert list(row) == list(CSV_COLUMNS)
    assert row["timestamp"] == "2023-11-14T22:13:20Z"
    assert row["params"] == "n=256"
    assert row["device"] == "cpu" and row["gpu_name"] == "H200" and row["gpu_uuid"] == "GPU-1234"
    assert row["torch_version"] == "2.13.0"
    assert (row["backend"], row["mode"], row["fullgraph"], row["dynamic"]) == ("inductor", "default", "false", "auto")
    assert row["status"] == "done" and row["error"] == "" and row["compile_s"] == "2"
    assert row["eager_n"] == "20" and row["eager_median_ms"] == "2" and row["eager_mean_ms"] == "2.004"
    assert row["eager_min_ms"] == "1.9" and row["eager_max_ms"] == "2.1"
    assert row["compiled_host_median_ms"] == "1"  # perf_counter: the per-call median (one loop times both)
    assert row["speedup"] == "2" and row["significant"] == "true" and row["launch_bound"] == ""
    assert row["break_even_calls"] == "2000"
    assert row["graph_breaks"] == "1" and row["recompiles"] == "1" and row["unique_graphs"] == "2"
    assert row["cudagraph_skips"] == "0"
    assert row["eager_peak_mem_mb"] == "100.5" and row["compiled_peak_mem_mb"] == "80.25"
    assert row["max_abs_err"] == "1e-06" and row["accuracy"] == "pass"
    assert row["tflops"] == "4" and row["gbps"] == "8"
    assert row["power_mean_w"] == "412.346" and row["sm_clock_min_mhz"] == "1755"
    assert row["throttle_reasons"] == ""
    assert row["warnings"] == "TF32 is off on both sides"


def test_to_row_reads_only_the_worker_format_and_tolerates_gaps():
    # Payloads are decoded once (as a line from the worker or the history is): a key that is
    # not the worker's is not read, and a value of the wrong type is dropped and named.
    record = _run(_script())
    record.env, problems = Env.decode({"torch_version": "2.13.0", "gpu_name": None})  # not the worker's key
    assert problems == []
    record.memory, problems = Memory.decode({"eager_peak_mb": None, "compiled_peak_bytes": 2**20})  # only *_peak_mb
    assert problems == []
    record.accuracy, problems = Accuracy.decode({"max_abs_err": "junk", "passed": None, "status": "pass"})
    assert [p.split(":")[0] for p in problems] == ["Accuracy.max_abs_err"]
    record.diagnostics, problems = Diagnostics.decode({"graph_breaks": ["a", "b"], "recompiles": True,
                                                       "unique_graphs": 2.5})  # fmt: skip
    assert [p.split(":")[0] for p in problems] == [
        "Diagnostics.graph_breaks", "Diagnostics.unique_graphs", "Diagnostics.recompiles",
    ]  # fmt: skip
    row = record.to_row()
    assert row["torch_version"] == row["gpu_name"] == ""
    assert row["eager_peak_mem_mb"] == row["compiled_peak_mem_mb"] == ""
    assert row["max_abs_err"] == row["max_rel_err"] == "" and row["accuracy"] == "n/a"
    assert row["graph_breaks"] == row["recompiles"] == row["unique_graphs"] == row["cudagraph_skips"] == ""
    record.accuracy = Accuracy.from_json({"max_rel_err": 0.5, "passed": False})
    row = record.to_row()
    assert row["accuracy"] == "fail" and row["max_rel_err"] == "0.5"


def test_format_value_rules():
    assert format_value(None) == "" and format_value(float("nan")) == "" and format_value(float("inf")) == ""
    assert format_value(True) == "true" and format_value(False) == "false"
    assert format_value(12) == "12" and format_value(0.1 + 0.2) == "0.3" and format_value(1234567.0) == "1.23457e+06"
    assert format_value("two\nlines") == "two lines"


def test_failed_run():
    record = RunRecord.new(_options())
    for event in _script()[:5]:
        record.apply(event)
    record.apply(make_event("failed", 3.0, kind="compile_error", message="inductor raised\nLoweringException",
                            detail="Traceback ...\nLoweringException: boom"))  # fmt: skip
    assert record.status == "failed" and record.finished
    assert record.error_kind == "compile_error" and record.error_message == "inductor raised LoweringException"
    s = record.summary()
    assert s.eager.iter is None and s.speedup is None and s.significant is None
    row = record.to_row()
    assert row["status"] == "failed" and row["error_kind"] == "compile_error"
    assert row["eager_n"] == "" and row["speedup"] == ""
    record.apply(make_event("measured", 4.0, warnings=["late"]))
    record.apply(make_event("finished", 4.0))
    assert record.status == "failed" and "late" not in record.warnings  # nothing changes after the end


def test_cancelled_run_keeps_its_partial_data():
    record = RunRecord.new(_options())
    for event in _script(blocks=5)[:-3]:  # the last compiled block never came: 4 pairs
        record.apply(event)
    record.fail("cancelled", "cancelled by the user")
    assert record.status == "cancelled" and record.error_kind == "cancelled"
    s = record.summary()
    assert s.eager.iter.n == 25 and s.speedup == 2.0
    assert s.speedup_ci_low == 2.0  # computed once the record ended
    assert record.to_row()["status"] == "cancelled"


def test_unknown_and_malformed_events_are_refused_before_they_reach_a_record():
    # Malformed events are refused where they are decoded, naming what is wrong; the record
    # only ever sees typed events, and ignores anything else.
    with pytest.raises(ProtocolError, match="not an event"):
        decode(json.dumps({"v": PROTOCOL_VERSION, "event": "mystery", "t": 0}))
    with pytest.raises(ProtocolError, match="unknown event 'mystery'"):
        make_event("mystery", 0)
    with pytest.raises(ProtocolError, match="phase: 'levitating' is not one of"):
        make_event("phase", 0, phase="levitating")
    with pytest.raises(ProtocolError, match="side: 'sideways' is not one of"):
        make_event("block", 0, side="sideways", stage="measure", index=0, clock="x", ms=[1.0])
    with pytest.raises(ProtocolError, match=r"block\.ms: expected a list, got str"):
        make_event("block", 0, side="eager", stage="measure", index=0, clock="x", ms="oops")
    record = RunRecord.new(_options())
    record.apply(make_event("block", 0, side="eager", stage="measure", index=1, clock="x", ms=[1.0, None, 2.0]))
    record.apply("not an event")  # type: ignore[arg-type]
    # A dict is not an event (any more): the record ignores it.
    record.apply({"v": PROTOCOL_VERSION, "event": "phase", "t": 0, "phase": "measuring"})  # type: ignore[arg-type]
    assert record.status == "queued"
    assert [list(b.ms) for b in record.samples["eager"]] == [[1.0, 2.0]]  # a null time is dropped
    assert record.warnings == []


def test_summary_is_cached_and_invalidated():
    record = _run(_script(blocks=2)[:-3])
    first = record.summary()
    assert record.summary() is first
    record.apply(make_event("block", 5, side="eager", stage="measure", index=9, clock="perf_counter", ms=[10.0] * 50))
    second = record.summary()
    assert second is not first and second.eager.iter.n == 60
    record.warnings.append("added by hand")
    assert "added by hand" in record.summary().warnings


@pytest.mark.perf  # a CPU-time bound
def test_live_summary_stays_cheap_with_many_samples():
    rng = random.Random(0)
    record = RunRecord.new(_options(iters=200_000))
    for i in range(1000):
        for side in ("eager", "compiled"):
            block = [rng.lognormvariate(0, 0.1) for _ in range(100)]
            record.apply(make_event("block", i, side=side, stage="measure", index=i, clock="perf_counter",
                                    ms=block, host_ms_per_call=1.2))  # fmt: skip
    record.summary()
    started = time.process_time()
    for i in range(1000, 1020):  # ten summaries a second for two seconds, a new block each time
        block = [rng.lognormvariate(0, 0.1) for _ in range(100)]
        record.apply(make_event("block", i, side="eager", stage="measure", index=i, clock="perf_counter", ms=block))
        record.summary()
    elapsed = time.process_time() - started
    assert record.summary().eager.iter.n == 102_000
    assert elapsed < 1.0, f"20 live summaries of 200k samples took {elapsed:.2f} s of CPU"


def test_json_round_trip():
    record = _run(_script(labels=["a", "b", "a", "b", "a"]))
    record.set_telemetry(RunTelemetry(energy_j=12.5, throttle_reasons=("HwSlowdown",)))
    data = json.loads(json.dumps(record.to_json(), allow_nan=False))
    back = RunRecord.from_json(data)
    assert back.run_id == record.run_id and back.options == record.options and back.created == record.created
    assert back.samples_loaded
    assert back.to_row() == record.to_row()
    assert list(back.raw_rows()) == list(record.raw_rows())
    assert back.summary().per_label["a"].speedup == record.summary().per_label["a"].speedup
    assert back.telemetry == record.telemetry and back.diagnostics == record.diagnostics


def test_json_without_samples_uses_the_stored_summary():
    record = _run(_script())
    back = RunRecord.from_json(json.loads(json.dumps(record.to_json(samples=False))))
    assert not back.samples_loaded
    assert back.to_row() == record.to_row()
    assert back.summary().eager.iter == record.summary().eager.iter


def test_from_json_is_tolerant():
    record = RunRecord.from_json({"run_id": "r1"})
    assert record.run_id == "r1" and record.options == RunOptions()
    assert record.to_row()["run_id"] == "r1"
    record = RunRecord.from_json({"run_id": "r2", "status": "done",
                                  "options": {"workload": "matmul", "from_the_future": 1},
                                  "samples": {"eager": [{"ms": [1.0, 2.0]}, "junk"], "compiled": None}})  # fmt: skip
    assert record.options.workload == "matmul"
    assert any("from_the_future" in w for w in record.warnings)
    assert record.summary().eager.iter.n == 2
    with pytest.raises(TypeError):
        RunRecord.from_json(["not", "a", "dict"])  # type: ignore[arg-type]


def test_raw_rows_one_per_iteration():
    record = _run(_script(blocks=4))
    rows = list(record.raw_rows())
    expected = sum(len(b.ms) for side in ("eager", "compiled") for b in record.samples[side])
    assert len(rows) == expected == 1 + 3 + 4 * 5 * 2  # compile + warm-up + measure blocks
    assert all(list(r) == list(RAW_COLUMNS) for r in rows)
    first_measure = next(r for r in rows if r["stage"] == "measure")
    assert first_measure == {
        "run_id": record.run_id, "side": "eager", "stage": "measure", "block": "0", "iteration": "0",
        "ms": "2.0", "clock": "perf_counter", "host_ms_per_call": "2.2", "label": "",
    }  # fmt: skip
    assert math.isclose(sum(float(r["ms"]) for r in rows), sum(sum(b.ms) for s in record.samples.values() for b in s))


def test_every_csv_column_is_documented():
    # The column table carries each column's one-line meaning; the README's list is generated
    # from it (tests/test_columns.py compares the two).
    from tui.engine.store.columns import COLUMNS, columns_markdown

    assert [c.name for c in COLUMNS] == list(CSV_COLUMNS)
    assert [c.name for c in COLUMNS if not c.meaning.strip() or "\n" in c.meaning] == []
    table = columns_markdown()
    assert [c for c in CSV_COLUMNS if f"| `{c}` |" not in table] == []


def test_too_fast_to_time_on_cuda_events():
    record = RunRecord.new(_options())
    for side, ms in (("eager", 0.02), ("compiled", 0.004)):
        record.apply(make_event("block", 1, side=side, stage="measure", index=0, clock="cuda_event",
                                ms=[ms] * 20, host_ms_per_call=0.05))  # fmt: skip
    warnings = record.summary().warnings
    assert any(w.startswith("compiled median 4.0 us is close to the CUDA event resolution") for w in warnings)
    assert not any(w.startswith("eager median") for w in warnings)
    assert record.summary().launch_bound is True


@pytest.mark.parametrize("blocks, interval", [(2, False), (3, False), (4, True), (6, True)])
def test_too_few_block_pairs_give_no_interval_and_say_so(blocks, interval):
    s = _run(_script(blocks=blocks)).summary()
    assert s.speedup == 2.0
    assert (s.speedup_ci_low is not None) is interval and (s.significant is not None) is interval
    assert (s.host_speedup_ci_low is not None) is interval
    too_few = [w for w in s.warnings if w.startswith("too few interleaved blocks")]
    assert bool(too_few) is not interval
    if too_few:
        assert f"({blocks} < 4)" in too_few[0]


def _with_one_slow_iteration(slow_ms: float, blocks_left: int | None = None) -> RunRecord:
    """A run whose first measured block's first iteration took ``slow_ms``; with ``blocks_left``, still running,
    its events cut after that many more measured blocks."""
    events = _script(blocks=4)
    index = next(i for i, e in enumerate(events) if isinstance(e, BlockTimed) and e.stage == "measure")
    events[index] = dataclasses.replace(events[index], ms=(slow_ms, *events[index].ms[1:]))
    if blocks_left is not None:
        measured = [i for i, e in enumerate(events) if isinstance(e, BlockTimed) and e.stage == "measure"]
        events = events[: measured[measured.index(index) + blocks_left] + 1]
    return _run(events)


def test_a_stalled_iteration_is_a_warning_naming_the_side_and_the_factor():
    stalled = _with_one_slow_iteration(30_007.0, blocks_left=1)  # the worker was stopped for 30 s (SIGSTOP)
    [warning] = [w for w in stalled.summary().warnings if "stall" in w]
    assert warning.startswith("stall: one eager iteration took 3.001e+04 ms") and "x its median" in warning
    assert warning.endswith("(the verdict counts it as noise only where leaving it out moves the median by more "
                            "than 1.0%)")  # the verdict's rule (half the 2% threshold), no advice of its own
    assert not any("stall" in w for w in _with_one_slow_iteration(150.0).summary().warnings)  # 75x


def test_a_finished_runs_stall_is_said_once_by_the_verdict_with_how_far_it_moved_the_median():
    """The live warning and the verdict's note said the same stall in two lines; the verdict's line stays."""
    stalled = _with_one_slow_iteration(30_007.0)
    assert stalled.status == "done"
    [said] = [w for w in stalled.summary().warnings if "stall" in w]
    assert said.startswith("eager time: a stall (3.001e+04 ms, ") and "the worker was paused" in said, said
    assert "the median moved" in said


def test_a_stalled_block_host_time_is_a_warning_when_the_events_look_fine():
    events = _script(blocks=4, clock="cuda_event", eager_wall=2.1, compiled_wall=1.1)
    index = max(i for i, e in enumerate(events) if isinstance(e, BlockTimed) and e.side == "compiled")
    events[index] = dataclasses.replace(events[index], host_ms_per_call=1.1 * 200)
    warnings = _run(events).summary().warnings
    assert [w for w in warnings if w.startswith("stall: one compiled block's host time per call")]


def test_a_launch_bound_run_measured_beside_others_says_so():
    """One worker per GPU: a launch-bound run that had neighbours is told to be re-run alone."""
    bound = _run(_script(clock="cuda_event", eager_wall=2.8, compiled_wall=1.4))
    assert not any("other run" in w for w in bound.summary().warnings)
    bound.concurrent_runs = 3
    assert any(w.startswith("launch-bound and measured while 3 other runs") and "--serial" in w
               for w in bound.summary().warnings)
    plain = _run(_script(clock="cuda_event", eager_wall=2.1, compiled_wall=1.1))
    plain.concurrent_runs = 3
    assert not any("other run" in w for w in plain.summary().warnings)  # a GPU-bound run is not told
