#!/usr/bin/env bash
# Everything compile-lab proves on a GPU, in priority order, each step under its own time limit,
# writing its tables under $OUT (what finished comes back even if a later step runs out of time).
#   bash benchmarks/gpu_run.sh
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
step() { echo "== $1 ($(date -u +%T))"; }

step "1. pytest -m gpu"
timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -q -n 6 -rfE tests/gpu tests/test_worker_gpu.py \
  > "$OUT/gpu_tests.txt" 2>&1; echo "pytest exit $?" >> "$OUT/gpu_tests.txt"; tail -25 "$OUT/gpu_tests.txt"

step "2. timing fidelity"
timeout 110 python3 benchmarks/fidelity.py --out "$OUT/fidelity.md" --iters 60 > "$OUT/fidelity.log" 2>&1; tail -25 "$OUT/fidelity.md"

step "3. the seed's table re-measured"
sweep() { timeout "$1" python3 -m tui sweep --device cuda --no-history --quiet "${@:2}"; echo "sweep exit $?"; }
sweep 35 --workload matmul --param n=8192,16384 --mode default --iters 30 --csv "$OUT/seed_matmul_default.csv"
sweep 20 --workload matmul --param n=8192,16384 --mode default --iters 30 --tf32 --csv "$OUT/seed_matmul_default_tf32.csv"
sweep 40 --workload cnn --param batch=64 --mode default,reduce-overhead,max-autotune-no-cudagraphs --iters 300 --block-size 20 --csv "$OUT/seed_cnn.csv"
sweep 35 --workload matmul --param n=8192 --mode reduce-overhead,max-autotune-no-cudagraphs --iters 30 --tf32 --csv "$OUT/seed_matmul_ro_ma_tf32.csv"
python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/seed_table.md"
import csv, glob, sys
cols = ["workload", "params", "mode", "tf32", "status", "compile_s", "eager_median_ms", "compiled_median_ms",
        "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "launch_bound", "eager_host_median_ms",
        "compiled_host_median_ms", "accuracy", "sm_clock_mean_mhz", "throttle_reasons", "error"]
print("| " + " | ".join(cols) + " |"); print("|" + "---|" * len(cols))
for path in sorted(glob.glob(sys.argv[1] + "/seed_*.csv")):
    for row in csv.DictReader(open(path)):
        print("| " + " | ".join(row.get(c, "") for c in cols) + " |")
PY

step "4. the seed's own method"
timeout 30 python3 benchmarks/seed_method.py --out "$OUT/seed_method.md" > /dev/null 2>&1; cat "$OUT/seed_method.md"

step "5. screenshot"
[ "$SECONDS" -lt 420 ] && timeout 30 python3 benchmarks/screenshot.py --real --out "$OUT/app_h200.svg" --timeout 25 2>&1 | tail -3
step done
