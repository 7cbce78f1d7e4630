"""The class side of turning a method into a function (extractors.method_to_function): `MethodInfo`, what the
extractor knows about one method (its kind, how it uses `self`, the attributes it reads and writes through
every method it calls); `ClassHierarchy`, the method's class and its base classes found in the repository, in
which `self.<name>` is looked up and whose `__init__`s give attribute defaults; and the small questions asked
of a method's definition (is it static, a classmethod, a property; which of its decorators only bind it to the
class; which `return`s are its own rather than a nested function's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from extractors.closure import ClosureBuilder, Statements, require_intact
from extractors.gather_init_attrs import GatherInitAttrs, InitAttr
from extractors.gather_self_uses import SelfUses
from extractors.parsed_module import ParsedModule

PROPERTY_DECORATORS = {"property", "functools.cached_property", "cached_property"}


@dataclass
class MethodInfo:
    parsed: ParsedModule
    owner: cst.ClassDef
    node: cst.FunctionDef
    kind: str  # "method" | "static" | "property" | "classmethod"
    uses: SelfUses = field(default_factory=SelfUses)
    reads: set[str] = field(default_factory=set)  # transitive, in attribute names
    writes: list[str] = field(default_factory=list)  # transitive, first-seen order
    callees: set[str] = field(default_factory=set)
    function_name: str = ""

    @property
    def returns_value(self) -> bool:
        return any(r.value is not None for r in own_returns(self.node))


class ClassHierarchy:
    """A class and its base classes found in the repository, in (simplified, depth-first) MRO order."""

    def __init__(self, builder: ClosureBuilder, parsed: ParsedModule, class_def: cst.ClassDef) -> None:
        self.classes: list[tuple[ParsedModule, cst.ClassDef]] = []
        self._collect(builder, parsed, class_def, depth=0)
        self.init_attrs: dict[str, InitAttr] = {}
        for owner_parsed, owner in reversed(self.classes):
            attrs = GatherInitAttrs.of(owner_parsed.module, owner)
            for attr in attrs.values():
                attr.owner = owner_parsed
            self.init_attrs.update(attrs)

    def _collect(
        self, builder: ClosureBuilder, parsed: ParsedModule, class_def: cst.ClassDef, depth: int
    ) -> None:
        self.classes.append((parsed, class_def))
        if depth > 8:
            return
        for base in class_def.bases:
            if not isinstance(base.value, cst.Name) or base.keyword is not None:
                continue
            target = builder.resolve(parsed, base.value.value)
            if not isinstance(target, Statements):
                continue
            require_intact(target)
            for stmt in target.statements:
                if isinstance(stmt, cst.ClassDef) and stmt.name.value == target.name:
                    self._collect(builder, target.parsed, stmt, depth + 1)

    def method(self, name: str) -> MethodInfo | None:
        for parsed, class_def in self.classes:
            for stmt in class_def.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                    return MethodInfo(parsed, class_def, stmt, method_kind(parsed, stmt))
        return None


def method_kind(parsed: ParsedModule, node: cst.FunctionDef) -> str:
    for decorator in node.decorators:
        code = parsed.code(decorator.decorator)
        if code == "staticmethod":
            return "static"
        if code == "classmethod":
            return "classmethod"
        if code in PROPERTY_DECORATORS:
            return "property"
    return "method"


def is_binding_decorator(decorator: cst.Decorator) -> bool:
    expr = decorator.decorator
    code = cst.Module([]).code_for_node(expr)
    return code in {"staticmethod", "classmethod", *PROPERTY_DECORATORS} or code.endswith(".setter")


def own_returns(node: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class _Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_ClassDef(self, inner: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, ret: cst.Return) -> None:
            found.append(ret)

    node.visit(_Returns())
    return found
