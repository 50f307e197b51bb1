"""The timing method (docs/METHOD.md): eager first, compile timed apart, warm-up, then
interleaved rounds of eager and compiled blocks, each block streamed as it is measured.

The clocks (:mod:`.clocks`: on a GPU CUDA events per call in pipelined device sub-blocks and
a plain loop per block for the host-inclusive time, ``perf_counter_ns`` on the CPU) time each
block; the block plan (:mod:`.blocks`) says how many calls each block gets, which side goes
first in a round, and when the speedup's interval is narrow enough (``target_ci``). Every
measure block carries its per-call times (``ms``), its host-inclusive time per call
(``host_ms_per_call``) and when it ran (``t_start`` / ``t_end``, ``time.monotonic()``).
Statistics are the parent's job; the worker computes the interval only to decide when to
stop measuring towards ``target_ci``.

Garbage collection stays on while measuring, as in the workload's own loop (it pays for the
collections its allocations cause); one full collection after compiling, before warming up,
keeps the compiler's garbage out of the timed blocks. Not right before measuring: that pause
(0.1 s or more with torch's objects) rests a power-capped GPU, whose first rounds then run at a
higher clock; the warm-up loads the GPU again after it (docs/METHOD.md).
(``torch.utils.benchmark.Timer`` turns the collector off instead;
``benchmarks/host_factors.py`` measures the difference.)

Each side's peak memory is read around its set-up, compile and warm-up blocks, which run the
same calls as the measured ones; measure rounds leave the allocator's statistics alone (reading
them costs the host a fraction of a millisecond while the GPU waits).
"""

from __future__ import annotations

import functools
import gc
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

import torch

from tui.engine.measure.clocks import PERF_COUNTER
from tui.engine.protocol import BlockTimed, Event
from tui.engine.worker.accuracy import AccuracyOutputs, changed_leaves, fresh_copy, keep, rng_state
from tui.engine.worker.failures import RunFailed
from tui.engine.worker.blocks import (
    WARMUP_MAX_EXTRA_BLOCKS,
    WARMUP_MAX_EXTRA_S,
    IntervalTarget,
    Settler,
    chunks,
    compiled_warmup_calls,
    eager_setup_calls,
    extra_round,
    measure_round,
    interval_target,
    settle_block_size,
)
from tui.engine.worker.clocks import (
    HEAD_START_MAX_MS,
    HEAD_START_MIN_MS,
    L2_FLUSH_BYTES,
    BlockRun,
    BlockSpec,
    Clock,
    CpuClock,
    CudaClock,
    head_start_ms,
)
from tui.engine.worker.fp64_reference import fp64_reference

__all__ = ["Clock", "CpuClock", "CudaClock", "Benchmark", "make_compile_fn", "head_start_ms", "L2_FLUSH_BYTES",
           "HEAD_START_MIN_MS", "HEAD_START_MAX_MS", "is_recompile_refusal", "refuse_lazy_output"]

log = logging.getLogger(__name__)

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


