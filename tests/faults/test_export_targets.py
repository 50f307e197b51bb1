"""Exports write only regular files (trust matrix, lines 1.1 to 1.3): what a path can be, refused.

Every target is made here, in ``tmp_path``: a symbolic link (to a file, to a directory, and
dangling), a named pipe, a socket, a directory, a character device (``mknod``, only as root,
with /dev/null's numbers, so even a write that got through would land nowhere), and
compile-lab's own data files under the test's ``COMPILE_LAB_HOME``. Nothing here touches the
real ``/dev`` or the user's data dir.

For each refusal: one line naming the flag (CLI) or the path (engine), what it is and what is
allowed; exit code 2 and nothing run (no worker started, no history line) in the CLI; the target
unchanged (its type, inode, bytes or link text) and no temporary file left next to it. Every
call runs under a deadline, so an export that opened a named pipe would fail the test, not hang it.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fault_helpers import FAKE_WORKER, csv_rows, ended_record, files_in, history_lines, returns_within
from tui import cli, paths
from tui.engine import atomic
from tui.engine.store import export
from tui.engine.store.export import ExportTargetError, write_csv, write_json, write_raw_csv
from tui.engine.options import RunOptions
from tui.engine.runner import WorkerRunner

OLD = b"previous export\n"
ALLOWED = "(allowed: a regular file, or a new file in an existing directory)"
OUTSIDE_DATA = "(allowed: a file outside compile-lab's history, runs, locks and config)"
DEADLINE_S = 20.0
WRITERS = {"--csv": write_csv, "--json": write_json, "--raw-csv": write_raw_csv}




# ----------------------------------------------------------------------------------------------
# the targets


def _snapshot(path: Path) -> tuple:
    """What must not change: type, inode, device numbers, and the bytes or the link text."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        content: Any = os.readlink(path)
    elif stat.S_ISREG(info.st_mode):
        content = path.read_bytes()
    elif stat.S_ISDIR(info.st_mode):
        content = sorted(os.listdir(path))
    else:
        content = None
    return stat.S_IFMT(info.st_mode), info.st_ino, info.st_rdev, content


