"""What max-autotune's own benchmark saw for each convolution, against what the compiled model then runs at.

Each draw is a fresh process with an empty inductor cache, so it autotunes: it compiles the seed's CNN (batch
64, inference, PyTorch's default precision) with ``mode="max-autotune-no-cudagraphs"``, then times eager and
compiled with CUDA events (``--iters`` calls each, after a warm-up), and keeps inductor's ``AUTOTUNE`` tables
from its stderr (the ten fastest choices inductor prints, each with its time as the autotuner measured it). The
parent prints, per draw, the speedup and each convolution's choices, fastest first: where a Triton template won
by a hair over cuDNN in the autotuner's benchmark and runs slower in the model, the pick is a coin toss the
benchmark cannot see. The eager and compiled times here synchronise after every call (launch-bound on a small
model), so only the tables compare with compile-lab's figures.

    python benchmarks/autotune_choices.py [--draws 3] [--iters 200] [--out DIR]

Needs a CUDA GPU; prints a markdown table and writes each draw's stderr under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, statistics, sys, torch
import torch.nn as nn, torch.nn.functional as F

class SeedCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2, self.fc = nn.Conv2d(3, 32, 3), nn.Conv2d(32, 64, 3), nn.Linear(64 * 6 * 6, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))

iters = int(sys.argv[1])
model = SeedCNN().cuda().eval()
x = torch.randn(64, 3, 32, 32, device="cuda")
compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")

def median_ms(fn):
    with torch.no_grad():
        for _ in range(20):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(); fn(x); end.record(); end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)

with torch.no_grad():
    compiled(x)
eager_ms, compiled_ms = median_ms(model), median_ms(compiled)
print(json.dumps({"eager_ms": eager_ms, "compiled_ms": compiled_ms,
                  "gpu_uuid": str(torch.cuda.get_device_properties(0).uuid)}))
"""

CHOICE = re.compile(r"^\s+(\S+)\s+([0-9.]+|inf) ms")


def autotune_tables(stderr: str) -> list[tuple[str, list[tuple[str, float]]]]:
    """Inductor's ``AUTOTUNE op(sizes)`` tables: the op line and its (choice, ms) rows, in the order printed."""
    tables: list[tuple[str, list[tuple[str, float]]]] = []
    for line in stderr.splitlines():
        if line.startswith("AUTOTUNE "):
            tables.append((line[len("AUTOTUNE "):].strip(), []))
        elif tables and (match := CHOICE.match(line)):
            tables[-1][1].append((match.group(1), float(match.group(2))))
    return tables


def draw(index: int, iters: int, out: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="autotune-draw-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=str(Path(cache) / "triton"))
        done = subprocess.run([sys.executable, "-c", CHILD, str(iters)], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    (out / f"draw-{index}.stderr.txt").write_text(done.stderr)
    if done.returncode != 0:
        return {"draw": index, "error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return {"draw": index, **times, "tables": autotune_tables(done.stderr)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("out/autotune-choices"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = [draw(i + 1, args.iters, args.out) for i in range(args.draws)]
    (args.out / "draws.json").write_text(json.dumps(results, indent=1))
    print("| draw | eager ms | compiled ms | speedup | op | choices as the autotuner timed them (ms), fastest first |")
    print("|---|---|---|---|---|---|")
    for result in results:
        if "error" in result:
            print(f"| {result['draw']} | failed: {result['error']} | | | | |")
            continue
        speedup = result["eager_ms"] / result["compiled_ms"]
        head = f"| {result['draw']} | {result['eager_ms']:.4f} | {result['compiled_ms']:.4f} | {speedup:.3f}"
        for op, choices in result["tables"] or [("(no AUTOTUNE table)", [])]:
            shown = ", ".join(f"{name} {ms:.4f}" for name, ms in choices[:4])
            print(f"{head} | {op[:40]} | {shown} |")
            head = "| | | |"
    uuids = sorted({result.get("gpu_uuid", "?") for result in results if "error" not in result})
    print(f"\nGPU: {', '.join(uuids)}")


if __name__ == "__main__":
    main()
