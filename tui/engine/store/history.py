"""The run history: one JSON line per ended run, appended and never rewritten.

Each line is ``{"schema": SCHEMA, ...record.to_json(samples=False), "samples_file": name}``.
The per-iteration samples of a run go to ``<runs dir>/<run_id>.json`` (written
atomically before the line that names it), so the history stays small and loading
thousands of runs only parses summaries; samples are read when a record needs them
(:meth:`History.load_samples`, or implicitly by ``record.raw_rows()`` / ``to_json()``).

A run's generated code goes to ``<runs dir>/<run_id>/code/`` (:mod:`tui.engine.explain.artifacts`), also
before its line; the record then keeps only the code's index in memory, and reads the text back on
demand (:func:`tui.engine.explain.artifacts.load_code`). Samples that ``compile-lab prune`` deleted raise
:class:`~tui.engine.store.results.SamplesPruned`.

The history file is only ever opened for appending. Loading is tolerant: a torn or
garbage line, an unreadable file, a field of the wrong type or lines of an unknown schema
become problem messages (naming the line number), never an exception. Lines and samples
files of an older schema are upgraded as they are read (:mod:`tui.engine.store.migrate`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tui import paths
from tui.engine.explain.artifacts import read_pruned, run_folder, safe_name, store_code
from tui.engine.atomic import ExportError, atomic_writer
from tui.engine.input_file import JSONError, load_json, read_regular
from tui.engine.store.migrate import SCHEMA, upgrade_line, upgrade_samples
from tui.engine.store.results import (
    Block, RunRecord, SamplesInvalid, SamplesPruned, SamplesUnavailable, samples_to_json,
)
from tui.engine.measure.samples import Samples, TimingError

log = logging.getLogger(__name__)

__all__ = ["History", "HistoryError", "SCHEMA"]


class HistoryError(Exception):
    """A run could not be appended to the history; one line naming the path and the cause."""


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class History:
    """The JSONL history at ``path`` (default ``paths.history_file()``).

    ``runs_dir`` holds the per-run sample files: ``paths.runs_dir()`` by default, or a
    ``runs`` directory next to a history file given explicitly.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, runs_dir: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else paths.history_file()
        if runs_dir is not None:
            self.runs_dir = Path(runs_dir)
        else:
            self.runs_dir = paths.runs_dir() if path is None else self.path.parent / "runs"

    # ----- writing ---------------------------------------------------------------

    def append(self, record: RunRecord) -> None:
        """Store an ended run: its samples file first, then one fsynced history line.

        ValueError for a run that has not ended; HistoryError when the disk refuses.
        """
        if not record.finished:
            raise ValueError(f"run {record.run_id} is {record.status}; only ended runs go to the history")
        samples = record.loaded_samples()
        samples_file = None
        if any(samples[side] for side in samples):
            samples_file = f"{_safe_name(record.run_id)}.json"
            self._write_samples(record.run_id, samples, self.runs_dir / samples_file)
        folder = record.data_dir or run_folder(record.run_id, self.runs_dir)
        code_kept = self._write_code(record, folder)
        line = {"schema": SCHEMA, **record.to_json(samples=False), "samples_file": samples_file}
        data = json.dumps(line, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        self._append_bytes(data)
        record.samples_file = samples_file
        record.data_dir = folder
        if code_kept:
            record.artifacts = record.artifacts.without_code()  # on disk now: read back on demand

    @staticmethod
    def _write_code(record: RunRecord, folder: Path) -> bool:
        """Write the run's generated code to its folder; False (a warning on the run, the traceback logged) when it
        cannot be: the run's line is still written, and the code stays in this process's memory for its exports."""
        try:
            store_code(folder, record.artifacts.graphs)
            return True
        except (ExportError, OSError) as exc:
            why = str(exc) if isinstance(exc, ExportError) else f"cannot write to {folder}: {_cause(exc)}"
            log.warning("run %s: its generated code was not kept", record.run_id, exc_info=True)
            record.warn(f"code: the generated code was not kept ({why}); the history has the run without it")
            return False

    def _write_samples(self, run_id: str, samples: Samples, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_writer(target, newline=None) as stream:
                json.dump(
                    {"schema": SCHEMA, "run_id": run_id, "samples": samples_to_json(samples)},
                    stream,
                    separators=(",", ":"),
                    allow_nan=False,
                )
        except ExportError as exc:
            raise HistoryError(str(exc)) from exc
        except OSError as exc:
            raise HistoryError(f"cannot write {target}: {_cause(exc)}") from exc

    def _append_bytes(self, data: bytes) -> None:
        """Append ``data`` (one line) whole or not at all; HistoryError naming the file and the cause.

        Under an advisory lock (``flock``: two compile-labs append one after the other), the line is
        written, then fsynced; when the disk refuses part way (full, an I/O error), the file is cut back
        to its size before, so no half line is left for the next append to run into.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise HistoryError(f"cannot append to {self.path}: {_cause(exc)}") from exc
        try:
            _lock(fd)
            size = os.fstat(fd).st_size
            # A torn last line (a crash mid-write) must not swallow this one: end it first.
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            self._write_whole(fd, data, size)
        except OSError as exc:
            raise HistoryError(f"cannot append to {self.path}: {_cause(exc)}") from exc
        finally:
            os.close(fd)  # and the lock with it
        if created:
            _fsync_dir(self.path.parent)

    def _write_whole(self, fd: int, data: bytes, size: int) -> None:
        """Write and fsync ``data`` at the end of ``fd``; on failure cut the file back to ``size`` and raise."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError as undo:
                raise HistoryError(
                    f"cannot append to {self.path}: {_cause(exc)}; the part written could not be "
                    f"cut back ({_cause(undo)}): its last line is torn and is skipped when read"
                ) from exc
            raise

    # ----- reading ---------------------------------------------------------------

    def load(self) -> tuple[list[RunRecord], list[str]]:
        """Every stored run, oldest first, and one message per problem found.

        Samples are not read here: each record loads them on demand.
        A run id seen twice keeps its later line (in the later line's place).
        """
        by_id: dict[str, RunRecord] = {}
        problems: list[str] = []
        for records, found in self.iter_load():
            for record in records:
                by_id.pop(record.run_id, None)
                by_id[record.run_id] = record
            problems.extend(found)
        return list(by_id.values()), problems

    def iter_load(self, chunk: int = 500, first: int | None = None) -> Iterator[tuple[list[RunRecord], list[str]]]:
        """The stored runs in batches, oldest first: ``(records, problems)`` per batch.

        A batch holds ``chunk`` records (the first one ``first``, so that a reader shows something
        soon), the last one what is left; each batch comes with the problems of its lines. The file
        is read once, when iteration starts: lines appended meanwhile are not seen. A run id seen
        again is yielded again, with a problem saying the later line is kept: a reader replaces
        the earlier record. Decoding costs about 0.5 ms a line, so a reader with a UI iterates
        in a thread: the GIL is offered after each line, so the UI thread waits for it a line's
        decoding at most (a thread holding it runs 5 ms before being asked to let go, and a UI
        thread that needs it for every turn of its loop then stalls for tenths of a second).
        """
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            yield [], [f"cannot read {self.path}: {_cause(exc)}"]
            return
        with handle:
            yield from self._iter_chunks(handle, chunk, first)

    def _iter_chunks(
        self, handle: BinaryIO, chunk: int, first: int | None
    ) -> Iterator[tuple[list[RunRecord], list[str]]]:
        seen: set[str] = set()
        other_schemas: dict[Any, list[int]] = {}
        records: list[RunRecord] = []
        problems: list[str] = []
        size = max(1, first or chunk)
        try:
            length, settled = _settled_size(handle.fileno())
            for number, raw, torn in _lines(handle, length):
                time.sleep(0)  # lets another thread (a UI) take the GIL now, not after the 5 ms switch interval
                why = ("" if not torn else "an interrupted write?" if settled
                       else "another compile-lab may be writing it, or a write was interrupted")
                record = self._decode_line(raw, number, why, problems, other_schemas) if raw.strip() else None
                if record is None:
                    continue
                if record.run_id in seen:
                    problems.append(
                        f"{self.path} line {number}: run {record.run_id} appears again; the later line is kept"
                    )
                seen.add(record.run_id)
                records.append(record)
                if len(records) >= size:
                    yield records, problems
                    records, problems, size = [], [], max(1, chunk)
        except OSError as exc:
            problems.append(f"cannot read {self.path}: {_cause(exc)}; the runs read before are kept")
        for schema, numbers in other_schemas.items():
            age = "newer" if isinstance(schema, int) and schema > SCHEMA else "older or unknown"
            where = f"line {numbers[0]}" + (f" and {len(numbers) - 1} more" if len(numbers) > 1 else "")
            problems.append(
                f"{self.path} {where}: schema {schema!r} is {age} (this version writes {SCHEMA}); read best effort"
            )
        if records or problems:
            yield records, problems

    def _decode_line(
        self, raw: bytes, number: int, torn: str, problems: list[str], other_schemas: dict[Any, list[int]]
    ) -> RunRecord | None:
        """One history line -> a record (samples deferred), or None with a problem appended. ``torn``: why the
        line is the file's last without a newline, or '' when it is not."""
        try:
            item = load_json(raw)
        except JSONError:  # a syntax error, not UTF-8, nested too deeply
            if torn:
                problems.append(f"{self.path} line {number}: incomplete last line ({torn}), skipped")
            else:
                problems.append(f"{self.path} line {number}: not valid JSON, skipped")
            return None
        if not isinstance(item, dict) or not item.get("run_id"):
            problems.append(f"{self.path} line {number}: not a run record, skipped")
            return None
        schema = item.get("schema")
        item, known = upgrade_line(item)
        if not known:
            other_schemas.setdefault(schema, []).append(number)
        try:
            record, fields = RunRecord.decode(item)
        except (TypeError, ValueError) as exc:
            problems.append(f"{self.path} line {number}: unreadable run record ({exc}), skipped")
            return None
        problems.extend(f"{self.path} line {number}: {problem} (default used)" for problem in fields)
        record.defer_samples(self.load_samples)
        record.data_dir = run_folder(record.run_id, self.runs_dir)
        return record

    def samples_path(self, record: RunRecord) -> Path | None:
        """Where the record's samples file is, or None when it has none."""
        if not record.samples_file:
            return None
        return self.runs_dir / _safe_name(record.samples_file)

    def load_samples(self, record: RunRecord) -> dict[str, list[Block]]:
        """Read the record's per-iteration samples into it (and return them).

        SamplesUnavailable, naming the file and the cause, when they cannot be read (SamplesInvalid when
        they hold a time no measurement gives).
        """
        target = self.samples_path(record)
        if target is None:
            record.set_samples_json({})
        else:
            try:
                content = load_json(read_regular(target))
            except FileNotFoundError as exc:
                note = read_pruned(record.data_dir or run_folder(record.run_id, self.runs_dir))
                if note is not None:
                    raise SamplesPruned(f"run {record.run_id}: its per-iteration samples were pruned on "
                                        f"{note.pruned_at} (compile-lab prune)") from exc
                raise SamplesUnavailable(f"run {record.run_id}: cannot read {target}: {_cause(exc)}") from exc
            except OSError as exc:
                raise SamplesUnavailable(f"run {record.run_id}: cannot read {target}: {_cause(exc)}") from exc
            except JSONError as exc:
                raise SamplesUnavailable(f"run {record.run_id}: {target} is not valid JSON ({exc})") from exc
            if not isinstance(content, dict) or content.get("run_id") != record.run_id:
                raise SamplesUnavailable(f"run {record.run_id}: {target} holds another run's samples")
            samples = content.get("samples")
            samples = upgrade_samples(samples, content.get("schema")) if isinstance(samples, dict) else {}
            try:
                record.set_samples_json(samples)
            except TimingError as exc:
                raise SamplesInvalid(f"run {record.run_id}: {target}: {exc}") from None
        return record.samples


def _lines(handle: BinaryIO, remaining: int) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, bytes, torn)`` of the file's first ``remaining`` bytes: lines appended meanwhile are not read.

    Read as a stream, not as one ``bytes`` split in lines: splitting 70 MB (20,000 runs) holds
    the GIL for 0.1 s, and a UI thread waits that long. ``torn``: the last line has no newline.
    """
    for number, raw in enumerate(handle, start=1):
        if remaining <= 0:
            return
        raw = raw[:remaining]
        remaining -= len(raw)
        yield number, raw, not raw.endswith(b"\n")


_safe_name = safe_name  # a file name taken from a history line must not point outside the runs directory


def _lock(fd: int) -> None:
    """Hold an exclusive advisory lock on ``fd`` until it is closed (where the file system has none, go on)."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        pass  # no locks here (some network file systems): appends of one process stay whole all the same


LOCK_WAIT_S = 2.0
"""How long a reader waits for an append in progress to end before it reads the file as it is."""


def _settled_size(fd: int) -> tuple[int, bool]:
    """The file's size between appends, and whether it is (False: the size as it is, an append may be half done).

    An append holds the exclusive lock from its first byte to its fsync; a reader that measured the
    size without the lock could end inside that line, and report it torn when nothing was lost. The
    reader takes the shared lock for the measurement only (appends wait for an ``fstat``, not for the
    reading), and waits for it :data:`LOCK_WAIT_S` at most: a compile-lab stopped in the middle of an
    append, or a file system whose fsync hangs, must not hold every reader of the history with it.
    """
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return os.fstat(fd).st_size, False
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                log.warning("history: an append held its lock past %.1f s; read as it is", LOCK_WAIT_S)
                return os.fstat(fd).st_size, False
            time.sleep(0.01)
        except OSError:  # no locks here (some network file systems): the size as it is
            return os.fstat(fd).st_size, False
    try:
        return os.fstat(fd).st_size, True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
