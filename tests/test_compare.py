"""tui.engine.compare: matching, verdicts, the gate, and what BASE and NEW select (files, the history)."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import zlib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fakes.timed import pointwise, timed_run
from tui.engine.compare import (
    MATCH_FIELDS, CompareSettings, PairResult, SelectionError, check_ignore, compare, load_selection, pair_up,
    parse_selection,
)  # fmt: skip
from tui.engine.compare.matching import config_key
from tui.engine.compare.output import CSV_COLUMNS, csv_rows, write_compare_csv, write_compare_json
from tui.engine.store.export import write_json
from tui.engine.store.history import History
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import ONE_PROCESS_HOST
from tui.present.compare_render import fail_note

FIXTURE = Path(__file__).resolve().parent / "data" / "history_schema1"


def _group(prefix: str, k: int, **kwargs) -> list[RunRecord]:
    """K processes of one configuration (a --repeat group), seeded apart."""
    ids = [f"20261201-1000{n:02d}-{prefix}" for n in range(k)]
    return [timed_run(run_id, group_id=ids[0], repeat=n, seed=zlib.crc32(f"{prefix}{n}".encode()), **kwargs)
            for n, run_id in enumerate(ids)]


# ----- the rules ---------------------------------------------------------------------------------


def test_runs_compared_with_themselves_are_no_change_in_every_metric():
    runs = [timed_run("a1"), timed_run("a2", pointwise(params={"n": 1024}), eager=4.0, compiled=1.5)]
    result = compare(runs, runs)
    assert [p.verdict for p in result.pairs] == ["no change", "no change"]
    for pair in result.pairs:
        assert {c.metric: (c.ratio, c.ratio_low, c.ratio_high, c.verdict) for c in pair.changes} == {
            m: (1.0, 1.0, 1.0, "no change") for m in ("compiled", "eager", "speedup", "host")}
    assert result.unmatched == () and result.exit_code == 0 and result.failures() == ()


def test_eager_backend_against_inductor_is_slower_and_fails_the_gate():
    """--ignore backend pairs inductor's run with --backend eager's (whose mode reads as the default)."""
    base = [timed_run("b1", seed=1)]
    new = [timed_run("n1", pointwise(backend="eager"), compiled=2.0, seed=2)]
    assert compare(base, new).pairs == ()  # the backend is part of the match
    result = compare(base, new, CompareSettings(ignore=("backend",)))
    [pair] = result.pairs
    assert pair.differences == ("backend: inductor -> eager",)
    assert pair.verdict == "slower" and pair.slowdown == pytest.approx(1.0, abs=0.02) and pair.fails
    assert pair.change("eager").verdict == "no change" and pair.change("speedup").verdict == "slower"
    assert pair.within_process and any("one process on a side" in note for note in pair.notes)
    assert result.exit_code == 1 and "compiled slower by" in result.failures()[0]
    lenient = compare(base, new, CompareSettings(ignore=("backend",), fail_above=150))
    assert lenient.pairs[0].verdict == "slower" and lenient.exit_code == 0  # 100% slower, not above 150%


def test_two_processes_on_a_side_say_their_interval_may_be_narrow_and_a_side_reads_its_processes_typical_time():
    """A tester's two identical --repeat 2 sweeps failed the gate (+6.4% [+3.0, +8.2]) with no caveat: resampling
    two processes draws three distinct pairs of them. A side of several processes reads the geometric mean of
    their medians, as the --repeat row does, not a median of their samples pooled."""
    two = compare(_group("b", 2), _group("n", 2, compiled=1.05))
    [pair] = two.pairs
    assert not pair.within_process
    said = "two processes on a side (BASE 2, NEW 2): resampling two processes"
    assert any(note.startswith(said) for note in pair.notes)
    [three] = compare(_group("b", 3), _group("n", 3, compiled=1.05)).pairs
    assert not any("processes on a side" in note for note in three.notes)
    levels = [timed_run("l0", eager=2.0, compiled=1.0, seed=1), timed_run("l1", eager=3.0, compiled=1.5, seed=2)]
    for n, record in enumerate(levels):
        record.group_id, record.repeat = "l0", n
    medians = [r.summary().compiled.iter.median for r in levels]
    [alone] = compare(levels, [levels[0]]).pairs
    assert alone.change("compiled").ratio == pytest.approx(medians[0] / (medians[0] * medians[1]) ** 0.5)


def test_a_noisy_side_makes_the_pair_noisy_never_slower():
    base = [timed_run("b1", seed=1)]
    drifting = [timed_run("n1", compiled=2.0, drift=0.3, seed=2)]  # NEW's compiled time grew 30% across its run
    busy = [timed_run("n2", compiled=2.0, other_cpu_cores=1.5, seed=3)]  # another process used 1.5 cores
    for new, words in ((drifting, "compiled time drifted +"), (busy, "other processes used 1.5 CPU cores")):
        result = compare(base, new)
        [pair] = result.pairs
        assert pair.verdict == "noisy" and not pair.fails and result.exit_code == 0
        assert any(words in reason and reason.startswith("NEW: ") for reason in pair.change("compiled").reasons)
        assert compare(base, new, CompareSettings(strict=True)).exit_code == 1


def test_a_new_speedup_that_drifts_away_from_base_is_inconclusive_though_it_reads_faster_than_1_at_both_ends():
    # NEW's speedup slides from BASE's 2.0x to about 1.6x across its run: over eager it is faster at both ends (a run's
    # verdict notes that drift), but against BASE its first quarter reads no change and its last slower: no one
    # word holds, and the drift says why. It is not noise (noisy says the machine was busy), and never slower.
    base = [timed_run("b1", seed=1)]
    new = [timed_run("n1", drift=0.25, seed=2)]
    result = compare(base, new, CompareSettings(metric="speedup"))
    [pair] = result.pairs
    assert new[0].summary().verdict == "faster"
    change = pair.change("speedup")
    assert change.verdict == "inconclusive" and not pair.fails and result.exit_code == 0
    assert any("speedup drifted -" in reason and reason.startswith("NEW: ") for reason in change.reasons)
    assert compare(base, new, CompareSettings(metric="speedup", strict=True)).exit_code == 1  # strict: not decided
    # the same runs without the drift: decided, with no reason
    steady = compare(base, [timed_run("n1", seed=2)], CompareSettings(metric="speedup")).pairs[0].change("speedup")
    assert steady.verdict != "inconclusive" and steady.reasons == ()


def test_a_quiet_but_long_tailed_run_compared_with_itself_is_no_change():
    # A quiet CPU run as calibration saw them: a wide distribution (IQR/median about 25%), stationary, no
    # other process. Its verdict is decisive, and compared with itself it reads no change, not noisy.
    quiet = [timed_run("q1", jitter=0.25, seed=4)]
    summary = quiet[0].summary()
    assert summary.verdict == "faster" and "spread IQR/median" in " ".join(summary.warnings)
    [pair] = compare(quiet, quiet).pairs
    assert (pair.verdict, pair.change("compiled").ratio) == ("no change", 1.0)
    assert all(change.verdict == "no change" and change.reasons == () for change in pair.changes)


def test_a_wide_distribution_alone_is_not_noise_in_compare_as_in_a_run():
    # The run's rules: the shape of a side's distribution is a note, the interval decides.
    base = [timed_run("b1", seed=1)]
    spread = [timed_run("n1", compiled=2.0, jitter=0.4, seed=2)]  # IQR/median far above 10%, no drift, no load
    assert "spread IQR/median" in " ".join(spread[0].summary().warnings)
    [pair] = compare(base, spread).pairs
    assert pair.verdict == "slower" and pair.change("compiled").reasons == ()


def test_unmatched_rows_are_listed_with_a_hint():
    base = [timed_run("b1"), timed_run("b2", pointwise(params={"n": 2048}))]
    new = [timed_run("n1", torch="2.14.0"), timed_run("n3", pointwise(dtype="bfloat16"))]
    pairs, unmatched = pair_up(base, new)
    assert pairs == []
    assert [(u.side, [r.run_id for r in u.records]) for u in unmatched] == [
        ("base", ["b1"]), ("base", ["b2"]), ("new", ["n1"]), ("new", ["n3"])]
    assert unmatched[0].hint == "NEW has it with torch_version 2.14.0 (--ignore torch_version)"
    result = compare(base, new, CompareSettings(ignore=("torch_version",)))
    assert [p.label for p in result.pairs] == ["pointwise n=512 inductor dyn=auto fp32 cpu"]
    assert [(u.side, u.runs) for u in result.unmatched] == [("base", ("b2",)), ("new", ("n3",))]
    assert result.exit_code == 0 and compare(base, new, CompareSettings(strict=True)).exit_code == 1


def test_another_workload_is_hinted_only_when_it_is_the_one_difference():
    mlp = pointwise(workload="mlp", params={"batch": 64})
    base = [timed_run("b1", mlp), timed_run("b2", pointwise(workload="/old/model.py", params={}))]
    new = [timed_run("n1"), timed_run("n2", pointwise(workload="/new/model.py", params={}))]
    hints = {u.records[0].run_id: u.hint for u in pair_up(base, new)[1]}
    assert hints["b2"] == "NEW has it with workload /new/model.py (--ignore workload)"
    assert hints["b1"] == "" and hints["n1"] == ""  # mlp and pointwise differ in workload and params: no pairing
    # whichever comes first, another workload is passed over for the nearest of the same workload
    near = timed_run("n4", pointwise(backend="aot_eager", dtype="bfloat16"))
    for new in ([timed_run("n5", mlp), near], [near, timed_run("n5", mlp)]):
        (unmatched, *_) = pair_up([timed_run("b3")], new)[1]
        assert unmatched.hint == "NEW has it with backend aot_eager, dtype bfloat16 (--ignore backend,dtype)"


def test_a_field_without_a_value_reads_none_in_a_hint():
    """A new user's hint read "NEW has it with params - (--ignore params)": a user file run with its factory's
    defaults has no params, and "-" said nothing."""
    base = [timed_run("b1", pointwise(workload="/m/model.py", params={"hidden": 512}))]
    new = [timed_run("n1", pointwise(workload="/m/model.py", params={}))]
    (unmatched, _) = pair_up(base, new)[1]
    assert unmatched.hint == "NEW has it with params none (--ignore params)"


def test_a_pairs_label_says_every_dynamic_setting_and_options_as_the_run_table_does():
    runs = [timed_run("a", pointwise(dynamic=False)), timed_run("b", pointwise(dynamic=True)),
            timed_run("c", pointwise(inductor_options={"freezing": True, "cpp_wrapper": True})),
            timed_run("d", pointwise(fullgraph=False, train=False))]
    labels = [config_key(run).label(skip=("torch_version",)) for run in runs]
    assert labels == ["pointwise n=512 inductor dyn=false fp32 cpu", "pointwise n=512 inductor dyn=true fp32 cpu",
                      "pointwise n=512 inductor cpp_wrapper=True freezing=True dyn=auto fp32 cpu",
                      "pointwise n=512 inductor dyn=auto fp32 cpu"]


def test_repeats_are_one_side_and_get_the_across_process_interval():
    base, new = _group("aaaaaa", 3), _group("bbbbbb", 3, compiled=1.2)
    [pair] = compare(base, new).pairs
    assert (pair.base_processes, pair.new_processes, pair.within_process) == (3, 3, False)
    assert pair.verdict == "slower" and pair.change("compiled").ratio == pytest.approx(1.2, rel=0.01)
    # Separate runs of one configuration (not a --repeat group) are processes of that side too.
    [again] = compare([timed_run("x1", seed=5), timed_run("x2", seed=6)], new).pairs
    assert again.base_processes == 2 and not again.within_process


def _launch_bound(run_id: str, host: float, seed: int) -> RunRecord:
    """A GPU run whose host time per call (eager 0.3 ms, compiled ``host``) far exceeds its device time."""
    return timed_run(run_id, pointwise(device="cuda"), eager=0.1, compiled=0.05, host=(0.3, host), seed=seed,
                     jitter=0.002)


def test_a_launch_bound_host_change_within_one_process_is_not_decisive():
    # As a run's host verdict of one process: the host time swings between processes (tui.engine.measure.verdict).
    base, new = [_launch_bound("b1", 0.200, 1)], [_launch_bound("n1", 0.230, 2)]  # host +15%
    [pair] = compare(base, new, CompareSettings(metric="host")).pairs
    assert pair.launch_bound and pair.within_process
    host = pair.change("host")
    assert host.ratio == pytest.approx(1.15, abs=0.01)
    assert (pair.verdict, host.reasons) == ("inconclusive", (ONE_PROCESS_HOST,))
    assert pair.change("compiled").verdict == "no change"  # device time within one process stays decisive
    # Three processes a side: the interval is across processes and decides.
    base3 = [_launch_bound(f"b{n}", 0.200, n) for n in range(3)]
    new3 = [_launch_bound(f"n{n}", 0.206, 10 + n) for n in range(3)]
    [across] = compare(base3, new3, CompareSettings(metric="host")).pairs
    assert not across.within_process and across.change("host").threshold == 0.02 and across.verdict == "slower"


def test_mode_is_normalised_for_backends_that_ignore_it():
    old = timed_run("old", pointwise(backend="aot_eager", mode="max-autotune"))  # an old line's leftover mode
    now = timed_run("now", pointwise(backend="aot_eager"))
    assert len(compare([old], [now]).pairs) == 1
    inductor = timed_run("ind", pointwise(mode="reduce-overhead"))
    assert compare([inductor], [now], CompareSettings(ignore=("backend",))).pairs == ()  # inductor's mode counts
    assert len(compare([inductor], [now], CompareSettings(ignore=("backend", "mode"))).pairs) == 1


def test_a_side_without_a_done_run_is_listed_as_failed():
    base = [timed_run("b1")]
    new = [timed_run("n1", failed=True)]
    [pair] = compare(base, new).pairs
    assert pair.status == "NEW failed" and pair.verdict is None and pair.changes == ()
    assert (pair.base_processes, pair.new_processes) == (1, 0)  # measured, as a compared pair counts them
    assert pair.broke and pair.fails  # it ran in BASE and fails in NEW: a regression, without --strict
    assert compare(base, new).failures() == ("1 pointwise n=512 inductor dyn=auto fp32 cpu torch 2.13.0: NEW failed "
                                             "where the baseline measured (a configuration that stopped working)",)
    assert compare(base, new).exit_code == 1


def test_a_compiled_output_that_turned_wrong_fails_the_gate_and_says_so(tmp_path):
    base = [timed_run("b1"), timed_run("b2", seed=1)]
    new = [timed_run("n1", compiled=0.5, accurate=False), timed_run("n2", compiled=0.5, seed=1)]  # faster, wrong
    result = compare(base, new)
    [pair] = result.pairs
    assert (pair.base_accuracy, pair.new_accuracy, pair.verdict) == ("pass", "fail", "faster")
    assert pair.accuracy_broke and pair.fails and result.exit_code == 1
    assert result.failures() == ("1 pointwise n=512 inductor dyn=auto fp32 cpu torch 2.13.0: the compiled output "
                                 "failed the accuracy check, where the baseline's passed",)
    write_compare_csv(result, tmp_path / "c.csv")
    [row] = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert (row["base_accuracy"], row["new_accuracy"], row["fails"]) == ("pass", "fail", "true")
    # a check that was already failing, or one not made on a side, is no regression of this change
    assert compare(new, new).exit_code == 0 and compare(new, new).pairs[0].new_accuracy == "fail"
    unchecked = [timed_run("u1", accurate=None), timed_run("u2", accurate=None, seed=1)]
    assert compare(unchecked, new).pairs[0].base_accuracy == "n/a" and compare(unchecked, new).exit_code == 0
    half = [timed_run("h1"), timed_run("h2", accurate=None, seed=1)]  # one checked and passed: the side passed
    assert compare(half, new).pairs[0].base_accuracy == "pass" and compare(half, new).exit_code == 1
    gone = compare(base, [timed_run("f1", failed=True)]).pairs[0]  # not compared: each side's check still said
    assert (gone.status, gone.base_accuracy, gone.new_accuracy) == ("NEW failed", "pass", "n/a")
    unmeasured = compare(base, [timed_run("w1", blocks=0, accurate=False)])  # no timings, and wrong numbers
    assert unmeasured.pairs[0].status == "NEW not measured" and unmeasured.pairs[0].accuracy_broke
    assert unmeasured.pairs[0].fails and unmeasured.exit_code == 1  # the gate's rule, compared or not


def test_each_reason_to_fail_the_gate_has_its_own_note():
    def pair(**fields) -> PairResult:
        return PairResult(fails=True, **fields)

    assert fail_note(PairResult(verdict="slower")) is None  # within --fail-above: passes
    assert fail_note(pair(verdict="faster", base_accuracy="pass", new_accuracy="fail")) == "FAIL: accuracy"
    assert fail_note(pair(verdict="faster", broke=True, new_failed=2)) == "FAIL: 2 failed"
    assert fail_note(pair(status="NEW failed", broke=True, new_failed=1)) == "FAIL"
    assert fail_note(pair(verdict="slower", slowdown=0.08)) == "FAIL"  # past --fail-above
    assert fail_note(pair(verdict="inconclusive")) == "FAIL (--strict)"
    assert fail_note(pair(status="BASE failed")) == "FAIL (--strict)"


def test_a_base_that_failed_or_both_sides_failing_fails_only_under_strict():
    strict = CompareSettings(strict=True)
    base_failed = compare([timed_run("b1", failed=True)], [timed_run("n1")])
    [pair] = base_failed.pairs
    assert pair.status == "BASE failed" and not pair.broke
    assert base_failed.exit_code == 0
    assert compare([timed_run("b1", failed=True)], [timed_run("n1")], strict).exit_code == 1
    both = compare([timed_run("b1", failed=True)], [timed_run("n1", failed=True)])
    assert both.pairs[0].status == "BASE and NEW failed" and not both.pairs[0].broke and both.exit_code == 0
    assert compare([timed_run("b1", failed=True)], [timed_run("n1", failed=True)], strict).exit_code == 1


def test_a_gate_where_no_configuration_was_measured_on_both_sides_fails():
    """A baseline whose samples were all pruned read "BASE not measured" on every row and "gate: pass": a CI job that
    compared nothing went green. A side not measured beside a compared pair still does not fail the gate."""
    from tui.engine.compare.comparison import NOTHING_MEASURED

    unmeasured = dataclasses.replace(timed_run("b1"), samples={"eager": [], "compiled": []})
    nothing = compare([unmeasured], [timed_run("n1")])
    assert nothing.pairs[0].status == "BASE not measured"
    assert nothing.failures() == (NOTHING_MEASURED,) and nothing.exit_code == 1
    other = timed_run("b2", pointwise(params={"n": 1024}))
    beside = compare([unmeasured, other], [timed_run("n1"), timed_run("n2", pointwise(params={"n": 1024}))])
    assert [p.status for p in beside.pairs] == ["BASE not measured", "compared"] and beside.exit_code == 0


def test_some_of_news_processes_failing_where_none_of_bases_did_fails_the_gate():
    base = [timed_run(f"b{i}", seed=i) for i in range(3)]
    new = [timed_run("n0"), timed_run("n1", failed=True), timed_run("n2", failed=True)]
    result = compare(base, new)
    [pair] = result.pairs
    assert (pair.status, pair.broke, pair.new_failed, pair.fails) == ("compared", True, 2, True)
    assert result.failures() == ("1 pointwise n=512 inductor dyn=auto fp32 cpu torch 2.13.0: 2 of NEW's 3 processes "
                                 "failed, where none of the baseline's did",)
    flaky_before = [*base[:2], timed_run("b2", failed=True)]  # BASE failed too: no change of this one
    assert not compare(flaky_before, new).pairs[0].broke and compare(flaky_before, new).exit_code == 0


def test_runs_whose_samples_are_gone_are_left_out_and_said(tmp_path):
    export = tmp_path / "base.json"
    write_json([timed_run("b1")], export)
    data = json.loads(export.read_text())
    data["runs"][0]["samples"] = None  # as an export writes a pruned run
    export.write_text(json.dumps(data))
    records, _ = load_selection(parse_selection(str(export)))
    [pair] = compare(records, [timed_run("n1")]).pairs
    assert pair.status == "BASE not measured" and "were not stored" in pair.notes[0]


def test_ignore_names_match_fields_only():
    assert check_ignore(["backend", " torch_version", "backend", ""]) == ("backend", "torch_version")
    with pytest.raises(ValueError, match="'nope' is not a match field"):
        check_ignore(["nope"])
    assert {"workload", "backend", "mode", "torch_version", "gpu_name"} <= set(MATCH_FIELDS)


# ----- outputs -----------------------------------------------------------------------------------


def test_csv_and_json_hold_every_row(tmp_path):
    base = [timed_run("b1"), timed_run("b2", pointwise(params={"n": 64}))]
    result = compare(base, [timed_run("n1", compiled=1.5)])
    rows = csv_rows(result)
    assert [(r["row"], r["status"], r["verdict"]) for r in rows] == [("1", "compared", "slower"),
                                                                      ("2", "only in BASE", "")]
    assert rows[0]["compiled_ratio"].startswith("1.5") and list(rows[0]) == list(CSV_COLUMNS)
    write_compare_csv(result, tmp_path / "c.csv")
    write_compare_json(result, tmp_path / "c.json")
    assert (tmp_path / "c.csv").read_text().splitlines()[0] == ",".join(CSV_COLUMNS)
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["exit_code"] == 1 and data["pairs"][0]["verdict"] == "slower" and data["unmatched"][0]["side"] == "base"
    assert data["pairs"][0]["key"]["workload"] == "pointwise" and data["settings"]["metric"] == "compiled"


# ----- selections ----------------------------------------------------------------------------------


def test_selection_syntax():
    assert parse_selection("runs.json").kind == "file"
    assert parse_selection("history:a, b,a").run_ids == ("a", "b", "a")  # the repeat is read once, and said
    assert parse_selection("session:last-2").session == "last-2"
    day = parse_selection("since:2026-12-01")
    assert (day.start, day.end) == (datetime(2026, 12, 1, tzinfo=timezone.utc).timestamp(), None)
    span = parse_selection("since:2026-12-01..2026-12-02")
    assert span.end - span.start == 2 * 86400  # the end day is included
    moment = parse_selection("since:2026-12-01T10:00..2026-12-01T10:30:15")
    assert moment.end - moment.start == 30 * 60 + 16
    for bad, words in (("history:", "no run id"), ("session:", "no session id"), ("since:yesterday", "is not a date"),
                       ("since:2026-12-02..2026-12-01", "ends before it starts"), ("", "is empty")):
        with pytest.raises(SelectionError, match=words):
            parse_selection(bad)


def _history_with_sessions(tmp_path: Path) -> History:
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    first, second = "20261201-090000-5e5510", "20261202-090000-5e5520"
    day1, day2 = (datetime(2026, 12, day, 9, 0, 1, tzinfo=timezone.utc).timestamp() for day in (1, 2))
    for record in (timed_run("20261201-090001-aaaaaa", session_id=first, created=day1),
                   *_group("cccccc", 2, session_id=first, created=day1 + 1),
                   timed_run("20261202-090001-bbbbbb", session_id=second, created=day2)):
        history.append(record)
    return history


def test_history_selections_by_id_group_session_and_date(tmp_path):
    history = _history_with_sessions(tmp_path)

    def ids(text: str) -> list[str]:
        records, problems = load_selection(parse_selection(text), history)
        assert problems == []
        return [r.run_id for r in records]

    assert ids("history:20261202-090001-bbbbbb") == ["20261202-090001-bbbbbb"]
    assert ids("history:20261201-100000-cccccc") == ["20261201-100000-cccccc", "20261201-100001-cccccc"]  # the group
    assert ids("session:20261201-090000-5e5510") == ["20261201-090001-aaaaaa", "20261201-100000-cccccc",
                                                     "20261201-100001-cccccc"]
    assert ids("session:last") == ["20261202-090001-bbbbbb"]
    assert ids("session:last-1") == ids("session:20261201-090000-5e5510")
    assert ids("since:2026-12-02") == ["20261202-090001-bbbbbb"]
    assert ids("since:2026-12-01..2026-12-01") == ids("session:last-1")
    records, _ = load_selection(parse_selection("history:20261202-090001-bbbbbb"), history)
    assert records[0].session_id == "20261202-090000-5e5520" and records[0].summary().speedup == pytest.approx(2, 0.01)
    for bad, words in (("history:nope", "no run 'nope'"), ("session:nope", "no run of this session"),
                       ("session:last-2", "the history holds 2 session"), ("since:2030-01-01", "no run was queued")):
        with pytest.raises(SelectionError, match=words):
            load_selection(parse_selection(bad), history)


def test_a_tunes_runs_are_selected_by_its_id_or_as_the_latest(tmp_path):
    history = History(tmp_path / "history.jsonl", tmp_path / "runs")
    for number, (run_id, tune_id) in enumerate((("20261201-090001-aaaaaa", "20261201-090000-70e001"),
                                                ("20261201-090002-bbbbbb", None),
                                                ("20261201-090003-cccccc", "20261201-090000-70e001"),
                                                ("20261201-100001-dddddd", "20261201-100000-70e002"))):
        record = timed_run(run_id, created=1.0e9 + number)
        record.tune_id = tune_id
        history.append(record)

    def ids(text: str) -> list[str]:
        records, problems = load_selection(parse_selection(text), history)
        assert problems == []
        return [r.run_id for r in records]

    assert ids("tune:20261201-090000-70e001") == ["20261201-090001-aaaaaa", "20261201-090003-cccccc"]
    assert ids("tune:last") == ["20261201-100001-dddddd"] and ids("tune:last-1") == ids("tune:20261201-090000-70e001")
    for bad, words in (("tune:nope", "no run of this tune"), ("tune:last-2", r"the history holds 2 tune\(s\)"),
                       ("tune:last-2", r"latest tunes: \S+ \(1 run\), 20261201-090000-70e001 \(2 runs\);")):
        with pytest.raises(SelectionError, match=words):
            load_selection(parse_selection(bad), history)
    with pytest.raises(SelectionError, match=r"no tune id \(allowed: tune:ID, tune:last, tune:last-N\)"):
        parse_selection("tune:")


def test_old_history_lines_load_without_a_session_id(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "old")
    history = History(tmp_path / "old" / "history.jsonl", tmp_path / "old" / "runs")
    records, problems = history.load()
    assert problems == [] and len(records) == 4 and {r.session_id for r in records} == {None}
    with pytest.raises(SelectionError, match=r"latest sessions: none"):
        load_selection(parse_selection("session:last"), history)
    picked, _ = load_selection(parse_selection(f"history:{records[0].run_id}"), history)
    assert compare(picked, picked).pairs[0].verdict in ("no change", "noisy", "inconclusive")


def test_a_record_keeps_its_session_id_through_the_json_export(tmp_path):
    write_json([timed_run("r1", session_id="20261203-000000-abcdef")], tmp_path / "r.json")
    records, problems = load_selection(parse_selection(str(tmp_path / "r.json")))
    assert problems == [] and records[0].session_id == "20261203-000000-abcdef"
    assert dataclasses.replace(records[0].options) == pointwise()


def test_files_that_are_no_export_are_refused(tmp_path):
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "empty.json").write_text('{"runs": []}')
    for name, words in (("missing.json", "no such file"), ("text.json", "not JSON"), ("list.json", "not a compile-lab"),
                        ("empty.json", "holds no run"), (".", "is a directory")):
        with pytest.raises(SelectionError, match=words):
            load_selection(parse_selection(str(tmp_path / name)))


def test_a_process_reads_its_statistics_and_launch_bound_as_its_run_summary_does():
    """compare computes them from the blocks (no bootstrap per run); they are the summary's, not a second rule."""
    from tui.engine.compare.judge import _process

    for record in (timed_run("cpu", jitter=0.05, seed=9), _launch_bound("gpu", 0.2, 4)):
        process, summary = _process(record), record.summary()
        assert process.launch_bound == bool(summary.launch_bound)
        for side in ("eager", "compiled"):
            for which in ("iter", "host"):
                stats, series = getattr(summary.side(side), which), process.series[(side, which)]
                assert (series.median, series.q1, series.q3, series.max) == (stats.median, stats.q1, stats.q3,
                                                                             stats.max)
    assert _launch_bound("gpu2", 0.2, 5).summary().launch_bound is True


