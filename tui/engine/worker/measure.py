"""The timing method (ANCHORS.md section 1): eager first, compile timed apart, warm-up, then
alternating blocks of eager and compiled iterations, each block streamed as it is measured.

Two clocks: on CUDA a pair of CUDA events per iteration with no synchronize between
iterations and one per block (device time), on the CPU ``perf_counter_ns`` per iteration.
Either way the block's synchronised wall time divided by its calls is reported as
``wall_ms_per_call`` (host-inclusive time). Statistics are the parent's job.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any, Callable

import torch

from tui.engine.worker.accuracy import keep

__all__ = ["CpuClock", "CudaClock", "Benchmark", "make_compile_fn", "head_start_ms", "L2_FLUSH_BYTES",
           "is_recompile_refusal"]

#: Bytes zeroed before each iteration to flush L2 (as triton's do_bench does).
L2_FLUSH_BYTES = 256 * 2**20
#: Eager calls before compiling, so CUDA / cuBLAS / cuDNN set-up is not billed to the compiler.
EAGER_SETUP_CALLS = 3
#: Compiled warm-up calls at least (CUDA-graph trees warm up on the 1st call, record on the 2nd).
MIN_COMPILED_WARMUP = 3
#: After the fixed warm-up, a side warms up a block at a time until the medians of two
#: consecutive blocks differ by at most this fraction ("settled")...
WARMUP_SETTLED = 0.05
#: ...giving up after this many extra blocks or once this many seconds of extra warm-up have passed.
WARMUP_MAX_EXTRA_BLOCKS = 6
WARMUP_MAX_EXTRA_S = 3.0
#: Two medians closer than this (ms) agree whatever their ratio: below the clocks' resolution.
SETTLED_ABS_MS = 0.001

Step = Callable[[tuple], Any]
Emit = Callable[..., None]


def make_compile_fn(options: Any) -> Callable[[Callable], Callable]:
    """``functools.partial(torch.compile, ...)`` for ``options`` (mode and options for inductor only)."""
    kwargs: dict[str, Any] = {"backend": options.backend, "fullgraph": options.fullgraph, "dynamic": options.dynamic}
    if options.backend == "inductor":
        if options.mode != "default":
            kwargs["mode"] = options.mode
        if options.inductor_options:
            kwargs["options"] = dict(options.inductor_options)
    return functools.partial(torch.compile, **kwargs)


def _uses_cudagraphs(options: Any) -> bool:
    """True when the compiled side runs CUDA graphs (reduce-overhead, the cudagraphs backend, or asked for)."""
    inductor = options.inductor_options or {}
    return (options.backend == "cudagraphs" or (options.backend == "inductor" and options.mode == "reduce-overhead")
            or bool(inductor.get("triton.cudagraphs")))


def is_recompile_refusal(exc: BaseException) -> bool:
    """True for the error ``set_stance("fail_on_recompile")`` raises on a recompile."""
    return isinstance(exc, RuntimeError) and "stance is 'fail_on_recompile'" in str(exc)


def _relative_iqr(ms: list[float]) -> float:
    """Interquartile range / median of one block's times (0 for fewer than 3 calls)."""
    if len(ms) < 3:
        return 0.0
    q1, median, q3 = statistics.quantiles(ms, n=4, method="inclusive")
    return (q3 - q1) / median if median > 0 else 0.0


#: Head start = this factor x the time the GPU would otherwise wait for the host...
HEAD_START_FACTOR = 1.5
#: ...within these bounds (ms).
HEAD_START_MIN_MS = 0.05
HEAD_START_MAX_MS = 200.0


