"""Reading a file someone else named: a regular file of bounded size, read without ever blocking.

``compare`` and ``report`` read JSON exports the user names, the history's selections read each
run's samples file, and the app reads its config: :func:`read_regular` is how all of them read.
What is not a regular file (a named pipe, a device, a socket, a directory) is refused before it is
opened (``os.stat``): a pipe would block the read forever, ``/dev/zero`` would fill the memory.
The file is then opened with ``O_NONBLOCK`` (a pipe put in its place after the check cannot block
the open either) and checked again on its descriptor; more than the cap is refused rather than
read. A refusal is an :class:`InputFileError`, an ``OSError`` whose text says what the file is and
what is allowed, so every reader's ``except OSError`` already turns it into its one line.

What those files hold is parsed by :func:`load_json`: whatever JSON cannot be read (a syntax error,
bytes that are no UTF-8, a number too long, nesting deeper than Python's recursion limit) is one
:class:`JSONError`, a ``ValueError`` whose text says why in a few words, never a RecursionError.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["InputFileError", "INPUT_MAX_BYTES", "JSONError", "file_kind", "format_cap", "load_json", "read_regular"]

INPUT_MAX_BYTES = 1 << 30
"""The largest file :func:`read_regular` reads by default (1 GiB): a JSON export of a sweep of
thousands of runs is a few hundred MB; anything larger is no compile-lab file."""

_CHUNK = 1 << 20


class InputFileError(OSError):
    """A file that may not be read: ``is a named pipe (FIFO) (allowed: a regular file of at most 1 GiB)``.

    The path is not in the text: each reader puts the file's name, in its own words, before it.
    ``kind``: what the file is when it is no regular file (``a named pipe (FIFO)``); None for one too big.
    """

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (``a named pipe (FIFO)``); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, words in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def format_cap(limit: int) -> str:
    """``1 GiB``, ``256 MiB``, ``1000 bytes``: a cap as the refusals say it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def _allowed(limit: int) -> str:
    return f"(allowed: a regular file of at most {format_cap(limit)})"


def _check(info: os.stat_result, limit: int) -> None:
    what = file_kind(info.st_mode)
    if what is not None:
        raise InputFileError(f"is {what} {_allowed(limit)}", what)
    if info.st_size > limit:
        raise InputFileError(f"is {info.st_size} bytes {_allowed(limit)}")


def read_regular(path: str | os.PathLike[str], limit: int = INPUT_MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them.

    InputFileError (an OSError) for anything but a regular file, or a file over ``limit`` bytes
    (also one that grows past it while read); other OSErrors (no such file, permission) as raised.
    """
    _check(os.stat(path), limit)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _check(os.fstat(fd), limit)  # what was opened, should the path have changed since the check
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:
                raise InputFileError(f"is more than {format_cap(limit)} {_allowed(limit)}")
            chunks.append(chunk)
    finally:
        os.close(fd)


class JSONError(ValueError):
    """Text that is no JSON compile-lab can read; the text says why (``nested too deeply``, ``line 1 column 5: ...``).

    A ``ValueError``, as ``json.loads``'s own errors are: a reader's ``except ValueError`` still catches it.
    """


def load_json(raw: bytes | str) -> Any:
    """The value of the JSON text ``raw`` (bytes as UTF-8, a BOM allowed), or :class:`JSONError` saying why not.

    Deep nesting (``[[[[...`` thousands of levels) makes the parser raise RecursionError, which no
    caller's ``except ValueError`` catches; here it is one more reason a file is not readable JSON.
    """
    try:
        return json.loads(raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw)
    except RecursionError:
        raise JSONError("nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise JSONError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise JSONError(f"not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}") from None
    except ValueError as exc:  # a number too long for int()
        raise JSONError(str(exc).splitlines()[0] if str(exc) else "not JSON") from None
