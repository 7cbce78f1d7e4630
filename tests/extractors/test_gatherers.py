"""Gatherers on small snippets: each collects facts only, asserted directly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from extractors.classify_decorators import ClassifyDecorators
from extractors.gather_free_names import GatherFreeNames
from extractors.gather_init_attrs import GatherInitAttrs, has_default
from extractors.gather_inplace_writes import inplace_writes
from extractors.gather_self_uses import GatherSelfUses
from extractors.parsed_module import ParsedModule


def parsed(source: str) -> ParsedModule:
    return ParsedModule(Path("snippet.py"), "snippet", False, cst.parse_module(textwrap.dedent(source)))


def test_free_names_skip_locals_builtins_and_annotations() -> None:
    module = parsed("""
        import torch
        from .helpers import h
        C = 3

        def f(x: Tensor, y=C):
            from sgl_kernel import fused
            z = [C for _ in range(3)]
            return h(x) + undefined + len(z) + torch.ones(1) + fused(x)
    """)
    function = module.module.body[3]
    free = GatherFreeNames.of(module, function)
    assert set(free.globals) == {"C", "h", "torch"}
    assert set(free.unresolved) == {"undefined"}  # `Tensor` is only a hint
    assert [type(i).__name__ for i in free.imports] == ["ImportFrom"]
    assert [ref.name for _, ref in free.local_imports] == ["fused"]


def test_self_uses_sorts_reads_writes_calls_and_refusals() -> None:
    module = parsed("""
        class A:
            def m(self, x):
                self.count += 1
                self.out = self.w * x
                self.buf[:2] = x
                y = self.helper(x)
                return other(self)
    """)
    method = module.module.body[0].body.body[0]
    uses = GatherSelfUses.of(module, method)
    assert set(uses.reads) == {"count", "w", "buf"}
    assert set(uses.writes) == {"count", "out"}
    assert set(uses.calls) == {"helper"}
    assert uses.refusals and "uses `self` itself" in uses.refusals[0]


def test_init_attrs_defaults_come_from_literals_and_init_defaults() -> None:
    module = cst.parse_module(
        textwrap.dedent("""
        class Norm:
            KIND = "rms"

            def __init__(self, hidden, eps=1e-6, *, flag=False):
                self.eps = eps
                self.hidden = hidden
                self.flag = flag
                self.weight = make(hidden)
    """)
    )
    attrs = GatherInitAttrs.of(module, module.body[0])
    assert attrs["eps"].default == 1e-6 and attrs["flag"].default is False and attrs["KIND"].default == "rms"
    assert not has_default(attrs["hidden"]) and not has_default(attrs["weight"])
    assert attrs["weight"].expressions == ["make(hidden)"]


def test_decorators_dropped_kept_and_reported() -> None:
    module = parsed("""
        import functools
        import torch
        import sgl_registry

        @torch.compile(dynamic=True)
        def a(x): return x

        @torch.no_grad()
        def b(x): return x

        @functools.lru_cache(maxsize=None)
        def c(n): return n

        @sgl_registry.register("op")
        def d(x): return x
    """)
    decisions = {}
    for function in module.module.body[3:]:
        plan = ClassifyDecorators.of(module, function, lambda root: False)
        decisions[function.name.value] = plan.decisions[0]
    assert not decisions["a"].keep and "eager PyTorch semantics" in decisions["a"].note
    assert decisions["b"].keep and "autograd state only" in decisions["b"].note
    assert decisions["c"].keep and decisions["c"].note == ""
    assert not decisions["d"].keep and "not from the repository" in decisions["d"].note


def test_inplace_writes_follow_views_helpers_and_out() -> None:
    source = textwrap.dedent("""
        import torch

        def _mask(ids, n=None):
            ids[ids >= 3] = -1

        def f(seqlens, cu, table, src, idx, w, x, y):
            seqlens.copy_(x + 1)
            rows = table[:, :4]
            rows.fill_(0)
            w = w * 2
            w *= 3
            torch.add(x, 1, out=src)
            _mask(idx)
            return cu + y
    """)
    writes = inplace_writes(source, "f")
    assert set(writes) == {"seqlens", "table", "src", "idx"}
    assert writes["table"] == ["fill_ (line 10)"]
    assert writes["idx"][0].startswith("_mask() writes its ids")
    assert inplace_writes("def g(x):\n    return x + 1\n", "g") == {}
