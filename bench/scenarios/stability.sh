# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## stability: how much kernelbot's reported time and speedup move from one fresh process to the next,
##   beside triton.testing.do_bench and do_bench_cudagraph, on three synthetic kernels (bench/stability_tasks:
##   ~1.2 µs, ~6.5 µs, ~210 µs on an H200), in the graph regime and in the wall regime (timed as a wall task
##   is). Targets, cross-process CV: graph <= 0.25 % of time and speedup; wall <= 1 % of the speedup on tiny
##   and mid, <= 0.25 % on large. Alone on its GPU, and best with the machine's other GPUs idle too. About 5
##   minutes on an H200 (estimate; TRITON_BENCH=do_bench saves do_bench_cudagraph's share).
## GPU=0  the GPU to use (CUDA_VISIBLE_DEVICES)
## KERNELS=tiny,mid,large  which synthetic kernels
## EVALUATIONS=10  fresh processes per kernel
## TIMING=  TimingConfig overrides, space-separated KEY=VALUE (e.g. "replay_target_us=500 graph_input_sets=4")
## TRITON_BENCH=do_bench,do_bench_cudagraph  triton.testing timers run beside (comma-separated, or none)
## REAL=  real kernels beside them, space-separated NAME=TASK_DIR:KERNEL@CASE (e.g. a fresh task and its
##   search's best.py from a claim-coverage run: claim_coverage/work/tasks/N and .../work/runs/N/best.py)
## LIMIT=540  seconds for the whole run

timing=()
read -r -a items <<<"$TIMING"
for item in "${items[@]}"; do timing+=(--timing "$item"); done
real=()
read -r -a reals <<<"$REAL"
for item in "${reals[@]}"; do real+=(--real "$item"); done
step stability "$LIMIT" env CUDA_VISIBLE_DEVICES="$GPU" "$PYTHON" bench/stability.py \
  --out "$BENCH_OUT/stability" --kernels "$KERNELS" --evaluations "$EVALUATIONS" --triton-bench "$TRITON_BENCH" \
  "${timing[@]}" "${real[@]}"
