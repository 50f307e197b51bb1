"""The A/B part of a sweep's output (``--python A,B``): what changed in the diagnostics from A to B.

Printed after the table: per configuration, graph breaks, recompiles and CUDA-graph skips that
appeared or disappeared, and the compile time's change (:func:`tui.engine.run.ab.diagnostics_diff`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tui.present.option_fields import differing, option_words
from tui.engine.run.ab import diagnostics_diff, interpreter_name
from tui.engine.store.results import RunRecord
from tui.typed import printable

__all__ = ["ab_lines", "print_ab_diff"]


def ab_lines(records: Sequence[RunRecord]) -> list[str]:
    """The A/B section as lines (none when the runs used fewer than two interpreters)."""
    pythons = list(dict.fromkeys(r.options.python for r in records if r.options.python))
    if len(pythons) < 2:
        return []
    differs = differing(r.options for r in records) - {"python"}

    def label(record: RunRecord) -> str:
        o = record.options
        words = [o.workload, *(f"{k}={v}" for k, v in o.params.items()),
                 *option_words(o, differs, skip=("workload", "params", "python"))]
        return printable(" ".join(words))

    lines = []
    base = pythons[0]
    for other in pythons[1:]:
        a, b = interpreter_name(base), interpreter_name(other)
        torch_of = {p: next((r.env.torch for r in records if r.options.python == p and r.env.torch), "?")
                    for p in (base, other)}
        lines.append(printable(f"A/B diagnostics: A {a} (torch {torch_of[base]}) -> B {b} (torch {torch_of[other]})"))
        diffs = diagnostics_diff(records, (base, other), label)
        if not diffs:
            lines.append("  no configuration ended on both sides")
        for diff in diffs:
            lines.append(f"  {diff.label}: {'; '.join(diff.changes) if diff.changes else 'no change'}")
    return lines


def print_ab_diff(records: Sequence[RunRecord], console: Any) -> None:
    """Print :func:`ab_lines` (nothing for a sweep of one interpreter)."""
    for line in ab_lines(records):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
