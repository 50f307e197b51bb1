"""The details screen's Summary tab: the verdict, the speedups, the statistics, warnings, accuracy, memory.

Also the title and the error shared by every tab, and the processes of a group of runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from tui.present.fold_text import WholeWordText
from tui.present.format import MISSING, TIMES, accuracy_word
from tui.present.warning_groups import merged_processes
from tui.app.components.details.fields import (
    Field, count, field_rows, kv_table, mib, section, seconds, value_text, yes_no,
)  # fmt: skip
from tui.present.format import (
    STATUS_LABELS, VERDICT_STYLES, fmt_ms, fmt_seconds, fmt_speedup, input_label, options_label, wall_time_text,
    workload_label,
)  # fmt: skip
from tui.engine.store.reproduce import reproduce_command
from tui.engine.store.results import RunRecord
from tui.engine.measure.stats import Stats
from tui.engine.measure.summary import RunSummary
from tui.engine.measure.verdict import INCONCLUSIVE, NO_CHANGE, NOISY, RERUN_HINT
from tui.engine.status import RunStatus, ended_reason
from tui.typed import printable

__all__ = ["title", "error", "summary_tab", "command_of", "ACCURACY_FIELDS", "MEMORY_FIELDS"]

_STAT_ROWS = (("n", "n"), ("median", "median"), ("mean", "mean"), ("std", "std"), ("min", "min"), ("max", "max"),
              ("p10", "p10"), ("p90", "p90"), ("q1", "q1"), ("q3", "q3"), ("iqr", "IQR"))  # fmt: skip

ACCURACY_FIELDS = (
    Field("passed", "accuracy", lambda v: accuracy_word("pass" if v else "fail")),
    Field("reference", "judged against", lambda v: _REFERENCES.get(v, v)),
    Field("fp64_note", "fp64 reference"),
    Field("compiled_rmse_fp64", "RMSE, compiled vs fp64", lambda v: f"{v:.3g}"),
    Field("eager_rmse_fp64", "RMSE, eager vs fp64", lambda v: f"{v:.3g}"),
    Field("compiled_max_abs_err_fp64", "largest absolute error, compiled vs fp64", lambda v: f"{v:.3g}"),
    Field("eager_max_abs_err_fp64", "largest absolute error, eager vs fp64", lambda v: f"{v:.3g}"),
    Field("max_abs_err", "largest absolute error, compiled vs eager", lambda v: f"{v:.3g}"),
    Field("max_rel_err", "largest relative error, compiled vs eager", lambda v: f"{v:.3g}"),
    Field("atol", "absolute tolerance, vs eager", lambda v: f"{v:.3g}"),
    Field("rtol", "relative tolerance, vs eager", lambda v: f"{v:.3g}"),
    Field("compared", "outputs compared", count),
    Field("worst", "worst output"),
    Field("problem", "problem"),
    Field("eager_repeatable", "eager repeats itself", yes_no),
    Field("nan_both", "NaN in both outputs", count),
)
#: How ``Accuracy.reference`` reads (any other value says why the compiled output was not judged).
_REFERENCES: dict[str, str] = {
    "fp64": "a float64 copy: compiled may be off it by a multiple of eager's own error plus a floor by dtype",
    "eager": "eager (allclose with the tolerances below)",
}
MEMORY_FIELDS = (
    Field("eager_peak_mb", "eager peak", mib),
    Field("compiled_peak_mb", "compiled peak", mib),
    Field("l2_flush_buffer_mb", "L2-flush buffer", mib),
)


def title(record: RunRecord) -> list[RenderableType]:
    """The run's workload, options and status; its id and device; its tune and stage; its inductor options, if any."""
    options, status = record.options, record.status
    text = Text()
    text.append(f"{workload_label(options)}  ", style="bold")
    label = input_label(record)
    if label:
        text.append(f"{label}  ", style="bold")
    text.append(options_label(options))
    styles: dict[str, str] = {RunStatus.DONE: "bold green", RunStatus.FAILED: "bold red", RunStatus.CANCELLED: "dim"}
    status_style = styles.get(status, "bold yellow")
    text.append(f"  {STATUS_LABELS.get(status, status)}", style=status_style)
    lines: list[RenderableType] = [text, Text(f"run {record.run_id}  device {options.device}", style="dim")]
    tune = _tune_line(record)
    if tune is not None:
        lines.append(tune)
    if options.inductor_options:  # the label leaves them out; a tune's candidates differ by them alone
        pairs = ", ".join(f"{key}={value!r}" for key, value in sorted(options.inductor_options.items()))
        lines.append(Text(printable(f"inductor options  {pairs}"), style="dim"))
    return lines


