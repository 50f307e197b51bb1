"""``compile-lab compare BASE NEW``: is NEW faster than BASE, by how much, and is it real? (torch-free)

* :mod:`~tui.engine.compare.selection`: what BASE and NEW name (a JSON export; history runs by id,
  session or date) and loading them;
* :mod:`~tui.engine.compare.matching`: the configuration key, pairs (:class:`Pair`) and the rows on
  one side only (:class:`Unmatched`);
* :mod:`~tui.engine.compare.judge`: each pair's change per metric with its bootstrap interval
  (:mod:`tui.engine.measure.change_stats`), its verdict (:mod:`tui.engine.measure.verdict`'s words and noise checks)
  and the gate (:class:`PairResult`);
* :mod:`~tui.engine.compare.comparison`: the whole :class:`Comparison` and its exit code;
* :mod:`~tui.engine.compare.across`: one selection's GPU kinds (or nodes) side by side (:class:`Across`);
* :mod:`~tui.engine.compare.output`: the CSV and JSON files.

The command line renders it (``tui.cli.compare``).
"""

from __future__ import annotations

from tui.engine.compare.across import ACROSS_FIELDS, Across, AcrossError, AcrossRow, KindCell, compare_across
from tui.engine.compare.comparison import Comparison, compare
from tui.engine.compare.judge import METRIC_NAMES, METRICS, Change, CompareSettings, PairResult, UnmatchedRow
from tui.engine.compare.matching import MATCH_FIELDS, ConfigKey, Pair, Unmatched, check_ignore, pair_up
from tui.engine.compare.selection import SELECTION_HELP, SelectionError, load_selection, parse_selection

__all__ = [
    "Comparison", "compare", "Change", "CompareSettings", "PairResult", "UnmatchedRow", "METRICS", "METRIC_NAMES",
    "MATCH_FIELDS", "ConfigKey", "Pair", "Unmatched", "check_ignore", "pair_up", "SELECTION_HELP", "SelectionError",
    "load_selection", "parse_selection", "ACROSS_FIELDS", "Across", "AcrossError", "AcrossRow", "KindCell",
    "compare_across",
]  # fmt: skip
