"""What ``compare`` and ``report`` read: numbers checked where they enter, regular files of bounded size
(issue 24, items 7 and 8).

A time that no measurement gives (NaN, an infinity, 1e308, zero, a negative) in an export's samples,
a history run's samples file or a stored summary that stands in for pruned samples: one line naming
the run and the field, exit 2, nothing written; 1e308 used to end in an OverflowError traceback and
exit 1 (a regression, to CI), the others in ``+nan%`` and a passing gate. An input that is a named
pipe, a character device or a directory is refused before it is opened (a pipe used to block
forever, /dev/zero to read until MemoryError), a file over the cap in one line; every call that could
block on a pipe runs under a deadline, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from fault_helpers import returns_within
from tui import cli
from tui.engine.store.export import write_json
from tui.engine.store.history import History
from tui.engine.input_file import INPUT_MAX_BYTES, InputFileError, read_regular
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord

ALLOWED_TIME = "(allowed: a number of milliseconds above 0 and at most 1e+09)"
ALLOWED_CALL = "(allowed: a number of milliseconds from 0 to 1e+09)"  # one call may read 0: clock resolution
ALLOWED_FILE = "(allowed: a regular file of at most 1 GiB)"
IMPOSSIBLE = [pytest.param(value, shown, id=name) for name, value, shown in (
    ("nan", float("nan"), "nan"), ("inf", float("inf"), "inf"), ("minus-inf", float("-inf"), "-inf"),
    ("1e308", 1e308, "1e+308"), ("zero", 0.0, "0.0"), ("negative", -3.0, "-3.0"))]
IMPOSSIBLE_CALL = [p for p in IMPOSSIBLE if p.id != "zero"]


def _ended_record(ms: float = 2.0) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}, backend="eager").validated())
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    for side, side_ms in (("eager", ms), ("compiled", ms / 2)):
        for index in range(4):
            record.apply(make_event("block", 0.1, side=side, stage="measure", index=index, clock="perf_counter",
                                    ms=[side_ms * (1 + 0.01 * i) for i in range(5)], host_ms_per_call=side_ms))
    record.apply(make_event("measured", 0.2, warnings=[]))
    record.apply(make_event("finished", 0.2))
    return record


@pytest.fixture(autouse=True)
def _short_paths(tmp_path, monkeypatch):
    """Files named relative to the test's directory: a refusal shows a path up to 60 characters whole."""
    monkeypatch.chdir(tmp_path)


def _export(path: Path, change: Callable[[dict], None] | None = None) -> Path:
    """A JSON export of one run, its first run's dict passed to ``change`` first."""
    write_json([_ended_record()], path)
    if change is not None:
        data = json.loads(path.read_text())
        change(data["runs"][0])
        path.write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them
    return path



def _main(argv: list[str], capsys, fifo: Path | None = None) -> tuple[int, list[str]]:
    """(exit code, stderr's lines) of ``compile-lab ARGV``, run under a deadline; stdout is left in capsys."""
    code = returns_within(60, lambda: cli.main(argv), fifo)
    captured = capsys.readouterr()
    print(captured.out, end="")  # back into the capture, for a test that reads it
    return code, [line for line in captured.err.splitlines() if line.strip()]


# ----- 7. numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, shown",
    [pytest.param("ms", *p.values, id=f"ms-{p.id}") for p in IMPOSSIBLE_CALL]
    + [pytest.param("host_ms_per_call", *p.values, id=f"host-{p.id}") for p in IMPOSSIBLE],
)
def test_compare_refuses_an_impossible_time_in_one_line_exit_2(tmp_path, capsys, value, shown, field):
    def poison(run: dict) -> None:
        block = run["samples"]["compiled"][1]
        if field == "ms":
            block["ms"][2] = value
        else:
            block["host_ms_per_call"] = value

    base = _export(Path("base.json"))
    new = _export(Path("new.json"), poison)
    run_id = json.loads(new.read_text().replace("NaN", "0").replace("Infinity", "0"))["runs"][0]["run_id"]
    csv = tmp_path / "out.csv"
    code, err = _main(["compare", str(base), str(new), "--csv", str(csv)], capsys)
    where, allowed = ("ms[2]", ALLOWED_CALL) if field == "ms" else ("host_ms_per_call", ALLOWED_TIME)
    assert (code, err) == (2, [f"compile-lab: error: NEW: {new} run 1 ({run_id}): samples.compiled[1].{where}: "
                               f"{shown} is not a time {allowed}"])
    assert not csv.exists()


def test_one_call_of_zero_ms_is_below_its_clocks_resolution_not_impossible(tmp_path, capsys):
    def zero(run: dict) -> None:
        run["samples"]["compiled"][1]["ms"][2] = 0.0

    base = _export(Path("base.json"))
    new = _export(Path("new.json"), zero)
    code, err = _main(["compare", str(base), str(new)], capsys)
    assert (code, err) == (0, [])


@pytest.mark.parametrize("value, shown", IMPOSSIBLE_CALL)
def test_report_refuses_an_impossible_time_in_one_line_exit_2(tmp_path, capsys, value, shown):
    def poison(run: dict) -> None:
        run["samples"]["eager"][0]["ms"][0] = value

    runs = _export(Path("runs.json"), poison)
    out = tmp_path / "report.html"
    code, err = _main(["report", str(runs), "-o", str(out)], capsys)
    assert code == 2 and len(err) == 1 and not out.exists()
    assert err[0].startswith(f"compile-lab: error: RUNS: {runs} run 1 (")
    assert err[0].endswith(f"): samples.eager[0].ms[0]: {shown} is not a time {ALLOWED_CALL}")


