"""The report's HTML page: one self-contained file (inline CSS and SVG, no script, nothing fetched).

Every string that reaches the page goes through :func:`html.escape` here (workload names, parameters,
reasons, errors and environment strings come from users' files and machines); the plots' SVG comes
escaped from matplotlib. Numbers are written as the app and the CLI write them (``tui.present.format``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from html import escape
from typing import Any

from tui import __version__
from tui.present.format import MISSING, accuracy_word, fmt_ms, fmt_seconds, workload_names
from tui.present.option_fields import differing, option_words, params_text, workload_word
from tui.present.tune_json import StoredAnswer
from tui.present.warning_groups import merged_processes
from tui.engine.options import RunOptions
from tui.engine.store.report_data import ENV_FIELDS, ProcessData, ReportData, ReportRow
from tui.engine.measure.verdict import RERUN_HINT, SLOWER
from tui.report.colors import NO_VERDICT, VERDICT_COLOURS, verdict_class
from tui.report.plots import speedup_words, whole_parentheses

__all__ = ["row_labels", "render_page", "e"]

_ENV_HEADERS = {"torch": "torch", "cuda": "CUDA", "triton": "triton", "cudnn": "cuDNN", "python": "Python",
                "gpu_name": "GPU", "driver": "driver", "compute_capability": "compute capability",
                "gpu_memory_mb": "GPU memory (MB)", "platform": "platform", "cpu": "CPU", "cpu_count": "CPU cores",
                "cxx": "C++ compiler"}
_TELEMETRY_HEADERS = ("#", "run", "status", "SM clock mean / min (MHz)", "SM clock eager / compiled (MHz)",
                      "max temp (°C)", "mean power (W)", "energy (J)", "throttle reasons", "GPU samples",
                      "other CPU use (cores)", "compile-lab's CPU use (cores)", "other GPU processes")
_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;margin:2em auto;
max-width:1100px;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
h3{font-size:1em;margin:1.4em 0 .3em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #d0d7de;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}.nw{white-space:nowrap}
svg.plot{max-width:100%;height:auto;display:block}code,pre{font:12px ui-monospace,"DejaVu Sans Mono",monospace}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:#656d76}.verdict{font-weight:600}details{margin:.4em 0}summary{cursor:pointer}
ul.reasons{margin:.2em 0 .8em}pre.answer{word-break:normal;overflow-wrap:break-word}
"""


def e(value: Any) -> str:
    """``value`` as text, HTML-escaped (quotes included); ``–`` for None."""
    return MISSING if value is None else escape(str(value), quote=True)


def row_labels(rows: Sequence[ReportRow]) -> list[str]:
    """How each configuration is named: workload, parameters, then its options, those that differ first; a tune's
    run then says which part of the tune ran it (``(tune: screening)``, ``(tune: confirmation)``), since a
    candidate's screening run and its confirmation have the same options. Where the rows' inductor options differ
    (a tune's candidates), each row names its own (``freezing=True``) instead of counting them (``1 opt``), as every
    label does (:func:`option_words`). Where the report read several RUNS arguments, each row ends with the one it
    came from (``(from base.json)``)."""
    differs = differing(row.options for row in rows)
    names = workload_names(row.options.workload for row in rows)
    return [" ".join(part for part in (workload_word(row.options, names), params_text(row.options),
                                       " ".join(option_words(row.options, differs, skip=("workload", "params"))),
                                       f"(tune: {row.tune_stage})" if row.tune_stage else "",
                                       f"(from {row.source})" if row.source else "")
                     if part)
            for row in rows]  # fmt: skip


def _verdict(verdict: str | None) -> str:
    return f'<span class="verdict {verdict_class(verdict)}">{e(verdict or MISSING)}</span>'


def _css() -> str:
    colours = "".join(f".{verdict_class(v)}{{color:{c}}}" for v, c in VERDICT_COLOURS.items())
    return f"<style>{_STYLE}{colours}.v-none{{color:{NO_VERDICT}}}</style>"


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], numeric: Iterable[int] = ()) -> str:
    """A table of already escaped cells."""
    right = set(numeric)
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in right else f"<td>{c}</td>"
                                    for i, c in enumerate(cells)) + "</tr>" for cells in rows)  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _moment(seconds: float | None) -> str:
    """A run's time as a UTC date, or "–" when unknown or no date can show it (NaN, 1e300, a negative)."""
    if seconds is None:
        return MISSING
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):  # shown as unknown: the rest of the report stands
        return MISSING


