"""The timing method (docs/METHOD.md): eager first, compile timed apart, warm-up, then
alternating blocks of eager and compiled iterations, each block streamed as it is measured.

The clocks (:mod:`.clocks`: CUDA events per call on a GPU, ``perf_counter_ns`` on the CPU)
time each block; the block plan (:mod:`.blocks`) says how many calls each block gets.
Either way the block's host-inclusive time per call is reported as ``host_ms_per_call``.
Statistics are the parent's job.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable

import torch

from tui.engine.clocks import PERF_COUNTER
from tui.engine.protocol import BlockTimed, Event
from tui.engine.worker.accuracy import AccuracyOutputs, changed_leaves, fresh_copy, keep, rng_state
from tui.engine.worker.blocks import (
    WARMUP_MAX_EXTRA_BLOCKS,
    WARMUP_MAX_EXTRA_S,
    Settler,
    chunks,
    compiled_warmup_calls,
    eager_setup_calls,
    measure_round,
    settle_block_size,
)
from tui.engine.worker.clocks import (
    HEAD_START_MAX_MS,
    HEAD_START_MIN_MS,
    L2_FLUSH_BYTES,
    Clock,
    CpuClock,
    CudaClock,
    head_start_ms,
)

__all__ = ["Clock", "CpuClock", "CudaClock", "Benchmark", "make_compile_fn", "head_start_ms", "L2_FLUSH_BYTES",
           "HEAD_START_MIN_MS", "HEAD_START_MAX_MS", "is_recompile_refusal"]

Step = Callable[[tuple], Any]
Emit = Callable[[Event], None]


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


class Benchmark:
    """Drives one configuration through set-up, compile, warm-up and measurement.

    ``emit(event)`` sends a protocol event; ``warn(message)`` a warning.
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
        self.clock: Clock = CudaClock(device, options.l2_flush) if self.cuda else CpuClock()
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
        ms, host = self.clock.run_block(self._step(side), calls, prepare)
        if self.cuda:
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
            self.peak_mb[side] = max(self.peak_mb[side] or 0.0, round(peak, 3))
        self._emit_block(side, stage, ms, host, labels)
        return ms

    def _emit_block(self, side: str, stage: str, ms: list[float], host: float, labels: list[str] | None,
                    clock: str | None = None) -> None:
        index = self._block_index.get((side, stage), 0)
        self._block_index[(side, stage)] = index + 1
        self.emit(BlockTimed(
            side=side, stage=stage, index=index, clock=clock or self.clock.info.name,
            ms=tuple(ms), host_ms_per_call=host, labels=tuple(labels) if labels else None,
            l2_flush=bool(self.options.l2_flush and self.cuda and stage == "measure"),
        ))

    def _chunks(self, total: int) -> list[int]:
        return chunks(total, self.options.block_size)

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
        rest = eager_setup_calls(len(self.built.input_sets))
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
                         clock=PERF_COUNTER.name)
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
        compiled = compiled_warmup_calls(self.options.warmup, len(self.built.input_sets))
        last: dict[str, list[float]] = {}
        for n in self._chunks(compiled):
            last["compiled"] = self._block("compiled", "warmup", n)
        for n in self._chunks(self.options.warmup):
            last["eager"] = self._block("eager", "warmup", n)
        if self.options.warmup > 0 and self.built.labels is None:
            for side in ("compiled", "eager"):
                self._settle(side, last.get(side))

    def _settle(self, side: str, previous_ms: list[float] | None) -> None:
        """Warm ``side`` up a block at a time until two consecutive block medians agree (:class:`.blocks.Settler`)."""
        size = settle_block_size(self.options.block_size)
        deadline = time.perf_counter() + WARMUP_MAX_EXTRA_S
        settler = Settler(previous_ms)
        extra_calls = 0
        for _ in range(WARMUP_MAX_EXTRA_BLOCKS):
            current_ms = self._block(side, "warmup", size)
            extra_calls += size
            if settler.add(current_ms):
                return
            if time.perf_counter() >= deadline:
                break
        self.warn(settler.unsettled_warning(side, extra_calls))

    def accuracy_outputs(self) -> AccuracyOutputs:
        """What the accuracy check compares (:func:`.accuracy.judge`), each output cloned right after its call.

        Two eager calls from the same state on fresh copies of input set 0 (so a call that
        changes its inputs in place cannot change what the next one sees), then the compiled
        side. Inference: both eager calls and the compiled call run now, after warm-up. A
        training step compares the first step of each side; the second eager step starts from
        a fresh copy of the initial model (``reference_step``), so the eager side's own model
        and optimizer are not touched. Runs once, outside every timed block.
        """
        args = self.built.input_sets[0]
        again_step = getattr(self.built, "reference_step", None) or self.built.eager_step
        self.stage = "eager"
        if self.built.train:
            eager, compiled = self.eager_first, self.compiled_first
        else:
            eager = keep(self.built.eager_step(fresh_copy(args)))
        copied = fresh_copy(args)
        before = rng_state(self.device)
        eager_again = keep(again_step(copied))
        after = rng_state(self.device)
        random = any(not torch.equal(a, b) for a, b in zip(before, after))
        mutated = changed_leaves(args, copied)
        del copied
        if not self.built.train:
            self.stage = "compiled"
            self._mark_step()
            compiled = keep(self._step("compiled")(fresh_copy(args)))
        self.clock.sync()
        return AccuracyOutputs(compiled=compiled, eager=eager, eager_again=eager_again, mutated=mutated, random=random)

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
                for side, n in measure_round(options.iters, options.block_size, self.measured):
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
