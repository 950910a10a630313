#!/usr/bin/env bash
# One GPU session that gathers every GPU number the docs quote. Each step writes its own
# log under $OUT (never into a pipe, so a stray process cannot hold the session open)
# and has a hard time limit; the whole script stays under nine minutes.
set -u
R=/tmp/res; mkdir -p $R   # everything lands here and is re-packed into $OUT after each step
. tools/device_env.sh > $R/env.log 2>&1 || { cat $R/env.log; exit 1; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,driver_version --format=csv > $R/gpu.txt 2>&1
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout -k 3 "$secs" "$@" > "$R/$name.log" 2>&1; local rc=$?
  pkill -9 -f "aka worker" 2>/dev/null; pkill -9 -f "aka.eval" 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt
  tar czf $OUT/results.tgz -C $R . 2>/dev/null
}
step suite 90 python3 tools/gpu_suite.py --max-time-s 0.25 --out $R/suite.json triton2triton torch2triton instruction2triton e2e
export AKA_EVAL_WARM=1; step autotune 80 aka run configs/h200_autotune.yaml --ledger /tmp/h200
unset AKA_EVAL_WARM; tar czf $R/h200_ledger.tgz -C /tmp h200 2>/dev/null
step redteam 65 python3 tools/redteam_gpu.py --out $R/redteam.json --only honest_vectorized honest_triton_basic g01_side_stream g04_event_patch g06_stale_memory g13_l2_persist g16_partial_write
[ -f aka/cli/_bench_eval.py ] && step evalbench 35 aka bench eval --device cuda --tasks 2 --format json
step e2e 45 python3 tools/e2e_bench.py prefill_rmsnorm --max-time-s 0.5 --out $R/e2e.json
tar czf $OUT/results.tgz -C $R . 2>/dev/null
tail -n 4 $R/*.log | cut -c1-300
