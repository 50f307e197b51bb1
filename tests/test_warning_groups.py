"""A sweep's warnings under its table: each said once for the runs that share it."""

from __future__ import annotations

import io

from rich.console import Console

from tui.present.warning_groups import grouped_warnings, merged_processes, run_numbers

SPREAD = "eager time spread IQR/median {}% > 10%: a wide distribution; the verdict judges by the interval"
WARM = "compile_s came from a warm inductor cache (1 FX graph cache hit(s)): cold_compile measures a cold start"


def test_run_numbers_are_said_as_ranges():
    assert run_numbers([3]) == "run 3"
    assert run_numbers([4, 1, 2, 3, 6, 8, 9]) == "runs 1–4, 6, 8–9"


def test_warnings_alike_but_for_their_numbers_share_a_line_with_each_numbers_range():
    per_run = [(1, [SPREAD.format(98)]), (2, [SPREAD.format(23), WARM]), (3, [SPREAD.format("13.5"), WARM]),
               (4, ["eager time: 30 of 500 samples beyond the 3-IQR fence (6% > 5%)"]), (5, [WARM])]
    assert grouped_warnings(per_run) == [
        "runs 1–3: " + SPREAD.format("13.5–98"),
        "runs 2–3, 5: " + WARM,
        "run 4: eager time: 30 of 500 samples beyond the 3-IQR fence (6% > 5%)",
    ]


def test_a_number_inside_a_word_tells_warnings_apart_rather_than_being_ranged():
    assert grouped_warnings([(1, ["stall: took 3.1 ms, 106x its median"]), (2, ["stall: took 4 ms, 90x its median"])]) \
        == ["run 1: stall: took 3.1 ms, 106x its median", "run 2: stall: took 4 ms, 90x its median"]


def test_only_figures_with_a_unit_become_ranges_and_one_runs_two_warnings_stay_two():
    spread = "process {} of 3: eager time spread IQR/median {}% > 10%: x"
    assert grouped_warnings([(1, [spread.format(1, 23), spread.format(3, 40)])]) == [
        "run 1: processes 1, 3 of 3: eager time spread IQR/median 23–40% > 10%: x"]  # never "processes 1–3"
    for first, second in (("output[0] differs", "output[2] differs"),
                          ("1 FX graph cache hit(s)", "3 FX graph cache hit(s)")):
        assert grouped_warnings([(1, [first]), (2, [second])]) == [f"run 1: {first}", f"run 2: {second}"]
    fence = "eager time: {} of {} samples beyond the 3-IQR fence ({}% > 5%)"
    assert grouped_warnings([(1, [fence.format(39, 300, 13)]), (2, [fence.format(256, 1260, 20)])]) == [
        "runs 1–2: " + fence.format("39–256", "300–1260", "13–20")]  # a count of samples is a figure
    assert grouped_warnings([(1, ["drift -5% x"]), (2, ["drift -10% x"])]) == ["runs 1–2: drift -10 to -5% x"]
    assert grouped_warnings([(1, ["took 1e+20 s"]), (2, ["took 1e+15 s"])]) == ["runs 1–2: took 1e+15–1e+20 s"]


def test_a_rows_processes_that_warn_alike_are_said_once_where_the_first_of_them_stood():
    """A --repeat 3 row listed "process 1 of 3: eager time spread ... 19%", then 26% for process 2, then 32% for
    process 3, six lines under a one-row table for two warnings."""
    own = "process {} of {}: " + SPREAD
    compiled = own.replace("eager", "compiled")
    warnings = [WARM, own.format(1, 3, 19), compiled.format(1, 3, 22), own.format(2, 3, 26),
                "process 2 of 3: output[2] differs", own.format(3, 3, 32), compiled.format(3, 3, 12)]
    assert merged_processes(warnings) == [
        WARM,
        "processes 1–3 of 3: " + SPREAD.format("19–32"),
        "processes 1, 3 of 3: " + SPREAD.format("12–22").replace("eager", "compiled"),
        "process 2 of 3: output[2] differs",
    ]
    assert merged_processes([own.format(2, 3, 19)]) == [own.format(2, 3, 19)]  # one process: as it was
    # rows whose merged ranges differ stay apart: "19–32–40%" said no range at all
    assert grouped_warnings([(1, [own.format(1, 2, 19), own.format(2, 2, 32)]),
                             (2, [own.format(1, 2, 19), own.format(2, 2, 40)])]) == [
        "run 1: processes 1–2 of 2: " + SPREAD.format("19–32"), "run 2: processes 1–2 of 2: " + SPREAD.format("19–40")]
    # two rows' processes: each row's merged first; rows of another process count stay apart
    assert grouped_warnings([(1, [own.format(1, 2, 11), own.format(2, 2, 30)]), (2, [own.format(1, 3, 12)])]) == [
        "run 1: processes 1–2 of 2: " + SPREAD.format("11–30"), "run 2: process 1 of 3: " + SPREAD.format(12)]


def test_a_literal_hash_where_another_run_has_a_number_is_its_own_line():
    assert grouped_warnings([(1, ["a # 5"]), (2, ["a 5 5"])]) == ["run 1: a # 5", "run 2: a 5 5"]


def test_a_sweeps_table_says_a_shared_warning_once(monkeypatch):
    from tui.cli.render import print_warnings
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    records = [RunRecord.new(RunOptions(workload="pointwise", device="cpu", params={"n": n})) for n in (64, 128, 256)]
    for record in records:
        record.warnings.append(WARM)
    out = io.StringIO()
    print_warnings(records, Console(file=out, width=200))
    assert out.getvalue().splitlines() == ["warnings:", f"  runs 1–3: {WARM}"]
