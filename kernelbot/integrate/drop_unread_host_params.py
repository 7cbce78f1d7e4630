"""Transformer: a route's host takes only the parameters its body names, and its callers stop passing them.

A crossover's routes keep the signature their parent's entry had, and a host seeded from torch.compile's
code repeats the reference's whole signature: SGLang RMSNorm's Inductor host took `post_residual_addition`,
`quant_linear` and five more options it never reads, and the dispatcher passed all eleven, one a line, to
each of its two launches (some forty lines of a module over its budget). The entry's own unread
parameters go afterwards (drop_unread_params), once no route is passed them.

A parameter of a module-level function other than the entry goes when its body never names it and every
use of the function in the module is a call that passes it by keyword or not at all, with no `*args` or
`**kwargs` and no positional argument at or past its place; the keyword arguments that passed it go from
those calls. A function used otherwise (passed as a value, decorated, a @triton.jit kernel) keeps its
signature, and so does one with positional-only or `*args` parameters.
"""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

from evolution.mutators.crossover.alike import jit_functions
from kernelbot.integrate.drop_unread_params import unread_parameters, without_parameters

_Node = TypeVar("_Node", cst.Param, cst.Arg)


def dropped_unread_host_params(module: cst.Module, entry: str) -> cst.Module:
    """`module` with each host's unread parameters, and the arguments its calls pass for them, removed."""
    kernels = set(jit_functions(module))
    hosts = {
        s.name.value: s
        for s in module.body
        if isinstance(s, cst.FunctionDef)
        and s.name.value != entry
        and s.name.value not in kernels
        and not s.decorators
        and not s.params.posonly_params
        and not isinstance(s.params.star_arg, cst.Param)
        and s.params.star_kwarg is None
    }
    if not hosts:
        return module
    uses = _HostUses(set(hosts))
    module.visit(uses)
    dropped: dict[str, set[str]] = {}
    for name, function in hosts.items():
        if name in uses.other_uses:
            continue
        positional = [p.name.value for p in function.params.params]
        reach = max((len(call) for call in uses.positional_counts.get(name, [])), default=0)
        unread = {
            p for p in unread_parameters(function) if p not in positional or positional.index(p) >= reach
        }
        # No call passes a parameter at or past `reach` by position: dropping one there moves no argument.
        if name not in uses.star_calls and unread:
            dropped[name] = unread
    if not dropped:
        return module
    return module.visit(_DropHostParamsTransformer(dropped))


class _HostUses(cst.CSTVisitor):
    """How the module uses each host: the positional arguments of each call, the calls that pass `*args` or
    `**kwargs`, and the hosts named other than as a call's function."""

    def __init__(self, hosts: set[str]) -> None:
        super().__init__()
        self.hosts = hosts
        self.positional_counts: dict[str, list[list[cst.Arg]]] = {}  # per call
        self.star_calls: set[str] = set()
        self.other_uses: set[str] = set()
        self._callees: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in self.hosts:
            self._callees.add(id(func))
            if any(a.star for a in node.args):
                self.star_calls.add(func.value)
            positional = [a for a in node.args if a.keyword is None and not a.star]
            self.positional_counts.setdefault(func.value, []).append(positional)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.hosts and id(node) not in self._callees:
            self.other_uses.add(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._callees.add(id(node.name))  # the definition's own name is no use of it


class _DropHostParamsTransformer(cst.CSTTransformer):
    def __init__(self, dropped: dict[str, set[str]]) -> None:
        super().__init__()
        self.dropped = dropped

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        gone = self.dropped.get(updated_node.name.value)
        if not gone:
            return updated_node
        return without_parameters(updated_node, gone)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        gone = self.dropped.get(func.value) if isinstance(func, cst.Name) else None
        if not gone:
            return updated_node
        args = [a for a in updated_node.args if a.keyword is None or a.keyword.value not in gone]
        return updated_node.with_changes(args=_no_commas(args))


def _no_commas(nodes: list[_Node]) -> list[_Node]:
    # Commas as libcst places them: none after the last, so the formatter may join a shorter line.
    return [n.with_changes(comma=cst.MaybeSentinel.DEFAULT) for n in nodes]
