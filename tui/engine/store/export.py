"""Exports of run records: summary CSV, full JSON, raw per-iteration CSV, listed once in :data:`EXPORT_FORMATS`.

The CLI's output flags, the app's export (its dialog, its files, its notice) and the paths of an
export all read :data:`EXPORT_FORMATS`, so a new format is a writer and an entry here. Both front
ends write through :func:`export_records` (records and each format's target path) after asking
:func:`anything_to_export`; what they say about it is theirs.

Every write is atomic (:mod:`tui.engine.atomic`): the content goes to a temporary file in the
target's directory, is flushed and fsynced, then put in place over the target. A failure (missing
directory, permission, full disk, stored samples that hold an impossible time) raises
:class:`ExportError` with one line naming the path and the cause; the temporary file is
removed and an existing file at the target is left untouched.
A run whose stored samples were pruned or cannot be read is exported with its stored summary and
no samples; :func:`samples_left_out` names the unreadable ones.

Only regular files are written (or created): a target that is a symbolic link, a device, a
named pipe, a socket or a directory is refused (:class:`ExportTargetError`), checked with
``os.lstat`` before anything is opened and again right before the rename, so nothing of that
kind is ever followed, opened or replaced. A link in a parent directory is fine (``~/data ->
/mnt/data``); only the last component must not be one. The exports also refuse compile-lab's
own data files (the history, anything under the runs or locks directory, the config file):
:func:`check_target` says why in one line, and the CLI asks it before any run starts.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from tui import paths
from tui.engine.store.columns import CSV_COLUMNS, RAW_COLUMNS
from tui.engine.atomic import ExportError, ExportTargetError, cause, existing_regular
from tui.engine.atomic import atomic_writer as _atomic_writer
from tui.engine.input_file import file_kind
from tui.engine.status import RunStatus
from tui.engine.store.reproduce import reproduce_command
from tui.engine.store.results import RunRecord, SamplesInvalid, SamplesPruned, SamplesUnavailable
from tui.typed import finite

logger = logging.getLogger(__name__)

__all__ = [
    "ExportError",
    "ExportTargetError",
    "check_target",
    "check_directory",
    "check_output",
    "data_file_role",
    "same_file_key",
    "write_csv",
    "write_json",
    "write_raw_csv",
    "default_export_paths",
    "export_files",
    "free_suffix",
    "ours",
    "ExportFormat",
    "EXPORT_FORMATS",
    "default_formats",
    "Exported",
    "export_records",
    "anything_to_export",
    "samples_left_out",
    "atomic_writer",
    "EXPORT_SCHEMA",
]

EXPORT_SCHEMA = 2
"""The JSON export's schema: 2 stores each run's ``precision`` option where 1 had a boolean ``tf32``
(a schema-1 file is still read: tui.engine.store.stored_options.upgrade_tf32_run)."""


#: What an export may write to outside compile-lab's own data.
ALLOWED_OUTSIDE_DATA = "a file outside compile-lab's history, runs, locks and config"


def atomic_writer(path: str | os.PathLike[str], *, newline: str | None = "") -> AbstractContextManager[IO[str]]:
    """:func:`tui.engine.atomic.atomic_writer`, where stored samples that hold an impossible time
    (:class:`SamplesInvalid`) are a failure too."""
    return _atomic_writer(path, newline=newline, failures=(OSError, SamplesUnavailable))


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def data_file_role(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is to compile-lab (``"compile-lab's history file"``...), None for any other path.

    Compared after resolving links in every component, so a path that reaches the history
    through a linked directory is still the history; whether the files exist does not matter.
    """
    real = _real(path)
    if real == _real(paths.history_file()):
        return "compile-lab's history file"
    if real == _real(paths.config_file()):
        return "compile-lab's config file"
    for directory, words in ((paths.runs_dir(), "runs"), (paths.locks_dir(), "locks")):
        if _inside(real, _real(directory)):
            return f"in compile-lab's {words} directory ({directory})"
    return None


def same_file_key(path: str | os.PathLike[str]) -> str:
    """A key equal for two paths that name one file (links in any component resolved)."""
    return _real(path)


