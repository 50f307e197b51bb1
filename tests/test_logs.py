"""The log (tui.logs): a rotating file in the data dir, a copy on stderr with --debug, `env` names it."""

from __future__ import annotations

import logging

from tui import cli, logs
from tui.cli import info


def _read(path) -> str:
    for handler in logging.getLogger(logs.LOGGER).handlers:
        handler.flush()
    return path.read_text(encoding="utf-8")


def test_the_log_file_is_in_the_data_dir_and_made_by_the_first_record(compile_lab_home):
    path = logs.setup()
    assert path == compile_lab_home / "data" / "logs" / "compile-lab.log"
    assert not path.exists()  # a command that logs nothing leaves the data dir as it was
    logging.getLogger("tui.engine.example").warning("a %s", "warning")
    assert "WARNING tui.engine.example: a warning" in _read(path)


def test_a_caught_and_logged_exception_leaves_its_traceback_in_the_file():
    path = logs.setup()
    try:
        {}["missing"]
    except KeyError:
        logging.getLogger("tui.engine.example").exception("reading the table failed")
    text = _read(path)
    assert "ERROR tui.engine.example: reading the table failed" in text
    assert "Traceback (most recent call last):" in text and "KeyError: 'missing'" in text


def test_debug_copies_the_log_to_stderr_and_into_the_file(capsys):
    assert cli.main(["--debug", "workloads"]) == 0
    err = capsys.readouterr().err
    assert "DEBUG tui.cli: compile-lab" in err and "workloads" in err
    assert "DEBUG tui.cli: compile-lab" in _read(logs.log_file())
    assert cli.main(["workloads", "--debug"]) == 0  # after the command too
    assert "DEBUG tui.cli" in capsys.readouterr().err


def test_without_debug_stderr_stays_quiet_and_debug_records_are_dropped(capsys):
    assert cli.main(["workloads"]) == 0
    assert capsys.readouterr().err == ""
    assert not logs.log_file().exists()


def test_env_prints_the_log_files_path(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    monkeypatch.setattr(info, "_envcheck", lambda python: (None, "torch left out by the test"))
    cli.main(["env"])
    row = next(line for line in capsys.readouterr().out.splitlines() if "log file" in line)
    assert str(logs.log_file()) in row


def test_an_unwritable_log_says_so_once_and_logging_goes_on(compile_lab_home, capsys):
    compile_lab_home.mkdir()
    (compile_lab_home / "data").write_text("a file where the data dir should be")
    logs.setup()
    log = logging.getLogger("tui.engine.example")
    log.warning("first")
    log.warning("second")
    err = capsys.readouterr().err
    assert err.count("compile-lab: the log file") == 1 and "cannot be written" in err


def test_a_worker_logs_to_stderr_marked_so_the_parent_can_copy_it(capsys):
    logs.setup_worker()
    logging.getLogger("tui.engine.worker.example").warning("a worker warning")
    logging.getLogger("tui.engine.worker.example").debug("not this")
    err = capsys.readouterr().err
    assert err.startswith(logs.WORKER_MARK) and "a worker warning" in err and "not this" not in err


def test_the_parent_copies_what_its_worker_logged_into_its_own_file():
    from tui.engine.runner.worker_runner import _copy_worker_log

    path = logs.setup()
    _copy_worker_log("r1", 42, f"torch's own noise\n{logs.WORKER_MARK} 12:00 42 WARNING tui.x: boom\nTraceback ...\n")
    _copy_worker_log("r2", 43, "a worker that logged nothing\n")
    text = _read(path)
    assert "run r1: its worker (pid 42) logged:" in text and "tui.x: boom\nTraceback ..." in text
    assert "torch's own noise" not in text and "r2" not in text


def test_suppressed_goes_on_and_logs_what_it_swallowed():
    path = logs.setup(debug=True, stderr=False)
    with logs.suppressed(logging.getLogger("tui.engine.example"), "closing the thing"):
        raise OSError("already closed")
    text = _read(path)
    assert "DEBUG tui.engine.example: closing the thing failed\nTraceback" in text and "OSError: already closed" in text


def test_env_keeps_the_log_files_path_whole_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")  # a path longer than its cell was cut to "/tmp/.../data/…"
    monkeypatch.setattr(info, "_envcheck", lambda python: (None, "torch left out by the test"))
    cli.main(["env"])
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if "log file" in line)
    cells = []
    for line in lines[start:]:
        parts = line.split("│")
        if len(parts) < 3 or (cells and parts[1].strip()):
            break  # the next row (its first cell is filled) or the table's end
        cells.append(parts[2].strip())
    assert "".join(cells) == str(logs.log_file())
