"""The fp64-reference accuracy rule: constructed errors per dtype, integers, NaN, the reference and its fallback.

The rule itself (tui/engine/worker/fp64_rule.py) is tested on tensors built to sit a known number
of ulps from a float64 truth; the whole judgement (tui/engine/worker/accuracy.py ``judge``) on the
same tensors with and without a reference; the reference (tui/engine/worker/fp64_reference.py) and
the Benchmark's accuracy call in-process on the CPU, with a compiled output made wrong on purpose.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

torch = pytest.importorskip("torch")

from tui.engine.worker.accuracy import AccuracyOutputs, judge, tolerances  # noqa: E402
from tui.engine.worker.fp64_reference import (  # noqa: E402
    HEADROOM_BYTES,
    Fp64Model,
    fp64_reference,
    fp64_unsupported,
    memory_needed,
    to_float64,
)
from tui.engine.worker.fp64_rule import FLOORS, floor, judge_leaf, multiplier  # noqa: E402
from tui.engine.worker.tally import dtype_tolerances  # noqa: E402

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
NO_FIRST = (0.0, 0.0)  # skip the allclose tried first: the fp64 measures alone decide


def _truth(n: int = 4096, seed: int = 0, scale: float = 10.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=generator, dtype=torch.float64) * scale


def _ulps_off(truth: torch.Tensor, dtype: torch.dtype, ulps: float, seed: int) -> torch.Tensor:
    """``truth`` moved by up to ``ulps`` ulps of ``dtype`` at random, then rounded to ``dtype``."""
    generator = torch.Generator().manual_seed(seed)
    noise = (torch.rand(truth.shape, generator=generator, dtype=torch.float64) * 2 - 1) * ulps
    return (truth * (1 + noise * torch.finfo(dtype).eps)).to(dtype)


def _judge64(compiled, eager, ref, dtype, first=NO_FIRST):
    return judge_leaf(compiled.double(), eager.double(), ref, dtype, first)


def _typical(truth: torch.Tensor) -> int:
    """The index of an element of about the tensor's RMS."""
    rms = truth.square().mean().sqrt()
    return int((truth.abs() - rms).abs().argmin())


# ----- the rule on constructed tensors --------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compiled_a_few_ulps_from_fp64_like_eager_passes(dtype):
    truth = _truth()
    eager, compiled = _ulps_off(truth, dtype, 3, seed=1), _ulps_off(truth, dtype, 3, seed=2)
    assert not torch.equal(eager, compiled)
    verdict = _judge64(compiled, eager, truth, dtype)
    assert verdict.passed, verdict.why
    assert verdict.score <= 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("wrong", ["ten-percent", "sign"])
def test_one_wrong_element_fails(dtype, wrong):
    truth = _truth()
    eager, compiled = _ulps_off(truth, dtype, 1, seed=1), _ulps_off(truth, dtype, 1, seed=2)
    index = _typical(truth)
    compiled[index] = compiled[index] * (1.1 if wrong == "ten-percent" else -1.0)
    verdict = _judge64(compiled, eager, truth, dtype, dtype_tolerances(dtype))
    assert not verdict.passed and verdict.score > 0, verdict
    assert verdict.errors.compiled_units > verdict.multiplier * verdict.errors.eager_units + 1


def test_the_worst_element_catches_what_the_rmse_lets_through():
    """bf16, one element of 4096 10% off: within 3 x eager's RMSE + the floor, far beyond its worst element."""
    truth = _truth()
    eager, compiled = _ulps_off(truth, torch.bfloat16, 1, seed=1), _ulps_off(truth, torch.bfloat16, 1, seed=2)
    compiled[_typical(truth)] *= 1.1
    verdict = _judge64(compiled, eager, truth, torch.bfloat16, dtype_tolerances(torch.bfloat16))
    errors, (atol, rtol) = verdict.errors, floor(torch.bfloat16)
    assert errors.compiled_rmse <= 3 * errors.eager_rmse + atol + rtol * errors.ref_rms
    assert verdict.why.startswith("worst element "), verdict.why
    assert "tolerance units from fp64, beyond 3 x eager's" in verdict.why


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_element_a_little_off_fails_by_the_rmse(dtype):
    truth = _truth()
    eager = _ulps_off(truth, dtype, 1, seed=1)
    compiled = (truth * 1.08).to(dtype)  # 8% too large everywhere
    verdict = _judge64(compiled, eager, truth, dtype, dtype_tolerances(dtype))
    assert not verdict.passed and verdict.why.startswith("RMSE against fp64"), verdict


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compiled_closer_to_fp64_than_eager_passes_where_the_old_rule_failed(dtype):
    truth = _truth()
    eager = _ulps_off(truth, dtype, 12, seed=1)  # eager rounds after every op: many ulps off
    compiled = truth.to(dtype)  # compiled rounds once: correctly rounded
    verdict = _judge64(compiled, eager, truth, dtype)
    assert verdict.passed and verdict.errors.compiled_rmse < verdict.errors.eager_rmse
    if dtype != torch.float32:  # the run's dtype option left at float32 held this to 1e-4
        outputs = AccuracyOutputs(compiled=compiled, eager=eager, eager_again=eager.clone())
        assert judge(outputs, *tolerances(torch.float32))[0].passed is False


