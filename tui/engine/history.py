"""The run history: one JSON line per ended run, appended and never rewritten.

Each line is ``{"schema": SCHEMA, ...record.to_json(samples=False), "samples_file": name}``.
The per-iteration samples of a run go to ``<runs dir>/<run_id>.json`` (written
atomically before the line that names it), so the history stays small and loading
thousands of runs only parses summaries; samples are read when a record needs them
(:meth:`History.load_samples`, or implicitly by ``record.raw_rows()`` / ``to_json()``).

The history file is only ever opened for appending. Loading is tolerant: a torn or
garbage line, an unreadable file, a field of the wrong type or lines of an unknown schema
become problem messages (naming the line number), never an exception. Lines and samples
files of an older schema are upgraded as they are read (:mod:`tui.engine.migrate`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tui import paths
from tui.engine.export import ExportError, atomic_writer
from tui.engine.migrate import SCHEMA, upgrade_line, upgrade_samples
from tui.engine.results import Block, RunRecord, SamplesUnavailable, samples_to_json

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
        record.ensure_samples()
        samples_file = None
        if any(record.samples[side] for side in record.samples):
            samples_file = f"{_safe_name(record.run_id)}.json"
            self._write_samples(record, self.runs_dir / samples_file)
        line = {"schema": SCHEMA, **record.to_json(samples=False), "samples_file": samples_file}
        data = json.dumps(line, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        self._append_bytes(data)
        record.samples_file = samples_file

    def _write_samples(self, record: RunRecord, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_writer(target, newline=None) as stream:
                json.dump(
                    {"schema": SCHEMA, "run_id": record.run_id, "samples": samples_to_json(record.samples)},
                    stream,
                    separators=(",", ":"),
                    allow_nan=False,
                )
        except ExportError as exc:
            raise HistoryError(str(exc)) from exc
        except OSError as exc:
            raise HistoryError(f"cannot write {target}: {_cause(exc)}") from exc

    def _append_bytes(self, data: bytes) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                # A torn last line (a crash mid-write) must not swallow this one: end it first.
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                _fsync_dir(self.path.parent)
        except OSError as exc:
            raise HistoryError(f"cannot append to {self.path}: {_cause(exc)}") from exc

    # ----- reading ---------------------------------------------------------------

    def load(self) -> tuple[list[RunRecord], list[str]]:
        """Every stored run, oldest first, and one message per problem found.

        Samples are not read here: each record loads them on demand.
        A run id seen twice keeps its later line.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            return [], [f"cannot read {self.path}: {_cause(exc)}"]
        lines = data.split(b"\n")
        torn_last = not data.endswith(b"\n")
        by_id: dict[str, RunRecord] = {}
        problems: list[str] = []
        other_schemas: dict[Any, list[int]] = {}
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            is_last = number == len(lines)
            try:
                item = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                if is_last and torn_last:
                    problems.append(f"{self.path} line {number}: incomplete last line (an interrupted write?), skipped")
                else:
                    problems.append(f"{self.path} line {number}: not valid JSON, skipped")
                continue
            if not isinstance(item, dict) or not item.get("run_id"):
                problems.append(f"{self.path} line {number}: not a run record, skipped")
                continue
            schema = item.get("schema")
            item, known = upgrade_line(item)
            if not known:
                other_schemas.setdefault(schema, []).append(number)
            try:
                record, fields = RunRecord.decode(item)
            except (TypeError, ValueError) as exc:
                problems.append(f"{self.path} line {number}: unreadable run record ({exc}), skipped")
                continue
            problems.extend(f"{self.path} line {number}: {problem} (default used)" for problem in fields)
            record.defer_samples(self.load_samples)
            if record.run_id in by_id:
                problems.append(f"{self.path} line {number}: run {record.run_id} appears again; the later line is kept")
                del by_id[record.run_id]
            by_id[record.run_id] = record
        for schema, numbers in other_schemas.items():
            age = "newer" if isinstance(schema, int) and schema > SCHEMA else "older or unknown"
            where = f"line {numbers[0]}" + (f" and {len(numbers) - 1} more" if len(numbers) > 1 else "")
            problems.append(f"{self.path} {where}: schema {schema!r} is {age} (this version writes {SCHEMA}); read best effort")
        return list(by_id.values()), problems

    def samples_path(self, record: RunRecord) -> Path | None:
        """Where the record's samples file is, or None when it has none."""
        if not record.samples_file:
            return None
        return self.runs_dir / _safe_name(record.samples_file)

    def load_samples(self, record: RunRecord) -> dict[str, list[Block]]:
        """Read the record's per-iteration samples into it (and return them).

        SamplesUnavailable, naming the file and the cause, when they cannot be read.
        """
        target = self.samples_path(record)
        if target is None:
            record.set_samples_json({})
        else:
            try:
                content = json.loads(target.read_bytes())
            except OSError as exc:
                raise SamplesUnavailable(f"run {record.run_id}: cannot read {target}: {_cause(exc)}") from exc
            except (ValueError, UnicodeDecodeError) as exc:
                raise SamplesUnavailable(f"run {record.run_id}: {target} is not valid JSON") from exc
            if not isinstance(content, dict) or content.get("run_id") != record.run_id:
                raise SamplesUnavailable(f"run {record.run_id}: {target} holds another run's samples")
            samples = content.get("samples")
            samples = upgrade_samples(samples, content.get("schema")) if isinstance(samples, dict) else {}
            record.set_samples_json(samples)
        return record.samples


def _safe_name(name: str) -> str:
    # A file name taken from a history line must not point outside the runs directory.
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)
    return cleaned.lstrip(".") or "run"


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
