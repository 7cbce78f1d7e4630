"""bench/readable_modules.py reads the engine's own kernel for the line budget; where that release cannot
be read (a device machine with no registry and no unpacked sources) the budget is reported unknown, with
the reason, never passed unchecked."""

from __future__ import annotations

import pytest

import extractors.release_sources
from bench.readable_modules import _own_kernel_lines, with_constant
from extractors.errors import ExtractionError


def test_an_unreadable_release_leaves_the_budget_unknown_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def offline(requirement: str, *args: object, **kwargs: object) -> None:
        raise ExtractionError(f"could not download {requirement} from the package registry")

    monkeypatch.setattr(extractors.release_sources, "fetch_release", offline)
    reason = _own_kernel_lines("lmdeploy_rmsnorm_residual")
    assert reason == "lmdeploy==0.18.0: could not download lmdeploy==0.18.0 from the package registry"
    assert _own_kernel_lines("sglang_silu_and_mul") is None  # no own kernel: the 200-line budget


def test_a_winners_constant_replaces_the_value_only() -> None:
    """The winner's tuned constants go into the regenerated module with the writer's comments beside them,
    spaced as the writer spaced them."""
    source = "BLOCK = 1024  # elements per program\nNUM_WARPS = 4\nBLOCK_COL = 7\n"
    written = with_constant(with_constant(source, "BLOCK", "2048"), "NUM_WARPS", "8")
    assert written == "BLOCK = 2048  # elements per program\nNUM_WARPS = 8\nBLOCK_COL = 7\n"
