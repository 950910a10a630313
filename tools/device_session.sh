#!/usr/bin/env bash
# GPU sessions that gather the GPU numbers the docs quote, in two parts that each fit
# one device call (under ten minutes):
#   bash tools/device_session.sh a   eval throughput, red-team corpus, per-task suite
#   bash tools/device_session.sh b   noop vs autotune (local runner), timing engine A/A
#   bash tools/device_session.sh c RUN_LEDGER RUN_ID
#                                    resume part b's run from its carried ledger, eval
#                                    throughput with a stage breakdown, validate one task
#                                    of each kernel suite through the evaluator
#   bash tools/device_session.sh r RUN_LEDGER RUN_ID SECONDS
#                                    only resume that run (for SECONDS) and compare
#   bash tools/device_session.sh p   eval throughput (3 tasks x 3), CUDA start-up costs,
#                                    profiles of warm evaluations (aka.eval._profiling)
#   bash tools/device_session.sh w   eval throughput (5 tasks x 3), the red-team corpus
#                                    through warm workers, profiles of warm evaluations
#   bash tools/device_session.sh s   the sealed evaluation core: its CUDA build, the red-team
#                                    corpus cold and through warm workers, eval throughput
#                                    (3 tasks x 3), the engine's GPU tests
#   bash tools/device_session.sh t   the sealed core's build, the red-team corpus through warm
#                                    workers, eval throughput (3 tasks x 3)
#   bash tools/device_session.sh u   distinct new candidates (40, 4 in flight), the engine's
#                                    GPU tests
#   bash tools/device_session.sh v   t and u in one call, shorter: the core's build, the
#                                    red-team corpus (warm), eval throughput (3 tasks x 2),
#                                    20 distinct new candidates with 4 in flight
#   bash tools/device_session.sh x   the core's build, then warm evaluations of three tasks'
#                                    baselines (A/A speedups per shape)
#   bash tools/device_session.sh y   the core's build, the red-team corpus (warm), three warm
#                                    passes over three tasks' baselines (overhead, A/A against
#                                    the engine's bars), 12 distinct new candidates with 4 in
#                                    flight, fused_add_rms_norm's stage times
#   bash tools/device_session.sh z   y without the red-team corpus, with raw A/A samples of
#                                    three passes (tools/aa_trace.py)
#   bash tools/device_session.sh q ROOT START LIMIT
#                                    the core's build, three warm passes over three tasks'
#                                    baselines with the evaluator's default timing budget (2 s
#                                    per shape, 20 samples at least), then part k
#   bash tools/device_session.sh e ROOT START LIMIT JOBS
#                                    the core's build, imported KernelBench tasks under ROOT
#                                    validated JOBS at once (rows START..START+LIMIT), 26
#                                    distinct new candidates of all 13 llm tasks with 8 in
#                                    flight (stage medians), a profile of fused_add_rms_norm
#   bash tools/device_session.sh f ROOT START LIMIT JOBS
#                                    e with the distinct stream first and the validation last
#   bash tools/device_session.sh h ROOT
#                                    the core's build, 12 distinct new candidates of four tasks
#                                    with 8 in flight, then the tasks under ROOT validated one
#                                    at a time (those that failed under load)
#   bash tools/device_session.sh j ROOT OUT JOBS SECONDS [redteam]
#                                    the core's build, (the red-team corpus through warm workers,
#                                    large outputs included,) then the imported KernelBench tasks
#                                    under ROOT validated JOBS at once for at most SECONDS,
#                                    continuing the rows OUT (a carried file) already holds
#                                    (--resume); the rows come back under OUT's file name
#   bash tools/device_session.sh l JOBS ROOT OUT SECONDS [ROOT OUT SECONDS]...
#                                    the core's build, then part j's validation for each
#                                    ROOT in turn (JOBS at once, at most SECONDS each)
#   bash tools/device_session.sh k ROOT START LIMIT
#                                    validate imported KernelBench tasks under ROOT on the
#                                    GPU, rows START..START+LIMIT (tools/import_check.py)
#   bash tools/device_session.sh m   several GPUs of one host (every visible GPU): the same
#                                    baselines timed on each (aka bench agree), then
#                                    configs/scale.yaml on 1, 2, 4.. GPUs after a warm-up
#                                    run, and last on all of them with one worker killed
#                                    20 s in (aka bench scale --kill-after)
#   bash tools/device_session.sh n   only that last step: the fault on all GPUs
#   bash tools/device_session.sh dr   what drawing inputs in another process would cost per
#                                    timed call (tools/bench_drawer.py): here, over a pipe,
#                                    through CUDA IPC
#   bash tools/device_session.sh nl SECONDS TASK...
#                                    tools/command_noise.py over the command tasks TASK... for
#                                    SECONDS, as aka runs them and with address-space
#                                    randomization off, alternating (NL_SETTINGS=plain,seed,..
#                                    names others)
#   bash tools/device_session.sh st [N]
#                                    the core's build, N (default 40) distinct new candidates
#                                    at 8 and 12 in flight, the honest controls through warm
#                                    workers, the sentry's and the library bindings' tests
#   bash tools/device_session.sh vz ROOT SECONDS TASK...
#                                    the command tasks under ROOT validated two at once for at
#                                    most SECONDS (their processes laid out alike), then part
#                                    nl's plain against layout over TASK... for what is left
#   bash tools/device_session.sh sa [N]
#                                    part st in one ten-minute call, honest controls first,
#                                    then the drawer's costs (part dr) with what time is left
#   bash tools/device_session.sh tc [N]
#                                    the core's build, then N (default 40) distinct new
#                                    candidates at 8 in flight after a warm-up, twice (how often
#                                    an honest one's channel reads as tampered, and its bytes)
#   bash tools/device_session.sh g   the engine's GPU tests, eval throughput (3 tasks x 6),
#                                    warm evaluations without the timing gate, the
#                                    red-team corpus through warm workers, profiles
#   bash tools/device_session.sh d [N] [SECONDS]
#                                    the core's build, the red-team corpus through warm workers,
#                                    then N (default 40) distinct new candidates of four tasks
#                                    with 8 in flight at a trainer's timing budget of 0.1 s per
#                                    shape (aka bench eval --distinct --max-time-s 0.1)
#   bash tools/device_session.sh o [SECONDS]
#                                    the core's build, the red-team corpus through warm workers,
#                                    three warm passes over three tasks' baselines (A/A with
#                                    the operator recorder on in timed candidate calls), then
#                                    40 distinct new candidates, 8 in flight first, at 0.1 s;
#                                    between, two e2e tasks validated (their model's own
#                                    forbidden calls learned from the baseline run alone)
#   bash tools/device_session.sh audit
#                                    the core's build, then what the reservoir of timed-call
#                                    audits costs the timing stage (tools/audit_cost.py: three
#                                    tasks' baselines, reservoir on and off, three runs each)
#   bash tools/device_session.sh i N SECONDS
#                                    the core's build, then N distinct new candidates of four
#                                    tasks, 8 in flight first (then one at a time, then cached),
#                                    at a trainer's timing budget of 0.1 s per shape
#   bash tools/device_session.sh dd N SECONDS
#                                    the core's build, then N distinct new candidates of four
#                                    tasks, 8 in flight first, then 12 and 16 in flight (new
#                                    digests each), then one at a time, then cached, at 0.1 s
#                                    per shape, with how busy the host's cores were per pass
#   bash tools/device_session.sh rl ROOT OUT JOBS SECONDS
#                                    the core's build, the red-team corpus through warm workers,
#                                    then part j's validation of the tasks under ROOT (JOBS at
#                                    once, at most SECONDS)
#   bash tools/device_session.sh one ROOT OUT
#                                    one call for all: the core's build, the red-team corpus
#                                    through warm workers, 24 distinct new candidates 8 then 16
#                                    in flight (cut at 100 s: the serial pass is not reached),
#                                    then the tasks under ROOT validated four at once (150 s)
#   bash tools/device_session.sh check
#                                    the core's build, then a few red-team entries through warm
#                                    workers (the output contract and layout checks, honest
#                                    controls): a short call that the core builds and judges
#   bash tools/device_session.sh nx
#                                    the core's build, then the bundled-task red-team entries
#                                    (native code refused and seen, the baseline's modules
#                                    snapshotted, operators: plumbing) through warm workers
#                                    and cold, and one task of each CUDA suite validated (their
#                                    extensions must still build and load)
#   bash tools/device_session.sh ndd [N] [SECONDS]
#                                    the core's build, the bundled-task red-team entries and
#                                    three honest controls through warm workers, then part dd's
#                                    stream of N (default 24) distinct new candidates, 8 then 12
#                                    in flight, serial and cached (overhead beyond compile)
#   bash tools/device_session.sh de [N]
#                                    the core's build, N (default 24) distinct new candidates
#                                    after an uncounted warm-up, 8, 12 and 16 in flight, serial
#                                    and cached, at 0.05 s per shape; then 12 in flight and
#                                    serial with the timing gate off (what stopping costs)
#   bash tools/device_session.sh df [N]
#                                    the core's build, N (default 32) distinct new candidates
#                                    after an uncounted warm-up, 8 and 12 in flight, serial and
#                                    cached, at 0.05 s per shape; then 8 and 12 in flight at
#                                    0.1 s per shape (cut in its serial pass)
#   bash tools/device_session.sh dg [N]
#                                    the core's build, the red-team entries on bundled tasks from
#                                    s34 on and three honest controls through warm workers, then
#                                    N (default 24) distinct new candidates after a warm-up, 8, 12
#                                    and 16 in flight (memory admission, evaluated again alone),
#                                    serial and cached, at 0.05 s per shape
#   bash tools/device_session.sh dv [N]
#                                    the core's build, the engine's GPU tests, the red-team
#                                    corpus on the fixtures (the vault and switch entries among
#                                    them) and the bundled entries from s34 on through warm
#                                    workers, then N (default 24) distinct new candidates after
#                                    a warm-up, 8 and 12 in flight, serial and cached, at 0.05 s
#   bash tools/device_session.sh dw [N]
#                                    the core's build, three red-team entries on bundled tasks
#                                    that the task-code tripwire decides, through warm
#                                    workers, then N (default 24) distinct new
#                                    candidates after a warm-up, 8 and 12 in flight (each
#                                    pass's depth of processes prepared and waited for first),
#                                    serial and cached, at 0.05 s per shape
#   bash tools/device_session.sh dx [N]
#                                    the core's build, then part dw's stream of N (default 24)
#                                    distinct new candidates twice: through warm workers, then
#                                    with every process started fresh (AKA_EVAL_WARM=0)
#   bash tools/device_session.sh dy [N]
#                                    the core's build, then N (default 24) distinct new
#                                    candidates after a warm-up, 8 in flight, serial and cached,
#                                    at 0.05 s per shape, twice: processes started ahead as
#                                    many as in flight (--reserve 1), then twice as many
#   bash tools/device_session.sh ab OLD
#                                    the core's build, then 16 distinct new candidates at 8 in
#                                    flight (0.05 s per shape, after a warm-up) twice on one
#                                    machine: with the files in the carried folder OLD put over
#                                    aka/eval/ (an older gate, say), then with the tree's own
#   bash tools/device_session.sh gl OLD
#                                    the core's build, the honest controls and the bundled-task
#                                    red-team entries from s41 on through warm workers (the
#                                    library snapshot on a GPU), then part ab with OLD
#   bash tools/device_session.sh sy ROOT OUT SECONDS
#                                    the core's build, the honest controls and the bundled-task
#                                    red-team entries from s41 on (and two e2e ones) through warm
#                                    workers (the sentry on a GPU), 16 distinct new candidates at
#                                    8 in flight, then part l's validation of ROOT, one at a time
#   bash tools/device_session.sh sz SECONDS TASK...
#                                    the core's build, part sy's red-team entries through warm
#                                    workers, 16 distinct new candidates at 8 in flight then
#                                    serial and cached (overhead beyond compile), the sentry's
#                                    tests (Python 3.12 there), then tools/command_noise.py over the command tasks TASK... for
#                                    at most SECONDS
#   bash tools/device_session.sh lv JOBS ROOT OUT SECONDS
#                                    part l's validation of the tasks under ROOT without the
#                                    core's build (command tasks, which do not use it)
#   bash tools/device_session.sh pf [N]
#                                    the core's build, what processes sharing the GPU pay
#                                    (tools/gpu_share.py, 1-8 at once), then N (default 16)
#                                    distinct new candidates after a warm-up, 8 in flight,
#                                    serial and cached, each pass profiled (ranked by
#                                    cumulative and own time; raw profiles stay there), then
#                                    the sharing again through an MPS server where there is one
#   bash tools/device_session.sh ks SECONDS ROOT...
#                                    imported KernelBench tasks under each ROOT: their starting
#                                    code against the reference on the plain and the stressed
#                                    held-out cases (tools/stress_check.py), SECONDS each
#   bash tools/device_session.sh sn [N] [ROOT...]
#                                    the core's build, N (default 16) distinct new candidates
#                                    after a warm-up, 8 in flight then serial and cached at
#                                    0.05 s per shape (which settling each verdict needed: its
#                                    stage times and notes), then part ks for each ROOT (120 s)
#   bash tools/device_session.sh iv JOBS SECONDS KIND PATH [KIND PATH]...
#                                    the core's build, then each upstream PATH (KIND kernelbench:
#                                    problem files; aka: AgentKernelArena task folders) imported
#                                    on the device, for its platform (sm_*: AMD's fp8 formats
#                                    renamed), and validated JOBS at once for at most SECONDS
# Each step logs under /tmp/res (never into a pipe, so a stray process cannot hold the
# call open), has a hard time limit, and is re-packed into $OUT/results.tgz after it ends.
set -u
PART=${1:?usage: device_session.sh a|b|iv|pf|sn|lv|ks|c|check|dr|gl|nl|st|sy|sz|nx|ndd|de|df|dg|dv|dw|dx|dy|ab|d|dd|i|o|one|rl|audit|r|p|w|g|s|t|u|v|x|y|z|q|e|f|h|j|l|k|m|n}
R=/tmp/res; mkdir -p $R; START=$(date +%s)
. tools/device_env.sh > $R/env.log 2>&1 || { cat $R/env.log; exit 1; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,driver_version --format=csv > $R/gpu_$PART.txt 2>&1
git log -1 --format='%h %cI' > $R/commit.txt 2>/dev/null || true
df -h /dev/shm /tmp >> $R/gpu_$PART.txt 2>&1
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  timeout -k 3 "$secs" "$@" > "$R/$name.log" 2>&1; local rc=$?
  # the evaluator's processes (python -I -c BOOTSTRAP ROOT aka.eval._MODULE), not a command
  # line that only names the package
  pkill -9 -f "aka worker" 2>/dev/null; pkill -9 -f -- "-I -c .*aka[.]eval[.]_" 2>/dev/null
  pkill -9 -f "aka.validate_isolated" 2>/dev/null
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $R/steps.txt
  tar czf $OUT/results.tgz -C $R . 2>/dev/null
}
prebuild_cuda() {  # compile the CUDA tasks' extensions side by side, ahead of the suite
  for k in tasks/cuda2cuda/ops/*/source/kernel.py tasks/torch2cuda/ops/*/source/kernel.py; do
    MAX_JOBS=4 python3 -c "import runpy; runpy.run_path('$k')['_extension']()" \
      > "$R/prebuild_$(basename $(dirname $(dirname $k))).log" 2>&1 &
  done
}
G=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
GPUS=$(seq -s, 0 $((G > 0 ? G - 1 : 0)))
COUNTS=$(python3 -c "n=$G; c=[1]
while c[-1] * 2 < n: c.append(c[-1] * 2)
print(','.join(map(str, c + ([n] if n > 1 else []))))")
SCALE_TASKS="argmax col_sum int8_quant layer_norm matmul rms_norm rotary_embedding softmax"
sealbuild() {
  step sealbuild 100 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
}
sampled_distinct() {  # sampled_distinct SECONDS N: N distinct candidates at 8 and 12 in
  # flight after a warm-up, 0.05 s per shape, with the GPU's busy share sampled each second
  nvidia-smi dmon -s u -d 1 > $R/dmon.log 2>&1 &
  local dmon=$!
  step distinct "$1" python3 -m aka.cli._bench_distinct --device cuda --distinct "$2" \
    --in-flight 8 --sweep 12 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --output $R/distinct.json
  kill $dmon 2>/dev/null
  tar czf $OUT/results.tgz -C $R . 2>/dev/null
}
sentry_redteam() {  # the honest controls and the bundled-task entries from s41 on (and two
  # e2e ones) through warm workers
  local hon late
  hon=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.ENTRIES if e[0].startswith('honest')))")
  late=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; n=[e[0] for e in r.BUNDLED_ENTRIES]; print(' '.join(n[n.index('s41_settle_retimed_garbage'):]))")
  AKA_EVAL_WARM=1 step redteam_w1 170 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only $hon $late s19_e2e_code_swap s28_e2e_module_hidden
}
case $PART in
pf)
  sealbuild
  nvidia-smi -q -d COMPUTE > $R/compute_mode.txt 2>&1
  step share 150 python3 tools/gpu_share.py --counts 1,2,4,8 --seconds 1.5 --out $R/share.json
  nvidia-smi dmon -s u -d 1 > $R/dmon.log 2>&1 &
  DMON=$!
  step distinct 240 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-16}" \
    --in-flight 8 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --profile /tmp/prof --output $R/distinct.json
  kill $DMON 2>/dev/null
  for P in in_flight_pass serial cached; do
    for S in cumulative tottime; do
      python3 -m aka.eval._profiling /tmp/prof/$P --top 45 --sort $S > $R/prof_${P}_$S.txt 2>&1
    done
  done
  # the same sharing through one MPS server, where the image has one (its own pipe folder)
  { uname -a; nvidia-smi -q | head -30; command -v nvidia-cuda-mps-control; } > $R/host.txt 2>&1
  if command -v nvidia-cuda-mps-control > /dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
    mkdir -p /tmp/mps /tmp/mpslog
    timeout 20 nvidia-cuda-mps-control -d >> $R/host.txt 2>&1 && \
      step share_mps 100 python3 tools/gpu_share.py --counts 1,8 --seconds 1.5 --out $R/share_mps.json
    echo quit | timeout 20 nvidia-cuda-mps-control >> $R/host.txt 2>&1
    cp -r /tmp/mpslog $R/ 2>/dev/null
  fi
  tar czf $OUT/results.tgz -C $R . 2>/dev/null
  ;;
