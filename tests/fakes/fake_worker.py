"""A torch-free stand-in for ``python -m tui.engine.worker`` that sends what a real run sends.

Start it with :func:`tests.fakes.fake_worker_argv` (``[sys.executable, "-S", str(FAKE_WORKER)]``).
It uses the real worker's event channel (:mod:`tui.engine.worker.channel`: events on a private
duplicate of fd 1, fd 1 pointed at stderr, the parent-death signal, the child subreaper, the unbuffered command
read, the stdin watch that ends it when the parent goes) and the real block plan
(:mod:`tui.engine.worker.blocks`): the eager set-up block, the compile block, the fixed
warm-up blocks and the extra ones until the times settle, alternating measured blocks with a
short last one, the ``diagnosing`` phase, a typed ``Measured`` and ``Finished`` (no profile pass: nothing
between them but the trace when asked for, no ``Profiled``). Only the times are made
up (deterministic: eager about 2.0 ms, compiled about 1.0 ms, a tiny seeded wobble) and it
starts in well under 0.2 s.

Choosing a behaviour (first match wins):

1. ``options["params"]["fake_behaviour"]`` in the command (build the RunOptions without
   ``validated()``, which would refuse the unknown parameter);
2. the environment variable ``FAKE_WORKER_BEHAVIOUR``;
3. ``ok``.

Behaviours:

``ok``       a whole run, as above; exit 0.
``slow``     like ``ok`` with a pause between measured rounds (``FAKE_WORKER_DELAY`` seconds,
             default 0.1), so the first block clearly arrives before the end.
``fail``     started, phase building, then ``failed`` (kind ``compile_error``, message
             "compile failed: fake inductor error", a traceback-like detail; both can be
             changed, see below); exit 1.
``crash``    started, phases up to measuring, one block, a line on stderr
             ("Fatal Python error: Segmentation fault (fake)"), then SIGKILL of itself.
``exit``     started, then "RuntimeError: fake worker gave up" on stderr and exit code 3
             without a finished/failed event.
``hang``     started, phase measuring, a profiler's log line on stderr (as kineto writes
             ``USDT:... profiler_start``), one block, then it starts a grandchild in its own
             process group (a sleeping Python) and sleeps forever (SIGTERM ends it).
``stubborn`` like ``hang`` but it ignores SIGTERM (only SIGKILL ends it).
``hang_diagnosing`` like ``ok`` up to phase diagnosing, then, before ``measured``, it hangs as ``hang``
             does after its block (a grandchild in its group, then sleep).
``hang_profiling``  like ``ok`` up to ``measured``, then its profile pass hangs so (a max-autotune
             re-compile that outlasts the run's timeout); with ``profile`` false there is no profile
             pass, and it finishes like ``ok``.
``spam``     writes ~4 MiB to stderr and ~4 MiB through fd 1 (which is stderr), interleaved
             with its events, ends stderr with the line "spam done", then finishes like ``ok``.
``garbage``  writes a non-JSON line and a JSON non-event line on the event channel, then
             finishes like ``ok``.

Other knobs (environment):

``FAKE_WORKER_READY_DELAY``  seconds to sleep before ``ready`` (simulates importing torch). A
                             comma list ("0,1.5") gives the Nth started process the Nth value
                             (the last one repeats); it needs ``FAKE_WORKER_START_LOG``.
``FAKE_WORKER_START_LOG``    a file each start appends one line to (``<pid>``): the count of
                             processes started, and what orders the delays above.
``FAKE_WORKER_DELAY``        seconds between measured rounds (``slow`` defaults to 0.1, others to 0).
``FAKE_WORKER_BLOCK_S``      seconds each measured block lasts (a sleep between its ``t_start`` and
                             ``t_end``, the worker's ``time.monotonic()`` around every block; default 0).
``FAKE_WORKER_GPU_UUID``     reported as ``gpu_uuid`` in ``started``'s env (default none).
``FAKE_WORKER_GPU_NAME``     reported as ``gpu_name`` in ``started``'s env (default none).
``FAKE_WORKER_FAIL_KIND``    ``fail``: the failure kind (default ``compile_error``); the run's parameter
                             ``fake_fail_kind`` first, so one runner's runs can fail in different ways.
``FAKE_WORKER_FAIL_MESSAGE`` ``fail``: the one-line message (default "compile failed: fake inductor error");
                             the run's parameter ``fake_fail_message`` first.
``FAKE_WORKER_GATE``         a path: after the first measured round (``crash``, ``hang``, ``stubborn``:
                             after their one block) the worker waits until that file exists (the
                             test creates it to let the run go on).
``FAKE_WORKER_COMPILE_S``    seconds the ``compiling`` phase lasts (a sleep; default 0).
``FAKE_WORKER_BURN``         ``1``: a measured block keeps a core busy for ``FAKE_WORKER_BLOCK_S`` instead of sleeping.
``FAKE_WORKER_BROKEN_GPU``   a CUDA_VISIBLE_DEVICES value: a worker given it fails at once (``runtime_error``,
                             before ``started``), as on a GPU that cannot be opened.
``COMPILE_LAB_CPUS``         applied as the real worker does (pinned before anything else); ``started``'s env
                             reports the affinity (``cpu_affinity``), the host (``node``) and ``OMP_NUM_THREADS``.
``FAKE_WORKER_TIMES``        a JSON object: per configuration, the compiled side's time (ms, instead of ~1.0) or
                             ``"fail"`` (the run fails as ``fail`` does). Keys: ``mode=<mode>``, ``fullgraph=true``,
                             ``dynamic=false``, ``<inductor option>=<value>`` (values as JSON writes them: ``true``,
                             ``256``, ``"ATEN"`` without quotes); the first key the run's options match wins.
``FAKE_WORKER_ACCURACY``     ``fail``: the accuracy check fails (``passed`` false, compiled 1.0 off eager).
``FAKE_WORKER_CODE``         ``1``: send one ``code`` event (a tiny inductor-like graph, :data:`FAKE_CODE`)
                             after measuring.
``FAKE_WORKER_DAEMON``       a path: while building, start a daemon as a workload may (a double fork into
                             a session of its own that keeps the worker's stdout and stderr open and
                             sleeps), write its pid to that file, then go on. ``FAKE_WORKER_DAEMON_ENV=empty``:
                             the daemon runs ``sleep`` with an empty environment.

Like the real worker and torch: with ``TORCH_TRACE`` set it writes
``$TORCH_TRACE/dedicated_log_torch_trace_fake.log`` (one JSON line with its pid), and with
``options.trace`` and an ``artifacts_dir`` in the command it writes a merged two-side
``trace.json`` there and sends the ``artifact`` event.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tui.engine.measure.clocks import PERF_COUNTER  # noqa: E402  (these imports need the path above)
from tui.engine.options import OptionsError, RunOptions  # noqa: E402
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory  # noqa: E402
from tui.engine.explain.artifacts import capped_code  # noqa: E402
from tui.engine.explain.chrome_trace import merge_traces  # noqa: E402
from tui.engine.protocol import (  # noqa: E402
    ArtifactWritten, BlockTimed, Compiled, Failed, Finished, GraphCoded, Measured, PhaseChanged, Ready, Started,
)
from tui.engine.cpu_list import cpu_list_text  # noqa: E402
from tui.engine.worker import blocks  # noqa: E402
from tui.engine.worker.affinity import pin_to_lane_cpus  # noqa: E402
from tui.engine.worker.channel import (  # noqa: E402
    EventChannel,
    become_subreaper,
    open_channel,
    read_command_line,
    set_parent_death_signal,
    watch_stdin,
)

BEHAVIOURS = ("ok", "slow", "fail", "crash", "exit", "hang", "stubborn", "hang_diagnosing", "hang_profiling", "spam",
              "garbage")
COMPILE_S = 0.25


def _log_start() -> int:
    """Append our pid to FAKE_WORKER_START_LOG; our 0-based start number (0 without a log)."""
    path = os.environ.get("FAKE_WORKER_START_LOG")
    if not path:
        return 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{os.getpid():>10}\n".encode())  # fixed width: the offset counts the starts
        return os.lseek(fd, 0, os.SEEK_CUR) // 11 - 1
    finally:
        os.close(fd)


def _ready_delay(start: int) -> float:
    values = [v for v in os.environ.get("FAKE_WORKER_READY_DELAY", "").split(",") if v.strip()]
    if not values:
        return 0.0
    try:
        return float(values[min(start, len(values) - 1)])
    except ValueError:
        return 0.0


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _spam(chunk_label: str) -> None:
    line = (chunk_label * 64)[:255] + "\n"
    blob = line * 4096  # ~1 MiB
    for _ in range(4):
        os.write(2, blob.encode())
        os.write(1, blob.encode())  # fd 1 is stderr here: must never reach the event channel


def _wait_for_gate() -> None:
    gate = os.environ.get("FAKE_WORKER_GATE")
    while gate and not os.path.exists(gate):
        time.sleep(0.01)


def _start_daemon(pid_file: str) -> None:
    """A daemon of the workload's: double fork, ``setsid``, the pipes kept; its pid written to ``pid_file``."""
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            Path(pid_file + ".tmp").write_text(str(os.getpid()))
            os.replace(pid_file + ".tmp", pid_file)
            if os.environ.get("FAKE_WORKER_DAEMON_ENV") == "empty":
                os.execve("/bin/sleep", ["sleep", "600"], {})
            while True:
                time.sleep(3600)
        os._exit(0)
    os.waitpid(child, 0)
    while not os.path.exists(pid_file):
        time.sleep(0.01)


