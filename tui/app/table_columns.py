"""The results table's columns: one typed table of every column, its priority, and what the table shows now.

Columns are placed by priority, lowest first, so that on a narrow terminal the most important
ones are on screen and the rest sit at the right end of the horizontally scrolling table:

1. status (the verdict of a done run) and the speedup with its interval, then (while a baseline is
   marked) the change against it;
2. the option fields (tui.present.option_fields) that tell the rows shown apart (this session's, and the
   previous sessions' while they are shown), each value whole in its own column; where those columns
   would end past the table's width, one ``config`` column instead, whose cell names just what differs
   in short forms (:func:`compacted`), so that rows read apart at 80 columns;
3. the measurements, by how much they change what the speedup means (accuracy, launch-bound,
   graph breaks) before context (compile time, memory, clock).

An option field every shown row shares is no column: its value is said once, in the pane's title
(``Results · pointwise n=512 inductor dyn=auto fp32 cpu``). The user shows or hides columns
(the ``columns`` setting of the config); a hidden option field is neither a column nor in the title.

Columns other issues add are declared here: ``verdict`` (the status cell shows it today) is hidden
until the user shows it; ``vs_base`` (the change against the baseline, tui.app.baselines) shows only
while a baseline is marked. ``gpu`` (the GPU's name) and ``node`` (the host) are *where* columns
(``differing=True``): shown, unless the user hides them, only while the rows ran on more than one
kind of GPU (more than one host), and placed then with the option fields that tell this session's
rows apart (a pool of one kind of GPU tells its rows apart by the ``device`` column: ``cuda:2``).

Imports no textual (the config checks the ``columns`` setting with it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Mapping

from rich.cells import cell_len

from tui.present.format import MISSING
from tui.present.option_fields import FIELDS_BY_KEY, OPTION_FIELDS
from tui.engine.catalog import echo
from tui.typed import printable

__all__ = ["TableColumn", "TABLE_COLUMNS", "COLUMNS_BY_KEY", "CELL_KEYS", "OPTION_KEYS", "COUNTED_KEYS", "Variety",
           "Placed", "TableLayout", "table_layout", "compacted", "default_choice", "decode_choice", "encode_choice"]


@dataclass(frozen=True)
class TableColumn:
    """One column of the results table."""

    key: str
    """The cell key (tui.app.components.result_cells.row_cells) and the config's name for it."""
    header: str
    width: int
    """Its width; an option column is as wide as its widest value shown, up to this."""
    priority: int
    """Lower is further left: on screen first on a narrow terminal."""
    shown: bool = True
    """Shown by default (the config's ``columns`` setting overrides it)."""
    option: bool = False
    """An option field: a column where the rows differ, in the pane's title where they agree."""
    required: bool = False
    """Cannot be hidden."""
    available: bool = True
    """False: declared for a coming issue, without a cell yet (not offered, refused in the config)."""
    differing: bool = False
    """Shown only while the rows' values (other than ``–``) differ, as an option field that tells rows apart."""
    meaning: str = ""
    """What the column shows, for the column chooser."""


_OPTION_PRIORITY = 20
TABLE_COLUMNS: tuple[TableColumn, ...] = (
    TableColumn("status", "status", 15, 0, required=True,
                meaning="what the run is doing; a done run's verdict (faster, slower, no change, noisy, ...)"),
    TableColumn("speedup", "speedup [95% CI]", 18, 10,
                meaning="eager / compiled device time (above 1: compiled is faster), with its interval"),
    TableColumn("vs_base", "vs base", 13, 12,
                meaning="the compiled median's change against the baseline, and its verdict "
                        "(only while one is marked: m)"),
    TableColumn("config", "config", 40, 15,
                meaning="the options that tell the rows apart, in one cell, when their own columns do not fit"),
    *(TableColumn(field.key, field.header, field.width, _OPTION_PRIORITY + index, option=True, meaning=field.meaning)
      for index, field in enumerate(OPTION_FIELDS)),
    TableColumn("verdict", "verdict", 12, 40, shown=False,
                meaning="the verdict alone (the status of a done run shows it)"),
    TableColumn("eager_ms", "eager ms", 8, 50, meaning="eager median per call"),
    TableColumn("compiled_ms", "comp. ms", 8, 51, meaning="compiled median per call"),
    TableColumn("accuracy", "acc.", 4, 52, meaning="compiled output against eager: pass or fail"),
    TableColumn("launch_bound", "LB", 9, 53, meaning="launch-bound: the host-inclusive speedup a loop pays"),
    TableColumn("graph_breaks", "brk", 3, 54, meaning="graph breaks"),
    TableColumn("recompiles", "rcp", 3, 55, meaning="recompiles"),
    TableColumn("compile_s", "compile s", 9, 56, meaning="the first compiled call, in seconds"),
    TableColumn("peak_mem", "peak mem", 9, 57, meaning="peak device memory"),
    TableColumn("sm_clock", "SM clock", 10, 58, meaning="mean SM clock while measuring (! when it throttled)"),
    TableColumn("gpu", "GPU", 12, 60, differing=True,
                meaning="the GPU's name (while the rows ran on more than one kind of GPU)"),
    TableColumn("node", "node", 16, 61, differing=True, meaning="the host that ran it (while there is more than one)"),
)
"""Every column, by priority."""

