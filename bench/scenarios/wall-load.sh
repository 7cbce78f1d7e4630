# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## wall-load: the wall regime under a search's load. A real search (`kernelbot evolve TASK
##   --workers-per-device WORKERS`, no LLM) keeps the GPU lock busy while CANDIDATE is judged REEVALS times,
##   each in a fresh process, all at once; then the search stops and its best is read. wall_load.md gives the best's
##   per-case wall CI half-widths (target <= 3 %) and the spread of the re-evaluations' wall speedups (target
##   <= 2 %). About SEARCH_S + 60 s on an H200 (the re-evaluations run inside the search).
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## TASK=decode_metadata  a wall-regime task (example name or task directory)
## CANDIDATE=examples/tasks/decode_metadata/candidates/decode_metadata_triton.py  the candidate re-evaluated
## WORKERS=12  the search's --workers-per-device
## SEARCH_S=120  seconds the search runs at least (longer if the re-evaluations need it)
## REEVALS=5  fresh-process re-evaluations of CANDIDATE
## SEQUENTIAL=0  1: one re-evaluation after another (minutes longer: each waits for the lock among WORKERS)
## SET=  EvalConfig overrides for the re-evaluations, space-separated KEY=VALUE (e.g. timing.wall_ci_target=0.01)
## LIMIT=300  seconds for the whole run

task=$(task_dirs "$TASK") || exit 2
[ -f "$CANDIDATE" ] || { echo "error: CANDIDATE: no candidate file $CANDIDATE" >&2; exit 2; }
sets=()
read -r -a items <<<"$SET"
for item in "${items[@]}"; do sets+=(--set "$item"); done
[ "$SEQUENTIAL" = 1 ] && sets+=(--sequential)
step wall_load "$LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/wall_load.py --out "$BENCH_OUT/wall_load" \
  --task "$task" --candidate "$CANDIDATE" --workers "$WORKERS" --search-s "$SEARCH_S" --reevals "$REEVALS" \
  "${sets[@]}"
