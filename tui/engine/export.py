"""Exports of run records: summary CSV, full JSON, raw per-iteration CSV.

Every write is atomic: the content goes to a temporary file in the target's directory,
is flushed and fsynced, then ``os.replace``-d over the target. A failure (missing
directory, permission, full disk, a record whose stored samples are gone) raises
:class:`ExportError` with one line naming the path and the cause; the temporary file is
removed and an existing file at the target is left untouched.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Sequence

from tui import paths
from tui.engine.columns import CSV_COLUMNS, RAW_COLUMNS
from tui.engine.results import RunRecord, SamplesUnavailable

__all__ = [
    "ExportError",
    "write_csv",
    "write_json",
    "write_raw_csv",
    "default_export_paths",
    "atomic_writer",
    "EXPORT_SCHEMA",
]

EXPORT_SCHEMA = 1


class ExportError(Exception):
    """An export could not be written; the message is one line naming the path and the cause."""


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


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, newline: str | None = "") -> Iterator[IO[str]]:
    """A text file (UTF-8) that replaces ``path`` only if the whole ``with`` block succeeds.

    Raises ExportError (one line: path and cause) on any OSError; the target is untouched then.
    """
    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        raise ExportError(f"cannot write {target}: directory {directory} does not exist")
    try:
        mode = target.stat().st_mode & 0o777 if target.is_file() else 0o644
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {_cause(exc)}") from exc
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; an export should read like any other file
    except OSError:
        pass
    raw = _FdWriter(fd)
    stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", newline=newline)
    try:
        yield stream
        stream.flush()
        os.fsync(fd)
        stream.close()
        os.replace(temp_name, target)
    except BaseException as exc:
        try:
            stream.close()
        except Exception:
            pass  # the original failure is what the user needs to see
        try:
            os.unlink(temp_name)
        except OSError:
            pass
        if isinstance(exc, (OSError, SamplesUnavailable)):
            raise ExportError(f"cannot write {target}: {_cause(exc)}") from exc
        raise
    finally:
        os.close(fd)


def write_csv(records: Iterable[RunRecord], path: str | os.PathLike[str]) -> Path:
    """One row per record, columns :data:`~tui.engine.results.CSV_COLUMNS` (header first)."""
    return _write_rows(path, CSV_COLUMNS, (record.to_row() for record in records))


def write_raw_csv(records: Iterable[RunRecord], path: str | os.PathLike[str]) -> Path:
    """One row per timed iteration of every record (:data:`~tui.engine.results.RAW_COLUMNS`)."""
    return _write_rows(path, RAW_COLUMNS, (row for record in records for row in record.raw_rows()))


def _write_rows(path: str | os.PathLike[str], columns: Sequence[str], rows: Iterable[dict[str, str]]) -> Path:
    with atomic_writer(path) as stream:
        writer = csv.DictWriter(stream, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def write_json(records: Iterable[RunRecord], path: str | os.PathLike[str]) -> Path:
    """``{"schema", "exported", "runs": [record.to_json() ...]}`` including per-iteration times."""
    with atomic_writer(path, newline=None) as stream:
        stream.write('{"schema": %d, "exported": %s, "runs": [' % (EXPORT_SCHEMA, json.dumps(_now_iso())))
        for i, record in enumerate(records):
            stream.write(",\n" if i else "\n")
            json.dump(record.to_json(samples=True), stream, separators=(",", ":"), allow_nan=False)
        stream.write("\n]}\n")
    return Path(path)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def default_export_paths(now: datetime | float | None = None) -> dict[str, Path]:
    """``{"csv", "raw_csv", "json"}`` paths under ``paths.exports_dir()`` named by a UTC timestamp.

    Creates the exports directory (ExportError if it cannot). When files of that second
    already exist, a ``-2``, ``-3``... suffix keeps every name new.
    """
    if now is None:
        moment = datetime.now(timezone.utc)
    elif isinstance(now, datetime):
        moment = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    else:
        moment = datetime.fromtimestamp(float(now), tz=timezone.utc)
    directory = paths.exports_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create {directory}: {_cause(exc)}") from exc
    stem = "compile-lab-" + moment.astimezone(timezone.utc).strftime("%Y%m%d-%H%M%S")
    suffix = ""
    for attempt in range(1, 1000):
        suffix = "" if attempt == 1 else f"-{attempt}"
        candidate = {
            "csv": directory / f"{stem}{suffix}.csv",
            "raw_csv": directory / f"{stem}{suffix}-raw.csv",
            "json": directory / f"{stem}{suffix}.json",
        }
        if not any(p.exists() for p in candidate.values()):
            return candidate
    return candidate
