"""Reading a RunRecord for display: tolerant accessors and short number formats.

The app shows records in three places (table row, details screen, queue); these helpers
keep the reading in one spot. Every accessor tolerates a missing or differently shaped
field (a record from an older history line, a run that failed early) and returns ``None``
rather than raising: a view must never crash on data.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "STATUS_LABELS",
    "TERMINAL_STATUSES",
    "ACTIVE_STATUSES",
    "status_of",
    "progress_of",
    "safe_summary",
    "side_stats",
    "stat_value",
    "fmt_ms",
    "fmt_seconds",
    "fmt_mib",
    "fmt_speedup",
    "workload_label",
    "options_label",
    "graph_breaks",
    "recompiles",
    "csv_row",
    "peak_memory_mb",
    "accuracy_label",
    "clock_label",
    "lookup",
]

STATUS_LABELS = {
    "queued": "queued",
    "starting": "starting",
    "building": "building",
    "compiling": "compiling",
    "warming_up": "warming up",
    "measuring": "measuring",
    "checking_accuracy": "accuracy",
    "diagnosing": "diagnosing",
    "done": "done",
    "failed": "failed",
    "cancelled": "cancelled",
}
"""Status -> the short word shown in the table."""

TERMINAL_STATUSES = frozenset({"done", "failed", "cancelled"})
"""A record in one of these will not change any more."""

ACTIVE_STATUSES = frozenset(STATUS_LABELS) - TERMINAL_STATUSES - {"queued"}
"""A record in one of these has a live worker."""


def lookup(data: Any, *keys: str, default: Any = None) -> Any:
    """The first of ``keys`` present (and not None) in a dict or as an attribute of ``data``."""
    if data is None:
        return default
    for key in keys:
        if isinstance(data, dict):
            value = data.get(key)
        else:
            value = getattr(data, key, None)
        if value is not None:
            return value
    return default


def status_of(record: Any) -> str:
    """The record's status string (``queued`` when it has none)."""
    return str(getattr(record, "status", None) or "queued")


def progress_of(record: Any) -> float:
    """The record's progress 0..1 (0 when it cannot say)."""
    try:
        value = float(record.progress())
    except Exception:
        return 0.0
    return min(1.0, max(0.0, value))


def safe_summary(record: Any) -> dict[str, Any]:
    """``record.summary()``, or ``{}`` when it raises or returns nothing."""
    try:
        summary = record.summary()
    except Exception:
        return {}
    return summary if isinstance(summary, dict) else {}


def side_stats(summary: dict[str, Any], side: str, clock: str = "iter") -> Any:
    """The Stats of one side (``eager``/``compiled``) and clock (``iter``/``host``), or None."""
    part = summary.get(side)
    if isinstance(part, dict):
        return part.get(clock)
    return None


def stat_value(stats: Any, name: str) -> float | None:
    """One field of a Stats object or dict (``median``, ``iqr``...), or None."""
    value = lookup(stats, name)
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def fmt_ms(value: float | None) -> str:
    """Milliseconds with 3-4 significant digits: ``0.0123``, ``1.234``, ``12.34``, ``1234``."""
    if value is None:
        return "–"
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude < 0.01:
        return f"{value:.5f}"
    if magnitude < 1:
        return f"{value:.4f}"
    if magnitude < 10:
        return f"{value:.3f}"
    if magnitude < 100:
        return f"{value:.2f}"
    if magnitude < 1000:
        return f"{value:.1f}"
    return f"{value:.0f}"


def fmt_seconds(value: Any) -> str:
    """Seconds: ``0.25``, ``12.3``, ``123``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return "–"
    if seconds < 10:
        return f"{seconds:.2f}"
    if seconds < 100:
        return f"{seconds:.1f}"
    return f"{seconds:.0f}"


def fmt_mib(value: Any) -> str:
    """MiB in binary units: ``0.5 MiB``, ``512 MiB``, ``12.0 GiB``."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return "–"
    if size < 10:
        return f"{size:.1f} MiB"
    if size < 1024:
        return f"{size:.0f} MiB"
    return f"{size / 1024:.1f} GiB"


