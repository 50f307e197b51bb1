"""A GPU test workload that asks for far more memory than any GPU has: a clean out-of-memory failure."""

import torch


def make_workload(device, dtype, **params):
    huge = torch.empty(400 * 2**30 // 4, device=device, dtype=torch.float32)  # 400 GiB
    return (lambda x: x + 1), (huge,)
