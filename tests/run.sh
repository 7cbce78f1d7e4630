#!/usr/bin/env bash
# Set up and run the tests in one command: tests/setup.sh (./.venv, kernelbot from this checkout, chromium),
# then ruff, mypy and the whole pytest suite (.ci/run runs the same three commands). On a CPU machine kernel
# tests go through Triton's interpreter; GPU-only tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/setup.sh
ruff check .
mypy
python -m pytest -q "$@"
