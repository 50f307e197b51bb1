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
    warnings (joined with `` | ``).

Formatting (:func:`format_value`): floats with 6 significant digits (``%.6g``),
integers as integers, booleans ``true``/``false``, None and non-finite numbers empty.
The raw CSV (:data:`RAW_COLUMNS`) writes times with full precision (``repr``).

Fields written by other parts (worker, GPU sampler) are read defensively: a missing or
odd-typed value gives an empty cell, never an exception. Peak memory is read from
``memory["eager_peak_mb"]`` (or ``*_peak_mem_mb``, ``*_peak_bytes``, or nested
``memory["eager"]["peak_mb"|"peak_bytes"]``); the accuracy verdict from
``accuracy["passed"]`` (or ``"pass"``, ``"ok"``, ``"status"``).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.engine.results import RunRecord

__all__ = ["CSV_COLUMNS", "RAW_COLUMNS", "format_value", "raw_float", "to_float", "csv_row", "throttled_reasons"]

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
    "throttle_reasons", "warnings",
)  # fmt: skip
RAW_COLUMNS: tuple[str, ...] = (
    "run_id", "side", "stage", "block", "iteration", "ms", "clock", "host_ms_per_call", "label",
)  # fmt: skip
_MIB = 1024 * 1024
# NVML clock-event reasons that are not throttling (idle GPU, clocks the user set).
_BENIGN_THROTTLE = ("idle", "none", "application", "user_defined", "display")


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


def _first(data: dict[str, Any] | None, *keys: str) -> Any:
    if not isinstance(data, dict):
        return None
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def csv_row(record: RunRecord) -> dict[str, str]:
    """The record's CSV row: every column of :data:`CSV_COLUMNS`, formatted by :func:`format_value`."""
    s = record.summary()
    o = record.options
    env = record.env if isinstance(record.env, dict) else {}
    diag = record.diagnostics if isinstance(record.diagnostics, dict) else {}
    telemetry = record.telemetry if isinstance(record.telemetry, dict) else {}
    row: dict[str, Any] = {
        "run_id": record.run_id,
        "timestamp": record.timestamp,
        "workload": o.workload,
        "params": ";".join(f"{k}={format_value(v)}" for k, v in (o.params or {}).items()),
        "device": o.device,
        "gpu_name": _first(env, "gpu_name"),
        "gpu_uuid": _first(env, "gpu_uuid"),
        "torch_version": _first(env, "torch_version", "torch"),
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
        graph_breaks=_count(diag.get("graph_breaks")),
        recompiles=_count(diag.get("recompiles")),
        unique_graphs=_count(diag.get("unique_graphs")),
        cudagraph_skips=_count(diag.get("cudagraph_skips")),
        eager_peak_mem_mb=_peak_mb(record.memory, "eager"),
        compiled_peak_mem_mb=_peak_mb(record.memory, "compiled"),
        max_abs_err=to_float(_first(record.accuracy, "max_abs_err", "max_abs_error")),
        max_rel_err=to_float(_first(record.accuracy, "max_rel_err", "max_rel_error")),
        accuracy=_accuracy_verdict(record.accuracy),
        tflops=s["tflops"],
        gbps=s["gbps"],
        sm_clock_mean_mhz=to_float(telemetry.get("sm_clock_mean_mhz")),
        sm_clock_min_mhz=to_float(telemetry.get("sm_clock_min_mhz")),
        temp_max_c=to_float(telemetry.get("temp_max_c")),
        power_mean_w=to_float(telemetry.get("power_mean_w")),
        energy_j=to_float(telemetry.get("energy_j")),
        throttle_reasons=telemetry.get("throttle_reasons"),
        warnings=" | ".join(s["warnings"]),
    )
    return {column: format_value(row.get(column)) for column in CSV_COLUMNS}


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    return None


def _peak_mb(memory: dict[str, Any], side: str) -> float | None:
    if not isinstance(memory, dict):
        return None
    value = to_float(_first(memory, f"{side}_peak_mem_mb", f"{side}_peak_mb"))
    if value is not None:
        return value
    value = to_float(_first(memory, f"{side}_peak_bytes", f"{side}_peak_mem_bytes"))
    if value is not None:
        return value / _MIB
    nested = memory.get(side)
    if isinstance(nested, dict):
        value = to_float(_first(nested, "peak_mb", "peak_mem_mb"))
        if value is not None:
            return value
        value = to_float(_first(nested, "peak_bytes", "peak_mem_bytes"))
        return None if value is None else value / _MIB
    return None


def _accuracy_verdict(accuracy: dict[str, Any]) -> str:
    if not isinstance(accuracy, dict):
        return "n/a"
    verdict = _first(accuracy, "passed", "pass", "ok")
    if isinstance(verdict, bool):
        return "pass" if verdict else "fail"
    status = str(accuracy.get("status") or accuracy.get("result") or "").lower()
    if status in ("pass", "passed", "ok"):
        return "pass"
    if status in ("fail", "failed"):
        return "fail"
    return "n/a"


def throttled_reasons(reasons: Any) -> list[str]:
    """The throttling reasons among a sampler's clock-event reasons (benign ones like GpuIdle dropped)."""
    if not reasons:
        return []
    if isinstance(reasons, str):
        items = [part.strip() for part in reasons.replace(";", ",").split(",")]
    elif isinstance(reasons, dict):
        items = [str(k) for k, v in reasons.items() if v]
    elif isinstance(reasons, (list, tuple, set)):
        items = [str(x) for x in reasons]
    else:
        return []
    return [x for x in items if x and not any(word in _snake(x) for word in _BENIGN_THROTTLE)]


def _snake(text: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in text).replace(" ", "_").lower()