def head_start_ms(queue_ms_per_call: float | None, device_ms_per_call: float | None, calls: int,
                  first_queue_ms: float | None = None) -> float:
    """How long to keep the GPU busy before a block of ``calls`` calls, from the last block's times.

    With q the host's queueing time per call, f the time it took to queue the first call
    (often the slowest; taken as at least 2q) and d the device time of the fastest call:
    call k is queued after about f + (k-1)q ms and the GPU reaches it after head + (k-1)d ms
    at the earliest. The GPU never waits while head >= f + (k-1)(q-d) for every k: f when
    the GPU is the slower side, f + (calls-1)(q-d) when the host is (launch-bound). Times
    the margin ``HEAD_START_FACTOR``, within the bounds. With nothing measured yet: 1 ms
    per call, the GPU assumed never to catch up.

    The head start is sized to what is needed, not generously: a power-capped GPU turns the
    light load of a spin before each block into a higher clock for the block's kernels (on
    an H200, bf16 GEMMs with the earlier, generous head start read 3-4% faster than
    do_bench; docs/BENCHMARKS.md, section 1).
    """
    q = 1.0 if queue_ms_per_call is None else queue_ms_per_call
    if device_ms_per_call is None:
        need = q * calls
    else:
        first = max(2 * q, first_queue_ms or 0.0)
        need = first + (calls - 1) * max(0.0, q - device_ms_per_call)
    return min(max(need * HEAD_START_FACTOR, HEAD_START_MIN_MS), HEAD_START_MAX_MS)


class CpuClock:
    """``perf_counter_ns`` around each call; the block's wall time around all of them."""

    name = "perf_counter"

    def sync(self) -> None:
        """Nothing to wait for on the CPU."""

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None
                  ) -> tuple[list[float], float]:
        """Run ``step`` on each input set in ``calls``: (ms per call, wall ms per call).

        ``prepare()``, if given, runs before each call, outside the per-call timer.
        """
        ms: list[float] = []
        start = time.perf_counter()
        for args in calls:
            if prepare is not None:
                prepare()
            t0 = time.perf_counter_ns()
            step(args)  # the output is dropped at once: nothing outlives the call
            ms.append((time.perf_counter_ns() - t0) / 1e6)
        wall_ms = (time.perf_counter() - start) * 1e3
        return ms, wall_ms / len(calls)


class CudaClock:
    """A pair of CUDA events per call, no synchronize between calls, one per block.

    Each block starts with a *head start*: a spin kernel (``torch.cuda._sleep``) long
    enough that the GPU never waits for the host inside the block (see
    :func:`head_start_ms`). Without it, an idle GPU records a call's start event at
    once and then waits for the host's guards and launches, so per-call events of
    launch-bound work would measure the host, not the device. The host-inclusive time
    per call is then ``max(queueing time, synchronised wall time - head start) / calls``:
    what a loop that never synchronises pays per call, limited by whichever side is slower.

    With ``l2_flush`` a buffer larger than L2 is zeroed before each call, outside the events.
    """

    name = "cuda_event"

    def __init__(self, device: torch.device, l2_flush: bool = False) -> None:
        self.device = device
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device) if l2_flush else None
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self._cycles_per_ms: float | None = None
        # What the last block of each step measured, keyed by the step itself (a bound method
        # is a new object on every attribute access, but equal to the last one).
        self._queue_ms_per_call: dict[Step, float] = {}
        self._device_ms_per_call: dict[Step, float] = {}
        self._first_queue_ms: dict[Step, float] = {}
        #: The last block's head start, in ms (0 without one).
        self.last_head_ms = 0.0

    def sync(self) -> None:
        """Wait for all work queued on the device."""
        torch.cuda.synchronize(self.device)

    def _calibrate(self) -> float | None:
        """Spin-kernel cycles per millisecond on this GPU (measured once)."""
        if self._cycles_per_ms is None and self._sleep is not None:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._sleep(1000)  # first launch loads the kernel
            begin.record()
            self._sleep(2_000_000)
            end.record()
            self.sync()
            elapsed = begin.elapsed_time(end)
            self._cycles_per_ms = 2_000_000 / elapsed if elapsed > 0 else None
        return self._cycles_per_ms

    def _head_start(self, step: Step, n: int) -> tuple[torch.cuda.Event, torch.cuda.Event] | None:
        """Queue the spin kernel for this block; its event pair, or None without one."""
        cycles_per_ms = self._calibrate()
        if cycles_per_ms is None:
            return None
        wanted = head_start_ms(self._queue_ms_per_call.get(step), self._device_ms_per_call.get(step), n,
                               self._first_queue_ms.get(step))
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        self._sleep(int(wanted * cycles_per_ms))
        end.record()
        return begin, end

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None
                  ) -> tuple[list[float], float]:
        """Run ``step`` on each input set in ``calls``: (device ms per call, host-inclusive ms per call).

        ``prepare()``, if given, runs before each call, outside its CUDA events.
        """
        starts = [torch.cuda.Event(enable_timing=True) for _ in calls]
        ends = [torch.cuda.Event(enable_timing=True) for _ in calls]
        flush = self.flush_buffer
        self.sync()
        head = self._head_start(step, len(calls))
        start = time.perf_counter()
        first_ms = None
        for args, begin, end in zip(calls, starts, ends):
            if flush is not None:
                flush.zero_()
            if prepare is not None:
                prepare()
            begin.record()
            step(args)
            end.record()
            if first_ms is None:
                first_ms = (time.perf_counter() - start) * 1e3
        queued_ms = (time.perf_counter() - start) * 1e3
        self.sync()
        wall_ms = (time.perf_counter() - start) * 1e3
        self._queue_ms_per_call[step] = queued_ms / len(calls)
        self._first_queue_ms[step] = first_ms or 0.0
        head_ms = head[0].elapsed_time(head[1]) if head is not None else 0.0
        self.last_head_ms = head_ms
        host_ms = max(queued_ms, wall_ms - head_ms)
        ms = [begin.elapsed_time(end) for begin, end in zip(starts, ends)]
        self._device_ms_per_call[step] = min(ms)  # the fastest call: the GPU catches up soonest
        return ms, host_ms / len(calls)