def _header(data: ReportData) -> str:
    span = _moment(data.first_created)
    if data.last_created is not None and _moment(data.last_created) != span:
        span += f" – {_moment(data.last_created)}"
    sources = ", ".join(f"<code>{e(s)}</code>" for s in data.sources) or MISSING
    text = (f"<h1>compile-lab report</h1><p class=\"muted\">{e(data.counts)}{_rows_note(data)}, "
            f"queued {e(span)}; read from {sources}; made by compile-lab {e(__version__)}.</p>")
    if data.problems:
        items = "".join(f"<li>{e(p)}</li>" for p in data.problems)
        text += (
            f"<details><summary>{len(data.problems)} problem(s) reading the runs</summary><ul>{items}</ul></details>"
        )
    return text


def _rows_note(data: ReportData) -> str:
    """Why there are more rows than configurations: a row per run, or per ``--repeat`` group (pooled)."""
    if len(data.rows) == data.configurations:
        return ""
    return " (a row per run, or per <code>--repeat</code> group, its processes pooled)"


def _summary_table(rows: Sequence[ReportRow], labels: Sequence[str]) -> str:
    cells = []
    for row, label in zip(rows, labels, strict=True):
        host = (f'<span class="nw">{e(speedup_words(row.host_speedup))}</span> {_verdict(row.host_verdict)}'
                if row.shows_host else MISSING)  # a figure and its interval on one line, its word after it
        status = e(row.status) if row.error is None else f"{e(row.status)}: {e(row.error)}"
        cells.append([str(row.number), e(label), status, _verdict(row.verdict), e(speedup_words(row.speedup)), host,
                      _accuracy(row.accuracy), e(fmt_ms(row.eager.stats.median if row.eager.stats else None)),
                      e(fmt_ms(row.compiled.stats.median if row.compiled.stats else None)),
                      e(fmt_seconds(row.compile_s)), str(len(row.processes))])  # fmt: skip
    headers = ("#", "configuration", "status", "verdict", "speedup [95% CI]", "host-inclusive (launch-bound)",
               "accuracy", "eager median (ms)", "compiled median (ms)", "compile (s)", "processes")
    return _table(headers, cells, numeric=(0, 4, 7, 8, 9, 10))


def _accuracy(verdict: str) -> str:
    """The accuracy cell: a failed check stands out in the slower verdict's colour (a speedup of wrong numbers is
    none)."""
    if verdict == "fail":
        return f'<strong class="verdict {verdict_class(SLOWER)}">{accuracy_word(verdict)}</strong>'
    return e(accuracy_word(verdict))


def _noisy(data: ReportData, labels: Mapping[int, str]) -> str:
    rows = data.noisy_rows
    if not rows:
        return "<p>No configuration is noisy.</p>"
    parts = []
    for row in rows:
        reasons = [("", r) for r in row.noise_reasons] + [("host-inclusive: ", r) for r in row.host_noise_reasons]
        items = "".join(f"<li>{e(prefix)}{e(reason)}</li>" for prefix, reason in reasons)
        parts.append(f"<h3>#{row.number} {e(labels[row.number])}</h3><ul class=\"reasons\">{items}</ul>")
    return "".join(parts) + f"<p class=\"muted\">The way out: {e(RERUN_HINT)}.</p>"


