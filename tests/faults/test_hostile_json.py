"""Hostile JSON in what ``compare``, ``report`` and ``prune`` read: one line or a skipped line, never a traceback.

Nesting deeper than Python's recursion limit (an export, a history line, a run's samples file) made
``json.loads`` raise RecursionError, which no reader caught: a traceback and exit 1, a regression to
compare's CI gate. :func:`~tui.engine.input_file.load_json` makes it one more reason a file is not
JSON. A time written as an integer of hundreds of digits ended in an OverflowError (``float()``); it
is a time no measurement gives, and a history line's ``created`` of that kind is an unreadable field.
A run listed twice on one side of ``compare`` counted as two processes (pseudo-replication that
narrows the interval across processes); it is read once, with report's warning.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fault_helpers import ended_record
from tui import cli
from tui.engine.store.export import write_json
from tui.engine.store.history import History

DEPTH = sys.getrecursionlimit() * 10
ALLOWED_CALL = "(allowed: a number of milliseconds from 0 to 1e+09)"


def _deep_list() -> str:
    return "[" * DEPTH + "]" * DEPTH


NESTED = [pytest.param(_deep_list, id="bare-list"),
          pytest.param(lambda: '{"runs": ' + _deep_list() + "}", id="runs-nested")]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _main(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """(exit code, stderr's lines, stdout with its whitespace removed) of ``compile-lab ARGV``."""
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, [line for line in captured.err.splitlines() if line.strip()], "".join(captured.out.split())


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _history_of_one_session(count: int = 2) -> tuple[History, list]:
    history = History()
    records = [ended_record() for _ in range(count)]
    for record in records:
        record.session_id = "s1"
        history.append(record)
    return history, records


def test_load_json_says_nested_too_deeply_as_a_value_error():
    from tui.engine.input_file import JSONError, load_json

    with pytest.raises(JSONError, match=r"^nested too deeply$"):
        load_json(_deep_list().encode())
    assert issubclass(JSONError, ValueError)
    assert load_json(b'\xef\xbb\xbf{"a": [1]}') == {"a": [1]}


@pytest.mark.parametrize("text", NESTED)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_deeply_nested_export_is_one_line_exit_2(capsys, command, text):
    Path("deep.json").write_text(text())
    write_json([ended_record()], Path("base.json"))
    argv = ["compare", "base.json", "deep.json"] if command == "compare" else ["report", "deep.json", "-o", "r.html"]
    code, err, _ = _main(argv, capsys)
    side = "NEW" if command == "compare" else "RUNS"
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"compile-lab: error: {side}: deep.json: not JSON (nested too deeply; allowed: ")
    assert not Path("r.html").exists()


def test_a_deeply_nested_history_line_is_skipped_with_a_warning(capsys):
    history, _ = _history_of_one_session()
    with open(history.path, "a", encoding="utf-8") as handle:
        handle.write(_deep_list() + "\n")
    skipped = f"{history.path} line 3: not valid JSON, skipped"
    code, err, _ = _main(["compare", "session:last", "session:last"], capsys)
    assert code == 0 and f"compile-lab: warning: BASE: {skipped}" in err, err
    code, err, _ = _main(["report", "session:last", "-o", "r.html"], capsys)
    assert code == 0 and f"compile-lab: warning: {skipped}" in err and Path("r.html").is_file()
    code, err, out = _main(["prune", "--keep-last", "1", "--dry-run"], capsys)
    assert code == 0 and "wouldprunethefilesof1of2run(s)" in out, (err, out)


def test_a_deeply_nested_samples_file_leaves_its_run_out_with_a_note(capsys):
    history, (base, new) = _history_of_one_session()
    samples_file = history.runs_dir / f"{new.run_id}.json"
    samples_file.write_text('{"run_id": "x", "samples": ' + _deep_list() + "}")
    code, _, out = _main(["compare", f"history:{base.run_id}", f"history:{new.run_id}"], capsys)
    assert _squeezed(f"{samples_file} is not valid JSON (nested too deeply)") in out
    assert code == 1 and _squeezed("nothing was compared: no configuration on both sides was measured") in out


@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_time_written_as_a_huge_integer_is_not_a_time(capsys, command):
    write_json([ended_record()], Path("base.json"))
    data = json.loads(Path("base.json").read_text())
    data["runs"][0]["samples"]["eager"][0]["ms"][0] = 10**400
    Path("huge.json").write_text(json.dumps(data))
    argv = ["compare", "base.json", "huge.json"] if command == "compare" else ["report", "huge.json", "-o", "r.html"]
    code, err, _ = _main(argv, capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith(f"samples.eager[0].ms[0]: an integer of 401 digits is not a time {ALLOWED_CALL}")


@pytest.mark.parametrize("created", [10**400, float("nan"), 1e300], ids=["401-digits", "nan", "1e300"])
def test_prune_takes_a_created_no_date_can_show_for_the_oldest(capsys, created):
    history, (old, new) = _history_of_one_session()
    lines = history.path.read_text().splitlines()
    item = json.loads(lines[1])
    item["created"] = created
    history.path.write_text(lines[0] + "\n" + json.dumps(item) + "\n")
    code, err, out = _main(["prune", "--keep-last", "1", "--dry-run"], capsys)
    assert code == 0, err
    assert f"{new.run_id}1970-01-0100:00UTC" in out and old.run_id not in out


def test_compare_reads_a_run_listed_twice_on_one_side_once(capsys):
    write_json([ended_record()], Path("base.json"))
    write_json([ended_record()], Path("new.json"))
    twice = json.loads(Path("new.json").read_text())
    run_id = twice["runs"][0]["run_id"]
    twice["runs"].append(twice["runs"][0])
    Path("new.json").write_text(json.dumps(twice))
    code, err, out = _main(["compare", "base.json", "new.json"], capsys)
    assert code == 0 and "1/1processes" in out and "1/2processes" not in out
    assert err == [f"compile-lab: warning: NEW: run {run_id}: named more than once, read once"]
