"""Faults that live in the worker, each once through the real worker and the engine's runner.

Matrix lines 1 (a crashing interpreter), 2 (a hang, ended by the timeout and by Cancel),
3 (an address-space limit on the CPU), 5 (inductor without a working C++ compiler), 6 (the
dtype probe) and 8 (megabytes on stdout and stderr). Each test costs one worker (importing
torch takes a few seconds); the app's side of the same faults is in ``test_app_faults.py``.
"""

from __future__ import annotations

import asyncio
import stat
import time
from pathlib import Path

import pytest

from fault_helpers import GONE_WITHIN_S, LineReader, none_left, write_workload
from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, Event, WorkerWarning
from tui.engine.store.results import RunRecord
from tui.engine.runner import STDERR_TAIL_BYTES, WorkerRunner

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.torch]  # every test starts a real worker process

#: A workload small enough that a whole run takes well under a second once torch is imported.
TINY = dict(backend="eager", warmup=1, iters=4, block_size=2, time_budget_s=600.0)  # the budget: iters alone
#: The longest any run of these tests may take (importing torch and compiling included).
RUN_LIMIT_S = 120.0


async def _run(options: RunOptions, env: dict[str, str] | None = None, prestart: bool = False,
               on_event=None) -> tuple[RunRecord, WorkerRunner]:
    """One run through a fresh runner (no spare); returns the record and the closed runner."""
    runner = WorkerRunner(keep_spare=False, env=env)
    record = RunRecord.new(options.validated())
    try:
        async def prestart_and_run() -> None:
            if prestart:  # torch imported before the run starts: its time limit covers only the run
                await runner.prestart(record.options, wait=True)
            await runner.run(record, on_event)

        # A run that never ends fails the test, not the suite (asyncio.wait_for: asyncio.timeout is 3.11+).
        await asyncio.wait_for(prestart_and_run(), RUN_LIMIT_S)
    finally:
        await runner.aclose()
    return record, runner


# ----------------------------------------------------------------------------------------------
# 1. the worker dies by a signal

CRASHING = """
    import ctypes
    import os
    import sys

    import torch


    def make_workload(device, dtype, how):
        sys.stderr.write(f"about to crash by {how}\\n")
        sys.stderr.flush()
        if how == "abort":
            os.abort()
        ctypes.string_at(0)  # reads address 0: SIGSEGV
"""


async def test_a_workload_that_crashes_the_interpreter_is_a_crash_naming_the_signal(tmp_path):
    """os.abort() and a NULL read in user code: "worker crashed (signal N)" with stderr's last line and tail.

    The two workers run side by side (each imports torch: in parallel the test takes one import).
    """
    path = write_workload(tmp_path, "crashing.py", CRASHING)
    cases = {"abort": 6, "segv": 11}
    results = await asyncio.gather(
        *(_run(RunOptions(workload=str(path), params={"how": how}, **TINY)) for how in cases)
    )
    for (how, signum), (record, runner) in zip(cases.items(), results, strict=True):
        assert (record.status, record.error_kind) == ("failed", "crash"), how
        assert record.error_message == f"worker crashed (signal {signum}): about to crash by {how}"
        assert f"about to crash by {how}" in record.error_detail  # the tail of its stderr
        await none_left(pgids=[runner.last_pid])


# ----------------------------------------------------------------------------------------------
# 2. the worker hangs

HANGING = """
    import os
    import subprocess
    import sys
    import time

    import torch


    def make_workload(device, dtype, fifo):
        # a child in the worker's process group, as inductor's compile workers are
        child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"],
                                 stdin=subprocess.DEVNULL)
        sys.stderr.write("hanging now\\n")
        sys.stderr.flush()
        with open(fifo, "w") as pipe:
            pipe.write(f"{os.getpid()} {child.pid}\\n")
        while True:
            time.sleep(3600)
"""


async def test_the_timeout_ends_a_real_hanging_worker_and_its_children_within_two_seconds(tmp_path):
    """A workload that sleeps forever: timed out at timeout_s, and nothing of its group outlives it by 2 s."""
    path = write_workload(tmp_path, "hanging.py", HANGING)
    fifo = LineReader.fifo(tmp_path / "hang.fifo")
    # Long enough that the worker reaches the factory first: from the command to the building phase
    # it imports inductor's config (envinfo), which took over 3 s on 2 loaded cores.
    timeout_s = 10.0
    options = RunOptions(workload=str(path), params={"fifo": str(tmp_path / "hang.fifo")}, timeout_s=timeout_s, **TINY)
    try:
        start = time.monotonic()
        run = asyncio.ensure_future(_run(options, prestart=True))
        worker_pid, child_pid = map(int, (await fifo.line(timeout=RUN_LIMIT_S)).split())
        assert not run.done()  # it hangs, and the timeout has not yet come
        ready_at = time.monotonic()
        record, _runner = await run
        ended = time.monotonic()
    finally:
        fifo.close()
    assert (record.status, record.error_kind) == ("failed", "timeout")
    assert record.error_message == "timed out after 10 s (timeout_s) while building"  # in the workload's factory
    assert "hanging now" in record.error_detail
    # The clock starts when the command is sent (after prestart): the run ended at most 2 s after it ran out.
    assert ended - ready_at < timeout_s + GONE_WITHIN_S, (ended - start, ended - ready_at)
    await none_left(pids=[worker_pid, child_pid], pgids=[worker_pid], within=0.1)


