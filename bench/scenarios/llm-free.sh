# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## llm-free: kernels for real engine code with no LLM and no hand-written seed. Seven functions extracted
##   fresh from their pip releases (bench/fresh_tasks.py, serving shapes in bench/specs/), seven searches
##   from nothing at once (no candidates/, no --seed, no --llm), then eager vs torch.compile vs each best in
##   both regimes (bench/eager_compile_best.py) and the verdicts (bench/llm_free_acceptance.py). A host
##   without the package registry takes the releases from SOURCES (bench/fresh_tasks.py --pack-sources).
## SEARCH_S=300  seconds per search
## WORKERS=2  warm evaluation workers per search
## ONLY=  a comma-separated subset of the seven (bench/fresh_tasks.py names them)
## SOURCES=.devsite/sources.tar.xz  the releases' sources, packed
## LIMIT=600  seconds for the whole run

only=()
[ -n "$ONLY" ] && only=(--only "$ONLY")
step llm_free "$LIMIT" "$PYTHON" bench/llm_free_acceptance.py --out "$BENCH_OUT/llm_free" \
  --work "$BENCH_OUT/llm_free/work" --search-seconds "$SEARCH_S" --workers "$WORKERS" --sources "$SOURCES" \
  --deadline $((LIMIT - 30)) "${only[@]}"
