"""Build the built-in workloads as tensors, models and step functions (worker only).

:func:`build_workload` turns validated :class:`~tui.engine.options.RunOptions` into a
:class:`~tui.engine.worker.built.BuiltWorkload` (:mod:`.built`, which a user's file is loaded into
too: :mod:`.user_loader`), the interface the measuring code uses (docs/ARCHITECTURE.md,
"Builder contract"). The same eager objects serve the eager side, the FLOP count and
the accuracy reference; the compiled side is made only when ``compile_step`` is called.

Choices that apply to every built-in:

* ``torch.manual_seed(options.seed)`` before any model or tensor is made; inputs are
  random (``randn``), never zeros, so accuracy checks and data-dependent branches mean
  something.
* ``dtype`` is a cast: parameters and floating-point inputs are made in ``dtype`` on
  both sides (not autocast). Class targets stay ``torch.long``.
* Inference: the eager and compiled sides share one module with frozen parameters
  (``requires_grad_(False)``, ``eval()``), so neither side records autograd and the
  parameters cannot change. ``torch.compile(module)`` returns a wrapper and leaves the
  wrapped module's own ``forward`` alone, so the eager side stays eager.
* Training (``options.train``): see :class:`TrainingStep`; each side has its own deep
  copy of the model and its own optimizer.
* ``bytes_per_call`` counts what one call must at least read and write: its tensor
  inputs, the model's parameters (read once per call) and its outputs (for a training
  step also the gradients). For ``dynamic_shapes`` it is the mean over the input sets.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tui.engine.catalog import WORKLOADS, is_user_workload
from tui.engine.worker.built import BuiltWorkload, inference_workload
from tui.engine.worker.fp64_reference import Fp64Model
from tui.engine.worker.user_loader import load_user_workload

__all__ = [
    "BuiltWorkload",
    "build_workload",
    "TrainingStep",
    "SeedCNN",
    "MLP",
    "TransformerBlock",
    "graph_break_fn",
    "matmul_fn",
    "pointwise_fn",
    "inference_workload",
    "OPTIMIZER",
]

#: The optimizer of every training step: AdamW with its defaults except the learning rate
#: (the usual choice in practice, and the case compiling the optimizer step targets: a long
#: chain of pointwise updates per parameter that inductor can fuse).
OPTIMIZER = "torch.optim.AdamW(lr=1e-3)"


# ----- models -------------------------------------------------------------


class SeedCNN(nn.Module):
    """The seed article's small CNN, with its linear layer corrected.

    conv(3->32, 3x3) -> relu -> max-pool 2 -> conv(32->64, 3x3) -> relu -> max-pool 2
    -> flatten -> linear(64*6*6 -> 10), on 3x32x32 images. The seed printed
    ``nn.Linear(64*28*28, 10)``, which raises a shape error: 32 -> conv 30 -> pool 15
    -> conv 13 -> pool 6, so the flattened feature map has 64*6*6 = 2304 values.
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc = nn.Linear(64 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch, 10) for images of shape (batch, 3, 32, 32)."""
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class MLP(nn.Module):
    """``depth`` x (Linear(width, width) + GELU), then a final Linear(width, width)."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU()]
        layers.append(nn.Linear(width, width))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Shape (batch, width) in and out."""
        return self.layers(x)


class TransformerBlock(nn.Module):
    """A pre-norm transformer block: ``x + attn(ln1(x))`` then ``x + mlp(ln2(x))``.

    Attention uses one fused qkv projection, splits into heads and calls
    ``F.scaled_dot_product_attention`` (not causal); the MLP is 4x wide with GELU.
    """

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} is not divisible by heads {heads}")
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Shape (batch, seq, width) in and out."""
        batch, seq, width = x.shape
        qkv = self.qkv(self.ln1(x)).view(batch, seq, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        attn = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, width))
        return x + self.mlp(self.ln2(x))


def graph_break_fn(x: torch.Tensor) -> torch.Tensor:
    """``sin(x)``, then a Python branch on the sign of its sum: a data-dependent graph break.

    Dynamo cannot put ``if <tensor value>`` into one graph (the branch taken depends on
    the numbers in ``x``, not its shape), so it splits here; ``fullgraph=True`` refuses.
    """
    y = torch.sin(x)
    if y.sum() > 0:
        return y * 2 + 1
    return y - 1


def matmul_fn(x: torch.Tensor) -> torch.Tensor:
    """``x @ x.T``: one GEMM, the same library call in eager and compiled mode."""
    return x @ x.T


def pointwise_fn(x: torch.Tensor) -> torch.Tensor:
    """``x * x + sin(x)``: the seed's fusible pointwise function."""
    return x * x + torch.sin(x)


# ----- training -----------------------------------------------------------


