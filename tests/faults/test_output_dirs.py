"""Every output's directory is checked before anything runs (issue 24, item 9).

A missing or read-only directory for ``--csv``, ``--json``, ``--raw-csv`` or ``--trace`` was found
only after the whole benchmark had run (then exit 1). Now ``run`` and ``sweep`` refuse it before the
first worker starts (exit 2, one line naming the flag); ``compare`` before it reads its runs,
``report`` before it reads its runs, and the app's export prompt before it writes: one rule,
:func:`tui.engine.store.export.check_output`.

Tests run as root here, where permission bits stop nothing: a directory this user cannot write is
simulated by making ``os.access`` say so for that directory only, as the kernel would for another user.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app_helpers import raised_notices, wait_until
from tui import cli, paths
from tui.engine.options import RunOptions

SIZE = (160, 48)


@pytest.fixture
def read_only(monkeypatch, tmp_path) -> Path:
    """A directory this user may not write (``os.access`` says so, as it would to a user without the right)."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    real_access = os.access

    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if os.path.realpath(path) == str(directory) and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    return directory


def _where(case: str, tmp_path: Path, read_only: Path) -> tuple[Path, str]:
    """(the directory an output goes in, how the refusal says what is wrong with it)."""
    if case == "missing":
        return tmp_path / "missing", "which does not exist"
    if case == "a-file":
        (tmp_path / "notes.txt").write_text("a file")
        return tmp_path / "notes.txt", "which is not a directory"
    return read_only, "which this user cannot write"


CASES = ["missing", "a-file", "read-only"]
RUN = ["--device", "cpu", "--iters", "10", "--block-size", "5", "--quiet"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command, flag", [("run", "--csv"), ("run", "--json"), ("sweep", "--raw-csv"),
                                           ("run", "--trace"), ("sweep", "--csv")])
def test_run_and_sweep_refuse_an_output_directory_before_the_first_worker(tmp_path, read_only, runners, capsys,
                                                                          command, flag, case):
    directory, why = _where(case, tmp_path, read_only)
    target = directory / "out.file"
    code = cli.main([command, *RUN, flag, str(target)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    allowed = "a file in an existing directory" if case != "read-only" else "a file in a directory you can write"
    assert (code, err) == (2, [f"compile-lab: error: {flag}: {target} is in {directory}, {why} (allowed: {allowed})"])
    assert runners == [] and not paths.history_file().exists()


@pytest.mark.parametrize("case", ["a-file", "read-only"])
def test_a_sweeps_trace_directory_is_checked_where_it_would_be_made(tmp_path, read_only, runners, capsys, case):
    directory, why = _where(case, tmp_path, read_only)
    traces = directory / "traces" / "today"  # made when written: the nearest directory that exists must take it
    code = cli.main(["sweep", *RUN, "--trace", str(traces)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and runners == []
    assert err == [f"compile-lab: error: --trace: {traces} is in {directory}, {why} (allowed: a directory, or a new "
                   f"one in {'an existing directory' if case == 'a-file' else 'a directory you can write'})"]


def test_compare_and_report_check_their_outputs_before_reading_anything(tmp_path, read_only, capsys):
    missing = tmp_path / "missing.json"  # BASE, NEW and RUNS cannot be read either: the output is said first
    code = cli.main(["compare", str(missing), str(missing), "--json", str(read_only / "c.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"compile-lab: error: --json: {read_only / 'c.json'} is in {read_only}, "
                                        "which this user cannot write")
    code = cli.main(["report", str(missing), "-o", str(read_only / "r.html")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"compile-lab: error: -o: {read_only / 'r.html'} is in {read_only}, "
                                        "which this user cannot write")


async def test_the_apps_export_prompt_refuses_a_directory_it_cannot_write(make_app, read_only):
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        (run,) = app.enqueue([RunOptions(iters=10, block_size=5)])
        await wait_until(pilot, lambda: run.finished and app.settled, what="a run")
        app._export(str(read_only))
        await wait_until(pilot, lambda: any(n.title.startswith("Export") for n in raised_notices(app)), what="export")
        [notice] = [n for n in raised_notices(app) if n.title.startswith("Export")]
    assert notice.title == "Export failed" and "\n" not in notice.message
    assert notice.message.endswith(f"is in {read_only}, which this user cannot write (allowed: a file in a "
                                   "directory you can write)")
    assert os.listdir(read_only) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_directory_the_permission_bits_pass_but_no_file_can_be_made_in_is_refused_before_running(runners, capsys):
    """/proc passes os.access for root, as a read-only mount or an NFS server's refusal can: a file made and removed
    there at once finds it, before the first worker, not after the runs."""
    target = "/proc/compile-lab-out.csv"
    code = cli.main(["run", *RUN, "--csv", target])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and runners == [], err
    assert len(err) == 1 and err[0].startswith(f"compile-lab: error: --csv: {target} is in /proc, where no file can "
                                               "be made ("), err
    assert err[0].endswith("(allowed: a file in a directory you can write)")


def test_the_check_leaves_no_file_where_it_made_one(tmp_path):
    from tui.engine.store.export import check_output

    before = sorted(os.listdir(tmp_path))
    assert check_output(tmp_path / "out.csv") == tmp_path / "out.csv"
    assert sorted(os.listdir(tmp_path)) == before