sn)
  sealbuild
  step distinct 300 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-16}" \
    --in-flight 8 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --output $R/distinct.json
  shift $(( $# > 1 ? 2 : 1 ))
  for ROOT in "$@"; do
    step "stress_$(basename "$ROOT")" 150 python3 tools/stress_check.py "$ROOT" \
      --device cuda --seconds 120 --out "$R/stress_$(basename "$ROOT").json"
  done
  ;;
iv)
  sealbuild
  JOBS=$2; SECS=$3; shift 3
  while [ $# -ge 2 ]; do
    NAME=$(basename "$2")
    step "iv_$NAME" "$SECS" python3 tools/import_check.py "$1" "$2" --root "/tmp/iv_$NAME" \
      --device cuda --jobs "$JOBS" --out "$R/iv_$NAME.json"
    shift 2
  done
  ;;
ks)
  SECS=$2; shift 2
  for ROOT in "$@"; do
    step "stress_$(basename "$ROOT")" $((SECS + 30)) python3 tools/stress_check.py "$ROOT" \
      --device cuda --seconds "$SECS" --out "$R/stress_$(basename "$ROOT").json"
  done
  ;;
dr)
  step drawer 240 python3 tools/bench_drawer.py --device cuda --out $R/drawer.json
  ;;
nl)
  SECS=$2; shift 2
  step noise $((SECS + 60)) python3 tools/command_noise.py "$@" --settings "${NL_SETTINGS:-plain,layout}" \
    --seconds "$SECS" --out $R/noise.json
  python3 tools/command_noise.py --summary $R/noise.json > $R/noise_summary.txt 2>&1
  ;;
