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

from tui.app.format import VERDICT_STYLES, STATUS_LABELS, fmt_ms, fmt_seconds, fmt_speedup, options_label, workload_label
from tui.engine.results import RunRecord
from tui.engine.summary import RunSummary
from tui.engine.verdict import RERUN_HINT
from tui.typed import JsonRecord, printable

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
    if isinstance(value, Text):
        return value
    if value is None:
        return Text("n/a", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, float):
        return Text(f"{value:.6g}")
    if isinstance(value, (list, tuple)):
        if not value:
            return Text("none", style="dim")
        return Text(printable("\n".join(str(v) for v in value)))
    if isinstance(value, dict):
        return Text(printable(json.dumps(value, sort_keys=True, default=str)))
    return Text(printable(str(value)))


def _stats_table(summary: RunSummary) -> Table:
    clock = summary.clock or "n/a"
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("ms", style="bold")
    columns = (
        (summary.eager.iter, f"eager ({clock})"),
        (summary.compiled.iter, f"compiled ({clock})"),
        (summary.eager.host, "eager (host)"),
        (summary.compiled.host, "compiled (host)"),
    )
    for _, title in columns:
        table.add_column(title, justify="right")
    stats = [item for item, _ in columns]
    for field, label in _STAT_ROWS:
        cells = []
        for item in stats:
            value = None if item is None else getattr(item, field)
            if value is None:
                cells.append(Text("–", style="dim"))
            elif field == "n":
                cells.append(Text(str(int(value))))
            else:
                cells.append(Text(fmt_ms(value)))
        table.add_row(label, *cells)
    rel = []
    for item in stats:
        spread = None if item is None else item.relative_iqr
        rel.append(Text(f"{spread:.1%}") if spread is not None else Text("–", style="dim"))
    table.add_row("IQR/median", *rel)
    return table


def _significance(summary: RunSummary) -> str:
    speedup, significant = summary.speedup, summary.significant
    if speedup is None:
        return "n/a"
    if summary.verdict == "noisy":
        return "noisy: the measurement cannot support this number (see verdict)"
    if significant is None:
        return "interval pending" if summary.live else "no interval"
    if significant:
        return "significant: compiled is faster" if speedup >= 1 else "significant: compiled is slower"
    return "not significant (the interval includes 1)"


def _verdict_text(word: str | None, reasons: tuple[str, ...]) -> Text | None:
    if word is None:
        return None
    text = Text(word, style=VERDICT_STYLES.get(word, ""))
    for reason in reasons:
        text.append(f"\n• {reason}", style="magenta")
    if reasons:
        text.append(f"\n{RERUN_HINT}", style="dim")
    return text


def _headline(record: RunRecord, summary: RunSummary) -> Table:
    speedup = summary.speedup
    speedup_text = None
    if speedup is not None:
        speedup_text = fmt_speedup(speedup, summary.speedup_ci_low, summary.speedup_ci_high) + f"  {_significance(summary)}"
    compile_s = record.compile_s
    verdicts = [("verdict", _verdict_text(summary.verdict, summary.noise_reasons)),
                ("host verdict", _verdict_text(summary.host_verdict, summary.host_noise_reasons))]
    return _kv_table(
        [
            *[(name, text) for name, text in verdicts if text is not None],  # a failed run keeps its status
            ("speedup", speedup_text),
            ("host-inclusive speedup", _host_speedup_text(summary)),
            ("compile s", fmt_seconds(compile_s) + " (first compiled call)" if compile_s is not None else None),
            ("break-even calls", summary.break_even_calls),
            ("launch-bound", summary.launch_bound),
            ("TFLOP/s (compiled)", summary.tflops),
            ("GB/s (compiled)", summary.gbps),
        ]
    )


def _host_speedup_text(summary: RunSummary) -> str | None:
    host = summary.host_speedup
    if host is None:
        return None
    text = fmt_speedup(host)
    low, high = summary.host_speedup_ci_low, summary.host_speedup_ci_high
    if low is not None and high is not None:
        text += f" [{low:.2f}, {high:.2f}]"
    if summary.launch_bound:
        text += "  launch-bound: what a loop that never synchronises pays"
    return text


def _per_label(summary: RunSummary) -> Table | None:
    if not summary.per_label:
        return None
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for title in ("input", "eager median", "compiled median", "speedup"):
        table.add_column(title, justify="right" if title != "input" else "left")
    for label, entry in summary.per_label.items():
        table.add_row(
            str(label),
            fmt_ms(entry.eager.median if entry.eager else None),
            fmt_ms(entry.compiled.median if entry.compiled else None),
            fmt_speedup(entry.speedup),
        )
    return table


def _title(record: RunRecord) -> list[RenderableType]:
    options, status = record.options, record.status
    title = Text()
    title.append(f"{workload_label(options)}  ", style="bold")
    title.append(options_label(options))
    status_style = {"done": "bold green", "failed": "bold red", "cancelled": "dim"}.get(status, "bold yellow")
    title.append(f"  {STATUS_LABELS.get(status, status)}", style=status_style)
    return [title, Text(f"run {record.run_id}  device {options.device}", style="dim")]


