"""The compile-lab command line: usage errors, workloads, run/sweep through a (fake or real) worker."""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
from typing import Any

import pytest

from fakes.records import cuda_run_record
from fakes import fake_worker_argv
from rich.console import Console

from tui import cli
from tui.cli.render import print_table
from tui.engine.catalog import WORKLOADS
from tui.engine.protocol import BlockTimed, Ready
from tui.engine.runner import WorkerRunner

FAKE_WORKER = fake_worker_argv()


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _use_fake_worker(monkeypatch, behaviour: str = "ok", hook=None) -> list[WorkerRunner]:
    """Make the CLI run the fake worker; returns the runners it made."""
    made: list[WorkerRunner] = []

    class HookedRunner(WorkerRunner):
        async def run(self, record, on_event=None):
            def forward(event):
                if hook is not None:
                    hook(event)
                if on_event is not None:
                    on_event(event)

            return await super().run(record, forward)

    def factory(keep_spare: bool, telemetry=None):
        runner = HookedRunner(worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": behaviour})
        made.append(runner)
        return runner

    monkeypatch.setattr(cli, "make_runner", factory)
    return made


def test_workloads_lists_every_builtin_and_how_to_bring_your_own(capsys):
    assert cli.main(["workloads"]) == 0
    out = capsys.readouterr().out
    for name, spec in WORKLOADS.items():
        assert name in out
        for param in spec.params:
            assert param.name in out
    assert "make_workload(device, dtype, **params)" in out
    assert "--workload path/to/file.py" in out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["run", "--mode", "fast"], "--mode:"),
        (["run", "--backend", "aot_eager", "--mode", "max-autotune"], "--mode:"),
        (["run", "--iters", "0"], "--iters:"),
        (["run", "--workload", "matmul", "--param", "n=-5"], "--param: n:"),
        (["run", "--dynamic", "sometimes"], "--dynamic:"),
        (["run", "--device", "gpu"], "--device:"),
        (["run", "--memory-limit", "0"], "--memory-limit:"),
        (["run", "--repeat", "0"], "--repeat: 0 is not allowed (allowed: an integer from 1 to 100, or auto)"),
        (["sweep", "--repeat", "often"], "--repeat: 'often' is not allowed"),
        (["run", "--device", "cuda", "--memory-limit", "4"], "--memory-limit: applies to CPU runs only"),
        (["run", "--iters", "many"], "--iters: 'many' is not an integer (allowed: an integer from 1 to 10000000)"),
        (["sweep", "--timeout", "soon"], "--timeout: 'soon' is not a number (allowed: a number of seconds above 0"),
        (["sweep", "--mode", "default,bogus"], "--mode:"),
        (["sweep", "--fullgraph", "maybe"], "--fullgraph:"),
        (["sweep", "--param", "n=64,-1"], "--param: n:"),
        (["sweep", "--param", "n=8,,16"], "--param: n: '8,,16' has an empty item (allowed: values separated by single "
                                          "commas, none at either end)"),
        (["sweep", "--mode", "default,"], "--mode: 'default,' has an empty item"),
        (["sweep", "--mode="], "--mode: the sweep list is empty (give at least one value)"),
        (["sweep", "--python", ",python3"], "--python: ',python3' has an empty item"),
        (["tune", "--space", "freezing,,cpp_wrapper"], "--space: 'freezing,,cpp_wrapper' has an empty item"),
        (["run", "--precision", "fast"], "--precision: 'fast' is not allowed (allowed: default, ieee, tf32)"),
        (["sweep", "--precision", "ieee,TF32"], "--precision: 'TF32' is not allowed (allowed: default, ieee, tf32)"),
        (["run", "--tf32", "--precision", "ieee"], "--precision: --tf32 (the same as --precision tf32) contradicts "
                                                   "--precision ieee (allowed: one of the two)"),
        (["run", "--noise-limit", "max_relative_iqr=0"], "--noise-limit: max_relative_iqr: 0 is not allowed"),
        (["sweep", "--python", "/nonexistent/python,/bin/false"], "--python: /nonexistent/python is not a Python"),
        (["frobnicate"], "argument COMMAND:"),
        (["tune", "--budget", "-5s"], "argument --budget: expected one argument (if the value starts with '-', "
                                      "write --budget=VALUE)"),
        (["run", "--param", "-n=5"], "argument --param: expected one argument (if the value starts with '-', "
                                     "write --param=VALUE)"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, argv, field):
    assert cli.main(argv) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"compile-lab: error: {field}")


