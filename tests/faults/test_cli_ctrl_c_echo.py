"""Ctrl-C during ``compile-lab run`` on a terminal leaves each progress line once (issue 26 item 8).

The terminal echoes ``^C`` where its cursor is: after the live progress's last line. A line as
wide as the terminal made that echo wrap onto a new line, and Rich's redraw, which goes back up as
many lines as it drew, went up one line short: the first progress line stayed on screen twice. The
test runs the CLI on the fake worker with stderr a terminal of 100 columns (a stream that says it
is one), echoes ``^C`` into it when it sends SIGINT, and replays what was written on a model of a
terminal (autowrap, carriage return, cursor up, erase line).
"""

from __future__ import annotations

import io
import os
import re
import signal
import sys

from fault_helpers import FAKE_WORKER
from tui import cli
from tui.engine.protocol import BlockTimed
from tui.engine.runner import WorkerRunner

WIDTH = 100
CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


class _Terminal(io.StringIO):
    """What the CLI writes to its stderr, which says it is a terminal."""

    def isatty(self) -> bool:
        return True


def screen(text: str, width: int) -> list[str]:
    """The lines a terminal of ``width`` columns shows after ``text``: printable characters wrap at the right
    edge (deferred, as xterm's do), and \\r, \\n, cursor up (CSI A) and erase line (CSI K) move and clear."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pending = False
    position = 0
    for match in [*CSI.finditer(text), None]:
        end = match.start() if match else len(text)
        for char in text[position:end]:
            if char == "\r":
                col, pending = 0, False
            elif char == "\n":
                row, col, pending = row + 1, 0, False
            elif char.isprintable():
                if pending:
                    row, col, pending = row + 1, 0, False
                while len(lines) <= row:
                    lines.append([])
                line = lines[row]
                line.extend(" " * (col + 1 - len(line)))
                line[col] = char
                col += 1
                if col == width:
                    col, pending = width - 1, True
            while len(lines) <= row:
                lines.append([])
        if match is None:
            break
        position = match.end()
        argument, command = match.group(1), match.group(2)
        if command == "A":
            row, pending = max(0, row - int(argument or 1)), False
        elif command == "K":
            lines[row] = lines[row][:col] if argument in ("", "0") else []
    return ["".join(line).rstrip() for line in lines]


def test_the_model_wraps_a_full_line_only_when_more_follows():
    assert screen("a" * 10, 10) == ["a" * 10]
    assert screen("a" * 10 + "^C", 10) == ["a" * 10, "^C"]
    assert screen("one\ntwo\x1b[1A\r\x1b[2Kthree", 10) == ["three", "two"]


def test_ctrl_c_leaves_each_progress_line_once(tmp_path, monkeypatch, compile_lab_home):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    measured: list[str] = []

    class StoppedRunner(WorkerRunner):
        """The second run's first measured block: the user presses Ctrl-C (the terminal echoes it)."""

        async def run(self, record, on_event=None):
            def forward(event):
                if on_event is not None:
                    on_event(event)
                if isinstance(event, BlockTimed) and event.stage == "measure":
                    measured.append(record.run_id)
                    if len(set(measured)) == 2 and measured.count(record.run_id) == 1:
                        terminal.write("^C")
                        os.kill(os.getpid(), signal.SIGINT)

            return await super().run(record, forward)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: StoppedRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_BEHAVIOUR": "slow", "FAKE_WORKER_DELAY": "0.2"}))
    code = cli.main(["sweep", "--param", "n=64,128,256", "--device", "cpu", "--iters", "40", "--block-size", "5",
                     "--no-history"])
    assert code == 130
    shown = screen(terminal.getvalue(), WIDTH)
    firsts = [line for line in shown if line.startswith("[1/3]")]
    seconds = [line for line in shown if line.startswith("[2/3]")]
    assert len(firsts) == 1 and len(seconds) == 1, "\n".join(shown)
    assert "cancelled" in seconds[0] and "done" in firsts[0]