def _distributions(rows: Sequence[ReportRow], labels: Mapping[int, str], plots: Mapping[int, str | None]) -> str:
    parts = ["<p class=\"muted\">Per-iteration times of the measured blocks: box from the first to the third quartile "
             "with the median, whiskers from p10 to p90, dots at evenly spaced quantiles of all samples (min and max "
             "included). Repeats across processes: their samples pooled, the median line the geometric mean of the "
             "processes' own medians.</p>"]
    for row in rows:
        parts.append(f"<h3>#{row.number} {e(labels[row.number])}</h3>")
        plot = plots.get(row.number)
        if plot:
            parts.append(plot)
            if row.samples_note:
                parts.append(f'<p class="muted">Boxes from the stored statistics, no dots: {e(row.samples_note)}.</p>')
        else:
            parts.append(f"<p class=\"muted\">No distribution: {e(row.samples_note or 'no measured samples')}.</p>")
    return "".join(parts)


def _num(value: float | None, digits: int = 0) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _telemetry_cells(number: int, process: ProcessData, processes: int) -> list[str]:
    t = process.telemetry
    run = f"<code>{e(process.run_id)}</code>" + (f" ({process.repeat + 1} of {processes})" if processes > 1 else "")
    sampled = t.samples > 0
    top = f" ({e('; '.join(t.other_cpu_top))})" if t.other_cpu_top else ""
    energy = MISSING if t.energy_j is None else _num(t.energy_j, 1) + (f" ({t.energy_from})" if t.energy_from else "")
    return [
        str(number), run, e(process.status),
        e(f"{_num(t.sm_clock_mean_mhz)} / {_num(t.sm_clock_min_mhz)}") if sampled else MISSING,
        e(f"{_num(t.sm_clock_eager_mhz)} / {_num(t.sm_clock_compiled_mhz)}") if sampled else MISSING,
        e(_num(t.temp_max_c)), e(_num(t.power_mean_w, 1)),
        e(energy),
        e(", ".join(t.throttle_reasons) or ("none" if sampled else MISSING)),
        e(f"{t.samples}" + (f", {t.errors} failed" if t.errors else "")),
        e(_num(t.other_cpu_cores, 2)) + top, e(_num(t.app_cpu_cores, 2)),
        e(", ".join(t.other_gpu_processes) or MISSING),
    ]  # fmt: skip


_GPU_COLUMNS = frozenset((3, 4, 5, 6, 7, 8, 9, 12))
"""The machine table's columns of GPU telemetry (NVML)."""


def _without_gpu(cells: list[list[str]], kept: list[int]) -> str:
    """The machine section without GPU telemetry: one line, and the ``kept`` columns (the CPU's) if any."""
    said = "<p>No GPU telemetry on this machine.</p>"
    if len(kept) == 3:
        return said
    return said + ("<p class=\"muted\">The CPU use of other processes and of compile-lab during each run's "
                   "measurement (psutil).</p>") + _table([_TELEMETRY_HEADERS[i] for i in kept],
                                                    [[line[i] for i in kept] for line in cells],
                                                    numeric=[n for n, i in enumerate(kept) if i in (0, 10, 11)])


def _telemetry(rows: Sequence[ReportRow]) -> str:
    """The machine table; its columns without a value in any row are left out. Without GPU telemetry in any run
    (a CPU machine) one line says so instead of eight columns of dashes; without CPU figures either, that line
    is all."""
    cells = [_telemetry_cells(row.number, p, len(row.processes)) for row in rows for p in row.processes]
    if not any(p.telemetry.samples for row in rows for p in row.processes):
        cells = [[c if i not in _GPU_COLUMNS else MISSING for i, c in enumerate(line)] for line in cells]
    kept = [i for i in range(len(_TELEMETRY_HEADERS)) if i < 3 or any(line[i] != MISSING for line in cells)]
    if not any(i in _GPU_COLUMNS for i in kept):
        return _without_gpu(cells, kept)
    note = ("<p class=\"muted\">The GPU during each run's measurement (NVML at 10 Hz; the SM clock per side from the "
            "samples inside that side's blocks) and the CPU use of other processes (psutil). A CPU run has no GPU "
            "samples.</p>")
    return note + _table(_TELEMETRY_HEADERS, cells, numeric=(0, 5, 6, 7, 9, 10, 11))


