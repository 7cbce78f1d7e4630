"""Builds, on a machine with the package registry (for the formatters), a git repository of examples/minirepo
with the three functions of test_integrate_minirepo.py integrated (hand-written candidates), so that its test
suite and the generated tests can be run elsewhere, e.g. on a GPU machine that has only torch and triton:

    python tests/kernelbot/integrate/make_minirepo_change.py OUT      # here
    cd OUT && python -m pytest -v -p no:cacheprovider -o addopts=    # there: every case PASSED, none SKIPPED
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from extractors.extract import ExtractOptions, extract  # noqa: E402
from kernelbot.engines import load_profile  # noqa: E402
from kernelbot.integrate import integrate, op_slug  # noqa: E402
from tests.kernelbot.integrate.conftest import make_git_repo  # noqa: E402
from tests.kernelbot.integrate.test_integrate_minirepo import MINIREPO, TARGETS  # noqa: E402


def main(out: Path) -> int:
    repo = make_git_repo(MINIREPO, out)
    tasks = out.parent / f"{out.name}-tasks"
    for key, (function, spec, fixture) in TARGETS.items():
        extract(ExtractOptions(repo, function, out=tasks / key, spec=spec, force=True))
        candidate = (Path(__file__).parent / "fixtures" / f"{fixture}.py").read_text()
        integration = integrate(
            repo, load_profile("example"), tasks / key, candidate, op_slug=op_slug(tasks / key)
        )
        print(f"{function}: {integration.kernel_module}, {integration.test_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
