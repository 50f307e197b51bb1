"""Load (matrix line 14): a 48-configuration sweep, 200,000 streamed iterations, a real sweep of 4.

Through the app with the fake worker: every configuration of the sweep ends as a row, a
history line and a CSV row; a run that streams 200,000 measured iterations keeps the app's
memory bounded (measured with tracemalloc: what Python allocated, the part the app controls)
and its raw CSV complete. Through the CLI with real workers: a sweep of 4 tiny configurations.
"""

from __future__ import annotations

import tracemalloc

import pytest

from app_helpers import fake_runner, wait_until
from fault_helpers import csv_rows, history_lines
from tui import cli
from tui.engine.options import MODES, RunOptions
from tui.engine.runner import WorkerRunner

SIZE = (160, 48)

#: 200,000 measured iterations: 100,000 per side, in blocks of 1,000 (one event line each).
STREAM_ITERS_PER_SIDE = 100_000
STREAM_BLOCK = 1_000
STREAM_WARMUP = 50
#: The most Python may hold at once while the app takes that run in, summarises and stores it
#: (29 MiB measured with torch 2.13 / textual 8.2.8; the samples alone are 8 bytes per
#: iteration in ``array('d')``, 1.6 MB; the final statistics and decoding an event line add to it).
STREAM_PEAK_BYTES = 48 * 2**20


@pytest.mark.slow  # a load test: seconds of fake-worker runs
async def test_a_sweep_of_48_configurations_ends_as_48_rows_history_lines_and_csv_rows(make_app, tmp_path):
    """4 modes x fullgraph x 3 dynamic x 2 dtypes, queued by the app's sweep, one worker at a time."""
    runner = WorkerRunner(worker_argv=fake_runner().worker_argv, keep_spare=True, env={"FAKE_WORKER_BEHAVIOUR": "ok"})
    app = make_app(runner=runner)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        base = RunOptions(workload="pointwise", iters=10, block_size=5)
        choice = {"modes": list(MODES), "fullgraphs": [False, True], "dynamics": ["auto", "true", "false"],
                  "dtypes": ["float32", "bfloat16"]}
        app._sweep_chosen(base, choice)  # what ctrl+s in the sweep dialog does
        assert app.table.row_count == 48
        await wait_until(pilot, lambda: app.settled, timeout=120, what="48 runs ended")
        records = [app.records[run_id] for run_id in app.table.run_ids]
        assert [r.status for r in records] == ["done"] * 48
        assert len({r.options.label() for r in records}) == 48
        app._export(str(tmp_path / "sweep.csv"))
        await wait_until(pilot, lambda: (tmp_path / "sweep.json").exists(), what="the export")
    ids = [r.run_id for r in records]
    assert sorted(line["run_id"] for line in history_lines()) == sorted(ids)  # stored as each was summarised
    assert [row["run_id"] for row in csv_rows(tmp_path / "sweep.csv")] == ids


@pytest.mark.slow  # a load test: seconds of streaming
async def test_streaming_200000_iterations_keeps_memory_bounded_and_the_raw_csv_complete(make_app, tmp_path):
    """One run with 100,000 measured iterations per side (plus warm-up) through the app."""
    runner = fake_runner("ok")
    app = make_app(runner=runner)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        tracemalloc.start()
        try:
            (record,) = app.enqueue([RunOptions(iters=STREAM_ITERS_PER_SIDE, block_size=STREAM_BLOCK,
                                                warmup=STREAM_WARMUP)])
            await wait_until(pilot, lambda: record.finished and app.settled, timeout=120, what="the long run")
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert record.status == "done", record.error_message
        assert peak < STREAM_PEAK_BYTES, f"peak {peak / 2**20:.1f} MiB"
        app._export(str(tmp_path / "long.csv"))
        written = [tmp_path / name for name in ("long.csv", "long.json", "long-raw.csv")]  # atomic: whole once seen
        await wait_until(pilot, lambda: all(path.exists() for path in written), timeout=60, what="the export")
    raw = csv_rows(tmp_path / "long-raw.csv")
    measured = [row for row in raw if row["stage"] == "measure"]
    assert len(measured) == 2 * STREAM_ITERS_PER_SIDE
    timed = sum(len(block.ms) for blocks in record.samples.values() for block in blocks)
    assert len(raw) == timed and len(raw) > len(measured) + STREAM_WARMUP  # the compile and warm-up blocks too
    assert {row["side"] for row in measured} == {"eager", "compiled"}


@pytest.mark.slow
@pytest.mark.torch
def test_a_real_sweep_of_4_through_the_cli(tmp_path, compile_lab_home):
    """eager/aot_eager x 2 dynamic settings, tiny, real workers one after another: 4 CSV rows and 4 history lines.

    The two axes that take different paths through torch (the dynamo backend, the dynamic
    setting); a second size would only repeat each of them (the CLI's expansion of a param list
    is tested with the fake worker in tests/test_cli.py).
    """
    pytest.importorskip("torch")
    out = tmp_path / "sweep.csv"
    code = cli.main(
        ["sweep", "--workload", "pointwise", "--param", "n=16", "--backend", "eager,aot_eager",
         "--dynamic", "auto,false", "--device", "cpu", "--warmup", "1", "--iters", "4", "--block-size", "2",
         "--no-profile", "--csv", str(out), "--quiet"]
    )  # fmt: skip
    rows = csv_rows(out)
    assert code == 0, [(r["status"], r["error"]) for r in rows]
    assert len(rows) == 4 and all(r["status"] == "done" for r in rows)
    assert {(r["params"], r["backend"], r["dynamic"]) for r in rows} == {
        ("n=16", backend, dynamic) for backend in ("eager", "aot_eager") for dynamic in ("auto", "false")
    }
    assert [line["run_id"] for line in history_lines()] == [r["run_id"] for r in rows]
