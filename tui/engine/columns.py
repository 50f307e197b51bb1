"""The CSV columns of a run and how the worker's and the sampler's fields map onto them.

CSV columns (:data:`CSV_COLUMNS`, stable; the README copies this list)
    run_id, timestamp (ISO 8601 UTC, seconds, ``Z``), workload, params (``k=v;k=v``),
    device, gpu_name, gpu_uuid, torch_version, backend, mode, fullgraph,
    dynamic (auto/true/false), dtype, tf32, train, l2_flush, cold_compile, status,
    error_kind, error (one line), compile_s (first compiled call, seconds),
    eager_n, eager_median_ms, eager_mean_ms, eager_std_ms, eager_min_ms, eager_max_ms,
    eager_p10_ms, eager_p90_ms, eager_host_median_ms,
    compiled_n, compiled_median_ms, compiled_mean_ms, compiled_std_ms, compiled_min_ms,
    compiled_max_ms, compiled_p10_ms, compiled_p90_ms, compiled_host_median_ms,
    speedup, speedup_ci_low, speedup_ci_high, significant, launch_bound,
    break_even_calls, graph_breaks, recompiles, unique_graphs, cudagraph_skips,
    eager_peak_mem_mb, compiled_peak_mem_mb (MiB), max_abs_err, max_rel_err,
    accuracy (pass/fail/n/a), tflops, gbps, sm_clock_mean_mhz, sm_clock_min_mhz,
    temp_max_c, power_mean_w, energy_j, throttle_reasons (``;``-joined),
    warnings (joined with `` | ``), host_speedup (eager / compiled host-inclusive time per call),
    host_speedup_ci_low, host_speedup_ci_high (its 95% block-bootstrap interval; the host_*
    columns were added last so earlier columns keep their positions).

Formatting (:func:`format_value`): floats with 6 significant digits (``%.6g``),
integers as integers, booleans ``true``/``false``, None and non-finite numbers empty.
The raw CSV (:data:`RAW_COLUMNS`) writes times with full precision (``repr``).

Fields written by other parts are read in the one format they are written in (the record keeps
each as a dict), and a missing key, ``None`` or an odd-typed value gives an empty cell, never
an exception:

* ``record.env`` (the worker's ``started`` event, ``tui.engine.worker.envinfo``):
  ``gpu_name``, ``gpu_uuid``, ``torch`` (the version).
* ``record.diagnostics`` (``tui.engine.worker.diagnostics``): integer counts
  ``graph_breaks``, ``recompiles``, ``unique_graphs``, ``cudagraph_skips``.
* ``record.memory`` (the ``finished`` event): ``eager_peak_mb``, ``compiled_peak_mb`` (MiB).
* ``record.accuracy`` (``tui.engine.worker.accuracy``): ``max_abs_err``, ``max_rel_err`` and
  ``passed`` (``True`` -> ``pass``, ``False`` -> ``fail``, anything else -> ``n/a``).
* ``record.telemetry`` (``tui.telemetry.sampler.RunSampler.summary``): ``sm_clock_mean_mhz``,
  ``sm_clock_min_mhz``, ``temp_max_c``, ``power_mean_w``, ``energy_j`` and
  ``throttle_reasons`` (a list of the words of ``tui.telemetry.model.THROTTLE_REASONS``).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from tui.telemetry.model import NOT_THROTTLING

if TYPE_CHECKING:
    from tui.engine.results import RunRecord

__all__ = [
    "CSV_COLUMNS", "RAW_COLUMNS", "format_value", "raw_float", "to_float", "to_count", "csv_row", "throttled_reasons",
]  # fmt: skip

_SIDE_COLUMNS = ("n", "median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "host_median_ms")
CSV_COLUMNS: tuple[str, ...] = (
    "run_id", "timestamp", "workload", "params", "device", "gpu_name", "gpu_uuid", "torch_version",
    "backend", "mode", "fullgraph", "dynamic", "dtype", "tf32", "train", "l2_flush", "cold_compile",
    "status", "error_kind", "error", "compile_s",
    *(f"eager_{c}" for c in _SIDE_COLUMNS),
    *(f"compiled_{c}" for c in _SIDE_COLUMNS),
    "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "launch_bound", "break_even_calls",
    "graph_breaks", "recompiles", "unique_graphs", "cudagraph_skips",
    "eager_peak_mem_mb", "compiled_peak_mem_mb", "max_abs_err", "max_rel_err", "accuracy",
    "tflops", "gbps", "sm_clock_mean_mhz", "sm_clock_min_mhz", "temp_max_c", "power_mean_w", "energy_j",
    "throttle_reasons", "warnings", "host_speedup", "host_speedup_ci_low", "host_speedup_ci_high",
)  # fmt: skip
RAW_COLUMNS: tuple[str, ...] = (
    "run_id", "side", "stage", "block", "iteration", "ms", "clock", "host_ms_per_call", "label",
)  # fmt: skip


def format_value(value: Any) -> str:
    """One CSV cell, by the rules in the module docstring."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else ""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ";".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return " ".join(str(value).split())