def check_target(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path when an export may write it, else ExportTargetError (one line, path and why).

    Refused: an empty path, a symbolic link (dangling or not), a directory, a device, a named
    pipe, a socket, and compile-lab's own data files. A missing directory is not judged here:
    writing says so (the directory may be made before the runs end).
    """
    text = os.fspath(path)
    if not text:
        raise ExportTargetError("", "empty", "a file path")
    if text.endswith(os.sep) or (os.altsep and text.endswith(os.altsep)):
        raise ExportTargetError(text, "a directory name (it ends in a slash)", "a file path")
    target = Path(text)
    existing_regular(target)
    role = data_file_role(target)
    if role is not None:
        raise ExportTargetError(target, role, ALLOWED_OUTSIDE_DATA)
    return target


def check_directory(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path when exports may write files into it, else ExportTargetError (one line).

    Allowed: an existing directory, or a new one (made when written). Refused: an empty path, a symbolic
    link, anything that is not a directory, and a directory inside compile-lab's runs or locks directory.
    """
    text = os.fspath(path)
    if not text:
        raise ExportTargetError("", "empty", "a directory path")
    target = Path(text)
    try:
        info = os.lstat(target)
    except OSError:
        info = None
    allowed = "a directory, or a new one (not a link)"
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise ExportTargetError(target, file_kind(info.st_mode) or "a regular file", allowed)
    role = data_file_role(target)
    if role is not None:
        raise ExportTargetError(target, role, "a directory outside compile-lab's runs and locks directories")
    return target


def check_output(path: str | os.PathLike[str], *, directory: bool = False) -> Path:
    """The one rule for an output path, checked before anything runs (``run``, ``sweep``, ``compare``, ``report``,
    the app's export prompt; any command that writes files should ask it first).

    What :func:`check_target` refuses (or :func:`check_directory`, with ``directory``: a sweep's ``--trace``),
    and where it would be written: a file's directory must exist and be writable by this user; a directory
    that does not exist yet is made when written, so the nearest one above it that exists must be.
    ExportTargetError, one line. Only a full disk is left for writing to find.
    """
    target = check_directory(path) if directory else check_target(path)
    where = target.parent
    if directory:
        where = target
        while not os.path.lexists(where) and where != where.parent:
            where = where.parent
    kind = "a directory, or a new one" if directory else "a file"
    if not where.is_dir():
        what = "does not exist" if not os.path.lexists(where) else "is not a directory"
        raise ExportTargetError(target, f"in {where}, which {what}", f"{kind} in an existing directory")
    if not os.access(where, os.W_OK | os.X_OK):
        raise ExportTargetError(target, f"in {where}, which this user cannot write", f"{kind} in a directory you "
                                "can write")
    why = _cannot_create_in(where)
    if why is not None:
        raise ExportTargetError(target, f"in {where}, where no file can be made ({why})", f"{kind} in a directory "
                                "you can write")
    return target


def _cannot_create_in(where: Path) -> str | None:
    """Why no file can be made in ``where``, or None: a hidden file of ours is made there and removed at once.
    The permission bits pass root everywhere, and a read-only mount, ``/proc`` or an NFS server's refusal is
    found only by trying; tried before anything runs, not after an hour of runs."""
    try:
        handle, name = tempfile.mkstemp(prefix=".compile-lab-check-", dir=where)
    except OSError as exc:
        return cause(exc)
    os.close(handle)
    try:
        os.unlink(name)
    except OSError as exc:  # ours, and empty: left behind, said in the log
        logger.warning("could not remove %s", name, exc_info=exc)
    return None


def write_csv(records: Iterable[RunRecord], path: str | os.PathLike[str]) -> Path:
    """One row per configuration, columns :data:`~tui.engine.store.results.CSV_COLUMNS` (header first).

    Runs repeated across processes (one ``group_id``) make one row, their
    :class:`~tui.engine.store.repeats.GroupRecord`; a run alone is its own row.
    """
    from tui.engine.store.repeats import GroupRecord, group_records

    groups = group_records(records)
    rows = ((members[0] if len(members) == 1 else GroupRecord.of(members)).to_row() for members in groups)
    return _write_rows(check_target(path), CSV_COLUMNS, rows)


def write_raw_csv(records: Iterable[RunRecord], path: str | os.PathLike[str]) -> Path:
    """One row per timed iteration of every record (:data:`~tui.engine.store.results.RAW_COLUMNS`)."""
    return _write_rows(check_target(path), RAW_COLUMNS, (row for record in records for row in record.raw_rows()))


def _write_rows(path: str | os.PathLike[str], columns: Sequence[str], rows: Iterable[dict[str, str]]) -> Path:
    with atomic_writer(path) as stream:
        writer = csv.DictWriter(stream, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def write_json(records: Iterable[RunRecord], path: str | os.PathLike[str],
               extra: Mapping[str, Any] | None = None) -> Path:
    """``{"schema", "exported", "runs": [record.to_json() ...], "groups": [...]}`` with per-iteration times.

    ``extra``: more top-level keys, written after ``exported`` (``tune``: a search's answer); readers of the
    runs ignore them.

    Each run also has ``command``: the ``compile-lab run ...`` line that reproduces its options
    (:func:`tui.engine.store.reproduce.reproduce_command`).

    ``runs`` holds every process's run (a :class:`~tui.engine.store.repeats.GroupRecord` stands for its
    members); ``groups`` the :class:`~tui.engine.store.repeats.GroupSummary` of each configuration that
    ran in more than one process.
    """
    from tui.engine.store.repeats import GroupRecord, group_rows, members_of

    path = check_target(path)
    with atomic_writer(path, newline=None) as stream:
        rows = group_rows(records)  # inside: stored samples that hold an impossible time make an ExportError
        stream.write(f'{{"schema": {EXPORT_SCHEMA:d}, "exported": {json.dumps(_now_iso())}, ')
        for key, value in (extra or {}).items():
            stream.write(f"{json.dumps(key)}: {json.dumps(finite(value), allow_nan=False)}, ")
        stream.write('"runs": [')
        for i, record in enumerate(members_of(rows)):
            stream.write(",\n" if i else "\n")
            data = record.to_json(samples=True)
            data["command"] = reproduce_command(record.options)  # the run's `compile-lab run ...`; readers ignore it
            json.dump(data, stream, separators=(",", ":"), allow_nan=False)
        stream.write('\n], "groups": [')
        groups = [row.group.to_json() for row in rows if isinstance(row, GroupRecord)]
        for i, group in enumerate(groups):
            stream.write(",\n" if i else "\n")
            json.dump(finite(group), stream, separators=(",", ":"), allow_nan=False)
        stream.write("\n]}\n" if groups else "]}\n")
    return Path(path)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


#: A writer: the records and the target path in, the path written out (ExportError: nothing written).
Writer = Callable[[Iterable[RunRecord], str | os.PathLike[str]], Path]


@dataclass(frozen=True)
class ExportFormat:
    """One export format: its name, its file name's ending, what it holds, and the function that writes it."""

    name: str
    """The key of its path (``default_export_paths``) and the CLI's attribute; the flag is ``--`` + it, dashed."""
    suffix: str
    """What follows an export's stem in its file name (``-raw.csv``: ``compile-lab-...-raw.csv``)."""
    label: str
    """Its name in a list of the files (the app's export dialog and palette)."""
    contents: str
    """What it holds, for the CLI flag's help (``write <contents>``)."""
    writer: Writer
    head: str = ""
    """How a file it wrote begins, a regular expression matched at its start: a file beside a typed name is
    replaced only when it begins so (:func:`ours`; empty: never, only a free name is written there)."""
    default: bool = True
    """Written by the app's export (``e``, ``E``); the CLI writes a format only when its flag is given."""

    @property
    def flag(self) -> str:
        """The CLI's output flag (``--raw-csv``)."""
        return "--" + self.name.replace("_", "-")


EXPORT_FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat("csv", ".csv", "CSV", "the summary CSV", write_csv, "run_id,timestamp,"),
    ExportFormat("json", ".json", "JSON", "every run as JSON (with per-iteration times)", write_json,
                 r'\{"schema": \d+, "exported": "'),
    ExportFormat("raw_csv", "-raw.csv", "raw per-iteration CSV", "one CSV row per timed iteration", write_raw_csv,
                 "run_id,side,stage,"),
)
"""Every export format, in the order the CLI lists and writes them; the first is the one a typed
``.csv`` path names in the app (the others are written beside it)."""


def ours(fmt: ExportFormat, path: Path) -> bool:
    """Whether ``path`` is free, or a regular file that begins as ``fmt``'s exports do (compile-lab's, to replace);
    a link is not followed, a pipe not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    with os.fdopen(fd, "rb") as stream:
        if not (fmt.head and stat.S_ISREG(os.fstat(fd).st_mode)):
            return False
        return re.match(fmt.head, stream.read(_HEAD_BYTES).decode("utf-8", "replace")) is not None


_HEAD_BYTES = 256
"""How much of a file :func:`ours` reads to tell an export of a format by its head."""


def default_formats() -> tuple[ExportFormat, ...]:
    """The formats the app's export writes, in order."""
    return tuple(f for f in EXPORT_FORMATS if f.default)


def export_files(stem: Path) -> dict[str, Path]:
    """Each default format's path: ``stem``'s name followed by the format's suffix, in ``stem``'s directory."""
    return {f.name: stem.with_name(stem.name + f.suffix) for f in default_formats()}


def default_export_paths(now: datetime | float | None = None, directory: Path | None = None) -> dict[str, Path]:
    """Each default format's path (:func:`export_files`) under ``directory`` (default ``paths.exports_dir()``, made
    if missing: ExportError if it cannot), named by a UTC timestamp. When files of that second already exist
    there, a ``-2``, ``-3``... suffix keeps every name new.
    """
    if now is None:
        moment = datetime.now(timezone.utc)
    elif isinstance(now, datetime):
        moment = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    else:
        moment = datetime.fromtimestamp(float(now), tz=timezone.utc)
    if directory is None:
        directory = paths.exports_dir()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExportError(f"cannot create {directory}: {cause(exc)}") from exc
    stem = directory / ("compile-lab-" + moment.astimezone(timezone.utc).strftime("%Y%m%d-%H%M%S"))

    def named(suffix: str) -> dict[str, Path]:
        return export_files(stem.with_name(stem.name + suffix))

    return named(free_suffix(lambda suffix: named(suffix).values()))


def free_suffix(names: Callable[[str], Iterable[Path]]) -> str:
    """The first of ``""``, ``-2``, ``-3``, ... for which none of ``names(suffix)`` is taken (a link, even one that
    leads nowhere, takes its name): a folder the user named gets new files, nothing in it replaced. After 999
    tries, the last (its writing then refuses what is there)."""
    suffix = ""
    for attempt in range(1, 1000):
        suffix = "" if attempt == 1 else f"-{attempt}"
        if not any(os.path.lexists(path) for path in names(suffix)):
            break
    return suffix


@dataclass(frozen=True)
class Exported:
    """One format's outcome of :func:`export_records`: the path written, or the ExportError that says why not."""

    fmt: ExportFormat
    target: str | os.PathLike[str]
    """The path as given."""
    result: Path | ExportError


def anything_to_export(records: Iterable[RunRecord]) -> bool:
    """Whether ``records`` (rows: a group stands for its runs) hold a run that was done or failed.

    Both front ends' rule: cancelled runs alone (or none) are not exported, so they never replace an
    existing export.
    """
    from tui.engine.store.repeats import members_of

    return any(record.status in (RunStatus.DONE, RunStatus.FAILED) for record in members_of(records))


def samples_left_out(records: Iterable[RunRecord]) -> list[str]:
    """A line for each run (rows: a group stands for its runs) whose stored samples cannot be read, so its export
    has none (JSON ``samples`` null, no raw rows) while its stored summary is kept. The app's export says the
    lines (the command line exports its own runs, their samples in memory). A run whose samples were pruned is
    not named (the user's own ``compile-lab prune``); samples that hold an impossible time are not left out:
    writing them fails (:class:`SamplesInvalid`)."""
    from tui.engine.store.repeats import members_of

    lines = []
    for record in members_of(records):
        try:
            record.loaded_samples()  # loaded once: the writers read them again from the record
        except (SamplesPruned, SamplesInvalid):
            continue
        except SamplesUnavailable as exc:
            if record.samples_file:
                lines.append(f"{exc}: exported without its per-iteration samples")
    return lines


def export_records(records: Sequence[RunRecord], targets: Mapping[str, str | os.PathLike[str]], *,
                   keep_going: bool = True, json_extra: Mapping[str, Any] | None = None) -> list[Exported]:
    """Write ``records`` in each format ``targets`` names (format name -> path), in :data:`EXPORT_FORMATS`' order.

    Returns each format's outcome; a failure (ExportError) is an outcome, and the formats after it are
    still written unless ``keep_going`` is False (then the failure is the last outcome). ``json_extra``: top-level
    keys the JSON export adds (:func:`write_json`).
    """
    outcomes = []
    for fmt in EXPORT_FORMATS:
        if fmt.name not in targets:
            continue
        target = targets[fmt.name]
        try:
            if fmt.writer is write_json and json_extra:
                result: Path | ExportError = write_json(records, target, json_extra)
            else:
                result = fmt.writer(records, target)
        except ExportError as exc:
            result = exc
        outcomes.append(Exported(fmt, target, result))
        if isinstance(result, ExportError) and not keep_going:
            break
    return outcomes
