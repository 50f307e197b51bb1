"""Short formats for the app's views, and the few readings of a record they share.

The engine's records are typed (:mod:`tui.engine.measure.summary`, :mod:`tui.engine.payloads`), so a
view reads fields by name; what is here is how numbers and labels look on screen.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from tui.present.cells import wrap_cells
from tui.engine.catalog import DEFAULT_FACTORY, is_user_workload, split_user_workload
from tui.engine.options import RunOptions
from tui.engine.store.wall_time import WallTime
from tui.engine.store.results import ACTIVE_STATUSES, TERMINAL_STATUSES, RunRecord
from tui.typed import printable
from tui.engine.status import RunStatus

__all__ = [
    "active_status_text",
    "counts_seconds",
    "phase_seconds",
    "STATUS_LABELS",
    "TERMINAL_STATUSES",
    "ACTIVE_STATUSES",
    "to_float",
    "significant",
    "ratio",
    "TIMES",
    "times",
    "fmt_ms",
    "fmt_seconds",
    "fmt_mib",
    "fmt_speedup",
    "hanging_lines",
    "fmt_when",
    "workload_label",
    "workload_word",
    "workload_name",
    "workload_names",
    "ListingNames",
    "fold_path",
    "input_label",
    "options_label",
    "accuracy_label",
    "accuracy_word",
    "accuracy_style",
    "clock_label",
    "VERDICT_STYLES",
    "MISSING",
    "or_missing",
]

VERDICT_STYLES = {"faster": "bold green", "slower": "bold red", "no change": "bold cyan",
                  "inconclusive": "yellow", "noisy": "bold magenta"}
"""The Rich style of each verdict word (tui.engine.measure.verdict), in the app and the CLI alike."""

STATUS_LABELS: dict[str, str] = {
    RunStatus.QUEUED: "queued",
    RunStatus.STARTING: "starting",
    RunStatus.BUILDING: "building",
    RunStatus.COMPILING: "compiling",
    RunStatus.WARMING_UP: "warming up",
    RunStatus.CHECKING_ACCURACY: "accuracy",
    RunStatus.MEASURING: "measuring",
    RunStatus.DIAGNOSING: "diagnosing",
    RunStatus.DONE: "done",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "cancelled",
}
"""Status -> the short word shown in the table."""

_PERCENT_STATUSES = frozenset({RunStatus.MEASURING, RunStatus.DIAGNOSING})


def counts_seconds(status: str, progress: float) -> bool:
    """Whether a running run's status shows the seconds in its phase rather than a percentage: before it measures
    (starting, building, compiling, ...) nothing moves the measured share off 0%, and a long compile looked stuck."""
    return status not in _PERCENT_STATUSES and progress <= 0


def active_status_text(status: str, progress: float, elapsed_s: float | None, aligned: bool = True) -> str:
    """A running run's status: ``compiling 12 s`` before it measures (:func:`counts_seconds`; the whole seconds
    elapsed, as :func:`phase_seconds` counts them), ``measuring  40%`` after (``aligned``: the share padded to three
    digits, as a table column keeps it; else ``measuring 40%``)."""
    label = STATUS_LABELS.get(status, status)
    if counts_seconds(status, progress):
        return label if elapsed_s is None else f"{label} {int(elapsed_s)} s"
    return f"{label} {progress * 100:{3 if aligned else ''}.0f}%"


def phase_seconds(record: RunRecord) -> int | None:
    """The whole seconds a running run's status shows (:func:`active_status_text`), None where it shows none: a
    view redraws the status when they change, since no event comes while a run compiles."""
    elapsed = record.part_elapsed_s()
    return None if elapsed is None or not counts_seconds(record.status, record.progress()) else int(elapsed)


MISSING = "–"
"""The one spelling of a value that is not there (not measured, not known, nothing to compare with) in the app,
the command line's tables and the report: an en dash, as README's ``vs base`` column says. The CSV leaves such a
cell empty for machine readers; ``n/a`` is the accuracy check's documented verdict, and ``none`` an empty list
that was looked at (no warnings, no throttle reasons), not a missing value."""


def or_missing(value: Any) -> str:
    """``str(value)``, or :data:`MISSING` for None and the empty string."""
    return MISSING if value is None or value == "" else str(value)


def to_float(value: Any) -> float | None:
    """``float(value)`` for numbers and numeric strings; None for anything else (bools included)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant figures, trailing zeros kept and never in exponent notation:
    ``0.1054``, ``1.000`` (0.99996 rounds up a decade), ``12350``; a number of ``digits`` or more integer
    digits whole (``123457``)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")
    decimals = digits - 1 - math.floor(math.log10(abs(rounded)))
    return f"{value:.0f}" if decimals < 0 else f"{rounded:.{decimals}f}"