def _rendered(comparison, width: int = 80) -> list[str]:
    import io

    from rich.console import Console

    from tui.present.compare_render import print_comparison

    console = Console(width=width, file=io.StringIO(), record=True)
    print_comparison(comparison, console)
    return console.export_text().splitlines()


def test_a_gated_host_time_on_the_cpu_is_the_compiled_column_and_the_table_fits_80_columns():
    """On the CPU one clock gives both times: --metric host added a column of the compiled column's own numbers,
    and the table ran to 89–97 columns, its verdicts broken mid-word."""
    from rich.cells import cell_len

    from tui.present.compare_render import HOST_IS_COMPILED_LEGEND, host_is_compiled

    base, new = _group("aaaaaa", 3), _group("bbbbbb", 3, compiled=1.2)
    comparison = compare(base, new, CompareSettings(metric="host"))
    assert host_is_compiled(comparison)
    lines = _rendered(comparison)
    assert max(cell_len(line.rstrip()) for line in lines) <= 80, lines
    assert not any("host" in line for line in lines[2:6]) and any("(gated)" in line for line in lines[2:6])
    assert HOST_IS_COMPILED_LEGEND.split(":")[0] + ":" in "\n".join(lines)
    from tui.present.compare_render import markdown_lines

    markdown = markdown_lines(comparison)  # a PR comment says it too
    assert HOST_IS_COMPILED_LEGEND in markdown and "compiled ms (gated)" in next(m for m in markdown if "| #" in m)
    # launch-bound GPU runs: the host time is its own figure, in its own column
    gpu = compare([_launch_bound(f"b{n}", 0.200, n) for n in range(3)],
                  [_launch_bound(f"n{n}", 0.206, 10 + n) for n in range(3)], CompareSettings(metric="host"))
    assert not host_is_compiled(gpu)
    assert any("compiled host" in line for line in _rendered(gpu, 120)[:6])
