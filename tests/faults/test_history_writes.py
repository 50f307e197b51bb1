"""A run's history line is never lost silently, and never left half written (issue 24, item 2).

The disk refuses part way (full: ENOSPC after half the line; an I/O error at fsync): the history
keeps its bytes, the error names the file and the cause, the next append is whole. A history that
cannot be opened for writing (read-only): the CLI says so in one line naming the file and why, and
exits 4 (``HISTORY_NOT_SAVED``), its exports still written.

Tests run as root here, where permission bits stop nothing: a read-only file or a full disk is
simulated by making the refused call raise the error the kernel returns, for the history's file only.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from fault_helpers import FAKE_WORKER, csv_rows, ended_record
from tui import cli, paths
from tui.cli.run import HISTORY_NOT_SAVED
from tui.engine.store.history import History, HistoryError
from tui.engine.runner import WorkerRunner



def _is_history(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == str(paths.history_file())
    except OSError:
        return False


def _refuse(error_number: int) -> OSError:
    return OSError(error_number, os.strerror(error_number))


def _fill_the_disk(monkeypatch) -> list[int]:
    """From now on the history's writes: the first writes half of what it is given, the next finds the disk
    full. Returns the sizes each write was asked for."""
    real_write, calls = os.write, []

    def write(fd, data):
        if not _is_history(fd):
            return real_write(fd, data)
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise _refuse(errno.ENOSPC)

    monkeypatch.setattr(os, "write", write)
    return calls


def test_a_full_disk_mid_line_leaves_the_history_as_it_was(monkeypatch):
    history = History()
    first = ended_record()
    history.append(first)
    before = history.path.read_bytes()
    calls = _fill_the_disk(monkeypatch)
    with pytest.raises(HistoryError) as info:
        history.append(ended_record())
    assert str(info.value) == f"cannot append to {history.path}: {os.strerror(errno.ENOSPC)}"
    assert len(calls) == 2  # half the line went to the file before the disk said no
    assert history.path.read_bytes() == before  # ... and was cut back
    monkeypatch.undo()
    third = ended_record()
    history.append(third)
    records, problems = history.load()
    assert problems == [] and [r.run_id for r in records] == [first.run_id, third.run_id]


def test_an_io_error_at_fsync_leaves_the_history_as_it_was(monkeypatch):
    history = History()
    history.append(ended_record())
    before = history.path.read_bytes()
    real_fsync = os.fsync

    def fsync(fd):
        if _is_history(fd):
            raise _refuse(errno.EIO)
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(HistoryError, match=f"cannot append to {history.path}: {os.strerror(errno.EIO)}"):
        history.append(ended_record())
    assert history.path.read_bytes() == before


def test_a_read_only_history_is_one_line_in_the_cli_and_exit_code_4(tmp_path, monkeypatch, capsys):
    """``compile-lab run`` with history.jsonl read-only: it said nothing and exited 0; the run was not recorded."""
    History().append(ended_record())
    before = paths.history_file().read_bytes()
    real_open = os.open

    def refusing_open(path, flags, *args, **kwargs):
        if os.fspath(path) == str(paths.history_file()) and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    target = tmp_path / "runs.csv"

    code = cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--csv", str(target), "--quiet"])

    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == HISTORY_NOT_SAVED == 4
    [row] = csv_rows(target)  # the export is written all the same
    assert err == [f"compile-lab: error: run {row['run_id']} was not saved to the history: cannot append to "
                   f"{paths.history_file()}: {os.strerror(errno.EACCES)}"]
    assert paths.history_file().read_bytes() == before


def test_a_failed_run_and_a_history_that_cannot_be_written_exit_1(tmp_path, monkeypatch, capsys):
    """A failed run keeps exit code 1 (its meaning comes first); the history's line is said all the same."""
    paths.history_file().parent.mkdir(parents=True)
    paths.history_file().mkdir()  # a directory where the history should be
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "crash"}))
    code = cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"was not saved to the history: cannot append to {paths.history_file()}: Is a directory" in err
    assert Path(paths.history_file()).is_dir()