def ratio(value: float) -> str:
    """A speedup's number: two decimals below 10 (``0.97``, ``2.85``, ``0.05``), three significant figures from 10
    on (``63.4``, ``123``), so an interval with a large end still fits its cell (``3.28× [2.85, 63.4]``), and two
    significant figures where two decimals would read ``0.00`` (``0.0021``: a compiled side 500 times slower)."""
    if value != 0 and abs(value) < 0.00995:
        return significant(value, 2)
    return f"{value:.2f}" if abs(value) < 9.995 else significant(value, 3)


TIMES = "×"
"""The sign after a speedup or any other multiple, in every front end: ``1.31×``."""


def times(value: float) -> str:
    """A speedup or multiple with its sign: ``1.31×``, ``63.4×``."""
    return f"{ratio(value)}{TIMES}"


def fmt_ms(value: float | None) -> str:
    """Milliseconds with 3-4 significant digits: ``0.0123``, ``1.234``, ``12.34``, ``1234``; the decimals are
    those of the value rounded (0.99996 is ``1.000``, not ``1.0000``)."""
    if value is None:
        return MISSING
    magnitude = abs(float(f"{value:.4g}"))
    if magnitude == 0:
        return "0"
    if magnitude < 0.01:
        return f"{value:.5f}"
    if magnitude < 1:
        return f"{value:.4f}"
    if magnitude < 10:
        return f"{value:.3f}"
    if magnitude < 100:
        return f"{value:.2f}"
    if magnitude < 1000:
        return f"{value:.1f}"
    return f"{value:.0f}"


def fmt_seconds(value: Any) -> str:
    """Seconds: ``0.25``, ``12.3``, ``123``."""
    seconds = to_float(value)
    if seconds is None:
        return MISSING
    if seconds < 10:
        return f"{seconds:.2f}"
    if seconds < 100:
        return f"{seconds:.1f}"
    return f"{seconds:.0f}"


def wall_time_text(wall: WallTime, processes: int = 1) -> str | None:
    """``31.2 s: starting 6.05 · compiling 4.00 · ... · ending 0.31``: a run's wall time and its parts, in
    seconds (None: no part timed); a group row's, its ``processes`` added up: ``93.6 s over 3 processes: ...``.
    No-break spaces keep a part's name, its number and the dot after it on one line where the text folds."""
    total = wall.total_s
    if total is None:
        return None
    parts = "\u00a0· ".join(f"{part.replace('_', ' ')}\u00a0{fmt_seconds(value)}" for part, value in wall.parts())
    over = f" over {processes} processes" if processes > 1 else ""
    return f"{fmt_seconds(total)} s{over}: {parts}"


def fmt_mib(value: Any) -> str:
    """MiB in binary units: ``0.5 MiB``, ``512 MiB``, ``12.0 GiB``."""
    size = to_float(value)
    if size is None:
        return MISSING
    if size < 10:
        return f"{size:.1f} MiB"
    if size < 1024:
        return f"{size:.0f} MiB"
    return f"{size / 1024:.1f} GiB"


def fmt_speedup(point: float | None, low: float | None = None, high: float | None = None) -> str:
    """``1.83× [1.79, 1.88]`` (the interval only when known; the CLI writes it the same way)."""
    if point is None:
        return MISSING
    text = times(point)
    if low is not None and high is not None:
        text += f" [{ratio(low)}, {ratio(high)}]"
    return text


