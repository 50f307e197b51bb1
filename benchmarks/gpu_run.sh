#!/usr/bin/env bash
# Everything compile-lab proves on a GPU, in stages, each step under its own time limit,
# writing its tables under $OUT (what finished comes back even if a later step runs out of time).
#   bash benchmarks/gpu_run.sh tests     # pytest -m gpu                        (~5-8 min on an H200)
#   bash benchmarks/gpu_run.sh seed      # the seed's table through compile-lab sweeps (~6-8 min)
#   bash benchmarks/gpu_run.sh extra     # clock drift, cold compiles, screenshot (~4-6 min)
#   bash benchmarks/gpu_run.sh app seed_rest  # the app's GPU tests; matmul 16384 with max-autotune
#   bash benchmarks/gpu_run.sh fidelity  # benchmarks/fidelity.py                 (~2 min)
#   bash benchmarks/gpu_run.sh gap host  # bf16/TF32 GEMM vs do_bench, one difference at a time;
#                                        # host-inclusive speedups with their interval (~2 min)
#   bash benchmarks/gpu_run.sh host_factors  # host-inclusive time vs a plain loop, one factor at a time (~3-5 min)
#   bash benchmarks/gpu_run.sh fidelity3     # fidelity.py in 3 interleaved rounds, 60 iterations (~5-8 min)
#   bash benchmarks/gpu_run.sh repeat_cnn    # CNN b64 reduce-overhead, two separate --repeat 3 runs (~4-6 min)
#   bash benchmarks/gpu_run.sh profile_cnn   # issue 13's profile pass on CNN b64, default and reduce-overhead (~2 min)
#   bash benchmarks/gpu_run.sh why_cnn       # issue 13's proof: the app's Kernels / Host time / Graphs tabs of
#                                            # CNN b64 default and reduce-overhead, and the raw profiler ranges (~3 min)
#   bash benchmarks/gpu_run.sh numa          # NVML's CPU affinity per GPU and the pinning plan (seconds)
#   bash benchmarks/gpu_run.sh contention    # CNN b64 with busy CPU processes beside it: floating, then kept off
#                                            # the worker's pinned cores (~3 min)
#   bash benchmarks/gpu_run.sh host_processes  # issue 22: a plain loop's host time under process-level conditions
#   bash benchmarks/gpu_run.sh host_goal       # issue 22: compile-lab --repeat 5 vs 5 plain-loop processes
#   bash benchmarks/gpu_run.sh pool          # issue 16: one worker per GPU; the sweep on every GPU against one,
#                                            # parallel against --serial for a launch-bound and a GPU-bound workload
#   bash benchmarks/gpu_run.sh precision     # issue 22: CNN b64, ResNet-18 b1 and matmul 8192 under --precision
#                                            # default, ieee and tf32: times, kernels and the flags in effect (~8-10 min);
#                                            # PRECISION_CASES="resnet18 matmul" runs a subset
#   bash benchmarks/gpu_run.sh calibrate_quiet  # issue 23: the verdict's GPU configurations, 5 single-process runs each
#   bash benchmarks/gpu_run.sh calibrate_busy   # the same beside a co-tenant running matmuls on the card; each stage
#                                               # stops starting runs after CALIBRATE_BUDGET s (520) and resumes on
#                                               # the next call (out/calibration/gpu stays while the machine is warm);
#                                               # both end with the before/after table and the runs in $OUT
#   bash benchmarks/gpu_run.sh sustained  # issue 22 item 4: bf16 encoder layer, transformer_block b16, GEMM 8192:
#                                         # compile-lab vs sustained events loop / do_bench / do_bench_cudagraph /
#                                         # profiler loop, each with NVML's SM clock and power (~5-7 min);
#                                         # SUSTAINED_ARGS="--cases gemm --sides eager,compiled" picks
#   bash benchmarks/gpu_run.sh polling    # issue 22 item 5: the app on a pty (GPU pane polling) vs the CLI vs the CLI
#                                         # beside a 100 ms NVML poller; CNN b64 and matmul 8192, 3 runs each,
#                                         # interleaved (~5-7 min; starts no run after POLLING_BUDGET s, 380)
#   bash benchmarks/gpu_run.sh tune       # issue 27: compile-lab tune, TUNE_CASES="cnn-ieee cnn-default block gemm"
#                                         # (default cnn-ieee), each search held to TUNE_BUDGET s (500): one case a call;
#                                         # TUNE_DEVICE=cuda:all tunes on every GPU (default cuda)
#                                         # a case may carry its own budget: TUNE_CASES="cnn-default:600 gemm:420"
#   bash benchmarks/gpu_run.sh tune_detached  # the tune stage detached, to outlast this call; then, in each next
#                                             # call (within 30 s), `tune_wait`: waits up to TUNE_WAIT s (560) and
#                                             # returns $OUT/tune-detached.tar.gz
#   bash benchmarks/gpu_run.sh profile_cache  # the profile pass keeps the autotune caches: its compile time and
#                                             # kernel diff, max-autotune GEMM 8192 and CNN b64 (~2 min)
#   bash benchmarks/gpu_run.sh tune_pool  # issue 27 on a pool: the same search (TUNE_CASES, default cnn-ieee) on
#                                         # cuda:0 and on cuda:all, TUNE_BUDGET s each (240): answers, runs, walls
#   bash benchmarks/gpu_run.sh spare_beside  # a run's compile and times alone and beside a spare's torch import,
#                                            # interleaved, SPARE_ROUNDS rounds (3), SPARE_ARGS (the CNN on cuda), SPARE_CPUS (every core):
#                                            # does pausing the spare pay on a host of this many cores
#   bash benchmarks/gpu_run.sh autotune_draws  # AUTOTUNE_DRAWS (6) cold-cache runs of the CNN b64 in AUTOTUNE_MODE
#                                              # (max-autotune-no-cudagraphs): does each process's autotuning pick alike
#   bash benchmarks/gpu_run.sh autotune_choices  # the autotuner's own timings of each convolution's choices against
#                                                # the compiled model's time, AUTOTUNE_DRAWS (3) cold processes
# Several stages in one call: bash benchmarks/gpu_run.sh seed extra
# On the device machine the missing wheels come from .whl (../shared/device/wheels.sh).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  # Once a machine: a detached stage may be importing from /tmp/site while a later call runs this script.
  if [ ! -e /tmp/site/.installed ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && touch /tmp/site/.installed || exit 1
  fi
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 COMPILE_LAB_HOME=/tmp/compile-lab-home
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv;
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
step() { echo "== $1 ($(date -u +%T), ${SECONDS}s)"; }
# --repeat 1 keeps each stage's single-process figures (the default, auto, adds processes to a launch-bound
# configuration); a stage's own --repeat comes later on the line and wins.
sweep() { timeout "$1" python3 -m tui sweep --device cuda --no-history --quiet --repeat 1 "${@:2}"; echo "sweep exit $? after ${SECONDS}s"; }

stage_tests() {
  step "pytest -m gpu"
  timeout "${GPU_TESTS_LIMIT:-500}" python3 -m pytest -m gpu -p no:cacheprovider -q -n "${GPU_TESTS_WORKERS:-8}" \
    --durations=25 -rfEs tests/gpu tests/test_worker_gpu.py > "$OUT/gpu_tests.txt" 2>&1
  echo "pytest exit $?" >> "$OUT/gpu_tests.txt"; tail -45 "$OUT/gpu_tests.txt"
}

stage_seed() {
  step "the seed's table re-measured (TF32 off, as the seed's table had it, then on)"
  local modes=default,reduce-overhead,max-autotune-no-cudagraphs
  sweep 100 --workload cnn --param batch=64 --mode $modes --iters 400 --block-size 20 --precision ieee --csv "$OUT/seed_cnn.csv"
  sweep 80 --workload cnn --param batch=64 --mode $modes --iters 400 --block-size 20 --precision tf32 --csv "$OUT/seed_cnn_tf32.csv"
  sweep 100 --workload matmul --param n=8192 --mode $modes --iters 40 --block-size 5 --precision ieee --csv "$OUT/seed_matmul8192.csv"
  sweep 80 --workload matmul --param n=8192 --mode $modes --iters 40 --block-size 5 --precision tf32 --csv "$OUT/seed_matmul8192_tf32.csv"
  sweep 130 --workload matmul --param n=16384 --mode $modes --iters 20 --block-size 4 --precision ieee --csv "$OUT/seed_matmul16384.csv"
  sweep 90 --workload matmul --param n=16384 --mode $modes --iters 30 --block-size 5 --precision tf32 --csv "$OUT/seed_matmul16384_tf32.csv"
  table "$OUT"/seed_*.csv > "$OUT/seed_table.md"; cat "$OUT/seed_table.md"
}

stage_extra() {
  step "clock drift: each method's SM clock"
  timeout 100 python3 benchmarks/clock_drift.py --out "$OUT/clock_drift.md" > /dev/null 2>"$OUT/clock_drift.err"
  echo "clock_drift exit $?"; cat "$OUT/clock_drift.md"; tail -5 "$OUT/clock_drift.err"
  step "cold compiles (fresh inductor and triton caches)"
  for spec in "matmul n=8192" "cnn batch=64" "transformer_block batch=8"; do
    set -- $spec
    sweep 80 --workload "$1" --param "$2" --mode default,reduce-overhead --cold-compile --iters 20 \
      --csv "$OUT/cold_$1.csv"
  done
  table "$OUT"/cold_*.csv > "$OUT/cold_table.md"; cat "$OUT/cold_table.md"
  step "screenshot"
  timeout 60 python3 benchmarks/screenshot.py --real --out "$OUT/app_h200.svg" --timeout 50 2>&1 | tail -3
}

stage_seed_rest() {
  step "the seed's table: matmul 16384 fp32 with max-autotune-no-cudagraphs (autotuning a 170 ms GEMM)"
  local left=$(( ${STAGE_DEADLINE:-590} - SECONDS ))
  [ "$left" -gt 120 ] || { echo "skipped: ${left}s left"; return; }
  sweep "$left" --workload matmul --param n=16384 --mode max-autotune-no-cudagraphs --iters 20 --block-size 4 \
    --csv "$OUT/seed_matmul16384_ma.csv"
}

stage_app() {
  step "pytest tests/gpu/test_gpu_app.py"
  timeout 120 python3 -m pytest -m gpu -p no:cacheprovider -q -rfEs tests/gpu/test_gpu_app.py > "$OUT/gpu_app_tests.txt" 2>&1
  echo "pytest exit $?" >> "$OUT/gpu_app_tests.txt"; tail -15 "$OUT/gpu_app_tests.txt"
}

stage_fidelity() {
  step "timing fidelity"
  timeout "${FIDELITY_LIMIT:-300}" python3 benchmarks/fidelity.py --out "$OUT/fidelity.md" --iters 100 ${FIDELITY_ARGS:-} > "$OUT/fidelity.log" 2>&1
  echo "fidelity exit $?"; cat "$OUT/fidelity.md"
}

stage_host_factors() {
  step "host-inclusive time: a plain loop against each factor, and compile-lab's host sub-blocks"
  timeout "${HOST_FACTORS_LIMIT:-420}" python3 benchmarks/host_factors.py --out "$OUT/host_factors.md" \
    --json "$OUT/host_factors.json" ${HOST_FACTORS_ARGS:-} > "$OUT/host_factors.log" 2>&1
  echo "host_factors exit $?"; cat "$OUT/host_factors.md"; tail -5 "$OUT/host_factors.log"
}

stage_fidelity3() {
  step "timing fidelity, 3 interleaved rounds (paired ratios: pipelined blocks against do_bench, host against a plain loop)"
  timeout "${FIDELITY_LIMIT:-560}" python3 benchmarks/fidelity.py --out "$OUT/fidelity3.md" --iters 60 --rounds 3 \
    ${FIDELITY_ARGS:-} > "$OUT/fidelity3.log" 2>&1
  echo "fidelity exit $?"; cat "$OUT/fidelity3.md"; tail -5 "$OUT/fidelity3.log"
}

stage_repeat_cnn() {
  step "CNN b64 reduce-overhead host speedup: two separate --repeat 3 runs (their intervals should overlap)"
  for k in 1 2; do
    sweep "${REPEAT_LIMIT:-240}" --workload cnn --param batch=64 --mode reduce-overhead --iters 400 --block-size 20 \
      --repeat 3 --csv "$OUT/repeat_cnn_$k.csv" --json "$OUT/repeat_cnn_$k.json"
  done
  python3 - "$OUT"/repeat_cnn_*.csv <<'PY' | tee "$OUT/repeat_cnn.md"
import csv, sys
cols = ["workload", "params", "mode", "repeats", "verdict", "speedup", "speedup_ci_low", "speedup_ci_high",
        "speedup_xproc_ci_low", "speedup_xproc_ci_high", "speedup_process_spread", "host_verdict", "host_speedup",
        "host_speedup_ci_low", "host_speedup_ci_high", "host_speedup_xproc_ci_low", "host_speedup_xproc_ci_high",
        "host_speedup_process_spread", "eager_host_median_ms", "compiled_host_median_ms", "noise_reasons", "warnings"]
print("| file | " + " | ".join(cols) + " |"); print("|" + "---|" * (len(cols) + 1))
for path in sys.argv[1:]:
    for row in csv.DictReader(open(path)):
        print(f"| {path.rsplit('/', 1)[-1]} | " + " | ".join((row.get(c) or "").replace("|", "/")[:300] for c in cols) + " |")
PY
}

stage_profile_cnn() {
  step "issue 13: the profile pass on the seed CNN b64, default and reduce-overhead (kernels, launches)"
  sweep "${PROFILE_LIMIT:-200}" --workload cnn --param batch=64 --mode default,reduce-overhead --iters 200 --block-size 20 \
    --csv "$OUT/profile_cnn.csv" --json "$OUT/profile_cnn.json"
  python3 - "$OUT/profile_cnn.csv" <<'PY' | tee "$OUT/profile_cnn.md"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = ["workload", "params", "mode", "status", "verdict", "speedup", "host_speedup"]
cols += [c for c in (rows[0] if rows else {}) if "kernel" in c or "launch" in c or c.startswith("profile")]
print("| " + " | ".join(cols) + " |"); print("|" + "---|" * len(cols))
for row in rows:
    print("| " + " | ".join((row.get(c) or "").replace("|", "/")[:400] for c in cols) + " |")
PY
}

stage_why_cnn() {
  step "issue 13: why is CNN b64 faster or slower (kernels, launches, host split, regions)"
  sweep "${WHY_LIMIT:-240}" --workload cnn --param batch=64 --mode default,reduce-overhead --iters 200 --block-size 20 \
    --csv "$OUT/why_cnn.csv" --json "$OUT/why_cnn.json" ${WHY_EXTRA:-}
  timeout 60 python3 benchmarks/why_report.py "$OUT/why_cnn.json" --width 100 --tabs summary,kernels,host,graphs \
    > "$OUT/why_cnn.txt" 2>&1; echo "why_report exit $?"; head -120 "$OUT/why_cnn.txt"
  timeout 120 python3 benchmarks/probe_ranges.py cuda > "$OUT/probe_ranges_cuda.txt" 2>&1; echo "probe exit $?"
}

stage_gap() {
  step "GEMM: compile-lab vs do_bench, one difference at a time"
  timeout 150 python3 benchmarks/gemm_gap.py --out "$OUT/gemm_gap.md" > "$OUT/gemm_gap.log" 2>&1
  echo "gemm_gap exit $?"; head -30 "$OUT/gemm_gap.md"; tail -5 "$OUT/gemm_gap.log"
}

stage_host() {
  step "host-inclusive speedups with their interval, warm-up settling"
  sweep 120 --workload cnn --param batch=64 --mode default,reduce-overhead --iters 400 --block-size 20 \
    --csv "$OUT/host_cnn.csv"
  sweep 120 --workload cnn --param batch=64 --mode default,reduce-overhead --iters 400 --block-size 20 \
    --csv "$OUT/host_cnn_2.csv"
  sweep 60 --workload pointwise --param n=4096 --mode default,reduce-overhead --iters 400 --block-size 20 \
    --csv "$OUT/host_pointwise.csv"
  python3 - "$OUT"/host_*.csv <<'PY' | tee "$OUT/host_table.md"
import csv, sys
cols = ["workload", "params", "mode", "status", "eager_median_ms", "compiled_median_ms", "speedup", "speedup_ci_low",
        "speedup_ci_high", "launch_bound", "eager_host_median_ms", "compiled_host_median_ms", "host_speedup",
        "host_speedup_ci_low", "host_speedup_ci_high", "warnings", "error"]
print("| file | " + " | ".join(cols) + " |"); print("|" + "---|" * (len(cols) + 1))
for path in sys.argv[1:]:
    for row in csv.DictReader(open(path)):
        print(f"| {path.rsplit('/', 1)[-1]} | " + " | ".join((row.get(c) or "").replace("|", "/")[:300] for c in cols) + " |")
PY
}

stage_numa() {
  step "NVML's CPU affinity per GPU and the host's physical cores (the pool's pinning plan)"
  python3 - <<'PY' | tee "$OUT/numa.txt"
from tui.engine.cpu_list import cpu_list_text
from tui.engine.run.placement import allowed_cpus, physical_cores, plan_cores
from tui.telemetry.nvml import NvmlSource
source = NvmlSource()
near = {}
for snap in source.snapshot():
    cpus = source.cpu_affinity(snap.uuid)
    near[f"cuda:{snap.index}"] = cpus or set()
    print(f"cuda:{snap.index} {snap.name} {snap.uuid}: near CPUs {cpu_list_text(cpus) if cpus else None}")
cpus = allowed_cpus()
print(f"allowed CPUs {cpu_list_text(cpus)}; physical cores {len(physical_cores(cpus))}: {physical_cores(cpus)[:4]} ...")
lanes = list(near) * 1
print("plan for every GPU:", {lane: cpu_list_text(c) for lane, c in plan_cores(lanes, cpus, near).items()})
PY
}

stage_contention() {
  # A proxy for neighbours on one GPU: busy CPU processes beside a launch-bound run, floating over every
  # core, then kept off the worker's cores (the worker pinned with COMPILE_LAB_CPUS, as a pooled lane is).
  local hogs=${HOGS:-12} cores; cores=$(nproc)
  local run="python3 -m tui sweep --device cuda:0 --no-history --quiet --repeat 1 --workload cnn --param batch=64 --mode default,reduce-overhead --iters 400 --block-size 20"
  step "contention: quiet"
  timeout 150 $run --csv "$OUT/contention_quiet.csv"; echo "exit $?"
  step "contention: $hogs busy processes on any core, the worker unpinned"
  local pids=(); for _ in $(seq "$hogs"); do python3 -c 'while True: pass' & pids+=($!); done
  timeout 150 $run --csv "$OUT/contention_floating.csv"; echo "exit $?"
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
  step "contention: $hogs busy processes on cores 4-$((cores - 1)), the worker pinned to 0-3"
  pids=(); for _ in $(seq "$hogs"); do taskset -c "4-$((cores - 1))" python3 -c 'while True: pass' & pids+=($!); done
  COMPILE_LAB_CPUS=0-3 timeout 150 $run --csv "$OUT/contention_pinned.csv"; echo "exit $?"
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
  python3 - "$OUT"/contention_quiet.csv "$OUT"/contention_floating.csv "$OUT"/contention_pinned.csv <<'PY' | tee "$OUT/contention.md"
import csv, sys
cols = ["mode", "verdict", "speedup", "eager_host_median_ms", "compiled_host_median_ms", "host_speedup",
        "host_speedup_ci_low", "host_speedup_ci_high", "host_verdict", "other_cpu_cores", "cpu_affinity"]
print("| case | " + " | ".join(cols) + " |"); print("|---|" + "---|" * len(cols))
for path in sys.argv[1:]:
    for row in csv.DictReader(open(path)):
        print(f"| {path.rsplit('_', 1)[-1][:-4]} | " + " | ".join((row.get(c) or "")[:12] for c in cols) + " |")
PY
}

stage_pool() {
  local gpus; gpus=$(nvidia-smi -L | grep -c '^GPU')
  step "one worker per GPU: $gpus GPU(s)"
  local modes=default,reduce-overhead,max-autotune-no-cudagraphs
  for spec in "cnn batch=64 400 20" "matmul n=8192 40 5"; do
    set -- $spec
    local hows="serial parallel one"
    [ "$gpus" -lt 2 ] && hows=parallel  # one GPU: only the path check (a pool of one), nothing to compare
    for how in $hows; do
      local device=cuda:all extra=""
      [ "$how" = serial ] && extra=--serial
      [ "$how" = one ] && device=cuda:0
      local start=$SECONDS
      timeout 280 python3 -m tui sweep --device "$device" $extra --no-history --quiet --repeat 1 --workload "$1" --param "$2" \
        --mode $modes --fullgraph both --iters "$3" --block-size "$4" --csv "$OUT/pool_${1}_${how}.csv"
      echo "pool $1 $how ($device $extra): exit $? wall $((SECONDS - start)) s" | tee -a "$OUT/pool_walls.txt"
    done
    if [ "$gpus" -ge 2 ]; then
      python3 benchmarks/pool_compare.py "$OUT/pool_${1}_serial.csv" "$OUT/pool_${1}_parallel.csv" > "$OUT/pool_${1}.md"
      cat "$OUT/pool_${1}.md"
    fi
  done
  python3 - "$OUT"/pool_*_parallel.csv <<'PY'
import csv, sys
for path in sys.argv[1:]:
    for row in csv.DictReader(open(path)):
        print(path.rsplit("/", 1)[-1], row["mode"], row["fullgraph"], row["device"], row["gpu_uuid"], row["node"],
              row["cpu_affinity"], row["concurrent_runs"], row["status"], row["error"][:80])
PY
}

stage_precision() {
  step "precision: default (torch's flags untouched), ieee, tf32"
  local modes=default,reduce-overhead
  local cases=" ${PRECISION_CASES:-cnn resnet18 matmul} "
  [[ $cases == *" cnn "* ]] && sweep 150 --workload cnn --param batch=64 --mode $modes --precision default,ieee,tf32 \
    --iters 200 --block-size 20 --csv "$OUT/precision_cnn.csv"
  [[ $cases == *" matmul "* ]] && sweep 120 --workload matmul --param n=8192 --mode default --precision default,ieee,tf32 \
    --iters 40 --block-size 5 --csv "$OUT/precision_matmul8192.csv"
  [[ $cases == *" resnet18 "* ]] && sweep 300 --workload benchmarks/workloads/resnet18.py --param batch=1 --mode $modes \
    --precision default,ieee,tf32 --iters 200 --block-size 20 --csv "$OUT/precision_resnet18.csv"
  python3 - "$OUT"/precision_*.csv <<'PY' | tee "$OUT/precision_table.md"
import csv, sys
cols = ["workload", "params", "mode", "precision", "tf32_matmul", "tf32_cudnn", "float32_matmul_precision", "status",
        "eager_median_ms", "compiled_median_ms", "speedup", "eager_kernels_per_call", "compiled_kernels_per_call",
        "eager_host_median_ms", "compiled_host_median_ms", "host_speedup", "accuracy", "max_abs_err", "error"]
print("| " + " | ".join(cols) + " |"); print("|" + "---|" * len(cols))
for path in sys.argv[1:]:
    for row in csv.DictReader(open(path)):
        print("| " + " | ".join((row.get(c) or "").replace("|", "/")[:120] for c in cols) + " |")
PY
}

calibrate() {
  local dir=${CALIBRATE_DIR:-out/calibration/gpu}
  python3 benchmarks/calibrate.py collect --device cuda --runs "${CALIBRATE_RUNS:-5}" --budget "${CALIBRATE_BUDGET:-520}" \
    --out "$dir" ${CALIBRATE_CONFIGS:+--configs $CALIBRATE_CONFIGS} "$@" 2>&1 | tee -a "$OUT/calibrate_collect.txt"
  python3 benchmarks/calibrate.py judge "$dir" > "$OUT/calibrate_table.md" 2>&1; cat "$OUT/calibrate_table.md"
  tar czf "$OUT/calibration-gpu.tar.gz" -C "$(dirname "$dir")" "$(basename "$dir")"
}

stage_calibrate_quiet() {
  step "calibrate: the GPU configurations, quiet"
  calibrate
}

stage_calibrate_busy() {
  step "calibrate: the GPU configurations beside a co-tenant on the card"
  calibrate --load 1 --load-seconds 900
}

table() {
  python3 - "$@" <<'PY'
import csv, sys
cols = ["workload", "params", "mode", "precision", "status", "verdict", "host_verdict", "compile_s", "eager_median_ms", "compiled_median_ms",
        "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "launch_bound", "eager_host_median_ms",
        "compiled_host_median_ms", "host_speedup", "accuracy", "sm_clock_mean_mhz", "throttle_reasons", "error"]
print("| " + " | ".join(cols) + " |"); print("|" + "---|" * len(cols))
for path in sys.argv[1:]:
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError:
        continue
    for row in rows:
        print("| " + " | ".join((row.get(c) or "").replace("|", "/")[:120] for c in cols) + " |")
PY
}

stage_host_processes() {
  step "host time across processes: a plain loop under each process-level condition"
  timeout "${HP_LIMIT:-400}" python3 benchmarks/host_processes.py factors --out "$OUT" --procs "${HP_PROCS:-4}" \
    --cases "${HP_CASES:-cnn}" --conditions "${HP_CONDITIONS:-float,pin 1,pin 1 random,pin 4,hashseed 0,no aslr,gc off,quiesce,threads 1}" 2>&1 | tail -60
  cat "$OUT/host_processes_factors.md"
}

stage_host_goal() {
  step "host speedup: compile-lab --repeat 5 against 5 plain-loop processes"
  timeout "${HG_LIMIT:-560}" python3 benchmarks/host_processes.py goal --out "$OUT" --procs "${HG_PROCS:-5}" \
    --cases "${HG_CASES:-cnn,resnet18}" --modes "${HG_MODES:-default,reduce-overhead}" --lab-args "${HG_LAB_ARGS:-}" 2>&1 | tail -30
  cat "$OUT/host_processes_goal.md"
}

stage_sustained() {
  step "sustained load: compile-lab against loops that never rest, with the SM clock and power of each"
  timeout "${SUSTAINED_LIMIT:-530}" python3 benchmarks/sustained.py --out "$OUT" ${SUSTAINED_ARGS:-} > /dev/null 2> "$OUT/sustained.log"
  echo "sustained exit $?"; cat "$OUT/sustained.md"; grep -v '^USDT' "$OUT/sustained.log" | tail -12
}

stage_polling() {
  step "polling: the app's GPU pane and repaints, and a 100 ms NVML poller, against the plain CLI"
  timeout "${POLLING_LIMIT:-540}" python3 benchmarks/polling.py --out "$OUT" --budget "${POLLING_BUDGET:-380}" \
    ${POLLING_ARGS:-} > /dev/null 2> "$OUT/polling.log"
  echo "polling exit $?"; cat "$OUT/polling.md"; tail -25 "$OUT/polling.log"
}

stage_tune() {
  # Issue 27: compile-lab tune on the H200, one case per device call (each search is held to TUNE_BUDGET s).
  local budget case args
  for case in ${TUNE_CASES:-cnn-ieee}; do
    budget=${TUNE_BUDGET:-500}
    [[ $case == *:* ]] && { budget=${case#*:}; case=${case%%:*}; }
    case "$case" in
      cnn-ieee) args=(--workload cnn --param batch=64 --precision ieee) ;;
      cnn-default) args=(--workload cnn --param batch=64 --precision default) ;;
      block) args=(--workload transformer_block) ;;
      gemm) args=(--workload matmul --param n=8192) ;;
      *) echo "tune: unknown case $case (cnn-ieee, cnn-default, block, gemm)"; continue ;;
    esac
    step "tune $case (${budget} s)"
    timeout $((budget + 60)) python3 -m tui tune --device "${TUNE_DEVICE:-cuda}" --budget "${budget}s" "${args[@]}" \
      --json "$OUT/tune-$case.json" > "$OUT/tune-$case.txt" 2> "$OUT/tune-$case.log"
    echo "tune exit $? after ${SECONDS}s"; cat "$OUT/tune-$case.txt"; tail -20 "$OUT/tune-$case.log"
    python3 benchmarks/wall_parts.py "$OUT/tune-$case.json"
  done
}

