"""Transformer: one host function for specialisations whose hosts differ only in the kernel they launch.

A winner written for several argument dtypes whose kernels differ (a residual RMSNorm: its float32 graph
lacks the casts the 16-bit one holds) has a host function per specialisation (`_add_rmsnorm_fp32`,
`_add_rmsnorm_bf16_fp16`): each reads the same sizes, allocates in its argument's dtype, computes the same
grid and launches its own kernel. The module that ships keeps one, named for what they share
(`_add_rmsnorm`), that takes the kernel to launch as a keyword-only parameter; each call passes the kernel
its specialisation launched (`_add_rmsnorm(..., kernel=_add_rmsnorm_fp32_kernel)`). Hosts that differ in
anything else stay as they are.
"""

from __future__ import annotations

import libcst as cst

from evolution.mutators.crossover.alike import code, jit_functions, names
from kernelbot.integrate.rename_function import RenameFunctionTransformer

_KERNEL = "kernel"  # the merged host's parameter


def twin_hosts(module: cst.Module) -> dict[str, dict[str, str]]:
    """Merged host name -> {host: the kernel it launches} for each group of two or more module-level host
    functions whose code is the same but for their names and the one kernel each launches."""
    kernels = set(jit_functions(module))
    taken = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    groups: dict[str, dict[str, str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef) or statement.decorators:
            continue
        launched = names(statement.body) & kernels
        if len(launched) != 1 or _KERNEL in names(statement):
            continue
        kernel = launched.pop()
        key = code(_with_kernel_parameter(statement, kernel, "_host").with_changes(leading_lines=()))
        groups.setdefault(key, {})[statement.name.value] = kernel
    merged: dict[str, dict[str, str]] = {}
    for members in groups.values():
        name = _common_words(list(members))
        if len(members) > 1 and name.startswith("_") and len(name) > 1 and name not in taken:
            merged[name] = members
    return merged


def _common_words(names: list[str]) -> str:
    """The words (between underscores) every name starts with: `_silu_and_mul_fp32`,
    `_silu_and_mul_bf16_fp16` -> `_silu_and_mul`."""
    split = [name.split("_") for name in names]
    common = []
    for words in zip(*split, strict=False):
        if len(set(words)) > 1:
            break
        common.append(words[0])
    return "_".join(common)


def _with_kernel_parameter(function: cst.FunctionDef, kernel: str, name: str) -> cst.FunctionDef:
    """`function` named `name`, launching its `kernel` through a keyword-only parameter `kernel`."""
    body = function.body.visit(RenameFunctionTransformer(kernel, _KERNEL))
    params = function.params
    star = params.star_arg if not isinstance(params.star_arg, cst.MaybeSentinel) else cst.ParamStar()
    kwonly = [*params.kwonly_params, cst.Param(cst.Name(_KERNEL))]
    return function.with_changes(
        name=cst.Name(name),
        params=params.with_changes(star_arg=star, kwonly_params=kwonly),
        body=cst.ensure_type(body, cst.IndentedBlock),
    )


class MergeTwinHostsTransformer(cst.CSTTransformer):
    """The first host of each group becomes the merged host, the others go, and every call of one of them
    calls the merged host with that one's kernel."""

    def __init__(self, merged: dict[str, dict[str, str]]) -> None:
        super().__init__()
        self.merged = merged
        self.group_of = {host: name for name, members in merged.items() for host in members}

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        name = self.group_of.get(original_node.name.value)
        if name is None:
            return updated_node
        members = self.merged[name]
        host = original_node.name.value
        if host != next(iter(members)):
            return cst.RemoveFromParent()
        return _with_kernel_parameter(updated_node, members[host], name)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if not isinstance(func, cst.Name) or func.value not in self.group_of:
            return updated_node
        name = self.group_of[func.value]
        tight = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        )
        kernel = cst.Arg(
            value=cst.Name(self.merged[name][func.value]), keyword=cst.Name(_KERNEL), equal=tight
        )
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated_node.args]
        return updated_node.with_changes(func=cst.Name(name), args=[*args, kernel])


def merged_twin_hosts(module: cst.Module) -> cst.Module:
    """`module` with one host function for each group of hosts that differ only in their kernel."""
    merged = twin_hosts(module)
    return module.visit(MergeTwinHostsTransformer(merged)) if merged else module
