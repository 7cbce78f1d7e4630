#!/usr/bin/env bash
# The main job in one command: set kernelbot up in ./.venv (once), then run `kernelbot target example` on the
# bundled example repository (examples/minirepo) for one of its functions.
#
#   examples/run-example.sh                     SiluAndMul.forward_native
#   examples/run-example.sh --function minisglang.layers.layernorm:RMSNorm.forward_native
#   examples/run-example.sh --out runs/mine --benchmark-runs 10 ...   (any `kernelbot target` flag)
#
# On a CPU the search stops at the first correct kernel (Triton's interpreter checks correctness, it never
# times) and the bundle in RUN/pr/ says that no speed was measured; on a GPU it searches and measures.
# torch: the CPU wheel 2.13.0 by default; on a GPU machine set KERNELBOT_TORCH to the CUDA build you want
# (e.g. KERNELBOT_TORCH=torch), or install torch into .venv yourself first.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
. .venv/bin/activate
if ! python -c "import torch" 2>/dev/null; then
    python -m pip install -q --upgrade pip
    python -m pip install -q "${KERNELBOT_TORCH:-torch==2.13.0}"
fi
if ! command -v kernelbot >/dev/null || ! python -c "import kernelbot.target" 2>/dev/null; then
    python -m pip install -q -e ".[test]"
fi

case " $* " in
    *" --function "* | *" --function="*) exec kernelbot target example "$@" ;;
    *) exec kernelbot target example --function minisglang.layers.activation:SiluAndMul.forward_native "$@" ;;
esac
