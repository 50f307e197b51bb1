"""The real worker as a subprocess: ``python -m tui.engine.worker``, one command on stdin, events on stdout.

Every test keeps the worker small (eager backend, tiny tensors) except the one inductor run.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tui.engine.options import RunOptions
from tui.engine.payloads import Memory
from tui.engine.measure.clocks import PERF_COUNTER
from tui.engine.protocol import (
    FAILURE_KINDS, PROTOCOL_VERSION, BlockTimed, Compiled, Event, Failed, Finished, Measured, decode,
)

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.torch]  # every test starts a real worker process

REPO = Path(__file__).resolve().parents[1]
EVENT_TIMEOUT_S = 120.0


class WorkerProcess:
    """A real worker with helpers to send its command and read its events as they arrive."""

    def __init__(self, tmp_path: Path, pass_fds: tuple[int, ...] = (), env: dict[str, str] | None = None) -> None:
        self.stderr_path = tmp_path / f"worker-stderr-{time.monotonic_ns()}.txt"
        self._stderr = open(self.stderr_path, "wb")
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.engine.worker"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            pass_fds=pass_fds,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.raw_lines: list[bytes] = []

    def send(self, options: RunOptions | dict, run_id: str = "test-run") -> None:
        """Write the run command (stdin stays open, as the runner keeps it)."""
        data = options.to_dict() if isinstance(options, RunOptions) else options
        line = json.dumps({"command": "run", "run_id": run_id, "options": data}) + "\n"
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def next_event(self, timeout: float = EVENT_TIMEOUT_S) -> Event | None:
        """The next event (decoded; a bad line fails the test), or None at EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise AssertionError(f"no event within {timeout} s; stderr:\n{self.stderr()[-3000:]}")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                if self._buffer:
                    raise AssertionError(f"unterminated last line: {self._buffer[:200]!r}")
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.raw_lines.append(line)
        return decode(line)

    def events_until_end(self, timeout: float = EVENT_TIMEOUT_S) -> list[Event]:
        """Events up to and including ``finished``/``failed`` (or EOF)."""
        events = []
        while True:
            event = self.next_event(timeout)
            if event is None:
                return events
            events.append(event)
            if isinstance(event, (Finished, Failed)):
                return events

    def finish(self, timeout: float = 60.0) -> int:
        """Close stdin after the end event, drain stdout, return the exit code."""
        rest = []
        while (event := self.next_event(timeout)) is not None:
            rest.append(event)
        assert not rest, f"events after the end: {rest}"
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        self._stderr.close()
        self._selector.close()


class _NextWorker:
    """A plain worker (no extra fds, no extra environment) started ahead for the next test of this module.

    It imports torch while the current test's worker runs (on the other core), then waits for its
    command like the runner's warm spare: the next test still gets a fresh process that ran nothing.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.worker: WorkerProcess | None = None

    def take(self) -> WorkerProcess | None:
        worker, self.worker = self.worker, None
        return worker

    def start(self) -> None:
        if self.worker is None:
            self.worker = WorkerProcess(self.directory)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def _a_later_test_here_wants_a_worker(item: pytest.Item) -> bool:
    """Whether a test after ``item`` in this session's order, in this module, uses ``worker_factory``."""
    items = item.session.items
    later = items[items.index(item) + 1:] if item in items else []
    return any(other.module is item.module and "worker_factory" in getattr(other, "fixturenames", ())
               for other in later)


@pytest.fixture(scope="module")
def next_worker(tmp_path_factory):
    ahead = _NextWorker(tmp_path_factory.mktemp("next-worker"))
    yield ahead
    ahead.close()


@pytest.fixture
def worker_factory(request, tmp_path, next_worker):
    started: list[WorkerProcess] = []

    def make(pass_fds: tuple[int, ...] = (), env: dict[str, str] | None = None) -> WorkerProcess:
        plain = not pass_fds and not env
        worker = (next_worker.take() if plain else None) or WorkerProcess(tmp_path, pass_fds, env)
        started.append(worker)
        if _a_later_test_here_wants_a_worker(request.node):
            next_worker.start()
        return worker

    yield make
    for worker in started:
        worker.close()


NOISY_GATED_WORKLOAD = textwrap.dedent(
    '''
    """A user workload that prints to stdout from Python and from C, and can pause on one call."""
    import ctypes
    import os
    import sys

    import torch

    CALLS = [0]
    GATE = {"fd": -1, "at": -1}
    LIBC = ctypes.CDLL(None)


    @torch._dynamo.disable
    def _noise_and_gate(x):
        CALLS[0] += 1
        print("python print noise {\\"event\\": \\"finished\\"}")
        sys.stdout.flush()
        os.write(1, b"fd 1 noise " + b"x" * 5000 + b"\\n")
        LIBC.printf(b"c stdio printf noise\\n")
        LIBC.fflush(None)
        if CALLS[0] == GATE["at"]:
            os.read(GATE["fd"], 1)  # the test releases us after it saw a measured block
        return x


    def fn(x):
        return _noise_and_gate(x) * 2 + 1


    def make_workload(device, dtype, gate_fd="-1", gate_at="-1"):
        GATE["fd"], GATE["at"] = int(gate_fd), int(gate_at)
        return fn, (torch.randn(8, 8, device=device, dtype=dtype),)
    '''
)


