"""tui.engine.store.export: CSV/JSON/raw CSV content, atomic replacement, one-line errors."""

from __future__ import annotations

import csv
import errno
import json
import os
from datetime import datetime, timezone

import pytest

from tui import paths
from tui.engine.store import export
from tui.engine.store.export import ExportError, default_export_paths, write_csv, write_json, write_raw_csv
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.columns import CSV_COLUMNS, RAW_COLUMNS
from tui.engine.store.results import RunRecord


def _record(eager=(2.0, 2.5, 1.5), compiled=(1.0, 1.25, 0.75), blocks=3, fail: str | None = None) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}).validated())
    record.apply(make_event("started", 0, env={"torch": "2.13.0", "device": "cpu"}))
    record.apply(make_event("compiled", 1, compile_s=1.5, diagnostics={"graph_breaks": 0}))
    for i in range(blocks):
        record.apply(make_event("block", 2, side="eager", stage="measure", index=i, clock="perf_counter",
                                ms=[x + i / 3 for x in eager], host_ms_per_call=2.0))  # fmt: skip
        record.apply(make_event("block", 2, side="compiled", stage="measure", index=i, clock="perf_counter",
                                ms=[x + i / 7 for x in compiled], host_ms_per_call=1.0))  # fmt: skip
    if fail:
        record.fail(fail, "it broke, badly", "detail")
    else:
        record.apply(make_event("measured", 3, warnings=["a, \"quoted\" warning"]))
        record.apply(make_event("finished", 3))
    return record


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_csv_header_and_rows(tmp_path):
    records = [_record(), _record(fail="out_of_memory")]
    target = write_csv(records, tmp_path / "runs.csv")
    rows = _read_csv(target)
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 3
    for record, row in zip(records, rows[1:], strict=True):
        assert dict(zip(CSV_COLUMNS, row, strict=True)) == record.to_row()
    parsed = dict(zip(CSV_COLUMNS, rows[1], strict=True))
    assert parsed["warnings"].split(" | ")[-1] == 'a, "quoted" warning'
    assert parsed["status"] == "done" and parsed["eager_n"] == "9"
    assert dict(zip(CSV_COLUMNS, rows[2], strict=True))["error_kind"] == "out_of_memory"


def test_json_has_everything_including_iterations(tmp_path):
    records = [_record(), _record(fail="timeout")]
    data = json.loads((write_json(records, tmp_path / "runs.json")).read_text())
    assert data["schema"] == 2 and len(data["runs"]) == 2
    run = data["runs"][0]
    assert run["run_id"] == records[0].run_id
    assert run["samples"]["eager"][0]["ms"] == [2.0, 2.5, 1.5]
    assert run["summary"]["speedup"] == records[0].summary().speedup
    back = RunRecord.from_json(run)
    assert list(back.raw_rows()) == list(records[0].raw_rows())


def test_json_of_no_records(tmp_path):
    data = json.loads(write_json([], tmp_path / "empty.json").read_text())
    assert data["runs"] == []


def test_raw_csv_one_row_per_iteration(tmp_path):
    records = [_record(), _record(blocks=1)]
    rows = _read_csv(write_raw_csv(records, tmp_path / "raw.csv"))
    assert tuple(rows[0]) == RAW_COLUMNS
    assert len(rows) - 1 == 2 * 9 + 2 * 3
    first = dict(zip(RAW_COLUMNS, rows[1], strict=True))
    assert first["run_id"] == records[0].run_id and first["side"] == "eager" and first["ms"] == "2.0"
    # full precision: the raw file reproduces the times exactly
    times = [float(dict(zip(RAW_COLUMNS, r, strict=True))["ms"]) for r in rows[1:10]]
    assert times == [x for b in records[0].samples["eager"] for x in b.ms]


def test_missing_directory_is_one_line_naming_the_path(tmp_path):
    target = tmp_path / "nope" / "runs.csv"
    with pytest.raises(ExportError) as info:
        write_csv([_record()], target)
    message = str(info.value)
    assert str(target) in message and "does not exist" in message and "\n" not in message


def test_parent_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ExportError, match="file"):
        write_json([_record()], blocker / "runs.json")


def test_target_is_a_directory_keeps_it(tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    with pytest.raises(ExportError, match=str(target)):
        write_csv([_record()], target)
    assert target.is_dir()
    assert os.listdir(tmp_path) == ["adir"]


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("writer", [write_csv, write_json, write_raw_csv])
def test_full_disk_while_writing_leaves_the_old_file(tmp_path, monkeypatch, writer):
    target = tmp_path / "out"
    target.write_bytes(b"previous export\n")
    monkeypatch.setattr(export.os, "write", _full_disk)
    with pytest.raises(ExportError) as info:
        writer([_record()], target)
    monkeypatch.undo()
    assert str(info.value) == f"cannot write {target}: No space left on device"
    assert target.read_bytes() == b"previous export\n"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the temporary file is gone too


def test_full_disk_at_fsync_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "runs.csv"
    target.write_bytes(b"old")
    monkeypatch.setattr(export.os, "fsync", _full_disk)
    with pytest.raises(ExportError, match="No space left on device"):
        write_csv([_record()], target)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["runs.csv"]


def test_successful_write_replaces_the_old_file(tmp_path):
    target = tmp_path / "runs.csv"
    target.write_bytes(b"old")
    write_csv([_record()], target)
    assert _read_csv(target)[0] == list(CSV_COLUMNS)
    assert os.listdir(tmp_path) == ["runs.csv"]


def test_records_without_their_samples_are_exported_with_their_summaries(tmp_path):
    record = RunRecord.from_json(_record().to_json(samples=False))  # samples stored nowhere
    assert write_raw_csv([record], tmp_path / "raw.csv").read_text() == ",".join(RAW_COLUMNS) + "\n"
    [run] = json.loads(write_json([record], tmp_path / "runs.json").read_text())["runs"]
    assert run["samples"] is None and run["summary"] == record.summary().to_json()
    write_csv([record], tmp_path / "summary.csv")  # the summary row needs no samples
    assert export.samples_left_out([record]) == []  # no samples file was ever named: nothing is missing


def test_default_export_paths(compile_lab_home):
    now = datetime(2024, 5, 1, 12, 34, 56, tzinfo=timezone.utc)
    first = default_export_paths(now)
    assert first["csv"].name == "compile-lab-20240501-123456.csv"
    assert first["raw_csv"].name == "compile-lab-20240501-123456-raw.csv"
    assert first["json"].name == "compile-lab-20240501-123456.json"
    assert all(p.parent == paths.exports_dir() for p in first.values())
    assert paths.exports_dir().is_dir() and str(paths.exports_dir()).startswith(str(compile_lab_home))
    first["csv"].write_text("taken")
    second = default_export_paths(now.timestamp())
    assert second["csv"].name == "compile-lab-20240501-123456-2.csv"


def test_file_modes(tmp_path):
    import os

    fresh = write_csv([_record()], tmp_path / "fresh.csv")
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_current_umask()  # as open() makes it, not mkstemp's 0600
    before = os.umask(0o077)  # a user who keeps their files private
    try:
        kept = write_csv([_record()], tmp_path / "kept.csv")
    finally:
        os.umask(before)
    assert kept.stat().st_mode & 0o777 == 0o600
    private = tmp_path / "private.csv"
    private.write_text("old")
    private.chmod(0o600)
    write_csv([_record()], private)
    assert private.stat().st_mode & 0o777 == 0o600  # a replaced file keeps its mode


def _current_umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask
