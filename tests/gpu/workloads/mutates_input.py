"""A GPU test workload whose function mutates its input: CUDA graphs skip it (and must say so)."""

import torch


def make_workload(device, dtype, **params):
    def bump(x):
        x.add_(1)
        return x * 2

    return bump, (torch.randn(256, 256, device=device, dtype=dtype),)
