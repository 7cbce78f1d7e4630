# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## real-kernels: Triton kernels that LMDeploy and Liger-Kernel ship, wrapped as candidates for tasks
##   extracted from (or written after) the PyTorch code they replace, judged with triton-cuda: each must be
##   accepted (no hack finding) and is timed against the PyTorch original. PREPARED is what
##   `python -m bench.real_kernels prepare --out DIR` wrote where the releases are reachable.
## PREPARED=.cache/real_kernels  tasks and assembled candidates
## BUDGET_S=270  start no kernel after this many seconds
## LIMIT=330  seconds for the whole run

step real_kernels "$LIMIT" "$PYTHON" bench/real_kernels.py run --prepared "$PREPARED" \
  --out "$BENCH_OUT/real_kernels" --budget-s "$BUDGET_S"