def test_the_floors_are_assert_closes_defaults_per_dtype():
    from torch.testing._comparison import default_tolerances

    for dtype in (*DTYPES, torch.float64):
        rtol, atol = default_tolerances(dtype)
        assert floor(dtype) == FLOORS[dtype] == (atol, rtol)
    assert floor(torch.float8_e4m3fn)[1] == 2 * torch.finfo(torch.float8_e4m3fn).eps


def test_the_multiplier_is_larger_for_half_precision_and_small_tensors():
    assert multiplier(torch.float32, 4096) == 2.0
    assert multiplier(torch.float32, 10) == 3.0
    assert multiplier(torch.bfloat16, 4096) == multiplier(torch.float16, 4096) == 3.0


def test_allclose_with_eager_passes_a_less_accurate_but_correct_reduction():
    """A big fp32 sum in another order than eager's cascade sum: further from fp64 than eager, by far,
    and still within 1e-4 of eager (what PyTorch's harness tries first)."""
    truth = torch.tensor([1000.0], dtype=torch.float64)
    eager, compiled = torch.tensor([1000.0001]), torch.tensor([1000.003])
    assert not _judge64(compiled, eager, truth, torch.float32).passed
    assert _judge64(compiled, eager, truth, torch.float32, dtype_tolerances(torch.float32)).passed


def test_tf32_needs_no_tolerance_of_its_own():
    """TF32-sized errors (about 1e-3 relative) on both sides pass; the same on compiled alone fails."""
    truth = _truth()
    tf32 = torch.finfo(torch.float32).eps * 2**13  # 10 mantissa bits instead of 23
    eager = (truth * (1 + (torch.rand(truth.shape, dtype=torch.float64) * 2 - 1) * tf32)).float()
    compiled = (truth * (1 + (torch.rand(truth.shape, dtype=torch.float64) * 2 - 1) * tf32)).float()
    first = dtype_tolerances(torch.float32)
    assert _judge64(compiled, eager, truth, torch.float32, first).passed
    exact = truth.float()
    assert not _judge64(compiled, exact, truth, torch.float32, first).passed


# ----- the whole judgement: integers, NaN, what is recorded ----------------------------------


def _with_fp64(compiled, eager, fp64, **fields) -> AccuracyOutputs:
    return AccuracyOutputs(compiled=compiled, eager=eager, eager_again=eager, fp64=fp64, fp64_ran=True, **fields)


def test_tf32_allowed_lets_compiled_use_it_where_eager_did_not():
    """Under TF32 allowed (PyTorch's default for cuDNN), eager's convolution may pick an exact kernel and
    compiled's a TF32 one: compiled far from fp64, eager not, and still what the setting permits. The
    run's TF32 tolerance is tried first; without TF32 in effect the same outputs fail."""
    truth = _truth(scale=1.0)
    tf32 = torch.finfo(torch.float32).eps * 2**13
    compiled = (truth * (1 + (torch.rand(truth.shape, dtype=torch.float64) * 2 - 1) * tf32)).float()
    eager = truth.float()
    allowed, _ = judge(_with_fp64(compiled, eager, truth), *tolerances(torch.float32, tf32=True))
    assert allowed.passed is True
    ieee, _ = judge(_with_fp64(compiled, eager, truth), *tolerances(torch.float32, tf32=False))
    assert ieee.passed is False