COLUMNS_BY_KEY = {column.key: column for column in TABLE_COLUMNS}
CELL_KEYS = tuple(column.key for column in TABLE_COLUMNS if column.available)
"""The cells a row has, in priority order (what row_cells makes)."""
OPTION_KEYS = tuple(column.key for column in TABLE_COLUMNS if column.option)
COUNTED_KEYS = OPTION_KEYS + tuple(column.key for column in TABLE_COLUMNS if column.differing)
"""The cells whose values the table counts (:class:`Variety`): the option fields and the *where* columns."""
_UNKNOWN = MISSING


def default_choice() -> dict[str, bool]:
    """Every available column's default: shown or not."""
    return {column.key: column.shown for column in TABLE_COLUMNS if column.available}


def encode_choice(choice: Mapping[str, bool]) -> dict[str, bool]:
    """What the config keeps: only the columns whose choice differs from their default (new columns get theirs)."""
    defaults = default_choice()
    return {key: bool(shown) for key, shown in choice.items() if key in defaults and bool(shown) != defaults[key]}


def decode_choice(value: Any) -> tuple[dict[str, bool], list[str]]:
    """The config's ``columns`` (``{"peak_mem": false}``) -> (every column's choice, problems); never raises.

    An unknown column, a value that is not true or false, hiding a column that cannot be hidden:
    each is left out with one problem ``columns.<key>: why``; the rest is kept.
    """
    choice = default_choice()
    if not isinstance(value, dict):
        return choice, [f"columns: expected an object of column: true/false, got {echo(value)} (default used)"]
    problems = []
    for key, shown in value.items():
        name = echo(printable(str(key)), plain=True)
        column = COLUMNS_BY_KEY.get(key) if isinstance(key, str) else None
        if column is None or not column.available:
            problems.append(f"columns.{name}: unknown column (ignored; known: {', '.join(choice)})")
        elif not isinstance(shown, bool):
            problems.append(f"columns.{name}: expected true or false, got {echo(shown)} (ignored)")
        elif column.required and not shown:
            problems.append(f"columns.{name}: cannot be hidden (ignored)")
        else:
            choice[key] = shown
    return choice, problems


class Variety:
    """The values of the option cells among the table's rows, counted apart for this session and earlier ones.

    Rows are added (and a row's cells replaced) one by one; the counts give which fields differ
    and how wide their values are, whatever the number of rows, without a pass over them.
    """

    def __init__(self) -> None:
        self._counts: dict[bool, dict[str, Counter[str]]] = {
            history: {key: Counter() for key in COUNTED_KEYS} for history in (False, True)
        }
        self._rows = {False: 0, True: 0}

    def add(self, cells: Mapping[str, Any], history: bool, sign: int = 1) -> None:
        """Count a row's option and *where* cells (objects with ``plain``; a cell missing is not counted);
        ``sign=-1`` takes them back."""
        counts = self._counts[history]
        for key in COUNTED_KEYS:
            if key not in cells:
                continue
            counter = counts[key]
            plain = cells[key].plain
            counter[plain] += sign
            if counter[plain] <= 0:
                del counter[plain]
        self._rows[history] += sign

    def rows(self, history: bool) -> int:
        """How many rows of this session (False) or earlier sessions (True) were counted."""
        return self._rows[history]

    def values(self, key: str, *, session: bool, history: bool) -> set[str]:
        """The distinct values of option ``key`` among this session's and/or earlier sessions' rows."""
        found: set[str] = set()
        if session:
            found.update(self._counts[False][key])
        if history:
            found.update(self._counts[True][key])
        return found


@dataclass(frozen=True)
class Placed:
    """A column on screen: its key, header and width."""

    key: str
    header: str
    width: int


