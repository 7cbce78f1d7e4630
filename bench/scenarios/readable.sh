# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## readable: the module a pull request would carry, for fresh engine functions (docs/fusion.md, "Readable
##   output"). FRESH (bench/fresh_tasks.py) extracted from their releases and searched from nothing at once
##   (no candidates/, no --seed, no LLM; torch.compile's code seeded beside the fusion generator, each at
##   its engine's line length, as `kernelbot target` does), each winner confirmed against eager and
##   torch.compile in PROCESSES to MAX_PROCESSES fresh processes a column (the claims a bundle prints);
##   then the module `kernelbot integrate` writes for each winner checked against the readable-output
##   rules and the line budget (bench/readable_modules.py) and timed against the raw winner in one
##   process, both regimes, both orders (bench/readable_parity.py; parity is [0.99, 1.01], read in the
##   graph regime).
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## FRESH=sglang_rmsnorm_residual  fresh functions (comma-separated; two share a 600 s call: one confirmation
##   takes about two minutes)
## SEARCH_S=120  seconds per search (at most LIMIT - 370: the winners are confirmed after it)
## PROCESSES=3  fresh processes per confirmed column, at least
## MAX_PROCESSES=3  at most (kernelbot target's rule: 10): from PROCESSES on, a column adds processes only
##   while one of its cases is undecided; each takes about 10 s a winner on the H100
## SOURCES=.devsite/sources.tar.xz  the releases' sources, packed (bench/fresh_tasks.py --pack-sources)
## LIMIT=560  seconds for the whole run

# The modules are laid out by ruff as the engines' formatters lay them out (`python -m ruff`): where the
# image lacks it, it is installed beside the run from PIP_FIND_LINKS (ruff==0.15.4, the example profile's),
# before the search rather than after it.
if [ "$DRY_RUN" != 1 ] && ! "$PYTHON" -m ruff --version >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-deps --target "$BENCH_OUT/ruff-site" ruff==0.15.4 ||
    fail "ruff is not importable by $PYTHON and cannot be installed: put its wheel in a PIP_FIND_LINKS folder"
  export PYTHONPATH="$BENCH_OUT/ruff-site:$PYTHONPATH"
fi

# The last confirmation may start until LIMIT - 250 s; a search that ends later (its own seconds and about
# 120 s of unpacking, extraction and start) leaves every winner unconfirmed.
(( SEARCH_S + 120 <= LIMIT - 250 )) ||
  fail "SEARCH_S=$SEARCH_S leaves no time in LIMIT=$LIMIT to confirm a winner (at most $((LIMIT - 370)))"
step claim_coverage $((LIMIT - 180)) env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/claim_coverage.py \
  --out "$BENCH_OUT/claims" --fresh "$FRESH" --inductor-seed --search-seconds "$SEARCH_S" --remeasure 0 \
  --min-processes "$PROCESSES" --max-processes "$MAX_PROCESSES" --sources "$SOURCES" --deadline $((LIMIT - 250))
# The engines' own kernels (the line budget) are read from the releases claim_coverage unpacked.
step readable_modules 60 env KERNELBOT_CACHE="${KERNELBOT_CACHE:-$BENCH_OUT/claims/work/cache}" "$PYTHON" \
  bench/readable_modules.py "$BENCH_OUT/claims/work" "$BENCH_OUT/modules"
step readable_parity 110 env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/readable_parity.py \
  --modules "$BENCH_OUT/modules" --out "$BENCH_OUT/parity"
