"""What BASE and NEW name: a JSON export, or runs of the history (by id, by session, by tune, by date).

Syntax (:func:`parse_selection`; anything else is a path to a JSON export)::

    history:ID[,ID...]      runs by run id; a group id (a --repeat's first run) names all its processes
    session:ID              every run of one app or CLI start (the history's session_id)
    session:last            the latest session in the history; session:last-1 the one before, ...
    tune:ID                 every run of one ``compile-lab tune`` search (the history's tune_id)
    tune:last               the latest search in the history; tune:last-1 the one before, ...
    since:DATE[..DATE]      runs queued from DATE (UTC, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]) until
                            now, or until the second DATE (a day: to its end; a time: that second)

A path that starts with one of these prefixes is written ``./history:...``. A history line written
before session ids existed has none: it is selected by id or date, never by session. A run that no
tune made has no tune id: ``tune:`` never selects it.
:class:`SelectionError` (one line: what was given, why, what is allowed) for bad syntax, a file that
is not an export, and a selection that names no run. An export is read as a regular file of at most
:data:`~tui.engine.input_file.INPUT_MAX_BYTES` (1 GiB): a named pipe or a device is refused before it
is opened, never read until it ends. A time no measurement gives (NaN, an infinity, zero, a negative
or absurd time: :class:`~tui.engine.measure.samples.TimingError`), in an export or a history run's samples
file, refuses the selection with one line naming the run and the field.

``compile-lab history`` lists what a history selection names without reading samples
(:func:`pick_from_history`) and each session's runs (:func:`session_runs`, in the order ``session:last-N``
counts them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tui.engine.store.history import History
from tui.engine.input_file import InputFileError, JSONError, load_json, read_regular
from tui.engine.store.results import RunRecord, SamplesInvalid, SamplesUnavailable
from tui.engine.measure.samples import TimingError
from tui.engine.store.stored_options import upgrade_tf32_run
from tui.engine.measure.summary import check_stored_times
from tui.typed import printable

__all__ = ["Selection", "SelectionError", "SessionRuns", "parse_selection", "load_selection", "read_export",
           "pick_from_history", "each_run_once", "sessions", "session_runs", "SELECTION_HELP", "HISTORY_SELECTION_HELP"]

HISTORY_SELECTION_HELP = ("history:RUNID[,RUNID...], session:ID, session:last[-N], tune:ID, tune:last[-N], or "
                          "since:DATE[..DATE] (UTC, YYYY-MM-DD[THH:MM[:SS]])")
"""The selections of the history (``compile-lab history`` reads these only)."""
SELECTION_HELP = f"a JSON export's path, {HISTORY_SELECTION_HELP}"
_PREFIXES = ("history:", "session:", "tune:", "since:")
_GROUPINGS = {"session": ("session_id", "session", "sessions"), "tune": ("tune_id", "tune", "tunes")}
"""Per kind of selection that names a set of runs by a shared id: the record's field, its name, in plural."""
_LAST = re.compile(r"^last(?:-(\d{1,4}))?$")
_DATE_FORMATS = (("%Y-%m-%d", timedelta(days=1)), ("%Y-%m-%dT%H:%M", timedelta(minutes=1)),
                 ("%Y-%m-%dT%H:%M:%S", timedelta(seconds=1)))  # fmt: skip
_SHOWN = 60


class SelectionError(ValueError):
    """A selection that cannot be read; one line."""


def _shown(text: str) -> str:
    text = printable(text)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


@dataclass(frozen=True)
class Selection:
    """A parsed BASE or NEW: ``kind`` is file, history, session, tune or since (``session``: the session's or the
    tune's id, or ``last[-N]``)."""

    text: str
    kind: str
    path: str = ""
    run_ids: tuple[str, ...] = ()
    session: str = ""
    start: float | None = None
    end: float | None = None
    """Exclusive end (seconds since the epoch); None: now."""


def _moment(text: str, whole: str) -> tuple[float, timedelta]:
    for fmt, step in _DATE_FORMATS:
        try:
            moment = datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
        return moment.timestamp(), step
    raise SelectionError(f"{_shown(whole)}: {_shown(text)!r} is not a date (allowed: YYYY-MM-DD, "
                         "YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, UTC)")


def parse_selection(text: str) -> Selection:
    """``text`` as a :class:`Selection` (SelectionError, one line, when it cannot be one)."""
    if not text.strip():
        raise SelectionError(f"the selection is empty (allowed: {SELECTION_HELP})")
    prefix = next((p for p in _PREFIXES if text.startswith(p)), None)
    if prefix is None:
        return Selection(text, "file", path=text)
    rest = text[len(prefix):].strip()
    if prefix == "history:":
        ids = tuple(part.strip() for part in rest.split(",") if part.strip())  # a repeat is read once, and said
        if not ids:
            raise SelectionError(f"{_shown(text)}: no run id (allowed: history:RUNID[,RUNID...])")
        return Selection(text, "history", run_ids=ids)
    if prefix in ("session:", "tune:"):
        kind = prefix[:-1]
        if not rest:
            raise SelectionError(f"{_shown(text)}: no {kind} id (allowed: {kind}:ID, {kind}:last, {kind}:last-N)")
        return Selection(text, kind, session=rest)
    first, sep, second = rest.partition("..")
    start, _ = _moment(first.strip(), text)
    end = None
    if sep:
        end_start, step = _moment(second.strip(), text)
        end = end_start + step.total_seconds()
        if end <= start:
            raise SelectionError(f"{_shown(text)}: the range ends before it starts (allowed: since:EARLIER..LATER)")
    return Selection(text, "since", start=start, end=end)