def _accuracy(passed: bool) -> Accuracy:
    """The accuracy check's result: compiled equal to eager, or 1.0 off it (a miscompile)."""
    err = 0.0 if passed else 1.0
    return Accuracy(max_abs_err=err, max_rel_err=err, atol=1e-5, rtol=1e-5, passed=passed, compared=1,
                    reference="eager")


def _hang(stubborn: bool) -> None:
    import subprocess

    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A grandchild in our process group, like inductor's compile workers: killpg must reach it.
    subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    while True:
        time.sleep(3600)


FAKE_CODE = """# AOT ID: ['0_inference']
cpp_fused_add_mul_sin_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {}
''')
def call(args):
    buf0 = empty_strided_cpu((64, ), (1, ), torch.float32)
    cpp_fused_add_mul_sin_0(args[0], buf0)
    return (buf0, )
"""
"""The code a fake run sends with FAKE_WORKER_CODE=1 (one kernel, ``cpp_fused_add_mul_sin_0``)."""


def _fake_side_trace(side: str) -> dict:
    """A Chrome trace shaped like one side's ``export_chrome_trace`` (a process, a thread, one op)."""
    pid, name = os.getpid(), "aten::add" if side == "eager" else "Torch-Compiled Region: 0/0"
    return {"schemaVersion": 1, "baseTimeNanoseconds": 1_000_000_000, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}},
        {"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": pid, "ts": 10.0, "dur": 5.0, "args": {}},
    ]}


