"""Helpers of the target road's tests: an upstream made from the bundled example (with extra files), the
user profile that points the example at the loopback GitHub fake, running the CLI in this process, and the
plain `kernelbot target example` run on RMSNorm that several test modules read (tests/conftest.py builds it
once per session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelbot import git
from kernelbot.cli import main

ROOT = Path(__file__).resolve().parents[3]
MINIREPO = ROOT / "examples" / "minirepo"
DATA = Path(__file__).resolve().parent / "data"
SILU = "minisglang.layers.activation:SiluAndMul.forward_native"
ROWWISE, FLAT, WRONG = DATA / "silu_rowwise.py", DATA / "silu_flat.py", DATA / "silu_wrong.py"
# The searches start from a seed file instead of the Inductor seed: one evaluation each on the interpreter.
QUICK_SEARCH = [
    "--backend", "triton-interpret", "--workers-per-device", "1", "--no-inductor-seed", "--no-fusion-seed",
]  # fmt: skip
# The example's RMSNorm with a seed that the interpreter judges correct, on a spec with both half dtypes (the
# shipped spec is float32 only).
RMSNORM = "minisglang.layers.layernorm:RMSNorm.forward_native"
_INTEGRATE = ROOT / "tests" / "kernelbot" / "integrate"
RMSNORM_SEED = _INTEGRATE / "fixtures" / "minisglang_rms_norm_forward_native.py"
RMSNORM_SPEC = _INTEGRATE / "specs" / "minisglang_rmsnorm.toml"
UPSTREAM_REPO = "kernelbot/minisglang"  # the example profile's repo_url, as the fake serves it

# A test that fails before any change: what verification must report as pre-existing, not block on.
KNOWN_ISSUE = (
    "from minisglang.layers.activation import SiluAndMul\n\n\n"
    "def test_known_issue():\n"
    "    assert SiluAndMul is None, 'a known upstream failure'\n"
)
# A test the change breaks: the activation layer's module must not pull in Triton.
PURE_TORCH = (
    "import sys\n\n"
    "import minisglang.layers.activation  # noqa: F401\n\n\n"
    "def test_activation_imports_only_torch():\n"
    "    assert 'triton' not in sys.modules\n"
)


def make_upstream(root: Path, extra: dict[str, str] | None = None) -> tuple[Path, str]:
    """A bare repository holding examples/minirepo (plus `extra` files) on main; (its path, main's sha)."""
    seed = root / "seed"
    shutil.copytree(
        MINIREPO, seed, ignore=shutil.ignore_patterns("__pycache__", ".ruff_cache", ".pytest_cache")
    )
    for rel, text in (extra or {}).items():
        (seed / rel).write_text(text)
    git.init_repository(seed)
    sha = git.commit_all(seed, "minisglang")
    bare = git.init_repository(root / "upstream.git", bare=True)
    git.push_with_lease(seed, str(bare), "main", None)
    return bare, sha


def target_example_rmsnorm(out: Path) -> Path:
    """`kernelbot target example` on RMSNorm in `out`, every stage for real (the interpreter, a seed file so
    the search is one evaluation; no forge): the bundle in out/pr."""
    argv = ["target", "example", "--function", RMSNORM, "--out", str(out), "--spec", str(RMSNORM_SPEC)]
    argv += [*QUICK_SEARCH, "--seed", str(RMSNORM_SEED)]
    code = main(argv)
    assert code == 0 and (out / "pr" / "patch.diff").is_file()
    return out


def fake_profile(path: Path, api_url: str) -> Path:
    """kernelbot.toml refining the shipped example profile: its forge is the fake."""
    path.write_text(
        f'[profiles.example]\nextends = "example"\n[profiles.example.forge]\napi_url = "{api_url}"\n'
    )
    return path


def kernelbot(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """Run the CLI here; (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The CLI's error line, asserting it is the only line on stderr that is not a warning."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]
