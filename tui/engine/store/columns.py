"""The CSV columns, as one table: name, how to get the value from a run, what it means.

:data:`COLUMNS` is the only place a summary CSV column is declared (a run option whose spec in
:mod:`tui.engine.option_table` has ``csv`` gets its column, last, from there). :data:`CSV_COLUMNS`
(the header, stable: new columns go at the end so earlier ones keep their positions), the
row (:func:`csv_row`) and the README's column list (:func:`columns_markdown`; a test
compares them, ``python -m tui.engine.store.columns`` prints it) all come from it.

Formatting (:func:`format_value`): floats with 6 significant digits (``%.6g``), integers as
integers, booleans ``true``/``false``, None and non-finite numbers empty, lists ``;``-joined.
The raw CSV (:data:`RAW_COLUMNS`) writes times with full precision (``repr``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tui.engine.explain.kernels import Profile, top_kernels_text
from tui.engine.measure.samples import Samples, kept_samples
from tui.engine.measure.summary import RunSummary
from tui.engine.option_table import OPTIONS
from tui.engine.options import RunOptions, mode_applies
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.protocol import SIDES
from tui.engine.store.wall_time import WallTime
from tui.telemetry.model import RunTelemetry

__all__ = [
    "Column", "COLUMNS", "CSV_COLUMNS", "RAW_COLUMNS", "format_value", "raw_float", "csv_row", "raw_rows",
    "columns_markdown",
]  # fmt: skip



class RowSource(Protocol):
    """What a row is read from: the fields of a run the columns read
    (:class:`tui.engine.store.results.RunRecord` is one: it imports this module, and this one imports no
    record, so the two never import each other)."""

    run_id: str
    options: RunOptions
    status: str
    env: Env
    compile_s: float | None
    diagnostics: Diagnostics
    accuracy: Accuracy
    memory: Memory
    profile: Profile | None
    telemetry: RunTelemetry
    error_kind: str | None
    error_message: str | None
    group_id: str | None
    tune_id: str | None
    tune_stage: str | None
    concurrent_runs: int
    notes: tuple[str, ...]
    leftover_processes: int
    wall_time: WallTime

    @property
    def timestamp(self) -> str: ...

    def summary(self) -> RunSummary: ...

    def loaded_samples(self) -> Samples: ...


Getter = Callable[[RowSource, RunSummary], Any]


@dataclass(frozen=True)
class Column:
    """One summary CSV column: its name, how to read it from a run, and one line of meaning."""

    name: str
    get: Getter
    meaning: str


def _side_columns(side: str) -> list[Column]:
    def stat(name: str) -> Getter:
        def get(record: RowSource, summary: RunSummary) -> Any:
            stats = summary.side(side).iter
            return None if stats is None else getattr(stats, name)

        return get

    what = f"{side} per-iteration clock (CUDA events on a GPU, perf_counter on the CPU)"
    return [
        Column(f"{side}_n", stat("n"), f"{side} samples measured"),
        Column(f"{side}_median_ms", stat("median"), f"median of the {what}, ms"),
        Column(f"{side}_mean_ms", stat("mean"), f"mean of the {side} per-iteration times, ms"),
        Column(f"{side}_std_ms", stat("std"), f"sample standard deviation of the {side} times, ms"),
        Column(f"{side}_min_ms", stat("min"), f"fastest {side} iteration, ms"),
        Column(f"{side}_max_ms", stat("max"), f"slowest {side} iteration, ms"),
        Column(f"{side}_p10_ms", stat("p10"), f"10th percentile of the {side} times, ms"),
        Column(f"{side}_p90_ms", stat("p90"), f"90th percentile of the {side} times, ms"),
        Column(f"{side}_host_median_ms", lambda r, s: h.median if (h := s.side(side).host) else None,
               f"median of the {side} host-inclusive time per call (over blocks on a GPU; on the CPU the"
               " per-iteration clock's, one loop timing both), ms"),
    ]


def _outlier_columns(side: str) -> list[Column]:
    def count(kind: str) -> Getter:
        def get(record: RowSource, summary: RunSummary) -> Any:
            outliers = summary.side(side).outliers
            return None if outliers is None else getattr(outliers, kind)

        return get

    return [
        Column(f"{side}_outliers_mild", count("mild"), f"{side} samples 1.5-3 IQR beyond a quartile"),
        Column(f"{side}_outliers_severe", count("severe"), f"{side} samples over 3 IQR beyond a quartile"),
    ]


def _profile_columns() -> list[Column]:
    def per_call(side: str, name: str) -> Getter:
        def get(record: RowSource, summary: RunSummary) -> Any:
            profile = record.profile
            return getattr(profile.side(side), name) if profile is not None and profile.available else None

        return get

    launches = "kernel launches (CUDA-graph replays apart) per {} call; on the CPU each kernel is one"
    return [
        *(Column(f"{side}_kernels_per_call", per_call(side, "kernels_per_call"),
                 f"kernels run per {side} call (the profile pass after measuring)") for side in ("eager", "compiled")),
        *(Column(f"{side}_launches_per_call", per_call(side, "launches_per_call"), launches.format(side))
          for side in ("eager", "compiled")),
    ]


def _option_columns() -> list[Column]:
    """A column of each run option whose spec in the option table has ``csv`` (its help), in the table's order."""
    def value(name: str) -> Getter:
        return lambda record, summary: getattr(record.options, name)

    return [Column(spec.name, value(spec.name), spec.csv) for spec in OPTIONS if spec.csv is not None]


