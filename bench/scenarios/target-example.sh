# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## target-example: the README's main job on a GPU, `kernelbot target example` for each of FUNCTIONS at once
##   (examples/minirepo: extract, evolve, integrate, verify with minirepo's tests and benchmarks/throughput.py
##   alternating base and change, then the PR bundle). Each run directory (pr/evidence.json, pr/body.md,
##   verify.json) stays under targets/. The example profile's formatter is ruff==0.15.4: without the package
##   registry, point PIP_FIND_LINKS at a folder holding its wheel (and set PIP_NO_INDEX=1).
## FUNCTIONS=minisglang.layers.activation:SiluAndMul.forward_native,minisglang.layers.layernorm:RMSNorm.forward_native
## ITERATIONS=12  mutation attempts per search
## WORKERS=2  warm evaluation workers per search
## BENCHMARK_RUNS=5  end-to-end benchmark runs per side
## LIMIT=420  seconds per target run

IFS=, read -r -a functions <<<"$FUNCTIONS"
for function in "${functions[@]}"; do
  name=$(echo "${function##*:}" | tr '.' '_')
  step "target_$name" "$LIMIT" "$PYTHON" -m kernelbot.cli target example --function "$function" \
    --out "$BENCH_OUT/targets/$name" --iterations "$ITERATIONS" --benchmark-runs "$BENCHMARK_RUNS" \
    --backend triton-cuda --workers-per-device "$WORKERS" &
done
wait
