"""tui.engine.explain.host_time: where a compiled call's host time goes, from hand-built profiler events (no torch).

The CPU calls below are what ``torch.profiler`` gave on this machine with torch 2.13 (one call each,
flattened the way the worker flattens them); the GPU ones follow the names an H200 shows.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from rich.console import Console

from tui.cli.render import host_time_lines, print_host_time
from tui.engine.explain.host_time import (
    HOST_CATEGORIES,
    SYNC_RANGE,
    HostRow,
    HostSplit,
    graph_break_rows,
    host_split,
    profiler_s,
)
from tui.engine.explain.kernels import Profile, regions
from tui.engine.explain.profile_types import RawEvent
from tui.engine.protocol import Profiled
from tui.engine.store.results import RunRecord


def _pointwise_call() -> list[RawEvent]:
    """pointwise, inductor default, CPU: the graph call inside the region, the cache lookup before it."""
    return [
        RawEvent("TorchDynamo Cache Lookup", self_us=12.2, total_us=12.2),  # 0
        RawEvent("Torch-Compiled Region: 0/0", self_us=49.0, total_us=82.4),  # 1
        RawEvent("Pregraph bytecode", self_us=3.7, total_us=3.7, parent=1),  # 2
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", self_us=6.2, total_us=6.2, parent=1),  # 3
        RawEvent("## Call CompiledFxGraph ft5y3h37 ##", self_us=15.0, total_us=23.5, parent=1),  # 4
        RawEvent("graph_0_cpp_fused_add_mul_sin_0", self_us=8.4, total_us=8.4, parent=4),  # 5
    ]


def _graph_break_call() -> list[RawEvent]:
    """graph_break, CPU: region 1/0 (and its cache lookup) inside 0/0, aten::is_nonzero between the graphs."""
    return [
        RawEvent("TorchDynamo Cache Lookup", total_us=9.3),  # 0
        RawEvent("Torch-Compiled Region: 0/0", total_us=138.4),  # 1
        RawEvent("Pregraph bytecode", total_us=2.9, parent=1),  # 2
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", total_us=4.3, parent=1),  # 3
        RawEvent("## Call CompiledFxGraph f7ykye44 ##", total_us=20.2, parent=1),  # 4
        RawEvent("graph_0_cpp_fused_gt_sin_sum_0", total_us=5.0, parent=4),  # 5
        RawEvent("aten::is_nonzero", total_us=5.7, top_op=True, parent=1),  # 6
        RawEvent("aten::item", total_us=3.7, parent=6),  # 7
        RawEvent("aten::_local_scalar_dense", total_us=1.6, parent=7),  # 8
        RawEvent("TorchDynamo Cache Lookup", total_us=5.6, parent=1),  # 9
        RawEvent("Torch-Compiled Region: 1/0", total_us=51.2, parent=1),  # 10
        RawEvent("Pregraph bytecode", total_us=2.5, parent=10),  # 11
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", total_us=3.2, parent=10),  # 12
        RawEvent("## Call CompiledFxGraph fpicrnk4 ##", total_us=20.7, parent=10),  # 13
        RawEvent("graph_1_cpp_fused_sub_0", total_us=6.6, parent=13),  # 14
    ]


def _repeat(call: list[RawEvent], times: int) -> list[RawEvent]:
    """``call`` ``times`` times over, parents shifted to each copy's own events."""
    events: list[RawEvent] = []
    for _ in range(times):
        shift = len(events)
        events += [dataclasses.replace(e, parent=None if e.parent is None else e.parent + shift) for e in call]
    return events


def _ms(split: HostSplit) -> dict[str, float]:
    return {row.category: row.ms_per_call for row in split.rows}


def _adds_up(split: HostSplit) -> None:
    assert sum(row.ms_per_call for row in split.rows) == pytest.approx(split.total_ms_per_call, rel=1e-9)
    assert sum(row.share for row in split.rows) == pytest.approx(1.0, rel=1e-9)
    assert [row.category for row in split.rows] == [c for c in HOST_CATEGORIES if c in _ms(split)]


