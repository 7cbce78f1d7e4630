"""LMDeploy's op selection, read and written: each backend's `build_op(spec)` (backends/<name>/op_backend.py)
returns the implementation for an op's build spec through one `if isinstance(spec, <Spec>): ... return
cast(ImplT, <Impl>(<args>))` block per op.

`find_mapping` reads the block that builds a given Impl class (the default backend's, for the spec and its
constructor arguments); `MapBuildSpecTransformer` makes a backend's build_op build a new Impl for that spec:
it replaces the body of the backend's own block for the spec, or adds one before build_op's final
`return super().build_op(...)`, importing the spec where build_op imports the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from kernelbot.integrate.errors import IntegrationError

_EMPTY = cst.Module([])


@dataclass(frozen=True)
class Mapping:
    spec: str  # the build spec class, e.g. "GeluAndMulBuildSpec"
    spec_module: str  # where build_op imports it from, dots included: "..activation"
    arguments: str  # the Impl's constructor arguments as written: "spec.approximate"


def find_mapping(op_backend_source: str, impl: str) -> Mapping | None:
    """The block of `build_op` in this op_backend.py that builds `impl`, or None."""
    build_op = _build_op(cst.parse_module(op_backend_source))
    if build_op is None:
        return None
    imports = _spec_imports(build_op)
    for statement in build_op.body.body:
        spec = _isinstance_spec(statement)
        if spec is None:
            continue
        calls = m.findall(statement, m.Call(func=m.Name(impl)))
        if calls:
            call = calls[0]
            assert isinstance(call, cst.Call)
            arguments = ", ".join(_EMPTY.code_for_node(a).strip().rstrip(",") for a in call.args)
            return Mapping(spec, imports.get(spec, ""), arguments)
    return None


def mapped_impl(op_backend_source: str, spec: str) -> str | None:
    """The Impl class this op_backend.py's build_op builds for `spec` today, or None."""
    build_op = _build_op(cst.parse_module(op_backend_source))
    if build_op is None:
        return None
    for statement in build_op.body.body:
        if _isinstance_spec(statement) == spec:
            for call in m.findall(statement, m.Call(func=m.Name())):
                name = call.func.value  # type: ignore[attr-defined]
                if name.endswith("Impl") or name.startswith("_build"):
                    return name
    return None


class MapBuildSpecTransformer(cst.CSTTransformer):
    def __init__(self, mapping: Mapping, impl_module: str, impl: str) -> None:
        super().__init__()
        self.mapping, self.impl_module, self.impl = mapping, impl_module, impl
        self.mapped = 0

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if updated_node.name.value != "build_op":
            return updated_node
        block = cst.parse_statement(
            f"if isinstance(spec, {self.mapping.spec}):\n"
            f"    from {self.impl_module} import {self.impl}\n"
            f"    return cast(ImplT, {self.impl}({self.mapping.arguments}))\n"
        )
        suite = updated_node.body
        if not isinstance(suite, cst.IndentedBlock):
            raise IntegrationError("build_op is a one-line function: kernelbot cannot add a block to it")
        body: list[cst.BaseStatement] = list(suite.body)
        for i, statement in enumerate(body):
            if _isinstance_spec(statement) == self.mapping.spec:
                body[i] = statement.with_changes(body=block.body)
                break
        else:
            if not body or not m.matches(body[-1], m.SimpleStatementLine(body=[m.Return()])):
                raise IntegrationError("build_op does not end with a return kernelbot can add a block before")
            body.insert(len(body) - 1, block)
            body = _import_spec(body, self.mapping)
        self.mapped += 1
        return updated_node.with_changes(body=suite.with_changes(body=body))


def _import_spec(body: list[cst.BaseStatement], mapping: Mapping) -> list[cst.BaseStatement]:
    dots = len(mapping.spec_module) - len(mapping.spec_module.lstrip("."))
    module = mapping.spec_module.lstrip(".")
    last_import = -1
    for i, statement in enumerate(body):
        if not m.matches(statement, m.SimpleStatementLine(body=[m.ImportFrom()])):
            continue
        last_import = i
        node = statement.body[0]  # type: ignore[attr-defined]
        same = len(node.relative) == dots and _EMPTY.code_for_node(node.module or cst.Name("")) == module
        if same and not isinstance(node.names, cst.ImportStar):
            names = [a.name.value for a in node.names]
            if mapping.spec in names:
                return body
            aliases = [cst.ImportAlias(cst.Name(n)) for n in sorted([*names, mapping.spec])]
            body[i] = statement.with_changes(body=[node.with_changes(names=aliases, lpar=None, rpar=None)])
            return body
    new = cst.parse_statement(f"from {mapping.spec_module} import {mapping.spec}\n")
    body.insert(last_import + 1, new)
    return body


def _build_op(module: cst.Module) -> cst.FunctionDef | None:
    found = m.findall(module, m.FunctionDef(name=m.Name("build_op")))
    return found[0] if found else None  # type: ignore[return-value]


def _spec_imports(build_op: cst.FunctionDef) -> dict[str, str]:
    imports = {}
    for node in m.findall(build_op, m.ImportFrom()):
        assert isinstance(node, cst.ImportFrom)
        if isinstance(node.names, cst.ImportStar):
            continue
        where = "." * len(node.relative) + (_EMPTY.code_for_node(node.module) if node.module else "")
        for alias in node.names:
            imports[_EMPTY.code_for_node(alias.name)] = where
    return imports


def _isinstance_spec(statement: cst.CSTNode) -> str | None:
    if not isinstance(statement, cst.If):
        return None
    test = statement.test
    if m.matches(test, m.Call(func=m.Name("isinstance"), args=[m.Arg(m.Name("spec")), m.Arg(m.Name())])):
        return test.args[1].value.value  # type: ignore[attr-defined]
    return None
