"""Compiled-vs-eager comparison, tolerances and FLOP counting."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tui.engine.worker.accuracy import compare, keep, tolerances  # noqa: E402
from tui.engine.worker.flops import count_flops  # noqa: E402


def test_identical_outputs_pass_with_zero_error():
    x = torch.randn(16, 16)
    result = compare(x.clone(), x, 1e-4, 1e-4)
    assert result.passed is True and result.max_abs_err == 0.0 and result.compared == 256


def test_an_error_beyond_tolerance_fails_and_names_where():
    ref = {"loss": torch.tensor(1.0), "grads": [torch.ones(4), torch.ones(3)]}
    got = keep(ref)
    got["grads"][1][2] += 0.01
    result = compare(got, ref, 1e-4, 1e-4)
    assert result.passed is False
    assert result.worst == "output['grads'][1]"
    assert result.max_abs_err == pytest.approx(0.01, rel=1e-3)
    assert result.max_rel_err == pytest.approx(0.01, rel=1e-3)


def test_relative_error_near_zero_does_not_decide():
    ref = torch.tensor([0.0, 1.0])
    got = torch.tensor([1e-6, 1.0])
    result = compare(got, ref, 1e-4, 1e-4)
    assert result.passed is True and result.max_rel_err > 0.5


def test_nan_never_passes_even_on_both_sides():
    nan = torch.tensor([float("nan"), 1.0])
    result = compare(nan.clone(), nan, 1.0, 1.0)
    assert result.passed is False and "NaN" in result.problem
    assert math.isnan(result.max_abs_err)


def test_matching_infinities_pass_and_a_lone_inf_fails():
    ref = torch.tensor([float("inf"), 1.0])
    assert compare(ref.clone(), ref, 1e-4, 1e-4).passed is True
    assert compare(torch.tensor([1.0, 1.0]), ref, 1e-4, 1e-4).passed is False


def test_structure_and_shape_mismatches_fail():
    assert compare((torch.ones(2),), (torch.ones(2), torch.ones(2)), 1, 1).passed is False
    result = compare(torch.ones(2), torch.ones(3), 1, 1)
    assert result.passed is False and "shape" in result.problem


def test_bf16_outputs_compare_in_float64():
    ref = torch.randn(64, dtype=torch.bfloat16)
    assert compare(ref.clone(), ref, *tolerances(torch.bfloat16)).passed is True


def test_tolerances_loosen_for_tf32_max_autotune_and_low_precision():
    assert tolerances(torch.float32) == (1e-4, 1e-4)
    assert tolerances(torch.float32, tf32=True) == (1e-2, 1e-2)
    assert tolerances(torch.float32, mode="max-autotune-no-cudagraphs") == (1e-2, 1e-2)
    assert tolerances(torch.bfloat16)[0] >= 2e-2
    assert tolerances(torch.float16) == (1e-2, 1e-2)


def test_keep_clones_so_a_later_overwrite_does_not_change_it():
    out = torch.ones(3)
    kept = keep({"a": [out]})
    out.fill_(5.0)
    assert kept["a"][0].tolist() == [1.0, 1.0, 1.0]


def test_flops_of_a_matmul_are_counted_and_pointwise_is_none():
    x = torch.randn(32, 32)
    flops, warning = count_flops(lambda args: args[0] @ args[0], (x,))
    assert flops == 2 * 32**3 and warning is None
    assert count_flops(lambda args: args[0] * 2 + torch.sin(args[0]), (x,)) == (None, None)
    assert count_flops(None, (x,)) == (None, None)
    flops, warning = count_flops(lambda args: 1 / 0, (x,))
    assert flops is None and warning.startswith("FLOPs were not counted: ZeroDivisionError")
