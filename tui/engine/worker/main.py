"""The worker's run: read one command, check it against torch, measure, report.

``python -m tui.engine.worker`` claims the event channel (:mod:`.channel`) before this
module imports torch, then calls :func:`main`. The worker emits ``ready``, reads ONE
line ``{"command": "run", "run_id", "options"}`` from stdin (EOF first: exit 0 quietly,
a spare that was not needed), and drives the phases: building, compiling, warming_up,
checking_accuracy, measuring, diagnosing. It ends with ``finished`` (exit 0) or
``failed`` (exit 1); a traceback only ever reaches stderr, and ``failed.detail``. What it measured
goes out in ``measured`` before the profile pass, so a run stopped in that pass keeps it.

By hand: ``python -m tui.engine.worker < command.json`` (a regular file; a pipe that
closes right after the command ends the run, since EOF on stdin means the parent left).
Set ``COMPILE_LAB_EXPLAIN=1`` for a separate ``torch._dynamo.explain`` pass after measuring.
Unless ``profile`` is false, a profile pass (:mod:`.profile`) follows ``measured``: event ``profiled``.
Inductor's output code of every graph compiled from the measured compile to the end of measuring is
sent after measuring, one ``code`` event per graph (:mod:`.artifacts`); with ``trace`` the profile
pass is written as a Chrome trace into the command's ``artifacts_dir`` (event ``artifact``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
from typing import Any

import torch

from tui import logs
from tui.engine.catalog import is_user_workload
from tui.engine.options import OptionsError, RunOptions
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.explain.kernels import Profile
from tui.engine.protocol import (
    ArtifactWritten,
    Compiled,
    Event,
    Failed,
    Finished,
    GraphCoded,
    Measured,
    PhaseChanged,
    Profiled,
    Ready,
    Started,
    WorkerWarning,
)
from tui.engine.worker import compile_cache, diagnostics, envinfo, precision
from tui.engine.worker.accuracy import judge, tolerances
from tui.engine.worker.artifacts import ChromeTraceWriter, CodeCapture
from tui.engine.worker.channel import (
    EventChannel,
    become_subreaper,
    open_channel,
    read_command_line,
    set_parent_death_signal,
    watch_stdin,
)
from tui.engine.worker.failures import Failure, RunFailed, classify, one_line
from tui.engine.worker.flops import count_flops
from tui.engine.worker.measure import L2_FLUSH_BYTES, Benchmark, make_compile_fn
from tui.engine.worker.setup import (
    apply_memory_limit, check_backend, check_dtype, check_inductor_options, import_ahead, resolve_device,
)  # fmt: skip

__all__ = ["main", "WorkerRun", "DTYPES"]

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: Set to 1 to add a separate ``torch._dynamo.explain`` pass after measuring (phase diagnosing).
EXPLAIN_ENV = "COMPILE_LAB_EXPLAIN"


def main(channel: EventChannel | None = None, affinity_problem: str | None = None) -> int:
    """Run the worker; returns the exit code (0 after ``finished`` or a quiet EOF, 1 after ``failed``).

    ``affinity_problem``: why the lane's CPU pinning (set before torch was imported) did not apply.
    """
    if channel is None:
        logs.setup_worker()  # to stderr: the parent owns the log file
        set_parent_death_signal()
        become_subreaper()
        channel = open_channel()
    import_ahead()
    channel.emit(Ready(
        pid=os.getpid(),
        python=sys.executable,
        python_version=sys.version.split()[0],
        torch=torch.__version__,
    ))
    line = read_command_line(0)
    if not line.strip():
        return 0
    # the parent keeps our stdin open for the whole run: EOF now means it went away
    watch_stdin(0)
    run = WorkerRun(channel)
    run.setup_problems = [affinity_problem] if affinity_problem else []
    return run.execute(line)


class WorkerRun:
    """One run from command line to ``finished`` or ``failed``."""

    def __init__(self, channel: EventChannel) -> None:
        self.channel = channel
        self.options: RunOptions | None = None
        self.stage = "setup"
        self.warnings: list[str] = []
        self.setup_problems: list[str] = []
        self.bench: Benchmark | None = None
        self._cold_dir: str | None = None
        self.artifacts_dir: str | None = None
        self.capture = CodeCapture()
        self._code_sent = False

    # ----- events --------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Send one event."""
        self.channel.emit(event)

    def warn(self, message: str) -> None:
        """Send a one-line warning (once) and keep it for ``measured``."""
        message = one_line(message)
        if message not in self.warnings:
            self.warnings.append(message)
            self.emit(WorkerWarning(message=message))

    def phase(self, name: str) -> None:
        """Announce a phase."""
        self.emit(PhaseChanged(phase=name))

    # ----- the run -------------------------------------------------------

    def execute(self, line: bytes) -> int:
        """Run the command in ``line``; returns the exit code."""
        cache_env = compile_cache.saved_env()
        try:
            self._run(line)
        # every failure is reported as an event, never as a traceback on stdout; a workload that calls
        # sys.exit or raises KeyboardInterrupt is a failure of its own too, not a worker "exited with code 0"
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the failed event carries the traceback
            stage = self.bench.stage if self.bench is not None and self.stage == "bench" else self.stage
            options = self.options
            failure = classify(exc, stage, backend=options.backend if options else "",
                               fullgraph=bool(options and options.fullgraph),
                               memory_limit_gb=options.memory_limit_gb if options else None)
            self.capture.remove()
            self._send_code()  # what compiled before the failure: often what a reader needs
            self._fail(failure)
            return 1
        finally:
            self.capture.remove()
            if self._cold_dir:
                shutil.rmtree(self._cold_dir, ignore_errors=True)
            compile_cache.restore_env(cache_env)
        return 0

    def _fail(self, failure: Failure) -> None:
        sys.stderr.write(failure.detail if failure.detail.endswith("\n") else failure.detail + "\n")
        sys.stderr.flush()
        self.emit(Failed(kind=failure.kind, message=failure.message, detail=failure.detail))

    def _parse(self, line: bytes) -> tuple[str | None, RunOptions]:
        try:
            command = json.loads(line)
        except ValueError as exc:
            raise RunFailed("bad_options", f"command: not JSON ({exc})") from None
        if (not isinstance(command, dict) or command.get("command") != "run"
                or not isinstance(command.get("options"), dict)):
            raise RunFailed("bad_options", 'command: expected {"command": "run", "run_id": ..., "options": {...}}')
        try:
            options = RunOptions.from_dict(command["options"]).validated()
        except OptionsError:
            raise
        except (TypeError, ValueError) as exc:  # a value of the wrong type that validation tripped over
            raise RunFailed("bad_options", f"options: {type(exc).__name__}: {exc}") from None
        folder = command.get("artifacts_dir")
        self.artifacts_dir = folder if isinstance(folder, str) and folder else None
        return command.get("run_id"), options

    def _prepare(self, options: RunOptions) -> tuple[torch.device, torch.dtype]:
        """Memory limit, cold caches, device, dtype, backend, precision and seed: all before any workload code."""
        if options.memory_limit_gb is not None:
            apply_memory_limit(options.memory_limit_gb)
        if options.cold_compile:
            self._cold_dir = tempfile.mkdtemp(prefix="compile-lab-cold-")
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(self._cold_dir, "inductor")
            os.environ["TRITON_CACHE_DIR"] = os.path.join(self._cold_dir, "triton")
        device = resolve_device(options.device)
        dtype = DTYPES[options.dtype]
        check_dtype(options.dtype, dtype, device)
        if not is_user_workload(options.workload):
            check_backend(options.backend)  # a user's file may register its backend: checked after loading
        precision.apply(options.precision)  # the same flags for both sides; default: torch's own, untouched
        torch.manual_seed(options.seed)
        return device, dtype

    def _run(self, line: bytes) -> None:
        run_id, options = self._parse(line)
        if options.inductor_options:  # each value in the kind torch declares for it (a number for a float, ...)
            options = dataclasses.replace(options, inductor_options=check_inductor_options(options.inductor_options))
        self.options = options
        device, dtype = self._prepare(options)
        env = envinfo.collect(device)
        self.emit(Started(run_id=run_id, env=env, options=options.to_dict()))
        self._early_warnings(options, device)

        self.phase("building")
        self.stage = "building"
        from tui.engine.worker.workloads import build_workload

        built = build_workload(options, device, dtype)
        _check_built(built)
        if is_user_workload(options.workload):
            check_backend(options.backend)
        self._flags_kept(env)
        if not options.cold_compile:  # after building: a user's file may have set flags of its own
            compile_cache.use(precision.read_flags())
        bench = Benchmark(built, options, device, self.emit, self.warn)
        self.bench, self.stage = bench, "bench"
        bench.eager_setup()

        self.phase("compiling")
        before = diagnostics.snapshot()
        self.capture.install()
        compile_s = bench.compile(make_compile_fn(options))
        compiled_diag = diagnostics.report(before)
        self.emit(Compiled(compile_s=compile_s, diagnostics=compiled_diag))

        self.phase("warming_up")
        bench.warm_up()
        after_warmup = diagnostics.snapshot()
        self._diagnostic_warnings(diagnostics.report(before, after_warmup), options, device)

        self.phase("checking_accuracy")
        accuracy = self._accuracy(bench, options, dtype, built.train)

        self.phase("measuring")
        bench.measure()
        after_measure = diagnostics.snapshot()
        self.capture.remove()

        self.phase("diagnosing")
        self.stage = "other"
        self._send_code()
        report = self._final_diagnostics(bench, options, device, before, after_warmup, after_measure)
        flops = self._flops(built)
        if os.environ.get(EXPLAIN_ENV) == "1" and not built.train:
            report = dataclasses.replace(
                report, explain=diagnostics.explain_pass(built.eager_step, (built.input_sets[0],)))
        self.emit(Measured(
            compile_s=compile_s,
            diagnostics=report,
            accuracy=accuracy,
            memory=Memory(eager_peak_mb=bench.peak_mb["eager"], compiled_peak_mb=bench.peak_mb["compiled"],
                          l2_flush_buffer_mb=L2_FLUSH_BYTES / 2**20 if bench.cuda and options.l2_flush else None),
            flops_per_call=flops,
            bytes_per_call=built.bytes_per_call,
            warnings=tuple(self.warnings),
            iters={"eager": bench.measured["eager"], "compiled": bench.measured["compiled"]},
        ))
        self.emit(Profiled(profile=self._profile(bench, options, built)))  # re-compiles: minutes with max-autotune
        self.emit(Finished())

    # ----- pieces --------------------------------------------------------

    def _final_diagnostics(self, bench: Benchmark, options: RunOptions, device: torch.device,
                           before: diagnostics.Snapshot, after_warmup: diagnostics.Snapshot,
                           after_measure: diagnostics.Snapshot) -> Diagnostics:
        """The whole run's diagnostics, with what measuring alone recompiled (and warnings about both)."""
        during_measure = diagnostics.report(after_warmup, after_measure).recompiles
        report = dataclasses.replace(diagnostics.report(before, after_measure),
                                     recompiles_during_measure=during_measure,
                                     fail_on_recompile_stance=bench.stance_used)
        self._diagnostic_warnings(report, options, device)
        if during_measure:
            self.warn(f"recompiled {during_measure} time(s) during measurement: "
                      "those compiled blocks include compile time")
        return report

    def _profile(self, bench: Benchmark, options: RunOptions, built: Any) -> Profile:
        """The profile pass (after every timing block and the diagnostics: it re-compiles), or why it did not run."""
        if not options.profile:
            return Profile(available=False, why="skipped (profile: false)")
        from tui.engine.worker.profile import run_profile

        writer = ChromeTraceWriter(self.artifacts_dir) if options.trace and self.artifacts_dir else None
        if options.trace and writer is None:
            self.warn("trace: the command named no data folder (artifacts_dir), so no trace was written")
        result = run_profile(built, make_compile_fn(options), bench.cuda, prepare=bench.mark_step, on_trace=writer)
        if not result.available:
            self.warn(f"profile unavailable: {result.why}")
        if writer is not None:
            name = writer.finish()
            if name is not None:
                self.emit(ArtifactWritten(kind="trace", name=name, size_bytes=writer.written or 0))
            elif result.available:
                self.warn(f"trace: {writer.why}")
        return result

    def _send_code(self) -> None:
        """Inductor's output code of each graph compiled so far, one event each (once per run)."""
        if self._code_sent:
            return
        self._code_sent = True
        if self.capture.why and self.options is not None and self.options.backend == "inductor":
            self.warn(f"generated code not kept: {self.capture.why}")
        for graph in self.capture.graphs():
            self.emit(GraphCoded(graph=graph))
        self._note_torch_trace()

    def _note_torch_trace(self) -> None:
        """Say where torch's structured logs go (TORCH_TRACE, set by the runner in the run's folder)."""
        directory = os.environ.get("TORCH_TRACE")
        if not (self.options is not None and self.options.torch_trace and directory and os.path.isdir(directory)):
            return
        size = sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())
        self.emit(ArtifactWritten(kind="torch_trace", name=os.path.basename(os.path.normpath(directory)),
                                  size_bytes=size))

    def _flops(self, built: Any) -> float | None:
        """FLOPs per call (None when they cannot be counted; a warning says why)."""
        flops, flop_warning = count_flops(built.flops_fn, built.input_sets[0])
        if flop_warning:
            self.warn(flop_warning)
        return flops

    def _early_warnings(self, options: RunOptions, device: torch.device) -> None:
        for problem in self.setup_problems:  # found before torch was imported (CPU pinning)
            self.warn(problem)
        if options.torch_trace:
            self.warn("torch_trace: compile_s includes torch's structured logging to TORCH_TRACE"
                      if os.environ.get("TORCH_TRACE") else "torch_trace: TORCH_TRACE was not set for this worker")
        if device.type == "cpu":
            if options.mode == "reduce-overhead" or options.backend == "cudagraphs":
                self.warn("CUDA graphs were skipped on the CPU: reduce-overhead ran as plain inductor")
            if options.l2_flush:
                self.warn("l2_flush applies to CUDA only: it was ignored on the CPU")
        elif options.l2_flush:
            self.warn("l2_flush: each iteration zeroes 256 MB first, outside the CUDA events; "
                      "host_ms_per_call includes the flush")

    def _flags_kept(self, env: Env) -> None:
        """Warn when building the workload changed the TF32 flags the ``started`` event reported."""
        now = precision.read_flags()
        changed = [f"{name} {_flag_text(getattr(env, name))} -> {_flag_text(now[name])}"
                   for name in precision.FLAG_NAMES if getattr(env, name) != now[name]]
        if changed:
            self.warn(f"the workload changed torch's precision flags while it was built ({', '.join(changed)}): "
                      "both sides ran with the new ones; the run's environment shows those before")

    def _diagnostic_warnings(self, report: Diagnostics, options: RunOptions, device: torch.device) -> None:
        if report.recompile_limit_hit:
            self.warn(diagnostics.RECOMPILE_LIMIT_WARNING)
        if diagnostics.no_graph(report):
            self.warn(diagnostics.NO_GRAPH_WARNING)
        if device.type == "cuda" and report.cudagraph_skips:
            reasons = "; ".join(report.cudagraph_skip_reasons) or "see stderr"
            self.warn(f"CUDA graphs were skipped {report.cudagraph_skips} time(s) ({reasons})")
        hits = report.fxgraph_cache_hit or 0
        if hits and not options.cold_compile:
            self.warn(f"compile_s came from a warm inductor cache ({hits} FX graph cache hit(s)): "
                      "cold_compile measures a cold start")

    def _accuracy(self, bench: Benchmark, options: RunOptions, dtype: torch.dtype, train: bool) -> Accuracy:
        """Eager against itself, then compiled against eager (:func:`.accuracy.judge`); its warnings sent."""
        outputs = bench.accuracy_outputs()
        tf32 = precision.tf32_in_effect(precision.read_flags(), bench.device)  # the flags in effect, not the option
        atol, rtol = tolerances(dtype, tf32=tf32, mode=options.mode, train=train)
        result, warnings = judge(outputs, atol, rtol)
        del outputs
        for warning in warnings:
            self.warn(warning)
        return result


def _flag_text(value: Any) -> str:
    return "unknown" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _check_built(built: Any) -> None:
    """A BuiltWorkload must have input sets (and one label per set, if labels)."""
    sets = getattr(built, "input_sets", None)
    if not sets:
        raise RunFailed("workload_error", "the workload has no input sets")
    labels = getattr(built, "labels", None)
    if labels is not None and len(labels) != len(sets):
        raise RunFailed("workload_error", f"the workload has {len(labels)} labels for {len(sets)} input sets")