@pytest.mark.parametrize("command", ["run", "sweep", "tune"])
def test_a_user_file_that_cannot_run_is_refused_before_a_worker_starts(monkeypatch, tmp_path, capsys, command):
    """``run --workload /tmp/nope/model.py`` started a worker (2 s) that failed the run with exit 1."""
    made = _use_fake_worker(monkeypatch)
    (tmp_path / "dir.py").mkdir()
    for path, problem in ((tmp_path / "nope" / "model.py", "no such file"),
                          (tmp_path / "dir.py", "is a directory, not a Python file")):
        assert cli.main([command, "--workload", f"{path}:build", "--no-history"]) == 2
        assert _error_lines(capsys) == [f"compile-lab: error: --workload: {path}: {problem} (allowed: a readable "
                                        "Python file, path/to/file.py[:factory])"]
    assert made == []


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_cuda_device_on_a_cpu_build_of_torch_is_refused_as_tune_refuses_it(monkeypatch, capsys, command):
    """``run --device cuda`` on a CPU wheel started a worker that failed the run (exit 1, a failed row kept in the
    history) where ``tune`` refused it in one line (exit 2); a run in another interpreter is its worker's to judge."""
    from tui.engine.runner import torch_probe

    made = _use_fake_worker(monkeypatch)
    monkeypatch.setattr(torch_probe, "cpu_build_here", lambda: "2.13.0+cpu")
    assert cli.main([command, "--workload", "pointwise", "--device", "cuda:1", "--no-history"]) == 2
    assert _error_lines(capsys) == ["compile-lab: error: --device: cuda:1 is not allowed: this machine's torch "
                                    "(2.13.0+cpu) cannot use CUDA (allowed: cpu)"]
    assert made == []
    from tui.cli.parse import _refuse_cuda_on_a_cpu_build
    from tui.engine.options import RunOptions

    _refuse_cuda_on_a_cpu_build([RunOptions(device="cuda", python=sys.executable), RunOptions(device="cpu")])
    monkeypatch.setattr(torch_probe, "cpu_build_here", lambda: None)  # a build that may have CUDA: the worker says
    _refuse_cuda_on_a_cpu_build([RunOptions(device="cuda")])


@pytest.mark.parametrize(("version", "cpu_build"), [("2.13.0+cpu", True), ("2.6.0+cpu.cxx11.abi", True),
                                                    ("2.11.0+cu130", False), ("2.9.1", False), (None, False),
                                                    ("no METADATA", False)])
def test_a_cpu_build_is_read_from_torchs_version_without_importing_it(monkeypatch, version, cpu_build):
    import importlib.metadata

    from tui.engine.runner import torch_probe

    def installed(name: str) -> str:
        assert name == "torch"
        if version is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return None if version == "no METADATA" else version  # what a dist-info folder without METADATA reads as

    monkeypatch.setattr(importlib.metadata, "version", installed)
    assert torch_probe.cpu_build_here() == (version if cpu_build else None)


