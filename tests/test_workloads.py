"""The built-in workloads build, run eagerly on the CPU, and keep the builder contract."""

from __future__ import annotations

import dataclasses
import functools

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from tui.engine.catalog import WORKLOADS  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.worker.workloads import (  # noqa: E402
    BuiltWorkload,
    SeedCNN,
    TrainingStep,
    build_workload,
    graph_break_fn,
)

CPU = torch.device("cpu")

TINY = {
    "matmul": {"n": 8},
    "pointwise": {"n": 8},
    "cnn": {"batch": 2},
    "mlp": {"batch": 4, "width": 8, "depth": 2},
    "transformer_block": {"batch": 2, "seq": 4, "width": 8, "heads": 2},
    "graph_break": {"n": 8},
    "dynamic_shapes": {"shapes": 3, "batch": 2, "width": 8},
}


def expected_shapes(name: str, p: dict) -> list[tuple[int, ...]]:
    """The output shape of each input set, from the workload's parameters."""
    if name in ("matmul", "pointwise", "graph_break"):
        return [(p["n"], p["n"])]
    if name == "cnn":
        return [(p["batch"], 10)]
    if name == "mlp":
        return [(p["batch"], p["width"])]
    if name == "transformer_block":
        return [(p["batch"], p["seq"], p["width"])]
    return [(p["batch"] * k, p["width"]) for k in range(1, p["shapes"] + 1)]


def build(name: str, params: dict | None = None, dtype=torch.float32, **fields) -> tuple[BuiltWorkload, dict]:
    options = RunOptions(workload=name, params=params or {}, **fields).validated()
    return build_workload(options, CPU, dtype), options.params


def identity(target, **kwargs):
    return target


def test_builtworkload_fields_match_the_architecture_contract():
    names = [f.name for f in dataclasses.fields(BuiltWorkload)]
    assert names == ["eager_step", "compile_step", "input_sets", "labels", "flops_fn", "bytes_per_call", "train",
                     "reference_step", "fp64"]


@pytest.mark.parametrize("sizes", ["cpu_defaults", "tiny"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_builtin_runs_eagerly_with_the_right_shapes(name, sizes):
    built, params = build(name, TINY[name] if sizes == "tiny" else None)
    assert built.train is False
    outputs = [built.eager_step(args) for args in built.input_sets]
    assert [tuple(o.shape) for o in outputs] == expected_shapes(name, params)
    assert all(o.dtype == torch.float32 and torch.isfinite(o).all() for o in outputs)
    first_input = built.input_sets[0][0]
    assert first_input.std() > 0.5  # random data, never zeros
    assert built.bytes_per_call > 0


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("matmul", lambda x: x @ x.T),
        ("pointwise", lambda x: x * x + torch.sin(x)),
    ],
)
def test_functions_compute_what_the_catalog_says(name, reference):
    built, _ = build(name, {"n": 8})
    (x,) = built.input_sets[0]
    torch.testing.assert_close(built.eager_step((x,)), reference(x))
    rectangular = torch.randn(3, 5)
    torch.testing.assert_close(built.eager_step((rectangular,)), reference(rectangular))


def test_seed_decides_the_data():
    a, _ = build("mlp", TINY["mlp"], seed=1)
    b, _ = build("mlp", TINY["mlp"], seed=1)
    c, _ = build("mlp", TINY["mlp"], seed=2)
    assert torch.equal(a.eager_step(a.input_sets[0]), b.eager_step(b.input_sets[0]))
    assert not torch.equal(a.input_sets[0][0], c.input_sets[0][0])


def test_cnn_linear_is_fixed_to_6x6_and_the_seeds_28x28_would_not_run():
    model = SeedCNN()
    assert model.fc.in_features == 64 * 6 * 6
    x = torch.randn(2, 3, 32, 32)
    assert model(x).shape == (2, 10)
    seed_fc = torch.nn.Linear(64 * 28 * 28, 10)
    features = torch.flatten(torch.nn.functional.max_pool2d(model.conv2(
        torch.nn.functional.max_pool2d(model.conv1(x), 2)), 2), 1)
    with pytest.raises(RuntimeError):
        seed_fc(features)