def sessions(records: list[RunRecord], field: str = "session_id") -> list[tuple[str, int]]:
    """The session ids in ``records`` (``field``: another shared id, ``tune_id``) with their run counts, oldest
    first: by their first run's queue time.

    (Two sessions started in one second have ids of the same time; their runs' times tell them apart.)
    """
    first: dict[str, tuple[float, int]] = {}
    counts: dict[str, int] = {}
    for number, record in enumerate(records):
        value = getattr(record, field)
        if value:
            first[value] = min(first.get(value, (record.created, number)), (record.created, number))
            counts[value] = counts.get(value, 0) + 1
    return [(session, counts[session]) for session in sorted(first, key=first.__getitem__)]


@dataclass(frozen=True)
class SessionRuns:
    """One session's (or one tune's) runs in a history, as a listing says them."""

    session_id: str
    first: float
    """The queue time of its first run (seconds since the epoch)."""
    last: float
    """The queue time of its latest run."""
    runs: int
    workloads: tuple[str, ...]
    """Its runs' workloads, each once, in the order first queued."""
    tune_ids: tuple[str, ...]
    """The tunes its runs belong to, each once, in the order first queued."""


def session_runs(records: list[RunRecord], field: str = "session_id") -> list[SessionRuns]:
    """Each session of ``records`` (``field``: another shared id, ``tune_id``) with what its runs were, in the order
    of :func:`sessions` (oldest first: ``session:last`` is the last one). Runs without the id are left out."""
    by_id: dict[str, list[RunRecord]] = {}
    for record in sorted(records, key=lambda r: r.created):
        value = getattr(record, field)
        if value:
            by_id.setdefault(value, []).append(record)
    return [SessionRuns(session, by_id[session][0].created, by_id[session][-1].created, count,
                        tuple(dict.fromkeys(r.options.workload for r in by_id[session])),
                        tuple(dict.fromkeys(r.tune_id for r in by_id[session] if r.tune_id)))
            for session, count in sessions(records, field)]  # fmt: skip


def read_export(selection: Selection) -> dict[str, Any]:
    """The JSON export a file selection names, read and parsed once (its ``runs`` a list); SelectionError (one
    line) when it cannot be read or is no export."""
    path = Path(selection.path)
    where = _shown(selection.path)
    allowed = f"(allowed: {SELECTION_HELP})"
    try:
        data: Any = load_json(read_regular(path))
    except FileNotFoundError:
        raise SelectionError(f"{where}: no such file {allowed}") from None
    except InputFileError as exc:  # a pipe, a device, a directory, too big: refused before it is read
        raise SelectionError(f"{where}: {exc}") from None
    except OSError as exc:
        raise SelectionError(f"{where}: cannot read it: {exc.strerror or exc} {allowed}") from None
    except JSONError as exc:  # a syntax error, not UTF-8, nested too deeply
        raise SelectionError(f"{where}: not JSON ({exc}; allowed: a JSON export of compile-lab run/sweep --json or the "
                             "app's export (e); a history selection)") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise SelectionError(f"{where}: not a compile-lab JSON export (no \"runs\" list; allowed: the file of "
                             "--json or the app's export)")
    return data


def _from_file(selection: Selection, data: dict[str, Any]) -> tuple[list[RunRecord], list[str]]:
    """The runs of an export (:func:`read_export`'s ``data``) and the problems met decoding them."""
    where = _shown(selection.path)
    records, problems = [], []
    for number, item in enumerate(data["runs"], 1):
        try:
            record, found = RunRecord.decode(upgrade_tf32_run(item) if isinstance(item, dict) else item)
            if not record.samples_loaded:  # none in the export: its summary stands in for them
                check_stored_times(record.summary())
        except TimingError as exc:  # never computed with: the whole selection is refused
            run_id = item.get("run_id") if isinstance(item, dict) else None
            named = f" ({_shown(run_id)})" if isinstance(run_id, str) else ""
            raise SelectionError(f"{where} run {number}{named}: {exc}") from None
        except (TypeError, ValueError) as exc:
            problems.append(f"{where} run {number}: unreadable ({exc}), skipped")
            continue
        records.append(record)
        problems += [f"{where} run {number}: {problem} (default used)" for problem in found]
    return records, problems


