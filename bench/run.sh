#!/usr/bin/env bash
# bench/run.sh SCENARIO [NAME=VALUE ...]: one named benchmark scenario on a machine with a GPU.
#   bench/run.sh list                        every scenario with its parameters and their defaults
#   bench/run.sh stability GPU=1 EVALUATIONS=10
#   GPU=0 bench/run.sh throughput & GPU=1 bench/run.sh stability & wait     (two GPUs, two scenarios)
# A scenario is bench/scenarios/NAME.sh; its `## ` header lines declare what it does and its parameters
# (bench/README.md, "Adding a scenario"). Parameters come as NAME=VALUE arguments or from the environment.
# Every run writes under BENCH_OUT (default bench-out/SCENARIO-UTCTIME): env.txt (GPU, driver, versions,
# commit, date), summary.txt (one line per step: exit code and seconds), a log per step and each tool's
# own .json/.md. DRY_RUN=1 prints the steps instead of running them.
set -u
cd "$(dirname "$0")/.." || exit 2
COMMON_PARAMS="BENCH_OUT BENCH_PACK BENCH_SITE DRY_RUN PYTHON"

usage() { echo "usage: bench/run.sh list | SCENARIO [NAME=VALUE ...]  (bench/README.md)" >&2; exit 2; }
fail() { echo "error: $*" >&2; exit 2; }

header() { sed -n 's/^## //p' "$1"; }  # a scenario's description and parameter lines
params() { sed -n 's/^## \([A-Z][A-Z0-9_]*\)=\([^ ]*\).*/\1 \2/p' "$1"; }  # "NAME DEFAULT" per parameter

