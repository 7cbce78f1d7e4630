"""Transformer: one @triton.jit function per body. A winner seeded from torch.compile's code carries one
kernel per traced call site (Inductor's `_poi_fused_..._0` for the query and `_..._2` for the key, the same
code under two names); the module that ships keeps the first and launches it at both sites, each launch
with its own block and warps. References to a dropped twin, comments included, name the kept one: in
comments, by the name the seed gave the twin too where a crossover suffixed it for the sizes it runs
(`K0_XBLOCK = 32  # _poi_fused_mul_2: XBLOCK` of a twin `_poi_fused_mul_2_small`)."""

from __future__ import annotations

import libcst as cst

from evolution.mutators.crossover.alike import body_key, jit_functions
from kernelbot.integrate.rename_function import (
    CommentWordsRenamer,
    RenameFunctionTransformer,
    with_seeded_names,
)


def twin_kernels(module: cst.Module) -> dict[str, str]:
    """Each module-level @triton.jit function whose code equals an earlier one's but for its name, mapped
    to that earlier one's name."""
    first: dict[str, str] = {}
    twins: dict[str, str] = {}
    for name, kernel in jit_functions(module).items():
        key = body_key(kernel)
        if key in first:
            twins[name] = first[key]
        else:
            first[key] = name
    return twins


class MergeTwinKernelsTransformer(CommentWordsRenamer):
    """Drops each twin's definition; comments that name it name the kept one (by the name its seed gave it
    too, where that is none of `kernels`: the module's @triton.jit functions)."""

    def __init__(self, twins: dict[str, str], kernels: set[str]) -> None:
        super().__init__(with_seeded_names(twins, kernels))
        self.twins = twins

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        return cst.RemoveFromParent() if updated_node.name.value in self.twins else updated_node


def merged_twin_kernels(module: cst.Module) -> cst.Module:
    """`module` with one @triton.jit function per body, every launch of a twin sent to the kept one."""
    twins = twin_kernels(module)
    if not twins:
        return module
    module = module.visit(MergeTwinKernelsTransformer(twins, set(jit_functions(module))))
    for dropped, kept in twins.items():
        module = module.visit(RenameFunctionTransformer(dropped, kept))
    return module
