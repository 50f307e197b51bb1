#!/usr/bin/env bash
# Session 36, call 1: the card; on an H200 the app's GPU tests, then the tune chain detached; on another card the GPU tests.
cd "$(dirname "$0")"
nvidia-smi -L | tee "$OUT/card.txt"
bash benchmarks/gpu_run.sh numa > "$OUT/numa.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD COMPILE_LAB_HOME=/tmp/compile-lab-home PYTHONUNBUFFERED=1
if nvidia-smi -L | grep -q H200; then
  echo "== app GPU tests ($SECONDS s)"
  timeout 180 python3 -m pytest -m gpu -p no:cacheprovider -q -rfEs --durations=5 tests/gpu/test_gpu_app.py > "$OUT/gpu_app.txt" 2>&1
  echo "pytest exit $?" >> "$OUT/gpu_app.txt"; tail -15 "$OUT/gpu_app.txt"
  dir=/tmp/tune-detached; rm -rf $dir; mkdir -p $dir/code; cp -r tui benchmarks pyproject.toml .whl $dir/code/
  cat > $dir/chain.sh <<'CH'
cd /tmp/tune-detached/code
T0=$(date +%s)
for case in cnn-default block gemm; do
  left=$(( ${CHAIN_LIMIT:-1450} - ($(date +%s) - T0) )); b=$(( left < 600 ? left : 600 ))
  [ $b -ge 240 ] || { echo "== skip $case: ${left}s left"; continue; }
  echo "== $case budget $b s at $(date -u +%T)"
  TUNE_CASES="$case:$b" OUT=/tmp/tune-detached bash benchmarks/gpu_run.sh tune
done
touch /tmp/tune-detached/chain.done
CH
  (setsid nohup bash $dir/chain.sh > $dir/chain.txt 2>&1 < /dev/null &)
  echo "chain started at ${SECONDS}s"
  TUNE_WAIT=$(( 570 - SECONDS )) bash benchmarks/gpu_run.sh tune_wait
else
  GPU_TESTS_LIMIT=450 bash benchmarks/gpu_run.sh tests
fi
