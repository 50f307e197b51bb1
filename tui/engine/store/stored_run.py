"""How a run is stored: the typed fields of a history line or JSON export, read back field by field.

:meth:`tui.engine.store.results.RunRecord.decode` rebuilds a record from these; a field of the wrong
type takes its default and is named in the record's warnings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui.engine.explain.artifacts import RunArtifacts
from tui.engine.explain.kernels import Profile
from tui.engine.options import RunOptions
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.store.stored_options import decode_options
from tui.engine.store.wall_time import WallTime
from tui.engine.measure.summary import RunSummary
from tui.telemetry.model import RunTelemetry
from tui.engine.status import RunStatus

__all__ = ["StoredRun", "stored_options"]


@dataclass(frozen=True)
class StoredRun:
    """The typed fields of a stored run (:meth:`RunRecord.to_json`), options apart."""

    run_id: str = ""
    created: float = 0.0
    status: str = RunStatus.FAILED
    env: Env = field(default_factory=Env)
    compile_s: float | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    accuracy: Accuracy = field(default_factory=Accuracy)
    memory: Memory = field(default_factory=Memory)
    flops_per_call: float | None = None
    bytes_per_call: float | None = None
    profile: Profile | None = None
    artifacts: RunArtifacts = field(default_factory=RunArtifacts)
    warnings: tuple[str, ...] = ()
    error_kind: str | None = None
    error_message: str | None = None
    error_detail: str | None = None
    telemetry: RunTelemetry = field(default_factory=RunTelemetry)
    samples_file: str | None = None
    group_id: str | None = None
    repeat: int = 0
    session_id: str | None = None
    tune_id: str | None = None
    tune_stage: str | None = None
    concurrent_runs: int = 0
    notes: tuple[str, ...] = ()
    leftover_processes: int = 0
    wall_time: WallTime = field(default_factory=WallTime)
    summary: RunSummary | None = None
    samples: dict[str, Any] | None = None


def stored_options(data: Any) -> tuple[RunOptions, list[str]]:
    """Stored options, each field checked (``tui.engine.store.stored_options``; a wrong one: its default)."""
    if not isinstance(data, dict):
        return RunOptions(), ["options were missing from the stored record"]
    return decode_options(data, where="record.options")
