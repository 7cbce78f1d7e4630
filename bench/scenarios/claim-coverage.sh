# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## claim-coverage: do the speed claims a bundle prints hold in a fresh process? Fusion-generator winners of
##   FRESH (bench/fresh_tasks.py, extracted from their releases and searched from nothing with
##   --no-inductor-seed, all at once) and of TASKS (task directories; the bundled example's start from their
##   candidates/), each confirmed as the confirm stage of `kernelbot target` does (fresh processes, GPU held,
##   stop rule), then REMEASURE more fresh processes per column; per winner, column and regime, how many
##   re-measured processes reached the printed bound (target >= 95 % per regime). A winner takes 5 (the
##   example's task) to 15 (a serving-size fresh task) minutes on the H200 after the searches, so one call
##   covers one at most (a winner is started only while LIMIT - 200 s have not passed);
##   `bench/claim_coverage.py --merge` makes one table of several calls' results.
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## FRESH=sglang_silu_and_mul  fresh functions (comma-separated, may be empty)
## TASKS=  task directories searched too (comma-separated, may be empty)
## PAIRS=  winners judged as they are, TASK_DIR=KERNEL_FILE (space-separated): a search's best.py kept from
##   an earlier call, so a call spends its minutes on confirmation and re-measurement
## SEARCH_S=75  seconds per search
## WORKERS=2  warm evaluation workers per search
## REMEASURE=10  further fresh processes per column and winner
## MAX_PROCESSES=6  the confirmation's cap on processes per column
## SOURCES=.devsite/sources.tar.xz  the releases' sources, packed (bench/fresh_tasks.py --pack-sources)
## LIMIT=560  seconds for the whole run

step claim_coverage "$LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/claim_coverage.py \
  --out "$BENCH_OUT/claim_coverage" --fresh "$FRESH" --tasks "$TASKS" --search-seconds "$SEARCH_S" \
  --workers "$WORKERS" --remeasure "$REMEASURE" --max-processes "$MAX_PROCESSES" --sources "$SOURCES" \
  --deadline $((LIMIT - 200)) --pairs $PAIRS