def _make(kind: str, tmp_path: Path, holder: list) -> tuple[Path, str]:
    """Make a target of ``kind`` in tmp_path (or in the test's compile-lab home); (path, what the error says)."""
    if kind == "link-to-file":
        (tmp_path / "real.csv").write_bytes(OLD)
        (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
        return tmp_path / "link.csv", f"is a symbolic link {ALLOWED}"
    if kind == "dangling-link":
        (tmp_path / "dangling.csv").symlink_to(tmp_path / "nowhere" / "x.csv")
        return tmp_path / "dangling.csv", f"is a symbolic link {ALLOWED}"
    if kind == "link-to-dir":
        (tmp_path / "realdir").mkdir()
        (tmp_path / "dirlink").symlink_to(tmp_path / "realdir", target_is_directory=True)
        return tmp_path / "dirlink", f"is a symbolic link {ALLOWED}"
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe.csv")
        return tmp_path / "pipe.csv", f"is a named pipe (FIFO) {ALLOWED}"
    if kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        holder.append(server)
        os.chdir(tmp_path)  # a relative name: tmp_path may be longer than a socket address allows
        server.bind("sock.csv")
        return tmp_path / "sock.csv", f"is a socket {ALLOWED}"
    if kind == "directory":
        (tmp_path / "out.csv").mkdir()
        (tmp_path / "out.csv" / "inside").write_bytes(OLD)
        return tmp_path / "out.csv", f"is a directory {ALLOWED}"
    if kind == "char-device":
        if os.geteuid() != 0:
            pytest.skip("mknod of a character device needs root (CI runs as root)")
        os.mknod(tmp_path / "null.csv", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
        return tmp_path / "null.csv", f"is a character device {ALLOWED}"
    if kind == "history-file":
        paths.history_file().parent.mkdir(parents=True)
        paths.history_file().write_bytes(b'{"schema": 1, "run_id": "kept"}\n')
        return paths.history_file(), f"is compile-lab's history file {OUTSIDE_DATA}"
    if kind == "history-not-yet-made":
        paths.data_dir().mkdir(parents=True)  # its directory is there: only the check can refuse
        return paths.history_file(), f"is compile-lab's history file {OUTSIDE_DATA}"
    if kind == "history-through-linked-dir":
        paths.history_file().parent.mkdir(parents=True)
        paths.history_file().write_bytes(OLD)
        (tmp_path / "data-link").symlink_to(paths.data_dir(), target_is_directory=True)
        return tmp_path / "data-link" / "history.jsonl", f"is compile-lab's history file {OUTSIDE_DATA}"
    if kind == "runs-file":
        paths.runs_dir().mkdir(parents=True)
        (paths.runs_dir() / "20240101-000000-abcdef.json").write_bytes(OLD)
        return (
            paths.runs_dir() / "20240101-000000-abcdef.json",
            f"is in compile-lab's runs directory ({paths.runs_dir()}) {OUTSIDE_DATA}",
        )
    if kind == "new-file-in-runs":
        paths.runs_dir().mkdir(parents=True)
        return paths.runs_dir() / "new.csv", f"is in compile-lab's runs directory ({paths.runs_dir()}) {OUTSIDE_DATA}"
    if kind == "config-file":
        paths.config_file().parent.mkdir(parents=True)
        paths.config_file().write_bytes(b'{"theme": "nord"}\n')
        return paths.config_file(), f"is compile-lab's config file {OUTSIDE_DATA}"
    raise AssertionError(kind)


KINDS = [
    "link-to-file", "dangling-link", "link-to-dir", "fifo", "socket", "directory", "char-device",
    "history-file", "history-not-yet-made", "history-through-linked-dir", "runs-file", "new-file-in-runs",
    "config-file",
]  # fmt: skip


@pytest.fixture
def holder():
    """Sockets a test binds, closed at teardown."""
    held: list = []
    yield held
    for thing in held:
        thing.close()


def _state(target: Path) -> Any:
    return _snapshot(target) if os.path.lexists(target) else None


# ----------------------------------------------------------------------------------------------
# 1.1 and 1.2: the engine refuses in every export function; the app gets the same line


@pytest.mark.parametrize("flag", list(WRITERS))
@pytest.mark.parametrize("kind", KINDS)
def test_an_export_refuses_what_is_not_a_regular_file_or_is_compile_labs_data(
    tmp_path, monkeypatch, holder, kind, flag
):
    monkeypatch.chdir(tmp_path)
    target, what = _make(kind, tmp_path, holder)
    before, listing = _state(target), sorted(os.listdir(target.parent))
    with pytest.raises(ExportTargetError) as info:
        returns_within(
            DEADLINE_S, lambda: WRITERS[flag]([ended_record()], target), fifo=target if kind == "fifo" else None
        )
    assert str(info.value) == f"{target} {what}"
    assert _state(target) == before
    assert sorted(os.listdir(target.parent)) == listing  # no temporary file left either
    if kind == "link-to-file":
        assert (tmp_path / "real.csv").read_bytes() == OLD  # the link's target is untouched too


def test_an_empty_path_is_refused_not_taken_for_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for writer in WRITERS.values():
        with pytest.raises(ExportTargetError, match=r"^the path is empty \(allowed: a file path\)$"):
            writer([ended_record()], "")
    assert os.listdir(tmp_path) == []


def _appearing(target: Path, make: Callable[[Path], None]):
    """Records whose iteration makes something appear at ``target`` mid-write (after the first check)."""

    def records():
        yield ended_record()
        make(target)
        yield ended_record()

    return records()


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "over-a-file"])
@pytest.mark.parametrize("appears", ["symlink", "fifo", "directory"])
def test_what_appears_at_the_target_while_writing_is_never_replaced(tmp_path, existing, appears):
    """The check is repeated right before the rename: a link, pipe or directory made meanwhile stays."""
    target = tmp_path / "out.csv"
    victim = tmp_path / "victim.txt"
    victim.write_bytes(OLD)

    def make(path: Path) -> None:
        if path.exists():
            path.unlink()
        if appears == "symlink":
            path.symlink_to(victim)
        elif appears == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()

    if existing:
        target.write_bytes(OLD)
    records = _appearing(target, make)
    with pytest.raises(ExportTargetError, match=f"^{target} is a "):
        returns_within(DEADLINE_S, lambda: write_csv(records, target), fifo=target if appears == "fifo" else None)
    assert {"symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "directory": stat.S_ISDIR}[appears](
        os.lstat(target).st_mode
    )
    assert victim.read_bytes() == OLD
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "victim.txt"]  # no temporary file left


