"""tui.engine.status.RunStatus: one enum for a run's status, stored as the same strings as before."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tui.engine.store.export import write_csv
from tui.engine.options import RunOptions
from tui.engine.protocol import PHASES, make_event
from tui.engine.store.results import ACTIVE_STATUSES, STATUSES, TERMINAL_STATUSES, RunRecord
from tui.engine.status import RunStatus, ended_reason


def test_the_statuses_are_queued_starting_the_workers_phases_then_the_ends():
    assert STATUSES == ("queued", "starting", *PHASES, "done", "failed", "cancelled")
    assert TERMINAL_STATUSES == {"done", "failed", "cancelled"}
    assert ACTIVE_STATUSES == {"starting", *PHASES}


@pytest.mark.parametrize("status", list(RunStatus))
def test_a_member_is_its_string_in_every_form_it_is_written(status):
    text = status.value
    assert status == text and hash(status) == hash(text) and text in {status} and status in {text}
    assert str(status) == text and f"{status}" == text and f"{status:>20}" == f"{text:>20}"
    assert json.dumps(status) == json.dumps(text)
    stream = io.StringIO()
    csv.writer(stream).writerow([status])
    assert stream.getvalue().strip() == text
    assert RunStatus(text) is status


def _ended(fail: bool) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}).validated())
    record.apply(make_event("started", 0, env={"torch": "2.13.0", "device": "cpu"}))
    if fail:
        record.fail("crash", "it broke")
    else:
        record.apply(make_event("compiled", 1, compile_s=1.5, diagnostics={"graph_breaks": 0}))
        for side in ("eager", "compiled"):
            record.apply(make_event("block", 2, side=side, stage="measure", index=0, clock="perf_counter",
                                    ms=[1.0, 1.1, 0.9], host_ms_per_call=1.0))
        record.apply(make_event("measured", 3, warnings=[]))
        record.apply(make_event("finished", 3))
    return record


@pytest.mark.parametrize("fail", [False, True], ids=["done", "failed"])
def test_an_ended_records_status_is_written_as_the_same_text(fail, tmp_path):
    """The history line (to_json), the JSON export and the CSV keep the strings files had before the enum."""
    record = _ended(fail)
    text = "failed" if fail else "done"
    assert record.status == text and type(record.status) is RunStatus
    line = json.dumps(record.to_json())
    assert f'"status": "{text}"' in line and "RunStatus" not in line
    assert type(json.loads(line)["status"]) is str
    write_csv([record], tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert row["status"] == text
    back = RunRecord.from_json(json.loads(line))
    assert back.status == record.status and back.finished


@pytest.mark.parametrize(("kind", "message", "after", "said"), [
    ("cancelled", "cancelled", "cancelled", ""),
    ("cancelled", "cancelled before it started", "cancelled", "cancelled before it started"),
    ("compile_error", "inductor failed", "failed", "compile_error: inductor failed"),
    ("cancelled", "cancelled", "", "cancelled"),
    (None, None, "failed", ""),
])
def test_an_ended_runs_reason_says_each_part_once(kind, message, after, said):
    assert ended_reason(kind, message, after=after) == said

