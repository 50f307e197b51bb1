#!/usr/bin/env bash
# Everything compile-lab proves on a GPU, in priority order, writing its tables under $OUT.
#   bash benchmarks/gpu_run.sh tests   # pytest -m gpu, idle CPU with real NVML, timing fidelity
#   bash benchmarks/gpu_run.sh seed    # the seed's table re-measured (compile-lab sweep), the seed's own method, screenshot
# On the device machine the missing wheels come from .whl (../shared/device/wheels.sh).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 COMPILE_LAB_HOME=/tmp/compile-lab-home
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv;
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
case "${1:-tests}" in
tests)
  timeout 330 python3 -m pytest -m gpu -p no:cacheprovider -q -n 4 tests/gpu tests/test_worker_gpu.py 2>&1 | tee "$OUT/gpu_tests.txt" | tail -40
  timeout 40 python3 benchmarks/idle_cpu.py --real 2>&1 | tee "$OUT/idle_cpu_real.txt" | tail -5
  timeout 400 python3 benchmarks/fidelity.py --out "$OUT/fidelity.md" 2>&1 | tail -40
  ;;
seed)
  for tf32 in "" "--tf32"; do
    timeout 200 python3 -m tui sweep --workload matmul --device cuda --param n=8192,16384 \
      --mode default,reduce-overhead,max-autotune-no-cudagraphs --iters 40 --block-size 10 $tf32 \
      --csv "$OUT/seed_matmul${tf32:+_tf32}.csv" 2>&1 | tail -15
    timeout 150 python3 -m tui sweep --workload cnn --device cuda --param batch=64 \
      --mode default,reduce-overhead,max-autotune-no-cudagraphs --iters 300 --block-size 20 $tf32 \
      --csv "$OUT/seed_cnn${tf32:+_tf32}.csv" 2>&1 | tail -12
  done
  timeout 120 python3 benchmarks/seed_method.py --out "$OUT/seed_method.md" 2>&1 | tail -12
  if [ -f benchmarks/screenshot.py ]; then timeout 120 python3 benchmarks/screenshot.py --real --out "$OUT/app_h200.svg" 2>&1 | tail -5; fi
  ;;
esac