def test_matmul_flops_and_bytes():
    built, params = build("matmul", {"n": 16})
    n = params["n"]
    with FlopCounterMode(display=False) as counter:
        built.flops_fn(built.input_sets[0])
    assert counter.get_total_flops() == 2 * n**3
    assert built.bytes_per_call == 2 * n * n * 4  # fp32 input + output


def test_bytes_count_inputs_parameters_and_outputs():
    built, p = build("mlp", TINY["mlp"])
    b, w, depth = p["batch"], p["width"], p["depth"]
    params = (depth + 1) * (w * w + w)
    assert built.bytes_per_call == 4 * (b * w + params + b * w)
    pointwise, p = build("pointwise", {"n": 8})
    assert pointwise.bytes_per_call == 2 * 8 * 8 * 4
    assert pointwise.flops_fn is None  # FlopCounterMode counts no pointwise ops
    half, _ = build("pointwise", {"n": 8}, dtype=torch.bfloat16)
    assert half.bytes_per_call == pointwise.bytes_per_call // 2


def test_transformer_flops_are_counted():
    built, p = build("transformer_block", TINY["transformer_block"])
    with FlopCounterMode(display=False) as counter:
        built.flops_fn(built.input_sets[0])
    b, s, w = p["batch"], p["seq"], p["width"]
    linear_flops = 2 * b * s * (w * 3 * w + w * w + 2 * w * 4 * w)
    assert counter.get_total_flops() >= linear_flops


@pytest.mark.parametrize("name", [n for n, spec in WORKLOADS.items() if spec.supports_train])
def test_training_sides_are_separate_copies(name):
    built, _ = build(name, TINY[name], train=True)
    assert built.train is True
    step: TrainingStep = built.eager_step.__self__
    compiled_step = built.compile_step(identity)
    eager_model, compiled_model = step.eager_model, step.compiled_model
    assert eager_model is not compiled_model
    eager_params = list(eager_model.parameters())
    compiled_params = list(compiled_model.parameters())
    assert all(a is not b and torch.equal(a, b) for a, b in zip(eager_params, compiled_params, strict=True))
    before = [p.detach().clone() for p in compiled_params]

    args = built.input_sets[0]
    eager_out = built.eager_step(args)
    assert all(not torch.equal(a, b) for a, b in zip(eager_params, before, strict=True))  # the eager copy moved
    assert all(torch.equal(a, b) for a, b in zip(compiled_params, before, strict=True))  # the compiled copy did not

    compiled_out = compiled_step(args)
    assert set(eager_out) == {"loss", "grads"} and eager_out["loss"].ndim == 0
    assert len(eager_out["grads"]) == len(eager_params)
    # both first steps start from identical parameters: identical loss and gradients
    assert torch.equal(eager_out["loss"], compiled_out["loss"])
    assert all(torch.equal(a, b) for a, b in zip(eager_out["grads"], compiled_out["grads"], strict=True))


def test_training_flops_fn_leaves_the_eager_side_untouched():
    built, _ = build("mlp", TINY["mlp"], train=True)
    step: TrainingStep = built.eager_step.__self__
    before = [p.detach().clone() for p in step.eager_model.parameters()]
    with FlopCounterMode(display=False) as counter:
        built.flops_fn(built.input_sets[0])
    assert counter.get_total_flops() > 0
    assert all(torch.equal(a, b) for a, b in zip(step.eager_model.parameters(), before, strict=True))
    assert all(p.grad is None for p in step.eager_model.parameters())
    assert not step.eager_optimizer.state


def test_training_targets_stay_long_and_losses_differ_by_task():
    cnn, p = build("cnn", TINY["cnn"], dtype=torch.bfloat16, train=True)
    x, target = cnn.input_sets[0]
    assert x.dtype == torch.bfloat16 and target.dtype == torch.long
    assert target.shape == (p["batch"],) and 0 <= int(target.min()) and int(target.max()) < 10
    out = cnn.eager_step(cnn.input_sets[0])
    assert out["loss"].dtype == torch.bfloat16
    assert all(g.dtype == torch.bfloat16 for g in out["grads"])


