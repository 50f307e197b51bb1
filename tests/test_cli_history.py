"""``compile-lab history``: the stored runs and sessions listed with the ids compare and report select."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fakes.records import full_group
from fakes.timed import pointwise, timed_run
from tui import cli, paths
from tui.cli.history import RUN_KEYS, SESSION_KEYS
from tui.engine.compare.selection import session_runs
from tui.engine.store.history import History

FIRST, SECOND = "20261201-090000-5e5510", "20261202-090000-5e5520"
TUNE = "20261201-101000-70e001"  # full_group's runs' tune (and session 20261201-101000-5e5510)
DAY1, DAY2 = (datetime(2026, 12, day, 9, 0, 1, tzinfo=timezone.utc).timestamp() for day in (1, 2))
FILE_WORKLOAD = "/home/me/models/resnet_variant.py:make"


@pytest.fixture
def history() -> History:
    """Three sessions in the test's COMPILE_LAB_HOME: FIRST (two CPU runs, Dec 1), full_group's tune session (three
    processes of one CUDA configuration, queued Dec 1 10:10:10), SECOND (a failed run and a user file's, Dec 2)."""
    history = History()
    group = full_group()
    for record in group:
        record.created = datetime(2026, 12, 1, 10, 10, 10, tzinfo=timezone.utc).timestamp()
    # The tune's runs end (and are appended) last: a listing orders runs by when they were queued.
    for record in (timed_run("20261201-090001-aaaaaa", session_id=FIRST, created=DAY1, seed=1),
                   timed_run("20261201-090002-aaaaab", pointwise(params={"n": 1024}, mode="max-autotune-no-cudagraphs"),
                             session_id=FIRST, created=DAY1 + 1, compiled=1.99, seed=2),
                   timed_run("20261202-090001-bbbbbb", session_id=SECOND, created=DAY2, failed=True),
                   timed_run("20261202-090002-bbbbbc", pointwise(workload=FILE_WORKLOAD, params={}), session_id=SECOND,
                             created=DAY2 + 1, seed=3),
                   *group):  # fmt: skip
        history.append(record)
    return history


def _listed(capsys, *argv: str) -> str:
    assert cli.main(["history", *argv]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_the_table_fits_80_columns_newest_last_each_session_named(history, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _listed(capsys)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    ids = [word for line in lines for word in line.split()[:1] if word.startswith("2026120")]
    assert ids == [FIRST, "20261201-090001-aaaaaa", "20261201-090002-aaaaab",
                   "20261201-101000-5e5510", "20261201-101010-aaaaaa", "20261201-101010-000001",
                   "20261201-101010-000002",
                   SECOND, "20261202-090001-bbbbbb", "20261202-090002-bbbbbc"]  # fmt: skip
    assert "2026-12-01 09:00" in out and "2026-12-02 09:00" in out  # each run's time, UTC, under its id
    for words in (f"{FIRST}  session:last-2 (2 runs)", "20261201-101000-5e5510  session:last-1 (3 runs)",
                  f"{SECOND}  session:last (2 runs)"):
        assert words in out
    # Every word of a label whole (folded between words), a --repeat's processes numbered, the verdict whole.
    for word in ("max-autotune-no-cg", "resnet_variant.py:make", "batch_sizes=8,16", "no change"):
        assert word in out
    assert all(f"process {n}" in " ".join(out.split()) for n in (1, 2, 3))
    assert "failed" in out and "[2.00, 2.00]" in out and "noisy" in out
    assert f"tune above: {TUNE}" in out
    assert " ".join(out.split()).endswith(f"e.g. compile-lab compare session:20261201-101000-5e5510 session:{SECOND}")


def test_what_every_listed_run_shares_is_said_once_above_the_rows(history, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _listed(capsys, f"session:{FIRST}")  # two pointwise runs on the CPU: their size and mode differ
    first, *rows = out.splitlines()
    assert first == "every run listed: pointwise inductor dyn=auto fp32 cpu"
    body = "\n".join(rows)
    assert "n=512 default" in body and "n=1024" in body and "max-autotune-no-cg" in body, out
    assert "pointwise" not in body and "fp32" not in body and "inductor" not in body, out  # said once, above


def test_limit_lists_the_newest_runs_and_says_how_many_are_left(history, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _listed(capsys, "--limit", "2")
    assert "20261202-090002-bbbbbc" in out and "20261202-090001-bbbbbb" in out and "aaaaab" not in out
    assert "the newest 2 of 7 runs (--limit N lists more, --limit 0 all)" in out
    assert "of 7 runs" not in _listed(capsys, "--limit", "0") and "of 7 runs" in _listed(capsys, "--limit", "6")


def test_sessions_one_line_each_with_when_runs_workloads_and_tunes(history, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # a wide terminal: a session's line whole
    lines = _listed(capsys, "--sessions").splitlines()
    assert [line.split()[:6] for line in lines[:3]] == [
        [FIRST, "2026-12-01", "09:00", "session:last-2", "2", "runs"],
        ["20261201-101000-5e5510", "2026-12-01", "10:10", "session:last-1", "3", "runs"],
        [SECOND, "2026-12-02", "09:00", "session:last", "2", "runs"],
    ]
    assert lines[0].endswith("  pointwise") and lines[1].endswith(f"dynamic_shapes  tune {TUNE}")
    assert lines[2].endswith("  pointwise, resnet_variant.py:make")  # a file by its name, not its folders
    assert "session:ID or session:last[-N]" in " ".join(lines[3:])
    assert [line.split()[0] for line in _listed(capsys, "--sessions", "--limit", "1").splitlines()[:2]] == [
        SECOND, "the"]  # the newest, then "the newest 1 of 3 sessions"


def test_sessions_fold_into_80_columns(history, capsys, monkeypatch):
    """A session's line ran past 80 columns (its id, time, alias and runs take 66 before a workload is named)."""
    monkeypatch.setenv("COLUMNS", "80")
    lines = _listed(capsys, "--sessions").splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    assert lines[:5] == [f"{FIRST}  2026-12-01 09:00  session:last-2    2 runs  pointwise",
                         "20261201-101000-5e5510  2026-12-01 10:10  session:last-1    3 runs",
                         f"  dynamic_shapes  tune {TUNE}",
                         f"{SECOND}  2026-12-02 09:00  session:last      2 runs  pointwise,",
                         "  resnet_variant.py:make"]


def test_json_lists_runs_and_sessions_with_the_documented_keys(history, capsys):
    runs = json.loads(_listed(capsys, "--json", "--limit", "0"))
    assert [list(run) for run in runs] == [list(RUN_KEYS)] * 7
    first, failed, last = runs[0], runs[-2], runs[-1]
    assert first == {
        "run_id": "20261201-090001-aaaaaa", "group_id": None, "session_id": FIRST, "tune_id": None,
        "timestamp": "2026-12-01T09:00:01Z", "workload": "pointwise",
        "label": "pointwise n=512 inductor dyn=auto fp32 cpu",
        "status": "done", "speedup": pytest.approx(2, rel=0.01), "speedup_ci_low": pytest.approx(2, rel=0.01),
        "speedup_ci_high": pytest.approx(2, rel=0.01), "verdict": "faster",
    }  # fmt: skip
    assert failed["status"] == "failed" and failed["speedup"] is None and failed["verdict"] is None
    assert last["workload"] == FILE_WORKLOAD and last["label"].startswith("resnet_variant.py:make inductor")
    assert {run["group_id"] for run in runs[2:5]} == {"20261201-101010-aaaaaa"} and runs[2]["tune_id"] == TUNE
    sessions = json.loads(_listed(capsys, "--sessions", "--json"))
    assert [list(session) for session in sessions] == [list(SESSION_KEYS)] * 3
    assert sessions[1] == {"session_id": "20261201-101000-5e5510", "first_timestamp": "2026-12-01T10:10:10Z",
                           "last_timestamp": "2026-12-01T10:10:10Z", "runs": 3, "workloads": ["dynamic_shapes"],
                           "tune_ids": [TUNE]}  # fmt: skip


def test_selections_list_what_compare_would_read(history, capsys):
    def ids(*selections: str) -> list[str]:
        return [run["run_id"] for run in json.loads(_listed(capsys, "--json", *selections))]

    assert ids("session:last-2") == ["20261201-090001-aaaaaa", "20261201-090002-aaaaab"]
    assert ids(f"tune:{TUNE}") == ids("history:20261201-101010-aaaaaa") == ids("session:last-1")
    assert len(ids("tune:last")) == 3
    assert ids("since:2026-12-02", "history:20261202-090002-bbbbbc,20261201-090001-aaaaaa") == [
        "20261201-090001-aaaaaa", "20261202-090001-bbbbbb", "20261202-090002-bbbbbc"]  # each once, oldest first
    out = _listed(capsys, "session:last-2")
    assert f"{FIRST}  session:last-2 (2 runs)" in out and SECOND not in out.split("e.g.")[0]


def test_a_listing_reads_no_samples_file(history, capsys, monkeypatch):
    """The stored summaries say the speedups: a listing of thousands of runs reads one file, and a pruned (or lost)
    samples file leaves it whole."""
    def refuse(self, record):
        raise AssertionError(f"run {record.run_id}: samples read")

    monkeypatch.setattr(History, "load_samples", refuse)
    for argv in ([], ["session:last-1", "since:2026-12-02"], ["--sessions"]):
        assert _listed(capsys, *argv)
    shutil.rmtree(paths.runs_dir())
    runs = json.loads(_listed(capsys, "--json", "since:2026-12-01"))
    assert len(runs) == 7 and runs[0]["speedup"] == pytest.approx(2, rel=0.01)


def test_an_empty_history_is_one_line_naming_the_file(capsys):
    assert cli.main(["history"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"no runs in the history yet ({paths.history_file()}): run, sweep, tune and the app add theirs"]
    assert cli.main(["history", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [] and str(paths.history_file()) in captured.err
    assert cli.main(["history", "--sessions"]) == 0 and "no runs in the history yet" in capsys.readouterr().out


@pytest.mark.parametrize("selection", ["session:nope", "session:last-5", "history:nope", "since:2030-01-01",
                                       "tune:last-9", "since:yesterday"])
def test_a_bad_selection_is_compares_one_line_and_exits_2(history, capsys, tmp_path, selection):
    assert cli.main(["history", selection]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"compile-lab: error: RUNS: {selection}: ")
    base = tmp_path / "base.json"
    base.write_text('{"runs": []}')
    assert cli.main(["compare", selection, str(base)]) == 2
    said = capsys.readouterr().err
    assert said.removeprefix("compile-lab: error: BASE: ") == captured.err.removeprefix("compile-lab: error: RUNS: ")


@pytest.mark.parametrize(("argv", "message"), [
    (["history", "runs.json"], "compile-lab: error: RUNS: runs.json: not a selection of the history (allowed: "
                               "history:RUNID[,RUNID...], session:ID"),
    (["history", "--limit", "-1"], "compile-lab: error: --limit: -1 is not allowed (allowed: a whole number of runs, "
                                   "0 for all)"),
    (["history", "--limit", "all"], "compile-lab: error: --limit: 'all' is not a whole number (allowed: a whole "
                                    "number of runs, 0 for all)"),
])  # fmt: skip
def test_usage_errors_are_one_line(history, capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_session_runs_follow_the_order_session_last_reads(history):
    records, _ = history.load()
    listed = session_runs(records)
    assert [s.session_id for s in listed] == [FIRST, "20261201-101000-5e5510", SECOND]
    assert [(s.runs, s.workloads, s.tune_ids) for s in listed] == [
        (2, ("pointwise",), ()), (3, ("dynamic_shapes",), (TUNE,)), (2, ("pointwise", FILE_WORKLOAD), ())]
    assert listed[0].last - listed[0].first == pytest.approx(1.0)


def test_the_readme_names_every_json_key():
    """A script reads the keys from the README: each one is there, in the history paragraph."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("**Finding the ids: `compile-lab history")[1].split("\n\n")[0]
    assert [key for key in (*RUN_KEYS, *SESSION_KEYS) if f"`{key}`" not in paragraph] == []


def test_an_older_historys_runs_are_listed_without_a_session(capsys, monkeypatch):
    """Lines written before session ids existed: listed under a row saying so, selected by id in the example."""
    monkeypatch.setenv("COLUMNS", "80")
    fixture = Path(__file__).resolve().parent / "data" / "history_schema1"
    paths.history_file().parent.mkdir(parents=True)
    shutil.copy(fixture / "history.jsonl", paths.history_file())
    shutil.copytree(fixture / "runs", paths.runs_dir())
    out = _listed(capsys)
    last = json.loads(_listed(capsys, "--json"))[-1]["run_id"]
    assert out.count("no session id") == 1 and "an older history's runs" in " ".join(out.split())
    assert " ".join(out.split()).endswith(f"e.g. compile-lab report history:{last} -o report.html")
    sessions = " ".join(_listed(capsys, "--sessions").split())
    assert sessions == "4 runs without a session id (an older history's): history:RUNID or since:DATE select them"


def test_problems_reading_runs_warn_five_then_say_how_many_more():
    from tui.cli.parse import problem_warnings

    lines = problem_warnings([f"line {n}: bad" for n in range(7)], "the history")
    assert lines[:5] == [f"compile-lab: warning: line {n}: bad" for n in range(5)]
    assert lines[5:] == ["compile-lab: warning: and 2 more problems reading the history"]
    assert problem_warnings(["one"]) == ["compile-lab: warning: one"]


def test_a_tunes_candidates_that_differ_by_one_inductor_option_read_apart(capsys, monkeypatch):
    """The listing named each candidate ``1 opt``: a tune's screening runs read alike."""
    from test_cli_table import tune_runs

    history = History()
    for record in tune_runs():
        history.append(record)
    monkeypatch.setenv("COLUMNS", "80")
    out = _listed(capsys)
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert not re.search(r"\d opts?\b", out), out  # no count of options
    lines = out.splitlines()
    labels = [" ".join((line[24:51] + lines[number + 1][24:51]).split())  # a row's two lines, the configuration
              for number, line in enumerate(lines) if line.startswith("20261201-10000")]
    assert labels == ["", "freezing=True", "cpp_wrapper=True", "aggressive_fusion=True",
                      "freezing=True layout_optimization=False"], out
