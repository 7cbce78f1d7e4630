# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## throughput: candidates fully evaluated (static checks, compile, correctness, timing) per GPU-minute through
##   one real WorkerPool: the example tasks' hand-written candidates plus VARIANTS launch-tuning variants
##   of each, submitted ROUNDS times at once. Target: >= 60. throughput.md also shows where the time goes
##   (seconds per stage, the GPU lock's busy share and idle gaps). One run takes about 2.5 minutes.
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## WORKERS=12  warm workers in the pool
## VARIANTS=12  tuning variants per hand-written candidate
## ROUNDS=2  times the whole list is submitted (later rounds find Triton's cache warm, as a search does)
## SET=  EvalConfig overrides, space-separated KEY=VALUE (e.g. "timing.secondary_time_cap_s=0.02")
## REPEAT=1  runs back to back (the same settings scatter by ~3 per minute from run to run)
## DMON=0  1: sample the GPU's SM activity every second with nvidia-smi dmon alongside each run
## BACKEND=auto  evaluator backend (triton-interpret runs the plumbing on a CPU: nothing is timed)
## TASKS=all  example tasks (names or task directories, comma-separated)
## SETTLE=10  seconds the warm pool settles before the clock starts
## LIMIT=280  seconds per run

overrides=()
read -r -a items <<<"$SET"
for item in "${items[@]}"; do overrides+=(--set "$item"); done
tasks_dir=$(task_folder "$TASKS") || exit 2
for run in $(seq 1 "$REPEAT"); do
  if [ "$DMON" = 1 ] && [ "$DRY_RUN" != 1 ]; then
    nvidia-smi dmon -i "$GPU" -s u -d 1 >"$BENCH_OUT/dmon_$run.txt" 2>&1 &
    dmon=$!
  fi
  step "throughput_$run" "$LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/throughput.py \
    --out "$BENCH_OUT/throughput_$run" --tasks "$tasks_dir" --workers "$WORKERS" --variants "$VARIANTS" \
    --rounds "$ROUNDS" --backend "$BACKEND" --settle "$SETTLE" "${overrides[@]}"
  [ -n "${dmon:-}" ] && kill "$dmon" 2>/dev/null
  dmon=
done