async def test_cancel_ends_a_real_hanging_worker_and_its_children_within_two_seconds(tmp_path):
    """Cancelling the run task: the record is cancelled, the worker and its child gone within 2 s."""
    path = write_workload(tmp_path, "hanging.py", HANGING)
    fifo = LineReader.fifo(tmp_path / "hang.fifo")
    options = RunOptions(workload=str(path), params={"fifo": str(tmp_path / "hang.fifo")}, **TINY)
    runner = WorkerRunner(keep_spare=False)
    record = RunRecord.new(options.validated())
    task = asyncio.ensure_future(runner.run(record))
    try:
        worker_pid, child_pid = map(int, (await fifo.line(timeout=RUN_LIMIT_S)).split())
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - start < GONE_WITHIN_S
        await none_left(
            pids=[worker_pid, child_pid], pgids=[worker_pid], within=GONE_WITHIN_S - (time.monotonic() - start)
        )
    finally:
        fifo.close()
        await runner.aclose()
    assert (record.status, record.error_kind, record.error_message) == ("cancelled", "cancelled", "cancelled")


# ----------------------------------------------------------------------------------------------
# 3. out of memory on the CPU (CUDA OOM: tests/gpu/test_gpu_suite.py)

ALLOCATING = """
    import torch


    def allocate(x):
        huge = torch.empty(2**34, dtype=torch.float32)  # 64 GiB of address space, never touched
        return x + huge[:4]


    def make_workload(device, dtype):
        return allocate, (torch.ones(4),)
"""


def _torch_address_space_gb() -> float:
    """The address space of a fresh interpreter with torch imported, in GB, as the worker reads its own: a CUDA
    build of torch maps 3.5 GB where the CPU build maps under 2."""
    import subprocess
    import sys

    probe = "import torch; from tui.engine.worker.setup import _address_space_bytes as a; print(a())"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1]) / 2**30


async def test_an_allocation_beyond_the_memory_limit_is_a_clean_out_of_memory_failure(tmp_path):
    """memory_limit_gb 3 GB above what torch maps: a 64 GiB allocation fails inside torch, not in the kernel's OOM
    killer."""
    limit = int(_torch_address_space_gb()) + 3
    path = write_workload(tmp_path, "allocating.py", ALLOCATING)
    record, runner = await _run(RunOptions(workload=str(path), memory_limit_gb=limit, **TINY))
    assert (record.status, record.error_kind) == ("failed", "out_of_memory"), record.error_message
    assert record.error_message.startswith(f"ran out of memory in eager (memory_limit_gb {limit}): RuntimeError: ")
    assert "DefaultCPUAllocator: can't allocate memory" in record.error_message
    assert "[enforce fail" not in record.error_message and "Traceback" in record.error_detail
    await none_left(pgids=[runner.last_pid])


def test_out_of_memory_errors_are_classified_as_out_of_memory():
    """The CPU allocator's refusal, MemoryError and ENOMEM all map to out_of_memory, with the stage."""
    from tui.engine.worker.failures import classify

    allocator = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)"
    )
    failure = classify(allocator, "compiled")
    assert failure.kind == "out_of_memory"
    assert failure.message == (
        "ran out of memory in compiled code: RuntimeError: DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert classify(MemoryError(), "building", memory_limit_gb=1.5).message == (
        "ran out of memory while building the workload (memory_limit_gb 1.5): MemoryError (an allocation was refused)"
    )
    assert classify(OSError(12, "Cannot allocate memory"), "eager").kind == "out_of_memory"


def test_a_limit_below_what_the_worker_already_uses_is_refused():
    """A limit the worker is already over would break everything after it: refused as bad options."""
    from tui.engine.options import OptionsError
    from tui.engine.worker.setup import apply_memory_limit

    if not Path("/proc/self/status").exists():  # without it the limit would be set on this process
        pytest.skip("needs /proc/self/status")
    with pytest.raises(OptionsError, match=r"^memory_limit_gb: 0.001 GB is below what the worker already uses"):
        apply_memory_limit(0.001)


# ----------------------------------------------------------------------------------------------
# 5. inductor cannot compile on the CPU

