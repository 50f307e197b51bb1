"""Traces on request, through the fake worker: --trace PATH (refused before anything runs when it is no
file an export may write), --torch-trace (a fresh worker with TORCH_TRACE, never the spare), --tlparse
(a fake tlparse on PATH), and the app's ``t``.

The fake worker acts as torch and the real worker do (tests/fakes/fake_worker.py): with TORCH_TRACE set
it writes a log there holding its pid; with ``trace`` it writes a merged ``trace.json`` into the
command's ``artifacts_dir``. tests/test_generated_code.py runs the real worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from fakes import fake_worker_argv
from tui import cli, paths
from tui.engine.explain.artifacts import artifact_paths, run_folder
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner
from tui.engine.runner.launch import launch_for

RUN = ["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--warmup", "0"]


@pytest.fixture
def runners(monkeypatch) -> list[WorkerRunner]:
    """The CLI on the fake worker; the runners it made (empty: nothing ran)."""
    made: list[WorkerRunner] = []

    def factory(keep_spare: bool, telemetry=None) -> WorkerRunner:
        runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=keep_spare, sample_host=False)
        made.append(runner)
        return runner

    monkeypatch.setattr(cli, "make_runner", factory)
    return made


def _err_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


# ----- --trace PATH: refused before anything runs ----------------------------------------------


def _targets(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, what the refusal says it is)."""
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    (tmp_path / "a_dir").mkdir()
    os.mkfifo(tmp_path / "pipe.json")
    history = paths.history_file()
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text("")
    return {
        "link": (str(tmp_path / "link.json"), "is a symbolic link"),
        "directory": (str(tmp_path / "a_dir"), "is a directory"),
        "pipe": (str(tmp_path / "pipe.json"), "is a named pipe (FIFO)"),
        "history": (str(history), "is compile-lab's history file"),
        "runs": (str(paths.runs_dir() / "x.json"), "is in compile-lab's runs directory"),
    }


@pytest.mark.parametrize("name", ["link", "directory", "pipe", "history", "runs"])
def test_run_refuses_a_trace_path_no_export_may_write(tmp_path, runners, capsys, name):
    path, what = _targets(tmp_path)[name]
    assert cli.main([*RUN, "--trace", path]) == 2
    [line] = _err_lines(capsys)
    assert line.startswith(f"compile-lab: error: --trace: {path} {what}") and "(allowed: " in line and runners == []
    assert not paths.runs_dir().exists() or not any(paths.runs_dir().iterdir())


def test_sweep_refuses_a_trace_path_that_is_no_directory_and_run_refuses_trace_with_no_profile(tmp_path, runners,
                                                                                                capsys):
    (tmp_path / "file.json").write_text("{}")
    (tmp_path / "dir_link").symlink_to(tmp_path)
    for path, what in ((tmp_path / "file.json", "a regular file"), (tmp_path / "dir_link", "a symbolic link"),
                       (paths.runs_dir(), "in compile-lab's runs directory")):
        assert cli.main(["sweep", "--device", "cpu", "--trace", str(path)]) == 2
        [line] = _err_lines(capsys)
        assert line.startswith(f"compile-lab: error: --trace: {path} is {what}") and "(allowed: a directory" in line
    assert cli.main([*RUN, "--trace", str(tmp_path / "t.json"), "--no-profile"]) == 2
    assert _err_lines(capsys) == ["compile-lab: error: --trace: records the profile pass, which --no-profile "
                                  "(profile=false) turns off (allowed: trace with the profile pass on)"]
    assert cli.main([*RUN, "--trace", str(tmp_path / "same.json"), "--json", str(tmp_path / "same.json")]) == 2
    assert "both name" in _err_lines(capsys)[0] and runners == []


# ----- --trace PATH: written ------------------------------------------------------------------


def _sides(path: Path) -> set[str]:
    trace = json.loads(path.read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    return {name.split(":")[0] for name in names}


def test_run_trace_copies_the_runs_trace_to_the_path(tmp_path, runners, capsys):
    target = tmp_path / "out" / "trace.json"
    target.parent.mkdir()
    assert cli.main([*RUN, "--trace", str(target)]) == 0
    assert _sides(target) == {"eager", "compiled"}
    assert f"wrote {target} (the profile pass, eager and compiled; open it in ui.perfetto.dev)" in _err_lines(capsys)
    [record] = History().load()[0]
    kept = artifact_paths(record)
    assert record.options.trace and kept.trace == str(run_folder(record.run_id) / "trace.json")
    assert Path(kept.trace).read_bytes() == target.read_bytes()


def test_sweep_trace_writes_one_file_per_configuration_into_a_directory(tmp_path, runners, capsys):
    target = tmp_path / "traces"
    assert cli.main(["sweep", "--device", "cpu", "--iters", "10", "--block-size", "5", "--warmup", "0",
                     "--mode", "default,max-autotune", "--trace", str(target), "--quiet"]) == 0
    files = sorted(p.name for p in target.iterdir())
    assert files == ["01-pointwise-n=512-inductor-dyn=auto-fp32.json",
                     "02-pointwise-n=512-inductor-max-autotune-dyn=auto-fp32.json"]
    assert all(_sides(target / name) == {"eager", "compiled"} for name in files)


# ----- --torch-trace: a fresh worker with TORCH_TRACE, never the spare -------------------------


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def test_a_torch_trace_run_gets_a_fresh_worker_with_the_env_var_and_the_spare_waits_for_the_next():
    async def scenario() -> None:
        runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=True, sample_host=False)
        try:
            plain = RunOptions(iters=10, block_size=5, warmup=0).validated()
            first = await runner.run(RunRecord.new(plain))
            spare = runner.spare_pid
            assert first.status == "done" and spare is not None
            traced = RunRecord.new(RunOptions(iters=10, block_size=5, warmup=0, torch_trace=True).validated())
            await runner.run(traced)
            assert traced.status == "done" and runner.last_pid not in (None, spare)
            log = run_folder(traced.run_id) / "torch_trace" / "dedicated_log_torch_trace_fake.log"
            assert json.loads(log.read_text()) == {"pid": runner.last_pid}  # TORCH_TRACE was set in that worker
            assert traced.artifacts.torch_trace_dir == "torch_trace" and artifact_paths(traced).torch_trace
            assert runner.spare_pid == spare and "TORCH_TRACE" not in _environ(spare)  # kept, and clean
            third = await runner.run(RunRecord.new(plain))
            assert third.status == "done" and runner.last_pid == spare  # the next plain run takes it
        finally:
            await runner.aclose()

    asyncio.run(scenario())