st)
  sealbuild
  sampled_distinct 300 "${2:-40}"
  HON=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.ENTRIES if e[0].startswith('honest')))")
  AKA_EVAL_WARM=1 step redteam_w1 120 python3 tools/redteam_gpu.py --out $R/redteam_w1.json --only $HON
  [ -f .dbg/diag/diag312.py ] && step diag312 60 python3 .dbg/diag/diag312.py $R/diag312.json
  step sentry_tests 100 python3 -m pytest -q -p no:cacheprovider tests/redteam/test_sentry.py \
    tests/redteam/test_libstate.py
  ;;
vz)
  ROOT=$2; SECS=$3; shift 3
  step "kb_$(basename $ROOT)" "$SECS" python3 tools/import_check.py kernelbench x --root "$ROOT" \
    --no-import --device cuda --jobs 2 --out "$R/$(basename $ROOT).json"
  LEFT=$(( 560 - $(date +%s) + START ))
  [ "$LEFT" -gt 90 ] && step noise "$LEFT" python3 tools/command_noise.py "$@" --settings plain,layout \
    --seconds $((LEFT - 50)) --out $R/noise.json
  python3 tools/command_noise.py --summary $R/noise.json > $R/noise_summary.txt 2>&1
  ;;
tc)
  sealbuild
  for k in 1 2; do
    step "distinct_$k" 150 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-40}" \
      --in-flight 8 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
      --output $R/distinct_$k.json
  done
  ;;
