"""Runs on several GPUs: which of them are one configuration, and ``compare --across`` (kinds side by side)."""

from __future__ import annotations

import json

import pytest

from fakes.gpus import A100, H100, H200, kind_runs, on_gpu, sweep
from fakes.timed import pointwise, timed_run
from tui.engine.compare import AcrossError, CompareSettings, compare, compare_across, pair_up
from tui.engine.compare.across import pick_baseline, split
from tui.engine.compare.comparison import NOTHING_COMPARED
from tui.engine.compare.matching import config_key
from tui.engine.compare.output import ACROSS_CSV_COLUMNS, across_csv_rows, write_compare_csv, write_compare_json


# ----- the match across GPUs ---------------------------------------------------------------------


def test_two_gpus_of_one_kind_are_one_configuration():
    """cuda:0 and cuda:3 (other UUIDs) of one box, or of two nodes, are the same configuration."""
    zero = on_gpu(timed_run("z", seed=1), H200, index=0)
    three = on_gpu(timed_run("t", seed=2), H200, index=3)
    elsewhere = on_gpu(timed_run("e", seed=3), H200, node="node-b", index=7)
    assert zero.env.gpu_uuid != three.env.gpu_uuid and zero.options.device != three.options.device
    assert config_key(zero) == config_key(three) == config_key(elsewhere)
    pairs, unmatched = pair_up([zero], [three, elsewhere])
    assert unmatched == [] and len(pairs) == 1 and pairs[0].differences == ()
    [pair] = compare([zero], [three, elsewhere]).pairs
    assert pair.new_processes == 2 and pair.key["device"] == "cuda" and pair.verdict == "no change"


def test_gpu_kinds_are_in_the_match_and_ignore_gpu_name_pairs_them():
    base, new = kind_runs("b", H200, 1), kind_runs("n", H100, 1, compiled=1.3)
    result = compare(base, new)
    assert result.pairs == () and [u.side for u in result.unmatched] == ["base", "new"]
    assert result.unmatched[0].hint == f"NEW has it with gpu_name {H100} (--ignore gpu_name)"
    [pair] = compare(base, new, CompareSettings(ignore=("gpu_name",))).pairs
    assert pair.differences == (f"gpu_name: {H200} -> {H100}",) and pair.verdict == "slower"


# ----- side by side ------------------------------------------------------------------------------


def test_kinds_side_by_side_against_the_first_kind():
    across = compare_across(sweep(), "gpu_name", selection="sweep.json")
    assert (across.baseline, across.kinds, across.kind_runs) == (H200, (H200, H100, A100), (4, 4, 3))
    assert across.left_out == ("cpu",) and "gpu_name" in across.settings.ignore
    assert [row.label for row in across.rows] == ["pointwise n=512 inductor dyn=auto fp32 cuda torch 2.13.0",
                                                  "pointwise n=64 inductor dyn=auto fp32 cuda torch 2.13.0"]
    big, small = across.rows
    assert [(c.kind, c.status, c.processes) for c in big.cells] == [(H200, "baseline", 3), (H100, "compared", 3),
                                                                    (A100, "compared", 3)]
    assert big.cells[0].values["compiled"] == pytest.approx(1.0, rel=0.01)
    h100, a100 = big.cells[1].result, big.cells[2].result
    assert h100.verdict == "slower" and h100.change("compiled").ratio == pytest.approx(1.2, rel=0.01)
    assert a100.verdict == "no change" and not a100.within_process and h100.differences == ()
    assert [c.verdict for c in small.cells] == ["baseline", "faster", "not run"]  # 0.7 ms on the H100, 1.0 on the H200
    assert small.cells[1].result.within_process  # one process a kind
    assert across.counts(H100) == {"faster": 1, "slower": 1} and across.counts(A100) == {"no change": 1, "not run": 1}
    assert across.failures() == (f"1 {big.label} on {H100}: compiled slower by 20.0% (above --fail-above 5%)",)
    assert across.exit_code == 1
    strict = compare_across(sweep(), "gpu_name", CompareSettings(strict=True, fail_above=50))
    assert strict.failures() == (f"2 {small.label} on {A100}: not run (--strict)",)


def test_a_gate_that_compared_nothing_fails_in_both_comparisons():
    """A wrong file or a selection of other configurations must not pass a CI job: no pair, or no cell, fails."""
    base, new = kind_runs("b", H200, 1), kind_runs("n", H100, 1)
    assert compare(base, new).failures() == (NOTHING_COMPARED,) and compare(base, new).exit_code == 1
    other = [timed_run(f"o{i}", pointwise(params={"n": 4096}), seed=i) for i in range(2)]
    across = compare_across([*kind_runs("b", H200, 1), *(on_gpu(run, H100) for run in other)], "gpu_name")
    assert [cell.result for row in across.rows for cell in row.cells[1:]] == [None, None], across.rows
    assert across.failures() == (NOTHING_COMPARED,) and across.exit_code == 1
    assert compare_across(sweep(), "gpu_name").failures() != (NOTHING_COMPARED,)