def _session_id(selection: Selection, records: list[RunRecord], history: History) -> str:
    """The session's (or the tune's: ``selection.kind``) id that ``selection`` names in ``records``."""
    field, kind, kinds = _GROUPINGS[selection.kind]
    known = sessions(records, field)
    last = _LAST.match(selection.session)
    if last is None:
        if any(session == selection.session for session, _ in known):
            return selection.session
        why = f"no run of this {kind}"
    else:
        back = int(last.group(1) or 0)
        if back < len(known):
            return known[-1 - back][0]
        why = f"the history holds {len(known)} {kind}(s)"
    latest = ", ".join(f"{session} ({count} run{'s' if count != 1 else ''})"
                       for session, count in known[-3:][::-1]) or "none"
    raise SelectionError(f"{_shown(selection.text)}: {why} in {history.path} (latest {kinds}: {latest}; allowed: "
                         f"{kind}:ID, {kind}:last, {kind}:last-N)")


def _by_ids(selection: Selection, records: list[RunRecord], history: History) -> list[RunRecord]:
    wanted = set(selection.run_ids)
    chosen = [r for r in records if r.run_id in wanted or (r.group_id and r.group_id in wanted)]
    found = {r.run_id for r in chosen} | {r.group_id for r in chosen if r.group_id}
    missing = [run_id for run_id in selection.run_ids if run_id not in found]
    if missing:
        raise SelectionError(f"{_shown(selection.text)}: no run {_shown(missing[0])!r} in {history.path} "
                             "(allowed: the run ids of the history, as in a JSON export or the app's details)")
    return chosen


def _by_time(selection: Selection, records: list[RunRecord], history: History) -> list[RunRecord]:
    start, end = selection.start or 0.0, selection.end
    chosen = [r for r in records if r.created >= start and (end is None or r.created < end)]
    if not chosen:
        raise SelectionError(f"{_shown(selection.text)}: no run was queued in that time in {history.path} "
                             f"({len(records)} runs there)")
    return chosen


def pick_from_history(selection: Selection, records: list[RunRecord], history: History) -> list[RunRecord]:
    """The runs of ``records`` (``history``'s, loaded) that a history selection names, in their order, samples not
    read; SelectionError (one line) when it names none, or names a file."""
    if selection.kind == "file":
        raise SelectionError(f"{_shown(selection.text)}: not a selection of the history (allowed: "
                             f"{HISTORY_SELECTION_HELP})")
    if selection.kind == "history":
        return _by_ids(selection, records, history)
    if selection.kind in _GROUPINGS:
        session, field = _session_id(selection, records, history), _GROUPINGS[selection.kind][0]
        return [r for r in records if getattr(r, field) == session]
    return _by_time(selection, records, history)


def _from_history(selection: Selection, history: History) -> tuple[list[RunRecord], list[str]]:
    records, problems = history.load()
    # the history holds each run once, so a run id listed twice picks it once: said as a file's repeat is
    twice = dict.fromkeys(i for n, i in enumerate(selection.run_ids) if i in selection.run_ids[:n])
    problems += [f"run {run_id}: named more than once, read once" for run_id in twice]
    return _timings_checked(selection, pick_from_history(selection, records, history)), problems


def _timings_checked(selection: Selection, records: list[RunRecord]) -> list[RunRecord]:
    """``records`` with their samples loaded, SelectionError for one whose samples file holds an impossible time.

    Samples that cannot be read for another reason (pruned, deleted) are left to the reader, which
    notes the run and goes on; the stored summary that stands in for them is checked instead.
    """
    for record in records:
        try:
            record.ensure_samples()
        except SamplesInvalid as exc:
            raise SelectionError(f"{_shown(selection.text)}: {exc}") from None
        except SamplesUnavailable:
            try:  # pruned or gone: its stored summary stands in for them
                check_stored_times(record.summary())
            except TimingError as exc:
                raise SelectionError(f"{_shown(selection.text)}: run {record.run_id}: {exc}") from None
    return records


def each_run_once(records: list[RunRecord], seen: set[str] | None = None) -> tuple[list[RunRecord], list[str]]:
    """``records`` with each run id once (the first kept), and a problem for each one named again.

    A run counted twice is pseudo-replication: one process taken for two narrows the interval across
    processes. ``seen``: the ids already read (several selections read as one, as ``report`` does); updated.
    """
    seen = set() if seen is None else seen
    kept, problems = [], []
    for record in records:
        if record.run_id in seen:
            problems.append(f"run {record.run_id}: named more than once, read once")
            continue
        seen.add(record.run_id)
        kept.append(record)
    return kept, problems


def load_selection(selection: Selection, history: History | None = None,
                   export: dict[str, Any] | None = None) -> tuple[list[RunRecord], list[str]]:
    """The runs a selection names (samples read on demand), each run once, and the problems met reading them.
    ``export``: a file selection's data, when the caller read it already (:func:`read_export`)."""
    if selection.kind == "file":
        records, problems = _from_file(selection, read_export(selection) if export is None else export)
        if not records:
            raise SelectionError(f"{_shown(selection.text)}: the export holds no run")
    else:
        records, problems = _from_history(selection, history or History())
    records, repeated = each_run_once(records)
    return records, problems + list(dict.fromkeys(repeated))
