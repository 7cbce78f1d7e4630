"""Gatherer: what a class's `__init__` (and class body) assigns to each `self.<attr>`, so that attributes
the extracted method reads can get a default value (a literal, or the literal default of the `__init__`
parameter they were set from) and a hint for generated inputs (`torch.ones(hidden_size)`)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

import libcst as cst

from extractors.evaluate_init import UNKNOWN, InitEvaluator

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
        self._evaluator: InitEvaluator | None = None

    @classmethod
    def of(cls, module: cst.Module, class_def: cst.ClassDef) -> dict[str, InitAttr]:
        gatherer = cls(module)
        for stmt in class_def.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                gatherer._class_level(stmt)
            elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                gatherer._read_params(stmt)
                gatherer._evaluator = InitEvaluator(
                    module,
                    gatherer.self_name,
                    {k: UNKNOWN if v is _NO_VALUE else v for k, v in gatherer.init_params.items()},
                )
                gatherer._walk(stmt.body.body)
        return gatherer.attrs

    def _walk(self, body: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        """The statements of `__init__` that run for the parameters' literal defaults, in order: an `if`
        whose test those defaults decide runs the branch they select (the other is not recorded), so that
        what it assigns counts as unconditional. Anything else is visited as conditional."""
        assert self._evaluator is not None
        for line in body:
            if isinstance(line, cst.BaseSmallStatement):  # the body of a one-line `if x: ...`
                self._statement(line)
                continue
            if isinstance(line, cst.SimpleStatementLine):
                for small in line.body:
                    self._statement(small)
                continue
            if isinstance(line, cst.If):
                branch = self._branch(line)
                if branch is not None:
                    self._walk(branch)
                    continue
            line.visit(self)  # conditional: recorded as such, and what it assigns is no longer known
            for name in _assigned_names(line):
                self._evaluator.forget(name)

    def _branch(self, node: cst.If) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement] | None:
        assert self._evaluator is not None
        taken = self._evaluator.condition(node.test)
        if taken is None:
            return None
        if taken:
            return node.body.body
        if isinstance(node.orelse, cst.If):
            return self._branch(node.orelse)
        return node.orelse.body.body if node.orelse is not None else ()

    def _statement(self, small: cst.BaseSmallStatement) -> None:
        """A statement of `__init__` that runs: attributes recorded as unconditional, values followed."""
        assert self._evaluator is not None
        if isinstance(small, cst.Assign) or (isinstance(small, cst.AnnAssign) and small.value is not None):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            value = small.value
            assert value is not None
            single = len(targets) == 1
            known = self._evaluator.evaluate(value) if single else UNKNOWN
            for target in targets:
                attr = self._self_attr(target)
                if attr is not None:
                    self._record(attr, value, single, known)
                    if known is UNKNOWN:
                        self._evaluator.forget_attr(attr)
                    else:
                        self._evaluator.attrs[attr] = known
                elif single and isinstance(target, cst.Name) and known is not UNKNOWN:
                    self._evaluator.names[target.value] = known
                else:
                    for name in _assigned_names(target):
                        self._evaluator.forget(name)
        else:
            small.visit(self)
            for name in _assigned_names(small):
                self._evaluator.forget(name)

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
                self._record(attr, node.value, False)
                if self._evaluator is not None:
                    self._evaluator.forget_attr(attr)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        attr = self._self_attr(node.target)
        if attr is not None and node.value is not None:
            self._record(attr, node.value, False)
            if self._evaluator is not None:
                self._evaluator.forget_attr(attr)

    def _self_attr(self, node: cst.BaseExpression) -> str | None:
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == self.self_name
        ):
            return node.attr.value
        return None

    def _record(
        self, attr: str, value: cst.BaseExpression, unconditional: bool = True, known: object = UNKNOWN
    ) -> None:
        entry = self.attrs.setdefault(attr, InitAttr())
        entry.expressions.append(self.module.code_for_node(value))
        entry.nodes.append(value)
        entry.unconditional.append(unconditional)
        entry.init_params = self.param_sources
        literal = _literal(self.module, value)
        if literal is _NO_VALUE and isinstance(value, cst.Name) and value.value in self.init_params:
            literal = self.init_params[value.value]
        if literal is _NO_VALUE and known is not UNKNOWN:
            literal = known  # computed from the defaults (a helper of the module, an `if` they decide)
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


def _assigned_names(node: cst.CSTNode) -> set[str]:
    """Local names a statement may rebind (assignment, loop, `with ... as`, walrus, augmented assignment)."""
    names: set[str] = set()

    class _Targets(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            names.add(node.name.value)
            return False

        def _names(self, target: cst.CSTNode) -> None:
            if isinstance(target, cst.Name):
                names.add(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._names(element.value)
            elif isinstance(target, cst.StarredElement):
                self._names(target.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._names(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._names(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._names(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._names(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._names(node.name)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._names(node.target)

    node.visit(_Targets())
    return names
