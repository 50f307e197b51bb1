"""Trust: text from a worker, a file or a user is shown as text, never run by the terminal.

A workload's error containing ``\\x1b[2J`` (clear screen) was written raw by the CLI (also with
``--quiet``) and, from a history line, cleared the app's details screen. Every string decoded
at a seam goes through ``tui.typed.printable``, and so does what a run's failure brings along.
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from tui import cli
from tui.app.components.details import render_details
from tui.present.format import workload_label
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import PROTOCOL_VERSION, ProtocolError, decode, make_event
from tui.engine.store.results import RunRecord
from tui.typed import printable

CLEAR = "\x1b[2J\x1b[H"
SHOWN = "\\x1b[2J\\x1b[H"


def test_printable_shows_every_control_character_and_keeps_newlines_and_tabs():
    assert printable(f"a{CLEAR}b\n\tc") == f"a{SHOWN}b\n\tc"
    assert printable("\x07\x08\x7f\x9b\x00") == "\\x07\\x08\\x7f\\x9b\\x00"
    assert printable("plain text, ünïcode ✓") == "plain text, ünïcode ✓"


def test_a_worker_event_is_decoded_into_plain_text():
    line = json.dumps({"v": PROTOCOL_VERSION, "event": "failed", "t": 1.0, "kind": "runtime_error",
                       "message": f"boom{CLEAR}", "detail": f"Traceback\n{CLEAR}end"})
    event = decode(line)
    assert event.message == f"boom{SHOWN}" and event.detail == f"Traceback\n{SHOWN}end"
    with pytest.raises(ProtocolError, match="is not one of"):  # not a failure kind
        decode(json.dumps({"v": PROTOCOL_VERSION, "event": "failed", "t": 1.0, "kind": f"crash{CLEAR}"}))


def test_a_failure_the_runner_reports_with_the_workers_stderr_is_plain_text():
    record = RunRecord.new(RunOptions())
    record.fail("crash", f"worker crashed (signal 6): {CLEAR}", detail=f"stderr tail {CLEAR}\nlast line")
    assert "\x1b" not in record.error_message and SHOWN in record.error_message
    assert record.error_detail == f"stderr tail {SHOWN}\nlast line"
    record = RunRecord.new(RunOptions())
    record.apply(make_event("warning", 0.0, message=f"careful {CLEAR}"))
    assert record.warnings == [f"careful {SHOWN}"]


def _rendered(renderable, terminal: bool) -> str:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=terminal, width=120, color_system="truecolor" if terminal else None,
            soft_wrap=True).print(renderable)
    return buffer.getvalue()


def test_a_history_line_with_escapes_renders_as_text_in_the_details(tmp_path):
    record = RunRecord.new(RunOptions(workload=f"/tmp/evil{CLEAR}.py"))
    record.fail("workload_error", "x")
    line = {"schema": 2, **record.to_json(samples=False), "samples_file": None}
    line["error_message"] = f"bad{CLEAR}"
    line["error_detail"] = f"detail{CLEAR}"
    line["warnings"] = line["summary"]["warnings"] = [f"warn{CLEAR}"]  # the stored summary is what shows
    line["env"] = {"torch": f"2.13{CLEAR}"}
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps(line) + "\n")
    [loaded], problems = History(path).load()
    assert problems == []
    assert loaded.error_message == f"bad{SHOWN}" and loaded.env.torch == f"2.13{SHOWN}"
    styled = _rendered(render_details(loaded), terminal=True)
    assert "\x1b[2J" not in styled and "\x1b[H" not in styled  # rich's own colour codes stay
    output = _rendered(render_details(loaded), terminal=False)
    assert "bad\\x1b[2J" in output and "warn\\x1b[2J" in output and "evil\\x1b[2J" in output
    assert "\x1b" not in workload_label(loaded.options)


class _FailingRunner:
    """A runner whose every run fails with a message full of terminal commands."""

    keep_spare = False

    async def run(self, record, on_event=None):
        record.apply(make_event("failed", 0.1, kind="runtime_error", message=f"oops{CLEAR}",
                                detail=f"Traceback{CLEAR}"))
        return record

    async def aclose(self):
        pass

    def kill_all(self):
        pass


@pytest.mark.parametrize("quiet", [False, True], ids=["table", "quiet"])
def test_the_cli_prints_a_workers_escapes_as_text(monkeypatch, capfd, compile_lab_home, quiet):
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: _FailingRunner())
    code = cli.main(["run", "--workload", "pointwise", "--iters", "4"] + (["--quiet"] if quiet else []))
    out, err = capfd.readouterr()
    assert code == 1
    assert "\x1b[2J" not in out + err and "\x1b[H" not in out + err
    assert "oops\\x1b[2J" in out + err