def test_compile_optimizer_compiles_the_step_without_fullgraph():
    calls = []

    def recorder(target, **kwargs):
        calls.append((target, kwargs))
        return target

    compile_fn = functools.partial(recorder, fullgraph=True)
    plain, _ = build("mlp", TINY["mlp"], train=True)
    plain.compile_step(compile_fn)
    assert len(calls) == 1 and isinstance(calls[0][0], torch.nn.Module)

    calls.clear()
    both, _ = build("mlp", TINY["mlp"], train=True, compile_optimizer=True)
    step = both.compile_step(compile_fn)
    assert [kwargs["fullgraph"] for _, kwargs in calls] == [True, False]  # model, optimizer step
    assert not isinstance(calls[1][0], torch.nn.Module)
    assert set(step(both.input_sets[0])) == {"loss", "grads"}


@pytest.mark.slow  # a real dynamo trace of a whole training step: seconds
def test_one_real_compile_of_a_training_step_matches_eager():
    torch._dynamo.reset()
    built, _ = build("mlp", TINY["mlp"], train=True, compile_optimizer=True)
    compiled = built.compile_step(functools.partial(torch.compile, backend="eager"))
    args = built.input_sets[0]
    for _ in range(2):
        eager_out, compiled_out = built.eager_step(args), compiled(args)
        torch.testing.assert_close(compiled_out["loss"], eager_out["loss"])
        for a, b in zip(compiled_out["grads"], eager_out["grads"], strict=True):
            torch.testing.assert_close(a, b)
    torch._dynamo.reset()


def test_inference_compile_leaves_the_eager_side_eager():
    torch._dynamo.reset()
    built, _ = build("mlp", TINY["mlp"])
    model = built.eager_step.__closure__[0].cell_contents
    assert all(not p.requires_grad for p in model.parameters())
    compiled = built.compile_step(functools.partial(torch.compile, backend="eager"))
    args = built.input_sets[0]
    torch.testing.assert_close(compiled(args), built.eager_step(args))
    frames = torch._dynamo.utils.counters["frames"]["total"]
    built.eager_step(args)
    assert torch._dynamo.utils.counters["frames"]["total"] == frames
    torch._dynamo.reset()


def test_graph_break_really_breaks_on_the_data():
    torch._dynamo.reset()
    built, _ = build("graph_break", TINY["graph_break"])
    (x,) = built.input_sets[0]
    assert torch._dynamo.explain(graph_break_fn)(x).graph_break_count >= 1
    # the branch follows the values: sin is odd, so -x takes the other branch
    y = torch.sin(x)
    positive, negative = (x, -x) if y.sum() > 0 else (-x, x)
    torch.testing.assert_close(graph_break_fn(positive), torch.sin(positive) * 2 + 1)
    torch.testing.assert_close(graph_break_fn(negative), torch.sin(negative) - 1)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="(?i)data-dependent|generic_jump"):
        built.compile_step(functools.partial(torch.compile, backend="eager", fullgraph=True))(built.input_sets[0])
    torch._dynamo.reset()


def test_dynamic_shapes_cycles_distinct_labelled_batches():
    built, p = build("dynamic_shapes", {"shapes": 5, "batch": 3, "width": 8})
    batches = [args[0].shape[0] for args in built.input_sets]
    assert batches == [3, 6, 9, 12, 15]
    assert built.labels == [f"batch={b}" for b in batches]
    assert len(set(batches)) == p["shapes"]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_bfloat16_is_a_cast_of_parameters_and_inputs(name):
    built, _ = build(name, TINY[name], dtype=torch.bfloat16)
    for args in built.input_sets:
        assert args[0].dtype == torch.bfloat16
        assert built.eager_step(args).dtype == torch.bfloat16
    target = getattr(built.eager_step, "__closure__", None)
    module = target[0].cell_contents if target else None
    if isinstance(module, torch.nn.Module):
        assert all(p.dtype == torch.bfloat16 for p in module.parameters())


def test_unknown_workload_is_refused():
    options = RunOptions(workload="mlp").validated()
    with pytest.raises(ValueError, match="unknown"):
        build_workload(dataclasses.replace(options, workload="nope"), CPU, torch.float32)