def _tune_line(record: RunRecord) -> Text | None:
    """``tune ID (screening)``: which search ran the run (its answer and compare name that id) and which part of it
    (a candidate's screening run and its confirmation runs share their options); None outside a tune.

    A line of its own: beside the run's id and device it would pass 80 columns."""
    if not record.tune_id:
        return None
    line = f"tune {record.tune_id}"
    if record.tune_stage:
        line += f" ({record.tune_stage})"
    return Text(printable(line), style="dim")


def error(record: RunRecord) -> list[RenderableType]:
    """The error of a failed or cancelled run (its last 60 lines of detail), or nothing."""
    if record.status not in (RunStatus.FAILED, RunStatus.CANCELLED) and not record.error_message:
        return []
    cancelled = record.status == RunStatus.CANCELLED
    parts: list[RenderableType] = [section("Cancelled" if cancelled else "Error")]
    reason = ended_reason(record.error_kind, record.error_message) or ("cancelled" if cancelled else "error")
    if cancelled and reason == "cancelled":  # under its heading, the word alone says nothing more
        reason = "cancelled before it finished"
    parts.append(Text(reason, style="bold red"))
    detail = (record.error_detail or "").rstrip()
    if detail:
        lines = detail.splitlines()
        if len(lines) > 60:
            lines = ["…"] + lines[-60:]
        parts.append(Text("\n".join(lines), style="red"))
    return parts


def _significance(summary: RunSummary, threshold: float) -> str:
    """What the interval says beside the speedup, in the verdict's terms: an interval that excludes 1 but reaches
    into the ``threshold`` band around it is no ``faster`` or ``slower`` (the verdict above says which word)."""
    speedup, significant = summary.speedup, summary.significant
    if speedup is None:
        return "n/a"
    if summary.verdict == NOISY:
        return "noisy: the measurement cannot support this number (see verdict)"
    if significant is None:
        return "interval pending" if summary.live else "no interval"
    if not significant:
        return "not significant (the interval includes 1)"
    direction = "faster" if speedup >= 1 else "slower"
    band = f"{threshold * 100:g}%"
    if summary.verdict == NO_CHANGE:
        return f"the interval excludes 1 but lies inside the ±{band} band: not {direction} by more than {band}"
    if summary.verdict == INCONCLUSIVE:
        return f"the interval excludes 1 but reaches into the ±{band} band: not shown {direction} by more than {band}"
    return f"significant: compiled is {direction}"


def _verdict_text(word: str | None, reasons: tuple[str, ...]) -> Text | None:
    if word is None:
        return None
    text = Text(word, style=VERDICT_STYLES.get(word, ""))
    for reason in reasons:
        text.append(f"\n• {reason}", style="magenta")
    if reasons and word == "noisy":  # an inconclusive host verdict of one process says its own way out
        text.append(f"\n{RERUN_HINT}", style="dim")
    return text


def _host_speedup_text(summary: RunSummary, host_line: str | None) -> str | None:
    host = summary.host_speedup
    if host is None:
        return None
    text = fmt_speedup(host, summary.host_speedup_ci_low, summary.host_speedup_ci_high)
    if summary.one_clock:
        text += "  the same as the speedup: on the CPU one loop times both clocks"
    if summary.launch_bound:
        text += "  launch-bound: what a loop that never synchronises pays"
        if host_line:
            text += f"\n{host_line}"
    return text