def test_pointwise_splits_into_guards_aot_wrappers_graph_region_python_and_other():
    split = host_split(_repeat(_pointwise_call(), 2), 2, host_s=240e-6, eager_host_s=180e-6)
    assert split is not None
    assert _ms(split) == pytest.approx({
        "guards": 0.0122, "aot_wrappers": 0.0099, "graph": 0.0235,
        "region_python": 0.0824 - 0.0037 - 0.0062 - 0.0235,  # the region's own time: 49.0 us
        "other": 0.120 - 0.0122 - 0.0824,  # host time no range covers
    })  # fmt: skip
    assert split.total_ms_per_call == pytest.approx(0.120) and split.eager_ms_per_call == pytest.approx(0.090)
    assert split.rows[0] == HostRow("guards", pytest.approx(0.0122), pytest.approx(0.0122 / 0.120))
    _adds_up(split)
    assert split.ms("cudagraph_replay") is None and split.ms("between_graphs") is None  # none seen: no row


def test_a_graph_break_counts_nested_regions_once_and_the_eager_op_between_the_graphs():
    split = host_split(_repeat(_graph_break_call(), 3), 3, host_s=3 * 170e-6)
    assert split is not None
    ms = _ms(split)
    assert ms["guards"] == pytest.approx(0.0093 + 0.0056)  # frame 1's lookup runs inside region 0/0
    assert ms["aot_wrappers"] == pytest.approx(0.0029 + 0.0043 + 0.0025 + 0.0032)
    assert ms["graph"] == pytest.approx(0.0202 + 0.0207)
    assert ms["between_graphs"] == pytest.approx(0.0057)  # aten::is_nonzero with the aten::item under it
    region_0 = 138.4 - 2.9 - 4.3 - 20.2 - 5.7 - 5.6 - 51.2
    region_1 = 51.2 - 2.5 - 3.2 - 20.7
    assert ms["region_python"] == pytest.approx((region_0 + region_1) / 1e3)
    assert ms["other"] == pytest.approx(0.170 - 0.0093 - 0.1384)
    _adds_up(split)


def test_graph_break_rows_show_each_graph_the_eager_code_between_and_the_rest_in_frame_order():
    events = _repeat(_graph_break_call(), 2)
    split = host_split(events, 2, host_s=2 * 170e-6)
    rows, between = regions(events, 2, split.total_ms_per_call)
    assert [row.name for row in rows] == ["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"]
    assert rows[0].share == pytest.approx((138.4 - 51.2) / 170) and rows[1].graph_share == pytest.approx(20.7 / 170)
    assert between == pytest.approx(split.ms("between_graphs"))
    cost = graph_break_rows(tuple(reversed(rows)), split)
    assert [(row.label, round(row.ms_per_call, 4)) for row in cost] == [
        ("graph 0/0", 0.0202), ("graph 1/0", 0.0207), ("between graphs", 0.0057),
        ("rest", round(0.170 - 0.0202 - 0.0207 - 0.0057, 4)),
    ]  # fmt: skip
    assert sum(row.share for row in cost) == pytest.approx(1.0)
    assert graph_break_rows(rows, None) == () and graph_break_rows((), split) == ()
    assert regions(events, 2)[0][0].share is None  # no host time to share


def test_no_split_without_torch_compile_ranges_a_call_or_a_time():
    eager = [RawEvent("aten::sin", total_us=20.0, top_op=True), RawEvent("aten::add", total_us=9.0, top_op=True)]
    assert host_split(eager, 1, host_s=40e-6) is None  # the profiler showed no range of torch.compile's
    assert host_split([], 5, host_s=1e-3) is None
    assert host_split(_pointwise_call(), 0, host_s=1e-3) is None
    assert host_split(_pointwise_call(), 1, host_s=None) is None


def test_ranges_longer_than_the_loop_make_the_total_and_leave_no_other():
    split = host_split(_pointwise_call(), 1, host_s=50e-6)  # a clock that read short
    assert split is not None and split.total_ms_per_call == pytest.approx(0.0946)
    assert split.ms("other") == 0.0
    _adds_up(split)


def test_without_graph_calls_the_aten_ops_in_a_region_are_its_graph():
    """backend=eager: dynamo's region runs the captured ops itself; there is no graph-call range."""
    events = [
        RawEvent("TorchDynamo Cache Lookup", total_us=5.0),
        RawEvent("Torch-Compiled Region: 0/0", total_us=40.0),
        RawEvent("aten::mul", total_us=10.0, top_op=True, parent=1),
        RawEvent("aten::sin", total_us=12.0, top_op=True, parent=1),
    ]
    split = host_split(events, 1, host_s=50e-6)
    assert _ms(split) == pytest.approx({"guards": 0.005, "graph": 0.022, "region_python": 0.018, "other": 0.005})


