"""How much the data dir holds, and pruning the files of older runs (``compile-lab prune``, the size cap).

What a run stores beside its history line (:mod:`tui.engine.explain.artifacts`: its per-iteration samples,
generated code, Chrome trace, TORCH_TRACE logs, tlparse report) can be deleted; the history lines
themselves never are, so a pruned run still loads, with its summary, and its files reported gone
(``<run_id>/pruned.json`` says when and how much). Runs are pruned oldest first. A folder or samples
file with no history line (a run of ``--no-history``, or one still running in another compile-lab)
counts as a run of its file's age; one changed within :data:`ORPHAN_GRACE_S` is never touched.

The size cap: after each saved run the session prunes the oldest runs' files while the runs
directory is over :func:`data_cap_bytes` (:data:`DATA_CAP_GB`, or ``COMPILE_LAB_MAX_DATA_GB``;
0 turns the cap off), down to 90% of it.

Only compile-lab's own files go, whoever put what in the runs directory: prune and the cap delete
regular files only, found without following any link (``os.walk(followlinks=False)``, ``lstat``),
and each one through :func:`delete_own_file`, which checks again that it is a regular file and that
its real path is inside the data dir's runs directory. A link (to a file or to a directory, inside
or outside), a pipe, a device or a socket is never followed and never deleted; a runs directory
that is itself a link out of the data dir gets nothing deleted (each file is an error line).
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tui import paths
from tui.engine.explain.artifacts import PRUNED_FILE, format_bytes, safe_name
from tui.engine.input_file import JSONError, file_kind, load_json
from tui.typed import printable

__all__ = [
    "RunFiles", "PrunePlan", "PruneResult", "DataUsage", "DATA_CAP_GB", "DATA_CAP_ENV", "ORPHAN_GRACE_S", "data_cap",
    "data_cap_bytes", "data_usage", "scan_runs", "plan_prune", "apply_prune", "enforce_cap", "describe", "CapKeeper",
    "delete_own_file", "NotOwnFile", "tree_bytes",
]

DATA_CAP_GB = 5.0
"""The runs directory's default size cap, in GB (10^9 bytes)."""
DATA_CAP_ENV = "COMPILE_LAB_MAX_DATA_GB"
ORPHAN_GRACE_S = 3600.0
"""Files without a history line younger than this are left alone (a run may still be writing them)."""
_CAP_TARGET = 0.9
_LATEST_CREATED = 253402300799.0  # 9999-12-31 23:59:59 UTC: the last second a datetime can show


def data_cap() -> tuple[int | None, str | None]:
    """(the runs directory's cap in bytes or None for no cap, why ``COMPILE_LAB_MAX_DATA_GB`` was not used).

    The variable is gigabytes, a number from 0; 0 or an infinity (``inf``, ``1e400``) turns the cap
    off. Anything else (``abc``, ``nan``, ``-1``) keeps the default cap, and the second item says so.
    """
    text = os.environ.get(DATA_CAP_ENV, "").strip()
    value = DATA_CAP_GB
    problem = None
    if text:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isnan(value) or value < 0:
            problem = (f"{DATA_CAP_ENV}={printable(text)[:40]!r} was ignored (allowed: gigabytes, a number from 0; "
                       f"0 or inf: no cap): the default cap of {DATA_CAP_GB:g} GB applies")
            value = DATA_CAP_GB
    if value == 0 or math.isinf(value):
        return None, problem
    return int(value * 1e9), problem


def data_cap_bytes() -> int | None:
    """The runs directory's cap in bytes (None: no cap); see :func:`data_cap`."""
    return data_cap()[0]


@dataclass(frozen=True)
class RunFiles:
    """One run's files beside the history: the regular files of its samples file and its folder (pruned.json
    apart), found without following a link."""

    run_id: str
    created: float
    size_bytes: int
    paths: tuple[str, ...]
    in_history: bool


@dataclass(frozen=True)
class PrunePlan:
    """What a prune deletes (``runs``, oldest first) and what stays (``kept_bytes``)."""

    runs: tuple[RunFiles, ...] = ()
    kept_bytes: int = 0

    @property
    def bytes(self) -> int:
        """Bytes the plan frees."""
        return sum(run.size_bytes for run in self.runs)


