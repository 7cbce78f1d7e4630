# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## acceptance: llm-free, target-example and real-kernels at once on one GPU, in one call of the device
##   (how the 2026-12-01 figures in docs/benchmarks.md were taken). They share the GPU lock, so each search
##   sees fewer evaluations than it would alone.
## SEARCH_S=170  seconds per llm-free search
## SOURCES=.devsite/sources.tar.xz  the releases' sources, packed
## PREPARED=.cache/real_kernels  the real-kernel corpus, prepared
## FUNCTIONS=minisglang.layers.activation:SiluAndMul.forward_native,minisglang.layers.layernorm:RMSNorm.forward_native
## ITERATIONS=12  mutation attempts per target search

step real_kernels 280 "$PYTHON" bench/real_kernels.py run --prepared "$PREPARED" \
  --out "$BENCH_OUT/real_kernels" --budget-s 180 &
IFS=, read -r -a functions <<<"$FUNCTIONS"
for function in "${functions[@]}"; do
  name=$(echo "${function##*:}" | tr '.' '_')
  step "target_$name" 380 "$PYTHON" -m kernelbot.cli target example --function "$function" \
    --out "$BENCH_OUT/targets/$name" --iterations "$ITERATIONS" --benchmark-runs 5 \
    --backend triton-cuda --workers-per-device 2 &
done
step llm_free 440 "$PYTHON" bench/llm_free_acceptance.py --out "$BENCH_OUT/llm_free" \
  --work "$BENCH_OUT/llm_free/work" --search-seconds "$SEARCH_S" --workers 2 --sources "$SOURCES" \
  --deadline 400 &
wait