COLUMNS: tuple[Column, ...] = (
    Column("run_id", lambda r, s: r.run_id, "sortable id: UTC date-time and 6 random hex digits"),
    Column("timestamp", lambda r, s: r.timestamp, "when the run was queued, ISO 8601 UTC"),
    Column("workload", lambda r, s: r.options.workload, "built-in workload name, or path.py:factory"),
    Column("params", lambda r, s: ";".join(f"{k}={format_value(v)}" for k, v in r.options.params.items()),
           "workload parameters as k=v;k=v"),
    Column("device", lambda r, s: r.options.device, "cpu, cuda, cuda:N or cuda:GPU-<uuid> as asked"),
    Column("gpu_name", lambda r, s: r.env.gpu_name, "the GPU the worker ran on"),
    Column("gpu_uuid", lambda r, s: r.env.gpu_uuid, "its UUID (the same GPU as NVML's)"),
    Column("torch_version", lambda r, s: r.env.torch, "torch in the worker"),
    Column("backend", lambda r, s: r.options.backend, "torch.compile backend"),
    Column("mode", lambda r, s: r.options.mode if mode_applies(r.options.backend) else None,
           "torch.compile mode; empty for a backend that ignores it (all but inductor)"),
    Column("fullgraph", lambda r, s: r.options.fullgraph, "torch.compile fullgraph"),
    Column("dynamic", lambda r, s: r.options.dynamic_label, "torch.compile dynamic: auto, true or false"),
    Column("dtype", lambda r, s: r.options.dtype, "parameters and inputs cast to it, both sides"),
    Column("precision", lambda r, s: r.options.precision,
           "the precision option, both sides: default (torch's flags untouched), ieee (no TF32) or tf32"),
    Column("train", lambda r, s: r.options.train, "a training step rather than inference"),
    Column("l2_flush", lambda r, s: r.options.l2_flush, "L2 flushed before each CUDA iteration"),
    Column("cold_compile", lambda r, s: r.options.cold_compile, "fresh inductor and triton caches"),
    Column("status", lambda r, s: r.status, "done, failed or cancelled"),
    Column("error_kind", lambda r, s: r.error_kind, "why a run failed (bad_options, compile_error, ...)"),
    Column("error", lambda r, s: r.error_message, "the failure in one line"),
    Column("compile_s", lambda r, s: r.compile_s, "first compiled call, synchronised, seconds"),
    *_side_columns("eager"),
    *_side_columns("compiled"),
    Column("speedup", lambda r, s: s.speedup, "eager median / compiled median, per-iteration clock"),
    Column("speedup_ci_low", lambda r, s: s.speedup_ci_low, "its 95% block-bootstrap interval, low end"),
    Column("speedup_ci_high", lambda r, s: s.speedup_ci_high, "its 95% block-bootstrap interval, high end"),
    Column("significant", lambda r, s: s.significant, "true when the interval excludes 1"),
    Column("launch_bound", lambda r, s: s.launch_bound, "host time per call clearly exceeds device time (GPU)"),
    Column("break_even_calls", lambda r, s: s.break_even_calls, "calls before compiling pays for itself"),
    Column("graph_breaks", lambda r, s: r.diagnostics.graph_breaks, "graph breaks dynamo reported"),
    Column("recompiles", lambda r, s: r.diagnostics.recompiles, "recompilations"),
    Column("unique_graphs", lambda r, s: r.diagnostics.unique_graphs, "distinct graphs compiled"),
    Column("cudagraph_skips", lambda r, s: r.diagnostics.cudagraph_skips, "times CUDA graphs were skipped"),
    Column("eager_peak_mem_mb", lambda r, s: r.memory.eager_peak_mb, "peak CUDA memory of eager, MiB"),
    Column("compiled_peak_mem_mb", lambda r, s: r.memory.compiled_peak_mb, "peak CUDA memory of compiled, MiB"),
    Column("max_abs_err", lambda r, s: r.accuracy.max_abs_err, "largest absolute error, compiled vs eager"),
    Column("max_rel_err", lambda r, s: r.accuracy.max_rel_err, "largest relative error, compiled vs eager"),
    Column("accuracy", lambda r, s: r.accuracy.verdict, "pass, fail or n/a"),
    Column("tflops", lambda r, s: s.tflops, "compiled TFLOP/s (empty where FLOPs cannot be counted)"),
    Column("gbps", lambda r, s: s.gbps, "compiled GB/s of inputs and outputs"),
    Column("sm_clock_mean_mhz", lambda r, s: r.telemetry.sm_clock_mean_mhz, "mean SM clock while measuring"),
    Column("sm_clock_min_mhz", lambda r, s: r.telemetry.sm_clock_min_mhz, "lowest SM clock while measuring"),
    Column("temp_max_c", lambda r, s: r.telemetry.temp_max_c, "hottest GPU temperature, C"),
    Column("power_mean_w", lambda r, s: r.telemetry.power_mean_w, "mean power draw, W"),
    Column("energy_j", lambda r, s: r.telemetry.energy_j, "energy used while measuring, J"),
    Column("throttle_reasons", lambda r, s: r.telemetry.throttle_reasons, "NVML clock-event reasons seen, ;-joined"),
    Column("warnings", lambda r, s: " | ".join(s.warnings), "every warning, joined with ' | '"),
    Column("host_speedup", lambda r, s: s.host_speedup,
           "eager / compiled host-inclusive time per call (= speedup on the CPU)"),
    Column("host_speedup_ci_low", lambda r, s: s.host_speedup_ci_low, "its 95% block-bootstrap interval, low end"),
    Column("host_speedup_ci_high", lambda r, s: s.host_speedup_ci_high, "its 95% block-bootstrap interval, high end"),
    Column("verdict", lambda r, s: s.verdict,
           "faster, slower, no change, inconclusive or noisy (done runs; README, Verdict)"),
    Column("noise_reasons", lambda r, s: " | ".join(s.noise_reasons), "why the verdict is noisy, joined with ' | '"),
    Column("host_verdict", lambda r, s: s.host_verdict, "the same for the host-inclusive speedup (launch-bound runs)"),
    Column("host_noise_reasons", lambda r, s: " | ".join(s.host_noise_reasons),
           "why the host verdict is noisy, or not decisive (one process of a launch-bound run)"),
    Column("noise_threshold", lambda r, s: r.options.noise_threshold, "the verdict's threshold t (0.02: 2%)"),
    *_outlier_columns("eager"),
    *_outlier_columns("compiled"),
    Column("other_cpu_cores", lambda r, s: r.telemetry.other_cpu_cores,
           "mean CPU cores other processes used while measuring"),
    Column("app_cpu_cores", lambda r, s: r.telemetry.app_cpu_cores, "mean CPU cores the app or CLI used meanwhile"),
    Column("other_gpu_processes", lambda r, s: r.telemetry.other_gpu_processes,
           "other processes seen on the run's GPU while measuring, ;-joined"),
    Column("sm_clock_eager_mhz", lambda r, s: r.telemetry.sm_clock_eager_mhz, "mean SM clock during eager's blocks"),
    Column("sm_clock_compiled_mhz", lambda r, s: r.telemetry.sm_clock_compiled_mhz,
           "mean SM clock during compiled's blocks"),
    Column("repeats", lambda r, s: _group(r, "processes", 1),
           "worker processes this configuration ran in (--repeat; 1: a single run)"),
    Column("group_id", lambda r, s: r.group_id,
           "id shared by a configuration's processes (its first run's id); under --repeat auto, the default, "
           "a configuration run once has one too, under --repeat 1 none"),
    Column("speedup_xproc_ci_low", lambda r, s: _group(r, "speedup_xproc_ci_low"),
           "95% interval of speedup across processes (hierarchical bootstrap), low end"),
    Column("speedup_xproc_ci_high", lambda r, s: _group(r, "speedup_xproc_ci_high"),
           "its high end (both empty below two done processes)"),
    Column("host_speedup_xproc_ci_low", lambda r, s: _group(r, "host_speedup_xproc_ci_low"),
           "the same for host_speedup, low end"),
    Column("host_speedup_xproc_ci_high", lambda r, s: _group(r, "host_speedup_xproc_ci_high"),
           "the same for host_speedup, high end"),
    Column("speedup_process_spread", lambda r, s: _group(r, "speedup_process_spread"),
           "largest / smallest per-process speedup (1: the processes agree)"),
    Column("host_speedup_process_spread", lambda r, s: _group(r, "host_speedup_process_spread"),
           "largest / smallest per-process host_speedup"),
    *_profile_columns(),
    Column("top_kernels", lambda r, s: top_kernels_text(r.profile),
           "each side's 3 costliest kernels with their share of its kernel time (profile pass)"),
    Column("profile_s", lambda r, s: r.profile.profile_s if r.profile else None,
           "the profile pass's own cost, its re-compile included, seconds (never in the timings)"),
    Column("compiled_guards_ms_per_call", lambda r, s: _host_ms(r, "guards"),
           "dynamo's cache lookup and guard checks (TorchDynamo Cache Lookup), exclusive host ms per compiled "
           "call (profile pass, profiler overhead included)"),
    Column("node", lambda r, s: r.env.node, "the host the worker ran on (its hostname; a Ray node's too)"),
    Column("driver", lambda r, s: r.env.driver, "the NVIDIA driver where it ran"),
    Column("cpu_affinity", lambda r, s: r.env.cpu_affinity,
           "the cores the worker was pinned to (Linux cpu-list), when fewer than the machine has"),
    Column("concurrent_runs", lambda r, s: r.concurrent_runs,
           "the most other runs of its session measuring or compiling at the same time (0: it ran alone)"),
    Column("compiled_rmse_fp64", lambda r, s: r.accuracy.compiled_rmse_fp64,
           "RMSE of compiled against the fp64 reference, the largest over the outputs (empty: no reference)"),
    Column("eager_rmse_fp64", lambda r, s: r.accuracy.eager_rmse_fp64,
           "RMSE of eager against the fp64 reference, the largest over the outputs (compiled's yardstick)"),
    Column("compiled_max_abs_err_fp64", lambda r, s: r.accuracy.compiled_max_abs_err_fp64,
           "largest absolute error, compiled vs the fp64 reference"),
    Column("eager_max_abs_err_fp64", lambda r, s: r.accuracy.eager_max_abs_err_fp64,
           "largest absolute error, eager vs the fp64 reference"),
    Column("tf32_matmul", lambda r, s: r.env.tf32_matmul,
           "TF32 in effect for fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 as the run left it)"),
    Column("tf32_cudnn", lambda r, s: r.env.tf32_cudnn,
           "TF32 in effect for cuDNN convolutions (torch.backends.cudnn.allow_tf32 as the run left it)"),
    Column("float32_matmul_precision", lambda r, s: r.env.float32_matmul_precision,
           "torch.get_float32_matmul_precision(): highest, high or medium"),
    Column("notes", lambda r, s: " | ".join(r.notes),
           "what reading an older stored run changed in it (its precision from the old TF32 switch), ' | '-joined"),
    Column("leftover_processes", lambda r, s: r.leftover_processes,
           "processes the workload started outside the worker's process group (a daemon) still running when the "
           "run ended, all killed (0: none)"),
    Column("tune_id", lambda r, s: r.tune_id, "id shared by the runs of one compile-lab tune search (empty: none)"),
    Column("tune_stage", lambda r, s: r.tune_stage,
           "the part of its tune that ran it: screening, stage N (the race's later stages) or confirmation"),
    Column("fp32_precision_matmul", lambda r, s: r.env.fp32_precision_matmul,
           "torch.backends.cuda.matmul.fp32_precision (torch 2.9 on): ieee, tf32 or none (not set: inherited)"),
    Column("fp32_precision_cudnn", lambda r, s: r.env.fp32_precision_cudnn,
           "torch.backends.cudnn.fp32_precision (torch 2.9 on): ieee, tf32 or none"),
    Column("fp32_precision_mkldnn_matmul", lambda r, s: r.env.fp32_precision_mkldnn_matmul,
           "oneDNN's (the CPU's) fp32_precision for matmuls (torch 2.9 on): ieee, bf16, tf32 or none"),
    Column("fp32_precision_mkldnn_conv", lambda r, s: r.env.fp32_precision_mkldnn_conv,
           "oneDNN's fp32_precision for convolutions (torch 2.9 on): ieee, bf16, tf32 or none"),
    Column("wall_s", lambda r, s: r.wall_time.total_s,
           "the run's wall time from its start to the worker's exit, seconds (each part in the JSON's wall_time; "
           "a row of several processes: theirs added up)"),
    *_option_columns(),  # last: the run options with a column in the option table
)  # fmt: skip


