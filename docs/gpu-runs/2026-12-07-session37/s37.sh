#!/usr/bin/env bash
# Session 37, call 1: the card, then issue 27's three remaining H200 searches as one detached chain
# (CNN under ieee, the transformer block, the GEMM), each with the smaller of its budget and what is left.
cd "$(dirname "$0")"
nvidia-smi -L | tee "$OUT/card.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$OUT/card.txt"
export PYTHONPATH=/tmp/site:$PWD COMPILE_LAB_HOME=/tmp/compile-lab-home PYTHONUNBUFFERED=1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$OUT/env.txt"
dir=/tmp/tune-detached; rm -rf $dir; mkdir -p $dir/code; cp -r tui benchmarks pyproject.toml .whl $dir/code/
cat > $dir/chain.sh <<'CH'
cd /tmp/tune-detached/code
T0=$(date +%s)
for spec in ${CHAIN_CASES:-cnn-ieee:600 block:540 gemm:600}; do
  case=${spec%%:*}; want=${spec#*:}
  left=$(( ${CHAIN_LIMIT:-1500} - ($(date +%s) - T0) )); b=$(( left < want ? left : want ))
  [ $b -ge 240 ] || { echo "== skip $case: ${left}s left"; continue; }
  echo "== $case budget $b s at $(date -u +%T)"
  TUNE_CASES="$case:$b" OUT=/tmp/tune-detached bash benchmarks/gpu_run.sh tune
done
touch /tmp/tune-detached/chain.done
CH
(setsid nohup env CHAIN_LIMIT=${CHAIN_LIMIT:-1500} bash $dir/chain.sh > $dir/chain.txt 2>&1 < /dev/null &)
echo "chain started at ${SECONDS}s"
TUNE_WAIT=$(( 570 - SECONDS )) bash benchmarks/gpu_run.sh tune_wait