def _error(record: RunRecord) -> list[RenderableType]:
    if record.status not in ("failed", "cancelled") and not record.error_message:
        return []
    parts: list[RenderableType] = [_section("Error")]
    parts.append(Text(f"{record.error_kind or 'error'}: {record.error_message or ''}", style="bold red"))
    detail = (record.error_detail or "").rstrip()
    if detail:
        lines = detail.splitlines()
        if len(lines) > 60:
            lines = ["…"] + lines[-60:]
        parts.append(Text("\n".join(lines), style="red"))
    return parts


def _timings(summary: RunSummary) -> list[RenderableType]:
    parts: list[RenderableType] = [_section("Statistics (milliseconds per call)")]
    sides = (summary.eager, summary.compiled)
    if any(side.iter is not None or side.host is not None for side in sides):
        parts.append(_stats_table(summary))
    else:
        parts.append(Text("no timings were measured", style="dim"))
    per_label = _per_label(summary)
    if per_label is not None:
        parts += [_section("Per input shape"), per_label]
    return parts


def _bullets(title: str, items: Iterable[str]) -> list[RenderableType]:
    items = list(items)
    body = Text("\n".join(f"  • {r}" for r in items) if items else "  none", style="" if items else "dim")
    return [Text(title, style="bold"), body]


def _diagnostics(record: RunRecord) -> list[RenderableType]:
    diagnostics = record.diagnostics
    parts: list[RenderableType] = [_section("Graph breaks and recompiles")]
    if diagnostics == type(diagnostics)():
        return parts + [Text("no diagnostics (the run did not get that far)", style="dim")]
    rest = {k: v for k, v in diagnostics.to_json().items()
            if k not in ("graph_break_reasons", "recompile_reasons") and v is not None}
    parts.append(_kv_table(sorted(rest.items())))
    parts += _bullets("graph-break reasons:", diagnostics.graph_break_reasons)
    parts += _bullets("recompile reasons:", diagnostics.recompile_reasons)
    return parts


def _payload(title: str, data: JsonRecord) -> list[RenderableType]:
    """A payload's known fields (those never measured left out), or ``n/a``."""
    fields = {k: v for k, v in data.to_json().items() if v is not None}
    if data == type(data)() or not fields:
        return [_section(title), Text("n/a", style="dim")]
    return [_section(title), _kv_table(sorted(fields.items()))]


def _processes(record: RunRecord) -> list[RenderableType]:
    """A group's runs, one line each (tui.engine.repeats.GroupRecord); nothing for a run alone."""
    group, members = getattr(record, "group", None), getattr(record, "members", None)
    if group is None or not members:
        return []
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for title in ("process", "run", "status", "speedup [95% CI]", "host speedup", "compile s"):
        table.add_column(title, justify="right" if title in ("speedup [95% CI]", "host speedup", "compile s") else "left")
    for number, member in enumerate(members, 1):
        summary = member.summary()
        word = summary.verdict or STATUS_LABELS.get(member.status, member.status)
        table.add_row(str(number), member.run_id, Text(word, style=VERDICT_STYLES.get(word, "")),
                      fmt_speedup(summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high),
                      fmt_speedup(summary.host_speedup),
                      fmt_seconds(member.compile_s) if member.compile_s is not None else "–")
    spreads = [f"{what} {value:.2f}x" for what, value in (("speedup", group.speedup_process_spread),
                                                          ("host speedup", group.host_speedup_process_spread))
               if value is not None]  # fmt: skip
    note = (f"{group.processes} worker processes, {group.done} done; the result above pools their samples, its"
            " interval is across processes" + (f"; spread (largest / smallest): {', '.join(spreads)}" if spreads else ""))
    return [_section("Processes"), Text(note, style="dim"), table]


def render_details(record: RunRecord) -> RenderableType:
    """Everything known about ``record`` (a run, or a group of runs) as one Rich renderable."""
    summary = record.summary()
    parts: list[RenderableType] = [*_title(record), *_error(record)]
    parts += [_section("Result"), _headline(record, summary)]
    parts += _processes(record)
    parts += _timings(summary)
    parts += _diagnostics(record)
    parts.append(_section("Warnings"))
    if summary.warnings:
        parts.append(Text("\n".join(f"  ! {w}" for w in summary.warnings), style="yellow"))
    else:
        parts.append(Text("none", style="dim"))
    parts += _payload("Accuracy (compiled vs eager)", record.accuracy)
    parts += _payload("Memory", record.memory)
    parts += _payload("GPU telemetry during measurement", record.telemetry)
    parts += _payload("Environment", record.env)
    options = {**record.options.to_dict(), "dynamic": record.options.dynamic_label}  # None means auto here
    parts += [_section("Options"), _kv_table(options.items())]
    return Group(*parts)


class DetailsScreen(Screen):
    """Full-screen details of one run; Escape or ``q`` goes back, ``r`` re-reads the record."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="details.back"),
        Binding("r", "reload", "Reload", id="details.reload"),
    ]

    def __init__(self, record: RunRecord) -> None:
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