def _kinds(events: list[Event]) -> list[str]:
    return [e.NAME for e in events]


def test_eager_run_streams_blocks_in_order_and_survives_stdout_noise(worker_factory, tmp_path):
    """Blocks arrive while the worker is still measuring; prints to fd 1 never reach the events."""
    workload = tmp_path / "noisy.py"
    workload.write_text(NOISY_GATED_WORKLOAD)
    gate_read, gate_write = os.pipe()
    try:
        # call 25 lies in the measuring phase: 3 set-up + 1 compile + 3 warm-up + the accuracy calls (the
        # fp64 copy's one more since it came) + 2 x 5 measured
        options = RunOptions(workload=f"{workload}", backend="eager", warmup=0, iters=20, block_size=5,
                             time_budget_s=3600.0,  # the blocks of iters alone: no default interval target
                             params={"gate_fd": str(gate_read), "gate_at": "25"})
        worker = worker_factory(pass_fds=(gate_read,))
        worker.send(options)
        seen: list[Event] = []
        while not any(isinstance(e, BlockTimed) and e.stage == "measure" for e in seen):
            event = worker.next_event()
            assert event is not None and not isinstance(event, (Finished, Failed)), seen[-3:] + [event]
            seen.append(event)
        assert worker.proc.poll() is None, "the worker ended before the test released it"
        os.write(gate_write, b"go")
        events = seen + worker.events_until_end()
        assert worker.finish() == 0
    finally:
        os.close(gate_read)
        os.close(gate_write)

    kinds = _kinds(events)
    assert kinds[0] == "ready" and kinds[1] == "started" and kinds[-1] == "finished", kinds
    phases = [e.phase for e in events if e.NAME == "phase"]
    assert phases == ["building", "compiling", "warming_up", "checking_accuracy", "measuring", "diagnosing"]
    assert kinds.index("compiled") < kinds.index("finished")
    stages = [(e.side, e.stage) for e in events if isinstance(e, BlockTimed)]
    assert stages[0] == ("eager", "warmup")
    assert ("compiled", "compile") in stages and stages.index(("compiled", "compile")) < kinds.count("block")
    measured = [e for e in events if isinstance(e, BlockTimed) and e.stage == "measure"]
    assert [e.side for e in measured] == ["eager", "compiled", "compiled", "eager"] * 2  # rounds swap who goes first
    assert all(e.t_start is not None and e.t_start <= e.t_end for e in events if isinstance(e, BlockTimed))
    assert sum(len(e.ms) for e in measured if e.side == "compiled") == 20
    assert all(e.clock == PERF_COUNTER.name and e.host_ms_per_call > 0 for e in measured)
    assert [e.index for e in measured if e.side == "eager"] == [0, 1, 2, 3]
    assert isinstance(events[-1], Finished)
    assert kinds.index("measured") < kinds.index("profiled") < kinds.index("finished")  # measured before the profile
    measured = next(e for e in events if isinstance(e, Measured))
    assert measured.accuracy.passed is True
    assert measured.diagnostics.graph_breaks >= 1  # the disabled helper splits the graph
    assert measured.memory == Memory()  # no CUDA: no peaks, no flush buffer
    assert measured.iters == {"eager": 20, "compiled": 20}
    # the noise went somewhere: stderr, not the event channel
    stderr = worker.stderr()
    assert "python print noise" in stderr and "fd 1 noise" in stderr and "c stdio printf noise" in stderr
    assert all(line.startswith(b'{"v":%d,' % PROTOCOL_VERSION) for line in worker.raw_lines)


def test_fullgraph_graph_break_fails_with_the_reason(worker_factory):
    worker = worker_factory()
    worker.send(RunOptions(workload="graph_break", backend="eager", fullgraph=True, params={"n": 16}, iters=2))
    events = worker.events_until_end()
    assert worker.finish() == 1
    failed = events[-1]
    assert isinstance(failed, Failed) and failed.kind == "graph_break", failed
    assert "Data-dependent branching" in failed.message
    assert "graph_break_fn" in failed.message and "workloads.py" in failed.message
    assert "\n" not in failed.message
    assert "Traceback" in failed.detail
    assert "compiled" not in _kinds(events)


def test_unknown_backend_is_refused_before_anything_runs(worker_factory):
    worker = worker_factory()
    worker.send(RunOptions(workload="pointwise", backend="no_such_backend"))
    events = worker.events_until_end()
    assert worker.finish() == 1
    assert _kinds(events) == ["ready", "failed"]
    failed = events[-1]
    assert failed.kind == "bad_options"
    assert failed.message.startswith("backend: 'no_such_backend'") and "inductor" in failed.message


