"""Lossless storage: a run with EVERY field set survives the history and the JSON export unchanged.

The payloads (Env, Diagnostics, Accuracy, Memory, RunTelemetry) and the options are filled by
iterating their dataclass fields (``fakes.records.full_instance``), so a field added later is
covered without touching this file; ``unset_fields`` fails the test if one stays at its default.
"""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest

from fakes.records import EAGER_HOST, GROUP_ONLY, full_group, full_record, unset_fields
from tui.engine.store.columns import CSV_COLUMNS
from tui.engine.store.export import write_csv, write_json
from tui.engine.store.history import History
from tui.engine.store.repeats import GroupRecord
from tui.engine.store.reproduce import reproduce_command
from tui.engine.store.results import RunRecord


@pytest.fixture
def records() -> list[RunRecord]:
    done = full_record("20261201-101010-aaaaaa", failed=False)
    failed = full_record("20261201-101011-bbbbbb", failed=True)
    assert (done.status, failed.status) == ("done", "failed")
    # Every field is set (a field added to a payload later is filled by full_instance) ...
    assert unset_fields(failed) == ["samples_file"]  # set by History.append
    assert unset_fields(done) == ["error_kind", "error_message", "error_detail", "samples_file"]
    for record in (done, failed):
        # ... and so is every field of the summary, with per-label stats, host stats and warnings.
        summary = record.summary()
        # False: the run ended; a failed run keeps its status and gets no verdict.
        no_verdict = ["verdict", "noise_reasons", "host_verdict", "host_noise_reasons"] if record is failed else []
        assert unset_fields(summary) == ["live", *no_verdict]
        assert list(summary.per_label) == ["batch=8", "batch=16"]
        assert all(unset_fields(stats) == [] for stats in summary.per_label.values())
        assert unset_fields(summary.eager) == unset_fields(summary.compiled) == []
        assert summary.launch_bound is True and summary.host_speedup_ci_low < summary.host_speedup_ci_high
        assert any(w.startswith("launch-bound:") for w in summary.warnings)
        assert "a worker warning" in summary.warnings
        blank = (
            {"verdict", "host_verdict", "noise_reasons", "host_noise_reasons"}
            if record is failed
            else {"error_kind", "error"}
        )
        blank |= set(GROUP_ONLY)  # a single run has no interval across processes (test_group_... below)
        blank.add("mode")  # every option set: the backend is not inductor, which alone reads the mode
        assert [c for c in CSV_COLUMNS if record.to_row()[c] == "" and c not in blank] == []
    return [done, failed]


def _typed(record: RunRecord) -> dict:
    """Every stored field of a record as values (typed payloads compared by value, not by their JSON)."""
    fields = [f.name for f in dataclasses.fields(RunRecord) if f.name not in ("samples", "samples_file")]
    return {name: getattr(record, name) for name in fields}


def _csv_cells(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _same_cells(got: list[dict[str, str]], want: list[dict[str, str]]) -> None:
    assert len(got) == len(want)
    for row, (a, b) in enumerate(zip(got, want, strict=True)):
        assert list(a) == list(b) == list(CSV_COLUMNS)
        assert {c: (a[c], b[c]) for c in CSV_COLUMNS if a[c] != b[c]} == {}, f"row {row}"


def test_history_keeps_every_field(records, tmp_path):
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    originals = {r.run_id: (r.to_json(), r.to_json(samples=False), r.to_row(), list(r.raw_rows())) for r in records}
    for record in records:
        history.append(record)
    loaded, problems = History(tmp_path / "history.jsonl", tmp_path / "runs").load()
    assert problems == []
    assert [r.run_id for r in loaded] == [r.run_id for r in records]
    write_csv(records, tmp_path / "before.csv")
    write_csv(loaded, tmp_path / "stored.csv")  # from the stored summaries, samples not read yet
    _same_cells(_csv_cells(tmp_path / "stored.csv"), _csv_cells(tmp_path / "before.csv"))
    for record, original in zip(loaded, records, strict=True):
        full, short, row, raw = originals[record.run_id]
        assert not record.samples_loaded
        assert record.to_json(samples=False) == short
        assert record.to_row() == row
        assert record.samples_file == original.samples_file is not None
        record.ensure_samples()
        assert record.samples_loaded
        assert record.to_json() == full  # the summary recomputed from the stored samples, too
        assert record.to_row() == row
        assert list(record.raw_rows()) == raw
        assert _typed(record) == _typed(original)
    write_csv(loaded, tmp_path / "after.csv")
    _same_cells(_csv_cells(tmp_path / "after.csv"), _csv_cells(tmp_path / "before.csv"))


def test_json_export_keeps_every_field(records, tmp_path):
    write_json(records, tmp_path / "runs.json")
    data = json.loads((tmp_path / "runs.json").read_text())
    back = []
    for run, original in zip(data["runs"], records, strict=True):
        record, problems = RunRecord.decode(run)
        assert problems == []
        assert record.samples_loaded
        assert record.to_json() == original.to_json()
        assert record.to_row() == original.to_row()
        assert _typed(record) == _typed(original)
        assert dataclasses.asdict(record.summary()) == dataclasses.asdict(original.summary())
        assert record.summary().per_label["batch=16"] == original.summary().per_label["batch=16"]
        assert [b.labels for b in record.samples["eager"]] == [b.labels for b in original.samples["eager"]]
        assert [b.host_ms_per_call for b in record.samples["eager"]] == [None, *EAGER_HOST, 1.6]
        back.append(record)
    write_csv(records, tmp_path / "before.csv")
    write_csv(back, tmp_path / "after.csv")
    _same_cells(_csv_cells(tmp_path / "after.csv"), _csv_cells(tmp_path / "before.csv"))
    # and the JSON of the re-read runs is the JSON that was written, but for the export's reproduce command
    assert [run.pop("command") for run in data["runs"]] == [reproduce_command(r.options) for r in records]
    assert [r.to_json() for r in back] == [json.loads(json.dumps(r)) for r in data["runs"]]


def test_a_group_keeps_its_runs_and_its_row(tmp_path):
    """Runs repeated across processes: each stored on its own with its group; the CSV row of the group survives."""
    group = full_group()
    assert [(r.group_id, r.repeat) for r in group] == [(group[0].run_id, n) for n in range(3)]
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    for record in group:
        history.append(record)
    loaded, problems = History(tmp_path / "history.jsonl", tmp_path / "runs").load()
    assert problems == [] and [(r.group_id, r.repeat) for r in loaded] == [(r.group_id, r.repeat) for r in group]
    write_csv(group, tmp_path / "before.csv")
    write_csv(loaded, tmp_path / "after.csv")  # the group's row needs the blocks: loaded from the runs files
    before, after = _csv_cells(tmp_path / "before.csv"), _csv_cells(tmp_path / "after.csv")
    _same_cells(after, before)
    [row] = before
    assert [c for c in CSV_COLUMNS if row[c] == "" and c not in ("error_kind", "error", "mode")] == []  # mode: as above
    assert row["repeats"] == "3" and row["group_id"] == row["run_id"] == group[0].run_id
    assert row == GroupRecord.of(group).to_row()
    write_json(loaded, tmp_path / "runs.json")
    data = json.loads((tmp_path / "runs.json").read_text())
    assert [run["repeat"] for run in data["runs"]] == [0, 1, 2]
    assert [g["run_ids"] for g in data["groups"]] == [[r.run_id for r in group]]
