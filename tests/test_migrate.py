"""Old history stays readable: the committed schema-1 history (written by the code of 2791984,
see tests/data/make_history_schema1.py) and schema-2 history (e31a555, the boolean ``tf32``;
tests/data/make_history_schema2.py) load under today's schema and give the same CSV cells, the
old ``tf32`` column read as ``precision`` (true: tf32, false: ieee) with a note saying so."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tui.engine.store.columns import CSV_COLUMNS
from tui.engine.store.export import write_csv
from tui.engine.store.history import History
from tui.engine.store.migrate import SCHEMA, upgrade_line, upgrade_samples

FIXTURE = Path(__file__).resolve().parent / "data" / "history_schema1"
FIXTURE2 = FIXTURE.parent / "history_schema2"
NOTE_FALSE = "precision from the old TF32 switch: tf32 false read as ieee"
NOTE_TRUE = "precision from the old TF32 switch: tf32 true read as tf32"
STATUSES = ["done", "done", "failed", "cancelled"]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _copy(fixture: Path, tmp_path: Path):
    """A copy of ``fixture`` in tmp_path; the committed files are checked to be untouched afterwards."""
    before = _snapshot(fixture)
    assert {"history.jsonl", "expected_summary.csv"} <= set(before)
    target = tmp_path / fixture.name
    shutil.copytree(fixture, target)
    yield target
    assert _snapshot(fixture) == before  # never rewritten
    assert _snapshot(target) == before  # not even the copy: reading only reads


@pytest.fixture
def schema1(tmp_path):
    yield from _copy(FIXTURE, tmp_path)


@pytest.fixture
def schema2(tmp_path):
    yield from _copy(FIXTURE2, tmp_path)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


#: A column the old code wrote under another name, and how its cells read now.
RENAMED = {"tf32": ("precision", {"true": "tf32", "false": "ieee"})}


def _assert_same_cells(got: Path, want: Path, count: int = 4) -> None:
    """The columns the old code wrote keep their cells (``tf32`` as ``precision``); columns added since
    (at the end) are there too."""
    got_rows, want_rows = _rows(got), _rows(want)
    old = [RENAMED.get(column, (column, None))[0] for column in want_rows[0]]
    assert list(got_rows[0]) == list(CSV_COLUMNS) and list(CSV_COLUMNS)[: len(old)] == old
    assert len(got_rows) == len(want_rows) == count
    different = {
        (row["run_id"], column): (row[RENAMED.get(column, (column,))[0]], cell)
        for row, expected in zip(got_rows, want_rows, strict=True)
        for column, cell in expected.items()
        if row[RENAMED.get(column, (column,))[0]] != (RENAMED[column][1][cell] if column in RENAMED else cell)
    }
    assert different == {}


def test_the_fixture_is_schema_1():
    lines = [json.loads(line) for line in (FIXTURE / "history.jsonl").read_text().splitlines()]
    assert [line["schema"] for line in lines] == [1, 1, 1, 1] and SCHEMA == 3
    samples = json.loads((FIXTURE / "runs" / "20261201-101010-aaaaaa.json").read_text())
    assert samples["schema"] == 1 and "wall_ms_per_call" in samples["samples"]["eager"][0]


def test_a_schema_1_history_loads_without_problems(schema1):
    records, problems = History(schema1 / "history.jsonl", schema1 / "runs").load()
    assert problems == []
    assert len(records) == 4 and [r.status for r in records] == STATUSES
    assert [r.run_id for r in records] == [
        "20261201-101010-aaaaaa", "20261201-101011-bbbbbb", "20261201-101012-cccccc", "20261201-101013-dddddd",
    ]  # fmt: skip
    full = records[0]
    assert full.options.workload == "dynamic_shapes" and full.options.params == {"batch_sizes": "8,16", "width": 64}
    assert full.env.gpu_name == "NVIDIA H200" and full.env.gpu_memory_mb == 143771
    assert full.diagnostics.graph_break_reasons == ("Data-dependent branching at x.py:3",)
    assert full.accuracy.verdict == "pass" and full.memory.peak_mb == 120.5
    assert full.telemetry.energy_from == "counter" and full.telemetry.samples == 40
    assert not any(w.startswith("stored record") for r in records for w in r.warnings)
    assert (records[2].error_kind, records[3].error_kind) == ("graph_break", "cancelled")


def test_schema_1_samples_load_with_their_host_time(schema1):
    records, _ = History(schema1 / "history.jsonl", schema1 / "runs").load()
    for record in records:
        record.ensure_samples()
        assert record.samples_loaded
    blocks = {r.run_id: [b for side in ("eager", "compiled") for b in r.samples[side]] for r in records}
    assert [len(b) for b in blocks.values()] == [8, 8, 0, 1]
    assert all(b.host_ms_per_call is not None for bs in blocks.values() for b in bs)
    assert blocks["20261201-101013-dddddd"][0].host_ms_per_call == 0.2
    assert blocks["20261201-101010-aaaaaa"][0].labels == ["batch=8", "batch=16", "batch=8", "batch=16", "batch=8"]
    raw = [row for r in records for row in r.raw_rows()]
    assert raw and all(row["host_ms_per_call"] != "" for row in raw)
    summary = records[0].summary()
    assert summary.eager.host is not None and summary.eager.host.n == 4
    assert list(summary.per_label) == ["batch=8", "batch=16"]


def test_the_summary_csv_of_a_schema_1_history_is_unchanged(schema1, tmp_path):
    records, _ = History(schema1 / "history.jsonl", schema1 / "runs").load()
    write_csv(records, tmp_path / "stored.csv")  # from the stored summaries
    _assert_same_cells(tmp_path / "stored.csv", schema1 / "expected_summary.csv")
    for record in records:
        record.ensure_samples()
    write_csv(records, tmp_path / "recomputed.csv")  # from the upgraded samples
    _assert_same_cells(tmp_path / "recomputed.csv", schema1 / "expected_summary.csv")


def _rewrite_line(path: Path, number: int, change) -> None:
    lines = path.read_text().splitlines()
    item = json.loads(lines[number - 1])
    change(item)
    lines[number - 1] = json.dumps(item)
    path.write_text("\n".join(lines) + "\n")


def test_a_wrong_typed_field_is_a_problem_naming_file_line_and_field(tmp_path):
    directory = tmp_path / "edited"
    shutil.copytree(FIXTURE, directory)
    history_file = directory / "history.jsonl"

    def wrong_types(item):
        item["options"]["params"] = "n=64"
        item["diagnostics"]["graph_breaks"] = "x"
        item["telemetry"]["energy_j"] = "lots"

    _rewrite_line(history_file, 2, wrong_types)
    records, problems = History(history_file, directory / "runs").load()
    assert len(records) == 4 and [r.status for r in records] == STATUSES
    assert sorted(problems) == sorted([
        f"{history_file} line 2: record.diagnostics.graph_breaks: expected int, got str (default used)",
        f"{history_file} line 2: record.telemetry.energy_j: expected float, got str (default used)",
        f"{history_file} line 2: record.options.params: expected an object, got str (default used)",
    ])  # fmt: skip
    edited = records[1]
    assert edited.options.params == {} and edited.options.workload == "pointwise"  # the rest of the options kept
    assert edited.diagnostics.graph_breaks is None and edited.diagnostics.recompiles == 0
    assert edited.telemetry.energy_j is None
    assert any("record.options.params" in w for w in edited.warnings)
    # still usable by the app and the exports
    row = edited.to_row()
    assert row["params"] == "" and row["graph_breaks"] == "" and row["energy_j"] == "" and row["speedup"] != ""
    edited.ensure_samples()
    assert edited.summary().speedup is not None
    write_csv(records, tmp_path / "out.csv")
    assert len(_rows(tmp_path / "out.csv")) == 4


def test_an_unknown_schema_is_read_best_effort_and_said(tmp_path):
    directory = tmp_path / "future"
    shutil.copytree(FIXTURE, directory)
    history_file = directory / "history.jsonl"
    _rewrite_line(history_file, 3, lambda item: item.update(schema=99))
    records, problems = History(history_file, directory / "runs").load()
    assert len(records) == 4
    assert problems == [f"{history_file} line 3: schema 99 is newer (this version writes {SCHEMA}); read best effort"]


def test_upgrade_steps():
    line = {"schema": 1, "run_id": "r", "status": "done"}
    assert upgrade_line(line) == (line, True)
    old = {"schema": 2, "run_id": "r", "options": {"workload": "cnn", "tf32": False}, "notes": ["earlier"]}
    upgraded, known = upgrade_line(old)
    assert known and upgraded["options"] == {"workload": "cnn", "precision": "ieee"}
    assert upgraded["notes"] == ["earlier", NOTE_FALSE]
    assert old["options"] == {"workload": "cnn", "tf32": False} and old["notes"] == ["earlier"]  # not changed in place
    odd = {"schema": 2, "run_id": "r", "options": {"tf32": "yes"}}
    assert upgrade_line(odd) == (odd, True)  # left for the options' decode to name
    assert upgrade_line({"schema": SCHEMA, "run_id": "r"})[1] is True
    assert upgrade_line({"schema": 99})[1] is False and upgrade_line({})[1] is False
    assert upgrade_line({"schema": True})[1] is False
    old = {"eager": [{"ms": [1.0], "wall_ms_per_call": 1.5, "labels": None}, "junk"], "compiled": None}
    assert upgrade_samples(old, 1) == {"eager": [{"ms": [1.0], "host_ms_per_call": 1.5, "labels": None}, "junk"],
                                       "compiled": None}  # fmt: skip
    assert upgrade_samples(old, SCHEMA) is old  # the current schema is read as it is


def test_the_fixture_is_schema_2_with_the_old_switch():
    lines = [json.loads(line) for line in (FIXTURE2 / "history.jsonl").read_text().splitlines()]
    assert [line["schema"] for line in lines] == [2, 2, 2]
    assert [line["options"]["tf32"] for line in lines] == [False, True, False]
    assert not any("precision" in line["options"] or "notes" in line for line in lines)


def _load(directory: Path):
    records, problems = History(directory / "history.jsonl", directory / "runs").load()
    assert problems == []
    return records


@pytest.mark.parametrize(("which", "precisions"), [
    ("schema1", ["tf32", "ieee", "ieee", "ieee"]),
    ("schema2", ["ieee", "tf32", "ieee"]),
])  # fmt: skip
def test_old_tf32_rows_read_as_ieee_or_tf32_and_say_so(which, precisions, request):
    records = _load(request.getfixturevalue(which))
    notes = [(NOTE_TRUE if precision == "tf32" else NOTE_FALSE,) for precision in precisions]
    assert [r.options.precision for r in records] == precisions
    assert [r.notes for r in records] == notes
    assert not any("TF32" in w for r in records for w in r.warnings)  # a note, not a warning
    rows = [r.to_row() for r in records]
    assert [row["precision"] for row in rows] == precisions
    assert [row["notes"] for row in rows] == [note for (note,) in notes]


def test_the_flags_the_old_worker_set_are_the_rows_flags(schema2):
    rows = [r.to_row() for r in _load(schema2)]
    assert [(row["tf32_matmul"], row["tf32_cudnn"], row["float32_matmul_precision"]) for row in rows] == [
        ("false", "false", "highest"), ("true", "true", "high"), ("false", "false", ""),
    ]  # fmt: skip


def test_the_summary_csv_of_a_schema_2_history_is_unchanged(schema2, tmp_path):
    records = _load(schema2)
    write_csv(records, tmp_path / "stored.csv")
    _assert_same_cells(tmp_path / "stored.csv", schema2 / "expected_summary.csv", count=3)
    for record in records:
        record.ensure_samples()
    write_csv(records, tmp_path / "recomputed.csv")
    _assert_same_cells(tmp_path / "recomputed.csv", schema2 / "expected_summary.csv", count=3)


def test_a_migrated_run_written_again_keeps_its_precision_and_note(schema2, tmp_path):
    records = _load(schema2)
    for record in records:
        record.ensure_samples()
    again = History(tmp_path / "again.jsonl", tmp_path / "runs")
    for record in records:
        again.append(record)
    lines = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert [line["schema"] for line in lines] == [SCHEMA] * 3
    assert not any("tf32" in line["options"] for line in lines)
    reread, problems = again.load()
    assert problems == []
    assert [(r.options.precision, r.notes) for r in reread] == [(r.options.precision, r.notes) for r in records]


def test_old_ieee_rows_match_new_ieee_rows_and_not_default_ones(schema2):
    """compare pairs a migrated ieee run with a new ieee run of the configuration; default is another one."""
    import dataclasses

    from tui.engine.compare.matching import config_key
    from tui.engine.store.results import RunRecord

    old = _load(schema2)[0]
    assert old.options.precision == "ieee"

    def new(precision: str) -> RunRecord:
        return RunRecord("20261205-000000-ffffff", dataclasses.replace(old.options, precision=precision), env=old.env)

    assert config_key(new("ieee")) == config_key(old)
    assert config_key(new("default")) != config_key(old)
    assert config_key(new("tf32")) != config_key(old)
    assert config_key(new("default"), ignore=("precision",)) == config_key(old, ignore=("precision",))