@dataclass(frozen=True)
class PruneResult:
    """What a prune did: runs whose files went, bytes freed, one line per file it could not delete, and
    ``notes``: whole sentences about the cap itself (a malformed setting, a cap that could not be applied)."""

    runs: int = 0
    bytes_freed: int = 0
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataUsage:
    """The data dir's size by part, in bytes, and the cap on its runs directory."""

    path: str
    history_bytes: int = 0
    runs_bytes: int = 0
    exports_bytes: int = 0
    other_bytes: int = 0
    cap_bytes: int | None = None

    @property
    def total_bytes(self) -> int:
        """Everything under the data dir."""
        return self.history_bytes + self.runs_bytes + self.exports_bytes + self.other_bytes

    def line(self) -> str:
        """``/x/compile-lab: 1.2 GB (runs 1.2 GB of a 5.0 GB cap, history 3.1 MB, exports 0 B)``."""
        cap = f" of a {format_bytes(self.cap_bytes)} cap" if self.cap_bytes else " (no cap)"
        return (f"{self.path}: {format_bytes(self.total_bytes)} (runs {format_bytes(self.runs_bytes)}{cap}, "
                f"history {format_bytes(self.history_bytes)}, exports {format_bytes(self.exports_bytes)}); "
                "compile-lab prune frees space")


def tree_bytes(path: Path) -> int:
    """The bytes of the files under ``path`` (links counted as links, never followed); 0 where it cannot be read."""
    try:
        info = path.lstat()
    except OSError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return info.st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def data_usage(data_dir: str | os.PathLike[str] | None = None) -> DataUsage:
    """Sizes under the data dir (walks it: off a UI thread)."""
    root = Path(data_dir) if data_dir is not None else paths.data_dir()
    sizes = {"history.jsonl": 0, "runs": 0, "exports": 0}
    other = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        size = tree_bytes(entry)
        if entry.name in sizes:
            sizes[entry.name] = size
        else:
            other += size
    return DataUsage(path=str(root), history_bytes=sizes["history.jsonl"], runs_bytes=sizes["runs"],
                     exports_bytes=sizes["exports"], other_bytes=other, cap_bytes=data_cap_bytes())


def _history_runs(history_file: Path) -> dict[str, float]:
    """run id -> created time of every line (parsed as plain JSON: no typed decode, 20,000 lines in a second)."""
    found: dict[str, float] = {}
    try:
        handle = history_file.open("rb")
    except OSError:
        return found
    with handle:
        for raw in handle:
            try:
                item = load_json(raw)
            except JSONError:  # a torn or garbage line, nested too deeply: the history's loader names it
                continue
            if isinstance(item, dict) and isinstance(item.get("run_id"), str):
                found[safe_name(item["run_id"])] = _created(item.get("created"))
    return found


def _created(value: Any) -> float:
    """A history line's ``created`` (seconds since the epoch), 0.0 (the oldest) where it is no time a date can
    show: not a number, NaN or an infinity, an integer too long for a float, before 1970 or after 9999."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    try:
        moment = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return 0.0
    return moment if 0.0 <= moment <= _LATEST_CREATED else 0.0  # NaN fails this too


def _run_paths(runs_dir: Path) -> dict[str, list[Path]]:
    """The samples file and folder of each run id found in the runs directory."""
    found: dict[str, list[Path]] = {}
    try:
        entries = list(os.scandir(runs_dir))
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            found.setdefault(entry.name, []).append(Path(entry.path))
        elif entry.name.endswith(".json") and not entry.name.startswith("."):
            found.setdefault(entry.name[: -len(".json")], []).append(Path(entry.path))
    return found


def _regular_files(top: Path) -> list[tuple[Path, int]]:
    """(path, size) of each regular file at or under ``top``, found without following any link."""
    try:
        info = top.lstat()
    except OSError:
        return []
    if stat.S_ISREG(info.st_mode):
        return [(top, info.st_size)]
    if not stat.S_ISDIR(info.st_mode):
        return []  # a link, a pipe, a device: not compile-lab's, never followed
    found = []
    for root, _dirs, files in os.walk(top, followlinks=False):
        for name in files:
            path = Path(root, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((path, info.st_size))
    return found


def _run_bytes(items: list[Path]) -> tuple[int, list[str]]:
    """(bytes, paths) of a run's regular files: its samples file and what its folder holds but pruned.json."""
    files: list[tuple[Path, int]] = []
    for item in items:
        if not _is_dir(item):
            files += _regular_files(item)  # the samples file; nothing when it is a link or no file
            continue
        try:
            children = list(os.scandir(item))
        except OSError:
            children = []
        for child in children:
            if child.name != PRUNED_FILE:
                files += _regular_files(Path(child.path))
    return sum(size for _, size in files), [str(path) for path, _ in files]