sa)
  sealbuild
  HON=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.ENTRIES if e[0].startswith('honest')))")
  AKA_EVAL_WARM=1 step redteam_w1 110 python3 tools/redteam_gpu.py --out $R/redteam_w1.json --only $HON
  sampled_distinct 230 "${2:-40}"
  step sentry_tests 80 python3 -m pytest -q -p no:cacheprovider tests/redteam/test_sentry.py \
    tests/redteam/test_libstate.py tests/redteam/test_seeds.py
  [ -f .dbg/diag/diag312.py ] && step diag312 50 python3 .dbg/diag/diag312.py $R/diag312.json
  step drawer 60 python3 tools/bench_drawer.py --device cuda --draws 20 --out $R/drawer.json
  ;;
nx)
  sealbuild
  BUNDLED=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.BUNDLED_ENTRIES))")
  for W in 1 0; do
    AKA_EVAL_WARM=$W step "redteam_w$W" 150 python3 tools/redteam_gpu.py --out $R/redteam_w$W.json \
      --only honest_triton_basic honest_triton_autotune honest_vectorized $BUNDLED
  done
  AKA_EVAL_WARM=1 step cuda 120 aka tasks validate --device cuda --jobs 2 \
    cuda2cuda/ops/softmax torch2cuda/ops/$(ls tasks/torch2cuda/ops | head -1)
  ;;
