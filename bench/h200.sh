#!/usr/bin/env bash
# The H200 measurements, one phase per call of the device tool; everything lands under $OUT.
#   bench/h200.sh smoke       GPU tests + `kernelbot eval` of every example candidate + throughput (GPU 0)
#   bench/h200.sh stability   cross-process CV, kernelbot vs do_bench vs do_bench_cudagraph (GPU 1, or 0)
#   bench/h200.sh first       smoke on GPU 0 and stability on GPU 1 at the same time
#   bench/h200.sh search      offline `kernelbot evolve` on every example task, then bench/vs_compile.py
#   bench/h200.sh scaling     bench/scaling.py: 1 and 2 GPUs, local and Ray, with a kill run
#   bench/h200.sh second..thirtythird  the calls behind docs/benchmarks.md's results (each phase says what it runs)
# The image has torch/triton but not libcst, tomli_w or ray: .devsite/devsite.tar.xz carries them (see
# docs/benchmarks.md for how it is built) and is unpacked onto PYTHONPATH.
set -u
cd "$(dirname "$0")/.."
# The device tool returns at most 8 files from $OUT: everything is written under $W, then packed.
FINAL=${OUT:-/tmp/kb-out}
W=/tmp/kb-work
OUT=$W
mkdir -p "$W" "$FINAL" /tmp/site
[ -f .devsite/devsite.tar.xz ] && [ ! -d /tmp/site/libcst ] && tar -xJf .devsite/devsite.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 KERNELBOT_HOME=/tmp/kbhome RAY_AUTH_MODE=disabled
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
pack() {  # after every step, so a call cut short by its time limit still returns what was done
  tar -czf "$FINAL/results-$PHASE.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$FINAL/summary.txt" 2>/dev/null
}
PHASE=${1:-none}

env_report() {
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/env.txt" 2>&1
  python3 -c "import torch, triton, sys; print(sys.version); print(torch.__version__, triton.__version__,
torch.cuda.device_count())" >>"$OUT/env.txt" 2>&1
  nproc >>"$OUT/env.txt"
}

gpu_tests() {  # the GPU-only tests (GPU 0 unless CUDA_VISIBLE_DEVICES is set), verbose, junit report
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
  timeout "${1:-240}" python3 -m pytest -p no:cacheprovider -m gpu -rfE -v --timeout 150 \
    --junitxml="$OUT/pytest_gpu.xml" "${@:2}" >"$OUT/pytest_gpu.log" 2>&1
  echo "pytest gpu rc=$?" >>"$OUT/summary.txt"; pack
}

