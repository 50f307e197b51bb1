"""A/B of torch builds in one session: ``--python A,B`` as a sweep axis.

The interpreters are checked before anything runs (:func:`check_interpreter`), each gets a short
name for tables (:func:`interpreter_name`: the venv's directory), and after the sweep the
diagnostics of the two sides of each configuration are diffed (:func:`diagnostics_diff`), the
sides matched by ``compile-lab compare``'s :func:`~tui.engine.compare.matching.pair_up` with the
torch version ignored.
"""

from __future__ import annotations

import statistics

import os
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tui.engine.compare.matching import pair_up
from tui.engine.options import OptionsError
from tui.engine.store.results import RunRecord
from tui.engine.status import RunStatus

__all__ = ["check_interpreter", "interpreter_name", "ABDiff", "diagnostics_diff"]

_CHECK_TIMEOUT_S = 30.0
_HAS_TORCH = "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"
# find_spec looks torch up without importing it: a check per interpreter in well under a second.


def check_interpreter(python: str) -> None:
    """Refuse (OptionsError naming ``--python``, one line) a path that is no runnable Python or has no torch."""
    shown = python if len(python) <= 120 else python[:117] + "..."
    try:
        done = subprocess.run([python, "-c", _HAS_TORCH], capture_output=True, timeout=_CHECK_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OptionsError("--python", f"{shown} is not a Python that runs ({type(exc).__name__})") from None
    if done.returncode == 3:
        raise OptionsError("--python", f"{shown} has no torch installed")
    if done.returncode != 0:
        raise OptionsError("--python", f"{shown} is not a Python that runs (exit code {done.returncode})")


def interpreter_name(python: str | None) -> str:
    """The short form of an interpreter: its venv's directory (``/x/venvA/bin/python`` -> ``venvA``), '' for none."""
    if not python:
        return ""
    head, name = os.path.split(python.rstrip(os.sep))
    parent, folder = os.path.split(head)
    if folder in ("bin", "Scripts"):
        return os.path.basename(parent) or name
    return name


@dataclass(frozen=True)
class ABDiff:
    """What changed in the diagnostics of one configuration from side A to side B."""

    label: str
    """The configuration (its option words, the interpreter left out)."""
    changes: tuple[str, ...]
    """``graph breaks 0 -> 2``, ``recompiles appeared``, ``compile 1.2 s -> 0.9 s (-25%)``; empty: nothing changed."""


def _count(records: Sequence[RunRecord], name: str) -> int | None:
    values = [getattr(r.diagnostics, name) for r in records if getattr(r.diagnostics, name) is not None]
    return max(values) if values else None


def _warm(record: RunRecord) -> bool:
    return (record.diagnostics.fxgraph_cache_hit or 0) > 0


def _compile(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> tuple[float, float, str] | None:
    """The sides' median compile times over runs in the same cache state (warm first), and that state.

    Both interpreters share inductor's cache: A's first process compiles cold and every later one
    warm, and comparing those would read as a large compile-time gain from A to B
    (docs/BENCHMARKS.md, "Figures behind the code").
    """
    for warm, state in ((True, "warm cache"), (False, "cold cache")):
        times_a = [r.compile_s for r in a if r.compile_s is not None and _warm(r) == warm]
        times_b = [r.compile_s for r in b if r.compile_s is not None and _warm(r) == warm]
        if times_a and times_b:
            return statistics.median(times_a), statistics.median(times_b), state
    return None


def _changes(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> list[str]:
    found = []
    for name, words in (("graph_breaks", "graph breaks"), ("recompiles", "recompiles"),
                        ("cudagraph_skips", "CUDA-graph skips")):
        before, after = _count(a, name), _count(b, name)
        if before == after or before is None or after is None:
            continue
        if not before:
            found.append(f"{words} appeared ({after})")
        elif not after:
            found.append(f"{words} disappeared (were {before})")
        else:
            found.append(f"{words} {before} -> {after}")
    compiled = _compile(a, b)
    if compiled is not None and compiled[0] > 0:
        before_s, after_s, state = compiled
        found.append(f"compile {before_s:.3g} s -> {after_s:.3g} s ({(after_s / before_s - 1) * 100:+.0f}%, {state})")
    return found


def diagnostics_diff(records: Iterable[RunRecord], pythons: Sequence[str],
                     label_of: Callable[[RunRecord], str]) -> list[ABDiff]:
    """Per configuration run in both ``pythons[0]`` (A) and ``pythons[1]`` (B), what changed from A to B.

    ``label_of(record)`` names a configuration. Runs are matched the way ``compile-lab compare``
    matches them, the torch version ignored (it is what an A/B changes).
    """
    runs = [r for r in records if r.status == RunStatus.DONE]
    side_a = [r for r in runs if r.options.python == pythons[0]]
    side_b = [r for r in runs if r.options.python == pythons[1]]
    pairs, _ = pair_up(side_a, side_b, ignore=("torch_version",))
    return [ABDiff(label_of(pair.base[0]), tuple(_changes(pair.base, pair.new))) for pair in pairs]
