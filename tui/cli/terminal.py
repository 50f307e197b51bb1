"""A CLI run's terminal and signals: the terminal's streams whose writes never raise, and the signals that stop
the run (Ctrl-C, SIGTERM, SIGHUP: the workers killed at once, the run loop cancelled, the exports still written).

Used by ``run``/``sweep`` (:mod:`tui.cli.run`) and ``tune`` (:mod:`tui.cli.tune`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from typing import IO, Any, cast

from tui.engine.run.session import RunSession

__all__ = ["TerminalFile", "forget_cancel", "signals_stop", "signals_deferred", "signal_words", "STOP_SIGNALS"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a CLI run: Ctrl-C, a kill, a closed terminal."""


class TerminalFile:
    """A terminal stream (stdout or stderr) whose writes never raise.

    Once a write or flush fails with OSError (the terminal was closed: EIO; the reader of a
    pipe left: EPIPE), ``gone`` is set and everything after is dropped. Anything else is
    the wrapped stream's (rich asks ``isatty``, ``encoding``, ``fileno``).
    """

    def __init__(self, stream: Any) -> None:
        self.stream = getattr(stream, "rich_proxied_file", stream)  # never a rich Live's proxy
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except (OSError, ValueError):  # ValueError: the stream was closed
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def as_io(self) -> IO[str]:
        """This file where a text stream is asked for (rich's Console): it is one by its methods and delegation."""
        return cast(IO[str], self)

    def let_go(self) -> None:
        """When the terminal is gone, point its file descriptor at /dev/null.

        What the stream still buffers would fail again when the interpreter flushes it at exit,
        and turn exit code 129 into 1 (the way Python's documentation suggests for EPIPE).
        """
        if not self.gone:
            return
        try:
            fd = self.stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
        except (OSError, ValueError, AttributeError):
            return  # not a real file descriptor (a test's capture): nothing will flush it at exit
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()


def forget_cancel() -> None:
    """Let this task await again after its cancellation was handled (Python 3.11+ counts them)."""
    task = asyncio.current_task()
    uncancel = getattr(task, "uncancel", None)
    if uncancel is not None:
        while uncancel() > 0:
            pass


def signal_words(signum: int) -> str:
    """What a stop signal is called in what the CLI says: ``Ctrl-C`` for SIGINT, else ``signal 15``."""
    return "Ctrl-C" if signum == signal.SIGINT else f"signal {signum}"


@contextlib.contextmanager
def signals_stop(session: RunSession, stopped_by: list[int], cancelled: str | None = None) -> Any:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP kill the workers and cancel the run loop. ``cancelled``: the runs the
    signal cancels say so with it and the signal's words (``cancelled: stopped (Ctrl-C)``), set before any of them
    ends; None leaves their reason to the caller (a tune's driver says its own)."""
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        if cancelled is not None and not stopped_by:
            session.stop_starting()  # else a run whose cancel ends it at once would start the next one queued
            session.cancel_running(reason=f"{cancelled} ({signal_words(signum)})")
        session.kill_all()
        stopped_by.append(signum)
        # Once: a second signal (a closed terminal sends SIGHUP, then the shell's own) must not
        # cancel the closing and exporting that the first one started.
        if main_task is not None and len(stopped_by) == 1:
            main_task.cancel()

    installed: list[tuple[int, Any]] = []
    for signum in STOP_SIGNALS:
        try:
            previous = signal.getsignal(signum)
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append((signum, previous))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for number, _previous in installed:
            loop.remove_signal_handler(number)
        _put_back(installed)


@contextlib.contextmanager
def signals_deferred(stopped_by: list[int]) -> Iterator[None]:
    """While the results are written (the exports, the table): a stop signal is noted in ``stopped_by``, not acted
    on, so no export is cut short and no temporary file is left in the user's directory; the caller's exit code
    says it came. Outside the main thread (nothing to install) it does nothing."""
    previous: list[tuple[int, Any]] = []

    def note(signum: int, _frame: Any) -> None:
        stopped_by.append(signum)

    for signum in STOP_SIGNALS:
        try:
            previous.append((signum, signal.signal(signum, note)))
        except (ValueError, OSError):
            break  # not the main thread: the default handlers stay
    try:
        yield
    finally:
        _put_back(previous)


def _put_back(handlers: list[tuple[int, Any]]) -> None:
    """Install each signal's handler as it was before (the default where it was none set from Python)."""
    for number, handler in handlers:
        with contextlib.suppress(TypeError, ValueError, OSError):
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