stage_tune_detached() {
  # Searches whose budgets together outlast one device call: the tune stage runs detached (setsid) into TUNE_DIR
  # and lives on while the machine is held. Each later call runs tune_wait, within the machine's warm time.
  # The chain runs from its own copy of the code: each call replaces the working tree, and a chain run from it
  # lost its files mid-search (every run after the next call failed to start).
  # A fresh folder: an earlier chain's chain.done would end tune_wait at once, its files join the archive.
  local dir
  dir=$(realpath -m "${TUNE_DIR:-/tmp/tune-detached}") && rm -rf "$dir" && mkdir -p "$dir/code" || return
  cp -r tui benchmarks pyproject.toml "$dir/code/" && { [ ! -d .whl ] || cp -r .whl "$dir/code/"; } || return
  (cd "$dir/code" && OUT=$dir setsid nohup bash -c "bash benchmarks/gpu_run.sh tune; touch '$dir/chain.done'" \
    > "$dir/chain.txt" 2>&1 < /dev/null &)
  echo "tune chain started (TUNE_CASES=${TUNE_CASES:-cnn-ieee}) into $dir, from $dir/code"
}

stage_tune_wait() {
  # Waits for the detached chain until it ends or TUNE_WAIT s of this call have passed, and keeps what it wrote
  # so far as one archive in $OUT (the device returns at most 8 files), refreshed every 20 s.
  local dir limit=${TUNE_WAIT:-560}
  dir=$(realpath -m "${TUNE_DIR:-/tmp/tune-detached}")
  [ -d "$dir" ] || { echo "tune_wait: no chain in $dir (the machine went back?)"; return; }
  while :; do
    tar czf "$OUT/tune-detached.tar.gz" -C "$dir" --exclude=./code . 2>/dev/null
    [ -e "$dir/chain.done" ] && { echo "tune chain done"; break; }
    [ "$SECONDS" -ge "$limit" ] && { echo "tune chain still running after ${SECONDS}s"; break; }
    sleep 20
  done
  grep -E "^== |tune exit" "$dir/chain.txt"
}