def test_judge_records_both_errors_against_fp64_as_the_largest_over_outputs():
    truth = {"a": _truth(seed=3), "b": _truth(seed=4, scale=100.0)}
    eager = {k: _ulps_off(v, torch.bfloat16, 4, seed=5) for k, v in truth.items()}
    compiled = {k: v.to(torch.bfloat16) for k, v in truth.items()}
    result, warnings = judge(_with_fp64(compiled, eager, truth), *tolerances(torch.float32))
    assert (result.passed, result.reference, result.fp64_note) == (True, "fp64", None) and warnings == []
    b = truth["b"]
    assert result.eager_rmse_fp64 == pytest.approx(float((eager["b"].double() - b).square().mean().sqrt()))
    assert result.compiled_max_abs_err_fp64 == pytest.approx(float((compiled["b"].double() - b).abs().max()))
    assert result.eager_max_abs_err_fp64 > result.compiled_max_abs_err_fp64
    assert result.compiled_rmse_fp64 < result.eager_rmse_fp64
    # the old columns keep meaning compiled vs eager
    assert result.max_abs_err == pytest.approx(float((compiled["b"].double() - eager["b"].double()).abs().max()))


def test_a_failure_names_the_output_and_the_measure():
    truth = _truth()
    eager = _ulps_off(truth, torch.float32, 2, seed=1)
    compiled = eager.clone()
    compiled[_typical(truth)] *= -1
    result, warnings = judge(_with_fp64({"y": compiled}, {"y": eager}, {"y": truth}), *tolerances(torch.float32))
    assert (result.passed, result.worst, result.reference) == (False, "output['y']", "fp64")
    assert warnings[-1].startswith("the compiled output differed from eager at output['y']: output['y']: RMSE against "
                                   "fp64 0.")
    assert warnings[-1].endswith(" (float32)")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_integer_and_bool_outputs_compare_exactly(dtype):
    eager = torch.arange(1000, 1100).to(dtype) if dtype != torch.bool else torch.arange(100) % 3 == 0
    result, _ = judge(_with_fp64(eager.clone(), eager, eager.double()), *tolerances(torch.bfloat16))
    assert result.passed is True
    compiled = eager.clone()
    compiled[7] = ~compiled[7] if dtype == torch.bool else compiled[7] + 1
    # the old bf16 tolerance (5e-2 + 5e-2 x 1007) would have let an index be off by 50
    for fp64_ran in (True, False):
        outputs = dataclasses.replace(_with_fp64(compiled, eager, eager.double()), fp64_ran=fp64_ran)
        result, warnings = judge(outputs, *tolerances(torch.bfloat16))
        name = str(dtype).removeprefix("torch.")
        assert (
            result.passed is False
            and result.problem == f"output: 1 of 100 element(s) differ ({name}: compared exactly)"
        )


def test_nan_in_compiled_where_eager_is_finite_always_fails():
    truth = _truth(n=64)
    eager = truth.float()
    compiled = eager.clone()
    compiled[3] = float("nan")
    fp64 = truth.clone()
    fp64[3] = float("nan")  # even where the reference itself is NaN
    result, _ = judge(_with_fp64(compiled, eager, fp64), *tolerances(torch.float32))
    assert result.passed is False and result.problem == "output: NaN in the compiled output only (1 element(s))"
    assert math.isnan(result.max_abs_err)


def test_eager_overflow_where_compiled_matches_fp64_is_eagers_not_the_compilers():
    x = torch.tensor([12.0, 1.0, -2.0], dtype=torch.float16)
    eager = torch.exp(x) * torch.exp(-x)  # exp(12) overflows fp16: inf * 0 ... NaN or inf
    eager[0] = float("nan")
    compiled = torch.ones(3, dtype=torch.float16)  # one kernel, fp32 inside: exactly 1
    fp64 = torch.exp(x.double()) * torch.exp(-x.double())
    result, warnings = judge(_with_fp64(compiled, eager, fp64), *tolerances(torch.float16))
    assert (result.passed, result.reference, result.compared) == (True, "fp64", 3)
    assert warnings == ["eager produces NaN or inf at output (1 element(s)) where the compiled output agrees with "
                        "the fp64 reference: eager's own overflow in its precision, not the compiler"]
    # without a reference it stays a failure, as before
    result, _ = judge(
        dataclasses.replace(_with_fp64(compiled, eager, fp64), fp64_ran=False), *tolerances(torch.float16)
    )
    assert result.passed is False and result.problem == "output: NaN in the eager output only (1 element(s))"
    # and a compiled value that is not the reference's fails too
    wrong = compiled.clone()
    wrong[0] = 5.0
    assert judge(_with_fp64(wrong, eager, fp64), *tolerances(torch.float16))[0].passed is False


