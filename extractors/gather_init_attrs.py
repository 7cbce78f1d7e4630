"""Gatherer: what a class's `__init__` (and class body) assigns to each `self.<attr>`, so that attributes
the extracted method reads can get a default value (a literal, or the literal default of the `__init__`
parameter they were set from) and a hint for generated inputs (`torch.ones(hidden_size)`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TypeGuard

import libcst as cst

_NO_VALUE = object()


@dataclass(frozen=True)
class InitParam:
    """A parameter of `__init__`: its default's source (None without one) and annotation's source."""

    default: str | None
    annotation: str


@dataclass
class InitAttr:
    values: list[object] = field(default_factory=list)  # literal values seen
    expressions: list[str] = field(default_factory=list)  # source of every assignment
    opaque: bool = False  # at least one assignment is not a literal
    # Every assigned value node, and whether each is a plain statement of __init__'s own body (not inside an
    # `if`, a loop or a nested function), so that it runs whatever the constructor's arguments are.
    nodes: list[cst.BaseExpression] = field(default_factory=list)
    unconditional: list[bool] = field(default_factory=list)
    init_params: dict[str, InitParam] = field(default_factory=dict)  # of the __init__ that assigns it
    owner: object = None  # the ParsedModule of the class that assigns it (set by ClassHierarchy)

    @property
    def default(self) -> object:
        """The literal default if every assignment agrees on one; _NO_VALUE otherwise."""
        if self.opaque or not self.values:
            return _NO_VALUE
        first = self.values[0]
        return first if all(repr(v) == repr(first) for v in self.values) else _NO_VALUE


def has_default(attr: InitAttr | None) -> TypeGuard[InitAttr]:
    return attr is not None and attr.default is not _NO_VALUE


class GatherInitAttrs(cst.CSTVisitor):
    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.module = module
        self.attrs: dict[str, InitAttr] = {}
        self.init_params: dict[str, object] = {}
        self.param_sources: dict[str, InitParam] = {}
        self.self_name = "self"
        self._top_level: set[int] = set()  # ids of the Assign nodes directly in __init__'s body

    @classmethod
    def of(cls, module: cst.Module, class_def: cst.ClassDef) -> dict[str, InitAttr]:
        gatherer = cls(module)
        for stmt in class_def.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                gatherer._class_level(stmt)
            elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                gatherer._read_params(stmt)
                gatherer._top_level = {
                    id(small)
                    for line in stmt.body.body
                    if isinstance(line, cst.SimpleStatementLine)
                    for small in line.body
                }
                stmt.body.visit(gatherer)
        return gatherer.attrs

    def _class_level(self, line: cst.SimpleStatementLine) -> None:
        for small in line.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    self._record(target.value, small.value)
            elif (
                isinstance(small, cst.AnnAssign)
                and small.value is not None
                and isinstance(small.target, cst.Name)
            ):
                self._record(small.target.value, small.value)

    def _read_params(self, init: cst.FunctionDef) -> None:
        params = [*init.params.params, *init.params.kwonly_params]
        if init.params.params:
            self.self_name = init.params.params[0].name.value
        for param in params[1:] if init.params.params else params:
            value = _literal(self.module, param.default) if param.default is not None else _NO_VALUE
            self.init_params[param.name.value] = value
            self.param_sources[param.name.value] = InitParam(
                None if param.default is None else self.module.code_for_node(param.default),
                "" if param.annotation is None else self.module.code_for_node(param.annotation.annotation),
            )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # nested functions in __init__ do not initialise attributes

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = self._self_attr(target.target)
            if attr is not None:
                self._record(attr, node.value, len(node.targets) == 1 and id(node) in self._top_level)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        attr = self._self_attr(node.target)
        if attr is not None and node.value is not None:
            self._record(attr, node.value, id(node) in self._top_level)

    def _self_attr(self, node: cst.BaseExpression) -> str | None:
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == self.self_name
        ):
            return node.attr.value
        return None

    def _record(self, attr: str, value: cst.BaseExpression, unconditional: bool = True) -> None:
        entry = self.attrs.setdefault(attr, InitAttr())
        entry.expressions.append(self.module.code_for_node(value))
        entry.nodes.append(value)
        entry.unconditional.append(unconditional)
        entry.init_params = self.param_sources
        literal = _literal(self.module, value)
        if literal is _NO_VALUE and isinstance(value, cst.Name) and value.value in self.init_params:
            literal = self.init_params[value.value]
        if literal is _NO_VALUE:
            entry.opaque = True
        else:
            entry.values.append(literal)


def _literal(module: cst.Module, node: cst.BaseExpression | None) -> object:
    if node is None:
        return _NO_VALUE
    try:
        return ast.literal_eval(module.code_for_node(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NO_VALUE
