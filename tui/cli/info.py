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
from tui.logs import log_file
from tui.paths import compile_cache_dir
from tui.present.format import or_missing

__all__ = ["cmd_workloads", "cmd_env"]

ENVCHECK_TIMEOUT_S = 600


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def cmd_workloads() -> int:
    """List the built-in workloads, their parameters and limits, and how to bring your own."""
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
        table.add_row(
            Text(spec.name, style="bold"), "", "", "", "", spec.description + train, end_section=not spec.params
        )
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


class _EnvTable:
    """The rows of ``compile-lab env``, with the hints they lead to."""

    OK, BAD, WARN = "[green]", "[red]", "[yellow]"

    def __init__(self) -> None:
        from rich.table import Table

        self.table = Table(title="compile-lab environment", title_justify="left", show_header=False)
        self.table.add_column("what", style="bold")
        self.table.add_column("value", overflow="fold")  # paths whole, never cut with …
        self.table.add_column("note", style="dim", overflow="fold")  # an interpreter's path is the note: whole too
        self.hints: list[str] = []

    def row(self, what: str, value: Any, note: str = "", style: str = "") -> None:
        """One row; text is escaped, never read as markup."""
        text = or_missing(value)
        self.table.add_row(what, f"{style}{_escape(text)}" if style else _escape(text), _escape(note))

    def torch(self, report: dict[str, Any] | None, error: str) -> bool:
        """The worker interpreter's torch, CUDA, triton and C++ compiler; True when torch imports."""
        if report is None or report.get("torch") is None:
            if report is None:
                self.row("torch", "the check failed", error, self.BAD)
            else:
                self.row("python (worker)", report.get("python"), report.get("python_executable") or "")
                self.row("torch", "not importable", report.get("torch_error") or "", self.BAD)
            self.hints.append("install torch into the interpreter the workers use (see --python)")
            return False
        self.row("python (worker)", report.get("python"), report.get("python_executable") or "")
        self.row("torch", report["torch"], f"imported in {report.get('torch_import_s')} s", self.OK)
        self._cuda(report)
        self._compilers(report)
        self.row("torch threads", report.get("num_threads"))
        if report.get("cuda_build") and not report.get("cuda_available"):
            self.hints.append("this torch has CUDA but sees no GPU: check the driver and CUDA_VISIBLE_DEVICES")
        if report.get("cuda_available") and not report.get("triton"):
            self.hints.append("install triton: inductor generates triton kernels on the GPU")
        for problem in report.get("problems") or ():
            self.row("problem", problem, "", self.WARN)
        return True

    def _cuda(self, report: dict[str, Any]) -> None:
        available = report.get("cuda_available")
        self.row("CUDA build", report.get("cuda_build") or "none (CPU-only build)")
        self.row("CUDA available", "yes" if available else "no", "", self.OK if available else self.WARN)
        self.row("GPU count", report.get("gpu_count"))
        for gpu in report.get("gpus") or ():
            self.row(f"  cuda:{gpu.get('index')}", gpu.get("name"),
                     f"{gpu.get('uuid')}, sm {gpu.get('capability')}, {gpu.get('memory_mb')} MiB")
        self.row("cuDNN", report.get("cudnn"))

    def _compilers(self, report: dict[str, Any]) -> None:
        cuda_build = report.get("cuda_build")
        triton_note = (
            "" if report.get("triton") else ("inductor needs it on a GPU" if cuda_build else "not needed on the CPU")
        )
        self.row("triton", report.get("triton") or "not installed", triton_note)
        cxx, cxx_path = report.get("cxx"), report.get("cxx_path")
        if cxx_path:
            self.row(
                "C++ compiler (inductor, CPU)",
                f"{cxx} ({cxx_path})",
                report.get("cxx_version") or "version unknown",
                self.OK,
            )
        else:
            self.row("C++ compiler (inductor, CPU)", cxx or "none", "not found on PATH", self.BAD)
            self.hints.append("inductor on the CPU needs a C++ compiler: install g++ (or set CXX)")

    def data_dir(self) -> None:
        """Where compile-lab keeps its data and how big it is (``compile-lab prune`` frees space)."""
        from tui.engine.explain.artifacts import format_bytes
        from tui.engine.store.prune import data_cap, data_usage

        usage = data_usage()
        cap = f" of a {format_bytes(usage.cap_bytes)} cap" if usage.cap_bytes else ", no cap"
        self.row("data dir", usage.path, f"{format_bytes(usage.total_bytes)}: runs {format_bytes(usage.runs_bytes)}"
                                         f"{cap}, history {format_bytes(usage.history_bytes)}, exports "
                                         f"{format_bytes(usage.exports_bytes)}; compile-lab prune frees space")
        problem = data_cap()[1]
        if problem:
            self.hints.append(problem)

    def compile_cache(self) -> None:
        """Where the workers' inductor caches are and how big (nothing prunes them: they can always be deleted)."""
        from tui.engine.explain.artifacts import format_bytes
        from tui.engine.store.prune import tree_bytes

        folder = compile_cache_dir()
        self.row("compile cache", str(folder), f"{format_bytes(tree_bytes(folder))}: the runs' inductor caches, one "
                                               "folder per set of precision flags; safe to delete")

    def nvml(self) -> None:
        """What NVML sees (the GPU pane's source), or why it is unavailable."""
        from tui.telemetry.nvml import NvmlSource

        source = NvmlSource()
        try:
            if not source.available:
                self.row("NVML (GPU telemetry)", "unavailable", source.reason, self.WARN)
                return
            snapshots = source.snapshot()
            self.row("NVML (GPU telemetry)", f"available, {len(snapshots)} GPU(s)", "", self.OK)
            for snap in snapshots:
                memory = f", {snap.mem_total_mb:.0f} MiB" if snap.mem_total_mb else ""
                self.row(f"  NVML {snap.index}", snap.name, f"{snap.uuid}{memory}")
        finally:
            close = getattr(source, "close", None)
            if callable(close):
                close()


def cmd_env(args: argparse.Namespace) -> int:
    """Check torch (in a subprocess of the worker's interpreter), CUDA, triton, the C++ compiler and NVML."""
    from rich.console import Console

    console = Console()
    err = Console(stderr=True)
    with err.status("checking torch in a subprocess (importing torch takes a few seconds)..."):
        report, error = _envcheck(args.python)
    env = _EnvTable()
    env.row("compile-lab", __version__)
    env.row("python (CLI)", sys.version.split()[0], sys.executable)
    torch_ok = env.torch(report, error)
    env.nvml()
    env.data_dir()
    env.row("log file", str(log_file()), "compile-lab --debug also logs to stderr")
    env.compile_cache()
    console.print(env.table)
    for hint in env.hints:
        console.print(f"hint: {hint}", markup=False, highlight=False)
    return 0 if torch_ok else 1


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