@pytest.mark.parametrize("when", ["as-it-is-linked", "before-the-last-check", "without-hard-links"])
def test_a_file_that_appears_at_a_new_target_while_writing_is_the_users_and_is_kept(tmp_path, monkeypatch, when):
    """Nothing was there when the export began; a regular file made meanwhile is someone's: refused, not replaced.
    It appears between the last check and the hard link (the link fails), before the last check, or on a file
    system without hard links (the rename's own check)."""
    target = tmp_path / "out.csv"
    real_link, real_check = os.link, atomic.existing_regular

    def appear_then_link(src, dst, **kwargs):
        Path(dst).write_bytes(OLD)
        return real_link(src, dst, **kwargs)

    def then_a_file(path):
        result = real_check(path)
        if result is None and not Path(path).exists():  # the first check: nothing there; then someone's file is
            Path(path).write_bytes(OLD)
        return result

    if when == "as-it-is-linked":
        monkeypatch.setattr(atomic.os, "link", appear_then_link)
    else:
        monkeypatch.setattr(atomic, "existing_regular", then_a_file)
    if when == "without-hard-links":
        monkeypatch.setattr(atomic.os, "link", lambda *a, **k: (_ for _ in ()).throw(PermissionError(1, "no")))
    with pytest.raises(ExportTargetError, match=f"^{target} is a file that appeared while this one was written"):
        write_csv([ended_record()], target)
    assert target.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["out.csv"]  # no temporary file left


def test_a_new_target_is_created_without_replacing_what_appeared_after_the_last_check(tmp_path, monkeypatch):
    """Between the last check and the move, a link appears: creating by hard link fails, and it is refused."""
    target = tmp_path / "out.csv"
    real_check = atomic.existing_regular
    calls = []

    def late_link(path):
        calls.append(path)
        if len(calls) == 2:  # the check right before the move: nothing there yet ...
            result = real_check(path)
            Path(path).symlink_to(tmp_path / "elsewhere")  # ... and then there is
            return result
        return real_check(path)

    monkeypatch.setattr(atomic, "existing_regular", late_link)
    with pytest.raises(ExportTargetError, match="is a symbolic link"):
        write_csv([ended_record()], target)
    assert os.readlink(target) == str(tmp_path / "elsewhere")
    assert sorted(os.listdir(tmp_path)) == ["out.csv"]


def test_without_hard_links_a_new_target_is_still_written(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(export.os, "link", no_links)
    write_csv([ended_record()], tmp_path / "out.csv")
    assert len(csv_rows(tmp_path / "out.csv")) == 1 and os.listdir(tmp_path) == ["out.csv"]


@pytest.mark.parametrize("case", ["linked-parent", "history-name-elsewhere", "exports-dir", "data-dir", "regular-file"])
def test_the_neighbours_of_a_refusal_are_written(tmp_path, case):
    """A link in a parent directory (``~/data -> /mnt/data``), a file merely named like the
    history, the exports directory, a new file next to the history, an existing regular file."""
    real = tmp_path / "real"
    real.mkdir()
    if case == "linked-parent":
        (tmp_path / "data").symlink_to(real, target_is_directory=True)
        target, lands = tmp_path / "data" / "out.csv", real / "out.csv"
    elif case == "history-name-elsewhere":
        target = lands = real / "history.jsonl"
    elif case == "exports-dir":
        paths.exports_dir().mkdir(parents=True)
        target = lands = paths.exports_dir() / "mine.csv"
    elif case == "data-dir":
        paths.data_dir().mkdir(parents=True)
        target = lands = paths.data_dir() / "mine.csv"
    else:
        target = lands = real / "out.csv"
        target.write_bytes(OLD)
    write_csv([ended_record()], target)
    assert len(csv_rows(lands)) == 1
    assert os.path.isfile(lands) and not os.path.islink(lands)
    if case == "linked-parent":
        assert os.path.islink(tmp_path / "data")


def test_the_history_still_writes_its_own_runs_files(compile_lab_home):
    """The runs directory is refused to exports only: the history's samples files still go there."""
    from tui.engine.store.history import History

    record = ended_record()
    History().append(record)
    assert (paths.runs_dir() / record.samples_file).is_file()


async def test_the_app_shows_the_same_refusal_and_keeps_the_link(make_app, tmp_path):
    """The app writes through the same functions: a linked target is one "Export failed" line."""
    from app_helpers import raised_notices, wait_until

    (tmp_path / "real.csv").write_bytes(OLD)
    link = tmp_path / "report.csv"
    link.symlink_to(tmp_path / "real.csv")
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        (run,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: run.finished and app.settled, what="the run")
        app._export(str(link))
        await wait_until(pilot, lambda: any(n.title == "Export failed" for n in raised_notices(app)), what="error")
        (error,) = [n for n in raised_notices(app) if n.title == "Export failed"]
    assert error.message == f"{link} is a symbolic link {ALLOWED}"
    assert os.readlink(link) == str(tmp_path / "real.csv") and (tmp_path / "real.csv").read_bytes() == OLD


# ----------------------------------------------------------------------------------------------
# 1.3: the CLI refuses before anything runs, exit code 2


@pytest.fixture
def runners(monkeypatch) -> list:
    """The CLI on the fake worker; the list of runners it made (empty: nothing ran)."""
    made: list = []

    def factory(keep_spare: bool, telemetry: Any = None) -> WorkerRunner:
        runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "ok"})
        made.append(runner)
        return runner

    monkeypatch.setattr(cli, "make_runner", factory)
    return made