def test_nan_on_all_three_sides_is_the_workloads_own():
    eager = torch.tensor([float("nan"), 1.0, 2.0])
    result, warnings = judge(_with_fp64(eager.clone(), eager, eager.double()), *tolerances(torch.float32))
    assert (result.passed, result.nan_both, result.reference) == (True, 1, "fp64")
    assert warnings[0].startswith("eager and compiled both produce NaN at output (1 of 3 element(s))")


def test_an_output_the_reference_cannot_serve_falls_back_to_the_old_rule_and_says_so():
    truth = _truth(n=64)
    eager = truth.float()
    fp64 = {"finite": truth, "ref_nan": torch.full((64,), float("nan"), dtype=torch.float64)}
    outputs = _with_fp64({"finite": eager.clone(), "ref_nan": eager + 1.0}, {"finite": eager, "ref_nan": eager}, fp64)
    result, warnings = judge(outputs, *tolerances(torch.float32))
    assert result.reference == "fp64" and result.passed is False  # the old rule: 1.0 beyond 1e-4
    assert result.fp64_note == ("output['ref_nan']: the fp64 reference is not finite at 64 element(s) where both "
                                "outputs are; compared with eager")
    structure, _ = judge(_with_fp64(eager.clone(), eager, (truth, truth)), *tolerances(torch.float32))
    assert (structure.passed, structure.reference) == (True, "eager")
    assert structure.fp64_note.startswith("the fp64 copy's output differs in structure (2 vs 1 leaves)")


def test_a_reference_the_model_kept_in_low_precision_is_noted():
    truth = _truth(n=64)
    eager = truth.to(torch.bfloat16)
    result, _ = judge(_with_fp64(eager.clone(), eager, eager.clone()), *tolerances(torch.float32))
    assert result.passed is True
    assert result.fp64_note == "output: the fp64 copy returned bfloat16 (the model sets that dtype itself)"


def test_without_a_reference_a_failure_says_it_was_judged_against_eager_only():
    eager = torch.ones(4)
    note = "no fp64 reference: float64 is not supported on MPS"
    outputs = AccuracyOutputs(compiled=eager + 0.5, eager=eager, eager_again=eager, fp64_note=note)
    result, warnings = judge(outputs, 1e-4, 1e-4)
    assert (result.passed, result.reference, result.fp64_note) == (False, "eager", note)
    assert result.compiled_rmse_fp64 is None and result.eager_rmse_fp64 is None
    assert warnings == ["the compiled output differed from eager at output: max abs err 0.5 beyond atol 0.0001 + "
                        f"rtol 0.0001 x |eager| (judged against eager only: {note})"]


# ----- the reference ------------------------------------------------------------------------------


def _linear_bf16() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(16, 8).to(torch.bfloat16).requires_grad_(False)


def test_the_reference_runs_a_float64_copy_and_leaves_the_model_alone():
    model = _linear_bf16()
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    ran, out, note = fp64_reference(Fp64Model(model, lambda m, args: m(*args)), (x,), torch.device("cpu"))
    assert (ran, note) == (True, None)
    assert out.dtype == torch.float64
    expected = torch.nn.functional.linear(x.double(), model.weight.double(), model.bias.double())
    assert torch.equal(out, expected)
    assert model.weight.dtype == torch.bfloat16 and x.dtype == torch.bfloat16


def test_to_float64_casts_floating_tensors_only():
    cast = to_float64((torch.ones(2, dtype=torch.float16), torch.arange(3), {"m": torch.nn.Linear(2, 2)}, "s"))
    assert cast[0].dtype == torch.float64 and cast[1].dtype == torch.int64 and cast[3] == "s"
    assert cast[2]["m"].weight.dtype == torch.float64


def test_no_reference_where_float64_is_unsupported():
    mps = torch.device("mps")
    assert fp64_unsupported(mps) == "float64 is not supported on MPS"
    ran, out, note = fp64_reference(Fp64Model(_linear_bf16(), lambda m, args: m(*args)), (torch.ones(1, 16),), mps)
    assert (ran, out, note) == (False, None, "no fp64 reference: float64 is not supported on MPS")


def test_no_reference_where_the_copy_would_not_fit():
    model = Fp64Model(_linear_bf16(), lambda m, args: m(*args))
    x = torch.ones(4, 16)
    need = memory_needed(model, (x,))
    assert need == 2 * (8 * (16 * 8 + 8) + 8 * 64) + HEADROOM_BYTES
    assert memory_needed(dataclasses.replace(model, train=True), (x,)) == need + 3 * 8 * (16 * 8 + 8)
    ran, _, note = fp64_reference(model, (x,), torch.device("cpu"), free=lambda device: 100 * 2**20)
    assert ran is False
    assert note == "no fp64 reference: a float64 copy needs about 256 MiB, 100 MiB free on cpu"
    assert fp64_reference(model, (x,), torch.device("cpu"), free=lambda device: need)[0] is True


