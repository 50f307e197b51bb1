"""The generated code and the Chrome trace from the real worker, on a cold and then a warm FX-graph cache.

The same configuration runs twice through the command line with a fresh inductor cache of its own
(TORCHINDUCTOR_CACHE_DIR, inherited by the workers): the first compiles, the second hits the cache,
the case ``config.trace.enabled`` / TORCH_COMPILE_DEBUG miss. Both keep the code (JSON export,
history, ``load_code``) and write a trace with both sides. Two real runs: marked slow.
"""

from __future__ import annotations

import json

import pytest

from tui import cli
from tui.engine.explain.artifacts import load_code
from tui.engine.explain.chrome_trace import side_of_pid
from tui.engine.store.history import History

pytestmark = [pytest.mark.slow, pytest.mark.torch]

pytest.importorskip("torch")

RUN = ["run", "--workload", "pointwise", "--param", "n=64", "--device", "cpu", "--iters", "4", "--warmup", "1",
       "--block-size", "2", "--quiet"]


def test_code_is_kept_on_a_cold_and_a_warm_cache_and_the_trace_has_both_sides(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    runs = []
    for number in (1, 2):
        exported, trace = tmp_path / f"runs{number}.json", tmp_path / f"trace{number}.json"
        assert cli.main([*RUN, "--json", str(exported), "--trace", str(trace)]) == 0
        [run] = json.loads(exported.read_text())["runs"]
        runs.append((run, trace))

    (cold, _), (warm, trace) = runs
    assert not cold["diagnostics"].get("fxgraph_cache_hit") and warm["diagnostics"]["fxgraph_cache_hit"] >= 1
    for run, _ in runs:
        [graph] = run["artifacts"]["graphs"]  # the profile pass's own compile is not kept
        assert graph["aot_id"] == "0_inference" and graph["compile_id"] == "0/0" and graph["kernel_count"] == 1
        assert "cpp_fused_add_mul_sin_0 = async_compile" in graph["code"] and not graph["truncated"]
        assert graph["size_bytes"] == len(graph["code"].encode())
    assert warm["artifacts"]["graphs"][0]["code"] == cold["artifacts"]["graphs"][0]["code"]

    stored, problems = History().load()
    assert problems == [] and [r.run_id for r in stored] == [cold["run_id"], warm["run_id"]]
    for record in stored:
        listing = load_code(record)  # what the app's Code tab shows, read back from the run's folder
        assert listing.why is None and listing.graphs[0].kernels == ("cpp_fused_add_mul_sin_0",)

    events = json.loads(trace.read_text())["traceEvents"]
    ops = {(side_of_pid(e.get("pid"), ("eager", "compiled")), e["name"]) for e in events if e.get("ph") == "X"}
    assert ("eager", "aten::sin") in ops
    assert any(side == "compiled" and name.startswith("Torch-Compiled Region") for side, name in ops)
    assert any(side == "compiled" and "cpp_fused_add_mul_sin" in name for side, name in ops)
    assert not any(side == "eager" and "cpp_fused" in name for side, name in ops)
