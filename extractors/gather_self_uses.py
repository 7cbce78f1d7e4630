"""Gatherer: how a method uses `self` — attribute reads, attribute writes, calls of `self.<name>(...)`.

Anything else (passing `self` on, `super()`, deleting an attribute, writing `self` state from a nested
function) cannot become plain parameters and outputs, so it is recorded as a refusal with its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from extractors.parsed_module import ParsedModule


@dataclass
class SelfUses:
    reads: dict[str, list[cst.Attribute]] = field(default_factory=dict)
    writes: dict[str, list[cst.Attribute]] = field(default_factory=dict)
    calls: dict[str, list[cst.Call]] = field(default_factory=dict)  # self.<attr>(...) call nodes
    refusals: list[str] = field(default_factory=list)
    # `hasattr(self, "name")` call nodes by name: decided at extraction time from what the class defines
    presence: dict[str, list[cst.Call]] = field(default_factory=dict)
    order: dict[int, int] = field(default_factory=dict)  # id(attribute node) -> pre-order position

    @property
    def attributes(self) -> set[str]:
        return set(self.reads) | set(self.writes) | set(self.calls)


class GatherSelfUses(cst.CSTVisitor):
    def __init__(self, parsed: ParsedModule, method: cst.FunctionDef) -> None:
        super().__init__()
        self.parsed = parsed
        self.method = method
        self.uses = SelfUses()

    @classmethod
    def of(cls, parsed: ParsedModule, method: cst.FunctionDef) -> SelfUses:
        gatherer = cls(parsed, method)
        method.visit(gatherer)
        gatherer.collect()
        return gatherer.uses

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.uses.order.setdefault(id(node), len(self.uses.order))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "super":
            self.uses.refusals.append(f"calls super() at {self.parsed.where(node)}")

    def collect(self) -> None:
        params = self.method.params.params
        if not params:
            self.uses.refusals.append(f"{self.method.name.value} takes no `self` parameter")
            return
        self_param = params[0]
        scope = self.parsed.scope_of(self.method.body)
        if not isinstance(scope, FunctionScope):
            return
        assignment = next(
            (
                a
                for a in scope.assignments[self_param.name.value]
                if isinstance(a, Assignment) and a.node is self_param
            ),
            None,
        ) or next(iter(scope.assignments[self_param.name.value]), None)
        if assignment is None:
            return
        for access in assignment.references:
            self._classify(access.node, access.scope is not scope)

    def _presence_test(self, node: cst.CSTNode, parent: cst.CSTNode | None) -> tuple[str, cst.Call] | None:
        """`hasattr(self, "name")`: the name and the call, where `self` is the first of two arguments."""
        if not isinstance(parent, cst.Arg) or parent.value is not node:
            return None
        call = self.parsed.parent(parent)
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value == "hasattr"
            and len(call.args) == 2
            and call.args[0] is parent
            and isinstance(call.args[1].value, cst.SimpleString)
        ):
            return None
        name = call.args[1].value.evaluated_value
        return (name, call) if isinstance(name, str) and name.isidentifier() else None

    def _classify(self, node: cst.CSTNode, nested: bool) -> None:
        parent = self.parsed.parent(node)
        presence = self._presence_test(node, parent)
        if presence is not None:
            self.uses.presence.setdefault(presence[0], []).append(presence[1])
            return
        if not (isinstance(parent, cst.Attribute) and parent.value is node):
            self.uses.refusals.append(
                f"uses `self` itself (not one of its attributes) at {self.parsed.where(node)}"
            )
            return
        attr = parent.attr.value
        grand = self.parsed.parent(parent)
        if isinstance(grand, cst.Call) and grand.func is parent:
            self.uses.calls.setdefault(attr, []).append(grand)
            return
        role = self._target_role(parent)
        where = self.parsed.where(node) if role == "del" or (nested and role != "read") else ""
        if role == "del":
            self.uses.refusals.append(f"deletes self.{attr} at {where}")
        elif role in ("write", "augmented"):
            if nested:
                self.uses.refusals.append(f"writes self.{attr} inside a nested function at {where}")
            self.uses.writes.setdefault(attr, []).append(parent)
            if role == "augmented":
                self.uses.reads.setdefault(attr, []).append(parent)
        else:
            self.uses.reads.setdefault(attr, []).append(parent)

    def _target_role(self, node: cst.CSTNode) -> str:
        child: cst.CSTNode = node
        parent = self.parsed.parent(child)
        while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child, parent = parent, self.parsed.parent(parent)
        if isinstance(parent, cst.AssignTarget) and parent.target is child:
            return "write"
        if isinstance(parent, (cst.AnnAssign, cst.For, cst.NamedExpr)) and parent.target is child:
            return "write"
        if isinstance(parent, cst.AsName) and parent.name is child:
            return "write"
        if isinstance(parent, cst.AugAssign) and parent.target is child:
            return "augmented"
        if isinstance(parent, cst.Del):
            return "del"
        return "read"
