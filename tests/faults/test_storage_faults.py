"""Exports and the history when the disk says no (matrix lines 9 and 10), engine and app.

The engine's own tests cover most of it (``tests/test_export.py``: a missing directory, a
parent that is a file, a full disk while writing and at fsync; ``tests/test_history.py``: torn,
garbage and other-schema lines, an unreadable file, loading never modifies the file). Here:
a read-only target, and the app's side of every case — one error line, the old file untouched,
the app still running, and the runs still in the history and in the next export.

Tests run as root here, where permission bits stop nothing: a read-only or unreadable file
is simulated by making the call that would be refused raise the error the kernel returns.
"""

from __future__ import annotations

import errno
import json
import os
import types
from pathlib import Path

import pytest

from app_helpers import raised_notices, wait_until
from fault_helpers import FAKE_WORKER, csv_rows, ended_record, files_in, history_lines
from tui import cli, paths
from tui.app.components.dialogs import ConfirmScreen
from tui.engine import atomic
from tui.engine.store.export import ExportError, write_csv
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.runner import WorkerRunner

SIZE = (160, 48)
OLD_EXPORT = b"run_id,timestamp,status\nan earlier export\n"  # compile-lab's own: replaced unasked



def _refusing(error_number: int):
    """A stand-in for a call the kernel refuses with ``error_number``."""

    def refuse(*args, **kwargs):
        raise OSError(error_number, os.strerror(error_number))

    return refuse


# ----------------------------------------------------------------------------------------------
# 9. export


@pytest.mark.parametrize("error_number", [errno.EROFS, errno.EACCES], ids=["read-only-fs", "no-permission"])
def test_a_target_that_cannot_be_written_leaves_the_old_file(tmp_path, monkeypatch, error_number):
    """The temporary file cannot be created next to the target: one line naming both, the old file intact."""
    target = tmp_path / "runs.csv"
    target.write_bytes(OLD_EXPORT)
    monkeypatch.setattr(atomic, "tempfile", types.SimpleNamespace(mkstemp=_refusing(error_number)))
    with pytest.raises(ExportError) as info:
        write_csv([ended_record()], target)
    assert str(info.value) == f"cannot write {target}: {os.strerror(error_number)}"
    assert target.read_bytes() == OLD_EXPORT and files_in(tmp_path) == ["runs.csv"]


def _new(app, seen: set[str]) -> list:
    """The app's notifications that are not among ``seen`` (identities)."""
    return [n for n in raised_notices(app) if n.identity not in seen]


async def test_a_refused_export_in_the_app_is_one_error_line_and_nothing_is_lost(make_app, tmp_path, monkeypatch):
    """The app says why in one line, keeps the old file and goes on; the next export has every run.

    One app meets each refusal in turn (a read-only file system, a full disk, a directory that does not exist):
    each is the export's one path to a refusal, and after each the app still works.
    """
    reports, missing = tmp_path / "reports", tmp_path / "missing"
    reports.mkdir()
    target = reports / "report.csv"
    target.write_bytes(OLD_EXPORT)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        (first,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: first.finished and app.settled, what="the first run")
        for refusal, errno_, message in (
            ("tempfile", errno.EROFS, f"cannot write {target}: Read-only file system"),
            ("write", errno.ENOSPC, f"cannot write {target}: No space left on device"),
        ):
            seen = {n.identity for n in raised_notices(app)}
            with monkeypatch.context() as patch:
                if refusal == "tempfile":
                    patch.setattr(atomic, "tempfile", types.SimpleNamespace(mkstemp=_refusing(errno_)))
                else:
                    patch.setattr(atomic._FdWriter, "write", _refusing(errno_))
                app._export(str(target))
                await wait_until(pilot, lambda seen=seen: any(n.title == "Export failed"
                                                              for n in _new(app, seen)), what="error")
            (error,) = [n for n in _new(app, seen) if n.title == "Export failed"]
            assert error.severity == "error" and error.message == message
            assert target.read_bytes() == OLD_EXPORT and files_in(reports) == ["report.csv"]
        # a directory that does not exist: the app asks to make it (issue 14 item 9); No leaves everything as it was
        seen = {n.identity for n in raised_notices(app)}
        app._export(str(missing / "report.csv"))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="answered")
        assert not [n for n in _new(app, seen) if n.title == "Export failed"] and not missing.exists()
        # the app goes on: the next run, then exports that work
        (second,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: second.finished and app.settled, what="the next run")
        missing.mkdir()
        for directory in (reports, missing):
            seen = {n.identity for n in raised_notices(app)}
            app._export(str(directory / "report.csv"))
            await wait_until(pilot, lambda seen=seen: any(n.title == "Exported" for n in _new(app, seen)),
                             what="the export")
    for directory in (reports, missing):
        assert [r["run_id"] for r in csv_rows(directory / "report.csv")] == [first.run_id, second.run_id]
    assert [line["run_id"] for line in history_lines()] == [first.run_id, second.run_id]


