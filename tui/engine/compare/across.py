"""One selection's GPU kinds (or nodes) side by side: ``compile-lab compare SELECTION --across gpu_name``.

The runs are split by the value of the ``--across`` field (:func:`split`: the run's ``env.gpu_name``
or ``env.node``). A run without one is left out and counted: a CPU run has no GPU name, and a run
from before nodes were recorded has no node. The baseline is the first value met in the
selection's order (the first kind the sweep ran on), or the one ``--across-base`` names
(:func:`pick_baseline`: exactly, or by a part of it that names one value only).

Every other kind is matched with the baseline as ``compare BASE NEW`` matches two selections, with
the ``--across`` field left out of the match (``gpu_name`` is ignored; ``node`` is no match field,
so nodes with different GPUs pair only with ``--ignore gpu_name``), and judged with the same change
statistics, verdicts and gate (:func:`~tui.engine.compare.judge.judge_pair`): ``slower`` means
slower than on the baseline. The rows are the configurations of every kind, the baseline's in its
order, then those it lacks; a row holds a :class:`KindCell` per kind, the baseline's first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tui.engine.compare.comparison import EXIT_FAIL, EXIT_PASS, NOTHING_COMPARED, failure_line
from tui.engine.compare.judge import CompareSettings, PairResult, judge_pair, side_values
from tui.engine.compare.matching import MATCH_FIELDS, ConfigKey, config_key, pair_up
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import VERDICTS
from tui.typed import JsonRecord, printable

__all__ = ["ACROSS_FIELDS", "AcrossError", "Across", "AcrossRow", "KindCell", "across_value", "split",
           "pick_baseline", "compare_across"]  # fmt: skip

ACROSS_FIELDS = {"gpu_name": "GPU kind", "node": "node"}
"""What ``--across`` splits a selection by, and what one value of it is called."""
BASELINE, COMPARED, NOT_RUN, NO_BASELINE = "baseline", "compared", "not run", "no baseline"
_SHOWN = 60


def _shown(text: str) -> str:
    text = printable(text)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


class AcrossError(ValueError):
    """A selection that cannot be set side by side, or a baseline that names no kind (``baseline``); one line."""

    def __init__(self, message: str, baseline: bool = False) -> None:
        super().__init__(message)
        self.baseline = baseline


def across_value(record: RunRecord, name: str) -> str:
    """The run's value of the ``--across`` field; empty when it has none."""
    return printable(str(getattr(record.env, name, None) or "")).strip()


def split(records: Iterable[RunRecord], name: str) -> tuple[dict[str, list[RunRecord]], list[RunRecord]]:
    """The runs by their value of ``name``, in the order the values are first met, and the runs without one."""
    groups: dict[str, list[RunRecord]] = {}
    without = []
    for record in records:
        value = across_value(record, name)
        if value:
            groups.setdefault(value, []).append(record)
        else:
            without.append(record)
    return groups, without


def pick_baseline(kinds: Sequence[str], wanted: str | None) -> str:
    """The baseline among ``kinds``: the first, or the one ``wanted`` names exactly or by a unique part (any case)."""
    if not wanted or not wanted.strip():
        return kinds[0]
    wanted = wanted.strip()
    if wanted in kinds:
        return wanted
    found = [kind for kind in kinds if wanted.casefold() in kind.casefold()]
    if len(found) == 1:
        return found[0]
    shown = _shown(wanted)
    why = "names none" if not found else f"is part of {len(found)}"
    raise AcrossError(f"{shown!r} {why} of the values found (allowed: {', '.join(kinds)}, or a part of one)",
                      baseline=True)


@dataclass(frozen=True)
class KindCell(JsonRecord):
    """One configuration on one kind: its own values and, unless it is the baseline's, its change against it."""

    kind: str = ""
    status: str = NOT_RUN
    """baseline (the baseline kind's own cell), compared (judged against the baseline: ``result``), not run
    (the kind has no run of it), no baseline (the kind ran it, the baseline did not)."""
    runs: tuple[str, ...] = ()
    processes: int = 0
    """Done processes with samples."""
    values: dict[str, float | None] = field(default_factory=dict)
    """Each metric's value on this kind (ms; x for the speedup)."""
    result: PairResult | None = None
    hint: str = ""
    """How the nearest configuration of the other side differs (a row not on both)."""
    notes: tuple[str, ...] = ()
    fails: bool = False

    @property
    def verdict(self) -> str:
        """The word of the cell: the gated verdict, why it was not compared, or its status."""
        if self.result is not None:
            return self.result.verdict or self.result.status
        return self.status


@dataclass(frozen=True)
class AcrossRow(JsonRecord):
    """One configuration: a :class:`KindCell` per kind, the baseline's first."""

    label: str = ""
    key: dict[str, str] = field(default_factory=dict)
    cells: tuple[KindCell, ...] = ()