smoke() {  # GPU 0
  export CUDA_VISIBLE_DEVICES=0
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu --timeout 120 \
    tests/evaluators tests/adversarial tests/evolution/test_inductor_seed.py >"$OUT/pytest_gpu.log" 2>&1
  echo "pytest gpu rc=$?" >>"$OUT/summary.txt"
  for cand in examples/tasks/*/candidates/*.py; do
    task=$(dirname "$(dirname "$cand")")
    timeout 120 python3 -m kernelbot.cli eval "$task" "$cand" --backend triton-cuda --json \
      >"$OUT/eval_$(basename "$cand" .py).json" 2>>"$OUT/eval_errors.log"
    echo "eval $(basename "$cand") rc=$?" >>"$OUT/summary.txt"
  done
  timeout 200 python3 bench/throughput.py --out "$OUT/throughput" --workers 8 --variants 6 --rounds 1 \
    >"$OUT/throughput.log" 2>&1
  echo "throughput rc=$?" >>"$OUT/summary.txt"
}

stability() {
  timeout 300 python3 bench/stability.py --out "$OUT/stability" >"$OUT/stability.log" 2>&1
  echo "stability rc=$?" >>"$OUT/summary.txt"; pack
}

search() {  # two tasks per GPU at a time, then the torch.compile comparison, one task per GPU
  local minutes=${SEARCH_MINUTES:-4} limit
  local i=0 pids=()
  for task in examples/tasks/*/; do
    name=$(basename "$task")
    limit=$(python3 -c "print(int($minutes * 60))")
    CUDA_VISIBLE_DEVICES=$((i % 2)) timeout $((limit + 45)) python3 -m kernelbot.cli evolve "$task" \
      --iterations 400 --time-limit "${limit}s" --out "/tmp/runs/$name" --workers-per-device 6 --json \
      >"$OUT/evolve_$name.json" 2>"$OUT/evolve_$name.log" &
    pids+=($!); i=$((i + 1))
  done
  wait "${pids[@]}"
  echo "evolve done" >>"$OUT/summary.txt"; pack
  # The stores too: every verdict with its reason (the 2026-11-29 run left them behind and lost why 29
  # decode_metadata children failed).
  (cd /tmp && tar -czf "$OUT/runs.tgz" runs/*/best.py runs/*/summary.json runs/*/growth.* runs/*/*.sqlite \
    2>/dev/null)
  pairs0=() pairs1=(); i=0
  for task in examples/tasks/*/; do
    name=$(basename "$task")
    [ -f "/tmp/runs/$name/best.py" ] || continue
    if [ $((i % 2)) -eq 0 ]; then pairs0+=("$task=/tmp/runs/$name/best.py"); else pairs1+=("$task=/tmp/runs/$name/best.py"); fi
    i=$((i + 1))
  done
  CUDA_VISIBLE_DEVICES=0 timeout 100 python3 bench/vs_compile.py --out "$OUT/vs_compile0" "${pairs0[@]}" \
    >"$OUT/vs_compile0.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 100 python3 bench/vs_compile.py --out "$OUT/vs_compile1" "${pairs1[@]}" \
    >"$OUT/vs_compile1.log" 2>&1 &
  wait
  echo "vs_compile done" >>"$OUT/summary.txt"; pack
}

search_tasks() {  # the named tasks searched at once on GPU $GPU, then compared with torch.compile there
  local pids=() pairs=() name
  for name in "$@"; do
    CUDA_VISIBLE_DEVICES=$GPU timeout $((SEARCH_SECONDS + 45)) python3 -m kernelbot.cli evolve \
      "examples/tasks/$name" --iterations 1000 --time-limit "${SEARCH_SECONDS}s" --out "/tmp/runs/$name" \
      --workers-per-device "${WORKERS:-6}" --json >"$OUT/evolve_$name.json" 2>"$OUT/evolve_$name.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "evolve $* done" >>"$OUT/summary.txt"; pack
  for name in "$@"; do
    [ -f "/tmp/runs/$name/best.py" ] && pairs+=("examples/tasks/$name=/tmp/runs/$name/best.py")
  done
  CUDA_VISIBLE_DEVICES=$GPU timeout "${VS_TIMEOUT:-90}" python3 bench/vs_compile.py --out "$OUT/vs_compile$GPU" \
    ${VS_FLAGS:-} "${pairs[@]}" >"$OUT/vs_compile$GPU.log" 2>&1
  echo "vs_compile $* rc=$?" >>"$OUT/summary.txt"; pack
}

throughput_gpu0() {  # the example candidates + 12 tuning variants each, 12 workers on GPU 0
  CUDA_VISIBLE_DEVICES=0 timeout 170 python3 bench/throughput.py --out "$OUT/throughput" --workers 12 \
    --variants 12 --rounds 1 >"$OUT/throughput.log" 2>&1
  echo "throughput rc=$?" >>"$OUT/summary.txt"; pack
}

again_vs_compile() {  # TASK CASES TIMES: the search's best against compile and the A/A yardstick again on
  # GPU $GPU, each time in a fresh process (bench/vs_compile_pool.py pools the runs)
  local k
  for k in $(seq 1 "$3"); do
    CUDA_VISIBLE_DEVICES=$GPU timeout 80 python3 bench/vs_compile.py --out "$OUT/again_$1_$k" --compile-only \
      --twin --cases "$2" "examples/tasks/$1=/tmp/runs/$1/best.py" >"$OUT/again_$1_$k.log" 2>&1
    echo "again $1 $k rc=$?" >>"$OUT/summary.txt"; pack
  done
}
silu_many() {  # UNTIL [seed-first]: the silu search's best, the constexpr seed and compile's own kernel
  # standalone against compile with the A/A, graph regime, on the four bandwidth-bound cases, each time in a
  # fresh process, until UNTIL seconds into the call; seed-first times the seed before the best
  local S=examples/tasks/silu_and_mul rep=0 first second
  first="$S=/tmp/runs/silu_and_mul/best.py" second="$S=$S/candidates/silu_and_mul_constexpr_d_triton.py"
  [ "${2:-}" = seed-first ] && { local t=$first; first=$second; second=$t; }
  export CUDA_VISIBLE_DEVICES=0
  while [ -f /tmp/runs/silu_and_mul/best.py ] && [ $SECONDS -lt "$1" ]; do
    rep=$((rep + 1))
    timeout 60 python3 bench/vs_compile.py --out "$OUT/many_$rep" --compile-only --twin \
      --set 'timing.regimes=["graph"]' \
      --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
      "$first" "$second" "$S=bench/probes/silu_inductor_static.py" >"$OUT/many_$rep.log" 2>&1
    echo "many $rep rc=$? at ${SECONDS}s" >>"$OUT/summary.txt"; pack
  done
}

keep_runs() {  # the search stores: every verdict with its reason
  (cd /tmp && tar -czf "$OUT/runs.tgz" runs/*/best.py runs/*/summary.json runs/*/growth.* runs/*/*.sqlite \
    2>/dev/null)
}

scaling() {
  timeout 560 python3 bench/scaling.py --out "$OUT/scaling" --gpus 1,2 --executors local,ray --kill \
    --workers 8 --variants 4 >"$OUT/scaling.log" 2>&1
  echo "scaling rc=$?" >>"$OUT/summary.txt"
}

env_report
case "${1:-}" in
  smoke) smoke ;;
  stability) stability ;;
  first) (smoke) & (CUDA_VISIBLE_DEVICES=1 stability) & wait ;;
  search) search ;;
  second)  # stability alone on GPU 1; GPU tests that failed before + throughput on GPU 0; then the search
    (CUDA_VISIBLE_DEVICES=1 stability) &
    (gpu_tests 120 tests/evaluators/test_timing_gpu.py tests/adversarial/test_gpu_cheats.py \
       -k "roofline or c14 or c15 or naive or legit or c01"
     CUDA_VISIBLE_DEVICES=0 timeout 150 python3 bench/throughput.py --out "$OUT/throughput" --workers 12 \
       --variants 6 --rounds 1 >"$OUT/throughput.log" 2>&1
     echo "throughput rc=$?" >>"$OUT/summary.txt"; pack) &
    wait
    SEARCH_MINUTES=2.5 search ;;
  scaling) scaling ;;
  third)  # throughput with a per-stage breakdown (GPU 0), then a short decode search that keeps its store;
    # stability with the speedup criterion (GPU 1), then the GPU tests not yet run on the code on main
    (export CUDA_VISIBLE_DEVICES=0
     timeout 170 python3 bench/throughput.py --out "$OUT/throughput12" --workers 12 --variants 12 \
       --rounds 1 >"$OUT/throughput12.log" 2>&1
     echo "throughput12 rc=$?" >>"$OUT/summary.txt"; pack
     timeout 170 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 --variants 12 \
       --rounds 1 --set timing.secondary_time_cap_s=0.02 --set timing.secondary_min_samples=5 \
       >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack
     timeout 120 python3 -m kernelbot.cli evolve examples/tasks/decode_metadata --iterations 400 \
       --time-limit 70s --out /tmp/runs/decode_metadata --workers-per-device 8 --json \
       >"$OUT/evolve_decode_metadata.json" 2>"$OUT/evolve_decode_metadata.log"
     echo "decode search rc=$?" >>"$OUT/summary.txt"
     (cd /tmp && tar -czf "$OUT/runs.tgz" runs/*/best.py runs/*/summary.json runs/*/*.sqlite 2>/dev/null)
     pack) &
    (export CUDA_VISIBLE_DEVICES=1
     stability
     gpu_tests 150 tests/adversarial/test_gpu_cheats.py tests/evaluators/test_timing_gpu.py \
       tests/evolution/test_inductor_seed.py tests/evaluators/test_pool.py) &
    wait ;;
  fourth)  # GPU 0: throughput, then silu + rmsnorm searches; GPU 1: stability, then moe + decode searches
    (throughput_gpu0; GPU=0 SEARCH_SECONDS=150 search_tasks silu_and_mul rmsnorm_residual) &
    (export CUDA_VISIBLE_DEVICES=1
     stability
     GPU=1 SEARCH_SECONDS=90 search_tasks moe_grouped_topk decode_metadata) &
    wait
    keep_runs ;;
  fifth)  # GPU 0: throughput, then silu + rmsnorm searches; GPU 1: stability, then GPU tests
    (throughput_gpu0; GPU=0 SEARCH_SECONDS=150 search_tasks silu_and_mul rmsnorm_residual) &
    (export CUDA_VISIBLE_DEVICES=1
     stability
     gpu_tests 170 tests/evaluators/test_timing_gpu.py tests/adversarial/test_gpu_cheats.py tests/examples) &
    wait
    keep_runs ;;
  sixth)  # one search per GPU, each alone on its GPU
    (WORKERS=12 GPU=0 SEARCH_SECONDS=160 search_tasks silu_and_mul) &
    (WORKERS=12 GPU=1 SEARCH_SECONDS=160 search_tasks rmsnorm_residual) &
    wait
    keep_runs ;;
  seventh)  # third session, GPU lock per case and regime: GPU 0 throughput with 12 and 16 workers, then the
    # GPU tests of the timing stage; GPU 1 stability (30 ms minimum sampling)
    (throughput_gpu0
     CUDA_VISIBLE_DEVICES=0 timeout 170 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 \
       --variants 12 --rounds 1 >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack
     gpu_tests 150 tests/evaluators/test_timing_gpu.py tests/evaluators/test_pipeline.py \
       tests/evaluators/test_pool.py) &
    (export CUDA_VISIBLE_DEVICES=1
     stability) &
    wait ;;
  eighth)  # GPU 0: rmsnorm variants vs torch.compile, then throughput (12 workers; the same 40 submissions
    # as before, then 2 rounds of them for a steady state); GPU 1: silu variants, then stability again
    (export CUDA_VISIBLE_DEVICES=0
     R=examples/tasks/rmsnorm_residual; V=bench/variants/rmsnorm_residual
     timeout 240 python3 bench/vs_compile.py --out "$OUT/variants_rms" --compile-only \
       --cases t4096_h4096_bf16,t4096_h7168_bf16,t256_h4096_bf16,t8_h7168_fp32 \
       "$R=$R/candidates/rmsnorm_residual_triton.py" "$R=$R/candidates/rmsnorm_residual_rowwise_triton.py" \
       $(for v in "$V"/*.py; do printf '%s ' "$R=$v"; done) >"$OUT/variants_rms.log" 2>&1
     echo "variants rms rc=$?" >>"$OUT/summary.txt"; pack
     throughput_gpu0
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput_x2" --workers 12 --variants 12 \
       --rounds 2 >"$OUT/throughput_x2.log" 2>&1
     echo "throughput x2 rc=$?" >>"$OUT/summary.txt"; pack) &
    (export CUDA_VISIBLE_DEVICES=1
     S=examples/tasks/silu_and_mul; W=bench/variants/silu_and_mul
     timeout 240 python3 bench/vs_compile.py --out "$OUT/variants_silu" --compile-only \
       --cases t16_d1792_fp32,t1_d2048_bf16,t4096_d14336_bf16,t1024_d18432_bf16,t4096_d2048_bf16 \
       "$S=$S/candidates/silu_and_mul_triton.py" "$S=$S/candidates/silu_and_mul_flat_triton.py" \
       $(for v in "$W"/*.py; do printf '%s ' "$S=$v"; done) >"$OUT/variants_silu.log" 2>&1
     echo "variants silu rc=$?" >>"$OUT/summary.txt"; pack
     stability) &
    wait ;;
  ninth)  # one search per GPU, each alone on its GPU (third seeds from the variant sweep, bucket crossover)
    (WORKERS=12 GPU=0 SEARCH_SECONDS=240 search_tasks silu_and_mul) &
    (WORKERS=12 GPU=1 SEARCH_SECONDS=240 search_tasks rmsnorm_residual) &
    wait
    keep_runs ;;
  tenth)  # stability alone on GPU 1; GPU tests of the example candidates on GPU 0
    (export CUDA_VISIBLE_DEVICES=1; stability) &
    (gpu_tests 200 tests/examples tests/evaluators/test_timing_gpu.py) &
    wait ;;
  eleventh)  # stability alone on GPU 1 (GPU tests on GPU 0); then throughput on GPU 0 (2 rounds, then 1)
    # while GPU 1 repeats the tiny kernel with 2 and with 4 input sets, both under that load
    (export CUDA_VISIBLE_DEVICES=1; stability) &
    (gpu_tests 150 tests/evaluators/test_timing_gpu.py tests/evaluators/test_pipeline.py \
       tests/adversarial/test_gpu_cheats.py) &
    wait
    (export CUDA_VISIBLE_DEVICES=0
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput_x2" --workers 12 --variants 12 \
       --rounds 2 >"$OUT/throughput_x2.log" 2>&1
     echo "throughput x2 rc=$?" >>"$OUT/summary.txt"; pack
     throughput_gpu0) &
    (export CUDA_VISIBLE_DEVICES=1
     for sets in 2 4 2 4; do
       timeout 120 python3 bench/stability.py --out "$OUT/tiny_sets${sets}_$RANDOM" --kernels tiny \
         --timing graph_input_sets=$sets >>"$OUT/tiny_sets.log" 2>&1
       echo "tiny sets=$sets rc=$?" >>"$OUT/summary.txt"
     done; pack) &
    wait ;;
  twelfth)  # fourth session. GPU 1: what torch.compile generates for the lagging 4096-token cases (Inductor's
    # output code and the Triton IR of every kernel, ours included), with launch variants of the constexpr
    # seeds timed against it; GPU 0: throughput with 16 workers (after the correctness memory fix), 2 rounds,
    # then again with a 70 ms sampling cap per case
    (export CUDA_VISIBLE_DEVICES=0
     timeout 230 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 --variants 12 \
       --rounds 2 >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput16_cap70" --workers 16 --variants 12 \
       --rounds 2 --set timing.time_cap_s=0.07 >"$OUT/throughput16_cap70.log" 2>&1
     echo "throughput16 cap70 rc=$?" >>"$OUT/summary.txt"; pack) &
    (export CUDA_VISIBLE_DEVICES=1 TRITON_CACHE_DIR=/tmp/probe/triton TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor
     P=/tmp/probe/variants; mkdir -p "$P"
     R=examples/tasks/rmsnorm_residual; RS=$R/candidates/rmsnorm_residual_constexpr_hidden_triton.py
     S=examples/tasks/silu_and_mul; SS=$S/candidates/silu_and_mul_constexpr_d_triton.py
     for w in 4 16; do sed "s/^NARROW_ROW_WARPS = 8/NARROW_ROW_WARPS = $w/" "$RS" >"$P/rms_narrow_w$w.py"; done
     for w in 4 8 32; do sed "s/^WIDE_ROW_WARPS = 16/WIDE_ROW_WARPS = $w/" "$RS" >"$P/rms_wide_w$w.py"; done
     sed 's/tl.load(weight_ptr + cols)/tl.load(weight_ptr + cols, eviction_policy="evict_last")/' "$RS" \
       >"$P/rms_weight_evict_last.py"
     for bw in 1024:4 1024:2 2048:4 4096:8 4096:4; do
       sed -e "s/^LARGE_BLOCK = 2048/LARGE_BLOCK = ${bw%:*}/" -e "s/^LARGE_WARPS = 8/LARGE_WARPS = ${bw#*:}/" \
         "$SS" >"$P/silu_large_${bw%:*}_w${bw#*:}.py"
     done
     timeout 200 python3 bench/vs_compile.py --out "$OUT/probe_rms" --compile-only \
       --cases t4096_h4096_bf16,t4096_h7168_bf16,t256_h4096_bf16 "$R=$RS" \
       $(for v in "$P"/rms_*.py; do printf '%s ' "$R=$v"; done) >"$OUT/probe_rms.log" 2>&1
     echo "probe rms rc=$?" >>"$OUT/summary.txt"; pack
     timeout 150 python3 bench/vs_compile.py --out "$OUT/probe_silu" --compile-only \
       --cases t4096_d14336_bf16,t1024_d18432_bf16,t4096_d2048_bf16 "$S=$SS" \
       $(for v in "$P"/silu_*.py; do printf '%s ' "$S=$v"; done) >"$OUT/probe_silu.log" 2>&1
     echo "probe silu rc=$?" >>"$OUT/summary.txt"
     (cd /tmp/probe && find inductor -name "*.py" | grep -v __init__ >files.txt
      find triton \( -name "*.ttgir" -o -name "*.ptx" -o -name "*.json" \) >>files.txt
      tar -czf "$OUT/probe_code.tgz" -T files.txt variants) 2>>"$OUT/summary.txt"
     pack) &
    wait ;;
  thirteenth)  # GPU 1: the two-pass variant (compile's looped config) on the 4096-token rmsnorm cases with
    # block/warp choices, and which config compile's autotuner kept; then stability. GPU 0: throughput with
    # 16 workers (sliced comparison, wall samples sized from the graph medians), then with 12
    (export CUDA_VISIBLE_DEVICES=0
     for w in 16 12; do
       timeout 200 python3 bench/throughput.py --out "$OUT/throughput$w" --workers $w --variants 12 \
         --rounds 2 >"$OUT/throughput$w.log" 2>&1
       echo "throughput$w rc=$?" >>"$OUT/summary.txt"; pack
     done) &
    (export CUDA_VISIBLE_DEVICES=1 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor
     P=/tmp/probe/variants; mkdir -p "$P"
     R=examples/tasks/rmsnorm_residual; V=bench/variants/rmsnorm_residual/two_pass_evict.py
     for bw in 2048:8 1024:16 4096:16 1024:8; do
       sed -e "s/^TWO_PASS_BLOCK = 2048/TWO_PASS_BLOCK = ${bw%:*}/" \
         -e "s/^TWO_PASS_WARPS = 16/TWO_PASS_WARPS = ${bw#*:}/" "$V" >"$P/two_pass_${bw%:*}_w${bw#*:}.py"
     done
     timeout 200 python3 bench/vs_compile.py --out "$OUT/probe_rms" --compile-only \
       --cases t4096_h4096_bf16,t4096_h7168_bf16,t4096_h4096_fp32 \
       "$R=$R/candidates/rmsnorm_residual_constexpr_hidden_triton.py" "$R=$V" \
       $(for v in "$P"/two_pass_*.py; do printf '%s ' "$R=$v"; done) >"$OUT/probe_rms.log" 2>&1
     echo "probe rms rc=$?" >>"$OUT/summary.txt"
     find /tmp/probe/inductor -name "*.best_config" -exec sh -c 'echo "== $1"; cat "$1"; echo' _ {} \; \
       >"$OUT/best_configs.txt" 2>&1
     pack
     stability) &
    wait ;;
  fourteenth)  # one search per GPU, each alone on its GPU (the rmsnorm seed with the two-pass kernel)
    (WORKERS=12 GPU=0 SEARCH_SECONDS=210 search_tasks silu_and_mul) &
    (WORKERS=12 GPU=1 SEARCH_SECONDS=210 search_tasks rmsnorm_residual) &
    wait
    keep_runs ;;
  fifteenth)  # (never run: sixteenth took its place) stability alone on GPU 1, then 16-worker throughput on GPU 0
    (export CUDA_VISIBLE_DEVICES=1; stability)
    (export CUDA_VISIBLE_DEVICES=0
     timeout 220 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 --variants 12 \
       --rounds 2 >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack) ;;
  sixteenth)  # stability alone on GPU 1 while GPU 0 times silu's search best (fourteenth, copied into
    # probe-in/, not committed) and the Inductor-shaped flat variant against compile on every silu case;
    # then throughput with 16 workers on GPU 0
    (export CUDA_VISIBLE_DEVICES=1; stability) &
    (export CUDA_VISIBLE_DEVICES=0
     S=examples/tasks/silu_and_mul
     timeout 200 python3 bench/vs_compile.py --out "$OUT/probe_silu" --compile-only \
       "$S=probe-in/silu_best_fourteenth.py" "$S=bench/variants/silu_and_mul/flat_even_exp.py" \
       >"$OUT/probe_silu.log" 2>&1
     echo "probe silu rc=$?" >>"$OUT/summary.txt"; pack) &
    wait
    (export CUDA_VISIBLE_DEVICES=0
     timeout 220 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 --variants 12 \
       --rounds 2 >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack) ;;
  seventeenth)  # GPU 0: throughput with 16 workers after the counting fix; GPU 1 meanwhile: the tiny kernel's
    # stability with 4 input sets under that load (a second run of eleventh's suggestive setting; since then
    # timing.small_input_sets gives inputs under 1 MiB 4 sets by default, and this override no longer applies)
    (export CUDA_VISIBLE_DEVICES=0
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput16" --workers 16 --variants 12 \
       --rounds 2 >"$OUT/throughput16.log" 2>&1
     echo "throughput16 rc=$?" >>"$OUT/summary.txt"; pack) &
    (export CUDA_VISIBLE_DEVICES=1
     sleep 40  # the pool's warm-up
     timeout 150 python3 bench/stability.py --out "$OUT/tiny_sets4" --kernels tiny \
       --timing graph_input_sets=4 >"$OUT/tiny_sets.log" 2>&1
     echo "tiny sets=4 rc=$?" >>"$OUT/summary.txt"; pack) &
    wait ;;
  eighteenth)  # prepared for the next session (not run yet): stability alone on GPU 1 with the small-input
    # default (nothing on GPU 0 meanwhile), then throughput with 12 workers and the lock timeline on GPU 0
    (export CUDA_VISIBLE_DEVICES=1; stability)
    (export CUDA_VISIBLE_DEVICES=0
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput12" --workers 12 --variants 12 \
       --rounds 2 >"$OUT/throughput12.log" 2>&1
     echo "throughput12 rc=$?" >>"$OUT/summary.txt"; pack) ;;
  nineteenth)  # prepared for the next session (not run yet): 16 workers with the lock timeline, 2 rounds, then
    # 4 rounds (a search keeps its pool full for minutes: the pool's filling and draining weigh less), GPU 0
    (export CUDA_VISIBLE_DEVICES=0
     for rounds in 2 4; do
       timeout 280 python3 bench/throughput.py --out "$OUT/throughput16_r$rounds" --workers 16 --variants 12 \
         --rounds $rounds >"$OUT/throughput16_r$rounds.log" 2>&1
       echo "throughput16 rounds=$rounds rc=$?" >>"$OUT/summary.txt"; pack
     done) ;;
  twentieth)  # prepared for the next session (not run yet): 16 workers with a 10 ms secondary look, GPU 0
    (export CUDA_VISIBLE_DEVICES=0
     timeout 200 python3 bench/throughput.py --out "$OUT/throughput16_sec10" --workers 16 --variants 12 \
       --rounds 2 --set timing.secondary_time_cap_s=0.01 >"$OUT/throughput16_sec10.log" 2>&1
     echo "throughput16 sec10 rc=$?" >>"$OUT/summary.txt"; pack) ;;
  twentyfirst)  # the lock's waits in the log: 12 workers as in eighteenth, then 12 and 16 workers with a 10 ms
    # secondary look, GPU 0
    (export CUDA_VISIBLE_DEVICES=0
     for run in "12 default" "12 sec10" "16 sec10"; do
       set -- $run
       extra=(); [ "$2" = sec10 ] && extra=(--set timing.secondary_time_cap_s=0.01)
       timeout 175 python3 bench/throughput.py --out "$OUT/throughput$1_$2" --workers "$1" --variants 12 \
         --rounds 2 "${extra[@]}" >"$OUT/throughput$1_$2.log" 2>&1
       echo "throughput $run rc=$?" >>"$OUT/summary.txt"; pack
     done) ;;
  twentysecond)  # the 10 ms secondary look as the default: 12, 8 and 12 workers again, GPU 0, with the GPU's
    # utilisation sampled every second (is the GPU itself busy when the lock is not?)
    (export CUDA_VISIBLE_DEVICES=0
     for workers in 12 8 12; do
       name=throughput${workers}_$(date +%s)
       nvidia-smi dmon -i 0 -s u -d 1 >"$OUT/$name.dmon" 2>&1 & dmon=$!
       timeout 175 python3 bench/throughput.py --out "$OUT/$name" --workers "$workers" --variants 12 \
         --rounds 2 >"$OUT/$name.log" 2>&1
       echo "$name rc=$?" >>"$OUT/summary.txt"; kill $dmon; pack
     done) ;;
  twentythird)  # sixth session, one H200: is silu's 0.995-0.999x a kernel or a measurement? Three fresh
    # processes, the four bandwidth-bound cases: the A/A yardstick, the Inductor-shaped flat variant and the
    # constexpr seed against torch.compile; then Inductor's autotuned launch per kernel (.best_config) and its
    # generated code. (As run, the yardstick was a candidate file compiling a copy of the reference; --twin
    # replaced it.)
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul
     for rep in 1 2 3; do
       timeout 170 python3 bench/vs_compile.py --out "$OUT/twin_$rep" --compile-only --twin \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         "$S=bench/variants/silu_and_mul/flat_even_exp.py" "$S=$S/candidates/silu_and_mul_constexpr_d_triton.py" \
         >"$OUT/twin_$rep.log" 2>&1
       echo "twin $rep rc=$?" >>"$OUT/summary.txt"; pack
     done
     mkdir -p "$OUT/inductor"
     find /tmp/probe/inductor \( -name "*.py" -o -name "*.best_config" \) -exec cp {} "$OUT/inductor/" \;
     ls -laR /tmp/probe/inductor >"$OUT/inductor/listing.txt" 2>&1; pack) ;;
  twentyfourth)  # one H200: does alternating over more buffers per implementation tighten the A/A yardstick
    # on silu's bandwidth-bound cases? Three fresh processes with the default 2 sets, three with 8; the
    # Inductor-shaped flat variant against compile alongside
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul
     for sets in 2 8 2 8 2 8; do
       n=$(ls -d "$OUT"/sets${sets}_* 2>/dev/null | wc -l)
       timeout 120 python3 bench/vs_compile.py --out "$OUT/sets${sets}_$n" --compile-only --twin \
         --set timing.graph_input_sets=$sets \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         "$S=bench/variants/silu_and_mul/flat_even_exp.py" >"$OUT/sets${sets}_$n.log" 2>&1
       echo "sets=$sets run $n rc=$?" >>"$OUT/summary.txt"; pack
     done) ;;
  twentyfifth)  # sixth session, 2 x H200: the offline search on every example task, two tasks per GPU (6
    # workers each, 200 s), each best against eager and compile with the A/A yardstick; then the parity-bound
    # task of each GPU (silu_and_mul, rmsnorm_residual) twice more in fresh processes on its large cases
    (WORKERS=6 GPU=0 SEARCH_SECONDS=200 VS_FLAGS=--twin VS_TIMEOUT=150 search_tasks silu_and_mul decode_metadata
     GPU=0 again_vs_compile silu_and_mul t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 2) &
    (WORKERS=6 GPU=1 SEARCH_SECONDS=200 VS_FLAGS=--twin VS_TIMEOUT=150 search_tasks rmsnorm_residual moe_grouped_topk
     GPU=1 again_vs_compile rmsnorm_residual t4096_h4096_bf16,t4096_h7168_bf16,t4096_h4096_fp32 2) &
    wait
    keep_runs ;;
  twentysixth)  # one H200: silu's search best (twentyfifth, copied into probe-in/, not committed) sat 0.1-0.3 %
    # under compile on the four bandwidth-bound cases in three processes, the A/A at 1.000. Is it the launch?
    # The constexpr seed and the Inductor-shaped flat variant with compile's own pick for large inputs
    # (XBLOCK 1024, 4 warps: its .best_config in twentythird) against the best and the A/A, three processes
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul P=/tmp/probe/variants; mkdir -p "$P"
     for f in "$S/candidates/silu_and_mul_constexpr_d_triton.py" bench/variants/silu_and_mul/flat_even_exp.py; do
       sed -e "s/^LARGE_BLOCK = 2048/LARGE_BLOCK = 1024/" -e "s/^LARGE_WARPS = 8/LARGE_WARPS = 4/" "$f" \
         >"$P/$(basename "$f" .py)_large1024_w4.py"
     done
     for rep in 1 2 3; do
       timeout 150 python3 bench/vs_compile.py --out "$OUT/launch_$rep" --compile-only --twin \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         "$S=probe-in/silu_best_25.py" $(for v in "$P"/*.py; do printf '%s ' "$S=$v"; done) \
         >"$OUT/launch_$rep.log" 2>&1
       echo "launch $rep rc=$?" >>"$OUT/summary.txt"; pack
     done) ;;
  twentyseventh)  # one H200: compile's 1024 x 4-warp pick did not close the 0.1-0.3 % (twentysixth). Its own
    # kernel made standalone (bench/probes/: libdevice does not run on the interpreter) and one
    # change at a time from it (3 stages; tl.exp), and the constexpr seed with 1024 x 4 warps x 1 stage,
    # against compile and the A/A, three processes
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul P=/tmp/probe/variants; mkdir -p "$P"; I=bench/probes/silu_inductor_static.py
     cp "$I" "$P/static.py"
     sed "s/^NUM_STAGES = 1/NUM_STAGES = 3/" "$I" >"$P/static_stages3.py"
     sed "s/^EXP_KIND = 0/EXP_KIND = 1/" "$I" >"$P/static_tl_exp.py"
     sed -e "s/^LARGE_BLOCK = 2048/LARGE_BLOCK = 1024/" -e "s/^LARGE_WARPS = 8/LARGE_WARPS = 4/" \
       -e "s/num_warps=num_warps,/num_warps=num_warps, num_stages=1,/" \
       "$S/candidates/silu_and_mul_constexpr_d_triton.py" >"$P/constexpr_1024_w4_s1.py"
     grep -c "num_stages=1" "$P/constexpr_1024_w4_s1.py" >>"$OUT/summary.txt"
     for rep in 1 2 3; do
       timeout 150 python3 bench/vs_compile.py --out "$OUT/static_$rep" --compile-only --twin \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         $(for v in "$P"/*.py; do printf '%s ' "$S=$v"; done) >"$OUT/static_$rep.log" 2>&1
       echo "static $rep rc=$?" >>"$OUT/summary.txt"; pack
     done
     mkdir -p "$OUT/inductor"
     find /tmp/probe/inductor -name "*.best_config" -exec cp {} "$OUT/inductor/" \; ; pack) ;;
  twentyeighth)  # one H200: compile's kernel made standalone reached 1.000x, the same with tl.exp 0.998x
    # (twentyseventh). Which exp: Inductor's libdevice expf, tl.exp, a range-reduced tl.exp2 (plain tl, so it
    # runs on the interpreter); and the constexpr seed with libdevice's and with the range-reduced exp instead of
    # tl.sigmoid (bench/probes/silu_exp_variants.py writes them), three processes
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul P=/tmp/probe/variants; mkdir -p "$P"; I=bench/probes/silu_inductor_static.py
     for kind in 0 1 2; do sed "s/^EXP_KIND = 0/EXP_KIND = $kind/" "$I" >"$P/static_exp$kind.py"; done
     python3 bench/probes/silu_exp_variants.py "$P" >/dev/null
     for rep in 1 2 3; do
       timeout 150 python3 bench/vs_compile.py --out "$OUT/exp_$rep" --compile-only --twin \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         $(for v in "$P"/*.py; do printf '%s ' "$S=$v"; done) >"$OUT/exp_$rep.log" 2>&1
       echo "exp $rep rc=$?" >>"$OUT/summary.txt"; pack
     done
     mkdir -p "$OUT/inductor"
     find /tmp/probe/inductor -name "*.best_config" -exec cp {} "$OUT/inductor/" \; ; pack) ;;
  twentyninth)  # one H200: twentyeighth put compile's own kernel, standalone, at 0.997x where twentyseventh had
    # it at 1.001x: the call, not the code, moves it. So in the same processes: silu's search best (twentyfifth,
    # probe-in/) beside compile's kernel standalone and the A/A, three processes; then rmsnorm's best
    # (twentyfifth, probe-in/) on every case, all pairings, wall regime included, alone on the GPU
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul R=examples/tasks/rmsnorm_residual
     for rep in 1 2 3; do
       timeout 120 python3 bench/vs_compile.py --out "$OUT/same_$rep" --compile-only --twin \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         "$S=probe-in/silu_best_25.py" "$S=bench/probes/silu_inductor_static.py" >"$OUT/same_$rep.log" 2>&1
       echo "same $rep rc=$?" >>"$OUT/summary.txt"; pack
     done
     timeout 150 python3 bench/vs_compile.py --out "$OUT/rms_all" --twin "$R=probe-in/rmsnorm_best_25.py" \
       >"$OUT/rms_all.log" 2>&1
     echo "rms all rc=$?" >>"$OUT/summary.txt"
     mkdir -p "$OUT/inductor"
     find /tmp/probe/inductor -name "*.best_config" -exec cp {} "$OUT/inductor/" \; ; pack) ;;
  thirtieth)  # one H200, the session's last device time: three processes per call cannot separate 0.2 %
    # effects (twentyseventh and twentyeighth disagreed on the exp). As many fresh processes as fit in ~7 min,
    # graph regime only, on silu's four bandwidth-bound cases: compile's kernel standalone with libdevice's
    # expf and with tl.exp, the constexpr seed with libdevice's expf, silu's search best (twentyfifth,
    # probe-in/, not committed), and the A/A
    (export CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/probe/inductor TRITON_CACHE_DIR=/tmp/probe/triton
     S=examples/tasks/silu_and_mul P=/tmp/probe/exp; mkdir -p "$P"; I=bench/probes/silu_inductor_static.py
     for kind in 0 1; do sed "s/^EXP_KIND = 0/EXP_KIND = $kind/" "$I" >"$P/static_exp$kind.py"; done
     python3 bench/probes/silu_exp_variants.py /tmp/probe/gen >/dev/null
     cp /tmp/probe/gen/silu_constexpr_libdevice_exp.py probe-in/silu_best_25.py "$P/"
     rep=0
     while [ $SECONDS -lt 400 ]; do
       rep=$((rep + 1))
       timeout 90 python3 bench/vs_compile.py --out "$OUT/many_$rep" --compile-only --twin \
         --set 'timing.regimes=["graph"]' \
         --cases t4096_d14336_bf16,t4096_d2048_bf16,t1024_d18432_bf16,t512_d14336_fp32 \
         $(for v in "$P"/*.py; do printf '%s ' "$S=$v"; done) >"$OUT/many_$rep.log" 2>&1
       echo "many $rep rc=$? at ${SECONDS}s" >>"$OUT/summary.txt"; pack
     done
     mkdir -p "$OUT/inductor"
     find /tmp/probe/inductor -name "*.best_config" -exec cp {} "$OUT/inductor/" \; ; pack) ;;
  thirtyfirst)  # one H200: the silu search from the seed that picks its exp per input (libdevice's expf for
    # large 16-bit inputs, tl.exp for large fp32) and drops the mask when the grid divides the output (alone on
    # the GPU, 12 workers, 200 s); then its best against compile once on every case in both regimes, and the
    # best, the seed itself and compile's own kernel standalone against compile with the A/A, graph regime, on
    # the four bandwidth-bound cases in as many fresh processes as fit. (The audit hook flagged the seed's
    # libdevice import, so the search ran without it: thirtysecond runs it again after the fix.)
    (WORKERS=12 GPU=0 SEARCH_SECONDS=200 VS_FLAGS=--twin VS_TIMEOUT=120 search_tasks silu_and_mul
     silu_many 520)
    keep_runs ;;
  thirtysecond)  # thirtyfirst again once the audit hook let the seed's libdevice import through, with the
    # GPU tests of the adversarial suite, the pipeline and the faults between the search and the
    # fresh-process comparisons
    (WORKERS=12 GPU=0 SEARCH_SECONDS=200 VS_FLAGS=--twin VS_TIMEOUT=120 search_tasks silu_and_mul
     gpu_tests 170 tests/adversarial tests/evaluators/test_pipeline.py tests/evaluators/test_faults.py
     silu_many 530)
    keep_runs ;;
  thirtythird)  # one H200: thirtysecond's silu best (carried uncommitted as probe-in/silu_best_32.py)
    # against compile once more on every case in both regimes; then the fresh-process comparisons with the
    # seed timed first: on the large cases the best runs the seed's code, so any order effect shows
    (export CUDA_VISIBLE_DEVICES=0
     mkdir -p /tmp/runs/silu_and_mul && cp probe-in/silu_best_32.py /tmp/runs/silu_and_mul/best.py
     timeout 120 python3 bench/vs_compile.py --out "$OUT/vs_compile_best" --twin \
       "examples/tasks/silu_and_mul=/tmp/runs/silu_and_mul/best.py" >"$OUT/vs_compile_best.log" 2>&1
     echo "vs_compile best rc=$?" >>"$OUT/summary.txt"; pack
     silu_many 420 seed-first) ;;
  *) echo "usage: bench/h200.sh smoke|stability|first|second|...|thirtythird|search|scaling (see the list above)" >&2
     exit 2 ;;
esac
pack
for md in "$W"/*/*.md; do [ -f "$md" ] && cp "$md" "$FINAL/"; done
cat "$W/summary.txt" 2>/dev/null
ls -la "$FINAL"