def raw_float(value: float | None) -> str:
    """A time for the raw CSV: full precision (``repr``), empty for None or non-finite."""
    return "" if value is None or not math.isfinite(value) else repr(value)


def to_float(value: Any) -> float | None:
    """``float(value)`` for numbers and numeric strings; None for anything else (bools included)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def csv_row(record: RunRecord) -> dict[str, str]:
    """The record's CSV row: every column of :data:`CSV_COLUMNS`, formatted by :func:`format_value`."""
    s = record.summary()
    o = record.options
    env, diag, memory, accuracy, telemetry = record.env, record.diagnostics, record.memory, record.accuracy, record.telemetry
    row: dict[str, Any] = {
        "run_id": record.run_id,
        "timestamp": record.timestamp,
        "workload": o.workload,
        "params": ";".join(f"{k}={format_value(v)}" for k, v in (o.params or {}).items()),
        "device": o.device,
        "gpu_name": env.get("gpu_name"),
        "gpu_uuid": env.get("gpu_uuid"),
        "torch_version": env.get("torch"),
        "backend": o.backend,
        "mode": o.mode,
        "fullgraph": o.fullgraph,
        "dynamic": o.dynamic_label,
        "dtype": o.dtype,
        "tf32": o.tf32,
        "train": o.train,
        "l2_flush": o.l2_flush,
        "cold_compile": o.cold_compile,
        "status": record.status,
        "error_kind": record.error_kind,
        "error": record.error_message,
        "compile_s": record.compile_s,
    }
    for side in ("eager", "compiled"):
        stats, host = s[side]["iter"], s[side]["host"]
        row[f"{side}_n"] = stats.n if stats else None
        for name in ("median", "mean", "std", "min", "max", "p10", "p90"):
            row[f"{side}_{name}_ms"] = getattr(stats, name) if stats else None
        row[f"{side}_host_median_ms"] = host.median if host else None
    row.update(
        speedup=s["speedup"],
        speedup_ci_low=s["speedup_ci_low"],
        speedup_ci_high=s["speedup_ci_high"],
        significant=s["significant"],
        launch_bound=s["launch_bound"],
        break_even_calls=s["break_even_calls"],
        graph_breaks=to_count(diag.get("graph_breaks")),
        recompiles=to_count(diag.get("recompiles")),
        unique_graphs=to_count(diag.get("unique_graphs")),
        cudagraph_skips=to_count(diag.get("cudagraph_skips")),
        eager_peak_mem_mb=to_float(memory.get("eager_peak_mb")),
        compiled_peak_mem_mb=to_float(memory.get("compiled_peak_mb")),
        max_abs_err=to_float(accuracy.get("max_abs_err")),
        max_rel_err=to_float(accuracy.get("max_rel_err")),
        accuracy=_accuracy_verdict(accuracy.get("passed")),
        tflops=s["tflops"],
        gbps=s["gbps"],
        sm_clock_mean_mhz=to_float(telemetry.get("sm_clock_mean_mhz")),
        sm_clock_min_mhz=to_float(telemetry.get("sm_clock_min_mhz")),
        temp_max_c=to_float(telemetry.get("temp_max_c")),
        power_mean_w=to_float(telemetry.get("power_mean_w")),
        energy_j=to_float(telemetry.get("energy_j")),
        throttle_reasons=telemetry.get("throttle_reasons"),
        warnings=" | ".join(s["warnings"]),
        host_speedup=s.get("host_speedup"),
        host_speedup_ci_low=s.get("host_speedup_ci_low"),
        host_speedup_ci_high=s.get("host_speedup_ci_high"),
    )
    return {column: format_value(row.get(column)) for column in CSV_COLUMNS}


def to_count(value: Any) -> int | None:
    """A diagnostics count: an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _accuracy_verdict(passed: Any) -> str:
    """``pass`` / ``fail`` from the worker's ``accuracy["passed"]``; ``n/a`` when it is not a bool."""
    if isinstance(passed, bool):
        return "pass" if passed else "fail"
    return "n/a"


def throttled_reasons(reasons: Any) -> list[str]:
    """The throttling reasons among a sampler's ``throttle_reasons`` (those in ``NOT_THROTTLING`` dropped)."""
    if not isinstance(reasons, (list, tuple)):
        return []
    return [str(r) for r in reasons if r and str(r) not in NOT_THROTTLING]
