"""compile-lab prune and the size cap (tui.engine.store.prune): only older runs' files go, never a history
line; a pruned run still loads, exports and says its files are gone; the data dir's size is shown."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tui import cli, paths
from tui.cli.info import _EnvTable
from tui.engine.explain.artifacts import format_bytes, load_code, run_folder
from tui.engine.store.export import write_json, write_raw_csv
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import GraphCoded, make_event
from tui.engine.store.prune import (
    DATA_CAP_ENV,
    ORPHAN_GRACE_S,
    data_cap,
    CapKeeper,
    apply_prune,
    data_cap_bytes,
    data_usage,
    plan_prune,
    scan_runs,
)
from tui.engine.explain.artifacts import capped_code
from tui.engine.store.results import RunRecord, SamplesPruned

DAY = 86_400.0
NOW = 1_800_000_000.0


def _run(number: int, days_ago: float, code_bytes: int = 2000) -> RunRecord:
    """A done run made ``days_ago`` days before NOW, with one graph of ``code_bytes`` bytes and samples."""
    record = RunRecord(f"20261201-00000{number}-aaaaa{number}", RunOptions().validated(), created=NOW - days_ago * DAY)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    for side, ms in (("eager", 2.0), ("compiled", 1.0)):
        record.apply(make_event("block", 0.2, side=side, stage="measure", index=0, clock="perf_counter",
                                ms=[ms] * 5, host_ms_per_call=ms))  # fmt: skip
    record.apply(GraphCoded(graph=capped_code(0, "0/0", "# AOT ID: ['0_inference']\n" + "#" * code_bytes, 10**7)))
    record.apply(make_event("measured", 0.3, warnings=[]))
    record.apply(make_event("finished", 0.3))
    return record


@pytest.fixture
def stored() -> list[RunRecord]:
    """Four runs in the default history (30, 20, 10 and 1 days old), the newest with the biggest code."""
    history = History()
    records = [_run(n, days, code_bytes=2000 * n) for n, days in enumerate((30, 20, 10, 1), 1)]
    for record in records:
        history.append(record)
    return records


def _history_bytes() -> bytes:
    return paths.history_file().read_bytes()


def test_runs_are_scanned_oldest_first_with_their_files(stored):
    runs = scan_runs(now=NOW)
    assert [run.run_id for run in runs] == [r.run_id for r in stored]
    assert all(run.in_history and len(run.paths) == 2 for run in runs)  # samples file + code folder
    assert runs[3].size_bytes > runs[0].size_bytes > 2000


def test_keep_last_older_than_and_max_size_each_add_runs(stored):
    runs = scan_runs(now=NOW)
    ids = [r.run_id for r in stored]
    assert [r.run_id for r in plan_prune(runs, keep_last=1, now=NOW).runs] == ids[:3]
    assert plan_prune(runs, keep_last=10, now=NOW).runs == ()
    assert [r.run_id for r in plan_prune(runs, older_than_days=15, now=NOW).runs] == ids[:2]
    newest_two = runs[2].size_bytes + runs[3].size_bytes
    plan = plan_prune(runs, max_bytes=newest_two, now=NOW)
    assert [r.run_id for r in plan.runs] == ids[:2] and plan.kept_bytes == newest_two
    assert [r.run_id for r in plan_prune(runs, keep_last=3, older_than_days=25, now=NOW).runs] == ids[:1]


def test_prune_deletes_files_not_history_lines_and_a_pruned_run_still_loads_and_exports(stored, tmp_path):
    before = _history_bytes()
    result = apply_prune(plan_prune(scan_runs(now=NOW), keep_last=1, now=NOW))
    assert result.runs == 3 and result.errors == () and result.bytes_freed > 0
    assert _history_bytes() == before
    runs_dir = paths.runs_dir()
    assert sorted(p.name for p in runs_dir.iterdir()) == sorted(
        [*(r.run_id for r in stored), f"{stored[3].run_id}.json"])  # folders keep pruned.json; the newest all
    note = json.loads((runs_dir / stored[0].run_id / "pruned.json").read_text())
    assert note["removed"] == ["code", "samples"] and note["bytes_freed"] > 0 and note["pruned_at"].endswith("Z")

    loaded, problems = History().load()
    assert problems == [] and [r.run_id for r in loaded] == [r.run_id for r in stored]
    old, new = loaded[0], loaded[3]
    assert old.summary().speedup == pytest.approx(2.0)  # the stored summary stands
    with pytest.raises(SamplesPruned, match="pruned on"):
        old.ensure_samples()
    assert load_code(old).why.startswith("the code of 1 of 1 graph(s) pruned on ")
    assert load_code(new).why is None and load_code(new).graphs[0].code.startswith("# AOT ID")
    write_json(loaded, tmp_path / "all.json")
    runs = json.loads((tmp_path / "all.json").read_text())["runs"]
    assert [run["samples"] is None for run in runs] == [True, True, True, False]
    assert runs[0]["artifacts"]["graphs"][0]["code"] is None and runs[3]["artifacts"]["graphs"][0]["code"]
    write_raw_csv(loaded, tmp_path / "raw.csv")
    assert {line.split(",")[0] for line in (tmp_path / "raw.csv").read_text().splitlines()[1:]} == {stored[3].run_id}
    assert scan_runs(now=NOW)[0].run_id == stored[3].run_id  # a pruned run has nothing left to prune


def test_a_repeat_group_with_one_pruned_process_still_exports_and_reports_reading_the_other(tmp_path):
    """Pruning the older process of a --repeat 2 group failed every export from the app ("cannot write ...csv: run
    ...: its per-iteration samples were pruned"), and the report split the group into two rows."""
    import csv

    from tui.engine.store.export import write_csv
    from tui.engine.store.report_data import gather_report
    from tui.engine.store.repeats import GroupRecord, group_rows

    history = History()
    first, second = _run(1, 10), _run(2, 1)
    first.group_id = second.group_id = first.run_id
    second.repeat = 1
    for record in (first, second):
        history.append(record)
    assert apply_prune(plan_prune(scan_runs(now=NOW), keep_last=1, now=NOW)).runs == 1  # the older process only
    loaded, _ = History().load()
    [row] = group_rows(loaded)
    assert isinstance(row, GroupRecord) and row.group.processes == 2 and row.group.done == 1
    assert row.warnings[0].startswith(f"process 1 of 2 left out: run {first.run_id}: its per-iteration samples "
                                      "were pruned on ")
    assert row.summary().speedup == pytest.approx(2.0)
    write_csv(loaded, tmp_path / "runs.csv")
    [line] = list(csv.DictReader((tmp_path / "runs.csv").open()))
    assert (line["repeats"], float(line["speedup"])) == ("2", pytest.approx(2.0))
    write_json(loaded, tmp_path / "runs.json")
    assert [r["samples"] is None for r in json.loads((tmp_path / "runs.json").read_text())["runs"]] == [True, False]
    [reported] = gather_report(loaded, configuration=lambda record: record.group_id).rows
    assert len(reported.processes) == 2 and reported.samples_note is None


def test_files_without_a_history_line_are_left_alone_while_young(stored):
    orphan = run_folder("20261203-000000-orphan")
    orphan.mkdir(parents=True)
    (orphan / "trace.json").write_text("{}")
    assert "20261203-000000-orphan" not in [r.run_id for r in scan_runs()]  # maybe still running
    old = time.time() - ORPHAN_GRACE_S - 60
    os.utime(orphan / "trace.json", (old, old))
    [found] = [r for r in scan_runs() if r.run_id == "20261203-000000-orphan"]
    assert not found.in_history
    apply_prune(plan_prune([found], keep_last=0))
    assert not orphan.exists() or not any(orphan.iterdir())


def test_the_cli_dry_run_lists_and_deletes_nothing_then_prune_deletes(stored, capsys):
    snapshot = sorted(str(p) for p in paths.runs_dir().rglob("*"))
    assert cli.main(["prune", "--keep-last", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would prune the files of 2 of 4 run(s)" in out and stored[0].run_id in out and stored[3].run_id not in out
    assert sorted(str(p) for p in paths.runs_dir().rglob("*")) == snapshot
    assert cli.main(["prune", "--max-size", "0"]) == 0
    out = capsys.readouterr().out
    assert "pruned the files of 4 run(s)" in out and "the history lines stay" in out and "compile-lab prune" in out
    assert len(History().load()[0]) == 4


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["prune"], "compile-lab: error: prune: give --keep-last N, --older-than DAYS or --max-size GB"),
        (
            ["prune", "--keep-last", "-1"],
            "compile-lab: error: --keep-last: -1 is not allowed (allowed: a whole number of runs, 0 or more)",
        ),
        (
            ["prune", "--keep-last", "2.5"],
            "compile-lab: error: --keep-last: '2.5' is not a whole number (allowed: a whole number of runs, 0 or more)",
        ),
        (["prune", "--older-than", "nan"], "compile-lab: error: --older-than: nan is not allowed"),
        (
            ["prune", "--max-size", "lots"],
            "compile-lab: error: --max-size: 'lots' is not a number (allowed: a number of GB, 0 or more)",
        ),
    ],
)
def test_bad_prune_flags_are_one_line_and_exit_2(stored, capsys, argv, line):
    before = sorted(str(p) for p in paths.runs_dir().rglob("*"))
    assert cli.main(argv) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith(line), err
    assert sorted(str(p) for p in paths.runs_dir().rglob("*")) == before


