"""The details screen's Telemetry and Environment tabs: the machine while the run measured, and where it ran."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from tui.app.components.details.fields import (
    Field, celsius, cores, count, field_rows, joules, kv_table, mib, mhz, section, watts, words, yes_no,
)  # fmt: skip
from tui.engine.store.results import RunRecord

__all__ = ["telemetry_tab", "environment_tab", "TELEMETRY_FIELDS", "ENV_FIELDS", "CUDA_PRECISION_FIELDS",
           "CPU_PRECISION_FIELDS"]

TELEMETRY_FIELDS = (
    Field("sm_clock_mean_mhz", "SM clock, mean", mhz),
    Field("sm_clock_min_mhz", "SM clock, lowest", mhz),
    Field("sm_clock_eager_mhz", "SM clock, eager blocks", mhz),
    Field("sm_clock_compiled_mhz", "SM clock, compiled blocks", mhz),
    Field("temp_max_c", "temperature, highest", celsius),
    Field("power_mean_w", "power, mean", watts),
    Field("energy_j", "energy", joules),
    Field("energy_from", "energy from",
          lambda v: {"counter": "the energy counter", "power": "power over time"}.get(v, v)),
    Field("throttle_reasons", "clock limited by", lambda v: words(v) if v else None),
    Field("other_cpu_cores", "other programs' CPU", cores),
    Field("other_cpu_top", "busiest other programs", lambda v: words(v) if v else None),
    Field("app_cpu_cores", "compile-lab's own CPU", cores),
    Field("other_gpu_processes", "other processes on the GPU", lambda v: words(v) if v else None),
    Field("samples", "samples taken", lambda v: count(v) if v else None),
    Field("errors", "failed samples", lambda v: count(v) if v else None),
    Field("last_error", "last sampling error"),
    Field("gpu_lost", "GPU lost", lambda v: "yes" if v else None),
)

ENV_FIELDS = (
    Field("torch", "torch"),
    Field("triton", "triton"),
    Field("cuda", "CUDA"),
    Field("cudnn", "cuDNN"),
    Field("python", "Python"),
    Field("python_executable", "interpreter"),
    Field("node", "host"),
    Field("platform", "platform"),
    Field("cpu", "CPU"),
    Field("cpu_count", "CPU cores", count),
    Field("cpu_affinity", "CPU cores pinned"),
    Field("num_threads", "torch threads", count),
    Field("cxx", "C++ compiler"),
    Field("device", "device"),
    Field("gpu_name", "GPU"),
    Field("gpu_uuid", "GPU UUID"),
    Field("driver", "driver"),
    Field("compute_capability", "compute capability"),
    Field("gpu_memory_mb", "GPU memory", mib),
    Field("cuda_visible_devices", "CUDA_VISIBLE_DEVICES"),
    Field("cuda_device_order", "CUDA_DEVICE_ORDER"),
)
"""What every run shows (a field the worker did not record, a CPU run's GPU name, is left out)."""


def _new_api(value: object) -> str | None:
    """torch's ``fp32_precision`` value in words: ``none`` means not set here (inherited)."""
    return None if value is None else "not set" if value == "none" else str(value)


CUDA_PRECISION_FIELDS = (
    Field("tf32_matmul", "TF32 matmuls", yes_no),
    Field("tf32_cudnn", "TF32 cuDNN", yes_no),
    Field("float32_matmul_precision", "float32 matmul precision"),
    Field("fp32_precision_matmul", "fp32 precision, matmul", _new_api),
    Field("fp32_precision_cudnn", "fp32 precision, cuDNN", _new_api),
)
"""A CUDA run's precision: TF32 for matmuls and cuDNN, the legacy and the new (torch 2.9) API."""

CPU_PRECISION_FIELDS = (
    Field("float32_matmul_precision", "float32 matmul precision"),
    Field("fp32_precision_mkldnn_matmul", "oneDNN fp32, matmul", _new_api),
    Field("fp32_precision_mkldnn_conv", "oneDNN fp32, conv", _new_api),
)
"""A CPU run's precision: TF32 and cuDNN change nothing there; the float32 matmul precision and oneDNN's
``fp32_precision`` (bf16 or TF32 inside fp32 matmuls and convolutions) do."""


def telemetry_tab(record: RunRecord) -> list[RenderableType]:
    """GPU clocks, power and temperature, and the other programs on the machine, while the run measured."""
    rows = field_rows(record.telemetry, TELEMETRY_FIELDS)
    parts: list[RenderableType] = [section("The machine while the run measured")]
    if not rows:
        return parts + [Text("n/a: nothing was sampled during this run", style="dim")]
    return parts + [kv_table(rows)]


def environment_tab(record: RunRecord) -> list[RenderableType]:
    """The worker's versions and device, its device's precision settings, and every option of the run (by the
    names the CLI and config use)."""
    device = record.env.device or record.options.device
    precision = CUDA_PRECISION_FIELDS if device.startswith("cuda") else CPU_PRECISION_FIELDS
    rows = field_rows(record.env, ENV_FIELDS + precision)
    parts: list[RenderableType] = [section("Environment"), kv_table(rows) if rows else Text("n/a", style="dim")]
    options = {**record.options.to_dict(), "dynamic": record.options.dynamic_label}  # None means auto here
    return parts + [section("Options"), kv_table(options.items())]