def _cli(argv: list[str], fifo: Path | None = None) -> int:
    base = ["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--quiet"]
    return returns_within(DEADLINE_S, lambda: cli.main(base + argv), fifo=fifo)


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


CLI_CASES = [  # (kind, flag): every kind, each flag more than once
    ("link-to-file", "--csv"), ("dangling-link", "--json"), ("link-to-dir", "--raw-csv"), ("fifo", "--raw-csv"),
    ("socket", "--csv"), ("directory", "--csv"), ("char-device", "--json"), ("history-file", "--json"),
    ("history-not-yet-made", "--csv"), ("history-through-linked-dir", "--raw-csv"), ("runs-file", "--csv"),
    ("new-file-in-runs", "--json"), ("config-file", "--raw-csv"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "flag"), CLI_CASES, ids=[f"{k}{f}" for k, f in CLI_CASES])
def test_the_cli_refuses_the_target_before_anything_runs(tmp_path, monkeypatch, holder, runners, capsys, kind, flag):
    monkeypatch.chdir(tmp_path)
    target, what = _make(kind, tmp_path, holder)
    before, history = _state(target), _state(paths.history_file())
    listing = sorted(os.listdir(target.parent))
    assert _cli([flag, str(target)], fifo=target if kind == "fifo" else None) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {flag}: {target} {what}"]
    assert _state(target) == before and sorted(os.listdir(target.parent)) == listing
    assert runners == [] and _state(paths.history_file()) == history  # nothing ran, no history line


@pytest.mark.parametrize(
    ("first", "second", "spelling"),
    [("--csv", "--json", "same"), ("--json", "--raw-csv", "dot-dot"), ("--csv", "--raw-csv", "linked-parent")],
)
def test_two_outputs_to_one_file_are_refused_naming_both_flags(tmp_path, runners, capsys, first, second, spelling):
    (tmp_path / "sub").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "sub", target_is_directory=True)
    target = tmp_path / "sub" / "r.out"
    target.write_bytes(OLD)
    other = {
        "same": str(target),
        "dot-dot": f"{tmp_path}/sub/../sub/r.out",
        "linked-parent": f"{tmp_path}/alias/r.out",
    }[spelling]
    assert _cli([first, str(target), second, other]) == 2
    assert _error_lines(capsys) == [
        f"compile-lab: error: {first}, {second}: both name {target} (allowed: a different file for each output)"
    ]
    assert target.read_bytes() == OLD and runners == [] and not paths.history_file().exists()


@pytest.mark.parametrize("flag", ["--csv", "--json", "--raw-csv"])
def test_an_empty_output_path_is_a_usage_error_not_ignored(tmp_path, monkeypatch, runners, capsys, flag):
    monkeypatch.chdir(tmp_path)
    assert _cli([flag, ""]) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {flag}: the path is empty (allowed: a file path)"]
    assert runners == [] and os.listdir(tmp_path) == []


def test_a_path_ending_in_a_slash_is_a_directory_name(tmp_path, runners, capsys):
    assert _cli(["--csv", f"{tmp_path}/new/"]) == 2
    assert _error_lines(capsys) == [
        f"compile-lab: error: --csv: {tmp_path}/new/ is a directory name (it ends in a slash) (allowed: a file path)"
    ]
    assert runners == [] and os.listdir(tmp_path) == []


def test_the_neighbours_run_and_write(tmp_path, runners, capsys):
    """Three different files, one through a linked parent, one named like the history, an existing one:
    the run happens and all three are written."""
    (tmp_path / "real").mkdir()
    (tmp_path / "data").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "r.json").write_bytes(OLD)
    argv = [
        "--csv",
        f"{tmp_path}/data/r.csv",
        "--json",
        f"{tmp_path}/real/r.json",
        "--raw-csv",
        f"{tmp_path}/history.jsonl",
    ]
    assert _cli(argv) == 0
    assert len(runners) == 1 and [line["status"] for line in history_lines()] == ["done"]
    assert [row["status"] for row in csv_rows(tmp_path / "real" / "r.csv")] == ["done"]
    assert (tmp_path / "real" / "r.json").read_bytes() != OLD and os.path.islink(tmp_path / "data")
    assert files_in(tmp_path) == ["compile-lab-home", "data", "history.jsonl", "real"]
