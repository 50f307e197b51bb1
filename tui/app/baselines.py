"""Baselines in the app: which rows a baseline compares with, and the words of the ``vs base`` column.

The user marks rows as the baseline (``m``: the selected row; ``M``: every row of the selected
row's session). A row is compared with the baseline runs of the same workload, parameters and
device kind (``cpu``, ``cuda``): "the same configuration except what you changed". Among those, the
baseline runs whose configuration (every field of :data:`~tui.engine.compare.MATCH_FIELDS`) differs
from the row's in the fewest fields are its side of the pair, so a whole session marked as the
baseline compares each row with its own configuration there, and one marked run compares with
every run of its workload whatever their options. The pair is judged by ``compile-lab compare``'s
rule (:func:`~tui.engine.compare.judge.judge_pair`: the compiled median's change with a bootstrap
interval, and its verdict word). Runs that are part of the baseline are not compared with it.

Imports no textual (the judging runs off the UI thread).
"""

from __future__ import annotations

from typing import Sequence

from tui.app.components.result_cells import Cell
from tui.present.format import VERDICT_STYLES
from tui.engine.compare import MATCH_FIELDS, CompareSettings, Pair, PairResult, pair_up
from tui.engine.compare.judge import judge_pair
from tui.engine.compare.matching import field_values
from tui.engine.results import RunRecord
from tui.engine.verdict import FASTER, NO_CHANGE, SLOWER

__all__ = ["SAME_FIELDS", "SETTINGS", "BASELINE_CELL", "PENDING_CELL", "baseline_pair", "judge_row", "vs_base_words",
           "vs_base_cell", "summary_text"]

SAME_FIELDS = ("workload", "params", "device")
"""The fields a row must share with a baseline run to be compared with it."""
SETTINGS = CompareSettings(ignore=tuple(name for name in MATCH_FIELDS if name not in SAME_FIELDS))
"""``compile-lab compare``'s defaults (compiled time, 2% threshold), matching on :data:`SAME_FIELDS` only."""

BASELINE_CELL = Cell("◆ baseline", "bold", sort_key=0.0, justify="right")
"""The baseline's own rows say so in words (not by colour alone)."""
PENDING_CELL = Cell("…", "dim", justify="right")
NO_MATCH_CELL = Cell("–", "dim", justify="right")


def _distance(a: dict[str, str], b: dict[str, str]) -> int:
    return sum(a[name] != b[name] for name in MATCH_FIELDS)


def baseline_pair(base: Sequence[RunRecord], members: Sequence[RunRecord]) -> Pair | None:
    """The pair of a row (``members``: its runs) with the nearest baseline runs (module docstring); None: none."""
    mine = {r.run_id for r in members}
    base = [r for r in base if r.run_id not in mine]
    if not base or not members:
        return None
    pairs, _ = pair_up(base, members, SETTINGS.ignore)
    if not pairs:
        return None
    pair = pairs[0]
    row_fields = field_values(members[0])
    distances = {r.run_id: _distance(field_values(r), row_fields) for r in pair.base}
    nearest = min(distances.values())
    chosen = tuple(r for r in pair.base if distances[r.run_id] == nearest)
    return pair_up(chosen, members, SETTINGS.ignore)[0][0]


def judge_row(base: Sequence[RunRecord], members: Sequence[RunRecord]) -> PairResult | None:
    """The row's change against the baseline (loads stored samples: call it off the UI thread)."""
    pair = baseline_pair(base, members)
    return None if pair is None else judge_pair(pair, SETTINGS)


def _percent(slowdown: float) -> str:
    value = slowdown * 100
    return f"{value:+.0f}%" if abs(value) >= 10 else f"{value:+.1f}%"


def vs_base_words(result: PairResult | None) -> tuple[str, str]:
    """The column's text and style: ``+6.8% slower``, ``-12% faster``, ``~ no change``, ``noisy``, ..."""
    if result is None:
        return "–", "dim"
    if result.status != "compared" or result.verdict is None:
        return "not compared", "dim"
    verdict = result.verdict
    style = VERDICT_STYLES.get(verdict, "")
    if verdict in (FASTER, SLOWER) and result.slowdown is not None:
        return f"{_percent(result.slowdown)} {verdict}", style
    if verdict == NO_CHANGE:
        return "~ no change", style
    return verdict, style


def vs_base_cell(result: PairResult | None) -> Cell:
    """The ``vs base`` cell of a compared row (sorted by how much slower it is)."""
    if result is None:
        return NO_MATCH_CELL
    text, style = vs_base_words(result)
    return Cell(text, style, sort_key=result.slowdown, justify="right")


def summary_text(result: PairResult | None, is_baseline: bool = False) -> str | None:
    """The details' "vs baseline" line: the change, its interval, the verdict and its notes."""
    if is_baseline:
        return "vs baseline: this row is (part of) the baseline"
    if result is None:
        return None
    words, _ = vs_base_words(result)
    line = f"vs baseline: {words}"
    change = result.change(result.metric)
    if change is not None and change.base is not None and change.new is not None:
        line += f" (compiled median {change.base:.4g} → {change.new:.4g} ms"
        if change.ratio_low is not None and change.ratio_high is not None:
            line += f", ratio 95% CI [{change.ratio_low:.3f}, {change.ratio_high:.3f}]"
        line += ")"
    line += f"; baseline runs {', '.join(result.base_runs)}"
    for note in (*result.differences, *(change.reasons if change is not None else ()), *result.notes):
        line += f"\n  {note}"
    return line
