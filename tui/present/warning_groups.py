"""Warnings of several runs, each said once: the runs whose warning reads alike but for its measured figures share
a line.

A sweep's runs mostly warn alike (``eager time spread IQR/median 23% > 10%: ...`` in every run, a warm cache
in most): said once a run, eight runs made thirty lines under the table. :func:`grouped_warnings` keeps the
order in which each warning first appears, names the runs of each (``runs 1–4, 6``) and gives each figure that
differs between them as its range (``13–98%``). It merges only what a range says truly: one warning a run, and
figures with a unit (``%``, ``ms``, ``s``, ``x``) and counts of samples; warnings that differ in any other number
(``output[2]``, a cache's hits) stay a line a run. The exports keep every run's own warnings.

A row of several processes (``--repeat``) gives the warnings of some of its processes as ``process 2 of 3: ...``:
:func:`merged_processes` says those that read alike once the same way (``processes 1–3 of 3: eager time spread
IQR/median 19–32% > 10%``), for the command line, the details screen and the report alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["grouped_warnings", "merged_processes", "run_numbers"]

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]*\w)")
"""A number standing alone (``23``, ``-0.5``, ``1e+20``), not one inside a word (``fp32``)."""
_UNIT = re.compile(r"\s?(?:%|ms|µs|ns|s|x|×)(?!\w)| samples\b")
"""What follows a measured figure, which a range may stand for (a count of samples is one)."""
_OF = " of "
"""Between a count and its total (``39 of 300 samples``): the count is a figure where the total is one."""
_PROCESS = re.compile(r"process (\d+) of (\d+): (.*)", re.S)
"""A warning one process of a row gave and not every other (tui.engine.store.repeats)."""


def run_numbers(numbers: Sequence[int], noun: str = "run") -> str:
    """``run 3``, ``runs 1–4, 6``: run numbers with each run of consecutive ones as a range (``noun``: what they
    number, ``processes 1–3``)."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    start = previous = ordered[0]
    for number in [*ordered[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}–{previous}")
        if number is not None:
            start = previous = number
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{plural if len(ordered) > 1 else noun} {', '.join(parts)}"


def _range(values: Sequence[str]) -> str:
    low, high = min(values, key=float), max(values, key=float)
    if float(low) == float(high):
        return low
    return f"{low} to {high}" if low.startswith("-") else f"{low}–{high}"


def _merged(pieces: Sequence[str], numbers: Sequence[Sequence[str]]) -> str | None:
    """One text for warnings of one shape (``pieces``: the text between their numbers), each figure that differs as
    its range; None where a number that differs is not a figure with a unit."""
    out = [pieces[0]]
    for index, (values, piece) in enumerate(zip(zip(*numbers, strict=True), pieces[1:], strict=True)):
        total = piece == _OF and index + 2 < len(pieces) and pieces[index + 2].startswith(" samples")
        in_range = pieces[index].endswith("–") or piece.startswith("–")  # an end of a range merged already
        if len(set(values)) > 1 and (in_range or not (_UNIT.match(piece) or total)):
            return None
        out += [_range(values), piece]
    return "".join(out)


def grouped_warnings(per_run: Sequence[tuple[int, Sequence[str]]], noun: str = "run", total: str = "") -> list[str]:
    """``run N: warning`` lines for (run number, its warnings) pairs, a warning shared by several runs said once as
    ``runs 1–3: warning`` (see the module docstring), in the order each first appears; each run's processes'
    warnings merged first (:func:`merged_processes`). ``noun`` and ``total``: what the numbers count, and after
    them (``process 2 of 3``)."""
    groups: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    for number, warnings in per_run:
        for text in merged_processes(warnings) if noun == "run" else warnings:
            groups.setdefault(tuple(_NUMBER.split(text)), []).append((number, text))
    lines = []
    for pieces, found in groups.items():
        runs = [number for number, _ in found]
        merged = _merged(pieces, [_NUMBER.findall(text) for _, text in found]) if len(set(runs)) == len(runs) else None
        if merged is not None:
            lines.append(f"{run_numbers(runs, noun)}{total}: {merged}")
        else:
            lines += [f"{noun} {number}{total}: {text}" for number, text in found]
    return lines


def merged_processes(warnings: Sequence[str]) -> list[str]:
    """A row's warnings with those of its processes (``process 2 of 3: ...``) that read alike but for their figures
    said once, ``processes 1–3 of 3: ...``: the processes' warnings gathered where the first of them stood, the
    row's own in their order around them."""
    lines: list[str | tuple[str, list[tuple[int, str]]]] = []
    by_total: dict[str, list[tuple[int, str]]] = {}
    for text in warnings:
        match = _PROCESS.fullmatch(text)
        if match is None:
            lines.append(text)
            continue
        if match[2] not in by_total:
            by_total[match[2]] = []
            lines.append((match[2], by_total[match[2]]))
        by_total[match[2]].append((int(match[1]), match[3]))
    out: list[str] = []
    for line in lines:
        if isinstance(line, str):
            out.append(line)
            continue
        total, found = line
        per_process: dict[int, list[str]] = {}
        for number, text in found:
            per_process.setdefault(number, []).append(text)
        out += grouped_warnings(list(per_process.items()), noun="process", total=f" of {total}")
    return out
