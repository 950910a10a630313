#!/usr/bin/env bash
# One GPU session that gathers every GPU number the docs quote. Each step writes its own
# log under $OUT (never into a pipe, so a stray process cannot hold the session open)
# and has a hard time limit.
set -u
. tools/device_env.sh || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,driver_version --format=csv > $OUT/gpu.txt 2>&1
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$secs" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  pkill -9 -f "aka worker" 2>/dev/null; pkill -9 -f "aka.eval._child" 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $OUT/steps.txt
}
step suite 170 python3 tools/gpu_suite.py --out $OUT/suite.json triton2triton torch2triton instruction2triton e2e
step autotune 170 aka run configs/h200_autotune.yaml --ledger /tmp/h200
tar czf $OUT/h200_ledger.tgz -C /tmp h200 2>/dev/null
[ -f tools/redteam_gpu.py ] && step redteam 60 python3 tools/redteam_gpu.py --out $OUT/redteam.json
[ -f tools/e2e_bench.py ] && step e2e 60 python3 tools/e2e_bench.py --out $OUT/e2e.json
tail -n 3 $OUT/*.log