stage_profile_cache() {
  # The profile pass's re-compile keeps the autotuning caches: its compile_s against the timed compile's, and
  # the kernel diff still found (provenance needs a fresh lowering), for a max-autotune GEMM and the CNN.
  local case
  for case in "matmul --param n=8192 --mode max-autotune-no-cudagraphs" "cnn --param batch=64 --mode default"; do
    step "profile pass of $case"
    timeout 240 python3 -m tui run --device cuda --no-history --quiet --repeat 1 --workload $case \
      --json "$OUT/profile-cache-${case%% *}.json" > "$OUT/profile-cache-${case%% *}.txt" 2>&1
    echo "run exit $? after ${SECONDS}s"
    python3 - "$OUT/profile-cache-${case%% *}.json" <<'PY'
import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
    p = run.get("profile") or {}
    print(f"{run['options']['workload']} {run['options']['mode']}: compile_s {run['compile_s']:.1f}, profile compile_s "
          f"{p.get('compile_s') or 0:.1f}, profile_s {p.get('profile_s') or 0:.1f}, diff groups {len(p.get('diff') or [])}, "
          f"why {p.get('diff_why')}, speedup {run['summary']['speedup']:.3f}")
PY
    python3 benchmarks/wall_parts.py "$OUT/profile-cache-${case%% *}.json"
  done
}

