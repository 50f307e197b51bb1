"""The seed article's own timing method, reproduced, to show what its numbers measure.

The article times ``torch.compile`` with ``time.time()`` around 10 calls after one warm-up
call (matmul), or around 100 calls with no warm-up at all (its CNN, whose first compiled
call therefore includes the compile). This script runs exactly that on the current GPU,
next to the same workloads under TF32 on/off, so docs/BENCHMARKS.md can compare.

    python benchmarks/seed_method.py [--out seed_method.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tui.engine.worker.workloads import SeedCNN  # noqa: E402


def seed_matmul(n: int, use_compile: bool) -> float:
    """The article's matmul_benchmark(): one warm-up, then time.time() around 10 calls."""
    x = torch.randn(n, n, device="cuda")
    fn = torch.compile(lambda x: x @ x.T) if use_compile else (lambda x: x @ x.T)
    _ = fn(x)
    torch.cuda.synchronize()
    start = time.time()
    for _ in range(10):
        _ = fn(x)
    torch.cuda.synchronize()
    return (time.time() - start) / 10


def seed_cnn(use_compile: bool) -> float:
    """The article's CNN comparison: 100 calls, no warm-up, compiled with reduce-overhead."""
    model = SeedCNN().cuda()
    if use_compile:
        model = torch.compile(model, mode="reduce-overhead")
    inputs = torch.randn(64, 3, 32, 32, device="cuda")
    start = time.time()
    for _ in range(100):
        _ = model(inputs)
    torch.cuda.synchronize()
    return time.time() - start


def main(argv: list[str] | None = None) -> int:
    """Run the seed's method under both TF32 settings and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("seed_method.md"))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("seed_method.py needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = [
        f"The seed's method on {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
        f"{time.strftime('%Y-%m-%d')}.",
        "",
        '| case | TF32 | eager s | compiled s | "speedup" |',
        "|---|---|---:|---:|---:|",
    ]
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        for n in (8192, 16384):
            torch._dynamo.reset()
            eager = seed_matmul(n, False)
            compiled = seed_matmul(n, True)
            lines.append(
                f"| matmul {n} (s per call) | {tf32} | {eager:.4f} | {compiled:.4f} | {eager / compiled:.2f}x |"
            )
        torch._dynamo.reset()
        eager = seed_cnn(False)
        compiled = seed_cnn(True)
        lines.append(f"| cnn b64, 100 calls incl. compile (s) | {tf32} | {eager:.3f} | {compiled:.3f} | "
                     f"{eager / compiled:.2f}x |")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