def _reduce_overhead_calls() -> list[RawEvent]:
    """Two calls of a CNN in reduce-overhead mode on the H200 (torch 2.11, benchmarks/probe_ranges.py): the
    graph call copies the inputs into the CUDA graph's buffers and launches it; in the first call CUPTI
    allocates its buffers (the profiler's own 1.75 ms)."""
    first = [
        RawEvent("TorchDynamo Cache Lookup", total_us=34.2),  # 0
        RawEvent("Torch-Compiled Region: 0/0", total_us=2063.3),  # 1
        RawEvent("Pregraph bytecode", total_us=7.9, parent=1),  # 2
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", total_us=9.0, parent=1),  # 3
        RawEvent("## Call CompiledFxGraph f4djf2u3 ##", total_us=1983.9, parent=1),  # 4
        RawEvent("aten::_foreach_copy_", total_us=1830.0, top_op=True, parent=4),  # 5
        RawEvent("Activity Buffer Request", total_us=1750.2, parent=5),  # 6
        RawEvent("cudaLaunchKernel", total_us=32.4, parent=5),  # 7
        RawEvent("cudaStreamIsCapturing", total_us=1.0, parent=4),  # 8
        RawEvent("cudaGraphLaunch", total_us=40.0, parent=4),  # 9
        RawEvent("void at::native::multi_tensor_apply_kernel<...>", device="cuda", total_us=7.8),  # 10
        RawEvent("triton_poi_fused_convolution_0", device="cuda", total_us=2.4),  # 11
    ]
    second = [
        RawEvent("TorchDynamo Cache Lookup", total_us=31.2),  # 12
        RawEvent("Torch-Compiled Region: 0/0", total_us=200.7),  # 13
        RawEvent("Pregraph bytecode", total_us=15.2, parent=13),  # 14
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", total_us=8.3, parent=13),  # 15
        RawEvent("## Call CompiledFxGraph f4djf2u3 ##", total_us=132.3, parent=13),  # 16
        RawEvent("aten::_foreach_copy_", total_us=28.0, top_op=True, parent=16),  # 17
        RawEvent("cudaLaunchKernel", total_us=15.0, parent=17),  # 18
        RawEvent("cudaStreamIsCapturing", total_us=1.0, parent=16),  # 19
        RawEvent("cudaGraphLaunch", total_us=24.2, parent=16),  # 20
    ]
    sync = [RawEvent(SYNC_RANGE, total_us=51.5), RawEvent("cudaDeviceSynchronize", total_us=51.0, parent=21)]
    return first + second + sync


def test_a_cuda_graph_replay_on_a_gpu_is_its_graph_call_and_the_profilers_own_time_is_left_out():
    """reduce-overhead on a GPU: the graph call holds the input copies and the cudaGraphLaunch; CUPTI's buffer
    request and the worker's synchronize are no call's host time."""
    events = _reduce_overhead_calls()
    ranges_us = 34.2 + 2063.3 + 31.2 + 200.7
    split = host_split(events, 2, host_s=(ranges_us + 40.0) / 1e6)  # 40 us no range covers
    assert _ms(split) == pytest.approx({
        "guards": (34.2 + 31.2) / 2e3,
        "aot_wrappers": (7.9 + 9.0 + 15.2 + 8.3) / 2e3,
        "cudagraph_replay": (1983.9 - 1750.2 + 132.3) / 2e3,
        "region_python": (2063.3 - 7.9 - 9.0 - 1983.9 + 200.7 - 15.2 - 8.3 - 132.3) / 2e3,
        "other": 40.0 / 2e3,
    })  # fmt: skip
    assert split.total_ms_per_call == pytest.approx((ranges_us + 40.0 - 1750.2) / 2e3)
    _adds_up(split)
    assert profiler_s(events) == pytest.approx(1750.2e-6)  # also taken off the eager side's host time
    (region,), _ = regions(events, 2, split.total_ms_per_call)
    assert region.exclusive_ms_per_call == pytest.approx((2063.3 - 1750.2 + 200.7) / 2e3)
    assert region.graph_ms_per_call == pytest.approx(split.ms("cudagraph_replay")) and region.share < 1
    graph, between, rest = graph_break_rows((region,), split)
    assert graph.ms_per_call + rest.ms_per_call == pytest.approx(split.total_ms_per_call) and between.ms_per_call == 0
    in_sync = [RawEvent(SYNC_RANGE, total_us=9.0), RawEvent("Activity Buffer Request", total_us=8.0, parent=0)]
    assert profiler_s(in_sync) == 0