stage_tune_pool() {
  # Issue 27 on several GPUs: one search on cuda:0, then the same on cuda:all (one run per GPU at once, the
  # confirmation in matched pairs); each answer, its runs by GPU, the most runs side by side, its wall time.
  local budget=${TUNE_BUDGET:-240} case=${TUNE_CASES:-cnn-ieee} device start
  nvidia-smi -L
  for device in cuda:0 cuda:all; do
    TUNE_CASES=$case TUNE_BUDGET=$budget TUNE_DEVICE=$device stage_tune
    mv "$OUT/tune-$case.json" "$OUT/tune-$case-${device/:/}.json"; mv "$OUT/tune-$case.txt" "$OUT/tune-$case-${device/:/}.txt"
    mv "$OUT/tune-$case.log" "$OUT/tune-$case-${device/:/}.log"
    python3 - "$OUT/tune-$case-${device/:/}.json" <<'PY'
import collections, json, sys
runs = json.load(open(sys.argv[1]))["runs"]
print(f"{sys.argv[1]}: {len(runs)} runs; by GPU {dict(collections.Counter(r['options']['device'] for r in runs))}; "
      f"most beside one run {max((r.get('concurrent_runs') or 0 for r in runs), default=0)}")
PY
  done
}

stage_spare_beside() {
  # What the warm spare's import costs a run beside it on this host: the CNN b64 (default, max-autotune-no-cudagraphs),
  # each compile cold, alone and beside a loop that imports torch and dynamo as a spare does, interleaved,
  # SPARE_ROUNDS rounds (3). The runner pauses its spare while a run compiles and measures; this says whether
  # that pause buys anything on a host of this many cores.
  local rounds=${SPARE_ROUNDS:-3} i side pid
  local what=${SPARE_ARGS:---device cuda --workload cnn --param batch=64}
  local pin=${SPARE_CPUS:+taskset -c $SPARE_CPUS}  # SPARE_CPUS: both sides on these cores (0: one core)
  local run="$pin python3 -m tui sweep $what --no-history --quiet --repeat 1 --mode default,max-autotune-no-cudagraphs --iters 200 --cold-compile --no-profile"
  for i in $(seq "$rounds"); do
    for side in alone beside; do
      step "spare beside: round $i, $side"
      pid=
      if [ "$side" = beside ]; then
        $pin bash -c 'while true; do python3 -c "import torch, torch._dynamo, torch._inductor.compile_fx"; done' & pid=$!
      fi
      timeout 200 $run --json "$OUT/spare-$side-$i.json" > /dev/null 2>&1; echo "exit $?"
      if [ -n "$pid" ]; then kill "$pid"; wait "$pid" 2>/dev/null; pkill -f "import torch, torch._dynamo" ; fi
    done
  done
  python3 - "$OUT"/spare-*.json <<'PY' | tee "$OUT/spare_beside.md"
import json, sys
print("| side | round | mode | compile_s | speedup | host speedup | eager ms | compiled ms |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(sys.argv[1:]):
    side, rnd = path.rsplit("/", 1)[-1][6:-5].rsplit("-", 1)
    for run in json.load(open(path))["runs"]:
        s = run.get("summary") or {}
        it = {k: (s.get(k) or {}).get("iter", {}).get("median") for k in ("eager", "compiled")}
        print(f"| {side} | {rnd} | {run['options']['mode']} | {run.get('compile_s') or 0:.2f} | {s.get('speedup') or 0:.3f} | "
              f"{s.get('host_speedup') or 0:.3f} | {it['eager'] or 0:.4f} | {it['compiled'] or 0:.4f} |")
PY
}

stage_autotune_draws() {
  # Does max-autotune pick the same kernels in every fresh process? AUTOTUNE_DRAWS (6) runs of the CNN b64 under
  # precision default, each with a cold compile cache (its own autotuning), AUTOTUNE_MODE (max-autotune-no-cudagraphs);
  # per run: the speedup, compile_s, the compiled side's kernel time and whether its convolutions are Triton templates.
  local draws=${AUTOTUNE_DRAWS:-6} mode=${AUTOTUNE_MODE:-max-autotune-no-cudagraphs}
  step "autotune draws: $draws cold runs of the CNN b64, $mode, precision default"
  local i
  for i in $(seq "$draws"); do  # one sweep a draw: a group's profile pass runs in its first process only
    sweep 120 --workload cnn --param batch=64 --mode "$mode" --precision default --cold-compile --iters 200 \
      --repeat 1 --json "$OUT/autotune-draw-$i.json"
  done
  local files=()
  for i in $(seq "$draws"); do [ -f "$OUT/autotune-draw-$i.json" ] && files+=("$OUT/autotune-draw-$i.json"); done
  [ ${#files[@]} -gt 0 ] || { echo "autotune draws: no sweep wrote its JSON"; return; }
  python3 - "${files[@]}" <<'PY' | tee "$OUT/autotune_draws.md"
import json, sys
print("| run | speedup | compile_s | compiled kernel ms/call | template convs | top compiled kernel |")
print("|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    for run in json.load(open(path))["runs"]:
        profile = run.get("profile") or {}
        compiled = profile.get("compiled") or {}
        kernels = compiled.get("kernels") or []
        templates = sum(1 for k in kernels if k["name"].startswith("triton_tem")) if profile.get("available") else "-"
        top = kernels[0]["name"][:60] if kernels else "-"
        print(f"| {run['run_id'][-6:]} | {(run.get('summary') or {}).get('speedup') or 0:.3f} | "
              f"{run.get('compile_s') or 0:.1f} | {compiled.get('kernel_ms_per_call') or 0:.4f} | {templates} | {top} |")
PY
}

stage_autotune_choices() {
  # What max-autotune's own benchmark timed for each convolution of the CNN b64, against the compiled model's time:
  # AUTOTUNE_DRAWS (3) fresh processes with empty caches (benchmarks/autotune_choices.py).
  step "autotune choices: ${AUTOTUNE_DRAWS:-3} draws"
  timeout 400 python3 benchmarks/autotune_choices.py --draws "${AUTOTUNE_DRAWS:-3}" --out "$OUT/autotune-choices" \
    | tee "$OUT/autotune_choices.md"
}

for stage in "${@:-tests}"; do "stage_$stage"; done
step done
