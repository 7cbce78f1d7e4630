# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## vs-compile: candidates against eager PyTorch and torch.compile(dynamic=False), per case and regime, each
##   pair timed side by side in one process by the evaluator's own timing stage, with the A/A yardstick
##   (compile against itself: how finely "best vs compile" reads). REPEAT or UNTIL > 0 runs it again in
##   fresh processes and pools them (bench/vs_compile_pool.py): a bandwidth-bound case moves a few tenths
##   of a percent from one process to the next, so claims at that level need several.
## PAIRS=  TASK=CANDIDATE ..., space-separated; TASK a name or a directory, CANDIDATE may be a glob
##   (e.g. "silu_and_mul=bench/variants/silu_and_mul/*.py"). Default: RUNS, else the hand-written candidates
## RUNS=  a search scenario's runs/ folder: each task's best.py there
## TASKS=all  tasks for RUNS or the default candidates (names or task directories, comma-separated)
## CASES=  only these cases, comma-separated (each task keeps those it has)
## COMPILE_ONLY=0  1: time only torch.compile against the candidate (a sweep of many variants)
## TWIN=1  0: leave out the A/A yardstick
## SET=  EvalConfig overrides, space-separated KEY=VALUE (e.g. 'timing.regimes=["graph"]')
## REPEAT=1  fresh processes, one after the other
## UNTIL=0  seconds: keep starting fresh processes until this far into the scenario (instead of REPEAT)
## POOL_REGIME=graph  the regime bench/vs_compile_pool.py tabulates (graph or wall)
## KEEP_INDUCTOR=0  1: keep Inductor's generated code and autotuning picks (.best_config) under inductor/
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## LIMIT=240  seconds per process

pairs=()
if [ -n "$PAIRS" ]; then
  read -r -a entries <<<"$PAIRS"
  for entry in "${entries[@]}"; do
    [[ $entry == *=* ]] || { echo "error: PAIRS: '$entry' is not TASK=CANDIDATE" >&2; exit 2; }
    task=$(task_dirs "${entry%%=*}") || exit 2
    for candidate in ${entry#*=}; do
      [ -f "$candidate" ] || { echo "error: PAIRS: no candidate file '$candidate'" >&2; exit 2; }
      pairs+=("$task=$candidate")
    done
  done
else
  tasks=$(task_dirs "$TASKS") || exit 2
  for task in $tasks; do
    if [ -n "$RUNS" ]; then
      best=$RUNS/$(basename "$task")/best.py
      [ -f "$best" ] && pairs+=("$task=$best") || echo "note: no $best, $(basename "$task") left out" >&2
    else
      for candidate in "$task"/candidates/*.py; do pairs+=("$task=$candidate"); done
    fi
  done
fi
[ ${#pairs[@]} -gt 0 ] || { echo "error: no candidate to compare (PAIRS, RUNS)" >&2; exit 2; }

extra=()
[ -n "$CASES" ] && extra+=(--cases "$CASES")
[ "$COMPILE_ONLY" = 1 ] && extra+=(--compile-only)
[ "$TWIN" = 1 ] && extra+=(--twin)
read -r -a items <<<"$SET"
for item in "${items[@]}"; do extra+=(--set "$item"); done
inductor=()
if [ "$KEEP_INDUCTOR" = 1 ]; then
  inductor=(TORCHINDUCTOR_CACHE_DIR="$BENCH_OUT/inductor-cache")
fi

runs=0
while if [ "$UNTIL" -gt 0 ]; then [ "$SECONDS" -lt "$UNTIL" ]; else [ "$runs" -lt "$REPEAT" ]; fi; do
  runs=$((runs + 1))
  step "vs_compile_$runs" "$LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "${inductor[@]}" "$PYTHON" \
    bench/vs_compile.py --out "$BENCH_OUT/vs_compile_$runs" "${extra[@]}" "${pairs[@]}"
  [ "$DRY_RUN" = 1 ] && [ "$UNTIL" -gt 0 ] && break  # a dry run shows one process
done
if [ "$runs" -gt 1 ]; then
  step pool 60 "$PYTHON" bench/vs_compile_pool.py --regime "$POOL_REGIME" --out "$BENCH_OUT/pool.md" \
    "$BENCH_OUT"/vs_compile_[0-9]*
fi
if [ "$KEEP_INDUCTOR" = 1 ] && [ "$DRY_RUN" != 1 ]; then
  mkdir -p "$BENCH_OUT/inductor"
  find "$BENCH_OUT/inductor-cache" \( -name '*.best_config' -o -name '*.py' \) ! -name '__init__.py' \
    -exec cp {} "$BENCH_OUT/inductor/" \; 2>/dev/null
  rm -rf "$BENCH_OUT/inductor-cache"
  pack
fi
