cd /tmp/tune-detached/code
T0=$(date +%s)
for case in cnn-default block gemm; do
  left=$(( ${CHAIN_LIMIT:-1450} - ($(date +%s) - T0) )); b=$(( left < 600 ? left : 600 ))
  [ $b -ge 240 ] || { echo "== skip $case: ${left}s left"; continue; }
  echo "== $case budget $b s at $(date -u +%T)"
  TUNE_CASES="$case:$b" OUT=/tmp/tune-detached bash benchmarks/gpu_run.sh tune
done
touch /tmp/tune-detached/chain.done
