"""A user workload that synchronises inside its forward: ``.item()`` decides a branch.

Used by ``benchmarks/host_factors.py``; by hand::

    compile-lab run --workload benchmarks/workloads/item_sync.py --device cuda

The host waits for the GPU in the middle of every call (dynamo breaks the graph there too),
so no head start can keep the GPU ahead of the host: the call's device time is the GPU's
whole call, its waits for the host included, and its host-inclusive time is what a loop of
it really pays. Until issue 12 compile-lab read this kind of workload's host time about 100x
too high (the head start grew with every block).
"""

from __future__ import annotations

import torch


class ItemSync(torch.nn.Module):
    """Linear, ReLU, a branch on the mean of the activations (``.item()``), Linear."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.first = torch.nn.Linear(width, width)
        self.second = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.first(x))
        if y.mean().item() > 0.1:  # the host waits for the GPU here
            y = y * 0.5
        return self.second(y)


def make_workload(device: torch.device, dtype: torch.dtype, batch: int = 64, width: int = 1024):
    """The model (frozen: inference) and one input of ``batch`` x ``width``."""
    model = ItemSync(int(width)).to(device=device, dtype=dtype).requires_grad_(False)
    x = torch.randn(int(batch), int(width), device=device, dtype=dtype)
    return model, (x,)