def test_every_run_flag_reaches_its_option():
    args = cli.build_parser().parse_args(
        [
            "run", "--workload", "mlp", "--param", "batch=8", "--param", "width=32", "--backend", "inductor",
            "--option", "max_autotune_gemm=false", "--fullgraph", "--dynamic", "true", "--dtype",
            "bfloat16", "--precision", "ieee", "--device", "cpu", "--warmup", "2", "--iters", "30", "--block-size", "5",
            "--time-budget", "9.5", "--l2-flush", "--cold-compile", "--timeout", "120", "--python",
            sys.executable, "--train", "--compile-optimizer", "--seed", "7", "--memory-limit", "3.5",
            "--target-ci", "0.03", "--noise-threshold", "0.05", "--noise-limit", "max_drift=0.2", "--no-profile",
            "--torch-trace",
        ]
    )  # fmt: skip
    (options,) = cli.configs_from_args(args)
    assert options.to_dict() == {
        "workload": "mlp", "params": {"batch": 8, "width": 32, "depth": 3}, "backend": "inductor",
        "mode": "default", "inductor_options": {"max_autotune_gemm": False}, "fullgraph": True,
        "dynamic": True, "dtype": "bfloat16", "precision": "ieee", "device": "cpu", "warmup": 2, "iters": 30,
        "block_size": 5, "time_budget_s": 9.5, "l2_flush": True, "cold_compile": True, "timeout_s": 120.0,
        "python": sys.executable, "train": True, "compile_optimizer": True, "seed": 7, "memory_limit_gb": 3.5,
        "target_ci": 0.03, "noise_threshold": 0.05, "noise_limits": {"max_drift": 0.2}, "profile": False,
        "trace": False, "torch_trace": True,
    }  # fmt: skip


def _configs(argv: list[str]):
    return cli.configs_from_args(cli.build_parser().parse_args(argv))


def test_precision_is_default_unless_given_and_tf32_is_its_alias():
    assert [c.precision for c in _configs(["run"])] == ["default"]
    for value in ("default", "ieee", "tf32"):
        assert [c.precision for c in _configs(["run", "--precision", value])] == [value]
    assert [c.precision for c in _configs(["run", "--tf32"])] == ["tf32"]
    assert [c.precision for c in _configs(["run", "--tf32", "--precision", "tf32"])] == ["tf32"]
    assert [c.precision for c in _configs(["sweep", "--tf32"])] == ["tf32"]


