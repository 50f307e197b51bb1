"""The profile pass in-process on the CPU: a whole worker run (pointwise, tiny), its events in order.

Two real runs with inductor (the second hits the FX-graph cache): kept small, marked slow.
"""

from __future__ import annotations

import json
import os
import re

import pytest

torch = pytest.importorskip("torch")

from tui.engine.store.columns import csv_row  # noqa: E402
from tui.engine.explain.host_time import graph_break_rows  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed, Finished, Measured, PhaseChanged, Profiled  # noqa: E402
from tui.engine.store.results import RunRecord  # noqa: E402
from tui.engine.worker import compile_cache, profile as profile_module  # noqa: E402
from tui.engine.worker.main import WorkerRun  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.torch]

OPTIONS = RunOptions(workload="pointwise", params={"n": 64}, warmup=1, iters=4, block_size=2)


class Recorder:
    """The worker's channel, in memory."""

    def __init__(self) -> None:
        self.events: list = []

    def emit(self, event) -> None:
        self.events.append(event)


def _run(options: RunOptions) -> tuple[list, RunRecord]:
    recorder = Recorder()
    line = json.dumps({"command": "run", "run_id": "profile-test", "options": options.to_dict()}).encode()
    cache_env = {name: os.environ.get(name) for name in compile_cache.ENV_NAMES}
    assert WorkerRun(recorder).execute(line) == 0
    assert {name: os.environ.get(name) for name in compile_cache.ENV_NAMES} == cache_env  # this process's next run
    record = RunRecord("profile-test", options.validated())
    for event in recorder.events:
        record.apply(event)
    return recorder.events, record


def test_pointwise_profile_three_eager_ops_one_fused_kernel_after_the_last_timing_block():
    events, record = _run(OPTIONS)
    kinds = [type(e) for e in events]
    profiled = kinds.index(Profiled)
    last_block = max(i for i, e in enumerate(events) if isinstance(e, BlockTimed))
    last_phase = max(i for i, e in enumerate(events) if isinstance(e, PhaseChanged))
    assert last_block < last_phase < kinds.index(Measured) < profiled < kinds.index(Finished) == len(events) - 1
    assert events[last_phase].phase == "diagnosing"

    profile = record.profile
    assert profile is not None and profile.available, profile
    eager, compiled = profile.eager, profile.compiled
    assert sorted(row.name for row in eager.kernels) == ["aten::add", "aten::mul", "aten::sin"]
    assert eager.kernels_per_call == 3 and all(row.calls == profile.calls for row in eager.kernels)
    assert compiled.kernels_per_call == 1
    assert re.match(r"graph_\d+_cpp_fused_add_mul_sin", compiled.kernels[0].name)
    (group,) = profile.diff
    assert group.kernel.startswith("cpp_fused_add_mul_sin") and group.ops == ("aten::add", "aten::mul", "aten::sin")
    assert group.compiled_ms_per_call is not None and group.eager_ms_per_call is not None
    assert profile.profile_s > profile.compile_s > 0

    host = profile.host  # where the compiled call's host time goes
    assert host is not None and host.total_ms_per_call > 0 and host.eager_ms_per_call > 0
    shares = {row.category: row.share for row in host.rows}
    assert shares["guards"] > 0 and shares["graph"] > 0 and shares["aot_wrappers"] > 0, shares
    assert sum(row.ms_per_call for row in host.rows) == pytest.approx(host.total_ms_per_call)
    assert "between_graphs" not in shares and "cudagraph_replay" not in shares

    row = csv_row(record)
    assert (row["eager_kernels_per_call"], row["compiled_kernels_per_call"]) == ("3", "1")
    assert (row["eager_launches_per_call"], row["compiled_launches_per_call"]) == ("3", "1")
    assert re.search(r"; compiled: graph_\d+_cpp_fused_add_mul_sin\w* 100%$", row["top_kernels"]), row["top_kernels"]
    assert json.loads(json.dumps(record.to_json(samples=False)))["profile"]["diff"][0]["ops"] == list(group.ops)


