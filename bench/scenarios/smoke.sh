# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## smoke: does kernelbot work on this GPU? The GPU-only tests, `kernelbot eval` of every hand-written
##   example candidate (each should pass: rc=0 in summary.txt), and a short throughput run.
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## TESTS=tests/evaluators,tests/adversarial,tests/examples,tests/evolution/test_inductor_seed.py  pytest paths
## TEST_LIMIT=300  seconds for the GPU tests
## TASKS=all  example tasks whose candidates are evaluated (names or task directories, comma-separated)

tasks=$(task_dirs "$TASKS") || exit 2
IFS=, read -r -a tests <<<"$TESTS"
step gpu_tests "$TEST_LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" -m pytest -q -p no:cacheprovider \
  -m gpu -rfE --timeout 150 --junitxml="$BENCH_OUT/pytest_gpu.xml" "${tests[@]}"
for task in $tasks; do
  for candidate in "$task"/candidates/*.py; do
    name=eval_$(basename "$task")_$(basename "$candidate" .py)
    step "$name" 150 env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" -m kernelbot.cli eval "$task" "$candidate" \
      --backend triton-cuda --json
  done
done
step throughput 200 env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/throughput.py \
  --out "$BENCH_OUT/throughput" --workers 8 --variants 2 --rounds 1
