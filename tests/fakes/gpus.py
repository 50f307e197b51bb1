"""Runs recorded on GPUs of several kinds, nodes and indices: what the ``compare --across`` tests compare.

Import as ``from fakes.gpus import kind_runs`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import dataclasses
import zlib

from fakes.timed import pointwise, timed_run
from tui.engine.store.results import RunRecord

__all__ = ["H200", "H100", "A100", "on_gpu", "kind_runs", "sweep"]

H200, H100, A100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"


def on_gpu(record: RunRecord, gpu: str | None, node: str | None = "node-a", index: int = 0) -> RunRecord:
    """The run as the worker would have recorded it on GPU ``index`` (``cuda:index``) of ``node``."""
    record.options = dataclasses.replace(record.options, device=f"cuda:{index}")
    record.env = dataclasses.replace(record.env, gpu_name=gpu, node=node, device=f"cuda:{index}",
                                     gpu_uuid=f"GPU-{zlib.crc32(f'{node}{gpu}{index}'.encode()):08x}")
    return record


def kind_runs(prefix: str, gpu: str, k: int = 3, *, node: str = "node-a", n: int = 512, **kwargs) -> list[RunRecord]:
    """K processes of ``pointwise n`` on ``gpu``, each on another GPU index of ``node`` (a multi-GPU sweep's lanes)."""
    return [on_gpu(timed_run(f"{prefix}{i}", pointwise(params={"n": n}), seed=zlib.crc32(f"{prefix}{i}".encode()),
                             **kwargs), gpu, node, index=i)
            for i in range(k)]  # fmt: skip


def sweep() -> list[RunRecord]:
    """A sweep on three kinds, interleaved as lanes finish: n=512 on each (H100 20% slower, A100 the same as the
    H200); n=64 on the H200 and the H100 only; a CPU run."""
    h200, h100, a100 = kind_runs("h200-", H200), kind_runs("h100-", H100, compiled=1.2), kind_runs("a100-", A100)
    small = [*kind_runs("h200s", H200, 1, n=64), *kind_runs("h100s", H100, 1, n=64, compiled=0.7)]
    return [h200[0], h100[0], a100[0], h200[1], h100[1], a100[1], h200[2], h100[2], a100[2], *small, timed_run("cpu")]