def fmt_when(seconds: float | None) -> str:
    """A moment to the minute, UTC (as ``since:DATE`` reads dates): ``2026-12-01 10:10``; :data:`MISSING` when
    unknown or no date can show it (NaN, 1e300, a negative)."""
    if seconds is None:
        return MISSING
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return MISSING


def input_label(record: RunRecord, summary: Any = None) -> str | None:
    """A user workload's own name for its inputs (the ``label`` its factory returned), quoted; None when it gave none.

    Read from the measured blocks' labels (the run's summary, stored in the history too), so it is
    known once the first measured block arrived. ``summary``: the record's, when the caller has it.
    """
    if not is_user_workload(record.options.workload):
        return None
    labels = list((record.summary() if summary is None else summary).per_label)
    return f'"{printable(labels[0])}"' if len(labels) == 1 else None


def workload_name(workload: str) -> str:
    """A built-in workload's name, or a user file's name without its folders (``model.py``), and its factory
    where it is not the default one (``model.py:make``): the part that tells files apart, which a column cut
    from the right would lose first."""
    if is_user_workload(workload):
        path, factory = split_user_workload(workload)
        name = path.rsplit("/", 1)[-1]
        return printable(name if factory == DEFAULT_FACTORY else f"{name}:{factory}")
    return printable(workload)


def workload_names(workloads: Iterable[str]) -> dict[str, str]:
    """Each of ``workloads`` by its name in one listing (a table, a list of sessions): :func:`workload_name`, and
    where user files of the listing share a name, as many of each one's last folders as tell it apart from the
    others (``a/model.py``, ``b/model.py``; a path whole when all of it is needed). The one rule of every listing
    of runs (the command line's table and lines, the history, the app's table, the report); the details, the
    exports and ``compare --json`` keep the whole path."""
    names = {workload: workload_name(workload) for workload in workloads}
    alike: dict[str, dict[str, list[str]]] = {}  # a name -> each path of that name -> its workloads
    for workload, name in names.items():
        if is_user_workload(workload):
            path = split_user_workload(workload)[0]
            alike.setdefault(name, {}).setdefault(path, []).append(workload)
    for name, paths in alike.items():
        if len(paths) < 2:
            continue
        for path, same in paths.items():
            folders = _folders_apart(path, [other for other in paths if other != path])
            for workload in same:
                names[workload] = printable(folders) + "/" + name if folders else name
    return names


class ListingNames(Mapping[str, str]):
    """:func:`workload_names` of a listing that grows one workload at a time (the app's table): :meth:`add` says
    whose names a new file changed, so only their rows are written again. A mapping of the workloads taken in to
    their names, as :func:`workload_names`'s, so a label reads either alike (:func:`workload_word`)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._alike: dict[str, list[str]] = {}
        """A file's name -> the user workloads of the listing with that name."""

    def __getitem__(self, workload: str) -> str:
        return self._names[workload]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def name(self, workload: str) -> str:
        """The workload's name in the listing (its :func:`workload_name` until :meth:`add` takes it in)."""
        return self._names.get(workload) or workload_name(workload)

    def add(self, workload: str) -> list[str]:
        """Take ``workload`` into the listing; the workloads already in it whose names this changed."""
        if workload in self._names:
            return []
        name = workload_name(workload)
        if not is_user_workload(workload):
            self._names[workload] = name
            return []
        alike = self._alike.setdefault(name, [])
        alike.append(workload)
        names = workload_names(alike)
        changed = [other for other in alike[:-1] if names[other] != self._names[other]]
        self._names.update(names)
        return changed


def _folders_apart(path: str, others: list[str]) -> str:
    """The fewest last folders of ``path`` that no path of ``others`` (files of the same name) ends with too."""
    folders = path.split("/")[:-1]
    for count in range(1, len(folders) + 1):
        kept = folders[-count:]
        if all(other.split("/")[:-1][-count:] != kept for other in others):
            return "/".join(kept)
    return "/".join(folders)