def test_launch_sets_torch_trace_only_when_asked(tmp_path):
    options = RunOptions().validated()
    _argv, env, key = launch_for(options, None, None, {})
    _argv, traced_env, traced_key = launch_for(options, None, None, {}, torch_trace=str(tmp_path))
    assert traced_env["TORCH_TRACE"] == str(tmp_path) and env.get("TORCH_TRACE") == os.environ.get("TORCH_TRACE")
    assert key != traced_key


# ----- --tlparse ------------------------------------------------------------------------------


def _fake_tlparse(directory: Path, exit_code: int = 0) -> None:
    """A tlparse on PATH that writes OUT/index.html naming its input (or fails)."""
    script = directory / "tlparse"
    script.write_text(f"""#!{sys.executable}
import pathlib, sys
args = sys.argv[1:]
if {exit_code}:
    print("error: fake tlparse failed", file=sys.stderr)
    sys.exit({exit_code})
out = pathlib.Path(args[args.index("-o") + 1])
assert "--latest" in args and "--no-browser" in args and "--overwrite" in args
out.mkdir(parents=True, exist_ok=True)
(out / "index.html").write_text("<html>" + args[0] + "</html>")
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_tlparse_runs_on_the_runs_logs_when_it_is_on_path(tmp_path, runners, capsys, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tlparse(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert cli.main([*RUN, "--tlparse", "--quiet"]) == 0
    [record] = History().load()[0]
    report = run_folder(record.run_id) / "tlparse" / "index.html"
    assert f"run 1: tlparse report {report}" in _err_lines(capsys)
    assert report.read_text() == f"<html>{run_folder(record.run_id) / 'torch_trace'}</html>"
    assert record.options.torch_trace and artifact_paths(record).tlparse_report == str(report)


def test_without_tlparse_the_logs_path_is_given_and_a_failing_tlparse_says_why(tmp_path, runners, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main([*RUN, "--tlparse", "--quiet"]) == 0
    [line] = [x for x in _err_lines(capsys) if x.startswith("run 1:")]
    assert line.startswith("run 1: no tlparse report: tlparse is not on PATH (pip install tlparse); the logs are in ")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tlparse(bin_dir, exit_code=3)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert cli.main([*RUN, "--torch-trace", "--tlparse", "--quiet"]) == 0
    assert "run 1: no tlparse report: tlparse exited with code 3: error: fake tlparse failed" in _err_lines(capsys)
    assert cli.main([*RUN, "--torch-trace"]) == 0
    assert any(x.startswith("run 1: TORCH_TRACE logs in ") for x in _err_lines(capsys))


def test_a_runs_first_row_traces_to_the_path_given_and_a_later_row_to_no_file_it_was_not_given(tmp_path):
    """``run --each-gpu-kind --trace t.json`` has a row a kind: only the first row's trace goes to t.json (a later
    row's stays in its run folder, and the CLI says where), so no trace replaces another or a file not named."""
    import argparse

    from tui.cli.artifacts import trace_target

    args = argparse.Namespace(command="run", trace=str(tmp_path / "t.json"))
    row = RunRecord.new(RunOptions().validated())
    assert [trace_target(row, n, args) for n in (1, 2, 3)] == [tmp_path / "t.json", None, None]


def test_a_sweeps_trace_never_replaces_a_file_in_the_folder_it_was_given(tmp_path):
    """``sweep --trace DIR`` names its files: a name already there (the last sweep's trace, a file of the user's,
    a link) gets ``-2``, ``-3``, ... and the file stays as it was."""
    import argparse

    from tui.cli.artifacts import trace_target

    args = argparse.Namespace(command="sweep", trace=str(tmp_path))
    row = RunRecord.new(RunOptions().validated())
    first = trace_target(row, 1, args)
    assert first.parent == tmp_path and first.name.startswith("01-") and first.suffix == ".json"
    first.write_text("the user's notes")
    second = trace_target(row, 1, args)
    assert second == first.with_name(first.stem + "-2.json")
    second.symlink_to(tmp_path / "nowhere")  # a dangling link takes its name too
    assert trace_target(row, 1, args) == first.with_name(first.stem + "-3.json")
    assert first.read_text() == "the user's notes"


def test_a_repeat_rows_missing_trace_is_explained_by_its_processes_own_warning():
    # A --repeat row's warnings name their processes ("process 1 of 2: trace: ..."); the reason a trace is missing
    # is read from the processes' own lines, not looked for bare in the row's
    from fakes.records import full_group
    from tui.cli.artifacts import _no_trace_why
    from tui.engine.store.repeats import GroupRecord

    records = full_group(scales=(1.0, 1.02))
    for record in records:
        record.warnings.append("trace: the profiler wrote nothing")
        record.profile = None
    row = GroupRecord.of(records)
    assert any(w.startswith("process 1 of 2: trace:") for w in row.warnings)
    assert _no_trace_why(row) == "trace: the profiler wrote nothing"
