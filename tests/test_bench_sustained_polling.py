"""benchmarks/sustained.py and benchmarks/polling.py (issue 22, items 4 and 5): their pure parts on
constructed data, and their CPU dry paths end to end (slow: real workers).

The GPU stages (``bash benchmarks/gpu_run.sh sustained`` / ``polling``) run once, on a card, with
no second try: what they compute from what they read is pinned here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sustained = pytest.importorskip("sustained")
polling = pytest.importorskip("polling")


# ----- sustained: NVML windows ---------------------------------------------------------------


def test_a_window_averages_the_clock_and_power_samples_inside_it():
    samples = [
        (0.0, 1980.0, 300.0),
        (1.0, 1900.0, None),
        (2.0, 1700.0, 700.0),
        (3.0, 1800.0, None),
        (9.0, 1000.0, 100.0),
    ]
    stats = sustained.window_stats(samples, 1.0, 3.0)
    assert stats["clock_mean"] == pytest.approx(1800.0) and stats["clock_min"] == 1700.0
    assert stats["power_mean"] == 700.0 and stats["n"] == 3 and not stats["nearest"]


def test_a_window_shorter_than_a_sample_takes_the_nearest_one_and_says_so():
    samples = [(0.0, 1980.0, 300.0), (0.02, 1900.0, None), (0.1, 1500.0, 650.0)]
    stats = sustained.window_stats(samples, 0.021, 0.025)
    assert stats["nearest"] and stats["clock_mean"] == 1900.0 and stats["n"] == 1
    assert stats["power_mean"] == 300.0  # the nearest power reading, not none


def test_a_row_without_a_window_gets_no_nvml_figures():
    assert sustained.window_stats([(0.0, 1980.0, 300.0)], None, None)["clock_mean"] is None


def test_the_sampler_reads_the_clock_at_clock_hz_and_the_power_every_nth_sample():
    from tui.telemetry.fake import FakeSource

    source = FakeSource(gpus=1)
    sampler = sustained.WindowSampler(source, source.snapshot()[0].uuid, hz=10, clock_hz=50)
    assert sampler.every == 5 and sampler.period == pytest.approx(0.02)


# ----- sustained: compile-lab's rest between rounds ------------------------------------------


def _block(side: str, index: int, start: float, end: float, host: float, calls: int = 10) -> dict:
    return {"stage": "measure", "index": index, "clock": "cuda_event", "ms": [1.0] * calls, "host_ms_per_call": host,
            "t_start": start, "t_end": end}


def _run() -> dict:
    # Three rounds. Each: the two device sub-blocks back to back (0.1 ms apart), 10 ms each; before the
    # next round, its host sub-blocks (10 calls of 1.0 ms per side, run 5 times over to last 50 ms: 100 ms)
    # and 2 ms of rest.
    eager, compiled = [], []
    t = 100.0
    for i in range(3):
        first, second = (eager, compiled) if i % 2 == 0 else (compiled, eager)
        first.append(_block("a", i, t, t + 0.010, 1.0))
        second.append(_block("b", i, t + 0.0101, t + 0.0201, 1.0))
        t += 0.0201 + 0.100 + 0.002
    warm = {"stage": "warmup", "index": 0, "ms": [1.0], "host_ms_per_call": None, "t_start": 50.0, "t_end": 50.1}
    return {"samples": {"eager": [warm, *eager], "compiled": compiled},
            "profile": {"available": True, "compiled": {"kernel_ms_per_call": 0.398, "calls": 5},
                        "eager": {"kernel_ms_per_call": 0.9, "calls": 5}}}


def test_the_rest_is_the_gap_between_rounds_less_the_host_sub_blocks_in_it():
    rest = sustained.lab_rest(_run())
    assert rest["rounds"] == 3
    assert rest["gap_ms"] == pytest.approx(102.0, abs=1e-6)
    assert rest["host_ms"] == pytest.approx(100.0)
    assert rest["rest_ms"] == pytest.approx(2.0, abs=1e-6)
    assert rest["inside_ms"] == pytest.approx(0.1, abs=1e-6)
    assert rest["device_ms_per_round"] == pytest.approx(20.0, abs=1e-6)
    assert rest["window"] == (100.0, pytest.approx(100.0 + 2 * 0.1221 + 0.0201))
    assert rest["rest_share"] == pytest.approx(4.0 / rest["span_ms"])


def test_a_host_sub_block_runs_its_calls_over_until_it_lasts_50_ms():
    assert sustained.host_block_ms({"host_ms_per_call": 1.0, "ms": [1.0] * 10}) == pytest.approx(50.0)
    assert sustained.host_block_ms({"host_ms_per_call": 8.0, "ms": [8.0] * 10}) == pytest.approx(80.0)
    assert sustained.host_block_ms({"host_ms_per_call": None, "ms": [1.0] * 10}) == 0.0


def test_warm_up_blocks_are_not_rounds():
    assert all(b["stage"] == "measure" for b in sustained.measure_blocks(_run()))


def test_compile_labs_rows_come_from_its_csv_row_and_its_profile_pass():
    row = {"compiled_median_ms": "0.406", "eager_median_ms": "0.5", "sm_clock_compiled_mhz": "1755", "error": ""}
    rows = sustained.lab_rows(row, _run(), ["compiled"])
    lab, profile = rows
    assert lab["method"] == sustained.LAB_METHOD and lab["ms"] == 0.406 and lab["t0"] == 100.0
    assert "1755 MHz" in lab["note"]
    assert profile["method"] == sustained.LAB_PROFILE and profile["ms"] == 0.398 and profile["error"] is None


def test_a_failed_compile_lab_run_is_a_row_without_numbers_not_a_crash():
    rows = sustained.lab_rows({}, None, ["compiled"])
    assert rows[0]["ms"] is None and rows[1]["error"] == "no profile"
    text = sustained.render({"gemm": {"label": "g", "rows": sustained.with_stats(rows, []), "rest": {"rounds": 0}}}, {})
    assert "no measure blocks" in text and "n/a (a method is missing)" in text


def test_the_table_gives_each_method_its_ratio_to_do_bench_and_answers_the_question():
    samples = [(100.0 + i * 0.02, 1980.0, 600.0) for i in range(10)] + [
        (200.0 + i * 0.02, 1800.0, 690.0) for i in range(100)
    ]
    rows = sustained.lab_rows({"compiled_median_ms": "0.400"}, _run(), ["compiled"])
    rows += [{"method": "events loop", "side": "compiled", "ms": 0.430, "t0": 200.0, "t1": 202.0},
             {"method": "do_bench", "side": "compiled", "ms": 0.432, "t0": 200.0, "t1": 202.0},
             {"method": "profiler loop", "side": "compiled", "ms": 0.428, "t0": 200.0, "t1": 201.0}]
    rows = sustained.with_stats(rows, samples)
    by = {r["method"]: r for r in rows}
    assert by["compile-lab"]["ratio"] == pytest.approx(0.400 / 0.432)
    assert by["compile-lab"]["clock_mean"] == 1980.0 and by["events loop"]["clock_mean"] == 1800.0
    text = sustained.render({"x": {"label": "bf16 GEMM", "rows": rows, "rest": sustained.lab_rest(_run())}},
                            {"date": "d", "gpu": "H200"})
    assert "| compile-lab | compiled | 0.4000 | 1980 | 1980 | 600 |" in text
    assert "compile-lab / sustained events loop = 0.930" in text
    assert "sustained / compile-lab = 0.909" in text
    assert "its profile pass / a sustained profiler loop = 0.930" in text
    assert "**rest 2.000 ms**" in text


def test_compile_lab_runs_one_process_with_its_profile_pass_and_writes_both_exports(tmp_path):
    cmd = sustained.lab_command(sustained.CASES["gemm"], "cuda", "inductor", tmp_path / "a.csv", tmp_path / "a.json")
    joined = " ".join(cmd)
    assert "--repeat 1" in joined and "--no-profile" not in joined and "--param n=8192" in joined
    assert "--dtype bfloat16" in joined and "--json" in joined and "--csv" in joined


# ----- polling --------------------------------------------------------------------------------


def test_runs_are_interleaved_and_the_arms_rotate():
    order = polling.plan(["cnn", "matmul"], ["app", "cli", "cli+nvml"], 3)
    assert len(order) == 18
    assert [o for o in order if o[0] == 1][:3] == [(1, "cnn", "app"), (1, "cnn", "cli"), (1, "cnn", "cli+nvml")]
    assert [o[2] for o in order if o[0] == 2 and o[1] == "cnn"] == ["cli", "cli+nvml", "app"]
    assert max(i for i, o in enumerate(order) if o[0] == 1) < min(i for i, o in enumerate(order) if o[0] == 2)


def test_the_app_and_the_cli_run_the_same_options():
    from tui.cli.parse import configs_from_args
    from tui.cli.parser import build_parser

    argv = polling.run_args(polling.CASES["cnn"], "cpu", "eager")
    [options] = configs_from_args(build_parser().parse_args(["run", *argv]))
    assert options.workload == "cnn" and options.params["batch"] == 64 and options.iters == 400
    assert options.block_size == 20 and options.profile is False and options.backend == "eager"
    assert "--repeat" in argv and argv[argv.index("--repeat") + 1] == "1"


def _result(case: str, arm: str, run: int, compiled: float, host: float) -> dict:
    return {"case": case, "arm": arm, "run": run, "eager_median_ms": "1.0", "compiled_median_ms": str(compiled),
            "eager_host_median_ms": "2.0", "compiled_host_median_ms": str(host), "speedup": str(1.0 / compiled),
            "host_speedup": str(2.0 / host), "status": "done", "error": "", "arm_info": {"polls": 20, "app_cpu_s": 1.5,
                                                                                           "run_s": 20.0}}


def test_the_polling_table_has_each_run_the_median_and_the_ratio_to_the_cli():
    results = [_result("cnn", "cli", k, c, h) for k, c, h in ((1, 0.10, 0.20), (2, 0.12, 0.22), (3, 0.11, 0.30))]
    results += [_result("cnn", "app", k, c, h) for k, c, h in ((1, 0.121, 0.25), (2, 0.132, 0.24), (3, 0.2, 0.26))]
    text = polling.render(results, {"date": "d"}, {"cnn": "seed CNN"})
    assert "| seed CNN | app | 2 | 1.0000 | 0.1320 | 2.0000 | 0.2400 |" in text
    assert "| seed CNN | **cli** | median | 1.0000 | 0.1100 | 2.0000 | 0.2200 |" in text
    assert "| seed CNN | **app** | median | 1.0000 | 0.1320 | 2.0000 | 0.2500 |" in text
    assert f"| seed CNN | app | {0.132 / 0.11:.3f} | {0.25 / 0.22:.3f} | 1.000 |" in text
    assert "20 pane polls, app CPU 1.5 s over 20 s" in text


def test_a_run_that_timed_out_is_a_row_not_a_crash():
    results = [{"case": "cnn", "arm": "app", "run": 1, "status": "timeout", "error": "150 s", "arm_info": {}},
               _result("cnn", "cli", 1, 0.1, 0.2)]
    text = polling.render(results, {}, {})
    assert "| cnn | app | 1 |" in text and "timeout 150 s" in text


def test_a_csv_that_is_missing_reads_as_no_row(tmp_path):
    assert polling.read_row(tmp_path / "none.csv") == {}


# ----- the dry paths, end to end --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.torch
def test_the_sustained_dry_path_writes_its_table_and_raw_json(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "sustained.py"),
            "--out",
            str(tmp_path),
            "--device",
            "cpu",
            "--seconds",
            "0.3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    raw = json.loads((tmp_path / "sustained.json").read_text())
    rows = {r["method"]: r for r in raw["results"]["gemm"]["rows"]}
    assert rows["compile-lab"]["ms"] > 0 and rows["compile-lab"]["clock_mean"] is not None  # fake NVML, matched
    assert rows["events loop"]["ms"] > 0 and rows["profiler loop"]["ms"] > 0
    assert rows["do_bench"]["error"] == "needs CUDA"
    assert raw["results"]["gemm"]["rest"]["rounds"] >= 4 and raw["samples"]
    assert "| compile-lab | compiled |" in (tmp_path / "sustained.md").read_text()


@pytest.mark.slow
@pytest.mark.torch
def test_the_polling_dry_path_runs_the_app_on_a_pty_and_the_cli(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "polling.py"), "--out", str(tmp_path), "--device",
                           "cpu", "--runs", "1", "--arms", "app,cli+nvml"], capture_output=True, text=True, timeout=400,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "polling.json").read_text())["results"]
    by = {r["arm"]: r for r in results}
    assert by["app"]["status"] == "done" and float(by["app"]["compiled_median_ms"]) > 0
    assert by["app"]["arm_info"]["painted_bytes"] > 10_000  # it painted to a terminal
    assert by["app"]["arm_info"]["row_compiled_ms"]  # its row showed the result
    assert by["cli+nvml"]["status"] == "done" and by["cli+nvml"]["arm_info"]["poller"]["polls"] > 0