def _headline(record: RunRecord, summary: RunSummary, host_line: str | None) -> Table:
    speedup_text = None
    if summary.speedup is not None:
        speedup_text = fmt_speedup(summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high)
        speedup_text += f"  {_significance(summary, record.options.noise_threshold)}"
    compile_s = record.compile_s
    verdicts = [("verdict", _verdict_text(summary.verdict, summary.noise_reasons)),
                ("host verdict", _verdict_text(summary.host_verdict, summary.host_noise_reasons))]
    rows = [
        *[(name, text) for name, text in verdicts if text is not None],  # a failed run keeps its status
        ("speedup", speedup_text),
        ("host-inclusive speedup", _host_speedup_text(summary, host_line)),
        ("compile", f"{seconds(compile_s)} (first compiled call)" if compile_s is not None else None),
        ("wall time", _wall_time(record)),
        ("break-even", f"{summary.break_even_calls:,} calls" if summary.break_even_calls is not None else None),
        ("launch-bound", summary.launch_bound),
        ("beside", _beside(record)),
        ("compiled throughput", f"{summary.tflops:.3g} TFLOP/s" if summary.tflops is not None else None),
        ("compiled bandwidth", f"{summary.gbps:.4g} GB/s" if summary.gbps is not None else None),
    ]
    return kv_table([(name, value) for name, value in rows if value is not None or name == "speedup"])


def _wall_time(record: RunRecord) -> Text | None:
    """The run's wall time and its parts (a group: its processes' added up), folding between parts, never inside
    one."""
    text = wall_time_text(record.wall_time, len(getattr(record, "members", None) or [record]))
    return None if text is None else WholeWordText(text)


def _beside(record: RunRecord) -> str | None:
    """``ran beside 3 other runs of this session`` (one worker per GPU); a group: its busiest process's."""
    members = getattr(record, "members", None) or [record]
    others = max(getattr(member, "concurrent_runs", 0) or 0 for member in members)
    if not others:
        return None
    return (f"ran beside {others} other run{'' if others == 1 else 's'} of this session, each on its own GPU "
            "and CPU cores (the host's memory, caches and driver shared)")


def _stats_table(summary: RunSummary) -> Table:
    clock = summary.clock or "n/a"
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("ms", style="bold")
    columns: list[tuple[Stats | None, str]] = [(summary.eager.iter, f"eager ({clock})"),
                                               (summary.compiled.iter, f"compiled ({clock})")]
    if not summary.one_clock:  # on the CPU the host columns would repeat the per-call ones
        columns += [(summary.eager.host, "eager (host)"), (summary.compiled.host, "compiled (host)")]
    for _, heading in columns:
        table.add_column(heading, justify="right")
    stats = [item for item, _ in columns]
    for name, label in _STAT_ROWS:
        cells = []
        for item in stats:
            value = None if item is None else getattr(item, name)
            if value is None:
                cells.append(Text(MISSING, style="dim"))
            else:
                cells.append(Text(str(int(value)) if name == "n" else fmt_ms(value)))
        table.add_row(label, *cells)
    spreads = [None if item is None else item.relative_iqr for item in stats]
    table.add_row("IQR/median", *[Text(f"{s:.1%}") if s is not None else Text(MISSING, style="dim") for s in spreads])
    return table


def _per_label(summary: RunSummary) -> Table | None:
    if not summary.per_label:
        return None
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for heading in ("input", "eager median", "compiled median", "speedup"):
        table.add_column(heading, justify="right" if heading != "input" else "left")
    for label, entry in summary.per_label.items():
        table.add_row(str(label), fmt_ms(entry.eager.median if entry.eager else None),
                      fmt_ms(entry.compiled.median if entry.compiled else None), fmt_speedup(entry.speedup))
    return table