def test_the_baseline_can_be_named_by_a_part_of_it():
    across = compare_across(sweep(), "gpu_name", baseline="h100")
    assert across.kinds == (H100, H200, A100)
    [big, _] = across.rows
    assert big.cells[1].result.verdict == "faster" and big.cells[1].result.change("compiled").ratio == pytest.approx(
        1 / 1.2, rel=0.01)
    assert pick_baseline([H200, H100], H100) == H100
    for wanted, words in (("NVIDIA", "'NVIDIA' is part of 2 of the values found"), ("V100", "'V100' names none")):
        with pytest.raises(AcrossError, match=words) as info:
            pick_baseline([H200, H100], wanted)
        assert info.value.baseline and "\n" not in str(info.value) and H100 in str(info.value)


def test_one_kind_is_refused_naming_the_kinds_found():
    runs = kind_runs("a", H200, 2) + [timed_run("cpu")]
    with pytest.raises(AcrossError) as info:
        compare_across(runs, "gpu_name", selection="session:last")
    assert str(info.value) == ("session:last: its runs ran on one GPU kind only (NVIDIA H200: 2 runs; 1 run without a "
                               "gpu_name): nothing to set side by side (allowed: a selection that ran on two GPU kinds "
                               "or more)")
    with pytest.raises(AcrossError, match=r"ran on no GPU kind recorded \(2 runs without a gpu_name\)"):
        compare_across([timed_run("c1"), timed_run("c2")], "gpu_name", selection="cpu.json")
    with pytest.raises(AcrossError, match="'colour' is not allowed"):
        compare_across(runs, "colour")


def test_across_nodes_pairs_the_same_gpu_kind_and_says_when_the_kinds_differ():
    runs = kind_runs("a", H200, node="node-a") + kind_runs("b", H200, node="node-b", compiled=1.1)
    groups, without = split(runs, "node")
    assert list(groups) == ["node-a", "node-b"] and without == []
    [row] = compare_across(runs, "node").rows
    assert row.cells[1].result.verdict == "slower" and row.cells[1].result.differences == ()
    mixed = kind_runs("a", H200, node="node-a") + kind_runs("b", H100, node="node-b")
    across = compare_across(mixed, "node")
    assert [c.status for row in across.rows for c in row.cells] == ["baseline", "not run", "not run", "no baseline"]
    assert across.rows[0].cells[1].hint == f"node-b has it with gpu_name {H100} (--ignore gpu_name)"
    [row] = compare_across(mixed, "node", CompareSettings(ignore=("gpu_name",))).rows
    assert row.cells[1].result.differences == (f"gpu_name: {H200} -> {H100}",)  # not the across field: said


def test_noise_and_notes_name_the_kind():
    runs = kind_runs("a", H200) + kind_runs("b", H100, drift=0.3)  # the H100's compiled time climbs 30% in each run
    [row] = compare_across(runs, "gpu_name").rows
    result = row.cells[1].result
    assert result.verdict == "noisy"
    assert any(reason.startswith(f"{H100} process ") for reason in result.change("compiled").reasons)
    one = compare_across(kind_runs("a", H200, 1) + kind_runs("b", H100, 1), "gpu_name").rows[0].cells[1].result
    assert any(note.startswith(f"one process on a side ({H200} 1, {H100} 1)") for note in one.notes)


def test_csv_and_json_of_kinds_side_by_side(tmp_path):
    across = compare_across(sweep(), "gpu_name")
    rows = across_csv_rows(across)
    assert [(r["row"], r["kind"], r["status"], r["verdict"]) for r in rows] == [
        ("1", H100, "compared", "slower"), ("1", A100, "compared", "no change"), ("2", H100, "compared", "faster"),
        ("2", A100, "not run", "")]
    assert all(list(r) == list(ACROSS_CSV_COLUMNS) and r["baseline"] == H200 for r in rows)
    assert rows[3]["compiled_base"].startswith("1.0") and rows[3]["compiled_new"] == "" and rows[3]["base_runs"]
    write_compare_csv(across, tmp_path / "a.csv")
    write_compare_json(across, tmp_path / "a.json")
    assert (tmp_path / "a.csv").read_text().splitlines()[0] == ",".join(ACROSS_CSV_COLUMNS)
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["exit_code"] == 1 and data["across"] == "gpu_name" and data["kinds"] == [H200, H100, A100]
    assert data["rows"][0]["cells"][1]["result"]["verdict"] == "slower" and data["left_out"] == ["cpu"]