def fmt_speedup(point: float | None, low: float | None = None, high: float | None = None) -> str:
    """``1.83× [1.79–1.88]`` (the interval only when known)."""
    if point is None:
        return "–"
    text = f"{point:.2f}×"
    if low is not None and high is not None:
        text += f" [{low:.2f}–{high:.2f}]"
    return text


def workload_label(options: Any) -> str:
    """``pointwise n=512`` (a user file shows its name only)."""
    workload = str(getattr(options, "workload", "?"))
    if workload.endswith(".py") or ".py:" in workload:
        return workload.rsplit("/", 1)[-1]
    params = getattr(options, "params", None) or {}
    parts = [workload] + [f"{k}={v}" for k, v in params.items()]
    return " ".join(parts)


def options_label(options: Any) -> str:
    """``RunOptions.label()`` plus a short device (``cpu`` / ``gpu``)."""
    try:
        label = options.label()
    except Exception:
        label = "?"
    device = str(getattr(options, "device", "cpu"))
    return f"{label} {'cpu' if device == 'cpu' else 'gpu'}"


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return None


def graph_breaks(record: Any) -> int | None:
    """How many graph breaks the diagnostics report, or None when unknown."""
    diagnostics = getattr(record, "diagnostics", None) or {}
    return _count(lookup(diagnostics, "graph_breaks", "graph_break_count"))


def recompiles(record: Any) -> int | None:
    """How many recompiles the diagnostics report, or None when unknown."""
    diagnostics = getattr(record, "diagnostics", None) or {}
    return _count(lookup(diagnostics, "recompiles", "recompile_count"))


def csv_row(record: Any) -> dict[str, str]:
    """``record.to_row()`` (the engine's CSV columns, formatted), or ``{}`` when it raises."""
    try:
        row = record.to_row()
    except Exception:
        return {}
    return row if isinstance(row, dict) else {}


def peak_memory_mb(record: Any, row: dict[str, str] | None = None) -> float | None:
    """The larger side's peak memory in MiB (from the CSV row), or None when not measured."""
    row = csv_row(record) if row is None else row
    peaks = []
    for column in ("eager_peak_mem_mb", "compiled_peak_mem_mb"):
        try:
            peaks.append(float(row.get(column) or ""))
        except ValueError:
            continue
    return max(peaks) if peaks else None


def accuracy_label(record: Any, row: dict[str, str] | None = None) -> tuple[str, str]:
    """(``ok`` / ``FAIL`` / ``–``, rich style) from the record's accuracy verdict."""
    row = csv_row(record) if row is None else row
    verdict = row.get("accuracy", "n/a")
    if verdict == "pass":
        return "ok", "green"
    if verdict == "fail":
        return "FAIL", "bold red"
    return "–", "dim"


def clock_label(record: Any) -> tuple[str, str]:
    """(``1965 MHz`` with a ``!`` when it throttled, rich style) from per-run telemetry."""
    telemetry = getattr(record, "telemetry", None)
    if not isinstance(telemetry, dict) or not telemetry:
        return "–", "dim"
    mean = lookup(telemetry, "sm_clock_mean_mhz", "sm_clock_mean", "mean_sm_clock_mhz")
    reasons = lookup(telemetry, "throttle_reasons", "clock_event_reasons") or ()
    if isinstance(reasons, str):
        reasons = [r for r in reasons.split(",") if r.strip()]
    slow = [r for r in reasons if str(r).strip().lower() not in ("gpu idle", "none", "")]
    text = f"{float(mean):.0f} MHz" if isinstance(mean, (int, float)) else "n/a"
    if slow:
        return f"{text} !", "bold yellow"
    return text, ""
