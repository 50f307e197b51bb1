"""The details screen of one run: every statistic, diagnostics, warnings, environment, errors.

Opened with Enter on a results row. It renders a snapshot of the record when opened and
re-renders on ``r`` (a run still going keeps changing); it never polls on its own.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui.app.format import (
    STATUS_LABELS,
    fmt_ms,
    fmt_seconds,
    fmt_speedup,
    options_label,
    safe_summary,
    side_stats,
    stat_value,
    status_of,
    workload_label,
)
from tui.engine.columns import to_float

__all__ = ["DetailsScreen", "render_details"]

_STAT_ROWS = (
    ("n", "n"),
    ("median", "median"),
    ("mean", "mean"),
    ("std", "std"),
    ("min", "min"),
    ("max", "max"),
    ("p10", "p10"),
    ("p90", "p90"),
    ("q1", "q1"),
    ("q3", "q3"),
    ("iqr", "IQR"),
)


def _section(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def _kv_table(items: Iterable[tuple[str, Any]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in items:
        table.add_row(str(key), _value_text(value))
    return table


def _value_text(value: Any) -> Text:
    if value is None:
        return Text("n/a", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, float):
        return Text(f"{value:.6g}")
    if isinstance(value, (list, tuple)):
        if not value:
            return Text("none", style="dim")
        return Text("\n".join(str(v) for v in value))
    if isinstance(value, dict):
        return Text(json.dumps(value, sort_keys=True, default=str))
    return Text(str(value))


def _stats_table(summary: dict[str, Any]) -> Table:
    clock = summary.get("clock") or "n/a"
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("ms", style="bold")
    columns = (
        ("eager", "iter", f"eager ({clock})"),
        ("compiled", "iter", f"compiled ({clock})"),
        ("eager", "host", "eager (host)"),
        ("compiled", "host", "compiled (host)"),
    )
    for _, _, title in columns:
        table.add_column(title, justify="right")
    stats = [side_stats(summary, side, clock_name) for side, clock_name, _ in columns]
    for field, label in _STAT_ROWS:
        cells = []
        for item in stats:
            value = stat_value(item, field)
            if value is None:
                cells.append(Text("–", style="dim"))
            elif field == "n":
                cells.append(Text(str(int(value))))
            else:
                cells.append(Text(fmt_ms(value)))
        table.add_row(label, *cells)
    rel = []
    for item in stats:
        median, iqr = stat_value(item, "median"), stat_value(item, "iqr")
        rel.append(Text(f"{iqr / median:.1%}") if median and iqr is not None else Text("–", style="dim"))
    table.add_row("IQR/median", *rel)
    return table


def _headline(record: Any, summary: dict[str, Any]) -> Table:
    speedup = summary.get("speedup")
    low, high = summary.get("speedup_ci_low"), summary.get("speedup_ci_high")
    significant = summary.get("significant")
    if speedup is None:
        verdict = "n/a"
    elif significant is None:
        verdict = "interval pending" if summary.get("live") else "no interval"
    elif significant:
        verdict = "significant: compiled is faster" if speedup >= 1 else "significant: compiled is slower"
    else:
        verdict = "not significant (the interval includes 1)"
    return _kv_table(
        [
            ("speedup", None if speedup is None else fmt_speedup(speedup, low, high) + f"  {verdict}"),
            ("host-inclusive speedup", _host_speedup_text(summary)),
            ("compile s", fmt_seconds(getattr(record, "compile_s", None)) + " (first compiled call)"
             if getattr(record, "compile_s", None) is not None else None),
            ("break-even calls", summary.get("break_even_calls")),
            ("launch-bound", summary.get("launch_bound")),
            ("TFLOP/s (compiled)", summary.get("tflops")),
            ("GB/s (compiled)", summary.get("gbps")),
        ]
    )


def _host_speedup_text(summary: dict[str, Any]) -> str | None:
    host = to_float(summary.get("host_speedup"))
    if host is None:
        return None
    text = fmt_speedup(host)
    low, high = to_float(summary.get("host_speedup_ci_low")), to_float(summary.get("host_speedup_ci_high"))
    if low is not None and high is not None:
        text += f" [{low:.2f}, {high:.2f}]"
    if summary.get("launch_bound"):
        text += "  launch-bound: what a loop that never synchronises pays"
    return text


def _per_label(summary: dict[str, Any]) -> Table | None:
    per_label = summary.get("per_label") or {}
    if not per_label:
        return None
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for title in ("input", "eager median", "compiled median", "speedup"):
        table.add_column(title, justify="right" if title != "input" else "left")
    for label, entry in per_label.items():
        table.add_row(
            str(label),
            fmt_ms(stat_value(entry.get("eager"), "median")),
            fmt_ms(stat_value(entry.get("compiled"), "median")),
            fmt_speedup(entry.get("speedup")),
        )
    return table


def render_details(record: Any) -> RenderableType:
    """Everything known about ``record`` as one Rich renderable."""
    summary = safe_summary(record)
    status = status_of(record)
    options = record.options
    parts: list[RenderableType] = []
    title = Text()
    title.append(f"{workload_label(options)}  ", style="bold")
    title.append(options_label(options))
    status_style = {"done": "bold green", "failed": "bold red", "cancelled": "dim"}.get(status, "bold yellow")
    title.append(f"  {STATUS_LABELS.get(status, status)}", style=status_style)
    parts.append(title)
    parts.append(Text(f"run {record.run_id}  device {options.device}", style="dim"))

    if status in ("failed", "cancelled") or getattr(record, "error_message", None):
        parts.append(_section("Error"))
        parts.append(Text(f"{record.error_kind or 'error'}: {record.error_message or ''}", style="bold red"))
        detail = (getattr(record, "error_detail", None) or "").rstrip()
        if detail:
            lines = detail.splitlines()
            if len(lines) > 60:
                lines = ["…"] + lines[-60:]
            parts.append(Text("\n".join(lines), style="red"))

    parts.append(_section("Result"))
    parts.append(_headline(record, summary))
    parts.append(_section("Statistics (milliseconds per call)"))
    if any(side_stats(summary, side, clock) is not None for side in ("eager", "compiled") for clock in ("iter", "host")):
        parts.append(_stats_table(summary))
    else:
        parts.append(Text("no timings were measured", style="dim"))
    per_label = _per_label(summary)
    if per_label is not None:
        parts.append(_section("Per input shape"))
        parts.append(per_label)

    diagnostics = getattr(record, "diagnostics", None) or {}
    parts.append(_section("Graph breaks and recompiles"))
    if diagnostics:
        reasons = diagnostics.get("graph_break_reasons") or []
        recompile_reasons = diagnostics.get("recompile_reasons") or []
        rest = {k: v for k, v in diagnostics.items() if k not in ("graph_break_reasons", "recompile_reasons")}
        parts.append(_kv_table(sorted(rest.items())))
        parts.append(Text("graph-break reasons:", style="bold"))
        parts.append(Text("\n".join(f"  • {r}" for r in reasons) if reasons else "  none", style="" if reasons else "dim"))
        parts.append(Text("recompile reasons:", style="bold"))
        parts.append(Text("\n".join(f"  • {r}" for r in recompile_reasons) if recompile_reasons else "  none",
                          style="" if recompile_reasons else "dim"))
    else:
        parts.append(Text("no diagnostics (the run did not get that far)", style="dim"))

    warnings = summary.get("warnings") if summary else getattr(record, "warnings", [])
    parts.append(_section("Warnings"))
    if warnings:
        parts.append(Text("\n".join(f"  ! {w}" for w in warnings), style="yellow"))
    else:
        parts.append(Text("none", style="dim"))

    for title_text, data in (
        ("Accuracy (compiled vs eager)", getattr(record, "accuracy", None)),
        ("Memory", getattr(record, "memory", None)),
        ("GPU telemetry during measurement", getattr(record, "telemetry", None)),
        ("Environment", getattr(record, "env", None)),
    ):
        parts.append(_section(title_text))
        if data:
            parts.append(_kv_table(sorted(data.items())))
        else:
            parts.append(Text("n/a", style="dim"))

    parts.append(_section("Options"))
    try:
        parts.append(_kv_table(options.to_dict().items()))
    except Exception:  # pragma: no cover - options always serialise
        parts.append(Text(str(options)))
    return Group(*parts)


class DetailsScreen(Screen):
    """Full-screen details of one run; Escape or ``q`` goes back, ``r`` re-reads the record."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="details.back"),
        Binding("r", "reload", "Reload", id="details.reload"),
    ]

    def __init__(self, record: Any) -> None:
        super().__init__()
        self.record = record
        """The record shown."""

    def compose(self) -> ComposeResult:
        """The scrolling body and the footer."""
        with VerticalScroll(id="details-body"):
            yield Static(render_details(self.record), id="details-content")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the body so arrow keys scroll it."""
        self.query_one("#details-body").focus()

    def action_reload(self) -> None:
        """Re-render from the record's current state."""
        self.query_one("#details-content", Static).update(render_details(self.record))