def test_the_size_cap_prunes_the_oldest_runs_after_a_save(stored, monkeypatch):
    monkeypatch.setenv(DATA_CAP_ENV, "0")
    assert data_cap_bytes() is None and CapKeeper().after_save(stored[0].run_id) is None
    total = sum(r.size_bytes for r in scan_runs())
    monkeypatch.setenv(DATA_CAP_ENV, str(total / 1e9))  # exactly full: nothing to do
    keeper = CapKeeper(History())
    assert keeper.after_save(stored[3].run_id) is None
    History().append(_run(5, 0.5, code_bytes=5000))  # over the cap now: down to 90% of it, oldest first
    result = keeper.after_save("20261201-000005-aaaaa5")
    assert result is not None and result.runs >= 1
    left = {r.run_id for r in scan_runs()}
    assert stored[0].run_id not in left and "20261201-000005-aaaaa5" in left
    assert sum(r.size_bytes for r in scan_runs()) <= 0.9 * total
    monkeypatch.setenv(DATA_CAP_ENV, "a lot")
    assert data_cap_bytes() == 5 * 10**9  # a malformed setting: the default


def test_the_size_cap_prunes_the_running_sessions_own_runs_last_and_still_keeps_to_the_cap(stored, monkeypatch):
    """The session's own runs (its exports read their code) go only once every other run's files have."""
    total = sum(r.size_bytes for r in scan_runs())
    monkeypatch.setenv(DATA_CAP_ENV, str(total / 1e9))
    keeper = CapKeeper(History())
    assert keeper.after_save(stored[0].run_id) is None  # this session saved the oldest run
    History().append(_run(5, 0.5, code_bytes=5000))
    result = keeper.after_save("20261201-000005-aaaaa5")
    assert result is not None and result.runs >= 1
    left = {r.run_id for r in scan_runs()}
    assert {stored[0].run_id, "20261201-000005-aaaaa5"} <= left  # the session's own: kept
    assert stored[1].run_id not in left  # the oldest of the others went instead
    assert any((run_folder(stored[0].run_id) / "code").iterdir())  # its code is still there to export
    own = sum(r.size_bytes for r in scan_runs() if r.run_id in {stored[0].run_id, "20261201-000005-aaaaa5"})
    monkeypatch.setenv(DATA_CAP_ENV, str(own / 2 / 1e9))  # the session's own runs alone outgrow the cap
    History().append(_run(6, 0.2, code_bytes=5000))
    keeper.after_save("20261201-000006-aaaaa6")
    assert stored[0].run_id not in {r.run_id for r in scan_runs()}  # the cap holds: its own oldest went too
    assert sum(r.size_bytes for r in scan_runs()) <= 0.9 * own / 2


