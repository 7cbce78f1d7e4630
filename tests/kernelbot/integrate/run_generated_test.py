"""Run as a subprocess by the real-release tests: runs generated test files with pytest inside
release_imports.release_modules, so the release's modules import with their missing third-party packages
faked. Exit status: pytest's.

    python run_generated_test.py SOURCE_ROOT PACKAGE TEST_FILE... [--skip-init PKG] [--site-packages DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from release_imports import release_modules


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("source_root", type=Path)
    parser.add_argument("package")
    parser.add_argument("test_files", type=Path, nargs="+")
    parser.add_argument("--skip-init", action="append", default=[])
    parser.add_argument("--site-packages", action="append", default=[], help="real packages to add")
    args = parser.parse_args()
    sys.path.extend(args.site_packages)
    if not torch.cuda.is_available():  # as integrate's cpu_test_env says for whole test runs
        os.environ["TRITON_INTERPRET"] = "1"
    import pytest

    with release_modules(args.source_root.resolve(), (args.package,), tuple(args.skip_init)):
        return int(
            pytest.main([*map(str, args.test_files), "-q", "-p", "no:cacheprovider", "-rs", "-W", "ignore"])
        )


if __name__ == "__main__":
    sys.exit(main())