def test_the_help_says_tf32_is_the_alias(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--tf32 the same as --precision tf32" in text and "--precision WHICH default, ieee, tf32" in text


def test_a_sweep_over_precisions_runs_each_once_in_order():
    configs = _configs(["sweep", "--precision", "default,ieee,tf32,ieee", "--mode", "default,reduce-overhead"])
    assert [(c.mode, c.precision) for c in configs] == [
        ("default", "default"), ("default", "ieee"), ("default", "tf32"),
        ("reduce-overhead", "default"), ("reduce-overhead", "ieee"), ("reduce-overhead", "tf32"),
    ]  # fmt: skip


def test_sweep_runs_each_meaningful_combination_once():
    args = cli.build_parser().parse_args(
        ["sweep", "--backend", "inductor,aot_eager", "--mode", "default,max-autotune", "--fullgraph", "both",
         "--param", "n=64,128", "--device", "cpu"]
    )  # fmt: skip
    configs = cli.configs_from_args(args)
    # inductor: 2 modes x 2 fullgraph; aot_eager: mode ignored -> 2 fullgraph; x 2 sizes
    assert len(configs) == (2 * 2 + 2) * 2
    assert {(c.backend, c.mode) for c in configs} == {
        ("inductor", "default"), ("inductor", "max-autotune"), ("aot_eager", "default"),
    }
    assert {c.params["n"] for c in configs} == {64, 128}


def test_a_sweep_runs_sequentially_exports_and_keeps_history(monkeypatch, tmp_path, compile_lab_home):
    made = _use_fake_worker(monkeypatch)
    out_csv, out_json, raw = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "raw.csv"
    code = cli.main(
        ["sweep", "--workload", "pointwise", "--param", "n=64,128", "--device", "cpu", "--iters", "20",
         "--block-size", "5", "--csv", str(out_csv), "--json", str(out_json), "--raw-csv", str(raw), "--quiet"]
    )  # fmt: skip
    assert code == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["params"], r["status"]) for r in rows] == [("n=64", "done"), ("n=128", "done")]
    assert len(json.loads(out_json.read_text())["runs"]) == 2
    measured = [r for r in csv.DictReader(raw.open()) if r["stage"] == "measure"]
    assert len(measured) == 2 * 2 * 20  # runs x sides x measured iterations (warm-up blocks come too)
    history = (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()
    assert len(history) == 2
    assert made[0].spare_pid is None  # closed, and no spare after the last run


def test_a_failed_run_exits_1_and_is_still_exported_and_in_history(monkeypatch, tmp_path, compile_lab_home, capsys):
    _use_fake_worker(monkeypatch, behaviour="fail")
    out_csv = tmp_path / "r.csv"
    assert cli.main(["run", "--device", "cpu", "--csv", str(out_csv)]) == 1
    (row,) = list(csv.DictReader(out_csv.open()))
    assert (row["status"], row["error_kind"]) == ("failed", "compile_error")
    assert "compile failed: fake inductor error" in capsys.readouterr().out
    assert len((compile_lab_home / "data" / "history.jsonl").read_text().splitlines()) == 1


def test_no_history_leaves_the_history_alone(monkeypatch, compile_lab_home):
    _use_fake_worker(monkeypatch)
    assert cli.main(["run", "--device", "cpu", "--no-history", "--quiet"]) == 0
    assert not (compile_lab_home / "data" / "history.jsonl").exists()


def _signal_in_the_second_run(signum: int) -> tuple[list[int], Any]:
    """The workers' pids as they start, and a hook that sends ``signum`` while the second run measures."""
    pids: list[int] = []

    def hook(event):
        if isinstance(event, Ready):
            pids.append(event.pid)
        if isinstance(event, BlockTimed) and len(pids) == 2:  # the second run is measuring
            os.kill(os.getpid(), signum)

    return pids, hook


def test_sigterm_kills_the_worker_and_keeps_the_runs_that_ended(monkeypatch, tmp_path, compile_lab_home):
    pids, hook = _signal_in_the_second_run(signal.SIGTERM)
    _use_fake_worker(monkeypatch, behaviour="ok", hook=hook)
    monkeypatch.setenv("FAKE_WORKER_DELAY", "0.05")
    out_csv = tmp_path / "r.csv"
    before = signal.getsignal(signal.SIGTERM)
    code = cli.main(
        ["sweep", "--param", "n=64,128", "--device", "cpu", "--iters", "50", "--block-size", "5",
         "--csv", str(out_csv), "--quiet"]
    )  # fmt: skip
    assert code == 128 + signal.SIGTERM
    # One policy for both front ends (tui.engine.run.session): a cancelled run stays, as a cancelled row.
    assert [r["status"] for r in csv.DictReader(out_csv.open())] == ["done", "cancelled"]
    lines = (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["status"] for line in lines] == ["done", "cancelled"]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)
    assert signal.getsignal(signal.SIGTERM) == before  # the CLI's handler is gone again


def test_ctrl_c_in_a_sweep_says_what_cancelled_the_run_and_ends_the_runs_in_their_order(monkeypatch, tmp_path,
                                                                                      compile_lab_home, capsys):
    """A new user's Ctrl-C in run 2 of 3 read only "cancelled", and the third run's "cancelled before it started"
    came above run 2's line."""
    _, hook = _signal_in_the_second_run(signal.SIGINT)
    _use_fake_worker(monkeypatch, behaviour="ok", hook=hook)
    monkeypatch.setenv("FAKE_WORKER_DELAY", "0.05")
    out_csv = tmp_path / "r.csv"
    code = cli.main(["sweep", "--param", "n=64,128,256", "--device", "cpu", "--iters", "50", "--block-size", "5",
                     "--csv", str(out_csv)])
    assert code == 128 + signal.SIGINT
    ended = [line for line in capsys.readouterr().err.splitlines() if "cancelled" in line]
    assert [line.split(" ", 1)[0] for line in ended] == ["[2/3]", "[-/3]"], ended
    assert "cancelled: stopped (Ctrl-C)" in ended[0] and ended[1].endswith("cancelled before it started")
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["status"], r["error"]) for r in rows] == [
        ("done", ""), ("cancelled", "stopped (Ctrl-C)"), ("cancelled", "cancelled before it started")]