def test_a_refused_export_in_the_cli_is_one_error_line_exit_1_and_the_run_is_kept(tmp_path, monkeypatch, capsys):
    """``--csv`` onto a disk that fills up by the end of the run: the run still ends in the history; one error
    line; exit code 1. (A missing or read-only directory is refused before anything runs:
    tests/faults/test_output_dirs.py.)"""
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    directory = tmp_path / "reports"
    directory.mkdir()
    target = directory / "runs.csv"
    real_mkstemp = atomic.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if Path(dir) == directory:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(atomic, "tempfile", types.SimpleNamespace(mkstemp=mkstemp))
    assert (
        cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--csv", str(target), "--quiet"]) == 1
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert errors == [f"compile-lab: error: --csv: cannot write {target}: {os.strerror(errno.ENOSPC)}"]
    assert [line["status"] for line in history_lines()] == ["done"] and not target.exists()


# ----------------------------------------------------------------------------------------------
# 10. the history


def _damaged_history() -> tuple[list[str], bytes]:
    """Two good runs, a garbage line, an older-schema run and a torn last line; (readable ids, bytes)."""
    history = History()
    good = [ended_record(2.0), ended_record(3.0)]
    history.append(good[0])
    older = {**json.loads(history.path.read_bytes()), "run_id": "20240101-000000-0a1d00", "samples_file": None}
    del older["schema"]  # the first history lines had no schema field
    with open(history.path, "ab") as handle:
        handle.write(b"\x00\xff not json at all\n")
        handle.write(json.dumps(older).encode() + b"\n")
    history.append(good[1])
    with open(history.path, "ab") as handle:
        handle.write(b'{"schema": 1, "run_id": "torn", "sta')  # the app died mid-write
    return [good[0].run_id, older["run_id"], good[1].run_id], history.path.read_bytes()


async def test_a_damaged_history_loads_what_it_can_says_the_rest_and_is_never_rewritten(make_app, tmp_path):
    """Garbage, torn and older-schema lines: the readable runs load, one warning, the file only ever grows."""
    readable, before = _damaged_history()
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: app.table.row_count == 3, what="the readable runs")
        assert app.table.run_ids == readable
        await wait_until(pilot, lambda: any(n.title == "History" for n in raised_notices(app)), what="the warning")
        (warning,) = [n for n in raised_notices(app) if n.title == "History"]
        assert warning.severity == "warning"
        assert warning.message == f"{paths.history_file()} line 2: not valid JSON, skipped (+2 more)"
        assert paths.history_file().read_bytes() == before  # reading changed nothing
        (new,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: new.finished and app.settled, what="a new run")
        app._export(str(tmp_path / "all.csv"))
        await wait_until(pilot, lambda: (tmp_path / "all.json").exists(), what="the export")
    after = paths.history_file().read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 2  # ends the torn line, appends
    records, problems = History().load()
    assert [r.run_id for r in records] == readable + [new.run_id]
    assert [r["run_id"] for r in csv_rows(tmp_path / "all.csv")] == readable + [new.run_id]


class _Unreadable(type(Path())):
    """A path whose reading the kernel refuses (what ``chmod 000`` does to anyone but root)."""

    def read_bytes(self):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    def open(self, *args, **kwargs):  # the history is streamed (History.iter_load)
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))


@pytest.mark.parametrize("case", ["no-permission", "a-directory"])
async def test_an_unreadable_history_is_a_warning_and_the_app_goes_on(make_app, case):
    """The history cannot be read: one warning naming it; runs still run; nothing overwrites the file."""
    history = History()
    if case == "no-permission":
        history.append(ended_record())
        before = history.path.read_bytes()
        history.path = _Unreadable(history.path)
        cause = "Permission denied"
    else:
        history.path.mkdir(parents=True)
        cause = "Is a directory"
    app = make_app(history=history)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: any(n.title == "History" for n in raised_notices(app)), what="the warning")
        assert [n.message for n in raised_notices(app) if n.title == "History"] == [
            f"cannot read {history.path}: {cause}"
        ]
        (run,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: run.finished and app.settled, what="a run")
        assert run.status == "done" and app.table.run_ids == [run.run_id]
        saved = [n.message for n in raised_notices(app) if n.title == "History" and "not saved" in n.message]
    if case == "no-permission":
        assert not saved
        after = Path(history.path).read_bytes()
        assert after.startswith(before) and after.count(b"\n") == 2
    else:
        assert len(saved) == 1 and saved[0].startswith(f"run {run.run_id} was not saved to the history: ")
        assert history.path.is_dir() and not any(history.path.iterdir())