@dataclass(frozen=True)
class TableLayout:
    """The columns the table shows, in order, and the option words every row shares (for the title)."""

    columns: tuple[Placed, ...]
    shared: tuple[str, ...] = ()
    apart: tuple[str, ...] = ()
    """The option columns that tell this session's rows apart (the second group of the module's rules)."""
    compact: tuple[str, ...] = ()
    """The columns of ``apart`` folded into the one ``config`` column, because they did not fit beside it."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the columns shown, in order."""
        return tuple(column.key for column in self.columns)

    def off_screen(self, visible: int, padding: int) -> list[str]:
        """The headers of the columns telling rows apart that end past ``visible`` columns (``padding``: each
        cell's, on either side)."""
        end, cut = 0, []
        for placed in self.columns:
            end += placed.width + 2 * padding
            if end > visible and placed.key in self.apart:
                cut.append(placed.header)
        return cut


def _fitted(column: TableColumn, values: Iterable[str]) -> int:
    return min(column.width, max([cell_len(column.header), *(cell_len(value) for value in values)]))


def table_layout(choice: Mapping[str, bool], variety: Variety, history_shown: bool, width: int | None = None,
                 padding: int = 1) -> TableLayout:
    """The columns for the user's ``choice`` and the rows counted in ``variety`` (see the module's rules).

    ``width``: the table's visible width (``padding`` cells either side of each column); when the columns that
    tell the rows apart do not fit after status and speedup, they fold into one ``config`` column
    (:func:`compacted`). None: no folding.
    """
    layout = _layout(choice, variety, history_shown)
    if width is None or not choice.get("config", True):
        return layout
    return compacted(layout, width, padding)


def compacted(layout: TableLayout, width: int, padding: int = 1) -> TableLayout:
    """``layout`` with the columns that tell the rows apart folded into one ``config`` column right after the
    speedup, when they would end past ``width``; the cell names just what differs, in short forms, so rows
    read apart at 80 columns. Unchanged when they fit, or when fewer than two columns tell the rows apart."""
    apart = [placed for placed in layout.columns if placed.key in layout.apart]
    if len(apart) < 2:
        return layout
    end = 0
    for placed in layout.columns:
        end += placed.width + 2 * padding
        if placed is apart[-1]:
            break
    if end <= width:
        return layout
    kept = [placed for placed in layout.columns if placed.key not in layout.apart]
    leading = [placed for placed in kept if COLUMNS_BY_KEY[placed.key].priority < _OPTION_PRIORITY]
    room = width - sum(placed.width + 2 * padding for placed in leading) - 2 * padding
    words = sum(placed.width for placed in apart) + len(apart) - 1
    config = Placed("config", COLUMNS_BY_KEY["config"].header, max(min(words, room), len("config")))
    columns = (*leading, config, *kept[len(leading):])
    return TableLayout(columns, layout.shared, layout.apart, tuple(placed.key for placed in apart))


def _layout(choice: Mapping[str, bool], variety: Variety, history_shown: bool) -> TableLayout:
    first: list[Placed] = []
    middle: list[Placed] = []
    shared: list[str] = []
    for column in TABLE_COLUMNS:
        if not column.available or not (column.required or choice.get(column.key, column.shown)):
            continue
        if column.differing:
            _place_where(column, variety, history_shown, first)
            continue
        if column.key == "config":
            continue  # placed by compacted(), in place of the columns it folds
        if not column.option:
            placed = Placed(column.key, column.header, column.width)
            (first if column.priority < _OPTION_PRIORITY else middle).append(placed)
            continue
        values = variety.values(column.key, session=True, history=history_shown)
        if len(values) == 1:
            word = FIELDS_BY_KEY[column.key].word(next(iter(values)))
            shared.extend([word] if word else [])
            continue
        if not values:
            continue
        placed = Placed(column.key, column.header, _fitted(column, values))
        first.append(placed)  # its values differ among the rows shown: it tells them apart
    apart = tuple(placed.key for placed in first
                  if COLUMNS_BY_KEY[placed.key].option or COLUMNS_BY_KEY[placed.key].differing)
    return TableLayout(tuple(first + middle), tuple(shared), apart)


def _place_where(column: TableColumn, variety: Variety, history_shown: bool, first: list[Placed]) -> None:
    """A *where* column (``gpu``, ``node``): with the option columns that tell the rows apart when its values
    differ among the rows shown, else nowhere."""
    values = variety.values(column.key, session=True, history=history_shown) - {_UNKNOWN}
    if len(values) < 2:
        return
    placed = Placed(column.key, column.header, _fitted(column, values))
    first.append(placed)
