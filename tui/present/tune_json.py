"""A tune's answer as data: the ``tune`` object of ``compile-lab tune --json``, for scripts and CI.

The runs of the export say what each process measured; this says what the search concluded from them,
in the same words and figures the answer prints (:mod:`tui.present.tune_answer`): the outcome, the
headline, the winner with its code, the confirmation's readings, and every candidate's standing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tui.engine.tune.answer import Against, TuneResult
from tui.engine.tune.code import compile_call, config_form
from tui.engine.tune.space import autotunes
from tui.engine.tune.search import ranked
from tui.present.tune_answer import answer_text, code_lines, headline, lead_lines, result_rows

__all__ = ["answer_json", "StoredAnswer", "stored_answer"]


def _against(against: Against) -> dict[str, Any]:
    return {"gain": against.gain, "low": against.low, "high": against.high, "verdict": against.verdict,
            "reasons": list(against.reasons)}


def answer_json(result: TuneResult, modes: Mapping[str, Mapping[str, Any]] | None = None,
                kept: tuple[str | None, bool] = (None, True)) -> dict[str, Any]:
    """The answer of ``result`` as JSON-ready data (see the module docstring).

    ``winner.code`` is null where the answer prints no code (the default compile, nothing beats it, or an
    unconfirmed winner that nothing showed faster than eager); its ``autotunes`` is true where each cold compile of
    the code picks its kernels anew (the answer's comment above the code says so)."""
    winner = None
    if result.winner is not None:
        options = result.winner_options
        shown = bool(code_lines(result, modes))
        winner = {
            "name": result.winner.name,
            "options": options.to_dict() if options is not None else None,
            "code": {"call": compile_call(options), "config": config_form(options, modes),
                     "autotunes": autotunes(options, modes)}
            if shown and options is not None else None,
        }
    confirmation = None
    if result.confirmation is not None:
        c = result.confirmation
        confirmation = {
            "candidate": result.confirmed.name if result.confirmed is not None else None,
            "processes": list(c.processes),
            "vs_default": _against(c.vs_default), "vs_eager": _against(c.vs_eager),
            "default_vs_eager": _against(c.default_vs_eager),
            "compile_s": list(c.compile_s), "compiled_peak_mb": list(c.peak_mb),
            "notes": list(c.notes),
        }
    rows = result_rows(result)
    head = headline(result)
    candidates = [{"name": standing.name, "speedup": standing.score.value, "low": standing.score.low,
                   "high": standing.score.high, "processes": standing.score.processes, "standing": row[3],
                   "screened": standing.screened.value if standing.screened is not None else None}
                  for standing, row in zip(ranked(result.standings), rows, strict=True)]
    return {
        "tune_id": result.tune_id,
        "outcome": result.outcome,
        "headline": head,
        "lines": [line for line in lead_lines(result) if line != head],
        "winner": winner,
        "confirmation": confirmation,
        "candidates": candidates,
        "notes": list(result.notes),
        "threshold": result.threshold,
        "objective": result.objective.describe(),
        "runs": result.runs,
        "stopped_runs": result.stopped_runs,
        "elapsed_s": result.elapsed_s,
        "text": answer_text(result, modes, kept),
    }


@dataclass(frozen=True)
class StoredAnswer:
    """A search's answer read back from its ``--json`` export (``source``): its id and the answer as printed."""

    source: str
    tune_id: str
    text: str


def stored_answer(data: Any, source: str) -> StoredAnswer | None:
    """The ``tune`` object of a JSON export (:func:`answer_json`'s), or None where the export has none (a run or
    sweep's). ValueError (one line) for one that is not an answer. An export written before the answer's ``text``
    was kept gives its headline and lines."""
    if not isinstance(data, dict) or "tune" not in data:
        return None
    tune = data["tune"]
    tune_id = tune.get("tune_id") if isinstance(tune, dict) else None
    if not isinstance(tune_id, str):
        raise ValueError('"tune" is not a search\'s answer (no "tune_id")')
    text = tune.get("text")
    if not isinstance(text, str):
        lines = [tune.get("headline"), *(tune.get("lines") or [])]
        text = "\n".join(line for line in lines if isinstance(line, str))
    return StoredAnswer(source, tune_id, text)
