"""Transformer: one @triton.jit function per body. A winner seeded from torch.compile's code carries one
kernel per traced call site (Inductor's `_poi_fused_..._0` for the query and `_..._2` for the key, the same
code under two names); the module that ships keeps the first and launches it at both sites, each launch
with its own block and warps. References to a dropped twin, comments included, name the kept one."""

from __future__ import annotations

import re

import libcst as cst

from evolution.mutators.crossover.alike import jit_functions
from kernelbot.integrate.rename_function import RenameFunctionTransformer


def twin_kernels(module: cst.Module) -> dict[str, str]:
    """Each module-level @triton.jit function whose code equals an earlier one's but for its name, mapped
    to that earlier one's name."""
    first: dict[str, str] = {}
    twins: dict[str, str] = {}
    for name, kernel in jit_functions(module).items():
        # Comments above the def (Inductor's "Fused by Inductor from ...") are not the kernel's code.
        key = module.code_for_node(kernel.with_changes(name=cst.Name("_kernel"), leading_lines=()))
        if key in first:
            twins[name] = first[key]
        else:
            first[key] = name
    return twins


class MergeTwinKernelsTransformer(cst.CSTTransformer):
    def __init__(self, twins: dict[str, str]) -> None:
        super().__init__()
        self.twins = twins
        self._words = re.compile(r"\b(" + "|".join(map(re.escape, twins)) + r")\b") if twins else None

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        return cst.RemoveFromParent() if updated_node.name.value in self.twins else updated_node

    def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
        if self._words is None:
            return updated_node
        renamed = self._words.sub(lambda m: self.twins[m[1]], updated_node.value)
        return updated_node.with_changes(value=renamed)


def merged_twin_kernels(module: cst.Module) -> cst.Module:
    """`module` with one @triton.jit function per body, every launch of a twin sent to the kept one."""
    twins = twin_kernels(module)
    if not twins:
        return module
    module = module.visit(MergeTwinKernelsTransformer(twins))
    for dropped, kept in twins.items():
        module = module.visit(RenameFunctionTransformer(dropped, kept))
    return module
