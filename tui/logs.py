"""compile-lab's log: stdlib :mod:`logging` to a rotating file in the data dir, and to stderr with ``--debug``.

Every module logs through ``logging.getLogger(__name__)`` (all under the ``tui`` logger); a caught
exception that is not shown to the user is logged with its traceback (``log.exception`` or
``exc_info=True``), so a bug report has something to attach.

One process writes the file: the parent (the CLI or the app), configured by :func:`setup`. A worker
process never opens it: :func:`setup_worker` sends the worker's records to its stderr, which the parent
already reads (a failed run's detail is its tail) and copies into the parent's log when the worker
logged something (:data:`WORKER_MARK`). Two compile-lab processes at once append whole records to one
file; a rotation by one of them while the other writes can at worst leave a record in the rotated file.

This module imports neither torch nor textual.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path

__all__ = ["LOGGER", "MAX_BYTES", "BACKUPS", "WORKER_MARK", "log_file", "setup", "setup_worker", "reset", "suppressed"]

LOGGER = "tui"
"""The logger every compile-lab module's logger sits under (``tui.engine.run.session``, ...)."""

MAX_BYTES = 1_000_000
"""The log file's size before it rotates (``compile-lab.log`` -> ``compile-lab.log.1``)."""

BACKUPS = 3
"""How many rotated files are kept."""

WORKER_MARK = "compile-lab worker log:"
"""How a worker's log record starts on its stderr (the parent finds its records by it)."""

_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def log_file() -> Path:
    """The log file: ``logs/compile-lab.log`` in the data dir (``COMPILE_LAB_HOME`` moves it)."""
    from tui import paths

    return paths.data_dir() / "logs" / "compile-lab.log"


class _LogFile(RotatingFileHandler):
    """The rotating file, its directory made when the first record is written.

    The file is opened lazily, so a command that logs nothing leaves the data dir untouched. When it
    cannot be written (a read-only data dir), stderr says so once and the handler goes quiet:
    logging must never end a run.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True)
        self.failed = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.failed:
            return
        if self.stream is None:  # the first record: the file and its directory may not exist yet
            try:
                Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                self.handleError(record)
                return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            error = sys.exc_info()[1]
            sys.stderr.write(f"compile-lab: the log file {self.baseFilename} cannot be written ({error}); "
                             "nothing more is logged\n")


_installed: list[logging.Handler] = []
"""The handlers the last setup added (the next one replaces them)."""


def _install(handler: logging.Handler, level: int, form: str = _FORMAT) -> None:
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(form))
    logging.getLogger(LOGGER).addHandler(handler)
    _installed.append(handler)


def _reset(level: int) -> None:
    logger = logging.getLogger(LOGGER)
    while _installed:
        handler = _installed.pop()
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(level)


def setup(debug: bool = False, stderr: bool = True) -> Path:
    """Log to the rotating file (info and up; everything with ``debug``); with ``debug`` to stderr too.

    ``stderr`` False: no stderr copy even with ``debug`` (the app draws on the terminal). Calling it
    again replaces what the last call set up. Returns the log file's path.
    """
    level = logging.DEBUG if debug else logging.INFO
    _reset(level)
    path = log_file()
    _install(_LogFile(path), level)
    if debug and stderr:
        _install(logging.StreamHandler(sys.stderr), logging.DEBUG)
    return path


def setup_worker() -> None:
    """In a worker process: records (info and up) go to stderr, each starting with :data:`WORKER_MARK`."""
    _reset(logging.INFO)
    _install(logging.StreamHandler(sys.stderr), logging.INFO, f"{WORKER_MARK} {_FORMAT}")


def reset() -> None:
    """Remove what the last setup added (the tests do, so no handler outlives its test's data dir)."""
    _reset(logging.NOTSET)


@contextlib.contextmanager
def suppressed(logger: logging.Logger, doing: str, level: int = logging.DEBUG) -> Iterator[None]:
    """``contextlib.suppress(Exception)`` for a step that must not fail its caller (closing, killing), except
    that the exception is logged with its traceback (``<doing> failed``) instead of vanishing."""
    try:
        yield
    except Exception:
        logger.log(level, "%s failed", doing, exc_info=True)