def test_invalid_options_are_refused_as_bad_options(worker_factory):
    worker = worker_factory()
    worker.send({"workload": "pointwise", "iters": 0})
    events = worker.events_until_end()
    assert worker.finish() == 1
    assert events[-1].kind == "bad_options" and events[-1].message.startswith("iters:")


def test_eof_before_the_command_exits_quietly_after_ready(worker_factory):
    worker = worker_factory()
    worker.proc.stdin.close()
    events = []
    while (event := worker.next_event()) is not None:
        events.append(event)
    assert worker.proc.wait(60) == 0
    assert _kinds(events) == ["ready"]
    assert events[0].pid == worker.proc.pid and events[0].torch
    assert "Traceback" not in worker.stderr()


def test_compiler_failure_is_a_compile_error_with_its_first_line(worker_factory, tmp_path):
    """torch's test backend that refuses torch.relu stands in for a broken compiler."""
    path = tmp_path / "relu.py"
    path.write_text("import torch\n\ndef make_workload(device, dtype):\n    return torch.relu, (torch.randn(4),)\n")
    worker = worker_factory()
    worker.send(RunOptions(workload=str(path), backend="relu_compile_error_TESTING_ONLY", iters=2))
    events = worker.events_until_end()
    assert worker.finish() == 1
    failed = events[-1]
    assert failed.kind == "compile_error", failed
    assert "ReluCompileError" in failed.message and "relu_compile_error_TESTING_ONLY" in failed.message
    assert "TORCHDYNAMO_VERBOSE" not in failed.message
    assert "BackendCompilerFailed" in failed.detail
    assert "compiled" not in _kinds(events)


@pytest.mark.parametrize(
    ("source", "kind", "needle"),
    [
        ("def make_workload(device, dtype):\n    return 42\n", "workload_error", "returned an int"),
        (
            "import torch\n\ndef boom(x):\n    raise ValueError('eager went wrong')\n\n"
            "def make_workload(device, dtype):\n    return boom, (torch.ones(2),)\n",
            "runtime_error",
            "user_workload.py:4 in boom: eager went wrong",  # where in the user's file, not only what
        ),
    ],
    ids=["bad-return", "raises-in-eager"],
)
def test_user_workload_problems_map_to_their_kinds(worker_factory, tmp_path, source, kind, needle):
    path = tmp_path / "user_workload.py"
    path.write_text(source)
    worker = worker_factory()
    worker.send(RunOptions(workload=str(path), backend="eager", iters=2))
    events = worker.events_until_end()
    assert worker.finish() == 1
    failed = events[-1]
    assert failed.kind == kind and failed.kind in FAILURE_KINDS, failed
    assert needle in failed.message


@pytest.mark.slow
def test_inductor_on_the_cpu_compiles_measures_and_matches_eager(worker_factory):
    """One real inductor compile (tiny pointwise), in reduce-overhead mode: CUDA graphs skipped, with a warning."""
    worker = worker_factory()
    worker.send(RunOptions(workload="pointwise", backend="inductor", mode="reduce-overhead",
                           params={"n": 32}, warmup=1, iters=4, block_size=2, profile=False))
    events = worker.events_until_end(timeout=300)
    assert worker.finish() == 0, worker.stderr()[-3000:]
    assert isinstance(events[-1], Finished), events[-1]
    measured = next(e for e in events if isinstance(e, Measured))
    compiled = next(e for e in events if isinstance(e, Compiled))
    assert compiled.compile_s > 0 and measured.compile_s == compiled.compile_s
    assert measured.accuracy.passed is True and measured.accuracy.max_abs_err < 1e-4
    assert measured.accuracy.reference == "fp64" and measured.accuracy.compiled_rmse_fp64 < 1e-6
    assert measured.diagnostics.graph_breaks == 0 and measured.diagnostics.unique_graphs == 1
    assert measured.diagnostics.cudagraph_skips >= 1
    assert any("CUDA graphs were skipped" in w for w in measured.warnings)
    before = events[:events.index(measured)]  # the profile pass's own warnings come after it
    assert tuple(e.message for e in before if e.NAME == "warning") == measured.warnings
    assert measured.flops_per_call is None and measured.bytes_per_call == 2 * 32 * 32 * 4


def test_the_worker_exits_at_once_after_its_run_without_the_interpreters_teardown(worker_factory, tmp_path):
    """What the interpreter's shutdown would run (here a workload's 60 s atexit handler; on a GPU, the CUDA
    context's and the compile workers' teardown) is not waited for: the runner would pay it before the next run."""
    path = tmp_path / "slow_exit.py"
    path.write_text("import atexit, time\nimport torch\n\natexit.register(time.sleep, 60)\n\n"
                    "def make_workload(device, dtype):\n    return torch.relu, (torch.ones(8),)\n")
    worker = worker_factory()
    worker.send(RunOptions(workload=str(path), backend="eager", iters=2, block_size=1, profile=False))
    events = worker.events_until_end()
    assert isinstance(events[-1], Finished), events[-1]
    began = time.monotonic()
    assert worker.finish(timeout=30) == 0
    assert time.monotonic() - began < 10