def test_no_reference_where_the_model_fails_in_float64():
    weight = torch.randn(16, 8, dtype=torch.bfloat16)  # a closure's tensor is not cast

    def fn(x):
        return x @ weight

    ran, _, note = fp64_reference(Fp64Model(fn, lambda f, args: f(*args)), (torch.ones(2, 16, dtype=torch.bfloat16),),
                                  torch.device("cpu"))
    assert ran is False and note.startswith("no fp64 reference: the model failed in float64 (RuntimeError: ")


# ----- the Benchmark's accuracy call, in-process on the CPU ------------------------------------------


def _checked(built, **fields):
    from test_worker_accuracy import _checked as checked

    return checked(built, **fields)


def _inference(fn, *args):
    from tui.engine.worker.workloads import inference_workload

    return inference_workload(fn, [args], None)


def _wrong(built, index: int = 0):
    """``built`` with a compiled side whose output has element ``index`` negated: a miscompile."""

    def compile_step(compile_fn):
        step = built.compile_step(compile_fn)

        def wrong_step(args):
            out = step(args).clone()
            out.view(-1)[index] = -out.view(-1)[index]
            return out

        return wrong_step

    return dataclasses.replace(built, compile_step=compile_step)


def test_a_model_built_in_bf16_passes_and_a_wrong_compiled_output_is_caught():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64))
    model = model.to(torch.bfloat16).requires_grad_(False).eval()
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    result, warnings, _ = _checked(_inference(model, x))
    assert (result.passed, result.reference, result.fp64_note) == (True, "fp64", None) and warnings == []
    assert result.compiled_rmse_fp64 == result.eager_rmse_fp64 > 0  # the eager backend: the same numbers
    eager_out = model(x).double()
    index = int((eager_out.abs() - eager_out.square().mean().sqrt()).abs().argmin())
    result, warnings, _ = _checked(_wrong(_inference(model, x), index))
    assert (result.passed, result.reference) == (False, "fp64")
    assert result.compiled_max_abs_err_fp64 > 10 * result.eager_max_abs_err_fp64
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("the compiled output differed from eager at output: output: RMSE against fp64 ")
    assert warnings[0].endswith(" (bfloat16)")


def test_a_training_step_is_judged_against_an_fp64_step():
    from tui.engine.options import RunOptions
    from tui.engine.worker.workloads import build_workload

    options = RunOptions(workload="mlp", params={"batch": 4, "width": 16, "depth": 1}, train=True).validated()
    torch.manual_seed(0)
    built = build_workload(options, torch.device("cpu"), torch.float32)
    initial = {k: v.clone() for k, v in built.fp64.source.state_dict().items()}
    result, warnings, bench = _checked(built, workload="mlp", train=True)
    assert (result.passed, result.reference, result.fp64_note) == (True, "fp64", None) and warnings == []
    assert result.compared == 1 + sum(p.numel() for p in built.fp64.source.parameters())
    assert 0 < result.eager_rmse_fp64 < 1e-5
    # the fp64 step started from the initial model and left it as it was
    assert all(torch.equal(v, built.fp64.source.state_dict()[k]) for k, v in initial.items())


def test_the_benchmark_falls_back_and_says_why_when_the_model_fails_in_fp64():
    weight = torch.randn(16, 8)

    def fn(x):
        return (x @ weight.to(x.dtype)).float() if x.dtype == torch.float32 else x.float() @ weight.half()

    result, warnings, _ = _checked(_inference(fn, torch.randn(4, 16)))
    assert (result.passed, result.reference) == (True, "eager") and warnings == []
    assert result.fp64_note.startswith("no fp64 reference: the model failed in float64 (RuntimeError: ")


def test_free_memory_on_the_cpu_is_the_kernels_mem_available(tmp_path):
    from tui.engine.worker.fp64_reference import _mem_available, free_bytes

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       32000000 kB\nMemFree:         1000 kB\nMemAvailable:   2000000 kB\n")
    assert _mem_available(str(meminfo)) == 2000000 * 1024
    assert _mem_available(str(tmp_path / "missing")) is None  # not Linux: the copy is tried, a failure noted
    assert free_bytes(torch.device("meta")) is None