def _host_ms(record: RowSource, category: str) -> float | None:
    """A category's ms per compiled call in the profile pass's host split (tui.engine.explain.host_time)."""
    profile = record.profile
    host = profile.host if profile is not None and profile.available else None
    return host.ms(category) if host is not None else None


def _group(record: RowSource, name: str, alone: Any = None) -> Any:
    """A field of the row's GroupSummary (tui.engine.store.repeats.GroupRecord); ``alone`` for a single run."""
    group = getattr(record, "group", None)
    return alone if group is None else getattr(group, name)


CSV_COLUMNS: tuple[str, ...] = tuple(column.name for column in COLUMNS)
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


def csv_row(record: RowSource) -> dict[str, str]:
    """The record's CSV row: every column of :data:`COLUMNS`, formatted by :func:`format_value`."""
    summary = record.summary()
    return {column.name: format_value(column.get(record, summary)) for column in COLUMNS}


def raw_rows(record: RowSource) -> Iterator[dict[str, str]]:
    """One raw CSV row (:data:`RAW_COLUMNS`) per timed iteration of every block of ``record``.

    A run whose stored samples were pruned (``compile-lab prune``) or cannot be read has none (an export says which:
    :func:`tui.engine.store.export.samples_left_out`); samples that hold an impossible time raise
    :class:`~tui.engine.measure.samples.SamplesInvalid`.
    """
    samples = kept_samples(record)
    if samples is None:
        return
    for side in SIDES:
        for block in samples[side]:
            host = raw_float(block.host_ms_per_call)
            labels = block.labels
            for i, value in enumerate(block.ms):
                yield {
                    "run_id": record.run_id,
                    "side": side,
                    "stage": block.stage,
                    "block": str(block.index),
                    "iteration": str(i),
                    "ms": raw_float(value),
                    "clock": block.clock,
                    "host_ms_per_call": host,
                    "label": labels[i] if labels else "",
                }


def _markdown_cell(text: str) -> str:
    # A "|" would end the cell and "<uuid>" would be read as an HTML tag.
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def columns_markdown() -> str:
    """The README's column list: a Markdown table of every column and its meaning."""
    lines = ["| column | meaning |", "|---|---|"]
    lines += [f"| `{column.name}` | {_markdown_cell(column.meaning)} |" for column in COLUMNS]
    return "\n".join(lines)


if __name__ == "__main__":
    print(columns_markdown())
