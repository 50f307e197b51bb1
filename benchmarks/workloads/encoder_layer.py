"""``torch.nn.TransformerEncoderLayer`` (inference) as a compile-lab user workload.

A GPU-bound workload near the power limit in bf16: at batch 16, sequence 512, width 1024 one call
is about 0.2 TFLOP of GEMMs and attention (about 0.4 ms on an H200). Used by
``benchmarks/sustained.py`` and by hand::

    compile-lab run --workload benchmarks/workloads/encoder_layer.py --dtype bfloat16 --device cuda

``dtype`` is the run's ``--dtype``. In eval mode without gradients eager PyTorch takes the layer's
fused "fast path", as a user's own inference loop does.
"""

from __future__ import annotations

import torch


def make_workload(device: torch.device, dtype: torch.dtype, batch: int = 16, seq: int = 512, width: int = 1024,
                  heads: int = 16):
    """The layer (frozen: inference) and one batch of ``(batch, seq, width)`` activations."""
    layer = torch.nn.TransformerEncoderLayer(int(width), int(heads), dim_feedforward=4 * int(width), dropout=0.0,
                                             batch_first=True)
    layer = layer.to(device=device, dtype=dtype)
    layer.eval().requires_grad_(False)
    x = torch.randn(int(batch), int(seq), int(width), device=device, dtype=dtype)
    return layer, (x,)
