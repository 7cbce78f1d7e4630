# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## search: `kernelbot evolve` on each task for SEARCH_S seconds (no LLM unless EXTRA names one: the
##   hand-written candidates and the Inductor seed, launch tuning, bucket crossover), every search at once,
##   spread round-robin over GPUS; then each run's best.py against eager and torch.compile with the A/A
##   yardstick (bench/vs_compile.py --twin), one process per GPU. Run stores (every verdict with its
##   reason) stay under runs/. Note the seeds: the figures measure how far the search takes them.
## TASKS=all  tasks to search (names or task directories, comma-separated)
## GPUS=0  GPUs to spread the searches over, comma-separated (each search uses one)
## SEARCH_S=200  seconds per search
## WORKERS=6  warm evaluation workers per search (12 when a search has its GPU alone)
## ITERATIONS=1000  mutation attempts at most per search (the time limit normally stops it first)
## EXTRA=  more `kernelbot evolve` arguments, space-separated (e.g. "--llm MODEL@URL --no-inductor-seed")
## COMPARE=1  0: skip the torch.compile comparison
## COMPARE_LIMIT=240  seconds per comparison process

tasks=$(task_dirs "$TASKS") || exit 2
IFS=, read -r -a gpus <<<"$GPUS"
read -r -a extra <<<"$EXTRA"
[ "$DRY_RUN" = 1 ] || mkdir -p "$BENCH_OUT/runs"
index=0
declare -A pairs_on=()
for task in $tasks; do
  name=$(basename "$task")
  gpu=${gpus[$((index % ${#gpus[@]}))]}
  index=$((index + 1))
  step "evolve_$name" $((SEARCH_S + 90)) env CUDA_VISIBLE_DEVICES="$gpu" "$PYTHON" -m kernelbot.cli evolve \
    "$task" --iterations "$ITERATIONS" --time-limit "${SEARCH_S}s" --out "$BENCH_OUT/runs/$name" \
    --workers-per-device "$WORKERS" --json "${extra[@]}" &
  pairs_on[$gpu]+=" $task=$BENCH_OUT/runs/$name/best.py"
done
wait
[ "$COMPARE" = 1 ] || return 0
for gpu in "${gpus[@]}"; do
  pairs=()
  for pair in ${pairs_on[$gpu]:-}; do
    [ "$DRY_RUN" = 1 ] || [ -f "${pair#*=}" ] && pairs+=("$pair")
  done
  [ ${#pairs[@]} -gt 0 ] || continue
  step "vs_compile_gpu$gpu" "$COMPARE_LIMIT" env CUDA_VISIBLE_DEVICES="$gpu" "$PYTHON" bench/vs_compile.py \
    --out "$BENCH_OUT/vs_compile_gpu$gpu" --twin "${pairs[@]}" &
done
wait