def test_a_stored_summary_standing_in_for_samples_is_checked_too(tmp_path, capsys):
    def pruned_and_poisoned(run: dict) -> None:
        run["samples"] = None
        run["summary"]["compiled"]["iter"]["median"] = -3.0

    base = _export(Path("base.json"))
    new = _export(Path("new.json"), pruned_and_poisoned)
    code, err = _main(["compare", str(base), str(new)], capsys)
    assert code == 2 and len(err) == 1
    assert err[0].endswith(f"summary.compiled.iter.median: -3.0 is not a time {ALLOWED_TIME}")


def test_an_impossible_time_in_a_history_runs_samples_file_is_refused_naming_the_file(capsys):
    history = History()
    base, new = _ended_record(), _ended_record()
    for record in (base, new):
        history.append(record)
    samples_file = history.runs_dir / f"{new.run_id}.json"
    data = json.loads(samples_file.read_text())
    data["samples"]["compiled"][0]["ms"][1] = float("nan")
    samples_file.write_text(json.dumps(data))
    code, err = _main(["compare", f"history:{base.run_id}", f"history:{new.run_id}"], capsys)
    assert (code, err) == (2, [f"compile-lab: error: NEW: history:{new.run_id}: run {new.run_id}: {samples_file}: "
                               f"samples.compiled[0].ms[1]: nan is not a time {ALLOWED_CALL}"])


def test_an_integer_too_long_for_a_float_is_a_named_problem_not_a_traceback(tmp_path, capsys):
    def huge(run: dict) -> None:
        run["compile_s"] = 10**400

    base = _export(Path("base.json"))
    new = _export(Path("new.json"), huge)
    code, err = _main(["compare", str(base), str(new)], capsys)
    assert code == 0
    assert any("compile_s: expected float, got an integer of 401 digits (default used)" in line for line in err), err


# ----- 8. files that are no regular file, or too big --------------------------------------------------


def _fifo(tmp_path: Path) -> Path:
    path = Path("runs.json")
    os.mkfifo(path)
    return path


def test_compare_refuses_a_named_pipe_at_once(tmp_path, capsys):
    fifo = _fifo(tmp_path)
    base = _export(Path("base.json"))
    code, err = _main(["compare", str(base), str(fifo)], capsys, fifo)
    assert (code, err) == (2, [f"compile-lab: error: NEW: {fifo}: is a named pipe (FIFO) {ALLOWED_FILE}"])


def test_report_refuses_a_named_pipe_at_once(tmp_path, capsys):
    fifo = _fifo(tmp_path)
    out = tmp_path / "r.html"
    code, err = _main(["report", str(fifo), "-o", str(out)], capsys, fifo)
    assert (code, err) == (2, [f"compile-lab: error: RUNS: {fifo}: is a named pipe (FIFO) {ALLOWED_FILE}"])
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_character_device_that_never_ends_is_refused_unread(tmp_path, capsys):
    zero = Path("zero.json")
    os.mknod(zero, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers: reads never end
    base = _export(Path("base.json"))
    code, err = _main(["compare", str(zero), str(base)], capsys)
    assert (code, err) == (2, [f"compile-lab: error: BASE: {zero}: is a character device {ALLOWED_FILE}"])


def test_a_directory_and_a_file_over_the_cap_are_refused_in_one_line(tmp_path, capsys):
    big = Path("big.json")
    with open(big, "wb") as handle:
        handle.truncate(INPUT_MAX_BYTES + 1)  # sparse: nothing is written
    base = _export(Path("base.json"))
    code, err = _main(["compare", str(base), str(big)], capsys)
    assert (code, err) == (2, [f"compile-lab: error: NEW: {big}: is {INPUT_MAX_BYTES + 1} bytes {ALLOWED_FILE}"])
    Path("a-dir").mkdir()
    code, err = _main(["report", "a-dir", "-o", "r.html"], capsys)
    assert (code, err) == (2, [f"compile-lab: error: RUNS: a-dir: is a directory {ALLOWED_FILE}"])


def test_a_history_runs_samples_file_that_is_a_pipe_is_left_out_without_blocking(capsys):
    history = History()
    base, new = _ended_record(), _ended_record()
    for record in (base, new):
        history.append(record)
    samples_file = history.runs_dir / f"{new.run_id}.json"
    samples_file.unlink()
    os.mkfifo(samples_file)
    code, _ = _main(["compare", f"history:{base.run_id}", f"history:{new.run_id}"], capsys, samples_file)
    out = "".join(capsys.readouterr().out.split())  # the note under the table, wherever rich wrapped it
    note = f"NEW: run {new.run_id}: cannot read {samples_file}: is a named pipe (FIFO) {ALLOWED_FILE}; left out"
    assert "".join(note.split()) in out
    assert code == 1 and "nothingwascompared" in out  # its one pair had NEW not measured: the gate compared nothing


def test_read_regular_reads_a_file_and_refuses_more_than_its_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    with pytest.raises(InputFileError, match=r"^is 100 bytes \(allowed: a regular file of at most 99 bytes\)$"):
        read_regular(path, 99)


@pytest.mark.parametrize("created", [1e300, -1e300, float("nan")])
def test_a_run_time_no_date_can_show_reads_as_unknown_in_the_report(tmp_path, capsys, created):
    def when(run: dict) -> None:
        run["created"] = created

    runs = _export(Path("runs.json"), when)
    out = tmp_path / "report.html"
    code, err = _main(["report", str(runs), "-o", str(out)], capsys)
    assert code == 0 and out.exists()
    assert "Traceback" not in "".join(err)