class Benchmark:
    """Drives one configuration through set-up, compile, warm-up and measurement.

    ``emit(event, **fields)`` sends protocol events; ``warn(message)`` a warning.
    ``stage`` says what ran last ("eager", "compile", "compiled"), so a failure can be
    classified by where it happened.
    """

    def __init__(self, built: Any, options: Any, device: torch.device, emit: Emit,
                 warn: Callable[[str], None]) -> None:
        self.built = built
        self.options = options
        self.device = device
        self.emit = emit
        self.warn = warn
        self.cuda = device.type == "cuda"
        self.clock = CudaClock(device, options.l2_flush) if self.cuda else CpuClock()
        self.stage = "eager"
        self.compiled_step: Step | None = None
        self.compile_s: float | None = None
        self.eager_first: Any = None
        self.compiled_first: Any = None
        self.measured = {"eager": 0, "compiled": 0}
        self.peak_mb: dict[str, float | None] = {"eager": None, "compiled": None}
        self.stance_used = False
        self.cudagraphs = self.cuda and _uses_cudagraphs(options)
        self._next_input = {"eager": 0, "compiled": 0}
        self._block_index: dict[tuple[str, str], int] = {}

    # ----- plumbing ------------------------------------------------------

    def _calls(self, side: str, n: int) -> tuple[list[tuple], list[str] | None]:
        sets, labels = self.built.input_sets, self.built.labels
        indices = [(self._next_input[side] + i) % len(sets) for i in range(n)]
        self._next_input[side] += n
        return [sets[i] for i in indices], ([labels[i] for i in indices] if labels else None)

    def _mark_step(self) -> None:
        """Tell CUDA-graph trees that a new call begins (its outputs may reuse the last call's memory)."""
        if self.cudagraphs:
            mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
            if mark is not None:
                mark()

    def _step(self, side: str) -> Step:
        if side == "eager":
            return self.built.eager_step
        assert self.compiled_step is not None, "compile() comes first"
        return self.compiled_step

    def _block(self, side: str, stage: str, n: int) -> list[float]:
        """Time ``n`` calls of one side, emit them as one block event, return their times (ms)."""
        calls, labels = self._calls(side, n)
        self.stage = side
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        prepare = self._mark_step if side == "compiled" else None
        ms, wall = self.clock.run_block(self._step(side), calls, prepare)
        if self.cuda:
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
            self.peak_mb[side] = max(self.peak_mb[side] or 0.0, round(peak, 3))
        self._emit_block(side, stage, ms, wall, labels)
        return ms

    def _emit_block(self, side: str, stage: str, ms: list[float], wall: float, labels: list[str] | None,
                    clock: str | None = None) -> None:
        index = self._block_index.get((side, stage), 0)
        self._block_index[(side, stage)] = index + 1
        fields: dict[str, Any] = {
            "side": side, "stage": stage, "index": index, "clock": clock or self.clock.name,
            "ms": ms, "wall_ms_per_call": wall,
        }
        if labels:
            fields["labels"] = labels
        if self.options.l2_flush and self.cuda and stage == "measure":
            fields["l2_flush"] = True
        self.emit("block", **fields)

    def _chunks(self, total: int) -> list[int]:
        size = self.options.block_size
        return [min(size, total - start) for start in range(0, total, size)]

    # ----- phases --------------------------------------------------------

    def eager_setup(self) -> None:
        """A few eager calls before anything compiles (a warm-up block of the eager side).

        The first call runs on input set 0; for a training step its output is kept as
        the eager side of the accuracy check (both sides start from the same state).
        """
        self.stage = "eager"
        first = self.built.input_sets[0]
        output = self.built.eager_step(first)
        if self.built.train:
            self.eager_first = keep(output)
        del output
        self._next_input["eager"] = 1
        rest = max(EAGER_SETUP_CALLS, len(self.built.input_sets)) - 1
        if rest:
            self._block("eager", "warmup", rest)
        self.clock.sync()

    def compile(self, compile_fn: Callable) -> float:
        """Compile, then time the first compiled call (synchronised both sides): compile_s."""
        torch._dynamo.reset()
        self.stage = "compile"
        self.compiled_step = self.built.compile_step(compile_fn)
        args = self.built.input_sets[0]
        self._mark_step()
        self.clock.sync()
        start = time.perf_counter()
        output = self.compiled_step(args)
        self.clock.sync()
        self.compile_s = time.perf_counter() - start
        if self.built.train:
            self.compiled_first = keep(output)
        del output
        self._next_input["compiled"] = 1
        labels = [self.built.labels[0]] if self.built.labels else None
        self._emit_block("compiled", "compile", [self.compile_s * 1e3], self.compile_s * 1e3, labels,
                         clock="perf_counter")
        return self.compile_s

    def warm_up(self) -> None:
        """Warm both sides up: a fixed number of calls, then until each side's time has settled.

        Fixed part: at least max(3, warmup) compiled calls (3 per input set when there are
        several), then ``warmup`` eager calls. With ``warmup`` > 0 each side then goes on, a
        block at a time, until two consecutive warm-up blocks have medians within
        ``WARMUP_SETTLED`` of each other, or within the blocks' own spread (cuDNN autotuning,
        allocator growth, clocks ramping up); a side that has not settled after ``WARMUP_MAX_EXTRA_BLOCKS`` blocks or
        ``WARMUP_MAX_EXTRA_S`` seconds is measured anyway, with a warning. Workloads whose
        input sets differ in shape on purpose (labels) skip the settling: their blocks differ
        by design.
        """
        sets = len(self.built.input_sets)
        compiled = max(MIN_COMPILED_WARMUP, self.options.warmup, 3 * sets if sets > 1 else 0)
        last: dict[str, list[float]] = {}
        for n in self._chunks(compiled):
            last["compiled"] = self._block("compiled", "warmup", n)
        for n in self._chunks(self.options.warmup):
            last["eager"] = self._block("eager", "warmup", n)
        if self.options.warmup > 0 and self.built.labels is None:
            for side in ("compiled", "eager"):
                self._settle(side, last.get(side))

    def _settle(self, side: str, previous_ms: list[float] | None) -> None:
        """Warm ``side`` up a block at a time until two consecutive block medians agree.

        "Agree": within ``WARMUP_SETTLED``, or within the blocks' own spread (relative IQR)
        when that is larger: a change smaller than the noise of the calls cannot be told
        from it, and on a busy CPU microsecond calls jitter by tens of percent.
        """
        size = max(self.options.block_size, 3)
        deadline = time.perf_counter() + WARMUP_MAX_EXTRA_S
        change = tolerance = None
        extra_calls = 0
        if previous_ms is not None and len(previous_ms) < 3:
            previous_ms = None  # a leftover chunk of one or two calls says too little
        for _ in range(WARMUP_MAX_EXTRA_BLOCKS):
            current_ms = self._block(side, "warmup", size)
            extra_calls += size
            if previous_ms:
                previous, current = statistics.median(previous_ms), statistics.median(current_ms)
                if abs(current - previous) <= SETTLED_ABS_MS:
                    return  # below what the clocks resolve (also: a step with no measurable work)
                change = abs(current - previous) / previous if previous > 0 else float("inf")
                tolerance = max(WARMUP_SETTLED, _relative_iqr(previous_ms), _relative_iqr(current_ms))
                if change <= tolerance:
                    return
            previous_ms = current_ms
            if time.perf_counter() >= deadline:
                break
        moved = (f" (the last two blocks' medians differed by {change:.0%}, more than the {tolerance:.0%} "
                 "their spread allows)" if change is not None else "")
        self.warn(f"{side} warm-up did not settle within {extra_calls} extra calls{moved}: "
                  "the first measured blocks may still include warm-up effects")

    def accuracy_outputs(self) -> tuple[Any, Any]:
        """(compiled, eager) outputs to compare, each cloned right after its call.

        A training step compares the first step of each side; inference compares one
        fresh call of each side on input set 0 after warm-up.
        """
        if self.built.train:
            return self.compiled_first, self.eager_first
        args = self.built.input_sets[0]
        self.stage = "compiled"
        self._mark_step()
        compiled = keep(self._step("compiled")(args))
        self.stage = "eager"
        eager = keep(self.built.eager_step(args))
        self.clock.sync()
        return compiled, eager

    def measure(self) -> None:
        """Alternate eager and compiled blocks until ``iters`` per side or the time budget is spent."""
        options = self.options
        deadline = None if options.time_budget_s is None else time.perf_counter() + float(options.time_budget_s)
        use_stance = self.built.labels is None and callable(getattr(torch.compiler, "set_stance", None))
        if use_stance:
            torch.compiler.set_stance("fail_on_recompile")
            self.stance_used = True
        try:
            while min(self.measured.values()) < options.iters:
                for side in ("eager", "compiled"):
                    n = min(options.block_size, options.iters - self.measured[side])
                    if n > 0:
                        self._measured_block(side, n)
                if deadline is not None and time.perf_counter() >= deadline:
                    if min(self.measured.values()) < options.iters:
                        self.warn(f"the time budget of {options.time_budget_s:g} s ran out after "
                                  f"{min(self.measured.values())} of {options.iters} iterations per side")
                    break
        finally:
            if self.stance_used:
                self._lift_stance()

    def _measured_block(self, side: str, n: int) -> None:
        saved = dict(self._next_input)
        try:
            self._block(side, "measure", n)
        except RuntimeError as exc:
            if not (self.stance_used and side == "compiled" and is_recompile_refusal(exc)):
                raise
            # The partial block is dropped; the recompile runs untimed, then the block again.
            self._lift_stance()
            self.stance_used = False
            self.warn(f"recompiled during measurement ({_guard_failure(exc)}): that recompile ran untimed "
                      "and the block was measured again; later recompiles are timed")
            self._next_input = saved
            calls, _ = self._calls(side, n)
            self._next_input = dict(saved)
            self.stage = "compiled"
            for args in calls:
                self._mark_step()
                self._step("compiled")(args)
            self.clock.sync()
            self._block(side, "measure", n)
        self.measured[side] += n

    @staticmethod
    def _lift_stance() -> None:
        try:
            torch.compiler.set_stance("default")
        except Exception:
            pass


def _guard_failure(exc: BaseException) -> str:
    """``guard G['x'] == 2.0 failed at `code``` from a fail_on_recompile error (its first guard failure)."""
    text = str(exc)
    _, _, failures = text.partition("triggered by the following guard failure(s):")
    first = next((line.strip().lstrip("- ").strip() for line in failures.splitlines() if line.strip()), "")
    if not first:
        return " ".join(text.split())[:200]
    guard, _, rest = first.partition(" # ")
    guard = " ".join((guard.split(": ", 1)[-1] if guard[:1].isdigit() else guard).split())
    code = " ".join(rest.split(" # ")[0].split())
    return f"guard {guard} failed at `{code}`" if code else f"guard {guard} failed"