def test_on_a_gpu_without_cuda_graphs_kernel_launches_stay_in_the_graph_and_cu_graph_launch_counts_too():
    call = [
        RawEvent("Torch-Compiled Region: 0/0", total_us=50.0),  # 0
        RawEvent("## Call CompiledFxGraph fdef ##", total_us=40.0, parent=0),  # 1
        RawEvent("triton_poi_fused_mul_0", total_us=15.0, parent=1),  # 2: inductor's launcher range
        RawEvent("cuLaunchKernel", total_us=6.0, parent=2),  # 3
        RawEvent("triton_poi_fused_mul_0", device="cuda", total_us=3.0),  # 4
    ]
    assert _ms(host_split(call, 1, host_s=60e-6)) == pytest.approx({"graph": 0.040, "region_python": 0.010,
                                                                     "other": 0.010})  # fmt: skip
    replay = call[:2] + [RawEvent("cuGraphLaunch", total_us=7.0, parent=1)]
    assert _ms(host_split(replay, 1, host_s=60e-6))["cudagraph_replay"] == pytest.approx(0.040)


def test_a_training_step_its_backward_graph_outside_the_region_and_the_eager_loss_and_optimizer():
    """mlp --train on the CPU: CompiledFunction(Backward) are AOT's; the loss, backward of the loss and the
    optimizer run eagerly, outside every compiled region."""
    events = [
        RawEvent("Optimizer.zero_grad#AdamW.zero_grad", total_us=90.0),  # 0
        RawEvent("TorchDynamo Cache Lookup", total_us=80.0),  # 1
        RawEvent("Torch-Compiled Region: 0/0", total_us=1000.0),  # 2
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", total_us=20.0, parent=2),  # 3
        RawEvent("CompiledFunction", total_us=900.0, parent=2),  # 4
        RawEvent("## Call CompiledFxGraph ffwd ##", total_us=700.0, parent=4),  # 5
        RawEvent("aten::addmm", total_us=600.0, top_op=True, parent=5),  # 6
        RawEvent("aten::mse_loss", total_us=160.0, top_op=True),  # 7
        RawEvent("aten::mean", total_us=80.0, parent=7),  # 8
        RawEvent("autograd::engine::evaluate_function: CompiledFunctionBackward", total_us=2000.0),  # 9
        RawEvent("CompiledFunctionBackward", total_us=1990.0, parent=9),  # 10
        RawEvent("## Call CompiledFxGraph fbwd ##", total_us=1800.0, parent=10),  # 11
        RawEvent("Optimizer.step#AdamW.step", total_us=600.0),  # 12
        RawEvent("aten::add_", total_us=50.0, top_op=True, parent=12),  # 13
    ]
    split = host_split(events, 1, host_s=5000e-6)
    assert _ms(split) == pytest.approx({
        "guards": 0.080, "aot_wrappers": 0.020 + 0.200 + 0.010 + 0.190, "graph": 0.700 + 1.800,
        "region_python": 0.080, "outside_regions": 0.090 + 0.160 + 0.600, "other": 5.0 - 3.930,  # 3.93 ms of ranges
    })  # fmt: skip
    _adds_up(split)