@pytest.mark.parametrize("text, cap", [("", 5 * 10**9), ("2", 2 * 10**9), ("0", None), ("inf", None),
                                       ("1e400", None)])
def test_the_cap_setting_is_gigabytes_and_0_or_inf_turn_it_off(monkeypatch, text, cap):
    monkeypatch.setenv(DATA_CAP_ENV, text)
    assert data_cap() == (cap, None)


@pytest.mark.parametrize("text", ["abc", "nan", "-1"])
def test_a_malformed_cap_setting_keeps_the_default_and_says_so_once(stored, monkeypatch, text):
    monkeypatch.setenv(DATA_CAP_ENV, text)
    cap, problem = data_cap()
    assert cap == 5 * 10**9 and problem is not None and f"{DATA_CAP_ENV}='{text}' was ignored" in problem
    keeper = CapKeeper(History())
    first = keeper.after_save(stored[0].run_id)
    assert first is not None and first.notes == (problem,) and first.runs == 0
    assert keeper.after_save(stored[1].run_id) is None  # said once


def test_the_data_dirs_size_is_shown(stored):
    usage = data_usage()
    assert usage.runs_bytes == sum(r.size_bytes for r in scan_runs()) and usage.history_bytes == len(_history_bytes())
    assert usage.line().startswith(f"{paths.data_dir()}: {format_bytes(usage.total_bytes)} (runs ")
    assert "of a 5.0 GB cap" in usage.line() and usage.line().endswith("compile-lab prune frees space")
    table = _EnvTable()
    table.data_dir()  # compile-lab env's row
    cells = [list(column.cells) for column in table.table.columns]
    assert cells[0] == ["data dir"] and cells[1] == [str(paths.data_dir())] and "compile-lab prune" in cells[2][0]
    assert table.hints == []


def test_env_says_when_the_cap_setting_was_ignored(stored, monkeypatch):
    monkeypatch.setenv(DATA_CAP_ENV, "5GB")
    table = _EnvTable()
    table.data_dir()
    assert table.hints == [data_cap()[1]] and f"{DATA_CAP_ENV}='5GB' was ignored" in table.hints[0]


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 999, 1000, 12_345, 5e9, 12e9)] == ["0 B", "999 B", "1.0 kB", "12 kB", "5.0 GB",
                                                                           "12 GB"]


def test_a_samples_file_that_is_missing_without_prune_is_still_an_error(stored):
    Path(paths.runs_dir() / f"{stored[0].run_id}.json").unlink()
    [old, *_] = History().load()[0]
    with pytest.raises(Exception) as caught:
        old.ensure_samples()
    assert not isinstance(caught.value, SamplesPruned) and "cannot read" in str(caught.value)
