"""Fixture repositories for the extractor tests: small packages written into tmp_path, each exercising the
constructs the extractors must handle (relative imports, constants, helper classes, methods with self
reads/writes, nested classes, decorators, in-place writes, third-party and unresolvable names)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

TOYREPO: dict[str, str] = {
    "toy/__init__.py": "",
    "toy/consts.py": """
        import math

        EPS = 1e-6
        SCALE = math.sqrt(2.0)
        _UNUSED = object()
    """,
    "toy/ops/__init__.py": """
        from .helpers import scaled_silu as silu_fn
        from .star_source import *
    """,
    "toy/ops/star_source.py": """
        def doubled(x):
            return x * 2
    """,
    "toy/ops/helpers.py": """
        import torch
        import torch.nn.functional as F

        from ..consts import EPS, SCALE


        def scaled_silu(x):
            return F.silu(x) * SCALE


        def _norm(x, eps=EPS):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


        class Clamp:
            LIMIT = 3.0

            def __init__(self, limit=None):
                self.limit = limit or self.LIMIT

            def __call__(self, x):
                return x.clamp(-self.limit, self.limit)
    """,
    "toy/ops/other.py": """
        def _norm(x):
            return x - x.mean()
    """,
    "toy/layers.py": """
        import torch
        from torch import nn

        from toy import consts
        from toy.ops import doubled, silu_fn
        from toy.ops.helpers import Clamp, _norm
        from toy.ops.other import _norm as centered

        try:
            import sgl_kernel_missing
        except ImportError:
            sgl_kernel_missing = None

        _F = 3


        def _is_enabled():
            return False


        @torch.compile(dynamic=True)
        def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
            d = x.shape[-1] // 2
            return silu_fn(x[..., :d]) * x[..., d:] * consts.EPS * _F


        def mixed(x):
            return _norm(x) + centered(x) + doubled(x) + Clamp()(x)


        def uses_missing(x, fast=False):
            if fast:
                return sgl_kernel_missing.fused(x)
            return x + 1


        def uses_undefined(x, fast=False):
            if fast:
                return not_defined_anywhere(x)
            return x * 2


        def lazy_import(x):
            from toy.ops.helpers import scaled_silu

            return scaled_silu(x)


        def fill_metadata(seqlens, cu, page_table, req_to_token, idx, seq_lens, n: int):
            seqlens.copy_(seq_lens + 1)
            cu[1:].copy_(torch.cumsum(seqlens, dim=0))
            rows = page_table[: idx.shape[0], :n]
            rows.copy_(req_to_token[idx, :n])
            return None


        class RMSNorm(nn.Module):
            def __init__(self, hidden_size, eps=1e-6):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(hidden_size))
                self.variance_epsilon = eps
                self.hidden_size = hidden_size

            def _variance(self, x):
                return x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon

            @property
            def scale(self):
                return self.weight * 1.0

            @torch.no_grad()
            def forward_native(self, x, residual=None):
                if residual is not None:
                    x = x + residual
                    residual = x
                x = x * torch.rsqrt(self._variance(x)) * self.scale
                if residual is None:
                    return x
                return x, residual


        class Backend:
            class Decode:
                def __init__(self, max_bs):
                    self.seq_lens = torch.zeros(max_bs, dtype=torch.int32)
                    self.steps = 0

                def _bump(self, bs):
                    self.steps += bs

                def update(self, bs: int, seq_lens: torch.Tensor):
                    self.seq_lens[:bs].copy_(seq_lens[:bs])
                    self._bump(bs)
                    self.last_bs = bs


        class Refused:
            def leak(self, x):
                return helper_taking_self(self, x)

            def parent(self, x):
                return super().parent(x)


        def helper_taking_self(obj, x):
            return x
    """,
}


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def toyrepo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "toyrepo", TOYREPO)


@pytest.fixture
def import_from(tmp_path: Path) -> Iterator[object]:
    """Import a module of a fixture repo (which imports with torch alone) to compare with the reference."""
    added: list[str] = []
    before = set(sys.modules)

    def load(root: Path, module: str):  # type: ignore[no-untyped-def]
        import importlib

        sys.path.insert(0, str(root))
        added.append(str(root))
        return importlib.import_module(module)

    yield load
    for path in added:
        sys.path.remove(path)
    for name in set(sys.modules) - before:
        if name.split(".")[0] in ("toy", "minisglang"):
            del sys.modules[name]
