"""The CLI's ending (trust matrix, lines 2 and 3): stopped early it touches no file; its
terminal gone, it still writes the exports and the history.

2: a run stopped (Ctrl-C, SIGTERM) before any run was done or failed leaves an existing
``--csv``/``--json``/``--raw-csv`` as it was (bytes and inode), creates none, prints no
"wrote", and says on stderr that nothing was written; a failed run is something to write.

3: the terminal closed mid-sweep. The real thing: the CLI in a process of its own
(``cli_harness.py``) whose stdout and stderr are a pseudo-terminal, its controlling one; the
test closes the terminal's other end (the kernel hangs it up: SIGHUP, and EIO on every write)
and sends SIGHUP itself too, as a shell does. Exit code 129, the exports hold the runs that
ended, the history has them. In-process: a stdout and stderr that fail every write, with an
export that fails too: the other exports are still written.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from fault_helpers import FAKE_WORKER, alive, csv_rows, history_lines
from tui import cli
from tui.engine import atomic
from tui.engine.protocol import Ready
from tui.engine.runner import WorkerRunner

HARNESS = Path(__file__).resolve().with_name("cli_harness.py")
OLD = b"previous export\n"
WAIT_S = 30.0
NOTHING_WRITTEN = "compile-lab: no run ended, so no export was written"


def _outputs(tmp_path: Path) -> dict[str, Path]:
    return {"--csv": tmp_path / "r.csv", "--json": tmp_path / "r.json", "--raw-csv": tmp_path / "raw.csv"}


def _flags(outputs: dict[str, Path]) -> list[str]:
    return [part for flag, path in outputs.items() for part in (flag, str(path))]


def _wait_for(predicate: Any, within: float, what: str) -> Any:
    """Poll ``predicate`` against a deadline (a file written by another process sends no event)."""
    deadline = time.monotonic() + within
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


def _start_count(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _started_pids(log: Path) -> list[int]:
    return [int(line.split()[0]) for line in log.read_text().splitlines()] if log.exists() else []


# ----------------------------------------------------------------------------------------------
# 2. stopped before anything ended: no file touched


def _hooked_cli(monkeypatch, behaviours: list[str], hook) -> None:
    """The CLI on the fake worker: run N behaves as ``behaviours[N]`` (the last repeats); ``hook`` sees every event.

    No spare worker, so each run's worker starts with its own behaviour. A ``hang`` run never
    ends by itself: a signal sent on its events finds it running, however slow the machine.
    """

    class HookedRunner(WorkerRunner):
        started = 0

        async def run(self, record, on_event=None):
            self.env = {"FAKE_WORKER_BEHAVIOUR": behaviours[min(self.started, len(behaviours) - 1)]}
            self.started += 1

            def forward(event):
                hook(event)
                if on_event is not None:
                    on_event(event)

            return await super().run(record, forward)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: HookedRunner(
        worker_argv=FAKE_WORKER, keep_spare=False))


@pytest.mark.parametrize("existing", [True, False], ids=["existing-files", "no-files"])
def test_sigterm_before_any_run_ended_touches_no_export(tmp_path, monkeypatch, capsys, existing):
    """SIGTERM while the first run is under way: its cancelled row is no reason to write anything."""
    outputs = _outputs(tmp_path)
    before = {}
    if existing:
        for path in outputs.values():
            path.write_bytes(OLD)
        before = {path: (path.read_bytes(), path.stat().st_ino) for path in outputs.values()}
    _hooked_cli(monkeypatch, ["hang"], lambda event: isinstance(event, Ready) and os.kill(os.getpid(), signal.SIGTERM))
    code = cli.main(["sweep", "--param", "n=64,128", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     *_flags(outputs)])  # fmt: skip
    assert code == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert "wrote" not in err
    assert (
        f"{NOTHING_WRITTEN} (--csv {outputs['--csv']}, --json {outputs['--json']}, --raw-csv {outputs['--raw-csv']}); "
        "an existing file is left as it was" in err.splitlines()
    )
    assert {path: (path.read_bytes(), path.stat().st_ino) for path in outputs.values() if path.exists()} == before
    assert {line["status"] for line in history_lines()} <= {"cancelled"}  # the stopped run, the queued one


def test_a_failed_run_before_the_stop_is_something_to_write(tmp_path, monkeypatch, capsys):
    """The neighbour: the first run failed, the second is stopped: both rows are written."""
    outputs = _outputs(tmp_path)
    outputs["--csv"].write_bytes(OLD)
    ready: list[Ready] = []

    def hook(event):
        if isinstance(event, Ready):
            ready.append(event)
            if len(ready) == 2:
                os.kill(os.getpid(), signal.SIGTERM)

    _hooked_cli(monkeypatch, ["fail", "hang"], hook)
    code = cli.main(["sweep", "--param", "n=64,128", "--device", "cpu", "--quiet", *_flags(outputs)])
    assert code == 128 + signal.SIGTERM
    assert [row["status"] for row in csv_rows(outputs["--csv"])] == ["failed", "cancelled"]
    assert len(json.loads(outputs["--json"].read_text())["runs"]) == 2
    assert NOTHING_WRITTEN not in capsys.readouterr().err


def test_ctrl_c_before_any_run_ended_leaves_the_files_and_exits_130(tmp_path, compile_lab_home):
    """A real Ctrl-C (SIGINT to the CLI's process) while its only worker is still starting."""
    outputs = _outputs(tmp_path)
    for path in outputs.values():
        path.write_bytes(OLD)
    before = {path: (path.read_bytes(), path.stat().st_ino) for path in outputs.values()}
    log = tmp_path / "starts"
    env = {**os.environ, "COMPILE_LAB_HOME": str(compile_lab_home), "FAKE_WORKER_READY_DELAY": "600",
           "FAKE_WORKER_START_LOG": str(log)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, str(HARNESS), "run", "--device", "cpu", *_flags(outputs)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        _wait_for(lambda: _start_count(log) >= 1, WAIT_S, "the worker to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    text = err.decode()
    assert "wrote" not in text and "Traceback" not in text
    assert f"{NOTHING_WRITTEN} (--csv {outputs['--csv']}" in text
    assert "compile-lab: stopped by Ctrl-C; 0 run(s) ended before it" in text
    assert {path: (path.read_bytes(), path.stat().st_ino) for path in outputs.values()} == before
    _wait_for(lambda: not any(alive(pid) for pid in _started_pids(log)), 2.0, "the worker to be gone")


# ----------------------------------------------------------------------------------------------
# 3. the terminal goes away


def test_closing_the_terminal_mid_sweep_still_writes_the_exports_and_the_history(tmp_path, compile_lab_home):
    """A sweep of 3 slow runs; once the first is in the history the terminal is closed, then SIGHUP: exit 129."""
    outputs = _outputs(tmp_path)
    outputs["--csv"].write_bytes(OLD)
    log = tmp_path / "starts"
    # each run measures 4 rounds 0.3 s apart: the second is far from done when the terminal goes
    env = {**os.environ, "COMPILE_LAB_HOME": str(compile_lab_home), "FAKE_WORKER_BEHAVIOUR": "slow",
           "FAKE_WORKER_DELAY": "0.3", "FAKE_WORKER_START_LOG": str(log), "CLI_HARNESS_CTTY": "1"}  # fmt: skip
    master, terminal = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, str(HARNESS), "sweep", "--param", "n=64,128,256", "--device", "cpu", "--iters", "20",
         "--block-size", "5", *_flags(outputs)],
        stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    shown = bytearray()
    try:
        deadline = time.monotonic() + WAIT_S
        while not history_lines() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                shown += os.read(master, 65536)  # what the terminal shows: the progress
        assert len(history_lines()) == 1, bytes(shown[-400:]).decode(errors="replace")
        assert b"[1/3]" in shown  # the progress was on the terminal
    finally:
        os.close(master)  # the terminal is gone: hung up, every write to it fails with EIO
    try:
        proc.send_signal(signal.SIGHUP)  # and the shell's SIGHUP, as when a terminal window closes
        code = proc.wait(timeout=WAIT_S)
    finally:
        proc.kill()
    assert code == 128 + signal.SIGHUP
    history = history_lines()
    statuses = [line["status"] for line in history]
    assert statuses in (["done", "cancelled", "cancelled"], ["done", "done", "cancelled"]), statuses
    rows = csv_rows(outputs["--csv"])
    assert {row["run_id"]: row["status"] for row in rows} == {line["run_id"]: line["status"] for line in history}
    assert [row["params"] for row in rows] == ["n=64", "n=128", "n=256"]  # the sweep's order
    assert [run["run_id"] for run in json.loads(outputs["--json"].read_text())["runs"]] == [r["run_id"] for r in rows]
    raw = csv_rows(outputs["--raw-csv"])
    done = [line["run_id"] for line in history if line["status"] == "done"]
    assert sum(row["stage"] == "measure" and row["run_id"] in done for row in raw) == len(done) * 2 * 20
    _wait_for(lambda: not any(alive(pid) for pid in _started_pids(log)), 2.0, "the workers to be gone")


class _GoneTerminal:
    """A stdout or stderr whose terminal was closed: every write and flush fails with EIO."""

    def __init__(self) -> None:
        self.attempts = 0

    def write(self, text: str) -> int:
        self.attempts += 1
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    def flush(self) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    def isatty(self) -> bool:
        return True  # so the progress is drawn, as on a terminal

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "no file descriptor")

    encoding = "utf-8"


@pytest.mark.parametrize("quiet", [False, True], ids=["progress-and-table", "quiet"])
def test_no_write_to_a_gone_terminal_stops_an_export(tmp_path, monkeypatch, quiet):
    """Every write fails; one export fails too (its error line cannot be shown): the others are written."""
    out, err = _GoneTerminal(), _GoneTerminal()
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "fail"}))
    full = tmp_path / "full"  # the disk under it fills up by the end of the sweep: the CSV's write fails
    full.mkdir()
    outputs = {"--csv": full / "r.csv", "--json": tmp_path / "r.json", "--raw-csv": tmp_path / "raw.csv"}
    argv = ["sweep", "--param", "n=64,128", "--device", "cpu", *_flags(outputs)] + (["--quiet"] if quiet else [])
    real_mkstemp = atomic.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if Path(dir) == full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(atomic, "tempfile", types.SimpleNamespace(mkstemp=mkstemp))
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        code = cli.main(argv)
    assert code == 1
    assert err.attempts > 0  # it did try to say things: the export's error at least
    assert not outputs["--csv"].exists()
    assert [run["status"] for run in json.loads(outputs["--json"].read_text())["runs"]] == ["failed", "failed"]
    assert outputs["--raw-csv"].exists()
    assert [line["status"] for line in history_lines()] == ["failed", "failed"]
