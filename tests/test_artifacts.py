"""A run's generated code and traces (tui.engine.explain.artifacts): kept, stored apart, read back, exported,
reported gone; the two sides' Chrome traces merged into one (tui.engine.explain.chrome_trace).

Torch-free: the code comes from events as the worker sends them (tests/test_generated_code.py runs
the real worker).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fakes.records import full_group, full_record
from tui.engine.explain.artifacts import (
    CODE_MAX_BYTES_PER_GRAPH,
    GraphCode,
    RunArtifacts,
    aot_id_of,
    artifact_paths,
    capped_code,
    code_file,
    kernel_names,
    load_code,
    run_folder,
)
from tui.engine.explain.chrome_trace import FLOW_ID_STRIDE, PID_STRIDE, merge_traces, side_of_pid
from tui.engine.store.export import write_json
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import ArtifactWritten, GraphCoded, decode, encode, make_event
from tui.engine.store.repeats import GroupRecord
from tui.engine.store.results import RunRecord

CODE = """# AOT ID: ['0_inference']
from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()
cpp_fused_add_mul_sin_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {}
''')
triton_poi_fused_relu_1 = async_compile.triton('triton_poi_fused_relu_1', '''
@triton.jit
def triton_poi_fused_relu_1(in_ptr0, xnumel): pass
''')
def call(args):
    cpp_fused_add_mul_sin_0(args[0], buf0)
"""


def _record(run_id: str = "20261203-120000-abcdef", graphs: int = 2) -> RunRecord:
    """A done pointwise run whose worker sent ``graphs`` graphs' code."""
    record = RunRecord(run_id, RunOptions(workload="pointwise", params={"n": 64}).validated(), created=1764763200.0)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    record.apply(make_event("compiled", 0.1, compile_s=0.5))
    for side, ms in (("eager", 2.0), ("compiled", 1.0)):
        record.apply(make_event("block", 0.2, side=side, stage="measure", index=0, clock="perf_counter",
                                ms=[ms] * 5, host_ms_per_call=ms))  # fmt: skip
    for index in range(graphs):
        code = CODE.replace("0_inference", f"{index}_inference")
        record.apply(GraphCoded(graph=capped_code(index, f"{index}/0", code, 10**6)))
    record.apply(make_event("measured", 0.3, warnings=[]))
    record.apply(make_event("finished", 0.3))
    return record


def test_kernel_names_and_aot_id_come_from_the_code():
    assert kernel_names(CODE) == ("cpp_fused_add_mul_sin_0", "triton_poi_fused_relu_1")
    assert aot_id_of(CODE) == "0_inference" and aot_id_of("def call(args): pass") == ""
    graph = capped_code(3, "1/0", CODE, 10**6)
    assert (graph.index, graph.compile_id, graph.aot_id, graph.kernel_count) == (3, "1/0", "0_inference", 2)
    assert graph.size_bytes == len(CODE.encode()) and graph.code == CODE and not graph.truncated
    assert graph.name == "graph 3 (1/0, 0_inference)" and graph.kernels == kernel_names(CODE)


def test_a_graph_over_the_cap_is_cut_and_one_past_the_runs_budget_keeps_no_code():
    big = "# x\n" * (CODE_MAX_BYTES_PER_GRAPH // 4 + 100)
    cut = capped_code(0, "0/0", big, 10 * CODE_MAX_BYTES_PER_GRAPH)
    assert cut.truncated and len(cut.code.encode()) == CODE_MAX_BYTES_PER_GRAPH and cut.size_bytes == len(big)
    none_left = capped_code(1, "0/1", CODE, 0)
    assert none_left.truncated and none_left.code is None and none_left.kernel_count == 2
    accented = capped_code(2, "", "é" * 10, 5)  # never half a character
    assert accented.code == "éé" and accented.truncated


def test_the_code_event_round_trips_and_the_record_keeps_graphs_in_order():
    event = GraphCoded(t=1.5, graph=capped_code(0, "0/0", CODE, 10**6))
    assert decode(encode(event)) == event
    record = RunRecord("20261203-120000-abcdef", RunOptions().validated())
    for index in (1, 0, 1):  # a repeated index replaces the first
        record.apply(GraphCoded(graph=GraphCode(index=index, code=f"code {index}")))
    assert [g.index for g in record.artifacts.graphs] == [0, 1]


def test_history_stores_the_code_apart_and_the_line_stays_small(tmp_path):
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    record = _record()
    full = record.to_json()
    history.append(record)
    folder = run_folder(record.run_id, tmp_path / "runs")
    assert record.data_dir == folder and code_file(folder, 1).read_text() == CODE.replace("0_inference", "1_inference")
    assert all(graph.code is None for graph in record.artifacts.graphs)  # released: on disk now
    line = (tmp_path / "history.jsonl").read_text()
    assert "cpp_fused_add_mul_sin_0" not in line and len(line) < 6000
    assert json.loads(line)["artifacts"]["graphs"][1] == {
        "index": 1, "compile_id": "1/0", "aot_id": "1_inference", "size_bytes": len(CODE.encode()),
        "kernel_count": 2, "truncated": False, "code": None}  # fmt: skip
    assert record.to_json() == full  # the full JSON reads the code back

    [loaded], problems = History(tmp_path / "history.jsonl", tmp_path / "runs").load()
    assert problems == [] and loaded.data_dir == folder
    listing = load_code(loaded)
    assert listing.why is None and listing.folder == str(folder / "code")
    assert [g.code for g in listing.graphs] == [CODE, CODE.replace("0_inference", "1_inference")]
    assert listing.graphs[0].kernels == ("cpp_fused_add_mul_sin_0", "triton_poi_fused_relu_1")


def test_the_json_export_carries_the_code_text_and_reads_back_without_files(tmp_path):
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    record = _record()
    history.append(record)  # the code is on disk only now
    write_json([record], tmp_path / "export.json")
    shutil.rmtree(tmp_path / "runs" / record.run_id)  # the export alone holds it now
    run = json.loads((tmp_path / "export.json").read_text())["runs"][0]
    assert [g["code"] for g in run["artifacts"]["graphs"]] == [CODE, CODE.replace("0_inference", "1_inference")]
    back, problems = RunRecord.decode(run)
    assert problems == [] and load_code(back).why is None and load_code(back).graphs[0].code == CODE


def test_code_that_is_gone_loads_as_gone_and_says_why(tmp_path):
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    record = _record()
    history.append(record)
    code_file(record.data_dir, 0).unlink()
    listing = load_code(History(tmp_path / "history.jsonl", tmp_path / "runs").load()[0][0])
    assert [g.code is None for g in listing.graphs] == [True, False]
    assert (
        listing.why.startswith("the code of 1 of 2 graph(s) gone from ")
        and "deleted, or the data dir moved" in listing.why
    )
    (Path(record.data_dir) / "pruned.json").write_text(
        '{"pruned_at": "2026-12-04T10:00:00Z", "bytes_freed": 9, "removed": ["code"]}'
    )
    assert load_code(record).why == "the code of 1 of 2 graph(s) pruned on 2026-12-04T10:00:00Z (compile-lab prune)"


def test_a_run_without_code_says_why():
    assert load_code(_record(graphs=0)).why.startswith("no generated code was kept")
    other = RunRecord("x", RunOptions(backend="aot_eager").validated())
    assert load_code(other).why == "the aot_eager backend generates no code (inductor does)"
    failed = RunRecord("y", RunOptions().validated())
    failed.fail("compile_error", "inductor raised")
    assert load_code(failed).why == "the run ended before anything was compiled"


def test_old_lines_without_artifacts_still_load(tmp_path):
    record = _record()
    line = {"schema": 2, **record.to_json(samples=False), "samples_file": None}
    del line["artifacts"]
    (tmp_path / "history.jsonl").write_text(json.dumps(line) + "\n")
    [loaded], problems = History(tmp_path / "history.jsonl", tmp_path / "runs").load()
    assert problems == [] and loaded.artifacts == RunArtifacts() and loaded.options.trace is False
    assert load_code(loaded).graphs == () and artifact_paths(loaded).trace is None


def test_artifact_paths_are_those_on_disk(tmp_path):
    record = _record()
    record.data_dir = tmp_path / "runs" / record.run_id
    record.data_dir.mkdir(parents=True)
    (record.data_dir / "trace.json").write_text("{}")
    record.apply(ArtifactWritten(kind="trace", name="trace.json", size_bytes=2))
    record.apply(ArtifactWritten(kind="torch_trace", name="torch_trace", size_bytes=0))  # ignored: it has ended
    record.artifacts = RunArtifacts(
        graphs=record.artifacts.graphs, trace_file="trace.json", torch_trace_dir="torch_trace"
    )
    found = artifact_paths(record)
    assert found.trace == str(record.data_dir / "trace.json") and found.torch_trace is None
    assert found.gone == ("torch_trace",) and found.tlparse_report is None
    (record.data_dir / "tlparse").mkdir()
    (record.data_dir / "tlparse" / "index.html").write_text("<html>")
    assert artifact_paths(record).tlparse_report == str(record.data_dir / "tlparse" / "index.html")


def test_a_groups_row_shows_its_profiled_members_files():
    members = full_group()
    row = GroupRecord.of(members)
    assert row.artifacts == RunArtifacts()  # a snapshot's own; the functions look at the members
    assert load_code(row).graphs == members[0].artifacts.graphs
    assert artifact_paths(row).folder == str(run_folder(members[0].run_id))


def test_the_full_record_carries_every_artifact_field():
    record = full_record("20261201-101010-aaaaaa", failed=False)
    artifacts = record.artifacts
    assert (
        len(artifacts.graphs) == 2
        and artifacts.trace_file == "trace.json"
        and artifacts.torch_trace_dir == "torch_trace"
    )


# ----- the Chrome trace of both sides -----------------------------------------------------------


def _side(pid: int, op: str, base: int = 10**18) -> dict:
    return {"schemaVersion": 1, "baseTimeNanoseconds": base, "deviceProperties": [{"id": 0}], "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
        {"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": pid, "ts": 100.0, "dur": 5.0},
        {"ph": "X", "cat": "kernel", "name": f"{op}_kernel", "pid": 0, "tid": 7, "ts": 103.0, "dur": 1.0},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": pid, "tid": pid, "ts": 101.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": 0, "tid": 7, "ts": 103.0, "bp": "e"},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 110.0},
    ]}


def test_merged_trace_keeps_both_sides_apart():
    merged = merge_traces({"eager": _side(500, "aten::mul"), "compiled": _side(500, "cpp_fused", base=10**18 + 2000)})
    events = merged["traceEvents"]
    assert merged["compile_lab"] == {"sides": ["eager", "compiled"]} and merged["deviceProperties"] == [{"id": 0}]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {500: "eager: python3", 0: "eager: 0", "eager": "eager",
                     500 + PID_STRIDE: "compiled: python3", PID_STRIDE: "compiled: 0", "compiled": "compiled"}
    ops = {e["name"]: e for e in events if e.get("ph") == "X"}
    assert side_of_pid(ops["aten::mul"]["pid"], ("eager", "compiled")) == "eager"
    assert side_of_pid(ops["cpp_fused_kernel"]["pid"], ("eager", "compiled")) == "compiled"
    assert ops["cpp_fused"]["ts"] == 102.0  # moved onto the eager export's clock (2 us later base)
    flows = sorted(e["id"] for e in events if e.get("ph") in ("s", "f"))
    assert flows == [42, 42, 42 + FLOW_ID_STRIDE, 42 + FLOW_ID_STRIDE]
    sort = {e["pid"]: e["args"]["sort_index"] for e in events if e.get("name") == "process_sort_index"}
    assert sort[500] < sort[500 + PID_STRIDE]
    json.dumps(merged)  # JSON all through


@pytest.mark.parametrize("pid", [True, None])
def test_side_of_an_unknown_pid_is_none(pid):
    assert side_of_pid(pid, ("eager", "compiled")) is None