def fold_path(path: str, width: int) -> str:
    """``path`` whole when it fits in ``width`` columns, else ``…/`` and as many of its last folders as fit before
    its file name, which is never cut (the name is what tells files apart; a name longer than ``width`` stays
    whole after ``…/``)."""
    if len(path) <= width:
        return path
    head, sep, name = path.rpartition("/")
    if not sep:
        return path
    kept = name
    for folder in reversed(head.split("/")):
        if len(folder) + 1 + len(kept) + 2 > width:
            break
        kept = f"{folder}/{kept}"
    return "…/" + kept


def workload_word(options: RunOptions, names: Mapping[str, str] | None = None) -> str:
    """The workload's name; a user's file by its file name (and a factory other than the default), not its
    whole path (:func:`workload_name`). ``names``: the names of the listing the word is read in
    (:func:`workload_names`, or the app table's growing :class:`ListingNames`: files of one name told apart by
    their folders); a workload it lacks reads as its :func:`workload_name`."""
    if names is not None and options.workload in names:
        return names[options.workload]
    return workload_name(options.workload)


def workload_label(options: RunOptions, names: Mapping[str, str] | None = None) -> str:
    """``pointwise n=512``, ``model.py n=32``: :func:`workload_word` and the parameters; control characters shown,
    not run. ``names`` as :func:`workload_word`'s, so a file's label names it as its row does (``a/model.py``
    beside ``b/model.py``)."""
    parts = [workload_word(options, names)] + [f"{k}={v}" for k, v in options.params.items()]
    return printable(" ".join(parts))


def options_label(options: RunOptions) -> str:
    """``RunOptions.label()`` plus a short device (``cpu`` / ``gpu``)."""
    return printable(f"{options.label()} {'cpu' if options.device == 'cpu' else 'gpu'}")


def accuracy_style(verdict: str | None) -> str:
    """The rich style of an accuracy verdict (``pass`` / ``fail`` / ``n/a``).

    The command line shares it (this module imports no textual).
    """
    return {"pass": "green", "fail": "bold red"}.get(verdict or "", "dim")


def accuracy_word(verdict: str | None) -> str:
    """An accuracy verdict as every table shows it (the app's, the CLI's, the details', the report's): ``pass``,
    ``fail``, or :data:`MISSING` where no check ran (a failed run, or one not checked; ``n/a`` in the CSV)."""
    return verdict if verdict in ("pass", "fail") else MISSING


def accuracy_label(record: RunRecord) -> tuple[str, str]:
    """(:func:`accuracy_word`, rich style) from the record's accuracy verdict."""
    verdict = record.accuracy.verdict
    return accuracy_word(verdict), accuracy_style(verdict)


def clock_label(record: RunRecord) -> tuple[str, str]:
    """(``1965 MHz`` with a ``!`` when it throttled, rich style) from per-run telemetry."""
    telemetry = record.telemetry
    if not telemetry.measured:
        return MISSING, "dim"
    mean = telemetry.sm_clock_mean_mhz
    text = MISSING if mean is None else f"{mean:.0f} MHz"
    if telemetry.throttled:
        return f"{text} !", "bold yellow"
    return text, ""


_GLUE = "\ue000"
"""Stands for the space between a number and its unit while a line is folded (a private-use character)."""
_NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:s|ms|µs|ns|min|h|KiB|MiB|GiB|MB|GB|%)(?!\w))")
"""The space between a number and its unit (``35 s``, ``48 MiB``), which a fold keeps."""


def hanging_lines(line: str, width: int) -> list[str]:
    """Prose ``line`` folded between words to ``width``, its continuation lines indented two more than its first
    (a hanging indent: where each item starts stays plain); a name with hyphens stays whole, and so does a number
    with its unit (``35 s``: never ``35`` at a line's end and ``s)`` on the next)."""
    lead = line[: len(line) - len(line.lstrip())]
    glued = _NUMBER_UNIT.sub(_GLUE, line.replace(_GLUE, " "))
    lines = wrap_cells(glued, width, initial_indent=lead, subsequent_indent=" " * (len(lead) + 2))
    return [part.replace(_GLUE, " ") for part in lines] or [line]