list() {
  local file
  for file in bench/scenarios/*.sh; do
    echo "$(basename "$file" .sh):"
    header "$file" | sed 's/^/    /'
  done
  echo "every scenario: BENCH_OUT=DIR BENCH_PACK=DIR BENCH_SITE=FILE.tar.xz DRY_RUN=1 PYTHON=python3"
}

[ $# -ge 1 ] || usage
case "$1" in list) list; exit 0 ;; -h | --help) usage ;; esac
SCENARIO=$1
shift
FILE=bench/scenarios/$SCENARIO.sh
[ -f "$FILE" ] || fail "no scenario '$SCENARIO' (bench/run.sh list shows them)"
KNOWN=" $COMMON_PARAMS $(params "$FILE" | cut -d' ' -f1 | tr '\n' ' ') "
for arg in "$@"; do
  name=${arg%%=*}
  [[ $arg == *=* && $name =~ ^[A-Z][A-Z0-9_]*$ ]] || fail "'$arg' is not NAME=VALUE"
  [[ $KNOWN == *" $name "* ]] || fail "$SCENARIO takes no parameter $name (bench/run.sh list)"
  export "${arg?}"
done
while read -r name default; do  # defaults for what neither the arguments nor the environment set
  [ -n "${!name+set}" ] || export "$name=$default"
done < <(params "$FILE")
: "${DRY_RUN:=0}" "${PYTHON:=python3}" "${BENCH_PACK:=}"
: "${BENCH_OUT:=bench-out/$SCENARIO-$(date -u +%Y%m%dT%H%M%S)}"
# BENCH_SITE= (set and empty) unpacks nothing, even where .devsite/ holds an archive for another Python.
: "${BENCH_SITE=$([ -f .devsite/devsite.tar.xz ] && echo .devsite/devsite.tar.xz)}"

# Packages the GPU image lacks (libcst, tomli_w, ray) can travel as one archive unpacked onto PYTHONPATH.
SITE=/tmp/kernelbot-bench-site
if [ -n "$BENCH_SITE" ] && [ "$DRY_RUN" != 1 ]; then
  if [ ! -f "$SITE/.unpacked" ]; then
    { mkdir -p "$SITE" && tar -xJf "$BENCH_SITE" -C "$SITE" && touch "$SITE/.unpacked"; } ||
      fail "cannot unpack BENCH_SITE=$BENCH_SITE"
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  [ -d "$SITE/bin" ] && export PATH="$SITE/bin:$PATH"  # tools carried as binaries (ruff)
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KERNELBOT_HOME=${KERNELBOT_HOME:-/tmp/kernelbot-bench-home} RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
# NVLink multicast stays off: on a shared multi-GPU host a program using it can take every GPU out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# --- helpers for the scenarios -----------------------------------------------------------------------------
pack() {  # after every step, so a run cut short by a time limit still leaves what it did
  [ -n "$BENCH_PACK" ] && [ "$DRY_RUN" != 1 ] || return 0
  local tmp="$BENCH_PACK/.results-$SCENARIO.$BASHPID.tgz"
  mkdir -p "$BENCH_PACK"
  # Caches (compiled kernels, kernelbot's source cache) stay behind: they can be rebuilt and would push the
  # archive past what a device call brings back.
  tar -czf "$tmp" --exclude=cache --exclude='*.sqlite-wal' --exclude='*.sqlite-shm' \
    -C "$(dirname "$BENCH_OUT")" "$(basename "$BENCH_OUT")" 2>/dev/null &&
    mv -f "$tmp" "$BENCH_PACK/results-$SCENARIO.tgz"
  cp "$BENCH_OUT/summary.txt" "$BENCH_PACK/summary-$SCENARIO.txt" 2>/dev/null
  {  # every report, then the end of every step's log: why a step failed reads without the archive
    find "$BENCH_OUT" -name '*.md' -exec sh -c 'for f; do echo "<!-- $f -->"; cat "$f"; done' _ {} +
    for f in "$BENCH_OUT"/*.log; do
      [ -f "$f" ] && { echo "<!-- $f, last 30 lines -->"; tail -n 30 "$f"; }
    done
  } >"$BENCH_PACK/reports-$SCENARIO.md" 2>/dev/null
  return 0
}

step() {  # step NAME SECONDS COMMAND...: runs it under a time limit, log in NAME.log, a line in summary.txt
  local name=$1 limit=$2 started=$SECONDS rc
  shift 2
  if [ "$DRY_RUN" = 1 ]; then  # one write per line: steps started in the background print at once
    local line="step $name (${limit}s):" arg
    for arg in "$@"; do
      [[ $arg =~ ^[A-Za-z0-9_./,=:@%+-]+$ ]] && line+=" $arg" || line+=" $(printf '%q' "$arg")"
    done
    echo "$line"
    return 0
  fi
  timeout "$limit" "$@" >"$BENCH_OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - started))s" >>"$BENCH_OUT/summary.txt"
  pack
  return $rc
}

task_dirs() {  # TASKS (all, or comma-separated names or paths) -> one task directory per line
  local name
  if [ "$1" = all ]; then
    for name in examples/tasks/*/; do echo "${name%/}"; done
    return
  fi
  for name in ${1//,/ }; do
    if [ -f "$name/task.toml" ]; then echo "$name"
    elif [ -f "examples/tasks/$name/task.toml" ]; then echo "examples/tasks/$name"
    else fail "TASKS: '$name' is neither a task directory nor an example task"
    fi
  done
}

task_folder() {  # TASKS -> a folder holding just those task directories (for --tasks options)
  [ "$1" = all ] && { echo examples/tasks; return; }
  local folder=$BENCH_OUT/tasks task dirs
  dirs=$(task_dirs "$1") || return 2
  [ "$DRY_RUN" = 1 ] || mkdir -p "$folder"
  for task in $dirs; do
    [ "$DRY_RUN" = 1 ] || ln -sfn "$(cd "$task" && pwd)" "$folder/$(basename "$task")"
  done
  echo "$folder"
}

env_report() {
  {
    echo "scenario: $SCENARIO $*"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')" \
      "($(git status --porcelain 2>/dev/null | wc -l) files changed)"
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1
    "$PYTHON" -c "import sys, torch, triton; print('python', sys.version.split()[0], '| torch',
      torch.__version__, '| triton', triton.__version__, '| GPUs', torch.cuda.device_count())" 2>&1
    echo "cpu cores: $(nproc)"
  } >"$BENCH_OUT/env.txt"
}

if [ "$DRY_RUN" != 1 ]; then
  mkdir -p "$BENCH_OUT" || fail "cannot create BENCH_OUT=$BENCH_OUT"
  env_report "$@"
fi
# shellcheck source=/dev/null
. "$FILE"
[ "$DRY_RUN" = 1 ] && exit 0
pack
cat "$BENCH_OUT/summary.txt" 2>/dev/null
echo "results: $BENCH_OUT"
# Exit 1 when any step failed or timed out (its log says why), 0 when every step passed.
! grep -qv ' rc=0 ' "$BENCH_OUT/summary.txt" 2>/dev/null