def _torch_trace_log() -> None:
    """What torch does at import with TORCH_TRACE set: a log file in that directory."""
    directory = os.environ.get("TORCH_TRACE")
    if directory:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "dedicated_log_torch_trace_fake.log"), "w") as log:
            log.write(json.dumps({"pid": os.getpid()}) + "\n")


def _settings(options: RunOptions) -> set[str]:
    """The run's options as ``FAKE_WORKER_TIMES`` keys."""
    found = {f"mode={options.mode}", f"fullgraph={json.dumps(options.fullgraph)}",
             f"dynamic={json.dumps(options.dynamic)}"}
    for key, value in options.inductor_options.items():
        found.add(f"{key}={value if isinstance(value, str) else json.dumps(value)}")
    return found


def configured(options: RunOptions) -> tuple[float, bool]:
    """(the compiled side's base time in ms, whether the run fails) from ``FAKE_WORKER_TIMES``."""
    table = json.loads(os.environ.get("FAKE_WORKER_TIMES") or "{}")
    settings = _settings(options)
    for key, value in table.items():
        if key in settings:
            return (1.0, True) if value == "fail" else (float(value), False)
    return 1.0, False


class FakeRun:
    """One fake run: the real phases and block plan, made-up times."""

    def __init__(self, channel: EventChannel, run_id: str | None, options: RunOptions, behaviour: str) -> None:
        self.channel = channel
        self.run_id = run_id
        self.options = options
        self.behaviour = behaviour
        self.delay = _env_float("FAKE_WORKER_DELAY", 0.1 if behaviour == "slow" else 0.0)
        self.block_s = _env_float("FAKE_WORKER_BLOCK_S", 0.0)
        self._index: dict[tuple[str, str], int] = {}
        self.measured = {"eager": 0, "compiled": 0}
        self.artifacts_dir: str | None = None

    def phase(self, name: str) -> None:
        """Announce a phase."""
        self.channel.emit(PhaseChanged(phase=name))

    def block(self, side: str, stage: str, n: int) -> list[float]:
        """Emit one block of ``n`` calls of ``side`` (eager ~2 ms, compiled ~1 ms); its times."""
        index = self._index.get((side, stage), 0)
        self._index[(side, stage)] = index + 1
        base = 2.0 if side == "eager" else configured(self.options)[0]
        seed = self.options.seed
        t_start = time.monotonic()
        ms = [round(base + 0.01 * ((seed + index * 7 + i * 3) % 5), 4) for i in range(n)]
        if stage == "measure" and self.block_s:
            _spend(self.block_s, busy=os.environ.get("FAKE_WORKER_BURN") == "1")
        self.channel.emit(BlockTimed(side=side, stage=stage, index=index, clock=PERF_COUNTER.name, ms=tuple(ms),
                                     host_ms_per_call=round(sum(ms) / len(ms) * 1.05, 4),
                                     t_start=t_start, t_end=time.monotonic()))
        return ms

    def started(self) -> None:
        """The ``started`` event, with the environment the runner set."""
        # torch's defaults (cuDNN TF32 on, matmul TF32 off) unless the precision option set both
        matmul, cudnn = {"ieee": (False, False), "tf32": (True, True)}.get(self.options.precision, (False, True))
        # os.uname().nodename is what socket.gethostname() reads, without importing socket at every start
        env = Env(torch="0.0.0+fake", python=sys.version.split()[0], python_executable=sys.executable,
                  cpu="fake cpu", device=self.options.device, gpu_name=os.environ.get("FAKE_WORKER_GPU_NAME"),
                  gpu_uuid=os.environ.get("FAKE_WORKER_GPU_UUID"), tf32_matmul=matmul, tf32_cudnn=cudnn,
                  float32_matmul_precision="high" if matmul else "highest",
                  cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
                  cuda_device_order=os.environ.get("CUDA_DEVICE_ORDER"), node=os.uname().nodename,
                  cpu_affinity=cpu_list_text(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                  num_threads=int(os.environ.get("OMP_NUM_THREADS", "0")) or None)
        self.channel.emit(Started(run_id=self.run_id, env=env, options=self.options.to_dict()))

    def compile(self) -> None:
        """The eager set-up block, then the compile block and ``compiled``."""
        self.block("eager", "warmup", blocks.eager_setup_calls(1))
        if self.behaviour == "garbage":
            os.write(self.channel.fd, b"this is not json\n")
            os.write(self.channel.fd, b'{"hello": "not an event"}\n')
        self.phase("compiling")
        time.sleep(_env_float("FAKE_WORKER_COMPILE_S", 0.0))
        self.channel.emit(BlockTimed(side="compiled", stage="compile", index=0, clock=PERF_COUNTER.name,
                                     ms=(COMPILE_S * 1e3,), host_ms_per_call=COMPILE_S * 1e3))
        self.channel.emit(Compiled(compile_s=COMPILE_S, diagnostics=self.diagnostics()))

    def warm_up(self) -> None:
        """The fixed warm-up blocks of both sides, then extra ones until each side settles."""
        size, warmup = self.options.block_size, self.options.warmup
        last: dict[str, list[float]] = {}
        for n in blocks.chunks(blocks.compiled_warmup_calls(warmup, 1), size):
            last["compiled"] = self.block("compiled", "warmup", n)
        for n in blocks.chunks(warmup, size):
            last["eager"] = self.block("eager", "warmup", n)
        if warmup > 0:
            for side in ("compiled", "eager"):
                settler = blocks.Settler(last.get(side))
                for _ in range(blocks.WARMUP_MAX_EXTRA_BLOCKS):
                    if settler.add(self.block(side, "warmup", blocks.settle_block_size(size))):
                        break

    def measure(self) -> None:
        """Alternating measured rounds (the last one short when block_size does not divide iters)."""
        options, first, round_index = self.options, True, 0
        while min(self.measured.values()) < options.iters:
            # The real worker's plan: which side goes first alternates round by round.
            for side, n in blocks.measure_round(options.iters, options.block_size, self.measured, round_index):
                self.block(side, "measure", n)
                self.measured[side] += n
            if first and self.behaviour == "spam":
                _spam("x")
            if first:
                _wait_for_gate()
            first, round_index = False, round_index + 1
            if self.delay:
                time.sleep(self.delay)

    def diagnostics(self) -> Diagnostics:
        """A clean compile: one graph, no break, no recompile."""
        return Diagnostics(graph_breaks=0, unique_graphs=1, recompiles=0, frames_total=1, frames_ok=1)

    def finish(self) -> None:
        """``diagnosing``, the code when asked for, ``measured`` with typed payloads, the trace when asked for, then
        ``finished`` (``hang_diagnosing`` hangs before ``measured``, ``hang_profiling`` after it)."""
        self.phase("diagnosing")
        if self.behaviour == "hang_diagnosing":
            _hang(stubborn=False)
        if os.environ.get("FAKE_WORKER_CODE") == "1":
            self.channel.emit(GraphCoded(graph=capped_code(0, "0/0", FAKE_CODE, len(FAKE_CODE))))
        if self.options.torch_trace and os.environ.get("TORCH_TRACE"):
            self.channel.emit(ArtifactWritten(kind="torch_trace", name=os.path.basename(os.environ["TORCH_TRACE"]),
                                              size_bytes=1))
        self.channel.emit(Measured(
            compile_s=COMPILE_S,
            diagnostics=self.diagnostics(),
            accuracy=_accuracy(os.environ.get("FAKE_WORKER_ACCURACY") != "fail"),
            memory=Memory(),
            iters=dict(self.measured),
        ))
        if self.behaviour == "hang_profiling" and self.options.profile:
            _hang(stubborn=False)
        if self.options.trace and self.artifacts_dir:
            target = os.path.join(self.artifacts_dir, "trace.json")
            with open(target, "w") as stream:
                json.dump(merge_traces({side: _fake_side_trace(side) for side in ("eager", "compiled")}), stream)
            self.channel.emit(ArtifactWritten(kind="trace", name="trace.json", size_bytes=os.path.getsize(target)))
        self.channel.emit(Finished())

    def failure(self, what: str) -> str | None:
        """``fail``'s kind or message: the run's ``fake_fail_<what>`` parameter, else ``FAKE_WORKER_FAIL_<WHAT>``."""
        return self.options.params.get(f"fake_fail_{what}") or os.environ.get(f"FAKE_WORKER_FAIL_{what.upper()}")

    def execute(self) -> int:
        """Run the behaviour; returns the exit code."""
        self.started()
        self.phase("building")
        if os.environ.get("FAKE_WORKER_DAEMON"):
            _start_daemon(os.environ["FAKE_WORKER_DAEMON"])
        if self.behaviour == "fail" or configured(self.options)[1]:
            self.channel.emit(
                Failed(
                    kind=str(self.failure("kind") or "compile_error"),
                    message=str(self.failure("message") or "compile failed: fake inductor error"),
                    detail='Traceback (most recent call last):\n  File "fake.py", line 1\nRuntimeError: fake '
                           'inductor error\n',
                )
            )
            return 1
        if self.behaviour == "exit":
            sys.stderr.write("Traceback (most recent call last):\n  File \"fake.py\", line 3, in <module>\n")
            sys.stderr.write("RuntimeError: fake worker gave up\n")
            sys.stderr.flush()
            return 3
        self.compile()
        self.phase("warming_up")
        if self.behaviour in ("crash", "hang", "stubborn"):
            self._die()
        self.warm_up()
        self.phase("checking_accuracy")
        self.phase("measuring")
        self.measure()
        self.finish()
        if self.behaviour == "spam":
            sys.stderr.write("spam done\n")
            sys.stderr.flush()
        return 0

    def _die(self) -> None:
        """``crash``, ``hang``, ``stubborn``: one measured block, then never a finished event."""
        self.phase("measuring")
        if self.behaviour != "crash":  # before the block: a parent that has seen the block has this line in the pipe
            sys.stderr.write(f"USDT:fake {os.getpid()}:{os.getpid()} SyncActivityProfilerHandler.cpp:52] "
                             "profiler_start\n")
            sys.stderr.flush()
        self.block("eager", "measure", 5)
        _wait_for_gate()
        if self.behaviour == "crash":
            sys.stderr.write("some noise\nFatal Python error: Segmentation fault (fake)\n\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        _hang(stubborn=self.behaviour == "stubborn")


def _spend(seconds: float, busy: bool) -> None:
    """Sleep, or with ``busy`` keep one core busy, for ``seconds``."""
    if not busy:
        time.sleep(seconds)
        return
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> int:
    """Run the fake worker (see the module docstring)."""
    set_parent_death_signal()
    become_subreaper()
    channel = open_channel()
    pin_to_lane_cpus()
    _torch_trace_log()
    ready_delay = _ready_delay(_log_start())
    if ready_delay:
        time.sleep(ready_delay)
    channel.emit(Ready(pid=os.getpid(), python=sys.executable, python_version=sys.version.split()[0],
                       torch="0.0.0+fake"))
    line = read_command_line(0)
    if not line.strip():
        return 0
    watch_stdin(0)
    command = json.loads(line)
    raw = command.get("options") or {}
    behaviour = str((raw.get("params") or {}).get("fake_behaviour") or os.environ.get("FAKE_WORKER_BEHAVIOUR") or "ok")
    try:
        options = RunOptions.from_dict(raw)
    except (OptionsError, TypeError) as exc:
        channel.emit(Failed(kind="bad_options", message=f"options: {exc}"))
        return 1
    if behaviour not in BEHAVIOURS:
        channel.emit(Failed(kind="bad_options", message=f"fake_behaviour {behaviour!r} is unknown"))
        return 1
    broken = os.environ.get("FAKE_WORKER_BROKEN_GPU")
    if broken and os.environ.get("CUDA_VISIBLE_DEVICES") == broken:
        channel.emit(Failed(kind="runtime_error", message=f"CUDA error: the GPU {broken} could not be opened (fake)"))
        return 1
    run = FakeRun(channel, command.get("run_id"), options, behaviour)
    run.artifacts_dir = command.get("artifacts_dir")
    return run.execute()


if __name__ == "__main__":
    raise SystemExit(main())