FAILING_COMPILER = """#!/bin/sh
# A C++ compiler that answers --version (so inductor picks it) and fails every compile.
case "$1" in --version|-v|-dumpversion) echo "g++ (broken on purpose) 12.0.0"; exit 0;; esac
echo "In file included from /tmp/kernel.cpp:1:" >&2
echo "/tmp/kernel.cpp:3:10: fatal error: broken_header.h: No such file or directory" >&2
echo "compilation terminated." >&2
exit 1
"""


async def test_inductor_without_a_working_compiler_is_a_compile_error_with_its_first_line(tmp_path):
    """CXX names a missing binary, or one that fails: compile_error, its first meaningful line, the full text in detail.

    A fresh inductor cache (cold_compile) keeps a cached kernel from hiding the compiler.
    torch 2.13 reads CXX into ``torch._inductor.config.cpp.cxx`` and does not fall back to g++.
    Both workers run side by side.
    """
    script = tmp_path / "broken-g++"
    script.write_text(FAILING_COMPILER)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    options = RunOptions(workload="pointwise", params={"n": 32}, backend="inductor", cold_compile=True,
                         warmup=1, iters=4, block_size=2)
    (missing, missing_runner), (failing, failing_runner) = await asyncio.gather(
        _run(options, env={"CXX": "/nonexistent/g++"}),
        _run(options, env={"CXX": str(script)}),
    )
    for record in (missing, failing):
        assert (record.status, record.error_kind) == ("failed", "compile_error"), record.error_message
        assert "Traceback" in record.error_detail and "\n" not in record.error_message
    assert missing.error_message == (
        "inductor failed to compile: InvalidCxxCompiler: No working C++ compiler found in "
        "torch._inductor.config.cpp.cxx: (None, '/nonexistent/g++')"
    )
    assert failing.error_message == (
        "inductor failed to compile: /tmp/kernel.cpp:3:10: fatal error: broken_header.h: No such file or directory"
    )
    assert "compilation terminated." in failing.error_detail and str(script) in failing.error_detail
    await none_left(pgids=[missing_runner.last_pid, failing_runner.last_pid])


# ----------------------------------------------------------------------------------------------
# 6. a dtype the device cannot run


def test_the_dtype_probe_turns_a_device_that_cannot_compute_into_bad_options():
    """What only torch can judge fails early, as bad options naming the dtype.

    On the CPU, torch 2.13 runs float32, bfloat16 and float16 matmuls alike, so no CPU dtype
    fails; the meta device (which cannot produce a value) stands in for one that cannot compute.
    On a GPU the real case is bfloat16 before Ampere (refused by name in ``check_dtype``).
    """
    import torch

    from tui.engine.options import OptionsError
    from tui.engine.worker.setup import check_dtype

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        check_dtype(str(dtype), dtype, torch.device("cpu"))  # no refusal on the CPU
    with pytest.raises(OptionsError) as info:
        check_dtype("float16", torch.float16, torch.device("meta"))
    assert str(info.value).startswith("dtype: float16 did not run on meta: ")
    assert str(info.value).endswith("(allowed: float32)") and "\n" not in str(info.value)


# ----------------------------------------------------------------------------------------------
# 8. megabytes on stdout and stderr

NOISY = """
    import os
    import sys

    import torch


    def make_workload(device, dtype):
        line = "x" * 1023 + "\\n"
        print(line * 5 * 1024, end="")  # 5 MiB from Python's stdout
        os.write(1, (line * 5 * 1024).encode())  # 5 MiB to fd 1 from C's point of view
        sys.stderr.write(line * 5 * 1024)  # 5 MiB on stderr
        os.write(1, b"fd 1 done\\n")
        print("print done", flush=True)
        sys.stderr.write("stderr done\\n")
        sys.stderr.flush()
        return (lambda x: x * 2), (torch.ones(8),)
"""


async def test_megabytes_on_stdout_and_stderr_keep_the_events_intact_and_stderr_bounded(tmp_path):
    """15 MiB of prints: every event arrives whole, and only the last 64 KiB of stderr are kept."""
    path = write_workload(tmp_path, "noisy.py", NOISY)
    events: list[Event] = []
    # no profile pass: the profiler's own log lines on stderr would come after the workload's
    record, runner = await _run(RunOptions(workload=str(path), **TINY, profile=False), on_event=events.append)
    assert record.status == "done", record.error_message
    # no line that is not an event (the runner warns about each; timing warnings may come from the worker)
    assert not [e for e in events if isinstance(e, WorkerWarning) and e.source == "runner"]
    measured = [e for e in events if isinstance(e, BlockTimed) and e.stage == "measure"]
    assert sum(len(e.ms) for e in measured) == 2 * 4
    kept = runner.last_stderr.encode()
    assert len(kept) <= STDERR_TAIL_BYTES + 1024
    # what went to fd 1 from Python and from C landed on stderr, in order, and the tail is its end
    assert kept.endswith(b"fd 1 done\nprint done\nstderr done\n")
