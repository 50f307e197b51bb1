"""tui.engine.store.columns: the CSV columns as one table (name, getter, meaning), the README's list from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fakes.records import GROUP_ONLY, full_group, full_record
from tui.engine.store import columns
from tui.engine.store.columns import COLUMNS, CSV_COLUMNS, Column, columns_markdown, csv_row, format_value
from tui.engine.store.repeats import GroupRecord
from tui.engine.store.results import RunRecord

README = Path(__file__).resolve().parents[1] / "README.md"

# The header as it was before the table (git show 2791984:tui/engine/store/columns.py): columns are
# stable, a new one goes at the end. The boolean tf32 became the three-way precision in its place.
_SIDE_COLUMNS = ("n", "median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "host_median_ms")
OLD_CSV_COLUMNS: tuple[str, ...] = (
    "run_id", "timestamp", "workload", "params", "device", "gpu_name", "gpu_uuid", "torch_version",
    "backend", "mode", "fullgraph", "dynamic", "dtype", "precision", "train", "l2_flush", "cold_compile",
    "status", "error_kind", "error", "compile_s",
    *(f"eager_{c}" for c in _SIDE_COLUMNS),
    *(f"compiled_{c}" for c in _SIDE_COLUMNS),
    "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "launch_bound", "break_even_calls",
    "graph_breaks", "recompiles", "unique_graphs", "cudagraph_skips",
    "eager_peak_mem_mb", "compiled_peak_mem_mb", "max_abs_err", "max_rel_err", "accuracy",
    "tflops", "gbps", "sm_clock_mean_mhz", "sm_clock_min_mhz", "temp_max_c", "power_mean_w", "energy_j",
    "throttle_reasons", "warnings", "host_speedup", "host_speedup_ci_low", "host_speedup_ci_high",
)  # fmt: skip


def test_the_columns_keep_their_order():
    assert CSV_COLUMNS[: len(OLD_CSV_COLUMNS)] == OLD_CSV_COLUMNS
    assert CSV_COLUMNS == tuple(c.name for c in COLUMNS)
    assert len(set(CSV_COLUMNS)) == len(CSV_COLUMNS)


def test_every_column_has_a_one_line_meaning():
    assert [c.name for c in COLUMNS if not c.meaning.strip() or "\n" in c.meaning] == []


@pytest.mark.parametrize("column", COLUMNS, ids=lambda c: c.name)
def test_every_getter_works_on_a_default_and_on_a_full_record(column):
    empty = RunRecord("r")
    value = column.get(empty, empty.summary())
    format_value(value)  # a value a cell can hold
    # Verdicts are for done runs only (a failed run keeps its status).
    full = full_record(
        "20261201-101010-aaaaaa", failed="verdict" not in column.name and "noise_reasons" not in column.name
    )
    if column.name == "mode":  # every field set: the backend is not inductor's, so it ignores the mode
        assert format_value(column.get(full, full.summary())) == ""
        full = RunRecord(full.run_id, dataclasses.replace(full.options, backend="inductor"))
    cell = format_value(column.get(full, full.summary()))
    if column.name in GROUP_ONLY:
        assert cell == "", f"{column.name} is set on a single run"
        full = GroupRecord.of(full_group())
        cell = format_value(column.get(full, full.summary()))
    assert cell != "", f"{column.name} is empty on a record with every field set"


def test_the_row_of_a_default_record():
    row = csv_row(RunRecord("r", created=0.0))
    assert list(row) == list(CSV_COLUMNS)
    assert row["run_id"] == "r" and row["status"] == "queued" and row["accuracy"] == "n/a"
    assert row["speedup"] == row["eager_n"] == row["gpu_name"] == row["energy_j"] == ""


def test_a_misspelt_attribute_is_an_error_not_an_empty_cell(monkeypatch):
    record = full_record("20261201-101010-aaaaaa", failed=False)
    typo = Column("gpu_name", lambda r, s: r.env.gpu_nmae, "a misspelt payload field")
    with pytest.raises(AttributeError, match="gpu_nmae"):
        typo.get(record, record.summary())
    monkeypatch.setattr(columns, "COLUMNS", (*COLUMNS, typo))
    with pytest.raises(AttributeError, match="gpu_nmae"):
        csv_row(record)
    summary_typo = Column("speedup", lambda r, s: s.speed_up, "a misspelt summary field")
    monkeypatch.setattr(columns, "COLUMNS", (*COLUMNS, summary_typo))
    with pytest.raises(AttributeError, match="speed_up"):
        record.to_row()


def test_the_readme_lists_the_columns_of_the_table():
    text = README.read_text()
    found = re.search(r"<!-- columns:start -->\n(.*?)\n?<!-- columns:end -->", text, re.S)
    assert found, "README.md has no <!-- columns:start --> ... <!-- columns:end --> block"
    assert found.group(1).rstrip("\n") == columns_markdown(), (
        "README.md's CSV column list differs from tui/engine/store/columns.py: "
        "paste the output of `python3 -m tui.engine.store.columns` between the columns markers"
    )


def test_the_markdown_table_has_two_cells_per_row():
    lines = columns_markdown().splitlines()
    assert lines[:2] == ["| column | meaning |", "|---|---|"] and len(lines) == 2 + len(COLUMNS)
    for line, column in zip(lines[2:], COLUMNS, strict=True):
        cells = re.split(r"(?<!\\)\|", line)[1:-1]  # an escaped "\|" stays inside its cell
        assert [c.strip() for c in cells][0] == f"`{column.name}`" and len(cells) == 2, line
        assert "<" not in line and ">" not in line  # would be read as HTML


@pytest.mark.parametrize(
    ("backend", "mode", "cell"),
    [
        ("inductor", "default", "default"),
        ("inductor", "reduce-overhead", "reduce-overhead"),
        ("aot_eager", "default", ""),
        ("eager", "default", ""),
        ("cudagraphs", "default", ""),
        ("my_backend", "default", ""),
    ],
)
def test_the_mode_cell_is_empty_for_a_backend_that_ignores_the_mode(backend, mode, cell):
    from tui.engine.options import RunOptions, mode_applies

    row = csv_row(RunRecord.new(RunOptions(backend=backend, mode=mode)))
    assert row["mode"] == cell and bool(cell) is mode_applies(backend)  # the options' one rule, not a second


def test_every_precision_flag_the_worker_reports_is_a_column_of_its_name():
    from tui.engine.payloads import PRECISION_FLAGS, Env

    record = full_record("20261201-101010-aaaaaa", failed=False)
    row = csv_row(record)
    missing = [name for name in PRECISION_FLAGS if name not in row]
    assert missing == [], f"precision flags the CSV lacks: {missing}"
    assert {name: row[name] for name in PRECISION_FLAGS} == {
        name: format_value(getattr(record.env, name)) for name in PRECISION_FLAGS
    }
    assert set(PRECISION_FLAGS) <= {f.name for f in dataclasses.fields(Env)}


def test_rows_that_differ_only_in_their_inductor_options_or_interpreter_differ_in_the_csv():
    # a tune's candidates and an A/B sweep's sides: without these cells two such rows read alike but for their numbers
    plain = RunRecord("20261206-010101-aaaaaa")
    tuned = RunRecord("20261206-010102-bbbbbb", dataclasses.replace(
        plain.options, inductor_options={"freezing": True, "triton.cudagraphs": False}, python="/venvs/b/bin/python"))
    plain_row, tuned_row = csv_row(plain), csv_row(tuned)
    assert (plain_row["inductor_options"], plain_row["python"]) == ("{}", "")
    assert tuned_row["inductor_options"] == '{"freezing": true, "triton.cudagraphs": false}'
    assert tuned_row["python"] == "/venvs/b/bin/python"