def _table_text(records) -> str:
    console = Console(width=100, record=True, file=open(os.devnull, "w"))
    print_table(records, console)
    return console.export_text()


def test_a_launch_bound_run_shows_its_host_speedup_under_the_speedup():
    text = _table_text([cuda_run_record()])
    lines = [line for line in text.splitlines() if "0.86×" in line or "launch-bound" in line or "host 1." in line]
    assert len(lines) == 3, text
    # the device-time headline, the mark, then the host-inclusive figure, in that order
    assert "0.86×" in lines[0] and "launch-bound" in lines[1] and "host 1.31×" in lines[2]


def test_a_run_that_is_not_launch_bound_shows_no_host_figure():
    record = cuda_run_record(eager_host_ms=0.11)
    assert record.summary().launch_bound is False and record.summary().host_speedup is not None
    text = _table_text([record])
    assert "0.86×" in text
    assert "launch-bound" not in text and "host" not in text


@pytest.mark.slow
@pytest.mark.torch
def test_one_real_run_on_the_cpu(tmp_path, compile_lab_home):
    out_csv = tmp_path / "run.csv"
    code = cli.main(
        ["run", "--workload", "pointwise", "--param", "n=64", "--backend", "eager", "--device", "cpu",
         "--iters", "20", "--no-profile", "--csv", str(out_csv)]
    )  # fmt: skip
    assert code == 0
    (row,) = list(csv.DictReader(out_csv.open()))
    assert (row["workload"], row["backend"], row["status"]) == ("pointwise", "eager", "done")
    # at least the iterations asked for; then on towards the CPU's default 5% interval, for up to 1 s
    assert int(row["eager_n"]) >= 20 and int(row["compiled_n"]) == int(row["eager_n"])
    assert (compile_lab_home / "data" / "history.jsonl").exists()


@pytest.mark.slow
@pytest.mark.torch
def test_env_reports_torch_from_a_subprocess(capsys):
    assert cli.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "torch" in out and "C++ compiler" in out and "NVML" in out


def test_strict_exits_3_on_a_noisy_verdict_and_says_why(monkeypatch, tmp_path, compile_lab_home, capsys):
    _use_fake_worker(monkeypatch)
    out_csv = tmp_path / "r.csv"
    # Other tests may keep this machine's CPUs busy meanwhile: that check is not what this test is about.
    base = ["run", "--device", "cpu", "--iters", "40", "--block-size", "5", "--csv", str(out_csv),
            "--noise-limit", "max_other_cpu_cores=1000"]
    # The fake worker's times are steady: with its defaults the verdict is faster (eager 2 ms, compiled 1 ms).
    assert cli.main([*base, "--strict"]) == 0
    (row,) = list(csv.DictReader(out_csv.open()))
    assert (row["verdict"], row["noise_reasons"]) == ("faster", "")
    # A stall limit every sample meets (each "stalls", and leaving them out leaves no median): noisy, exit 3
    # under --strict, 0 without it.
    noisy = [*base, "--noise-limit", "stall_factor=0.000001"]
    assert cli.main([*noisy, "--strict"]) == 3
    out, err = capsys.readouterr()
    assert "--strict: run 1: noisy" in err
    assert "run 1: noisy: eager time: a stall" in out and "re-run on a quiet machine" in out
    (row,) = list(csv.DictReader(out_csv.open()))
    assert row["verdict"] == "noisy" and "moved the median" in row["noise_reasons"]
    assert cli.main(noisy) == 0


