"""bench/target_acceptance.py's review on a real bundle: `kernelbot target example` on RMSNorm (the
interpreter, a seed file so the search is one evaluation) reviewed as the acceptance reviews SGLang's and
LMDeploy's bundles: every check passes; the same bundle with a line of forward_native removed from its patch,
or a guard that pins the case's hidden size, fails the check named for it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench.target_acceptance import Target, markdown, review
from tests.kernelbot.target.road import RMSNORM

pytestmark = pytest.mark.slow

EXAMPLE = Target("example_rmsnorm", "example", "", RMSNORM)


@pytest.fixture(scope="module")
def run(example_target_run: Path) -> Path:
    """The session's run (tests/conftest.py: the spec with both half dtypes, a seed file), read only."""
    return example_target_run


def test_the_example_bundle_passes_every_check(run: Path) -> None:
    entry = review(EXAMPLE, run)
    assert entry["bundle"] and entry["checks"] and entry["passed"], str(entry["checks"])
    assert set(entry["checks"]) == {
        "applies", "reference_kept", "slot", "guard", "test", "benchmark", "body", "lines", "readable",
    }  # fmt: skip
    table = markdown({"targets": {"example_rmsnorm": entry}})
    assert "| example_rmsnorm | yes | ok | ok | ok | ok | ok | ok | ok | ok | ok |" in table


def test_a_removed_reference_line_and_a_pinned_size_are_found(run: Path, tmp_path: Path) -> None:
    doctored = tmp_path / "example_rmsnorm"
    shutil.copytree(run, doctored, symlinks=True)
    patch = doctored / "pr" / "patch.diff"
    text = patch.read_text()
    # Turn the first context line of the activation module's first hunk into a removal.
    head, sep, rest = text.partition("b/minisglang/layers/layernorm.py\n")
    hunk = re.search(r"^ .*$", rest, re.M)
    assert sep and hunk
    patch.write_text(head + sep + rest[: hunk.start()] + "-" + rest[hunk.start() + 1 :])
    kernel = next((doctored / "worktree").glob("minisglang/kernels/ops/layernorm/*_triton.py"))
    source = kernel.read_text()
    at = source.index("    return (", source.index("def can_use_"))
    kernel.write_text(source[:at] + "    if x.shape[-1] != 128:\n        return False\n" + source[at:])
    entry = review(EXAMPLE, doctored)
    assert entry["checks"]["reference_kept"] == ["minisglang/layers/layernorm.py: 1 line(s) removed"]
    assert entry["checks"]["guard"] and "128" in entry["checks"]["guard"][0]
    assert entry["checks"]["applies"]  # the doctored patch no longer applies either
    assert not entry["passed"]


def test_the_body_needs_each_baseline_or_why_it_is_missing() -> None:
    from bench.target_acceptance import _body_problems

    # The speed section of a bundle `kernelbot target example` wrote on an H200 (SiluAndMul): eager and
    # torch.compile rows, and a line saying why the current path was not measured.
    speed = (Path(__file__).parent / "data" / "speed_section_h200.md").read_text()
    assert _body_problems(speed) == []
    no_compile = "\n".join(line for line in speed.splitlines() if "| torch.compile |" not in line)
    assert _body_problems(no_compile) == ["no torch.compile column and no reason why"]
    no_current = "\n".join(line for line in speed.splitlines() if not line.startswith("- current path"))
    assert _body_problems(no_current) == ["no current path column and no reason why"]
    assert _body_problems("**No speed was measured**: CPU interpreter.") == []
    claim = "**No speed was measured**: CPU. In the engine, f runs inside a captured CUDA graph."
    assert len(_body_problems(claim)) == 1