def _is_dir(path: Path) -> bool:
    """A directory itself, not a link to one."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def scan_runs(history_file: str | os.PathLike[str] | None = None, runs_dir: str | os.PathLike[str] | None = None,
              now: float | None = None) -> list[RunFiles]:
    """Every run with files to prune, oldest first (the history's time; a file's own for one without a line)."""
    history_file = Path(history_file) if history_file is not None else paths.history_file()
    runs_dir = Path(runs_dir) if runs_dir is not None else paths.runs_dir()
    now = time.time() if now is None else now
    created = _history_runs(history_file)
    result = []
    for run_id, items in _run_paths(runs_dir).items():
        size, kept = _run_bytes(items)
        if not kept:
            continue
        in_history = run_id in created
        moment = created[run_id] if in_history else max(_mtime(Path(p)) for p in kept)
        if not in_history and now - moment < ORPHAN_GRACE_S:
            continue
        result.append(RunFiles(run_id=run_id, created=moment, size_bytes=size, paths=tuple(kept),
                               in_history=in_history))
    result.sort(key=lambda run: (run.created, run.run_id))
    return result


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def plan_prune(runs: list[RunFiles], *, keep_last: int | None = None, older_than_days: float | None = None,
               max_bytes: int | None = None, now: float | None = None, last: Collection[str] = ()) -> PrunePlan:
    """Which runs' files go: all but the newest ``keep_last``, those older than ``older_than_days``, and
    the oldest until the rest fit in ``max_bytes`` (each given rule adds runs; oldest first). For
    ``max_bytes`` the runs named in ``last`` go only once every other has and the rest still does not fit
    (the running session's own: its exports read them, so they go last, but the cap still holds)."""
    now = time.time() if now is None else now
    chosen: set[str] = set()
    if keep_last is not None:
        chosen.update(run.run_id for run in runs[: max(0, len(runs) - keep_last)])
    if older_than_days is not None:
        chosen.update(run.run_id for run in runs if now - run.created > older_than_days * 86_400)
    if max_bytes is not None:
        left = sum(run.size_bytes for run in runs if run.run_id not in chosen)
        for run in _last_ones_last(runs, last):
            if left <= max_bytes:
                break
            if run.run_id not in chosen:
                chosen.add(run.run_id)
                left -= run.size_bytes
    pruned = tuple(run for run in runs if run.run_id in chosen)
    return PrunePlan(runs=pruned, kept_bytes=sum(run.size_bytes for run in runs if run.run_id not in chosen))


def _last_ones_last(runs: list[RunFiles], last: Collection[str]) -> list[RunFiles]:
    """``runs`` in their order (oldest first), those named in ``last`` moved after all the others."""
    return [*(r for r in runs if r.run_id not in last), *(r for r in runs if r.run_id in last)]


def _what(path: str, runs_dir: Path) -> str:
    """``samples`` for a run's samples file, else the first name in its folder (``code``, ``trace.json``...)."""
    try:
        parts = Path(path).relative_to(runs_dir).parts
    except ValueError:
        parts = (Path(path).name,)
    return "samples" if len(parts) == 1 else parts[1]


class NotOwnFile(OSError):
    """A path prune would not delete: not a regular file, or not inside the data dir's runs directory."""


def _own_root(runs_dir: Path) -> str:
    """Where every file prune deletes must resolve: ``runs`` in the data dir, the data dir's links resolved
    (a data dir that is a link to another disk is fine; a runs directory that is a link is not)."""
    return os.path.join(os.path.realpath(runs_dir.parent), runs_dir.name)


def delete_own_file(path: str | os.PathLike[str], runs_dir: str | os.PathLike[str]) -> None:
    """Unlink ``path`` when it is a regular file (``lstat``: a link is never followed) whose real path is
    inside the data dir's runs directory ``runs_dir``; else :class:`NotOwnFile` saying why.

    The one way prune and the size cap delete a file.
    """
    info = os.lstat(path)
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise NotOwnFile(f"{kind}, not a file compile-lab wrote; left alone")
    root = _own_root(Path(runs_dir))
    real = os.path.realpath(path)
    if os.path.commonpath([real, root]) != root:
        raise NotOwnFile(f"resolves to {real}, outside {root}; left alone")
    os.unlink(path)


def _remove_empty_dirs(folder: Path, runs_dir: Path) -> None:
    """Remove the directories under a run's folder that deleting left empty (bottom up, no link followed), only
    where the folder's real path is inside the runs directory (a ``runs`` that is a link leads elsewhere: left
    alone, as :func:`delete_own_file` leaves its files)."""
    if not _is_dir(folder):
        return
    root, real = _own_root(runs_dir), os.path.realpath(folder)
    if os.path.commonpath([real, root]) != root:
        return
    for root, dirs, _files in os.walk(folder, topdown=False, followlinks=False):
        for name in dirs:
            path = Path(root, name)
            if _is_dir(path):
                try:
                    path.rmdir()
                except OSError:
                    pass  # not empty: a link or a file that is not compile-lab's stays, and so does its folder


def apply_prune(plan: PrunePlan, runs_dir: str | os.PathLike[str] | None = None) -> PruneResult:
    """Delete the plan's files (:func:`delete_own_file` each), leaving ``<run_id>/pruned.json`` in each run's
    folder; never a history line. One error line per file left (it names the file and why)."""
    runs_dir = Path(runs_dir) if runs_dir is not None else paths.runs_dir()
    errors: list[str] = []
    freed, count = 0, 0
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    for run in plan.runs:
        removed = []
        for path in run.paths:
            try:
                delete_own_file(path, runs_dir)
            except FileNotFoundError:
                pass
            except OSError as exc:
                errors.append(f"{path}: {exc.strerror or exc}")
                continue
            removed.append(_what(path, runs_dir))
        _remove_empty_dirs(runs_dir / run.run_id, runs_dir)
        if removed and run.in_history:
            _leave_note(runs_dir, run.run_id, (stamp, run.size_bytes, removed), errors)
        freed += run.size_bytes if removed else 0
        count += bool(removed)
    return PruneResult(runs=count, bytes_freed=freed, errors=tuple(errors))


def _leave_note(runs_dir: Path, run_id: str, what: tuple[str, int, list[str]], errors: list[str]) -> None:
    """``<run_id>/pruned.json``: in the run's own folder (made when missing; never through a link), written
    like an export (a link, pipe or device there is refused, not followed)."""
    from tui.engine.atomic import ExportError, atomic_writer

    stamp, size, removed = what
    folder = runs_dir / run_id
    try:
        folder.mkdir(exist_ok=True)
        if not _is_dir(folder) or os.path.realpath(folder) != os.path.join(_own_root(runs_dir), run_id):
            raise NotOwnFile(f"{folder} is not a folder of the runs directory; no note left")
        note = {"pruned_at": stamp, "bytes_freed": size, "removed": sorted(set(removed))}
        with atomic_writer(folder / PRUNED_FILE, newline=None) as stream:
            stream.write(json.dumps(note) + "\n")
    except ExportError as exc:
        errors.append(str(exc))
    except OSError as exc:
        errors.append(f"{folder / PRUNED_FILE}: {exc.strerror or exc}")


def enforce_cap(history: Any = None, last: Collection[str] = ()) -> PruneResult | None:
    """Prune the oldest runs' files while the runs directory is over the cap (to 90% of it), those of the runs in
    ``last`` only once no other is left; None when nothing had to go. ``history``: a
    :class:`~tui.engine.store.history.History` (its files), or the defaults."""
    cap = data_cap_bytes()
    runs_dir = Path(getattr(history, "runs_dir", None) or paths.runs_dir())
    if cap is None or tree_bytes(runs_dir) <= cap:
        return None
    runs = scan_runs(getattr(history, "path", None), runs_dir)
    plan = plan_prune(runs, max_bytes=int(cap * _CAP_TARGET), last=last)
    return apply_prune(plan, runs_dir) if plan.runs else None


class CapKeeper:
    """The cap, checked after each saved run without walking the runs directory each time.

    The directory is measured once; then each saved run's own files are added, and only an estimate
    over the cap walks it again (:func:`enforce_cap`). One per session; called from its saving thread. The
    session's own runs go last: its exports read their files (the generated code, a trace), so every other
    run's go first; a session that alone outgrows the cap loses its oldest runs' files too (the cap holds).
    """

    def __init__(self, history: Any = None) -> None:
        self.history = history
        self._size: int | None = None
        self._said: str | None = None
        self._own: set[str] = set()

    def after_save(self, run_id: str) -> PruneResult | None:
        """Count run ``run_id``'s files; prune when the runs directory is over the cap.

        A malformed ``COMPILE_LAB_MAX_DATA_GB`` is said once (as a note of the result), then the default applies.
        """
        cap, problem = data_cap()
        if problem is not None and problem != self._said:
            self._said = problem
            result = self._apply(run_id, cap)
            return replace(result or PruneResult(), notes=(problem,))
        return self._apply(run_id, cap)

    def _apply(self, run_id: str, cap: int | None) -> PruneResult | None:
        self._own.add(run_id)
        if cap is None:
            return None
        runs_dir = Path(getattr(self.history, "runs_dir", None) or paths.runs_dir())
        if self._size is None:
            self._size = tree_bytes(runs_dir)
        else:
            self._size += _run_bytes(_run_paths_of(runs_dir, run_id))[0]
        if self._size <= cap:
            return None
        result = enforce_cap(self.history, last=self._own)
        self._size = tree_bytes(runs_dir)
        return result


def _run_paths_of(runs_dir: Path, run_id: str) -> list[Path]:
    name = safe_name(run_id)
    return [path for path in (runs_dir / f"{name}.json", runs_dir / name) if os.path.lexists(path)]


def describe(plan: PrunePlan) -> Iterator[str]:
    """One line per run of a plan (for ``--dry-run``)."""
    for run in plan.runs:
        when = datetime.fromtimestamp(run.created, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
        alone = "" if run.in_history else " (no history line)"
        yield f"{run.run_id}  {when} UTC  {format_bytes(run.size_bytes)}{alone}"
