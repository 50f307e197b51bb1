"""What the worker reports about a run, as typed values (no torch here).

The worker builds these, the protocol carries them, the parent's :class:`~tui.engine.store.results.RunRecord`
keeps them, and every view reads their fields by name: one name per quantity, from the worker
to the CSV. Each is frozen and decoded once (:mod:`tui.typed`): a field of the wrong
type becomes its default and a warning, never a surprise downstream.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tui.typed import JsonRecord

__all__ = ["Env", "PRECISION_FLAGS", "Diagnostics", "CompileTimes", "Accuracy", "Memory", "Explain"]


@dataclass(frozen=True)
class Env(JsonRecord):
    """The worker's process and device (the ``started`` event): versions, GPU, precision settings."""

    torch: str | None = None
    cuda: str | None = None
    triton: str | None = None
    cudnn: int | None = None
    python: str | None = None
    python_executable: str | None = None
    platform: str | None = None
    cpu: str | None = None
    cpu_count: int | None = None
    device: str | None = None
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    driver: str | None = None
    compute_capability: str | None = None
    gpu_memory_mb: int | None = None
    cuda_visible_devices: str | None = None
    cuda_device_order: str | None = None
    cxx: str | None = None
    num_threads: int | None = None
    tf32_matmul: bool | None = None
    tf32_cudnn: bool | None = None
    float32_matmul_precision: str | None = None
    fp32_precision_matmul: str | None = None
    fp32_precision_cudnn: str | None = None
    node: str | None = None
    """The host the worker ran on (its hostname): the machine of each row of a multi-node sweep."""
    cpu_affinity: str | None = None
    """The cores the worker could run on (``0-7``; Linux cpu-list), when it was pinned or restricted."""
    fp32_precision_mkldnn_matmul: str | None = None
    """oneDNN's (the CPU's) ``fp32_precision`` for matmuls (torch 2.9 on; ``none``: not set, inherited)."""
    fp32_precision_mkldnn_conv: str | None = None
    """oneDNN's ``fp32_precision`` for convolutions."""


PRECISION_FLAGS: tuple[str, ...] = (
    "tf32_matmul", "tf32_cudnn", "float32_matmul_precision", "fp32_precision_matmul", "fp32_precision_cudnn",
    "fp32_precision_mkldnn_matmul", "fp32_precision_mkldnn_conv",
)  # fmt: skip
"""The fields of :class:`Env` that say torch's precision settings in effect: CUDA's (TF32 for matmuls and
cuDNN, the legacy and the new API), the float32 matmul precision both devices read, and the CPU's (oneDNN,
torch's ``mkldnn`` backend). The worker reads each (``tui.engine.worker.precision``), and each is a CSV column."""


@dataclass(frozen=True)
class CompileTimes(JsonRecord):
    """Summed compile-phase times in seconds (nested: dynamo includes aot_autograd includes inductor)."""

    dynamo: float | None = None
    aot_autograd: float | None = None
    inductor: float | None = None
    inductor_code_gen: float | None = None
    triton: float | None = None
    backward: float | None = None


@dataclass(frozen=True)
class Explain(JsonRecord):
    """A separate ``torch._dynamo.explain`` pass (``COMPILE_LAB_EXPLAIN=1``), or its error."""

    graph_count: int | None = None
    graph_break_count: int | None = None
    break_reasons: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Diagnostics(JsonRecord):
    """What dynamo's counters and compilation records say about a compiled run.

    ``None`` means not known (the worker did not get that far, or an old record); 0 is a count.
    """

    graph_breaks: int | None = None
    graph_break_reasons: tuple[str, ...] = ()
    unique_graphs: int | None = None
    calls_captured: int | None = None
    resumes: int | None = None
    frames_total: int | None = None
    frames_ok: int | None = None
    recompiles: int | None = None
    recompile_reasons: tuple[str, ...] = ()
    recompile_limit_hit: bool | None = None
    recompile_limit: int | None = None
    recompiles_during_measure: int | None = None
    fail_on_recompile_stance: bool | None = None
    cudagraph_skips: int | None = None
    cudagraph_skip_reasons: tuple[str, ...] = ()
    fxgraph_cache_hit: int | None = None
    fxgraph_cache_miss: int | None = None
    fxgraph_cache_bypass: int | None = None
    compilations: int | None = None
    compile_times_s: CompileTimes = field(default_factory=CompileTimes)
    explain: Explain | None = None

    def merged(self, new: Diagnostics) -> Diagnostics:
        """``new`` over these: a field ``new`` leaves at its default keeps this one's value.

        The ``measured`` event's diagnostics add to those of ``compiled`` (a count reported only at compile
        time is kept), as the dict update of protocol 1 did.
        """
        default = Diagnostics()
        changes = {f.name: getattr(new, f.name) for f in dataclasses.fields(Diagnostics)
                   if getattr(new, f.name) != getattr(default, f.name)}  # fmt: skip
        return dataclasses.replace(self, **changes) if changes else self


@dataclass(frozen=True)
class Accuracy(JsonRecord):
    """Compiled output against eager and an fp64 reference: errors, tolerances and the verdict.

    ``passed`` None: not checked. ``max_abs_err`` and ``max_rel_err`` are compiled against eager,
    whichever rule decided.
    """

    max_abs_err: float | None = None
    max_rel_err: float | None = None
    atol: float | None = None
    """The old rule's tolerance (eager against eager; compiled against eager without an fp64 reference)."""
    rtol: float | None = None
    passed: bool | None = None
    compared: int | None = None
    worst: str | None = None
    problem: str | None = None
    reference: str | None = None
    """What compiled was judged against: ``fp64`` (the fp64 rule), ``eager`` (the old rule), or why not judged."""
    eager_repeatable: bool | None = None
    """Whether a second eager call on a fresh copy of the inputs agreed with the first (None: not known)."""
    nan_both: int | None = None
    """Elements NaN at the same place in both outputs: left out of the errors, a warning, not a failure."""
    compiled_rmse_fp64: float | None = None
    """The largest over the outputs of the RMSE of compiled against the fp64 reference (None: no reference)."""
    eager_rmse_fp64: float | None = None
    """The same for eager: the yardstick compiled is held to."""
    compiled_max_abs_err_fp64: float | None = None
    """The largest absolute error of compiled against the fp64 reference."""
    eager_max_abs_err_fp64: float | None = None
    """The largest absolute error of eager against the fp64 reference."""
    fp64_note: str | None = None
    """Why there is no fp64 reference (and the old rule judged), or which outputs it could not serve."""

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` or ``n/a`` (not checked)."""
        if self.passed is None:
            return "n/a"
        return "pass" if self.passed else "fail"


@dataclass(frozen=True)
class Memory(JsonRecord):
    """Peak CUDA memory per side (MiB; None on the CPU) and the L2-flush buffer, if any."""

    eager_peak_mb: float | None = None
    compiled_peak_mb: float | None = None
    l2_flush_buffer_mb: float | None = None

    @property
    def peak_mb(self) -> float | None:
        """The larger of the two sides' peaks, or None when neither was measured."""
        values = [v for v in (self.eager_peak_mb, self.compiled_peak_mb) if v is not None]
        return max(values) if values else None
