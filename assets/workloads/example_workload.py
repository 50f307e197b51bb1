"""An example user workload for compile-lab: a small residual MLP with layer norms.

Run it with::

    compile-lab run --workload assets/workloads/example_workload.py --device cpu

Each block is ``x + fc2(gelu(fc1(layer_norm(x))))``: layer norm, GELU and the residual
add are pointwise work that torch.compile can fuse around the matmuls. Parameters
(``width``, ``batch``, ``depth``) arrive as keyword arguments from the run's params,
possibly as strings, so they are converted with ``int``.
"""

from __future__ import annotations

import torch
from torch import nn


class ResidualBlock(nn.Module):
    """Pre-norm residual MLP block: ``x + fc2(gelu(fc1(norm(x))))``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Shape (batch, width) in and out."""
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


def make_workload(device: torch.device, dtype: torch.dtype, width=256, batch=64, depth=2):
    """Build the model and one input batch on ``device`` in ``dtype`` (inference)."""
    width, batch, depth = int(width), int(batch), int(depth)
    model = nn.Sequential(*(ResidualBlock(width) for _ in range(depth)), nn.LayerNorm(width))
    # inference: frozen parameters, so neither eager nor compiled records autograd
    model = model.to(device=device, dtype=dtype).requires_grad_(False).eval()
    x = torch.randn(batch, width, device=device, dtype=dtype)
    return model, (x,)
