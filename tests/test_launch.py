"""``compile-lab`` with no subcommand: the app opens only on a terminal it can read keys from and draw on."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import tui.launch
from tui.launch import not_a_terminal


def test_each_stream_that_is_no_terminal_is_named():
    master, slave = pty.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            assert not_a_terminal(tty, tty) is None
            assert not_a_terminal(io.StringIO(), tty) == "input (stdin)"
            assert not_a_terminal(tty, io.StringIO()) == "screen (stderr)"
            assert not_a_terminal(tty, None) == "screen (stderr)"
            closed = io.StringIO()
            closed.close()
            assert not_a_terminal(closed, tty) == "input (stdin)"
    finally:
        os.close(master)
        os.close(slave)


def test_without_a_terminal_the_app_is_refused_in_one_line_before_textual_loads(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    monkeypatch.delitem(sys.modules, "tui.app.app", raising=False)
    assert tui.launch.main([]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == ["compile-lab: error: the app needs a terminal, and its input (stdin) is not one; `compile-lab "
                     "run`, `sweep` and `tune` work without one (`compile-lab run --help`)"]
    assert "tui.app.app" not in sys.modules


def test_compile_lab_from_a_script_without_a_terminal_exits_at_once():
    """It used to start the app, which waited for keys that never came, a core busy until it was killed."""
    done = subprocess.run([sys.executable, "-m", "tui"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("compile-lab: error: the app needs a terminal") and done.stdout == ""


def test_the_check_reads_the_processes_own_streams(monkeypatch):
    seen = []
    monkeypatch.setattr(tui.launch, "not_a_terminal", lambda keys, screen: seen.append((keys, screen)) or "x")
    assert tui.launch.open_app() == 2
    assert seen == [(sys.stdin, sys.stderr)]


def test_a_ctrl_c_before_a_command_takes_the_signals_is_one_line_and_exit_130(monkeypatch, capsys):
    """Ctrl-C while ``tune`` asked torch which options it has printed Python's traceback."""
    import tui.cli

    def interrupted(argv, open_app=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(tui.cli, "main", interrupted)
    assert tui.launch.main(["tune", "--workload", "mlp"]) == 130
    assert capsys.readouterr().err.strip() == "compile-lab: stopped (Ctrl-C)"
