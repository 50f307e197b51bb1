"""Compiled-vs-eager comparison, tolerances and FLOP counting."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tui.engine.worker.accuracy import (  # noqa: E402
    NOT_DETERMINISTIC,
    AccuracyOutputs,
    changed_leaves,
    compare,
    fresh_copy,
    judge,
    keep,
    rng_state,
    tolerances,
)
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


def test_nan_at_the_same_places_on_both_sides_is_counted_not_failed():
    nan = torch.tensor([float("nan"), 1.0, 2.0])
    result = compare(nan.clone(), nan, 1e-4, 1e-4)
    assert (result.passed, result.nan_both, result.compared, result.max_abs_err) == (True, 1, 2, 0.0)
    assert result.problem is None
    # the elements that are not NaN are still held to the tolerance
    off = nan.clone()
    off[2] += 0.5
    result = compare(off, nan, 1e-4, 1e-4)
    assert (result.passed, result.nan_both, result.worst) == (False, 1, "output")
    assert result.max_abs_err == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("compiled", "eager", "fragment"),
    [
        ([float("nan"), 1.0], [1.0, 1.0], "output: NaN in the compiled output only (1 element(s))"),
        ([1.0, 1.0], [1.0, float("nan")], "output: NaN in the eager output only (1 element(s))"),
        (
            [float("nan"), 1.0],
            [1.0, float("nan")],
            "output: NaN at different places in the two outputs (1 compiled, 1 eager)",
        ),
    ],
    ids=["compiled-only", "eager-only", "different-places"],
)
def test_nan_on_one_side_only_fails(compiled, eager, fragment):
    result = compare(torch.tensor(compiled), torch.tensor(eager), 1.0, 1.0)
    assert result.passed is False and result.problem == fragment
    assert math.isnan(result.max_abs_err)


@pytest.mark.parametrize(
    ("output", "why"),
    [
        (None, "the output is None"),
        (torch.empty(0, 4), "the output's tensors are empty"),
        ({"a": torch.empty(0)}, "the output's tensors are empty"),
        (("label", None), "the output holds no tensor (tuple)"),
        (torch.full((3,), float("nan")), "every element is NaN on both sides (3)"),
    ],
    ids=["none", "empty", "empty-in-dict", "no-tensor", "all-nan"],
)
def test_comparing_nothing_is_not_a_pass(output, why):
    result = compare(keep(output), output, 1e-4, 1e-4)
    assert result.passed is None and result.verdict == "n/a"
    assert result.problem == f"nothing to compare: {why}"
    assert result.max_abs_err is None and result.compared == 0


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


# ----- who is to blame: eager against eager first -------------------------------------------


def _outputs(compiled, eager, again=None, **flags) -> AccuracyOutputs:
    return AccuracyOutputs(compiled=compiled, eager=eager, eager_again=eager if again is None else again, **flags)


def test_judge_passes_a_matching_output_without_warnings():
    x = torch.randn(8)
    result, warnings = judge(_outputs(x.clone(), x), 1e-4, 1e-4)
    assert (result.passed, result.eager_repeatable, result.reference, result.nan_both) == (True, True, "eager", 0)
    assert warnings == []


def test_judge_blames_the_compiler_only_when_eager_repeats_itself():
    x = torch.ones(4)
    result, warnings = judge(_outputs(x + 0.5, x), 1e-4, 1e-4)
    assert (result.passed, result.eager_repeatable) == (False, True)
    assert warnings == ["the compiled output differed from eager at output: max abs err 0.5 beyond atol 0.0001 "
                        "+ rtol 0.0001 x |eager|"]


@pytest.mark.parametrize(
    ("flags", "cause"),
    [
        ({"random": True}, "likely cause: randomness: the eager call draws random numbers (dropout"),
        ({"mutated": ["input[0]"]}, "likely cause: inputs mutated in place (input[0])"),
        ({}, "likely cause: non-deterministic kernels, or state the call keeps and changes"),
    ],
    ids=["random", "mutated", "neither"],
)
def test_eager_that_disagrees_with_itself_is_not_blamed_on_the_compiler(flags, cause):
    eager = torch.zeros(4)
    again = torch.tensor([0.0, 0.0, 2.0, 0.0])
    result, warnings = judge(_outputs(again.clone(), eager, again, **flags), 1e-4, 1e-4)
    assert (result.passed, result.verdict, result.eager_repeatable) == (None, "n/a", False)
    assert result.reference == (f"{NOT_DETERMINISTIC}: two eager calls on copies of the same inputs differ "
                                "(max abs err 2 at output)")
    assert result.max_abs_err == pytest.approx(2.0)  # compiled vs eager, reported, not judged
    not_checked = [w for w in warnings if w.startswith("accuracy not checked: eager is not deterministic")]
    assert len(not_checked) == 1 and cause in not_checked[0]
    assert not any("differed from eager" in w for w in warnings)


def test_eager_within_tolerance_of_itself_is_repeatable():
    eager = torch.ones(4)
    result, warnings = judge(_outputs(eager.clone(), eager, eager + 1e-6), 1e-4, 1e-4)
    assert (result.passed, result.eager_repeatable) == (True, True) and warnings == []


def test_judge_warns_when_both_sides_produce_nan_and_still_checks_the_rest():
    eager = torch.tensor([float("nan"), 1.0, float("nan"), 3.0])
    result, warnings = judge(_outputs(eager.clone(), eager), 1e-4, 1e-4)
    assert (result.passed, result.nan_both, result.eager_repeatable) == (True, 2, True)
    assert warnings == ["eager and compiled both produce NaN at output (2 of 4 element(s)): the workload's own "
                        "arithmetic, not the compiler; the other elements were compared"]
    # NaN on one side only stays the compiler's failure
    result, warnings = judge(_outputs(torch.tensor([float("nan"), 1.0, 2.0, 3.0]), eager), 1e-4, 1e-4)
    assert result.passed is False
    assert warnings[-1] == ("the compiled output differed from eager at output: output: NaN in the eager output "
                            "only (1 element(s))")


def test_judge_says_nothing_was_compared():
    result, warnings = judge(_outputs(None, None), 1e-4, 1e-4)
    assert (result.passed, result.eager_repeatable) == (None, None)
    assert warnings == ["accuracy not checked: nothing to compare: the output is None"]


def test_judge_warns_about_inputs_changed_in_place():
    x = torch.ones(2)
    result, warnings = judge(_outputs(x.clone(), x, mutated=["input[0]", "input[1]"]), 1e-4, 1e-4)
    assert result.passed is True
    assert warnings == ["the workload changes its inputs in place (input[0], input[1]): every timed call starts "
                        "from other values; accuracy compared calls on fresh copies"]


def test_fresh_copy_keeps_views_strides_and_sharing_and_leaks_nothing():
    base = torch.arange(12.0)
    view = base[2::2]  # an offset, a stride of 2
    args = (view, base, {"n": 3})
    copied = fresh_copy(args)
    assert copied[0].stride() == view.stride() and copied[0].storage_offset() == view.storage_offset()
    copied[1].add_(100)  # the copies share storage as the originals do ...
    assert copied[0][0].item() == 102.0
    assert base[2].item() == 2.0 and view[0].item() == 2.0  # ... and the originals are untouched
    assert copied[2] == {"n": 3} and copied[2] is not args[2]


def test_fresh_copy_falls_back_to_clones_for_what_deepcopy_refuses():
    leaf = torch.ones(3, requires_grad=True)
    non_leaf = leaf * 2  # deepcopy refuses a non-leaf tensor that requires grad
    copied = fresh_copy((non_leaf, "x"))
    assert copied[1] == "x" and copied[0].requires_grad and copied[0].tolist() == [2.0, 2.0, 2.0]
    assert copied[0].data_ptr() != non_leaf.data_ptr()


def test_changed_leaves_names_what_a_call_changed_in_place():
    args = (torch.tensor([1.0, float("nan")]), torch.ones(2), 5)
    copied = fresh_copy(args)
    assert changed_leaves(args, copied) == []  # NaN equals NaN here
    copied[1].add_(1)
    assert changed_leaves(args, copied) == ["input[1]"]


def test_rng_state_moves_when_a_call_draws_random_numbers():
    cpu = torch.device("cpu")
    x = torch.ones(64)
    before = rng_state(cpu)
    torch.nn.functional.dropout(x, 0.5, training=False)
    x @ x
    assert all(torch.equal(a, b) for a, b in zip(before, rng_state(cpu), strict=True))
    torch.nn.functional.dropout(x, 0.5, training=True)
    assert not all(torch.equal(a, b) for a, b in zip(before, rng_state(cpu), strict=True))


# ----- the benchmark's accuracy calls, in-process on the CPU --------------------------------


class _Recorder:
    def __init__(self):
        self.events, self.warnings = [], []

    def emit(self, event):
        self.events.append(event)

    def warn(self, message):
        self.warnings.append(message)


def _checked(built, **option_fields):
    """Set-up, compile (dynamo, eager backend), warm-up, then the accuracy check: (result, warnings, bench, events)."""
    from tui.engine.options import RunOptions
    from tui.engine.worker.measure import Benchmark, make_compile_fn

    torch._dynamo.reset()
    options = RunOptions(backend="eager", warmup=1, iters=2, block_size=2, **option_fields)
    recorder = _Recorder()
    bench = Benchmark(built, options, torch.device("cpu"), recorder.emit, recorder.warn)
    bench.eager_setup()
    bench.compile(make_compile_fn(options))
    bench.warm_up()
    events_before, next_before = len(recorder.events), dict(bench._next_input)
    inputs_before = fresh_copy(built.input_sets[0])
    result, warnings = judge(bench.accuracy_outputs(), 1e-4, 1e-4)
    # outside every timed block: no block event, the input cycle where it was, the inputs as they were
    assert len(recorder.events) == events_before and bench._next_input == next_before
    assert changed_leaves(inputs_before, built.input_sets[0]) == []
    torch._dynamo.reset()
    return result, warnings, bench


def _inference(fn, *args):
    from tui.engine.worker.workloads import inference_workload

    return inference_workload(fn, [args], None)


def test_a_call_that_changes_its_input_in_place_is_compared_on_fresh_copies():
    result, warnings, _ = _checked(_inference(lambda t: t.add_(1) * 2, torch.ones(16)))
    assert (result.passed, result.eager_repeatable) == (True, True)
    assert warnings == ["the workload changes its inputs in place (input[0]): every timed call starts from other "
                        "values; accuracy compared calls on fresh copies"]


def test_dropout_in_training_mode_is_eager_that_disagrees_with_itself():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Dropout(0.5)).train().requires_grad_(False)
    result, warnings, _ = _checked(_inference(model, torch.randn(8, 32)))
    assert (result.passed, result.eager_repeatable) == (None, False)
    assert result.reference.startswith("eager is not deterministic: two eager calls on copies of the same inputs")
    assert any("likely cause: randomness" in w for w in warnings)
    assert not any("differed from eager" in w for w in warnings)


def test_the_same_model_in_eval_mode_passes():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Dropout(0.5)).eval().requires_grad_(False)
    result, warnings, _ = _checked(_inference(model, torch.randn(8, 32)))
    assert (result.passed, result.eager_repeatable) == (True, True) and warnings == []


def test_a_training_step_repeats_its_first_eager_step_on_a_fresh_model():
    from tui.engine.options import RunOptions
    from tui.engine.worker.workloads import build_workload

    options = RunOptions(workload="mlp", params={"batch": 4, "width": 16, "depth": 1}, train=True).validated()
    torch.manual_seed(0)
    built = build_workload(options, torch.device("cpu"), torch.float32)
    assert built.reference_step is not None
    step = built.eager_step.__self__
    result, warnings, bench = _checked(built, workload="mlp", train=True)
    state = {k: v.clone() for k, v in step.eager_model.state_dict().items()}
    again = keep(built.reference_step(built.input_sets[0]))
    # the repeat does not move the eager side's model (what is measured next) ...
    assert all(torch.equal(v, step.eager_model.state_dict()[k]) for k, v in state.items())
    # ... and it is the first eager step again
    assert compare(again, bench.eager_first, 0, 0).passed is True
    assert (result.passed, result.eager_repeatable) == (True, True) and warnings == []


def test_eager_differing_from_itself_by_nan_says_which_call():
    first = torch.tensor([1.0, 2.0])
    second = torch.tensor([float("nan"), 2.0])
    result, _ = judge(_outputs(first.clone(), first, second), 1e-4, 1e-4)
    assert result.reference == (f"{NOT_DETERMINISTIC}: two eager calls on copies of the same inputs differ "
                                "(output: NaN in the second call's output only (1 element(s)))")


def test_judge_warns_when_both_sides_produce_the_same_inf():
    eager = torch.tensor([float("-inf"), 1.0, float("inf")])
    result, warnings = judge(_outputs(eager.clone(), eager), 1e-4, 1e-4)
    assert (result.passed, result.nan_both) == (True, 0)
    assert warnings == ["eager and compiled both produce inf at output (2 element(s)), equal on both sides"]
    result, _ = judge(_outputs(torch.tensor([float("inf"), 1.0, float("inf")]), eager), 1e-4, 1e-4)
    assert result.passed is False and result.problem == "output: inf in one output only"