def test_a_profiler_that_raises_leaves_the_run_finished_with_the_profile_unavailable(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("Kineto is not available here")

    monkeypatch.setattr(torch.profiler, "profile", broken)
    events, record = _run(OPTIONS)
    assert isinstance(events[-1], Finished) and record.status == "done"
    assert record.profile is not None and not record.profile.available
    assert record.profile.why == "the profile pass raised RuntimeError: Kineto is not available here"
    assert record.profile.profile_s is not None
    assert any(w.startswith("profile unavailable: the profile pass raised RuntimeError") for w in record.warnings)
    row = csv_row(record)
    assert row["eager_kernels_per_call"] == "" and row["top_kernels"] == ""
    assert record.summary().speedup is not None  # the timings are whole


def test_no_profile_skips_the_pass(monkeypatch):
    monkeypatch.setattr(profile_module, "run_profile", lambda *a, **k: pytest.fail("the pass ran"))
    events, record = _run(RunOptions(workload="pointwise", params={"n": 64}, backend="eager", warmup=1, iters=2,
                                     block_size=2, profile=False))  # fmt: skip
    assert record.profile is not None
    assert (record.profile.available, record.profile.why) == (False, "skipped (profile: false)")


def test_graph_break_shows_two_compiled_regions_and_the_eager_code_between():
    _events, record = _run(RunOptions(workload="graph_break", params={"n": 64}, warmup=1, iters=2, block_size=2))
    profile = record.profile
    assert profile is not None and profile.available, profile
    assert sorted(row.name for row in profile.regions) == ["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"]
    assert all(row.exclusive_ms_per_call > row.graph_ms_per_call > 0 for row in profile.regions)
    assert profile.eager_between_ms_per_call is not None and profile.eager_between_ms_per_call > 0
    assert len(profile.diff) == 2  # one C++ kernel per graph, each with its ops
    assert all(0 < row.graph_share < row.share < 1 for row in profile.regions)
    assert profile.host.ms("between_graphs") == pytest.approx(profile.eager_between_ms_per_call)
    rows = graph_break_rows(profile.regions, profile.host)
    assert [row.label for row in rows] == ["graph 0/0", "graph 1/0", "between graphs", "rest"]
    assert all(row.ms_per_call > 0 for row in rows) and sum(row.share for row in rows) == pytest.approx(1.0)


def test_the_host_split_agrees_with_the_profilers_own_sums():
    """The split of a graph_break call against torch.profiler's key_averages (self and total times by name)."""
    from tui.engine.worker.measure import make_compile_fn
    from tui.engine.worker.workloads import build_workload

    options = RunOptions(workload="graph_break", params={"n": 64}).validated()
    built = build_workload(options, torch.device("cpu"), torch.float32)
    profilers = {}
    profile = profile_module.run_profile(built, make_compile_fn(options), cuda=False,
                                         on_trace=lambda side, prof: profilers.setdefault(side, prof))  # fmt: skip
    calls, by_name = profile.calls, {}
    for event in profilers["compiled"].key_averages():
        by_name[event.key] = (event.self_cpu_time_total / 1e3 / calls, event.cpu_time_total / 1e3 / calls)

    def summed(prefix: str, which: int) -> float:
        return sum(times[which] for name, times in by_name.items() if name.startswith(prefix))

    host = profile.host
    expected = {
        "guards": summed("TorchDynamo Cache Lookup", 0),
        "aot_wrappers": summed("Pregraph bytecode", 0) + summed("AOTDispatcher Runtime Wrapper Prologue", 0),
        "graph": summed("## Call CompiledFxGraph", 1),
        "region_python": summed("Torch-Compiled Region: ", 0),
        "between_graphs": summed("aten::is_nonzero", 1),
    }
    assert {c: host.ms(c) for c in expected} == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert host.ms("other") == pytest.approx(host.total_ms_per_call - sum(expected.values()), abs=1e-6)
    assert host.total_ms_per_call == pytest.approx(profile.compiled.wall_ms_per_call, rel=0.05)
    torch._dynamo.reset()


def test_warm_up_calls_are_dropped_and_change_nothing_in_the_profile():
    """The GPU's warm-up (the profiler's own warm-up steps), forced on the CPU: only the profiled calls count."""
    from tui.engine.worker.workloads import build_workload

    options = RunOptions(workload="graph_break", params={"n": 64}).validated()
    built = build_workload(options, torch.device("cpu"), torch.float32)
    calls = profile_module.PROFILE_CALLS
    sides = {warm: profile_module._profiled(built.eager_step, built.input_sets[0], calls, False, None, warm=warm)
             for warm in (0, 7)}  # fmt: skip
    for warm, side in sides.items():
        names = [event.name for event in side.events]
        assert names.count("aten::is_nonzero") == calls, (warm, names.count("aten::is_nonzero"))
        assert not any(name.startswith("ProfilerStep") for name in names)
        assert sum(event.top_op for event in side.events) == sum(event.top_op for event in sides[0].events)
    assert len(sides[7].events) == len(sides[0].events)
    torch._dynamo.reset()


@pytest.mark.parametrize(("call_s", "cuda", "expected"), [
    (0.01, True, 50), (1e-6, True, profile_module.PROFILE_WARM_MAX_CALLS), (2.0, True, 1),
    (0.01, False, 5), (1e-4, False, 500), (1e-6, False, profile_module.PROFILE_WARM_MAX_CALLS), (2.0, False, 3),
])
def test_the_warm_up_lasts_half_a_second_on_a_gpu_and_a_twentieth_on_the_cpu(call_s, cuda, expected):
    """On the CPU too: the first traced calls of a process carry the profiler's start-up (BENCHMARKS §23)."""
    assert (profile_module.PROFILE_WARM_S, profile_module.PROFILE_WARM_CPU_S) == (0.5, 0.05)
    assert profile_module.warm_calls(call_s, cuda) == expected


# the profile pass's patch, applied, and whether inductor would then use its FX-graph cache (compile_fx's own test)
_CACHE_STATE = """
import json
import os
import torch._inductor.config as config
from tui.engine.worker.profile import _inductor_patch
patch = _inductor_patch(cuda=False)
with config.patch(patch):
    fx_cache = not config.force_disable_caches and bool(config.fx_graph_cache or config.fx_graph_remote_cache)
print(json.dumps({"patch": sorted(patch), "fx_cache": fx_cache}))
"""


@pytest.mark.parametrize("forced", [None, "1"])
def test_the_profile_pass_lowers_afresh_even_where_the_environment_forces_the_fx_graph_cache_on(forced):
    """``TORCHINDUCTOR_FX_GRAPH_CACHE=1`` (a worker inherits it) overrides a patch of ``fx_graph_cache``: the patch
    then turns every cache off, as without the switch; otherwise the autotuning caches stay on."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_FX_GRAPH_CACHE"}
    if forced is not None:
        env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = forced
    done = subprocess.run([sys.executable, "-c", _CACHE_STATE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["fx_cache"] is False, state
    if profile_module.provenance_supported() is None:
        expected = "force_disable_caches" if forced else "fx_graph_cache"
        assert expected in state["patch"] and ("force_disable_caches" in state["patch"]) == bool(forced), state