def _make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def _allow_graph_breaks(compile_fn: Callable) -> Callable:
    """``compile_fn`` with ``fullgraph=False`` where it is a partial that sets fullgraph."""
    if isinstance(compile_fn, functools.partial) and compile_fn.keywords.get("fullgraph"):
        return functools.partial(compile_fn, fullgraph=False)
    return compile_fn


def _cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(output, target)


def _mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(output, target)


class TrainingStep:
    """One training step of a model, eager and compiled each on its own deep copy.

    A step is ``zero_grad(set_to_none=True)``, forward, loss, backward,
    ``optimizer.step()`` with :data:`OPTIMIZER`, and returns
    ``{"loss": ..., "grads": [...]}`` (detached, not cloned) so the first step of each side
    can be compared. The eager side trains ``eager_model``. Every :meth:`compile_step`
    call deep-copies the untouched initial model into ``compiled_model`` with a fresh
    optimizer (a compiled module shares its parameters with the module it wraps, and
    the eager copy has moved on by then), compiles the model with ``compile_fn``, and
    the optimizer step too when ``compile_optimizer`` is set.

    ``Optimizer.step`` calls ``torch._dynamo.graph_break()`` on purpose (torch/optim/
    optimizer.py, ``_use_grad``), so it can never compile with ``fullgraph=True``: the
    optimizer step is compiled with ``fullgraph=False`` even when the run asks for a full
    graph (which then applies to the model only), as PyTorch's compiled-optimizer recipe does.
    """

    def __init__(self, model: nn.Module, loss_fn: Callable, compile_optimizer: bool) -> None:
        self._initial = copy.deepcopy(model)
        self.eager_model = model
        self.eager_optimizer = _make_optimizer(model)
        self.compiled_model: nn.Module | None = None
        self.compiled_optimizer: torch.optim.Optimizer | None = None
        self.loss_fn = loss_fn
        self.compile_optimizer = compile_optimizer

    def eager_step(self, args: tuple) -> dict[str, Any]:
        """One eager training step on ``args = (inputs, target)``."""
        return self._step(self.eager_model, self.eager_model, self.eager_optimizer, self.eager_optimizer.step, args)

    def compile_step(self, compile_fn: Callable) -> Callable[[tuple], dict[str, Any]]:
        """A compiled training step on a fresh copy of the initial model and optimizer."""
        model = copy.deepcopy(self._initial)
        optimizer = _make_optimizer(model)
        self.compiled_model, self.compiled_optimizer = model, optimizer
        forward = compile_fn(model)
        optimizer_step: Callable[[], Any] = optimizer.step
        if self.compile_optimizer:
            def plain_optimizer_step() -> None:
                optimizer.step()

            optimizer_step = _allow_graph_breaks(compile_fn)(plain_optimizer_step)

        def compiled_step(args: tuple) -> dict[str, Any]:
            return self._step(model, forward, optimizer, optimizer_step, args)

        return compiled_step

    def reference_step(self, args: tuple) -> dict[str, Any]:
        """The first eager step again: a fresh copy of the initial model and optimizer, left as it was.

        For the accuracy check's eager-against-eager comparison; the eager side's own model and
        optimizer are not touched, so what is measured afterwards is unchanged.
        """
        return self.first_step(copy.deepcopy(self._initial), args)

    def first_step(self, model: nn.Module, args: tuple) -> dict[str, Any]:
        """The first step on ``model`` (a copy of the initial model, in any dtype) with a fresh optimizer."""
        optimizer = _make_optimizer(model)
        return self._step(model, model, optimizer, optimizer.step, args)

    def fp64_model(self) -> Fp64Model:
        """The accuracy check's float64 copy: of the initial model, stepped by :meth:`first_step`."""
        return Fp64Model(self._initial, self.first_step, train=True)

    def flops_step(self, args: tuple) -> None:
        """Forward, loss and backward on the eager model for FLOP counting.

        No optimizer step and the gradients are dropped afterwards, so the eager side's
        parameters and optimizer state are exactly as before.
        """
        inputs, target = args
        self.loss_fn(self.eager_model(inputs), target).backward()
        self.eager_model.zero_grad(set_to_none=True)

    def _step(self, model: nn.Module, forward: Callable, optimizer: torch.optim.Optimizer,
              optimizer_step: Callable, args: tuple) -> dict[str, Any]:
        inputs, target = args
        optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(forward(inputs), target)
        loss.backward()
        optimizer_step()
        # No clones here: both timed sides would pay for them. The accuracy check clones
        # what it keeps right after the call, before the next step overwrites it.
        grads = [None if p.grad is None else p.grad.detach() for p in model.parameters()]
        return {"loss": loss.detach(), "grads": grads}


# ----- helpers ------------------------------------------------------------