@dataclass(frozen=True)
class Across(JsonRecord):
    """One selection split by ``across``: every kind against the baseline, side by side."""

    selection: str = ""
    across: str = "gpu_name"
    baseline: str = ""
    kinds: tuple[str, ...] = ()
    """The baseline first, then the others in the order first met."""
    kind_runs: tuple[int, ...] = ()
    """How many runs each kind has (in ``kinds``' order)."""
    settings: CompareSettings = field(default_factory=CompareSettings)
    """The settings judged with (``ignore`` holds the ``--across`` field when it is a match field)."""
    rows: tuple[AcrossRow, ...] = ()
    left_out: tuple[str, ...] = ()
    """The runs without a value of ``across`` (run ids)."""
    problems: tuple[str, ...] = ()

    def failures(self) -> tuple[str, ...]:
        """Why the gate fails, one line per cell, named by row number, configuration and kind (empty: it passes); a
        comparison in which no cell was compared fails, as :meth:`Comparison.failures` says why."""
        if not any(cell.result is not None for row in self.rows for cell in row.cells[1:]):
            return (NOTHING_COMPARED,)
        lines = []
        for number, row in enumerate(self.rows, 1):
            for cell in row.cells[1:]:
                name = f"{number} {row.label} on {cell.kind}"
                if cell.result is not None:
                    line = failure_line(name, cell.result, self.settings)
                    lines += [line] if line else []
                elif cell.fails:
                    lines.append(f"{name}: {cell.status} (--strict)")
        return tuple(lines)

    @property
    def exit_code(self) -> int:
        """1 when the gate fails (:meth:`failures`), else 0."""
        return EXIT_FAIL if self.failures() else EXIT_PASS

    def counts(self, kind: str) -> dict[str, int]:
        """How many of ``kind``'s cells got each verdict (verdict order), were not compared, not run, no baseline."""
        cells = [cell for row in self.rows for cell in row.cells if cell.kind == kind]
        results = [cell.result for cell in cells if cell.result is not None]
        counts = {word: sum(r.verdict == word for r in results) for word in VERDICTS}
        counts["not compared"] = sum(r.status != COMPARED for r in results)
        for status in (NOT_RUN, NO_BASELINE):
            counts[status] = sum(cell.status == status for cell in cells)
        return {word: count for word, count in counts.items() if count}


def _one_kind(selection: str, name: str, groups: dict[str, list[RunRecord]], without: int) -> AcrossError:
    word = ACROSS_FIELDS[name]
    found = [f"{kind}: {len(runs)} run{'s' if len(runs) != 1 else ''}" for kind, runs in groups.items()]
    found += [f"{without} run{'s' if without != 1 else ''} without a {name}"] if without else []
    ran = f"one {word} only" if groups else f"no {word} recorded"
    return AcrossError(f"{_shown(selection)}: its runs ran on {ran} ({'; '.join(found)}): nothing to set "
                       f"side by side (allowed: a selection that ran on two {word}s or more)")


def _cell(kind: str, status: str, records: Sequence[RunRecord], settings: CompareSettings, **more: object) -> KindCell:
    processes, values, notes = side_values(records, settings, kind) if records else (0, {}, [])
    more.setdefault("notes", tuple(notes))
    return KindCell(kind=kind, status=status, runs=tuple(r.run_id for r in records), processes=processes,
                    values=values, **more)  # type: ignore[arg-type]


def _kind_cells(base: str, kind: str, groups: dict[str, list[RunRecord]], settings: CompareSettings,
                across: str) -> dict[ConfigKey, KindCell]:
    """``kind``'s cell of every configuration the baseline or ``kind`` ran."""
    pairs, unmatched = pair_up(groups[base], groups[kind], settings.ignore, (base, kind))
    cells = {}
    for pair in pairs:
        result = judge_pair(pair, settings)
        # Every pair differs in the across field: the column says so, not each row.
        result = dataclasses.replace(result, differences=tuple(d for d in result.differences
                                                               if not d.startswith(f"{across}: ")))
        cells[pair.key] = _cell(kind, COMPARED, pair.new, settings, result=result, notes=result.notes)
    for row in unmatched:
        status, records = (NOT_RUN, ()) if row.side == "base" else (NO_BASELINE, row.records)
        cells[row.key] = _cell(kind, status, records, settings, hint=row.hint, fails=settings.strict)
    return cells


def compare_across(records: Iterable[RunRecord], across: str, settings: CompareSettings | None = None, *,
                   baseline: str | None = None, selection: str = "", problems: Iterable[str] = ()) -> Across:
    """The selection's kinds side by side (see the module docstring); AcrossError, one line, when it cannot be."""
    if across not in ACROSS_FIELDS:
        raise AcrossError(f"{_shown(across)!r} is not allowed (allowed: {', '.join(ACROSS_FIELDS)})")
    settings = settings or CompareSettings()
    if across in MATCH_FIELDS and across not in settings.ignore:
        settings = dataclasses.replace(settings, ignore=(*settings.ignore, across))
    groups, without = split(records, across)
    if len(groups) < 2:
        raise _one_kind(selection, across, groups, len(without))
    base = pick_baseline(list(groups), baseline)
    kinds = (base, *(kind for kind in groups if kind != base))
    base_keys: dict[ConfigKey, list[RunRecord]] = {}
    for record in groups[base]:
        base_keys.setdefault(config_key(record, settings.ignore), []).append(record)
    by_kind = {kind: _kind_cells(base, kind, groups, settings, across) for kind in kinds[1:]}
    keys = list(base_keys) + [key for kind in kinds[1:] for key in by_kind[kind] if key not in base_keys]
    rows = []
    for key in dict.fromkeys(keys):
        first = (_cell(base, BASELINE, base_keys[key], settings) if key in base_keys
                 else KindCell(kind=base, status=NOT_RUN))  # fmt: skip
        cells = (first, *(by_kind[kind].get(key, KindCell(kind=kind, status=NOT_RUN)) for kind in kinds[1:]))
        rows.append(AcrossRow(label=key.label(), key=dict(key.fields), cells=cells))
    return Across(selection=selection, across=across, baseline=base, kinds=kinds,
                  kind_runs=tuple(len(groups[kind]) for kind in kinds), settings=settings, rows=tuple(rows),
                  left_out=tuple(r.run_id for r in without), problems=tuple(problems))  # fmt: skip
