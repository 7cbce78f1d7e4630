"""`kernelbot target lmdeploy --repo pypi:lmdeploy==0.18.0` without --spec, for real on a CPU: the release
from the source cache becomes the upstream tree, DefaultSiluAndMulImpl.forward (its SiLU built by `__init__`)
is extracted with drafted inputs at LMDeploy's serving shapes, a search judged by Triton's interpreter starts
from a seed file and stops at its first correct candidate, the kernel goes into the engine's CUDA backend, and
the run ends with a bundle. The release is downloaded once (skipped when the registry is unreachable)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from kernelbot.target.state import TargetState
from tests.kernelbot.integrate.integrate_testing import release_root
from tests.kernelbot.target.road import QUICK_SEARCH, ROWWISE, kernelbot

pytestmark = [pytest.mark.slow, pytest.mark.network]

RELEASE = "lmdeploy==0.18.0"
SILU = "lmdeploy.pytorch.backends.default.activation:DefaultSiluAndMulImpl.forward"


def lmdeploy_seed(folder: Path) -> Path:
    """The example's row-wise SiLU-and-mul candidate under the entry name the LMDeploy task gets, so the
    search is one evaluation; its column block is 4096, since LMDeploy's rows are 12288 wide and the
    interpreter runs every program one after another (at 1024 columns the one evaluation took twice as
    long)."""
    source = ROWWISE.read_text()
    for old, new in [
        ("def silu_and_mul_forward_native(", "def default_silu_and_mul_impl_forward("),
        ("triton.cdiv(d, 256)", "triton.cdiv(d, 4096)"),
        ("BLOCK=256", "BLOCK=4096"),
    ]:
        assert old in source, old
        source = source.replace(old, new)
    seed = folder / "lmdeploy_silu_rowwise.py"
    seed.write_text(source)
    return seed


def test_an_lmdeploy_op_reaches_a_bundle_without_a_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release_root(RELEASE)  # skips when the release cannot be obtained
    run = tmp_path / "run"
    code, out, err = kernelbot(
        capsys,
        "target",
        "lmdeploy",
        "--repo",
        f"pypi:{RELEASE}",
        "--function",
        SILU,
        "--out",
        run,
        "--seed",
        lmdeploy_seed(tmp_path),
        *QUICK_SEARCH,
        "--iterations",
        "1",
        "--benchmark-runs",
        "0",
    )
    assert code == 0, err
    state = TargetState.load(run)
    assert state.first_unfinished() is None
    extracted = state.outcome("extract")
    assert extracted["inputs"] == "draft" and extracted.get("spec") is None and extracted["probe"] == "ok"
    assert "a draft guessed from names and hints" in err

    # The task: `self.silu = nn.SiLU(inplace)` rebuilt at module level (no parameter), LMDeploy's shapes.
    task = run / extracted["task_dir"]
    reference = (task / "reference.py").read_text()
    assert "_silu = nn.SiLU(False)" in reference and "def default_silu_and_mul_impl_forward(x):" in reference
    draft = tomllib.loads((task / "task.toml").read_text())["extraction"]["draft"]
    assert draft["profile"] == "lmdeploy" and draft["model"] == "qwen3-8b"

    # The bundle: the kernel in the engine's kernels/cuda, selected from its CUDA backend, with a test.
    bundle = run / "pr"
    patch = (bundle / "patch.diff").read_text()
    assert "+++ b/lmdeploy/pytorch/kernels/cuda/silu_and_mul_triton.py" in patch
    assert "+++ b/lmdeploy/pytorch/backends/cuda/activation.py" in patch
    assert "+++ b/tests/pytorch/kernel/test_silu_and_mul_triton.py" in patch
    assert (bundle / "body.md").read_text().strip() and "bundle:" in out
