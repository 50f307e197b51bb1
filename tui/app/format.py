"""Reading a RunRecord for display: tolerant accessors and short number formats.

The app shows records in three places (table row, details screen, queue); these helpers
keep the reading in one spot. Every accessor tolerates a missing or differently shaped
field (a record from an older history line, a run that failed early) and returns ``None``
rather than raising: a view must never crash on data.
"""

from __future__ import annotations

from typing import Any

from tui.engine.columns import throttled_reasons, to_count, to_float

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
    "accuracy_style",
    "clock_label",
    "sm_clock_mhz",
    "lookup",
]

STATUS_LABELS = {
    "queued": "queued",
    "starting": "starting",
    "building": "building",
    "compiling": "compiling",
    "warming_up": "warming up",
    "checking_accuracy": "accuracy",
    "measuring": "measuring",
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
    return to_float(lookup(stats, name))


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
    seconds = to_float(value)
    if seconds is None:
        return "–"
    if seconds < 10:
        return f"{seconds:.2f}"
    if seconds < 100:
        return f"{seconds:.1f}"
    return f"{seconds:.0f}"


def fmt_mib(value: Any) -> str:
    """MiB in binary units: ``0.5 MiB``, ``512 MiB``, ``12.0 GiB``."""
    size = to_float(value)
    if size is None:
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


def graph_breaks(record: Any) -> int | None:
    """How many graph breaks the diagnostics report, or None when unknown."""
    return to_count(lookup(getattr(record, "diagnostics", None), "graph_breaks"))


def recompiles(record: Any) -> int | None:
    """How many recompiles the diagnostics report, or None when unknown."""
    return to_count(lookup(getattr(record, "diagnostics", None), "recompiles"))


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
    peaks = [to_float(row.get(column)) for column in ("eager_peak_mem_mb", "compiled_peak_mem_mb")]
    return max((p for p in peaks if p is not None), default=None)


def accuracy_style(verdict: str | None) -> str:
    """The rich style of an accuracy verdict as the CSV writes it (``pass`` / ``fail`` / ``n/a``).

    The command line shares it (this module imports no textual).
    """
    return {"pass": "green", "fail": "bold red"}.get(verdict or "", "dim")


def accuracy_label(record: Any, row: dict[str, str] | None = None) -> tuple[str, str]:
    """(``ok`` / ``FAIL`` / ``–``, rich style) from the record's accuracy verdict."""
    row = csv_row(record) if row is None else row
    verdict = row.get("accuracy", "n/a")
    return {"pass": "ok", "fail": "FAIL"}.get(verdict, "–"), accuracy_style(verdict)


def sm_clock_mhz(record: Any) -> float | None:
    """The run's mean SM clock from its per-run telemetry, or None when not measured."""
    telemetry = getattr(record, "telemetry", None)
    return to_float(telemetry.get("sm_clock_mean_mhz")) if isinstance(telemetry, dict) else None


def clock_label(record: Any) -> tuple[str, str]:
    """(``1965 MHz`` with a ``!`` when it throttled, rich style) from per-run telemetry."""
    telemetry = getattr(record, "telemetry", None)
    if not isinstance(telemetry, dict) or not telemetry:
        return "–", "dim"
    mean = sm_clock_mhz(record)
    text = "n/a" if mean is None else f"{mean:.0f} MHz"
    if throttled_reasons(telemetry.get("throttle_reasons")):
        return f"{text} !", "bold yellow"
    return text, ""