def refuse_lazy_output(output: Any) -> None:
    """RunFailed when the first eager call returned a generator or a coroutine instead of its result.

    Calling a generator (or ``async``) function only creates the generator: its body never runs,
    so both sides would time nothing, and two such objects are never equal (the accuracy check
    would blame "non-deterministic kernels").
    """
    lazy = ("a generator" if inspect.isgenerator(output) or inspect.isasyncgen(output)
            else "a coroutine" if inspect.iscoroutine(output) else None)
    if lazy is None:
        return
    name = getattr(output, "__qualname__", None) or type(output).__name__
    if inspect.iscoroutine(output):
        output.close()  # never awaited on purpose: no "was never awaited" warning
    kind = "an async function" if lazy == "a coroutine" else "a generator function (it yields)"
    raise RunFailed("workload_error", f"forward returns {lazy}: {name} is {kind}, so calling it never runs its body "
                                      "and there is nothing to time; return the result instead")


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
        #: Each measure block's per-call times, per side (what the parent's interval is computed from).
        self.measure_ms: dict[str, list[list[float]]] = {"eager": [], "compiled": []}
        self._rounds = 0
        #: The interval check of a run with ``target_ci`` (None before measuring, or without a target).
        self.target: IntervalTarget | None = None

    # ----- plumbing ------------------------------------------------------

    def _calls(self, side: str, n: int) -> tuple[list[tuple], list[str] | None]:
        sets, labels = self.built.input_sets, self.built.labels
        indices = [(self._next_input[side] + i) % len(sets) for i in range(n)]
        self._next_input[side] += n
        return [sets[i] for i in indices], ([labels[i] for i in indices] if labels else None)

    def mark_step(self) -> None:
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
        """Time ``n`` calls of one side on their own, emit them as one block event, return their times (ms)."""
        calls, labels = self._calls(side, n)
        self.stage = side
        self._reset_peak()
        run = self.clock.run_block(self._step(side), calls, self._prepare(side))
        self._note_peak(side)
        self._emit_block(side, stage, run, labels)
        return run.ms

    def _prepare(self, side: str) -> Callable[[], None] | None:
        return self.mark_step if side == "compiled" else None

    def _reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)

    def _note_peak(self, side: str) -> None:
        if self.cuda:
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
            self.peak_mb[side] = max(self.peak_mb[side] or 0.0, round(peak, 3))

    def _emit_block(self, side: str, stage: str, run: BlockRun, labels: list[str] | None,
                    clock: str | None = None) -> None:
        index = self._block_index.get((side, stage), 0)
        self._block_index[(side, stage)] = index + 1
        self.emit(BlockTimed(
            side=side, stage=stage, index=index, clock=clock or self.clock.info.name,
            ms=tuple(run.ms), host_ms_per_call=run.host_ms_per_call, labels=tuple(labels) if labels else None,
            l2_flush=bool(self.options.l2_flush and self.cuda and stage == "measure"),
            t_start=run.t_start, t_end=run.t_end,
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
        refuse_lazy_output(output)
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
        self.mark_step()
        self.clock.sync()
        t_start = time.monotonic()
        start = time.perf_counter()
        output = self.compiled_step(args)
        self.clock.sync()
        self.compile_s = time.perf_counter() - start
        t_end = time.monotonic()
        if self.built.train:
            self.compiled_first = keep(output)
        del output
        self._next_input["compiled"] = 1
        labels = [self.built.labels[0]] if self.built.labels else None
        self._emit_block("compiled", "compile", BlockRun([self.compile_s * 1e3], self.compile_s * 1e3, t_start, t_end),
                         labels, clock=PERF_COUNTER.name)
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
        # The compiler's garbage is collected now, not inside a timed block (module docstring).
        gc.collect()
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
        and optimizer are not touched. Last, the same first call on a float64 copy of the
        workload (:func:`.fp64_reference.fp64_reference`), the reference compiled is judged
        against. Runs once, outside every timed block.
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
        random = any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
        mutated = changed_leaves(args, copied)
        del copied
        if not self.built.train:
            self.stage = "compiled"
            self.mark_step()
            compiled = keep(self._step("compiled")(fresh_copy(args)))
        self.clock.sync()
        self.stage = "eager"
        ran, fp64, note = fp64_reference(getattr(self.built, "fp64", None), args, self.device)
        self.clock.sync()
        return AccuracyOutputs(compiled=compiled, eager=eager, eager_again=eager_again, mutated=mutated, random=random,
                               fp64=fp64, fp64_ran=ran, fp64_note=note, train=bool(self.built.train))

    def measure(self) -> None:
        """Interleaved rounds until ``iters`` per side (or ``time_budget_s`` runs out), then, with
        ``target_ci`` (or on the CPU by default: :func:`.blocks.interval_target`), more rounds until the
        speedup's interval meets it or the budget runs out."""
        options = self.options
        started = time.perf_counter()
        deadline = None if options.time_budget_s is None else started + float(options.time_budget_s)
        use_stance = self.built.labels is None and callable(getattr(torch.compiler, "set_stance", None))
        if use_stance:
            torch.compiler.set_stance("fail_on_recompile")
            self.stance_used = True
        try:
            goal = interval_target(options.target_ci, options.time_budget_s, options.timeout_s, not self.cuda)
            if self._measure_iters(deadline) and goal is not None:
                target, budget, warns = goal
                self._measure_to_target(target, started, started + budget, warns)
        finally:
            if self.stance_used:
                self._lift_stance()

    def _measure_iters(self, deadline: float | None) -> bool:
        """Rounds until ``iters`` per side; False when the time budget ran out first (with a warning)."""
        iters = self.options.iters
        while min(self.measured.values()) < iters:
            self._measured_round(measure_round(iters, self.options.block_size, self.measured, self._rounds))
            if deadline is not None and time.perf_counter() >= deadline:
                if min(self.measured.values()) < iters:
                    self.warn(f"the time budget of {self.options.time_budget_s:g} s ran out after "
                              f"{min(self.measured.values())} of {iters} iterations per side")
                    return False
                break
        return True

    def _measure_to_target(self, target: float, started: float, deadline: float, warns: bool = True) -> None:
        """More rounds until the interval is at most ``target`` wide (hi/lo - 1), or ``deadline`` (then a
        warning, if ``warns``).

        The interval is checked when the check is due (:class:`.blocks.IntervalTarget`: every
        few rounds, its cost kept under a tenth of the time measured) and once more at the end.
        """
        check = self.target = IntervalTarget(target, time.perf_counter)
        while True:
            out_of_time = time.perf_counter() >= deadline
            if (out_of_time or check.due()) and check.check(self.measure_ms["eager"], self.measure_ms["compiled"]):
                return
            if out_of_time:
                if warns:
                    self.warn(check.unmet_warning(time.perf_counter() - started))
                return
            self._measured_round(extra_round(self.options.block_size, self._rounds))

    def _round_specs(self, plan: list[tuple[str, int]]) -> list[tuple[str, BlockSpec, list[str] | None]]:
        """Each planned block's side, what the clock runs, and its input labels."""
        specs = []
        for side, n in plan:
            calls, labels = self._calls(side, n)
            spec = BlockSpec(
                self._step(side), calls, self._prepare(side), begin=functools.partial(self._set_stage, side)
            )
            specs.append((side, spec, labels))
        return specs

    def _set_stage(self, side: str) -> None:
        self.stage = side

    def _measured_round(self, plan: list[tuple[str, int]]) -> None:
        """One measure round (the clock runs it; on a GPU pipelined), each block emitted as it is read.

        A recompile refused by the ``fail_on_recompile`` stance drops the blocks of the round
        not yet emitted; the recompile runs untimed (the compiled block's calls once), then
        those blocks are measured again with the same inputs, and the run carries a warning.
        """
        waiting = self._round_specs(plan)  # not emitted yet
        running = list(waiting)

        def done(index: int, run: BlockRun) -> None:
            item = running[index]
            side, _spec, labels = item
            self._emit_block(side, "measure", run, labels)
            self.measure_ms[side].append(run.ms)
            self.measured[side] += len(run.ms)
            waiting[:] = [w for w in waiting if w is not item]  # by identity: calls hold tensors

        try:
            self.clock.run_round([spec for _, spec, _ in running], done)
        except RuntimeError as exc:
            if not (self.stance_used and self.stage == "compiled" and is_recompile_refusal(exc)):
                raise
            self.clock.sync()
            self._lift_stance()
            self.stance_used = False
            self.warn(f"recompiled during measurement ({_guard_failure(exc)}): that recompile ran untimed "
                      "and the block was measured again; later recompiles are timed")
            running = list(waiting)
            for side, spec, _ in running:
                if side == "compiled":
                    for args in spec.calls:
                        self.mark_step()
                        spec.step(args)
            self.clock.sync()
            self.clock.run_round([spec for _, spec, _ in running], done)
        self._rounds += 1

    @staticmethod
    def _lift_stance() -> None:
        try:
            torch.compiler.set_stance("default")
        except Exception:  # a torch without stances has none to lift
            log.debug("torch.compiler.set_stance failed", exc_info=True)


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
