"""Nothing outside compile-lab's own files is ever deleted or written by prune and the size cap (issue 24, item 1).

Links to outside files and directories are planted in every place prune looks: in the runs
directory as a samples file and as a run's folder, inside a real run's folder (its code, trace,
TORCH_TRACE and tlparse entries, a file deep in a real subdirectory, its pruned.json), and as the
runs directory itself. ``compile-lab prune --keep-last 0`` and the size cap after a CLI run must
leave everything outside as it was (bytes, mode, inode, link text) and still delete the runs' own
regular files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fault_helpers import FAKE_WORKER
from tui import cli, paths
from tui.engine.explain.artifacts import capped_code
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import GraphCoded, make_event
from tui.engine.store.prune import DATA_CAP_ENV, NotOwnFile, delete_own_file, scan_runs
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner

OLD = 1_000_000_000.0  # 2001: far past the orphan grace period


def _stored_run(number: int) -> RunRecord:
    """A done run with samples and one graph's code, appended to the test's history."""
    record = RunRecord(f"20010101-00000{number}-aaaaa{number}", RunOptions().validated(), created=OLD + number)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    for side, ms in (("eager", 2.0), ("compiled", 1.0)):
        record.apply(make_event("block", 0.2, side=side, stage="measure", index=0, clock="perf_counter",
                                ms=[ms] * 5, host_ms_per_call=ms))  # fmt: skip
    record.apply(GraphCoded(graph=capped_code(0, "0/0", "# AOT ID: ['0_inference']\n" + "#" * 500, 10**7)))
    record.apply(make_event("measured", 0.3, warnings=[]))
    record.apply(make_event("finished", 0.3))
    History().append(record)
    return record


def _outside(tmp_path: Path) -> Path:
    """Files and directories outside the data dir that nothing may touch."""
    outside = tmp_path / "outside"
    (outside / "dir" / "deeper").mkdir(parents=True)
    for name in ("secret.txt", "note.txt", "dir/inner.txt", "dir/deeper/more.txt", "dir/old.json"):
        (outside / name).write_text(f"keep {name}\n")
    os.chmod(outside / "secret.txt", 0o640)
    for path in [*outside.rglob("*"), outside]:
        _age(path)  # as old as the runs: a link to them is never young enough to be spared as "still running"
    return outside


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: its kind, bytes (or link text), mode and inode."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        found[str(path.relative_to(root))] = (info.st_mode, info.st_ino, content)
    return found


def _age(path: Path) -> None:
    os.utime(path, (OLD, OLD), follow_symlinks=False)


def _plant_links(runs: Path, record: RunRecord, outside: Path) -> None:
    """Links to the outside in every place prune looks, all old enough to be pruned."""
    folder = runs / record.run_id
    plants = {
        runs / "20010101-000009-linkdir.json": outside / "dir",  # a "samples file" that is a linked directory
        runs / "20010101-000009-linkfile.json": outside / "secret.txt",  # one that is a linked file
        runs / "20010101-000009-linkfolder": outside / "dir",  # a "run folder" that is a link
        folder / "trace.json": outside / "secret.txt",
        folder / "torch_trace": outside / "dir",
        folder / "tlparse": outside / "dir" / "deeper",
        folder / "code" / "graph-9.py": outside / "dir" / "inner.txt",
        folder / "code" / "linked": outside / "dir",
        folder / "pruned.json": outside / "note.txt",  # the note prune leaves must not write through it
    }
    for link, target in plants.items():
        link.symlink_to(target)
        _age(link)


def _planted_links_intact(runs: Path, record: RunRecord) -> None:
    folder = runs / record.run_id
    for link in (folder / "trace.json", folder / "torch_trace", folder / "tlparse", folder / "code" / "linked"):
        assert link.is_symlink(), link  # never deleted either: not a file compile-lab wrote


def test_prune_deletes_the_runs_own_files_and_nothing_a_link_leads_to(tmp_path, capsys):
    outside = _outside(tmp_path)
    records = [_stored_run(n) for n in (1, 2)]
    runs = paths.runs_dir()
    _plant_links(runs, records[0], outside)
    before = _snapshot(outside)

    code = cli.main(["prune", "--keep-last", "0"])
    out = capsys.readouterr().out

    assert _snapshot(outside) == before
    assert code == 1  # the note over a link could not be left: said, exit 1
    assert "pruned the files of 2 run(s)" in out
    assert f"{runs / records[0].run_id / 'pruned.json'} is a symbolic link" in out
    for record in records:  # the runs' own regular files are gone
        assert not (runs / f"{record.run_id}.json").exists()
        assert not (runs / record.run_id / "code" / "graph-0.py").exists()
    assert (runs / records[1].run_id / "pruned.json").is_file()
    _planted_links_intact(runs, records[0])
    assert len(History().load()[0]) == 2


def test_a_runs_directory_that_links_out_of_the_data_dir_gets_nothing_deleted(tmp_path, capsys):
    outside = _outside(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    record = _stored_run(1)
    paths.runs_dir().rename(elsewhere)
    paths.runs_dir().symlink_to(elsewhere)
    (elsewhere / record.run_id / "empty" / "nested").mkdir(parents=True)  # folders of the user's there: kept too
    before = _snapshot(elsewhere) | {f"outside/{k}": v for k, v in _snapshot(outside).items()}

    code = cli.main(["prune", "--keep-last", "0"])
    out = capsys.readouterr().out

    assert _snapshot(elsewhere) | {f"outside/{k}": v for k, v in _snapshot(outside).items()} == before
    assert code == 1
    assert "outside" in out and "left alone" in out


def test_the_size_cap_after_a_run_deletes_nothing_a_link_leads_to(tmp_path, monkeypatch, capsys):
    outside = _outside(tmp_path)
    old = _stored_run(1)
    _plant_links(paths.runs_dir(), old, outside)
    before = _snapshot(outside)
    monkeypatch.setenv(DATA_CAP_ENV, "0.000000001")  # 1 byte: the cap prunes after the run is saved
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))

    code = cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--quiet"])

    assert _snapshot(outside) == before
    assert code == 0
    err = capsys.readouterr().err
    assert "size cap" in err
    assert f"the size cap could not delete {paths.runs_dir() / old.run_id / 'pruned.json'} is a symbolic link" in err
    assert not (paths.runs_dir() / f"{old.run_id}.json").exists()  # the old run's own files went
    _planted_links_intact(paths.runs_dir(), old)


@pytest.mark.parametrize("kind", ["link-to-file", "link-to-dir", "fifo", "outside-through-linked-parent"])
def test_delete_own_file_refuses_what_compile_lab_did_not_write(tmp_path, kind):
    outside = _outside(tmp_path)
    runs = paths.runs_dir()
    runs.mkdir(parents=True)
    target = runs / "x.json"
    if kind == "link-to-file":
        target.symlink_to(outside / "secret.txt")
    elif kind == "link-to-dir":
        target.symlink_to(outside / "dir")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (runs / "sub").symlink_to(outside / "dir")
        target = runs / "sub" / "inner.txt"  # a regular file, but reached through a link
    before = _snapshot(outside)
    with pytest.raises(NotOwnFile):
        delete_own_file(target, runs)
    assert _snapshot(outside) == before and os.path.lexists(target)


def test_scanning_counts_no_file_behind_a_link(tmp_path):
    outside = _outside(tmp_path)
    record = _stored_run(1)
    _plant_links(paths.runs_dir(), record, outside)
    [run] = scan_runs()
    assert run.run_id == record.run_id
    assert all(os.path.realpath(p).startswith(str(paths.runs_dir())) and not os.path.islink(p) for p in run.paths)


@pytest.mark.parametrize("fault", ["setting", "cap"])
def test_a_size_cap_that_fails_never_loses_the_run_or_hangs_the_cli(tmp_path, monkeypatch, capsys, fault):
    """COMPILE_LAB_MAX_DATA_GB=abc, or a cap that raises what is not an OSError (a history line nested past
    the recursion limit): the run is saved, its exports written, the CLI exits 0 with one warning."""
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    if fault == "setting":
        monkeypatch.setenv(DATA_CAP_ENV, "abc")
    else:
        def deep(self, run_id):
            raise RecursionError("maximum recursion depth exceeded")
        monkeypatch.setattr("tui.engine.store.prune.CapKeeper.after_save", deep)
    target = tmp_path / "runs.json"
    code = cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--json", str(target), "--quiet"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 0 and target.exists()
    assert len(err) == 1 and err[0].startswith("compile-lab: warning: ")
    assert ("'abc' was ignored" in err[0]) if fault == "setting" else ("RecursionError" in err[0])
    assert len(History().load()[0]) == 1
