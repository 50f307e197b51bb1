"""A torch-free stand-in for ``python -m tui.engine.worker`` that speaks the same protocol.

Start it with ``[sys.executable, str(FAKE_WORKER)]`` (see :func:`tests.fakes.fake_worker_argv`).
Like the real worker it keeps a private duplicate of fd 1 for events and points fd 1 at
stderr, emits ``ready``, reads ONE command line ``{"command": "run", "run_id", "options"}``
from stdin, then streams events. It exits at once when its stdin reaches EOF (the parent is
gone), and asks Linux to SIGKILL it when its parent dies. It starts in well under 0.2 s.

Choosing a behaviour (first match wins):

1. ``options["params"]["fake_behaviour"]`` in the command (build the RunOptions without
   ``validated()``, which would refuse the unknown parameter);
2. the environment variable ``FAKE_WORKER_BEHAVIOUR``;
3. ``ok``.

Behaviours:

``ok``       started, phases, compiled, ``iters // block_size`` blocks per side (eager and
             compiled alternating, deterministic times: eager 2.0 ms, compiled 1.0 ms, plus a
             tiny seeded wobble), finished; exit 0.
``slow``     like ``ok`` with a pause between blocks (``FAKE_WORKER_DELAY`` seconds, default
             0.1), so the first block clearly arrives before the end.
``fail``     started, phase building, then ``failed`` (kind ``compile_error``, message
             "compile failed: fake inductor error", a traceback-like detail; both can be
             changed, see below); exit 1.
``crash``    started, phases up to measuring, one block, a line on stderr
             ("Fatal Python error: Segmentation fault (fake)"), then SIGKILL of itself.
``exit``     started, then "RuntimeError: fake worker gave up" on stderr and exit code 3
             without a finished/failed event.
``hang``     started, phase measuring, one block, then it starts a grandchild in its own
             process group (a sleeping Python) and sleeps forever (SIGTERM ends it).
``stubborn`` like ``hang`` but it ignores SIGTERM (only SIGKILL ends it).
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
``FAKE_WORKER_DELAY``        seconds between blocks (``slow`` defaults to 0.1, others to 0).
``FAKE_WORKER_GPU_UUID``     reported as ``gpu_uuid`` in ``started``'s env (default none).
``FAKE_WORKER_FAIL_KIND``    ``fail``: the failure kind (default ``compile_error``).
``FAKE_WORKER_FAIL_MESSAGE`` ``fail``: the one-line message (default "compile failed: fake inductor error").
``FAKE_WORKER_WARMUP``       iterations per side sent as one ``warmup`` block before measuring (default 0).
``FAKE_WORKER_GATE``         a path: after the first measured blocks the worker waits until that file
                             exists (the test creates it to let the run go on).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tui.engine.protocol import encode, make_event  # noqa: E402  (needs the path above)

BEHAVIOURS = ("ok", "slow", "fail", "crash", "exit", "hang", "stubborn", "spam", "garbage")

_T0 = time.monotonic()
_EVENTS_FD = -1


def _emit(event: str, **fields) -> None:
    os.write(_EVENTS_FD, encode(make_event(event, time.monotonic() - _T0, **fields)))


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _watch_stdin_then_exit() -> None:
    """The parent closed our stdin (or died): leave at once, like the real worker."""
    try:
        while os.read(0, 4096):  # the raw fd: a thread in sys.stdin would block interpreter exit
            pass
    except OSError:
        pass
    os._exit(0)


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


def _block_times(side: str, index: int, n: int, seed: int) -> list[float]:
    base = 2.0 if side == "eager" else 1.0
    return [round(base + 0.01 * ((seed + index * 7 + i * 3) % 5), 4) for i in range(n)]


def _started(options: dict) -> None:
    _emit(
        "started",
        env={
            "torch": "0.0.0+fake",
            "cuda": None,
            "triton": None,
            "device": options.get("device", "cpu"),
            "gpu_name": os.environ.get("FAKE_WORKER_GPU_NAME"),
            "gpu_uuid": os.environ.get("FAKE_WORKER_GPU_UUID"),
            "driver": None,
            "tf32_matmul": bool(options.get("tf32")),
            "tf32_cudnn": bool(options.get("tf32")),
            "cpu": "fake cpu",
            "python": sys.version.split()[0],
            # Not in the real worker's env: lets tests see what the runner set.
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
        },
    )


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


def _measure(options: dict, behaviour: str, delay: float) -> None:
    iters = int(options.get("iters") or 50)
    block_size = max(1, int(options.get("block_size") or 10))
    seed = int(options.get("seed") or 0)
    blocks = max(1, iters // block_size)
    warmup = int(_env_float("FAKE_WORKER_WARMUP", 0))
    if warmup > 0:
        for side in ("eager", "compiled"):
            ms = _block_times(side, 0, warmup, seed)
            _emit("block", side=side, stage="warmup", index=0, clock="perf_counter", ms=ms, wall_ms_per_call=ms[0])
    _emit("phase", phase="checking_accuracy")  # the real worker checks accuracy before it measures
    _emit("phase", phase="measuring")
    for index in range(blocks):
        for side in ("eager", "compiled"):
            ms = _block_times(side, index, block_size, seed)
            _emit(
                "block",
                side=side,
                stage="measure",
                index=index,
                clock="perf_counter",
                ms=ms,
                wall_ms_per_call=round(sum(ms) / len(ms) * 1.05, 4),
            )
        if behaviour == "spam" and index == 0:
            _spam("x")
        if index == 0:
            _wait_for_gate()
        if delay:
            time.sleep(delay)


def _finish(options: dict) -> None:
    _emit(
        "finished",
        diagnostics={"graph_breaks": 0, "unique_graphs": 1, "recompiles": 0},
        accuracy={"passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "atol": 1e-5, "rtol": 1e-5},
        memory={},
        flops_per_call=None,
        bytes_per_call=None,
        warnings=[],
    )


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


def main() -> int:
    """Run the fake worker (see the module docstring)."""
    global _EVENTS_FD
    _set_parent_death_signal()
    _EVENTS_FD = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    ready_delay = _ready_delay(_log_start())
    if ready_delay:
        time.sleep(ready_delay)
    _emit("ready", pid=os.getpid(), python=sys.executable, torch="0.0.0+fake")

    line = sys.stdin.buffer.readline()
    if not line:
        return 0
    command = json.loads(line)
    threading.Thread(target=_watch_stdin_then_exit, daemon=True).start()
    options = command.get("options") or {}
    params = options.get("params") or {}
    behaviour = str(params.get("fake_behaviour") or os.environ.get("FAKE_WORKER_BEHAVIOUR") or "ok")
    if behaviour not in BEHAVIOURS:
        _emit("failed", kind="bad_options", message=f"fake_behaviour {behaviour!r} is unknown", detail="")
        return 1
    delay = _env_float("FAKE_WORKER_DELAY", 0.1 if behaviour == "slow" else 0.0)

    _started(options)
    _emit("phase", phase="building")
    if behaviour == "fail":
        _emit(
            "failed",
            kind=os.environ.get("FAKE_WORKER_FAIL_KIND") or "compile_error",
            message=os.environ.get("FAKE_WORKER_FAIL_MESSAGE") or "compile failed: fake inductor error",
            detail="Traceback (most recent call last):\n  File \"fake.py\", line 1\nRuntimeError: fake inductor error\n",
        )
        return 1
    if behaviour == "exit":
        sys.stderr.write("Traceback (most recent call last):\n  File \"fake.py\", line 3, in <module>\n")
        sys.stderr.write("RuntimeError: fake worker gave up\n")
        sys.stderr.flush()
        return 3
    if behaviour == "garbage":
        os.write(_EVENTS_FD, b"this is not json\n")
        os.write(_EVENTS_FD, b'{"hello": "not an event"}\n')
    _emit("phase", phase="compiling")
    _emit("compiled", compile_s=0.25, diagnostics={"graph_breaks": 0, "unique_graphs": 1, "recompiles": 0})
    _emit("phase", phase="warming_up")
    if behaviour in ("crash", "hang", "stubborn"):
        _emit("phase", phase="measuring")
        ms = _block_times("eager", 0, 5, 0)
        _emit("block", side="eager", stage="measure", index=0, clock="perf_counter", ms=ms, wall_ms_per_call=ms[0])
        if behaviour == "crash":
            sys.stderr.write("some noise\nFatal Python error: Segmentation fault (fake)\n\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        _hang(stubborn=behaviour == "stubborn")
    _measure(options, behaviour, delay)
    _finish(options)
    if behaviour == "spam":
        sys.stderr.write("spam done\n")
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
