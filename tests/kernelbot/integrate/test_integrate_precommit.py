"""A work tree with a .pre-commit-config.yaml is formatted with the tools and versions that config pins, not
the profile's: the bundled minirepo (whose profile runs ruff) given a config pinning isort 5.13.2 and black
24.8.0, with their settings in the tree (line length 100), comes out of the integration clean under exactly
those two."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.formatting import FormatterError, tool_venv
from kernelbot.integrate import integrate, op_slug
from tests.kernelbot.integrate.conftest import git, make_git_repo

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
PINS = ("isort==5.13.2", "black==24.8.0")
CONFIG = """repos:
  - repo: https://github.com/PyCQA/isort
    rev: 5.13.2
    hooks:
      - id: isort
  - repo: https://github.com/psf/black
    rev: 24.8.0
    hooks:
      - id: black
"""

pytestmark = pytest.mark.slow


def test_the_tree_pins_win_over_the_profile(tmp_path: Path, tool_venvs: dict) -> None:
    venvs = {}
    for requirement in PINS:
        try:
            venvs[requirement] = tool_venv(requirement)
        except FormatterError as exc:
            pytest.skip(f"cannot install {requirement} (is the package registry reachable?): {exc}")
    seed = tmp_path / "seed"
    make_git_repo(ROOT / "examples" / "minirepo", seed)
    (seed / ".pre-commit-config.yaml").write_text(CONFIG)
    (seed / ".isort.cfg").write_text(
        "[settings]\nprofile=black\nline_length=100\nknown_first_party=minisglang\n"
    )
    with (seed / "pyproject.toml").open("a") as handle:
        handle.write("\n[tool.black]\nline-length = 100\n")
    repo = make_git_repo(seed, tmp_path / "repo")
    task = tmp_path / "task"
    spec = HERE / "specs" / "minisglang_silu_and_mul.toml"
    extract(
        ExtractOptions(repo, "minisglang.layers.activation:SiluAndMul.forward_native", out=task, spec=spec)
    )
    candidate = (HERE / "fixtures" / "silu_and_mul_forward_native.py").read_text()
    integration = integrate(repo, load_profile("example"), task, candidate, op_slug=op_slug(task))

    assert integration.formatter == "isort 5.13.2, black 24.8.0 (as .pre-commit-config.yaml pins them)"
    created = [str(integration.kernel_module), str(integration.test_file)]
    checks = {
        "isort==5.13.2": [str(venvs["isort==5.13.2"] / "bin" / "isort"), "--check-only", "--quiet", *created],
        "black==24.8.0": [str(venvs["black==24.8.0"] / "bin" / "black"), "--check", "--quiet", *created],
    }
    for requirement, cmd in checks.items():
        done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{requirement}: {done.stdout}{done.stderr}"
    # The tree's line length (100, where the example profile's ruff settings say 110) holds for the code
    # black laid out and for the docstring kernelbot wrapped.
    kernel = (repo / integration.kernel_module).read_text()
    assert max(len(line) for line in kernel.splitlines()) <= 100
    assert "minisglang/layers/activation.py" in git(repo, "status", "--porcelain")
