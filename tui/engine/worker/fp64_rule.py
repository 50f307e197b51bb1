"""The fp64-reference rule: a compiled output fails only when it is further from float64 than eager is.

The idea is PyTorch's own accuracy check for its benchmark suites: ``benchmarks/dynamo/common.py``
runs a float64 copy of the model on the same inputs, and ``torch/_dynamo/utils.py``'s ``same()``
(its ``fp64_ref`` path) first tries ``allclose`` between eager and compiled at a fixed tolerance;
where that fails, compiled passes when the RMSE of compiled against the fp64 output is at most a
multiplier (2, or 3 for half precision and for small tensors) times eager's RMSE against it, plus a
small tolerance term. Eager's own error is the yardstick: where eager rounds after every op (a bf16
model) or TF32 rounds the inputs of every matmul, eager's error grows and so does what compiled may
be off by, so no tolerance has to guess the precision the model really computes in.

Ours, for one floating output tensor (``c`` compiled, ``e`` eager, ``r`` the fp64 reference, all
finite, compared in float64; :func:`judge_leaf`):

* **allclose first**: ``|c - e| <= atol + rtol * |e|`` with the tolerance the old rule gives the
  dtype this output has (``first_tol``), not the run's ``dtype`` option. A correct compiled
  reduction may sum in another order than eager's cascade sum and land further from fp64 than
  eager does while staying well within this of it.
* **RMSE**: ``rmse(c - r) <= m * rmse(e - r) + atol_d + rtol_d * rms(r)``.
* **worst element**: each element's error in units of ``atol_d + rtol_d * max(|r_i|, rms(r))``
  (the tensor's own scale, so elements near zero are not held to nothing); compiled's worst must be
  at most ``m`` times eager's worst plus one unit. The RMSE alone would let one element of a large
  tensor be 10% off or change sign; this does not.
* ``m`` (:func:`multiplier`): 2; 3 for fp16/bf16 outputs and for fewer than 1000 elements, as
  the harness does.
* ``atol_d``, ``rtol_d`` (:func:`floor`): ``torch.testing.assert_close``'s defaults for the
  output's dtype (fp32 atol 1e-5 / rtol 1.3e-6, bf16 1e-5 / 1.6e-2, fp16 1e-5 / 1e-3, fp64 1e-7 /
  1e-7): what a correct result may be off by when eager happens to be exact.

Integer and bool outputs, NaN and infinities are the caller's business (:mod:`.accuracy`): they
compare exactly or by where they are, never by this rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["FLOORS", "floor", "multiplier", "Fp64Errors", "LeafVerdict", "fp64_errors", "judge_leaf",
           "SMALL_TENSOR"]

#: ``torch.testing.assert_close``'s default (atol, rtol) per dtype: the floor of the rule.
FLOORS: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-5, 1e-3),
    torch.bfloat16: (1e-5, 1.6e-2),
    torch.float32: (1e-5, 1.3e-6),
    torch.float64: (1e-7, 1e-7),
}
#: Fewer elements than this get the larger multiplier (noise dominates a small tensor's error).
SMALL_TENSOR = 1000
_HALF = (torch.float16, torch.bfloat16)


def floor(dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) of the floor for an output of ``dtype`` (another float: 2 ulps, as bf16's)."""
    if dtype in FLOORS:
        return FLOORS[dtype]
    return 1e-5, 2 * torch.finfo(dtype).eps


def multiplier(dtype: torch.dtype, numel: int) -> float:
    """How many times eager's error compiled may have: 3 for half precision or a small tensor, else 2."""
    return 3.0 if dtype in _HALF or dtype.itemsize < 2 or numel < SMALL_TENSOR else 2.0


@dataclass(frozen=True)
class Fp64Errors:
    """One output's errors against the fp64 reference: RMSE, largest absolute error, worst element in units."""

    compiled_rmse: float
    eager_rmse: float
    compiled_max_abs: float
    eager_max_abs: float
    compiled_units: float
    eager_units: float
    ref_rms: float


@dataclass(frozen=True)
class LeafVerdict:
    """What :func:`judge_leaf` found for one output tensor.

    ``score`` orders outputs by how close they came to failing: at most 0 passes (the allclose
    excess when that passed, else the larger of the two measures over what it may be, minus 1).
    ``why`` says which measure failed, with its numbers; None when the output passed.
    """

    errors: Fp64Errors
    multiplier: float
    atol: float
    rtol: float
    score: float
    why: str | None

    @property
    def passed(self) -> bool:
        """True when the output passed (allclose, or both fp64 measures)."""
        return self.why is None


def _rms(values: torch.Tensor) -> float:
    return math.sqrt(float(values.square().mean())) if values.numel() else 0.0


def fp64_errors(compiled: torch.Tensor, eager: torch.Tensor, ref: torch.Tensor, atol: float,
                rtol: float) -> Fp64Errors:
    """The errors of both sides against ``ref`` (finite float64 tensors of one shape)."""
    ref_rms = _rms(ref)
    units = atol + rtol * torch.clamp(ref.abs(), min=ref_rms)
    c_err, e_err = (compiled - ref).abs(), (eager - ref).abs()

    def most(values: torch.Tensor) -> float:
        return float(values.max()) if values.numel() else 0.0

    return Fp64Errors(compiled_rmse=_rms(c_err), eager_rmse=_rms(e_err), compiled_max_abs=most(c_err),
                      eager_max_abs=most(e_err), compiled_units=most(c_err / units),
                      eager_units=most(e_err / units), ref_rms=ref_rms)


def judge_leaf(compiled: torch.Tensor, eager: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype,
               first_tol: tuple[float, float]) -> LeafVerdict:
    """Judge one floating output (finite float64 tensors of one shape; ``dtype``: what the output has).

    ``first_tol`` is the (atol, rtol) of the allclose tried first (see the module docstring).
    """
    atol, rtol = floor(dtype)
    m = multiplier(dtype, ref.numel())
    errors = fp64_errors(compiled, eager, ref, atol, rtol)
    first_atol, first_rtol = first_tol
    excess = (compiled - eager).abs() - (first_atol + first_rtol * eager.abs())
    close_excess = float(excess.max()) if excess.numel() else 0.0
    if close_excess <= 0:
        return LeafVerdict(errors, m, atol, rtol, close_excess, None)
    allowed_rmse = m * errors.eager_rmse + atol + rtol * errors.ref_rms
    allowed_units = m * errors.eager_units + 1.0
    rmse_ratio, units_ratio = errors.compiled_rmse / allowed_rmse, errors.compiled_units / allowed_units
    score = max(rmse_ratio, units_ratio) - 1.0
    why = None
    if rmse_ratio > 1.0:
        why = (f"RMSE against fp64 {errors.compiled_rmse:.3g}, beyond {m:g} x eager's {errors.eager_rmse:.3g} "
               f"+ floor {atol + rtol * errors.ref_rms:.3g} ({dtype_name(dtype)})")
    elif units_ratio > 1.0:
        why = (f"worst element {errors.compiled_units:.3g} tolerance units from fp64, beyond {m:g} x eager's "
               f"{errors.eager_units:.3g} + 1 (a unit: {atol:g} + {rtol:g} x max(|fp64|, its RMS "
               f"{errors.ref_rms:.3g}), {dtype_name(dtype)})")
    return LeafVerdict(errors, m, atol, rtol, score, why)


def dtype_name(dtype: torch.dtype) -> str:
    """``bfloat16`` for ``torch.bfloat16``."""
    return str(dtype).removeprefix("torch.")