def _timings(summary: RunSummary) -> list[RenderableType]:
    parts: list[RenderableType] = [section("Statistics (milliseconds per call)")]
    if any(side.iter is not None or side.host is not None for side in (summary.eager, summary.compiled)):
        parts.append(_stats_table(summary))
    else:
        parts.append(Text("no timings were measured", style="dim"))
    per_label = _per_label(summary)
    if per_label is not None:
        parts += [section("Per input shape"), per_label]
    return parts


def _processes(record: RunRecord) -> list[RenderableType]:
    """A group's runs, one line each (tui.engine.store.repeats.GroupRecord); nothing for a run alone."""
    group, members = getattr(record, "group", None), getattr(record, "members", None)
    if group is None or not members:
        return []
    # At 80 columns every cell stays on one line: short headings, the figures first, the run id last (whole
    # where the width allows it, else cut at its end).
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    right = ("speedup [95% CI]", "host", "compile s")
    for heading in ("#", "status", *right):
        table.add_column(heading, justify="right" if heading in right else "left", no_wrap=True)
    table.add_column("run", no_wrap=True, overflow="ellipsis")
    for number, member in enumerate(members, 1):
        summary = member.summary()
        word = summary.verdict or STATUS_LABELS.get(member.status, member.status)
        table.add_row(str(number), Text(word, style=VERDICT_STYLES.get(word, "")),
                      fmt_speedup(summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high),
                      fmt_speedup(summary.host_speedup),
                      fmt_seconds(member.compile_s) if member.compile_s is not None else MISSING, member.run_id)
    spreads = [f"{what} {value:.2f}{TIMES}" for what, value in (("speedup", group.speedup_process_spread),
                                                          ("host speedup", group.host_speedup_process_spread))
               if value is not None]  # fmt: skip
    note = (f"{group.processes} worker processes, {group.done} done; the result above reads the geometric mean of"
            " their own speedups and medians, its interval is across processes; host: the host-inclusive speedup"
            + (f"; spread (largest / smallest): {', '.join(spreads)}" if spreads else ""))
    return [section("Processes"), Text(note, style="dim"), table]


def _payload(heading: str, data: object, fields: tuple[Field, ...]) -> list[RenderableType]:
    rows = field_rows(data, fields)
    return [section(heading), kv_table(rows) if rows else Text("n/a", style="dim")]


def _marked(mark: str, lines: Sequence[str], style: str) -> Table:
    """One line per item after ``mark``; a long one folds under its own text, not under the mark."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for line in lines:
        grid.add_row(Text(mark, style=style), Text(line, style=style))
    return grid


def command_of(record: RunRecord) -> str:
    """The ``compile-lab run ...`` line that measures this configuration again (a group: as many processes)."""
    group = getattr(record, "group", None)
    return reproduce_command(record.options, repeat=group.processes if group is not None else 1)


def summary_tab(record: RunRecord, summary: RunSummary, host_line: str | None = None,
                baseline: Sequence[RenderableType] = ()) -> list[RenderableType]:
    """The Summary tab: result, processes, statistics, warnings, accuracy, memory.

    ``host_line``: where the compiled call's host time goes, shown under a launch-bound run's host speedup;
    ``baseline``: the row's change against the app's baseline (tui.app.baselines.baseline_summary).
    """
    parts: list[RenderableType] = [section("Result"), _headline(record, summary, host_line), *baseline]
    parts += _processes(record)
    parts += _timings(summary)
    parts.append(section("Warnings"))
    warnings = merged_processes(summary.warnings)  # a row's processes' alike warnings, once
    parts.append(_marked("  !", warnings, "yellow") if warnings else value_text(()))
    if record.notes:  # what reading an older stored run changed in it
        parts.append(_marked("  note:", record.notes, "dim"))
    parts += _payload("Accuracy", record.accuracy, ACCURACY_FIELDS)
    parts += _payload("Memory", record.memory, MEMORY_FIELDS)
    parts += [section("Reproduce (y copies it)"), Text(command_of(record), style="cyan")]
    return parts