def _nbytes(tensors: Iterable[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _out_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def _randn(shape: tuple[int, ...], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(shape, device=device, dtype=dtype)


def _model_workload(model: nn.Module, inputs: torch.Tensor, out_shape: tuple[int, ...],
                    target: torch.Tensor, loss_fn: Callable, options: Any,
                    dtype: torch.dtype) -> BuiltWorkload:
    """An inference call of ``model`` on ``inputs``, or a training step when ``options.train``."""
    param_bytes = _nbytes(model.parameters())
    if not options.train:
        model.requires_grad_(False).eval()
        return inference_workload(model, [(inputs,)], _nbytes([inputs]) + param_bytes + _out_bytes(out_shape, dtype))
    step = TrainingStep(model.train(), loss_fn, options.compile_optimizer)
    # read inputs, target and parameters; write the gradients and the loss
    bytes_per_call = _nbytes([inputs, target]) + 2 * param_bytes + _out_bytes((), dtype)
    return BuiltWorkload(
        eager_step=step.eager_step,
        compile_step=step.compile_step,
        input_sets=[(inputs, target)],
        labels=None,
        flops_fn=step.flops_step,
        bytes_per_call=bytes_per_call,
        train=True,
        reference_step=step.reference_step,
        fp64=step.fp64_model(),
    )


# ----- builders -----------------------------------------------------------


def _build_matmul(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    n = p["n"]
    x = _randn((n, n), device, dtype)
    return inference_workload(matmul_fn, [(x,)], 2 * _nbytes([x]))


def _build_pointwise(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    n = p["n"]
    x = _randn((n, n), device, dtype)
    # FlopCounterMode has no formulas for pointwise ops: no flops_fn, bandwidth instead
    return inference_workload(pointwise_fn, [(x,)], 2 * _nbytes([x]), count_flops=False)


def _build_graph_break(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    n = p["n"]
    x = _randn((n, n), device, dtype)
    return inference_workload(graph_break_fn, [(x,)], 2 * _nbytes([x]), count_flops=False)


def _build_cnn(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    batch = p["batch"]
    with device:
        model = SeedCNN()
    model.to(dtype=dtype)
    x = _randn((batch, 3, 32, 32), device, dtype)
    target = torch.randint(0, 10, (batch,), device=device)
    return _model_workload(model, x, (batch, 10), target, _cross_entropy, options, dtype)


def _build_mlp(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    batch, width = p["batch"], p["width"]
    with device:
        model = MLP(width, p["depth"])
    model.to(dtype=dtype)
    x = _randn((batch, width), device, dtype)
    target = _randn((batch, width), device, dtype)
    return _model_workload(model, x, (batch, width), target, _mse, options, dtype)


def _build_transformer_block(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    batch, seq, width = p["batch"], p["seq"], p["width"]
    with device:
        model = TransformerBlock(width, p["heads"])
    model.to(dtype=dtype)
    x = _randn((batch, seq, width), device, dtype)
    target = _randn((batch, seq, width), device, dtype)
    return _model_workload(model, x, (batch, seq, width), target, _mse, options, dtype)


def _build_dynamic_shapes(p: dict, options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    width = p["width"]
    with device:
        model = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
    model.to(dtype=dtype).requires_grad_(False).eval()
    batches = [p["batch"] * k for k in range(1, p["shapes"] + 1)]
    input_sets = [(_randn((b, width), device, dtype),) for b in batches]
    param_bytes = _nbytes(model.parameters())
    total = sum(2 * _nbytes(args) + param_bytes for args in input_sets)
    return inference_workload(model, input_sets, round(total / len(input_sets)), labels=[f"batch={b}" for b in batches])


_BUILDERS: dict[str, Callable[[dict, Any, torch.device, torch.dtype], BuiltWorkload]] = {
    "matmul": _build_matmul,
    "pointwise": _build_pointwise,
    "cnn": _build_cnn,
    "mlp": _build_mlp,
    "transformer_block": _build_transformer_block,
    "graph_break": _build_graph_break,
    "dynamic_shapes": _build_dynamic_shapes,
}
assert set(_BUILDERS) == set(WORKLOADS), "every catalog workload needs a builder"


def build_workload(options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    """Build the workload ``options`` names on ``device`` in ``dtype``.

    ``options`` is a validated RunOptions (parameters resolved with the device's
    defaults). A ``file.py[:factory]`` workload is loaded by
    :func:`tui.engine.worker.user_loader.load_user_workload` (its errors are
    ``UserWorkloadError``).
    """
    if is_user_workload(options.workload):
        return load_user_workload(options, device, dtype)
    try:
        builder = _BUILDERS[options.workload]
    except KeyError:
        raise ValueError(f"workload: unknown {options.workload!r} (allowed: {', '.join(_BUILDERS)})") from None
    torch.manual_seed(options.seed)
    return builder(options.params, options, device, dtype)
