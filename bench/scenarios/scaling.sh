# Sourced by bench/run.sh, which provides step, task_dirs, pack and the variables below.
## scaling: evaluation throughput on 1, 2, ... GPUs through the local executor (a WorkerPool per GPU) and
##   Ray (an actor per GPU), scaling efficiency against one GPU, and a fault run that kills one GPU's
##   workers (local) or one actor (Ray) mid-run: every submission must still get a verdict.
##   Needs as many GPUs as GPUS names, and Ray for the ray executor.
## GPUS=1,2  GPU counts to measure, comma-separated
## EXECUTORS=local,ray  executors to measure, comma-separated
## WORKERS=8  warm workers per GPU
## VARIANTS=4  tuning variants per hand-written candidate
## KILL=1  0: leave out the fault runs
## TASKS=all  example tasks (names or task directories, comma-separated)
## LIMIT=560  seconds for the whole run

tasks_dir=$(task_folder "$TASKS") || exit 2
kill=()
[ "$KILL" = 1 ] && kill=(--kill)
step scaling "$LIMIT" "$PYTHON" bench/scaling.py --out "$BENCH_OUT/scaling" --tasks "$tasks_dir" \
  --gpus "$GPUS" --executors "$EXECUTORS" --workers "$WORKERS" --variants "$VARIANTS" "${kill[@]}"