sy)
  sealbuild
  sentry_redteam
  step distinct 90 python3 -m aka.cli._bench_distinct --device cuda --distinct 16 --in-flight 8 \
    --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up --output $R/distinct.json
  ROWS=$R/$(basename "$3"); cp "$3" "$ROWS" 2>/dev/null
  step "kb_$(basename $2)" "$4" python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --jobs 1 --resume --out "$ROWS"
  ;;
sz)
  sealbuild
  sentry_redteam
  step distinct 200 python3 -m aka.cli._bench_distinct --device cuda --distinct 16 --in-flight 8 \
    --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up --output $R/distinct.json
  step sentry_tests 150 python3 -m pytest -q -p no:cacheprovider tests/redteam/test_sentry.py \
    tests/redteam/test_libstate.py
  SECS=$2; shift 2
  step noise $((SECS + 40)) python3 tools/command_noise.py "$@" --seconds "$SECS" --out $R/noise.json
  ;;
gl)
  sealbuild
  HON=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.ENTRIES if e[0].startswith('honest')))")
  LATE=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; n=[e[0] for e in r.BUNDLED_ENTRIES]; print(' '.join(n[n.index('s30_baseline_within_slack'):]))")
  AKA_EVAL_WARM=1 step redteam_w1 170 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only $HON $LATE
  set -- ab "$2"
  ;&
