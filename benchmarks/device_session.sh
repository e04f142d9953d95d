#!/usr/bin/env bash
# One call on the GPU machine: install the carried wheels, then run every GPU check in order.
# Each step's log goes to $OUT/<step>.log (8 files at most come back); the console gets tails.
#   carry: .whl shared      usage: bash benchmarks/device_session.sh step1 step2 ...
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 || echo "wheel install failed"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fib012 .whl/upstream/*.whl >/dev/null 2>&1 || echo "upstream install failed"
# a normal `pip install` leaves compiled bytecode; the carried wheels were installed with
# --no-compile, and without .pyc every Snakemake start compiles ~750 modules (1.8 s there)
env | grep -E '^PYTHON(DONTWRITEBYTECODE|PYCACHEPREFIX)=' || true
python3 -m compileall -q -j 8 /tmp/site /tmp/fib012 flashinfer_bench >/dev/null 2>&1 || echo "compileall failed"
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
export FIB_CACHE_PATH=/tmp/fib-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"

step() {  # step NAME TIMEOUT CMD...
  local name=$1 t=$2; shift 2
  echo "=================== $name ($(date +%T))"
  local t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-45}" "$OUT/$name.log"
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s"
}

for s in "$@"; do
  if [ "$s" = preflight ]; then
    # a confined runner must start on this GPU; if it cannot, measure unconfined (explicit opt-out,
    # recorded in each trace's environment.sandbox) and say so loudly
    step preflight 240 python3 benchmarks/gpu_preflight.py
    if ! grep -q "^status PASSED" "$OUT/preflight.log"; then
      echo "!!! confined runner failed on this GPU: continuing with FIB_SANDBOX=off FIB_ALLOW_UNCONFINED=1"
      export FIB_SANDBOX=off FIB_ALLOW_UNCONFINED=1
      step preflight2 240 python3 benchmarks/gpu_preflight.py
    fi
    continue
  fi
  case $s in
    gputests) step gputests 420 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests ;;
    gputests-v) step gputests 480 python3 -m pytest -m gpu -v -rfE --tb=short --durations=12 -p no:cacheprovider tests/bench/test_gpu.py tests/apply/test_gpu.py tests/compile tests/security ;;
    gputests-k) step gputests 290 python3 -m pytest -m gpu -q -rfE --durations=15 -p no:cacheprovider tests/bench/test_gpu.py tests/apply/test_gpu.py tests/compile tests/security ;;
    gputests-focus) step gputests-focus 200 python3 -m pytest -m gpu -v -rfE --tb=short -p no:cacheprovider tests/bench/test_gpu.py -k "timer_patch or physical_floor or jit_compiled" ;;
    gputests-files) for f in tests/bench/test_gpu.py tests/apply/test_gpu.py tests/compile tests/security; do
        step "gpu-$(echo ${f%.py} | tr / _)" 200 python3 -m pytest -m gpu -q -rfE --tb=short --durations=8 -p no:cacheprovider $f; done ;;
    gputests-bench) step gpu-bench "${GPU_BENCH_TIMEOUT:-360}" python3 -m pytest -m gpu -q -rfE --tb=short --durations=5 -p no:cacheprovider tests/bench/test_gpu.py tests/compile/test_zygote.py ;;
    startup) step startup 120 python3 benchmarks/startup_profile.py --dataset shared/anchor-dataset --device cuda ;;
    compile) step compile 300 python3 benchmarks/compile_gpu_check.py ;;
    anchor) step anchor 120 python3 benchmarks/anchor_vs_ncu.py --dataset shared/anchor-dataset --max-time-s 0.35 ;;
    pipeline) step pipeline 420 python3 benchmarks/pipeline_gpu.py --anchor shared/anchor-dataset --upstream-path /tmp/fib012 ;;
    apply) step apply 60 python3 benchmarks/apply_overhead.py --device cuda --upstream-path /tmp/fib012 ;;
    tracing) step tracing 60 python3 benchmarks/tracing_overhead.py --device cuda ;;
    cycle) step cycle 300 python3 benchmarks/cycle_gpu.py ;;
    confine) step confine "${CONFINE_TIMEOUT:-300}" python3 benchmarks/confinement_overhead.py --dataset shared/anchor-dataset ${CONFINE_ARGS:-} ;;
    gputests-only) step gputests-only 200 python3 -m pytest -m gpu -v -s -rfE --tb=short -p no:cacheprovider ${GPU_TESTS:?name the tests} ;;
    multigpu) step multigpu 230 python3 benchmarks/multi_gpu.py --batches 40 ;;
    families) step families 420 python3 benchmarks/real_families_vs_ncu.py ;;
    families-witness) step families-witness "${FAMILIES_TIMEOUT:-240}" python3 benchmarks/real_families_vs_ncu.py --definitions ${FAMILIES_DEFS:-all} --no-ncu --runs 1 --max-workloads "${FAMILIES_WORKLOADS:-3}" ${FAMILIES_SOLUTIONS:+--solutions $FAMILIES_SOLUTIONS} ;;
    evals) step evals 420 python3 benchmarks/evals_per_gpu_minute.py --anchor shared/anchor-dataset --upstream-path /tmp/fib012 --pairs "${PAIRS:-1}" ;;
    evals-families) step evals 500 python3 benchmarks/evals_per_gpu_minute.py --anchor shared/anchor-dataset --upstream-path /tmp/fib012 --pairs "${PAIRS:-1}" --families ;;
    evals-zygote) FIB_RUNNER_ZYGOTE=1 step evals-zygote 420 python3 benchmarks/evals_per_gpu_minute.py --anchor shared/anchor-dataset --upstream-path /tmp/fib012 --pairs "${PAIRS:-1}" ;;
    gputests-zygote) FIB_RUNNER_ZYGOTE=1 step gputests-zygote 400 python3 -m pytest -m gpu -q -rfE --tb=short -p no:cacheprovider tests/bench/test_gpu.py tests/security ;;
    attacks) step "attacks${ATTACKS_SHARD:+-${ATTACKS_SHARD/\//of}}" "${ATTACKS_TIMEOUT:-330}" python3 benchmarks/attack_table.py --device cuda --json "$OUT/attacks_gpu${ATTACKS_SHARD:+_${ATTACKS_SHARD/\//of}}.json" --only "${ATTACKS_ONLY:-}" --shard "${ATTACKS_SHARD:-}" ;;
    attacks-shards) for sh in ${ATTACKS_SHARDS:?say which, e.g. "3/4 4/4"}; do
        step "attacks-${sh/\//of}" "${ATTACKS_TIMEOUT:-330}" python3 benchmarks/attack_table.py --device cuda --json "$OUT/attacks_gpu_${sh/\//of}.json" --shard "$sh"
      done ;;
    cpustop) # the stopped-runner gate on this machine's CPU runners (their CPU cgroup, else the threads' schedstat)
      step cpustop 150 python3 -m pytest -q -rfE -s -n 0 -p no:cacheprovider -m "not gpu" tests/security/test_attacks.py tests/security/test_sandbox_units.py -k "stopped_runner_does_no_work or stopped_process or page_tables_count" ;;
    slack) # the GPU witness's slack (session 21): forgeries sized to its bound, and honest anchor rounds, at
      # the default noise share and at a tighter one (FIB_WITNESS_GRAPH_NOISE_SHARE, default 0.08)
      for share in 0.08 ${SLACK_SHARE:-0.04}; do
        FIB_WITNESS_GRAPH_NOISE_SHARE=$share step "slack-attacks-$share" 200 python3 benchmarks/attack_table.py --device cuda \
          --json "$OUT/slack_attacks_$share.json" --only rewrite_stats_within_slack,cold_null,rewrite_stats_modest,rewrite_stats
        FIB_WITNESS_GRAPH_NOISE_SHARE=$share step "slack-anchor-$share" 150 python3 benchmarks/anchor_vs_ncu.py --dataset shared/anchor-dataset --max-time-s 0.35
      done ;;
    gpusec) step gpusec "${GPUSEC_TIMEOUT:-300}" python3 -m pytest -m gpu -q -rfE --tb=short -n 0 -s -p no:cacheprovider tests/security ;;
    evals-quick) step evals-quick 150 python3 benchmarks/evals_per_gpu_minute.py --anchor shared/anchor-dataset --pairs 1 --workloads 30 ;;
    gputests-17) step gputests-17 200 python3 -m pytest -m gpu -q -rfE --tb=short -n 0 -p no:cacheprovider tests/apply/test_gpu.py tests/bench/test_gpu.py::test_a_reference_out_of_device_memory_is_the_machines_error ;;
    buildattacks) step buildattacks 120 python3 -m pytest -q -rfE --tb=short -n 0 -p no:cacheprovider tests/security/test_build_attacks.py ;;
    report) if python3 -c "import pandas, matplotlib" 2>/dev/null; then step report 200 python3 benchmarks/report_speed.py --cases example,example3 --modes warm+mpl --repeat 3; else echo "report: no pandas/matplotlib on this image"; fi ;;
    mountprobe) step mountprobe 120 python3 benchmarks/gpu_mount_probe.py ;;
    wnull) step wnull 120 python3 benchmarks/witness_null_profile.py --batch "${WNULL_BATCH:-4096}" --hidden "${WNULL_HIDDEN:-256}" ;;
    wgprof) step wgprof "${WGPROF_TIMEOUT:-200}" python3 benchmarks/witness_graph_profile.py --profile ${WGPROF_ARGS:-} ;;
    tprof) step tprof 200 python3 benchmarks/timing_profile.py --anchor shared/anchor-dataset ;;
    gpumem) step gpumem 120 python3 -m pytest -m gpu -q -rfE --tb=short -p no:cacheprovider tests/bench/test_gpu.py -k "leave_gpu_memory" ;;
    gputests-families) step gpu-families 400 python3 -m pytest -m gpu -q -rfE --tb=short -p no:cacheprovider tests/bench/test_families_gpu.py tests/security ;;
    *) echo "unknown step $s" ;;
  esac
done