def test_a_profile_with_its_host_split_travels_through_json_and_an_old_record_still_loads():
    split = host_split(_pointwise_call(), 1, host_s=120e-6, eager_host_s=90e-6)
    rows, between = regions(_pointwise_call(), 1, split.total_ms_per_call)
    profile = Profile(available=True, calls=1, regions=rows, eager_between_ms_per_call=between, host=split)
    record = RunRecord("20261203-000000-hostsp")
    record.apply(Profiled(t=1.0, profile=profile))
    again, problems = RunRecord.decode(record.to_json(samples=False))
    assert problems == [] and again.profile == profile and again.profile.host.ms("guards") == pytest.approx(0.0122)
    old = record.to_json(samples=False)
    del old["profile"]["host"]
    for row in old["profile"]["regions"]:
        del row["share"], row["graph_share"]
    before, problems = RunRecord.decode(old)
    assert problems == [] and before.profile.host is None and before.profile.regions[0].share is None
    assert Profile.decode({"available": True, "host": {"rows": [{"category": "guards", "share": "high"}]}})[1]


def _record(launch_bound: bool, breaks: int, reasons: tuple[str, ...] = ()) -> RunRecord:
    from fakes.records import cuda_run_record

    record = cuda_run_record(eager_host_ms=0.155 if launch_bound else 0.11)
    events = _repeat(_graph_break_call() if breaks else _pointwise_call(), 5)
    split = host_split(events, 5, host_s=5 * 170e-6, eager_host_s=5 * 90e-6)
    rows, between = regions(events, 5, split.total_ms_per_call)
    record.profile = Profile(available=True, calls=5, regions=rows, host=split, eager_between_ms_per_call=between)
    record.diagnostics = dataclasses.replace(record.diagnostics, graph_breaks=breaks, graph_break_reasons=reasons)
    return record


def test_the_cli_shows_the_split_for_a_launch_bound_run_and_nothing_for_one_that_is_not():
    lines = host_time_lines(_record(launch_bound=True, breaks=0), 1)
    assert lines == ["run 1: host per compiled call 0.170 ms (eager 0.090 ms): guards 0.012 (7%), AOT wrappers "
                     "0.010 (6%), graph 0.024 (14%), region Python 0.049 (29%), other 0.075 (44%)"]  # fmt: skip
    assert host_time_lines(_record(launch_bound=False, breaks=0), 1) == []
    tiny = _record(launch_bound=True, breaks=0)  # a top-level CUDA runtime call of 0.2 us: in the JSON, not the line
    events = _pointwise_call() + [RawEvent("cudaGetDeviceCount", total_us=0.2)]
    tiny.profile = dataclasses.replace(tiny.profile, host=host_split(events, 1, host_s=170e-6))
    assert tiny.profile.host.ms("outside_regions") == pytest.approx(0.0002)
    assert "outside regions" not in host_time_lines(tiny, 1)[0] and "other 0.075 (44%)" in host_time_lines(tiny, 1)[0]
    unprofiled = _record(launch_bound=True, breaks=0)
    unprofiled.profile = Profile(available=False, why="skipped (profile: false)")
    assert host_time_lines(unprofiled, 1) == []


def test_the_cli_shows_each_graph_and_the_break_reasons_for_a_run_with_breaks_within_80_columns():
    reasons = ("Data-dependent branching at worker/workloads.py:161 in graph_break_fn\n  (if y.sum() > 0:)",
               "second", "third", "fourth")  # fmt: skip
    record = _record(launch_bound=False, breaks=1, reasons=reasons)
    lines = host_time_lines(record, 2)
    assert lines[0].startswith("run 2: host per compiled call 0.170 ms (eager 0.090 ms): guards 0.015 (9%), ")
    assert "between graphs 0.006 (3%)" in lines[0]
    assert lines[1] == ("run 2: 1 graph break, per compiled call: graph 0/0 0.020 (12%), graph 1/0 0.021 (12%), "
                        "between graphs 0.006 (3%), rest 0.123 (73%)")  # fmt: skip
    assert lines[2] == ("  break: Data-dependent branching at worker/workloads.py:161 in graph_break_fn "
                        "(if y.sum() > 0:)")  # one line: the reason's own newline and indent folded
    assert lines[-1] == "  and 1 more break reasons (the JSON has them all)"
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    print_host_time([_record(launch_bound=False, breaks=0), record], console)
    text = console.export_text()
    assert text.startswith("where the compiled call's host time goes") and "run 1" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    # a list breaks between its parts, a reason between words
    assert "  run 2: 1 graph break, per compiled call: graph 0/0 0.020 (12%),\n    graph 1/0 0.021 (12%)" in text
    assert "    break: Data-dependent branching at worker/workloads.py:161 in graph_break_fn\n      (if y" in text