ab)
  sealbuild
  mkdir -p /tmp/ab_new && cp aka/eval/*.py /tmp/ab_new/
  cp "$2"/*.py aka/eval/
  step ab_old 70 python3 -m aka.cli._bench_distinct --device cuda --distinct 16 --in-flight 8 \
    --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up --output $R/ab_old.json
  cp /tmp/ab_new/*.py aka/eval/
  step ab_new 70 python3 -m aka.cli._bench_distinct --device cuda --distinct 16 --in-flight 8 \
    --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up --output $R/ab_new.json
  ;;
dy)
  sealbuild
  for K in 1 2; do
    step "reserve_$K" 270 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-24}" \
      --in-flight 8 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up --reserve $K \
      --output $R/reserve_$K.json
  done
  ;;
dx)
  sealbuild
  sampled_distinct 230 "${2:-24}"
  AKA_EVAL_WARM=0 step distinct_fresh 230 python3 -m aka.cli._bench_distinct --device cuda \
    --distinct "${2:-24}" --in-flight 8 --sweep 12 --tasks 4 --max-time-s 0.05 \
    --in-flight-first --warm-up --output $R/distinct_fresh.json
  ;;
dw)
  sealbuild
  AKA_EVAL_WARM=1 step redteam_w1 70 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only s34_baseline_attribute_slowed s31_torchscript_fuser s19_e2e_code_swap
  sampled_distinct 300 "${2:-24}"
  ;;
dv)
  sealbuild
  step gputests 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/timing/test_gpu.py
  LATE=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; n=[e[0] for e in r.BUNDLED_ENTRIES]; print(' '.join(n[n.index('s34_baseline_attribute_slowed'):]))")
  FIX=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.ENTRIES))")
  AKA_EVAL_WARM=1 step redteam_w1 170 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only $FIX $LATE
  sampled_distinct 230 "${2:-24}"
  ;;
dg)
  sealbuild
  LATE=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; n=[e[0] for e in r.BUNDLED_ENTRIES]; print(' '.join(n[n.index('s34_baseline_attribute_slowed'):]))")
  AKA_EVAL_WARM=1 step redteam_w1 120 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only honest_triton_basic honest_triton_autotune honest_vectorized $LATE
  step distinct 300 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-24}" \
    --in-flight 8 --sweep 12,16 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --output $R/distinct.json
  ;;
df)
  sealbuild
  step distinct 250 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-32}" \
    --in-flight 8 --sweep 12 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --output $R/distinct.json
  step distinct_01 170 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-32}" \
    --in-flight 8 --sweep 12 --tasks 4 --max-time-s 0.1 --in-flight-first --warm-up \
    --output $R/distinct_01.json
  ;;
de)
  sealbuild
  step distinct 260 python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-24}" \
    --in-flight 8 --sweep 12,16 --tasks 4 --max-time-s 0.05 --in-flight-first --warm-up \
    --output $R/distinct.json
  AKA_EVAL_GATE=0 step nogate 190 python3 -m aka.cli._bench_distinct --device cuda \
    --distinct "${2:-24}" --in-flight 12 --tasks 4 --max-time-s 0.05 --in-flight-first \
    --warm-up --output $R/nogate.json
  ;;
ndd)
  sealbuild
  BUNDLED=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import redteam_gpu as r; print(' '.join(e[0] for e in r.BUNDLED_ENTRIES))")
  AKA_EVAL_WARM=1 step redteam_w1 150 python3 tools/redteam_gpu.py --out $R/redteam_w1.json \
    --only honest_triton_basic honest_triton_autotune honest_vectorized $BUNDLED
  step distinct "${3:-300}" python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-24}" \
    --in-flight 8 --sweep 12 --tasks 4 --max-time-s 0.1 --in-flight-first --output $R/distinct.json
  ;;
m)
  sealbuild
  AKA_EVAL_WARM=1 step agree 100 aka bench agree --gpus $GPUS --max-time-s 0.5 --output $R/agree.json \
    $(for t in $SCALE_TASKS; do printf -- '--task tasks/triton2triton/llm/%s ' $t; done)
  AKA_EVAL_WARM=1 step scale 380 aka bench scale configs/scale.yaml --gpus $GPUS --counts $COUNTS,$G \
    --warm-up --kill-after 20 --ledger /tmp/scale --output $R/scale.json
  step workers 20 sh -c "aka sql 'SELECT * FROM workers' --ledger /tmp/scale --format json > $R/workers.json"
  tar czf $R/scale_ledger.tgz -C /tmp scale 2>/dev/null
  ;;
n)
  sealbuild
  AKA_EVAL_WARM=1 step fault 300 aka bench scale configs/scale.yaml --gpus $GPUS --counts $G \
    --kill-after 20 --ledger /tmp/fault --output $R/fault.json
  tar czf $R/fault_ledger.tgz -C /tmp fault 2>/dev/null
  ;;
a)
  prebuild_cuda
  step evalbench 170 aka bench eval --device cuda --tasks 3 --format json
  AKA_EVAL_WARM=1 step redteam 150 python3 tools/redteam_gpu.py --out $R/redteam.json
  wait
  step suite 200 python3 tools/gpu_suite.py --max-time-s 0.25 --out $R/suite.json \
    triton2triton torch2triton instruction2triton cuda2cuda torch2cuda
  ;;
b)
  AKA_EVAL_WARM=1 step autotune 300 aka run configs/h200_autotune.yaml --ledger /tmp/h200
  step compare 40 sh -c "aka compare noop autotune --ledger /tmp/h200 --format json > $R/compare.json; aka compare noop autotune --ledger /tmp/h200; aka report --ledger /tmp/h200"
  tar czf $R/h200_ledger.tgz -C /tmp h200 2>/dev/null
  step timing 215 python3 -m aka.timing.bench --processes 5 --rounds 10 --budget-s 190 --output $R/timing.json
  ;;
c)
  cp -r "$2" /tmp/h200
  AKA_EVAL_WARM=1 step resume 280 aka resume "$3" --runner local --gpus 0 --ledger /tmp/h200
  step compare 40 sh -c "aka compare noop autotune --ledger /tmp/h200 --format json > $R/compare.json; aka compare noop autotune --ledger /tmp/h200; aka report --ledger /tmp/h200 --format json > $R/report.json; aka report --ledger /tmp/h200"
  tar czf $R/h200_ledger.tgz -C /tmp h200 2>/dev/null
  step evalbench 130 aka bench eval --device cuda --tasks 3 --repeat 2 --format json
  AKA_EVAL_WARM=1 step validate 150 aka tasks validate --device cuda --ledger /tmp/validate --format json \
    triton2triton/llm/softmax torch2triton/ops/cumsum instruction2triton/spec/geglu \
    cuda2cuda/ops/softmax torch2cuda/ops/layer_norm
  ;;
r)
  cp -r "$2" /tmp/h200
  AKA_EVAL_WARM=1 step resume "$4" aka resume "$3" --runner local --gpus 0 --ledger /tmp/h200
  step compare 40 sh -c "aka compare noop autotune --force --ledger /tmp/h200 --format json > $R/compare.json; aka compare noop autotune --force --ledger /tmp/h200"
  tar czf $R/h200_ledger.tgz -C /tmp h200 2>/dev/null
  ;;
p)
  step cudastart 60 python3 tools/cuda_start.py --out $R/cuda_start.json
  step evalbench 200 aka bench eval --device cuda --tasks 3 --repeat 3 --format json
  AKA_EVAL_PROFILE=$R/prof step profile 120 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 2, warm=True), indent=1))"
  step profsum 30 sh -c "python3 -m aka.eval._profiling $R/prof --top 45 > $R/prof_cum.txt; python3 -m aka.eval._profiling $R/prof --top 45 --sort tottime > $R/prof_tot.txt"
  ;;
w)
  step evalbench 280 aka bench eval --device cuda --tasks 5 --repeat 3 --format json
  AKA_EVAL_WARM=1 step redteam 150 python3 tools/redteam_gpu.py --out $R/redteam.json
  AKA_EVAL_PROFILE=$R/prof step profile 90 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 2, warm=True), indent=1))"
  step profsum 30 sh -c "python3 -m aka.eval._profiling $R/prof --top 45 > $R/prof_cum.txt; python3 -m aka.eval._profiling $R/prof --top 45 --sort tottime > $R/prof_tot.txt"
  ;;
g)
  step gputests 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/timing/test_gpu.py
  step evalbench 290 python3 -m aka.cli._bench_eval --device cuda --tasks 3 --repeat 6 --output $R/bench.json
  AKA_EVAL_GATE=0 step nogate 60 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  AKA_EVAL_WARM=1 step redteam 150 python3 tools/redteam_gpu.py --out $R/redteam.json
  AKA_EVAL_PROFILE=$R/prof step profile 90 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 2, warm=True), indent=1))"
  step profsum 30 sh -c "python3 -m aka.eval._profiling $R/prof --top 45 > $R/prof_cum.txt; python3 -m aka.eval._profiling $R/prof --top 45 --sort tottime > $R/prof_tot.txt"
  ;;
s)
  step sealbuild 300 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step redteam 170 python3 tools/redteam_gpu.py --out $R/redteam.json
  AKA_EVAL_WARM=1 step redteamwarm 150 python3 tools/redteam_gpu.py --out $R/redteam_warm.json
  step evalbench 200 python3 -m aka.cli._bench_eval --device cuda --tasks 3 --repeat 3 --output $R/bench.json
  step gputests 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/timing/test_gpu.py
  ;;
t)
  step sealbuild 200 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  AKA_EVAL_WARM=1 step redteamwarm 150 python3 tools/redteam_gpu.py --out $R/redteam_warm.json
  step evalbench 190 python3 -m aka.cli._bench_eval --device cuda --tasks 3 --repeat 3 --output $R/bench.json
  ;;
v)
  step sealbuild 150 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step redteamwarm 120 python3 tools/redteam_gpu.py --out $R/redteam_warm.json
  step evalbench 140 python3 -m aka.cli._bench_eval --device cuda --tasks 3 --repeat 2 --output $R/bench.json
  step distinct 150 python3 -m aka.cli._bench_distinct --device cuda --distinct 20 --in-flight 4 --tasks 5 --output $R/distinct.json
  ;;
x)
  step sealbuild 150 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step aa 150 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  ;;
y)
  step sealbuild 120 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step redteamwarm 90 python3 tools/redteam_gpu.py --out $R/redteam_warm.json
  step aa 110 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  step distinct 200 python3 -m aka.cli._bench_distinct --device cuda --distinct 12 --in-flight 4 --tasks 4 --output $R/distinct.json
  step rmsnorm 60 python3 -c "from aka.cli._bench_eval import evaluate_baseline, TASKS_ROOT; from aka.eval import current_workers; w = current_workers(); [print(evaluate_baseline(TASKS_ROOT / 'llm/fused_add_rms_norm', 'cuda', w)['stage_s']) for _ in range(2)]"
  ;;
z)
  step sealbuild 120 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step aa 110 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  step aatrace 90 python3 tools/aa_trace.py --device cuda --tasks 3 --passes 3 --out $R/aa_trace.json
  step distinct 150 python3 -m aka.cli._bench_distinct --device cuda --distinct 12 --in-flight 4 --tasks 4 --output $R/distinct.json
  step rmsnorm 60 python3 -c "from aka.cli._bench_eval import evaluate_baseline, TASKS_ROOT; from aka.eval import current_workers; w = current_workers(); [print(evaluate_baseline(TASKS_ROOT / 'llm/fused_add_rms_norm', 'cuda', w)['stage_s']) for _ in range(2)]"
  ;;
q)
  step sealbuild 120 python3 -c "import time; t=time.time(); from aka.eval import _native; print(_native.ensure_built('cuda'), round(time.time()-t, 1), 's')"
  step aadefault 150 python3 -c "import aka.cli._bench_eval as b, json; b.TIMING.update(max_time_s=2.0, min_samples=20); print(json.dumps(b._mode(b.triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  step "kb_$(basename $2)_$3" 300 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --start "$3" --limit "$4" --out "$R/$(basename $2)_$3.json"
  ;;
e)
  sealbuild
  step "kb_$(basename $2)_$3" 200 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --start "$3" --limit "$4" --jobs "$5" --out "$R/$(basename $2)_$3.json"
  step distinct 200 python3 -m aka.cli._bench_distinct --device cuda --distinct 26 --in-flight 8 --tasks 13 --output $R/distinct.json
  AKA_EVAL_PROFILE=$R/prof step rmsprofile 50 python3 -c "from aka.cli._bench_eval import evaluate_baseline, TASKS_ROOT; from aka.eval import current_workers; w = current_workers(); [print(evaluate_baseline(TASKS_ROOT / 'llm/fused_add_rms_norm', 'cuda', w)['stage_s']) for _ in range(2)]"
  step profsum 30 sh -c "python3 -m aka.eval._profiling $R/prof --top 40 > $R/prof_cum.txt; python3 -m aka.eval._profiling $R/prof --top 40 --sort tottime > $R/prof_tot.txt"
  ;;
f)
  sealbuild
  step distinct 220 python3 -m aka.cli._bench_distinct --device cuda --distinct 26 --in-flight 8 --tasks 13 --output $R/distinct.json
  AKA_EVAL_PROFILE=$R/prof step rmsprofile 50 python3 -c "from aka.cli._bench_eval import evaluate_baseline, TASKS_ROOT; from aka.eval import current_workers; w = current_workers(); [print(evaluate_baseline(TASKS_ROOT / 'llm/fused_add_rms_norm', 'cuda', w)['stage_s']) for _ in range(2)]"
  step profsum 30 sh -c "python3 -m aka.eval._profiling $R/prof --top 40 > $R/prof_cum.txt; python3 -m aka.eval._profiling $R/prof --top 40 --sort tottime > $R/prof_tot.txt"
  step "kb_$(basename $2)_$3" 200 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --start "$3" --limit "$4" --jobs "$5" --out "$R/$(basename $2)_$3.json"
  ;;
h)
  sealbuild
  step distinct 140 python3 -m aka.cli._bench_distinct --device cuda --distinct 12 --in-flight 8 --tasks 4 --output $R/distinct.json
  step "kb_$(basename $2)" 270 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --out "$R/$(basename $2).json"
  ;;
j)
  sealbuild
  if [ "${6:-}" = redteam ]; then AKA_EVAL_WARM=1 step redteam 170 python3 tools/redteam_gpu.py --out $R/redteam.json; fi
  ROWS=$R/$(basename "$3"); cp "$3" "$ROWS" 2>/dev/null  # the rows so far, kept in results.tgz
  step "kb_$(basename $2)" "$5" python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --jobs "$4" --resume --out "$ROWS"
  ;;
l|lv)
  [ "$PART" = l ] && sealbuild
  JOBS=$2; shift 2
  while [ $# -ge 3 ]; do
    ROWS=$R/$(basename "$2"); cp "$2" "$ROWS" 2>/dev/null
    step "kb_$(basename $1)" "$3" python3 tools/import_check.py kernelbench x --root "$1" --no-import --device cuda --jobs "$JOBS" --resume --out "$ROWS"
    shift 3
  done
  ;;
k)
  step "kb_$(basename $2)_$3" 560 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --start "$3" --limit "$4" --out "$R/$(basename $2)_$3.json"
  ;;
d)
  sealbuild
  AKA_EVAL_WARM=1 step redteam 170 python3 tools/redteam_gpu.py --out $R/redteam.json
  step distinct "${3:-300}" python3 -m aka.cli._bench_distinct --device cuda --distinct "${2:-40}" \
    --in-flight 8 --tasks 4 --max-time-s 0.1 --output $R/distinct.json
  ;;
o)
  sealbuild
  AKA_EVAL_WARM=1 step redteam 170 python3 tools/redteam_gpu.py --out $R/redteam.json
  AKA_EVAL_WARM=1 step e2e 120 aka tasks validate --device cuda --format json \
    e2e/llama/decode_attention e2e/llama/prefill_rmsnorm
  step aa 110 python3 -c "from aka.cli._bench_eval import _mode, triton_tasks; import json; print(json.dumps(_mode(triton_tasks(3), 'cuda', 3, warm=True), indent=1))"
  step distinct "${2:-200}" python3 -m aka.cli._bench_distinct --device cuda --distinct 40 \
    --in-flight 8 --tasks 4 --max-time-s 0.1 --in-flight-first --output $R/distinct.json
  ;;
audit)
  sealbuild
  step audit 300 python3 tools/audit_cost.py --device cuda --tasks 3 --runs 3 --max-time-s 0.1 \
    --out $R/audit_cost.json
  ;;
i)
  sealbuild
  step distinct "$3" python3 -m aka.cli._bench_distinct --device cuda --distinct "$2" \
    --in-flight 8 --tasks 4 --max-time-s 0.1 --in-flight-first --output $R/distinct.json
  ;;
check)
  sealbuild
  AKA_EVAL_WARM=1 step redteam 120 python3 tools/redteam_gpu.py --out $R/redteam.json --only \
    honest_vectorized honest_transpose_copy honest_triton_basic s27_output_dtype s13_output_view
  ;;
one)
  sealbuild
  AKA_EVAL_WARM=1 step redteam 140 python3 tools/redteam_gpu.py --out $R/redteam.json
  step distinct 100 python3 -m aka.cli._bench_distinct --device cuda --distinct 24 \
    --in-flight 8 --sweep 16 --tasks 4 --max-time-s 0.1 --in-flight-first --output $R/distinct.json
  ROWS=$R/$(basename "$3"); cp "$3" "$ROWS" 2>/dev/null
  step "kb_$(basename $2)" 150 python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --jobs 4 --resume --out "$ROWS"
  ;;
rl)
  sealbuild
  AKA_EVAL_WARM=1 step redteam 170 python3 tools/redteam_gpu.py --out $R/redteam.json
  ROWS=$R/$(basename "$3"); cp "$3" "$ROWS" 2>/dev/null
  step "kb_$(basename $2)" "$5" python3 tools/import_check.py kernelbench x --root "$2" --no-import --device cuda --jobs "$4" --resume --out "$ROWS"
  ;;
dd)
  sealbuild
  step distinct "$3" python3 -m aka.cli._bench_distinct --device cuda --distinct "$2" \
    --in-flight 8 --sweep 12,16 --tasks 4 --max-time-s 0.1 --in-flight-first --output $R/distinct.json
  ;;
u)
  step distinct 420 python3 -m aka.cli._bench_distinct --device cuda --distinct 40 --in-flight 4 --tasks 5 --output $R/distinct.json
  step gputests 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/timing/test_gpu.py
  ;;
esac
tar czf $OUT/results.tgz -C $R . 2>/dev/null
tail -n 6 $R/*.log | cut -c1-300
