"""Accuracy on the GPU against the fp64 reference: low-precision ResNets are no false alarm, a miscompile is caught.

The model file (workloads/resnet_lowp.py: torchvision's resnet18, or a ResNet of the same blocks)
builds itself in bf16 or fp16 while the run's dtype option stays at float32, as a user's file
does; under the old rule (allclose at the option's 1e-4) such runs failed on one ulp. Each test
prints the accuracy's numbers (``pytest -s``) for docs/BENCHMARKS.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_gpu_suite import _ok, _options, run_all
from tui.engine.store.results import RunRecord

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
RESNET = str(Path(__file__).parent / "workloads" / "resnet_lowp.py")


def _show(record: RunRecord) -> str:
    a = record.accuracy
    return (f"{record.options.label()} {dict(record.options.params)}: {a.verdict} against {a.reference}; "
            f"compiled vs fp64 RMSE {a.compiled_rmse_fp64}, max abs {a.compiled_max_abs_err_fp64}; "
            f"eager vs fp64 RMSE {a.eager_rmse_fp64}, max abs {a.eager_max_abs_err_fp64}; "
            f"compiled vs eager max abs {a.max_abs_err}, max rel {a.max_rel_err}; note {a.fp64_note}")


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_a_resnet_built_in_low_precision_is_no_false_alarm(precision):
    records = run_all([_options(RESNET, mode=mode, params={"precision": precision})
                       for mode in ("default", "reduce-overhead")])
    for record in records:
        _ok(record)
        print(_show(record))
        assert record.options.dtype == "float32"
        assert (record.accuracy.passed, record.accuracy.reference, record.accuracy.fp64_note) == (True, "fp64", None), \
            _show(record)
        assert not any("differed from eager" in w for w in record.warnings), record.warnings


def test_a_miscompiled_resnet_is_caught():
    (record,) = run_all([_options(RESNET, params={"precision": "bfloat16", "wrong": "1"})])
    _ok(record)
    print(_show(record))
    assert (record.accuracy.passed, record.accuracy.reference) == (False, "fp64"), _show(record)
    assert record.accuracy.compiled_max_abs_err_fp64 > 10 * record.accuracy.eager_max_abs_err_fp64
    assert any(w.startswith("the compiled output differed from eager at output: ") for w in record.warnings)
