"""Writing a file so that it is either whole or untouched: :func:`atomic_writer`, and its errors.

The bottom of the engine's file writing (stdlib only): exports, the history, prune's record,
the run folders' files and the report all write through it. The text goes to a temporary file
in the target's directory, is flushed and fsynced, then put in place; a failure leaves the
target as it was and raises :class:`ExportError` (one line: path and cause). Only a regular
file is ever replaced (:class:`ExportTargetError` for anything else, a link included).
"""

from __future__ import annotations

import io
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tui.engine.input_file import file_kind

__all__ = ["ExportError", "ExportTargetError", "ALLOWED_TARGET", "existing_regular", "atomic_writer", "cause"]

logger = logging.getLogger(__name__)


class ExportError(Exception):
    """An export could not be written; the message is one line naming the path and the cause."""


#: What an export may write to, said after every refusal of its target.
ALLOWED_TARGET = "a regular file, or a new file in an existing directory"


class ExportTargetError(ExportError):
    """The target is not something an export may write: ``<path> is <what> (allowed: ...)``."""

    def __init__(self, path: str | os.PathLike[str], what: str, allowed: str = ALLOWED_TARGET) -> None:
        self.path, self.what, self.allowed = os.fspath(path), what, allowed
        super().__init__(f"{self.path or 'the path'} is {what} (allowed: {allowed})")


def existing_regular(target: Path) -> os.stat_result | None:
    """The target's lstat when it is a regular file, None when there is nothing there.

    Raises ExportTargetError for anything else (a link, dangling or not, is never followed).
    Never opens the target: a named pipe or a device is only looked at.
    """
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # e.g. a parent that is a file: creating the temporary file says why
    what = file_kind(info.st_mode)
    if what is not None:
        raise ExportTargetError(target, what)
    return info


class _FdWriter(io.RawIOBase):
    """Raw writes straight to a file descriptor with os.write (whole buffer, retrying short writes)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        total = len(view)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        return total


def cause(exc: BaseException) -> str:
    """An OSError's own words (``No space left on device``), else the exception's text on one line."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``/proc/self/status``); elsewhere set and
    put back at once (``os.umask`` only reads by writing)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError) as exc:
        logger.debug("the umask is not in /proc/self/status", exc_info=exc)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, newline: str | None = "",
                  failures: tuple[type[BaseException], ...] = (OSError,),
                  new_mode: int | None = None) -> Iterator[IO[str]]:
    """A text file (UTF-8) that replaces ``path`` only if the whole ``with`` block succeeds.

    A replaced file keeps its mode; a new one gets ``new_mode`` (the app's config: 0o600, private), else what
    ``open()`` would give it (0o666 less the umask).

    Raises ExportError (one line: path and cause) on any OSError; the target is untouched then.
    Only a regular file is replaced (ExportTargetError for a link, device, pipe, socket or
    directory, checked before anything is opened and again right before the rename); a target
    that did not exist is created without replacing whatever appeared there meanwhile.
    """
    target = Path(path)
    if not os.fspath(path):
        raise ExportTargetError("", "empty", "a file path")
    directory = target.parent
    if not directory.is_dir():
        raise ExportError(f"cannot write {target}: directory {directory} does not exist")
    existing = existing_regular(target)
    try:
        mode = existing.st_mode & 0o777 if existing is not None else \
            new_mode if new_mode is not None else 0o666 & ~_umask()
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {cause(exc)}") from exc
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; a new file gets what open() would give it, a replaced one its own
    except OSError as exc:  # the file is still written, with mkstemp's 0600: private, never more open
        logger.warning("could not give %s the mode %o", target, mode, exc_info=exc)
    raw = _FdWriter(fd)
    stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", newline=newline)
    try:
        yield stream
        stream.flush()
        os.fsync(fd)
        stream.close()
        _put_in_place(temp_name, target, existed=existing is not None)
    except BaseException as exc:
        try:
            stream.close()
        except (OSError, ValueError):
            pass  # the original failure (raised below) is what the user needs to see
        try:
            os.unlink(temp_name)
        except OSError:
            pass
        if isinstance(exc, failures):
            raise ExportError(f"cannot write {target}: {cause(exc)}") from exc
        raise
    finally:
        os.close(fd)


def _put_in_place(temp_name: str, target: Path, existed: bool) -> None:
    """Move the finished temporary file to ``target``, replacing only a regular file that was there when the write
    began (``existed``).

    Checked again right before: a link, pipe, device or directory that appeared while the
    file was written is refused, and so is a file that appeared where there was none (someone
    else's: :class:`ExportTargetError`). Where nothing is there, a hard link creates the target
    without replacing anything (it fails if something appeared after the check); a file
    system without hard links gets the rename.
    """
    if existing_regular(target) is None:
        try:
            os.link(temp_name, target, follow_symlinks=False)
        except FileExistsError:
            _appeared(target)
        except OSError:
            pass  # no hard links here (EPERM, ENOTSUP...): the rename below
        else:
            try:
                os.unlink(temp_name)
            except OSError:
                pass  # the export is in place; a stray hidden temporary name is all that is left
            return
    elif not existed:
        _appeared(target)
    os.replace(temp_name, target)


def _appeared(target: Path) -> None:
    """Refuse ``target``, which appeared while the file was written: anything but a regular file by its kind, a
    regular file because it is not ours to replace."""
    existing_regular(target)
    raise ExportTargetError(target, "a file that appeared while this one was written, left alone",
                            "a path left as it is while compile-lab writes it")