def test_strict_exits_3_on_a_compiled_output_that_failed_the_accuracy_check(monkeypatch, tmp_path,
                                                                            compile_lab_home, capsys):
    _use_fake_worker(monkeypatch)
    monkeypatch.setenv("FAKE_WORKER_ACCURACY", "fail")
    argv = ["run", "--device", "cpu", "--iters", "40", "--block-size", "5", "--noise-limit",
            "max_other_cpu_cores=1000"]
    assert cli.main([*argv, "--strict"]) == 3
    assert "--strict: run 1: accuracy fail" in capsys.readouterr().err
    assert cli.main(argv) == 0  # the run itself succeeded: its accuracy column and warning say the rest


def test_a_ctrl_c_while_the_exports_are_written_waits_until_they_are_whole(monkeypatch, tmp_path, compile_lab_home,
                                                                           capsys):
    import os
    import signal

    from tui.cli import run as cli_run

    _use_fake_worker(monkeypatch)
    real_export = cli_run._export

    def export_then_interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the exports begin: it used to cut them short
        return real_export(*args, **kwargs)

    monkeypatch.setattr(cli_run, "_export", export_then_interrupted)
    before = signal.getsignal(signal.SIGINT)  # the default's, or SIG_IGN in a background job
    (tmp_path / "out").mkdir()
    out_csv, out_json = tmp_path / "out" / "r.csv", tmp_path / "out" / "r.json"
    code = cli.main(["run", "--device", "cpu", "--iters", "20", "--block-size", "5", "--csv", str(out_csv),
                     "--json", str(out_json), "--quiet"])
    assert code == 128 + signal.SIGINT
    assert "signal 2 came while the results were written; they were written whole" in capsys.readouterr().err
    assert len(list(csv.DictReader(out_csv.open()))) == 1 and json.loads(out_json.read_text())["runs"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.csv", "r.json"]  # no temporary file left
    assert signal.getsignal(signal.SIGINT) == before  # put back


def test_a_bad_noise_limit_is_one_line_naming_the_allowed_names(capsys):
    assert cli.main(["run", "--noise-limit", "max_fun=2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--noise-limit:" in err[0] and "max_relative_iqr" in err[0]


def test_repeat_runs_each_configuration_in_fresh_processes_interleaved_one_row_each(
        monkeypatch, tmp_path, compile_lab_home, capsys):
    pids: list[int] = []
    _use_fake_worker(monkeypatch, hook=lambda event: pids.append(event.pid) if isinstance(event, Ready) else None)
    out_csv, out_json, raw = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "raw.csv"
    code = cli.main(
        ["sweep", "--param", "n=64,128", "--device", "cpu", "--iters", "20", "--block-size", "5", "--repeat", "3",
         "--csv", str(out_csv), "--json", str(out_json), "--raw-csv", str(raw), "--strict",
         "--noise-limit", "max_other_cpu_cores=1000"]
    )  # fmt: skip
    assert code == 0  # --strict: the groups' verdicts are confident (the fake worker's processes agree)
    assert len(set(pids)) == 6  # a fresh worker per run
    history = [json.loads(line) for line in (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()]
    # interleaved: every configuration's first process, then every second one, ...
    assert [(h["options"]["params"]["n"], h["repeat"]) for h in history] == [
        (64, 0), (128, 0), (64, 1), (128, 1), (64, 2), (128, 2)]
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["params"], r["repeats"], r["verdict"]) for r in rows] == [
        ("n=64", "3", "faster"),
        ("n=128", "3", "faster"),
    ]
    assert [r["group_id"] for r in rows] == [history[0]["run_id"], history[1]["run_id"]]
    assert all(r["speedup_xproc_ci_low"] and r["speedup_process_spread"] == "1" for r in rows)
    data = json.loads(out_json.read_text())
    assert len(data["runs"]) == 6 and [len(g["run_ids"]) for g in data["groups"]] == [3, 3]
    measured = [r for r in csv.DictReader(raw.open()) if r["stage"] == "measure"]
    assert len({r["run_id"] for r in measured}) == 6 and len(measured) == 6 * 2 * 20
    out = capsys.readouterr().out
    assert out.count("3 processes") == 2 and "spread 1.00×" in out


def test_repeat_auto_keeps_one_process_where_the_first_is_decisive(monkeypatch, tmp_path, compile_lab_home):
    _use_fake_worker(monkeypatch)  # the fake's CPU run reads about 2x faster: decisive
    out_csv = tmp_path / "r.csv"
    code = cli.main(["run", "--device", "cpu", "--iters", "20", "--block-size", "5", "--repeat", "auto",
                     "--csv", str(out_csv), "--quiet"])  # fmt: skip
    assert code == 0
    (row,) = list(csv.DictReader(out_csv.open()))
    assert (row["repeats"], row["speedup_xproc_ci_low"], row["verdict"]) == ("1", "", "faster")
    assert len((compile_lab_home / "data" / "history.jsonl").read_text().splitlines()) == 1


def test_the_repeat_default_is_auto_unless_the_user_sets_it():
    from tui.cli import build_parser, repeat_from_args

    parser = build_parser()
    assert repeat_from_args(parser.parse_args(["run"])) == "auto"
    assert repeat_from_args(parser.parse_args(["run", "--repeat", "1"])) == 1
    assert repeat_from_args(parser.parse_args(["sweep"])) == "auto"


def test_a_group_row_shows_its_processes_and_their_spread():
    from fakes.records import full_group
    from tui.engine.store.repeats import group_rows

    text = _table_text(group_rows(full_group(scales=(1.0, 1.06, 0.97))))
    assert "3 processes, spread 1.09×" in text and "(host 1.09×)" in text
    assert "[1.85, 2.02]" in text  # the interval across processes, under the pooled speedup


@pytest.mark.parametrize("command", ["run", "sweep", "tune", "env", "workloads", "prune", "history", "compare",
                                     "report", None])
def test_every_help_fits_an_80_column_terminal(command, monkeypatch, capsys):
    """argparse wraps to COLUMNS; a description written with its own line breaks must fit as well."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "--help"] if command else ["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]


def test_env_shows_an_interpreters_path_whole_at_80_columns():
    """``python (CLI)``'s note is the interpreter's path: at 80 columns it folds, never ends in ``…``."""
    import io

    from tui.cli.info import _EnvTable

    path = "/root/.pyenv/versions/3.11.7/envs/a-long-virtualenv-name/bin/python3.11"
    env = _EnvTable()
    env.row("python (CLI)", "3.11.7", path)
    out = io.StringIO()
    Console(file=out, width=80).print(env.table)
    text = out.getvalue()
    assert "…" not in text
    assert path in "".join(line.split("│")[3].strip() for line in text.splitlines() if line.count("│") == 4), text


def test_a_sweep_parameter_without_a_value_says_the_form_to_use(capsys):
    assert cli.main(["sweep", "--workload", "pointwise", "--param", "n", "--device", "cpu"]) == 2
    assert _error_lines(capsys) == ["compile-lab: error: --param: 'n' is not key=value[,value...] (allowed: key=value, "
                                    "e.g. n=512 or n=512,1024 to sweep it)"]


@pytest.mark.parametrize("command", [["run"], ["tune", "--budget", "60s"]])
def test_a_number_parameter_given_a_list_outside_sweep_says_a_sweep_takes_one(capsys, command):
    # "expected int, got '4,8'" alone, where README's flag list read as if run swept it too. A text parameter keeps
    # its commas (dynamic_shapes' batch_sizes=8,16; a model file's own text).
    args = [*command, "--workload", "mlp", "--param", "batch=4,8", "--device", "cpu"]
    assert cli.main(args) == 2
    assert _error_lines(capsys) == ["compile-lab: error: --param: batch: expected int from 1 to 1048576, got '4,8' "
                                    "(one value here; a sweep takes a list)"]


def test_a_parameter_that_is_not_a_number_names_its_range_and_a_limit_is_written_whole(capsys):
    """A tester's ``batch=abc`` said ``expected int`` without the range; the range read ``1.04858e+06``."""
    assert cli.main(["run", "--workload", "mlp", "--param", "batch=abc", "--device", "cpu"]) == 2
    assert _error_lines(capsys) == ["compile-lab: error: --param: batch: expected int from 1 to 1048576, got 'abc'"]
    assert cli.main(["run", "--workload", "mlp", "--param", "batch=99999999", "--device", "cpu"]) == 2
    assert _error_lines(capsys) == ["compile-lab: error: --param: batch: 99999999 is above the maximum 1048576"]


@pytest.mark.parametrize("typed, said", [
    (["run", "--itres", "20"], "unrecognized arguments: --itres 20 (--itres: did you mean --iters?)"),
    (["sweep", "--mdoe=default"], "unrecognized arguments: --mdoe=default (--mdoe: did you mean --mode?)"),
    (["run", "--zzz"], "unrecognized arguments: --zzz"),  # nothing near: no guess
    (["compare", "a.json", "b.json", "--itres", "2"], "unrecognized arguments: --itres 2"),  # compare takes no --iters
    (["--itres"], "unrecognized arguments: --itres"),  # nor does the app
    (["compare", "a.json", "b.json", "--treshold", "5"],
     "unrecognized arguments: --treshold 5 (--treshold: did you mean --threshold?)"),
])
def test_a_misspelt_flag_names_the_nearest_one(capsys, typed, said):
    assert cli.main(typed) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {said}"]


@pytest.mark.parametrize("flags, said", [
    (["--backend", "aot_eager", "--mode", "default,max-autotune"],
     "--mode: max-autotune only applies to the inductor backend (aot_eager ignores it)"),
    (["--backend", "aot_eager,eager", "--option", "freezing=true"],
     "--option: inductor options only apply to the inductor backend, not aot_eager"),
])
def test_a_sweep_refuses_a_mode_or_option_none_of_its_backends_reads(capsys, flags, said):
    # They were dropped from every run without a word (exit 0), where run refuses them; beside inductor another
    # backend still runs once without them (tests/test_sweep.py).
    assert cli.main(["sweep", "--workload", "mlp", "--device", "cpu", *flags]) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {said}"]


async def test_ctrl_c_starts_no_queued_run_when_the_running_one_ends_at_once():
    """A run waiting for the GPU's lock ends at once when cancelled: the signal handler cancelled it before the
    session was closing, and its end started the next queued run (a reviewer's race)."""
    import asyncio

    from tui.cli.run import _run_all
    from tui.cli.terminal import signals_stop
    from tui.engine.options import RunOptions
    from tui.engine.run.session import RunSession, SessionListener

    class Waiting:
        keep_spare = False

        async def run(self, record, on_event=None):
            await asyncio.sleep(60)  # cancelled at once, no worker to wait for
            return record

        async def aclose(self):
            return None

        def kill_all(self):
            return None

    class Heard(SessionListener):
        started: list[int] = []

        def run_started(self, record):
            self.started.append(record.options.iters)
            if len(self.started) == 1:
                asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    heard = Heard()
    session = RunSession(lambda lane: Waiting(), None, heard)
    stopped: list[int] = []
    with signals_stop(session, stopped, cancelled="stopped"):
        assert await _run_all(session, [RunOptions(device="cpu", iters=n) for n in (20, 30)], heard)
    assert heard.started == [20]
    assert [(r.options.iters, r.error_message) for r in session.records] == [
        (20, "stopped (Ctrl-C)"), (30, "cancelled before it started")]
