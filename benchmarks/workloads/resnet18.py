"""torchvision's ResNet-18 (random weights, inference) as a compile-lab user workload.

A ResNet-style model at batch 1 is launch-bound on a large GPU: about 70 kernels of a few
microseconds each. Used by ``benchmarks/host_processes.py`` and by hand::

    compile-lab run --workload benchmarks/workloads/resnet18.py --param batch=1 --device cuda

Needs torchvision (the GPU machine's image has it). ``dtype`` is the run's ``--dtype``.
"""

from __future__ import annotations

import torch


def make_workload(device: torch.device, dtype: torch.dtype, batch: int = 1):
    """The model (frozen: inference) and one batch of 224x224 images."""
    import torchvision

    model = torchvision.models.resnet18(weights=None).to(device=device, dtype=dtype)
    model.eval().requires_grad_(False)
    x = torch.randn(int(batch), 3, 224, 224, device=device, dtype=dtype)
    return model, (x,)
