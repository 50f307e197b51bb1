"""benchmarks/calibrate.py judge on constructed stored runs: the figures, and "after" is the engine's own verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakes.timed import timed_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
calibrate_judge = pytest.importorskip("calibrate_judge")


def _store(folder: Path, name: str, tag: str, record, started: float, load: float | None) -> None:
    wrapper = {"schema": 1, "config": "pointwise", "tag": tag, "load_processes": 3 if tag == "busy" else 0,
               "machine": {"started": started, "other_cpu_cores": load}, "export": {"runs": [record.to_json()]}}
    (folder / "pointwise").mkdir(parents=True, exist_ok=True)
    (folder / "pointwise" / f"{tag}-{name}.json").write_text(json.dumps(wrapper))


@pytest.fixture
def stored(tmp_path) -> Path:
    # Quiet: wide (IQR/median about 25%) but stationary runs at 2x; busy: 4x, measured beside 1.5 busy cores.
    for n in range(3):
        _store(tmp_path, f"q{n}", "quiet", timed_run(f"q{n}", jitter=0.25, seed=n), 10.0 + n, 0.05)
    for n in range(3):
        _store(tmp_path, f"b{n}", "busy", timed_run(f"b{n}", compiled=0.5, other_cpu_cores=1.5, seed=10 + n),
               20.0 + n, 1.5)
    return tmp_path


def _figures(folder: Path, rules: str):
    runs = calibrate_judge.load_runs([str(folder)], None, fill_load=False)
    judged = [calibrate_judge.judge_run(r, "iter", rules) for r in runs]
    groups = [calibrate_judge.judge_group(g, "iter", rules) for g in calibrate_judge.groups_of(runs, 3)]
    return runs, judged, calibrate_judge.figures(judged, groups, 0.02)


def test_after_is_the_engines_verdict_and_before_the_frozen_rules(stored):
    runs, judged, after = _figures(stored, "after")
    assert [j.word for j in judged] == [r.record.summary().verdict for r in runs]
    _, old, before = _figures(stored, "before")
    assert all(j.word == "noisy" for j in old)  # the spread alone made the quiet runs noisy
    assert (before.decisive, after.decisive) == ((0, 3), (3, 3))
    assert (before.false_noisy, after.false_noisy) == ((3, 3), (0, 3))


def test_busy_runs_far_from_the_quiet_median_are_never_confidently_wrong(stored):
    _, judged, after = _figures(stored, "after")
    assert after.median == pytest.approx(2.0, rel=0.05)
    assert after.wrong == (0, 3) and after.busy_decisive == (0, 3)  # the machine check
    assert (after.coverage3, after.coverage3_busy) == ((1, 1), (0, 1))  # the busy group at 4x misses it
    assert any("other processes used 1.5 CPU cores" in r for j in judged for r in j.reasons)


def test_the_table_has_a_row_per_rule_set_and_the_overall_rows(stored, capsys):
    import argparse

    args = argparse.Namespace(dirs=[str(stored)], rules=["before", "after"], max_quiet_load=None, fill_load=False,
                              group=3, groups=40)
    assert calibrate_judge.judge(args) == 0
    out = capsys.readouterr().out
    assert "| pointwise | before |" in out and "| pointwise | after |" in out and "| **all** | after |" in out
