"""``compile-lab workloads`` and ``compile-lab env``: what can run, and what it runs on."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from tui import __version__
from tui.engine.catalog import WORKLOADS

__all__ = ["cmd_workloads", "cmd_env"]

ENVCHECK_TIMEOUT_S = 600


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def cmd_workloads() -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(title="built-in workloads", title_justify="left")
    for name, justify in (("workload", "left"), ("type", "left"), ("cpu", "right"),
                          ("gpu", "right"), ("allowed", "left"), ("what it is", "left")):  # fmt: skip
        table.add_column(name, justify=justify, no_wrap=name != "what it is")  # type: ignore[arg-type]
    for number, spec in enumerate(WORKLOADS.values()):
        train = " (--train: a training step)" if spec.supports_train else ""
        table.add_row(Text(spec.name, style="bold"), "", "", "", "", spec.description + train, end_section=not spec.params)
        for index, p in enumerate(spec.params):
            gpu = p.gpu_default if p.gpu_default is not None else p.default
            if p.choices:
                allowed = ", ".join(str(c) for c in p.choices)
            else:
                low = _num(p.minimum) if p.minimum is not None else ""
                high = _num(p.maximum) if p.maximum is not None else ""
                allowed = f"{low}..{high}" if low or high else "any"
            table.add_row(
                f"  {p.name}", p.kind.__name__, _num(p.default), _num(gpu), allowed, p.help,
                end_section=index == len(spec.params) - 1 and number < len(WORKLOADS) - 1,
            )
    console.print(table)
    for paragraph in (
        "Parameters: --param name=value, e.g. compile-lab run --workload matmul --param n=2048. "
        "The cpu defaults apply with --device cpu, the gpu defaults with --device cuda.",
        "Your own workload: --workload path/to/file.py (or path/to/file.py:factory). The file defines "
        "make_workload(device, dtype, **params), or the factory you name, returning (callable, inputs_tuple) "
        "or {'model' or 'fn': callable, 'inputs': tuple, 'label': str}. It is imported only inside the "
        "worker process; --param values reach it as keyword arguments.",
    ):
        console.print()
        console.print(paragraph, markup=False, highlight=False)
    return 0


# ----------------------------------------------------------------------------------------------
# env


def _envcheck(python: str | None) -> tuple[dict[str, Any] | None, str]:
    """Run the torch part of the check in a subprocess; (report, error text)."""
    from tui.engine.runner import make_package_importable

    argv = [python or sys.executable, "-m", "tui.engine.worker.envcheck"]
    env = dict(os.environ)
    make_package_importable(argv[0], env)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=ENVCHECK_TIMEOUT_S,
            start_new_session=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"the check did not finish within {ENVCHECK_TIMEOUT_S} s"
    except OSError as exc:
        return None, f"{argv[0]} could not be started: {exc}"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode == 0 and lines:
        try:
            return json.loads(lines[-1]), ""
        except ValueError:
            pass
    tail = [line for line in done.stderr.splitlines() if line.strip()]
    return None, f"exit code {done.returncode}: {tail[-1] if tail else 'no output'}"


def cmd_env(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    err = Console(stderr=True)
    with err.status("checking torch in a subprocess (importing torch takes a few seconds)..."):
        report, error = _envcheck(args.python)

    table = Table(title="compile-lab environment", title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_column("note", style="dim")
    ok, bad, warn = "[green]", "[red]", "[yellow]"

    def row(what: str, value: Any, note: str = "", style: str = "") -> None:
        text = "-" if value is None or value == "" else str(value)
        table.add_row(what, f"{style}{_escape(text)}" if style else _escape(text), _escape(note))

    row("compile-lab", __version__)
    row("python (CLI)", sys.version.split()[0], sys.executable)
    hints: list[str] = []
    torch_ok = False
    if report is None:
        row("torch", "the check failed", error, bad)
        hints.append("install torch into the interpreter the workers use (see --python)")
    elif report.get("torch") is None:
        row("python (worker)", report.get("python"), report.get("python_executable") or "")
        row("torch", "not importable", report.get("torch_error") or "", bad)
        hints.append("install torch into the interpreter the workers use (see --python)")
    else:
        torch_ok = True
        row("python (worker)", report.get("python"), report.get("python_executable") or "")
        row("torch", report["torch"], f"imported in {report.get('torch_import_s')} s", ok)
        cuda_build = report.get("cuda_build")
        row("CUDA build", cuda_build or "none (CPU-only build)")
        available = report.get("cuda_available")
        row("CUDA available", "yes" if available else "no", "", ok if available else warn)
        row("GPU count", report.get("gpu_count"))
        for gpu in report.get("gpus") or ():
            row(
                f"  cuda:{gpu.get('index')}",
                gpu.get("name"),
                f"{gpu.get('uuid')}, sm {gpu.get('capability')}, {gpu.get('memory_mb')} MiB",
            )
        row("cuDNN", report.get("cudnn"))
        triton_note = "" if report.get("triton") else ("inductor needs it on a GPU" if cuda_build else "not needed on the CPU")
        row("triton", report.get("triton") or "not installed", triton_note)
        cxx, cxx_path = report.get("cxx"), report.get("cxx_path")
        if cxx_path:
            row("C++ compiler (inductor, CPU)", f"{cxx} ({cxx_path})", report.get("cxx_version") or "version unknown", ok)
        else:
            row("C++ compiler (inductor, CPU)", cxx or "none", "not found on PATH", bad)
            hints.append("inductor on the CPU needs a C++ compiler: install g++ (or set CXX)")
        row("torch threads", report.get("num_threads"))
        if cuda_build and not available:
            hints.append("this torch has CUDA but sees no GPU: check the driver and CUDA_VISIBLE_DEVICES")
        if available and not report.get("triton"):
            hints.append("install triton: inductor generates triton kernels on the GPU")
        for problem in report.get("problems") or ():
            row("problem", problem, "", warn)

    from tui.telemetry.nvml import NvmlSource

    source = NvmlSource()
    try:
        if source.available:
            snapshots = source.snapshot()
            row("NVML (GPU telemetry)", f"available, {len(snapshots)} GPU(s)", "", ok)
            for snap in snapshots:
                memory = f", {snap.mem_total_mb:.0f} MiB" if snap.mem_total_mb else ""
                row(f"  NVML {snap.index}", snap.name, f"{snap.uuid}{memory}")
        else:
            row("NVML (GPU telemetry)", "unavailable", source.reason, warn)
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
    console.print(table)
    for hint in hints:
        console.print(f"hint: {hint}", markup=False, highlight=False)
    return 0 if torch_ok else 1


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