def _environments(data: ReportData) -> str:
    if not data.environments:
        return "<p>No run reported its environment.</p>"
    headers = ["", *(f"environment {i}" for i in range(1, len(data.environments) + 1))]
    used = ["rows", *(e(", ".join(f"#{n}" for n in env.numbers)) for env in data.environments)]
    lines = [used] + [[e(_ENV_HEADERS[name]), *(e(getattr(env.env, name)) for env in data.environments)]
                      for name in ENV_FIELDS]  # fmt: skip
    return _table(headers, lines)


def _option_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _options(rows: Sequence[ReportRow], labels: Mapping[int, str]) -> str:
    parts = []
    defaults = RunOptions().to_dict()
    for row in rows:
        options = row.options.to_dict()
        lines = [[f"<code>{e(k)}</code>", e(_option_value(v)) + ("" if v == defaults.get(k) else " <b>*</b>")]
                 for k, v in options.items()]  # fmt: skip
        body = f"<p>Reproduce:</p><pre><code>{e(row.command)}</code></pre>" + _table(("option", "value"), lines)
        if row.warnings:
            warnings = merged_processes(row.warnings)  # a row's processes' alike warnings, once
            body += "<p>Warnings:</p><ul>" + "".join(f"<li>{e(w)}</li>" for w in warnings) + "</ul>"
        if row.error:
            body += f"<p>Error: {e(row.error)}</p>"
        parts.append(f"<details><summary>#{row.number} {e(labels[row.number])}</summary>{body}</details>")
    return "<p class=\"muted\">* differs from the default.</p>" + "".join(parts)


def _answers(answers: Sequence[StoredAnswer | str]) -> str:
    """Each search's answer as the CLI printed it (its code pasteable as it is), under a heading naming the search;
    for a ``tune:`` selection (a text), where its answer is kept."""
    parts = []
    for answer in answers:
        if isinstance(answer, str):
            parts.append(f"<h2>The search's answer ({e(answer)})</h2><p class=\"muted\">The history keeps a search's "
                         "runs (in the rows below), not its answer: <code>compile-lab tune --json FILE</code> keeps "
                         "both, and <code>compile-lab report FILE</code> shows the answer here.</p>")
            continue
        parts.append(f"<h2 id=\"tune-{e(answer.tune_id)}\">The search's answer (tune {e(answer.tune_id)})</h2>"
                     f"<p class=\"muted\">As <code>compile-lab tune</code> printed it, read from "
                     f"<code>{e(answer.source)}</code>; its runs are in the rows below.</p>"
                     f"<pre class=\"answer\">{e(answer.text)}</pre>")
    return "\n".join(parts)


def render_page(data: ReportData, forest: str, distributions: Mapping[int, str | None],
                answers: Sequence[StoredAnswer | str] = ()) -> str:
    """The whole page: header, the searches' answers, forest plot and summary, noisy runs' reasons, distributions,
    telemetry, environment, options. ``forest`` and ``distributions`` (by row number) are SVG elements."""
    # A label's part in parentheses, ``(tune: screening)``, is never broken across lines, as in the forest plot.
    labels = dict(zip((row.number for row in data.rows), map(whole_parentheses, row_labels(data.rows)), strict=True))
    ordered = [labels[row.number] for row in data.rows]
    sections = [
        _header(data),
        _answers(answers),
        "<h2 id=\"speedups\">Speedups</h2><p class=\"muted\">Each line: the speedup (eager median / compiled median) "
        "and its 95% bootstrap interval, coloured by its verdict; a launch-bound run's host-inclusive speedup is the "
        "dashed line below it.</p>",
        f"<figure>{forest}</figure>" if data.rows else "<p>No configuration.</p>",
        _summary_table(data.rows, ordered),
        "<h2 id=\"noisy\">Noisy runs</h2>", _noisy(data, labels),
        "<h2 id=\"distributions\">Per-iteration distributions</h2>", _distributions(data.rows, labels, distributions),
        "<h2 id=\"telemetry\">The machine during each run</h2>", _telemetry(data.rows),
        "<h2 id=\"environment\">Environment</h2>", _environments(data),
        "<h2 id=\"options\">Options of each row</h2>", _options(data.rows, labels),
    ]
    body = "\n".join(sections)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>compile-lab report</title>{_css()}</head>\n<body>\n{body}\n</body></html>\n")
