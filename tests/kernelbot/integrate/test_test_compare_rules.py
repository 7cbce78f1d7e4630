"""The generated test compares outputs the way the evaluator does where the task says their order is open:
rows of a `[[compare.unordered]]` key are sorted by id (the outputs that follow it permuted alike) and ids of
a `[[compare.ties]]` key may differ only among exactly equal scores. Shown on the example engine's
biased_grouped_topk (top-k ids in no set order): a correct Triton kernel whose ids come in another order per
row passes, one with a wrong id fails, and a boundary id of exactly the k-th score is accepted."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.integrate.derive_envelope import derive_envelope
from kernelbot.integrate.task_view import TaskView, load_view
from kernelbot.integrate.test_source import TestSubject, render_test

ROOT = Path(__file__).resolve().parents[3]
FUNCTION = "minisglang.layers.moe.topk:biased_grouped_topk"
SPEC = (
    ROOT
    / "kernelbot"
    / "engines"
    / "example"
    / "specs"
    / "minisglang.layers.moe.topk.biased_grouped_topk.toml"
)
TRITON_KERNEL = ROOT / "examples" / "tasks" / "moe_grouped_topk" / "candidates" / "moe_grouped_topk_triton.py"
CASE = {"tokens": 5, "experts": 256}  # small: a second or two on the interpreter

# Appended to the Triton router: the kernel module's flag and guard, and its entry wrapped so that its
# result is changed after the kernel ran (`{change}` works on `weights`, `ids` and the arguments).
WRAPPER = """

ENABLED = True
_triton_biased_grouped_topk = biased_grouped_topk


def can_use(*args, **kwargs):
    return True


def biased_grouped_topk(gating_output, correction_bias, *args, **kwargs):
    weights, ids = _triton_biased_grouped_topk(gating_output, correction_bias, *args, **kwargs)
{change}
    return weights, ids
"""
# Each row reversed, its weights alike: the same experts in another order.
REVERSED = "    weights, ids = weights.flip(-1).contiguous(), ids.flip(-1).contiguous()"
# The first token's first expert replaced by one it did not choose.
WRONG_ID = """    chosen = set(ids[0].tolist())
    ids[0, 0] = next(e for e in range(gating_output.shape[-1]) if e not in chosen)"""

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="on a GPU the generated test reaches the kernel through the integrated code",
)


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[TaskView, Path]:
    tmp = tmp_path_factory.mktemp("compare-rules")
    repo = tmp / "repo"
    shutil.copytree(ROOT / "examples" / "minirepo", repo, ignore=shutil.ignore_patterns("__pycache__"))
    extract(ExtractOptions(repo, FUNCTION, out=tmp / "task", spec=SPEC))
    return load_view(tmp / "task"), repo


def _generated(
    task: tuple[TaskView, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> ModuleType:
    """The generated test for biased_grouped_topk against the Triton router changed by `change`, imported."""
    view, repo = task
    name = f"bgt_kernel_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(TRITON_KERNEL.read_text() + WRAPPER.format(change=change))
    subject = TestSubject("minisglang.layers.moe.topk", name, "biased_grouped_topk", "can_use", {})
    source = render_test(view, subject, load_profile("example"), repo, derive_envelope(view).other_cases)
    path = tmp_path / "test_biased_grouped_topk_triton.py"
    path.write_text(source)
    monkeypatch.syspath_prepend(str(repo))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location(f"generated_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, spec.name, module)
    assert module.INTERPRETED, "the suite runs kernels on Triton's interpreter (tests/conftest.py)"
    return module


def test_the_rules_are_rendered_only_for_a_task_that_has_them(task: tuple[TaskView, Path]) -> None:
    view, repo = task
    subject = TestSubject("minisglang.layers.moe.topk", "k", "biased_grouped_topk", "can_use", {})
    source = render_test(view, subject, load_profile("example"), repo, ())
    assert 'UNORDERED = {"return[1]": ["return[0]"]}' in source
    assert 'TIES = {"return[1]": {"values": "", "follow": ["return[0]"]}}' in source
    assert "import kernelbot" not in source and "from kernelbot" not in source  # shipped into the engine


def test_ids_in_another_order_per_row_pass(
    task: tuple[TaskView, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _generated(task, tmp_path, monkeypatch, REVERSED)
    dtype = torch.float32
    expected = module._run(CASE, dtype, kernel_path=False)["return"]
    actual = module._run(CASE, dtype, kernel_path=True)["return"]
    # Not vacuous: the rows hold the original's experts, but not in its order.
    assert not torch.equal(actual[1], expected[1])
    assert torch.equal(actual[1].sort(-1).values, expected[1].sort(-1).values)
    module._check(CASE, dtype)


def test_a_wrong_id_fails(
    task: tuple[TaskView, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _generated(task, tmp_path, monkeypatch, WRONG_ID)
    with pytest.raises(
        AssertionError, match=r"return\[1\] .* row 0 differs in more than ids of exactly equal"
    ):
        module._check(CASE, torch.float32)


def test_a_boundary_id_of_exactly_the_kth_score_is_a_tie(
    task: tuple[TaskView, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Top 3 of scores where experts 3 and 5 tie for third: either may be chosen, in any order, its weight
    moving with it; expert 2 (a lower score) may not."""
    module = _generated(task, tmp_path, monkeypatch, "")
    scores = torch.tensor([[0.9, 0.8, 0.1, 0.5, 0.0, 0.5]])
    selections = [(scores, torch.tensor([[0, 1, 3]]))]
    expected = {"return[0]": torch.tensor([[0.4, 0.3, 0.2]]), "return[1]": torch.tensor([[0, 1, 3]])}
    tied = {"return[0]": torch.tensor([[0.3, 0.4, 0.2]]), "return[1]": torch.tensor([[1, 0, 5]])}
    assert module._align_tied_ids(expected, tied, selections) == {}
    assert (
        tied["return[1]"].tolist() == [[0, 1, 3]]
        and tied["return[0]"].tolist() == expected["return[0]"].tolist()
    )

    lower = {"return[0]": torch.tensor([[0.3, 0.4, 0.2]]), "return[1]": torch.tensor([[1, 0, 2]])}
    assert "row 0" in module._align_tied_ids(expected, lower, selections)["return[1]"]
    assert lower["return[1]"].tolist() == [[1, 0, 2]]  # left as it is, for the comparison to report
    twice = {"return[0]": torch.tensor([[0.3, 0.4, 0.2]]), "return[1]": torch.tensor([[1, 0, 0]])}
    assert module._align_tied_ids(expected, twice, selections)
