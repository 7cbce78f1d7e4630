#!/usr/bin/env bash
# Set up and run the tests in one command (what CI runs, through .ci/run): a virtual environment in ./.venv
# with kernelbot installed from this checkout, Debian's chromium for the report's browser test, then ruff and
# the whole pytest suite. On a CPU machine kernel tests go through Triton's interpreter; GPU-only tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch: the CPU wheel 2.13.0 by default (a plain `torch` pulls a CUDA build); KERNELBOT_TORCH overrides it.
python -m pip install -q "${KERNELBOT_TORCH:-torch==2.13.0}"
python -m pip install -q -e ".[test,ray]"

# The report's browser test screenshots a report in headless Chromium: Debian's chromium package, without its
# recommended extras. Without a browser that test would skip, so a failed install stops here instead.
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

ruff check .
python -m pytest -q "$@"
