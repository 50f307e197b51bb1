"""User workloads: the example asset runs, and every broken file gives a one-line error naming it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.worker.user_loader import UserWorkloadError, load_user_workload  # noqa: E402
from tui.engine.worker.workloads import build_workload  # noqa: E402

CPU = torch.device("cpu")
EXAMPLE = Path(__file__).resolve().parents[1] / "assets" / "workloads" / "example_workload.py"


def load(workload: str, **params):
    options = RunOptions(workload=workload, params=params).validated()
    return build_workload(options, CPU, torch.float32)


def write(tmp_path: Path, body: str, name: str = "wl.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def load_error(workload: str) -> str:
    with pytest.raises(UserWorkloadError) as info:
        load(workload)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_example_asset_loads_and_runs():
    built = load(str(EXAMPLE))
    assert built.train is False and len(built.input_sets) == 1
    out = built.eager_step(built.input_sets[0])
    assert out.shape == (64, 256)
    assert torch.isfinite(out).all()


def test_example_asset_takes_string_params():
    built = load(str(EXAMPLE), width="32", batch="4", depth="1")
    assert built.eager_step(built.input_sets[0]).shape == (4, 32)


@pytest.mark.slow  # a real dynamo trace: seconds
def test_example_asset_runs_compiled():
    torch._dynamo.reset()
    built = load(str(EXAMPLE), width="16", batch="2")
    compiled = built.compile_step(lambda target: torch.compile(target, backend="eager"))
    args = built.input_sets[0]
    torch.testing.assert_close(compiled(args), built.eager_step(args))
    torch._dynamo.reset()


def test_dict_form_named_factory_label_and_seed(tmp_path):
    path = write(tmp_path, """
        import torch

        def other(device, dtype, n=3):
            x = torch.randn(int(n), device=device, dtype=dtype)
            return {"fn": torch.cos, "inputs": [x], "label": "n=" + str(n)}
    """)
    built = load(f"{path}:other", n="5")
    assert built.labels == ["n=5"]
    (x,) = built.input_sets[0]
    torch.manual_seed(0)
    assert torch.equal(x, torch.randn(5))  # torch.manual_seed(options.seed) before the factory
    torch.testing.assert_close(built.eager_step(built.input_sets[0]), torch.cos(x))


def test_missing_file(tmp_path):
    """The options refuse a missing file; the loader says it too, for one that went after they were checked."""
    missing = tmp_path / "missing.py"
    with pytest.raises(UserWorkloadError) as info:
        build_workload(RunOptions(workload=str(missing)), CPU, torch.float32)
    message = str(info.value)
    assert message.startswith(f"{missing}: no such file (a user workload is path/to/file.py[:factory]; ")


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, """
        import torch

        def make_workload(device, dtype:
            return None
    """)
    message = load_error(str(path))
    assert f"{path}:4:" in message and "syntax error" in message


def test_import_error_names_file_and_line(tmp_path):
    path = write(tmp_path, """
        import torch
        VALUE = 1 / 0
    """)
    message = load_error(str(path))
    assert f"{path}:3:" in message and "ZeroDivisionError" in message


def test_no_factory(tmp_path):
    path = write(tmp_path, "import torch\n")
    message = load_error(str(path))
    assert f"{path} has no function make_workload(device, dtype, **params)" in message
    assert f"{path} has no function build(device" in load_error(f"{path}:build")


def test_a_misspelt_factory_is_refused_naming_the_files_functions_not_make_workload(tmp_path):
    """``good.py:nope`` said "expected make_workload(...)", a factory the user had not asked for."""
    path = write(tmp_path, """
        import torch
        from os.path import join

        def build_model(device, dtype, **params):
            return torch.nn.Linear(4, 4), (torch.randn(2, 4),)

        def _helper():
            pass
    """)
    message = load_error(f"{path}:build")
    assert f"{path} has no function build(device, dtype, **params) returning (callable, inputs_tuple)" in message
    assert "make_workload" not in message and message.endswith(
        f"; its functions: build_model (name one after a colon: {path}:build_model)"), message


def test_factory_raises_names_file_line_type_and_message(tmp_path):
    path = write(tmp_path, """
        import torch

        def make_workload(device, dtype, **params):
            raise ValueError("width must be even\\nsecond line")
    """)
    message = load_error(str(path))
    assert f"{path}:5:" in message
    assert "ValueError: width must be even second line" in message


@pytest.mark.parametrize(
    ("returned", "described"),
    [
        ("torch.zeros(2)", "a Tensor"),
        ("(torch.sin, 'x')", "a tuple of 2 (builtin_function_or_method, str)"),
        ("(1, (torch.ones(2),))", "a tuple of 2 (int, tuple)"),
        ("{'model': torch.sin}", "a dict with keys ['model']"),
        ("{'fn': torch.sin, 'inputs': (torch.ones(1),), 'label': 3}", "a dict with keys"),
    ],
)
def test_wrong_return_value_says_what_and_what_is_expected(tmp_path, returned, described):
    path = write(tmp_path, f"""
        import torch

        def make_workload(device, dtype, **params):
            return {returned}
    """)
    message = load_error(str(path))
    assert str(path) in message and f"returned {described}" in message
    assert "expected make_workload(device, dtype, **params) returning (callable, inputs_tuple)" in message


def test_loader_is_reachable_directly(tmp_path):
    path = write(tmp_path, """
        import torch

        def make_workload(device, dtype):
            return torch.nn.Identity(), torch.ones(2, device=device, dtype=dtype)
    """)
    options = RunOptions(workload=str(path)).validated()
    built = load_user_workload(options, CPU, torch.float64)
    assert built.input_sets[0][0].dtype == torch.float64  # a lone tensor is a 1-tuple
    assert built.bytes_per_call is None


@pytest.mark.parametrize("body, factory, params, said", [
    ("def make_workload(device, dtype, batch=8, width=64):\n    raise AssertionError('not called')\n",
     "", {"batchsize": 8}, "--param batchsize: make_workload has no parameter 'batchsize' (allowed: batch, width)"),
    ("def two(device, dtype):\n    raise AssertionError('not called')\n",
     ":two", {"batch": 8}, "--param batch: two has no parameter 'batch' (allowed: none: it takes (device, dtype) "
                           "alone)"),
])
def test_a_param_the_factory_cannot_take_is_named_with_the_ones_it_can(tmp_path, body, factory, params, said):
    # Called anyway, the factory raised Python's "got an unexpected keyword argument 'batchsize'", which names
    # neither the flag nor what would do.
    path = write(tmp_path, body)
    with pytest.raises(UserWorkloadError) as info:
        load(f"{path}{factory}", **params)
    assert str(info.value) == f"{path}: {said}"


def test_a_factory_with_star_args_takes_its_keyword_parameters(tmp_path):
    # *args takes device and dtype: the names after it are the parameters (a check that dropped the signature's
    # first two entries dropped *args and scale, and refused scale)
    path = write(tmp_path, """
        import torch
        def make_workload(*args, scale=2):
            return (lambda x: x * float(scale)), (torch.ones(2),)
    """)
    built = load(str(path), scale="3")
    assert built.eager_step(built.input_sets[0]).tolist() == [3.0, 3.0]
    with pytest.raises(UserWorkloadError, match=r"has no parameter 'size' \(allowed: scale\)"):
        load(str(path), size="3")


def test_a_factory_with_params_takes_every_name(tmp_path):
    path = write(tmp_path, """
        import torch
        def make_workload(device, dtype, **params):
            return (lambda x: x * 2), (torch.full((2,), float(params["anything"])),)
    """)
    built = load(str(path), anything="3")
    assert built.eager_step(built.input_sets[0]).tolist() == [6.0, 6.0]
