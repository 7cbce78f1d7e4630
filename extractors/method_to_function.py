"""Turns a method into a plain function: `self.<attr>` reads become keyword-only parameters, writes to
`self.<attr>` become extra return values, and other methods it calls on `self` (also properties and methods of
repository base classes) are closed over as functions taking the attributes they need.

Attribute parameters of the entry get a default when `__init__` sets them from a literal (or from an
`__init__` parameter with a literal default); written-only attributes default to None.
"""

from __future__ import annotations

import functools
import re

import libcst as cst

from extractors.class_hierarchy import (
    ClassHierarchy,
    MethodInfo,
    is_binding_decorator,
    method_kind,
    own_returns,
)
from extractors.closure import ClosureBuilder, Statements, Unit
from extractors.construct_init_attrs import ConstructedAttr, construct_attribute
from extractors.errors import UnsupportedCode
from extractors.gather_init_attrs import has_default
from extractors.gather_self_uses import GatherSelfUses
from extractors.parsed_module import ParsedModule
from extractors.replace_nodes import Replacement, constant


class MethodToFunction:
    def __init__(
        self,
        builder: ClosureBuilder,
        parsed: ParsedModule,
        owner: cst.ClassDef,
        method: cst.FunctionDef,
        entry_name: str,
        qualname: str,
    ) -> None:
        self.builder = builder
        self.qualname = qualname
        self.entry_name = entry_name
        self.hierarchy = ClassHierarchy(builder, parsed, owner)
        self.entry = MethodInfo(parsed, owner, method, method_kind(parsed, method))
        self.methods: dict[str, MethodInfo] = {}
        self.param_names: dict[str, str] = {}
        self.bound_callables: dict[str, str] = {}  # self attribute -> module-level function it holds
        self.constructed: dict[str, ConstructedAttr] = {}  # self attribute -> rebuilt module-level value
        self.notes: list[str] = []

    # -- analysis ------------------------------------------------------------------------------------------
    def analyse(self) -> None:
        if self.entry.kind == "classmethod":
            raise UnsupportedCode(f"{self.qualname} is a classmethod; extract a function or a plain method")
        queue = [self.entry]
        self.methods[self.entry.node.name.value] = self.entry
        while queue:
            info = queue.pop()
            if info.kind != "static":
                info.uses = GatherSelfUses.of(info.parsed, info.node)
            if info.uses.refusals:
                raise UnsupportedCode(
                    f"cannot turn {self.qualname} into a function: {info.node.name.value} "
                    + "; ".join(info.uses.refusals)
                )
            for attr in [*info.uses.calls, *info.uses.reads]:
                callee = self.methods.get(attr) or self.hierarchy.method(attr)
                if callee is None:
                    continue
                called = attr in info.uses.calls
                if callee.kind == "classmethod":
                    raise UnsupportedCode(
                        f"{self.qualname} calls the classmethod self.{attr} (not supported)"
                    )
                if not called and callee.kind != "property":
                    raise UnsupportedCode(
                        f"{self.qualname} passes the bound method self.{attr} around as a value"
                    )
                info.callees.add(attr)
                if attr not in self.methods:
                    self.methods[attr] = callee
                    queue.append(callee)
        self._bind_callable_attributes()
        self._construct_attributes()
        self._propagate()
        self._name_parameters()

    def _bind_callable_attributes(self) -> None:
        """`self.fn = helper` in __init__ (maybe re-wrapped by torch.compile) and only ever called: call the
        module-level `helper` directly instead of asking the inputs for a callable."""
        called = {a for info in self.methods.values() for a in info.uses.calls if a not in info.callees}
        read = {a for info in self.methods.values() for a in [*info.uses.reads, *info.uses.writes]}
        for attr in sorted(called - read):
            init = self.hierarchy.init_attrs.get(attr)
            if init is None:
                continue
            names = set()
            for text in init.expressions:
                plain = re.fullmatch(r"[A-Za-z_]\w*", text.strip())
                compiled = re.fullmatch(
                    r"torch\.compile\(.*\)\(\s*(?:self\.)?([A-Za-z_]\w*)\s*\)", text.strip(), re.S
                )
                if plain:
                    names.add(plain.group(0))
                elif compiled and compiled.group(1) != attr:
                    names.add(compiled.group(1))
                elif not compiled:
                    names.add("<other>")
            if len(names) != 1 or "<other>" in names:
                continue
            function = names.pop()
            target = self.builder.resolve(self.entry.parsed, function)
            if isinstance(target, Statements) and any(
                isinstance(st, cst.FunctionDef) for st in target.statements
            ):
                self.bound_callables[attr] = function
                self.notes.append(
                    f"self.{attr} is set to {function} in __init__: calls go to it directly"
                    " (any torch.compile wrapper dropped)"
                )

    def _construct_attributes(self) -> None:
        """Attributes `__init__` builds with PyTorch and the methods only read or call (`self.silu =
        nn.SiLU(inplace)`): rebuilt once at module level instead of asking the inputs for them."""
        used = {
            a
            for info in self.methods.values()
            for a in [*info.uses.calls, *info.uses.reads]
            if a not in info.callees and a not in self.bound_callables
        }
        written = {a for info in self.methods.values() for a in info.uses.writes}
        for attr in sorted(used - written - set(self.methods)):
            init = self.hierarchy.init_attrs.get(attr)
            if has_default(init):
                continue  # a literal: kept as the parameter's default
            built = construct_attribute(self.builder, self.entry.owner.name.value, attr, init)
            if built is not None:
                self.constructed[attr] = built
                self.notes.append(built.note)

    def _propagate(self) -> None:
        for info in self.methods.values():
            direct_calls = {
                a
                for a in info.uses.calls
                if a not in info.callees and a not in self.bound_callables and a not in self.constructed
            }
            info.reads = (set(info.uses.reads) - info.callees - set(self.constructed)) | direct_calls
            info.writes = list(info.uses.writes)
        changed = True
        while changed:
            changed = False
            for info in self.methods.values():
                for name in info.callees:
                    callee = self.methods[name]
                    before = (len(info.reads), len(info.writes))
                    info.reads |= callee.reads | set(callee.writes)
                    info.writes += [w for w in callee.writes if w not in info.writes]
                    changed |= before != (len(info.reads), len(info.writes))
        for info in self.methods.values():
            info.writes.sort(key=functools.partial(self._write_position, info))
        for info in self.methods.values():
            if info is not self.entry and info.writes and info.returns_value:
                for caller in self.methods.values():
                    if info.node.name.value in caller.callees:
                        self._require_statement_calls(caller, info)

    def _write_position(self, info: MethodInfo, attr: str) -> int:
        """Where `attr` is first written in `info`: directly, or by a call of a method that writes it."""
        order = info.uses.order
        positions = [order.get(id(n), 10**9) for n in info.uses.writes.get(attr, [])]
        for name in info.callees:
            if attr in self.methods[name].writes:
                calls = info.uses.calls.get(name, []) + info.uses.reads.get(name, [])
                positions += [order.get(id(getattr(c, "func", c)), 10**9) for c in calls]
        return min(positions, default=10**9)

    def _require_statement_calls(self, caller: MethodInfo, callee: MethodInfo) -> None:
        for call in caller.uses.calls.get(callee.node.name.value, []):
            if not isinstance(caller.parsed.parent(call), cst.Expr):
                raise UnsupportedCode(
                    f"{self.qualname}: self.{callee.node.name.value}(...) at {caller.parsed.where(call)} "
                    "both returns a value and writes self state; only statement calls of such methods "
                    "are supported"
                )

    def _name_parameters(self) -> None:
        taken: set[str] = set()
        for info in self.methods.values():
            taken |= _identifiers(info.parsed, info.node)
        attrs = sorted(self.entry.reads | set(self.entry.writes), key=self._first_use)
        for attr in attrs:
            self.param_names[attr] = f"self_{attr}" if attr in taken else attr
        for name, info in self.methods.items():
            if info is self.entry:
                info.function_name = self.entry_name
            else:
                key = ("method", str(info.parsed.path), info.owner.name.value, name)
                info.function_name = self.builder.names.claim(key, f"_{_snake(info.owner.name.value)}_{name}")

    def _first_use(self, attr: str) -> tuple[int, str]:
        uses = self.entry.uses
        nodes = [*uses.reads.get(attr, []), *uses.writes.get(attr, [])]
        return (min((uses.order.get(id(n), 10**9) for n in nodes), default=10**9), attr)

    # -- emission ------------------------------------------------------------------------------------------
    def emit(self) -> None:
        """Process every closed method as a unit of the closure (helpers first, the entry last)."""
        ordered = [i for i in self.methods.values() if i is not self.entry] + [self.entry]
        for info in ordered:
            label = f"{info.parsed.name}:{info.owner.name.value}.{info.node.name.value}"
            if info is not self.entry:
                self.builder.report.closed_over.append(f"{label} (as {info.function_name})")
            self.builder.process(Unit(info.parsed, info.node, label), extra=self._replacements(info))

    def _attr_args(self, info: MethodInfo) -> list[cst.Arg]:
        attrs = sorted(info.reads | set(info.writes), key=self._first_use)
        return [cst.Arg(cst.Name(self.param_names[a]), keyword=cst.Name(self.param_names[a])) for a in attrs]

    def _replacements(self, info: MethodInfo) -> dict[int, Replacement]:
        out: dict[int, Replacement] = {}
        for attr, nodes in info.uses.reads.items():
            for node in nodes:
                if attr in info.callees:  # a property
                    callee = self.methods[attr]
                    out[id(node)] = constant(
                        cst.Call(cst.Name(callee.function_name), self._attr_args(callee))
                    )
                elif attr in self.constructed:
                    out[id(node)] = constant(cst.Name(self.constructed[attr].name))
                else:
                    out[id(node)] = constant(cst.Name(self.param_names[attr]))
        for attr, nodes in info.uses.writes.items():
            for node in nodes:
                out[id(node)] = constant(cst.Name(self.param_names[attr]))
        for attr, calls in info.uses.calls.items():
            for call in calls:
                if attr in info.callees:
                    self._rewrite_call(info, self.methods[attr], call, out)
                elif attr in self.bound_callables:
                    emitted = self.builder.name_for(self.entry.parsed, self.bound_callables[attr], lazy=True)
                    out[id(call.func)] = constant(cst.Name(emitted))
                elif attr in self.constructed:
                    out[id(call.func)] = constant(cst.Name(self.constructed[attr].name))
                else:
                    out[id(call.func)] = constant(cst.Name(self.param_names[attr]))
        for attr, tests in info.uses.presence.items():
            # the extracted instance is the one the class builds: it has an attribute its `__init__` or body
            # assigns, or a method; one set only from outside (another backend's setup) it lacks
            present = attr in self.hierarchy.init_attrs or self.hierarchy.method(attr) is not None
            for test in tests:
                out[id(test)] = constant(cst.Name(str(present)))
            note = f"hasattr(self, {attr!r}) is {present}: decided from what the class defines"
            if note not in self.notes:
                self.notes.append(note)
        if info.writes:
            for ret in own_returns(info.node):
                out[id(ret)] = self._return_with_writes(info)
        out[id(info.node)] = self._finish_signature(info)
        return out

    def _rewrite_call(
        self, caller: MethodInfo, callee: MethodInfo, call: cst.Call, out: dict[int, Replacement]
    ) -> None:
        extra = self._attr_args(callee) if callee.kind != "static" else []
        name = callee.function_name

        def rewrite(updated: cst.CSTNode) -> cst.CSTNode:
            updated_call = cst.ensure_type(updated, cst.Call)
            return updated_call.with_changes(func=cst.Name(name), args=[*updated_call.args, *extra])

        out[id(call)] = rewrite
        if not callee.writes:
            return
        parent = caller.parsed.parent(call)
        names = [cst.Name(self.param_names[w]) for w in callee.writes]
        if callee.returns_value:
            names.insert(0, cst.Name("_"))
        if not isinstance(parent, cst.Expr):
            raise UnsupportedCode(
                f"{self.qualname}: self.{callee.node.name.value}(...) at {caller.parsed.where(call)} "
                "writes self state inside an expression; call it as a statement"
            )
        target = names[0] if len(names) == 1 else cst.Tuple([cst.Element(n) for n in names])
        out[id(parent)] = lambda u: cst.Assign([cst.AssignTarget(target)], u.value)  # type: ignore[attr-defined]

    def _return_with_writes(self, info: MethodInfo) -> Replacement:
        names = [cst.Element(cst.Name(self.param_names[w])) for w in info.writes]

        def rewrite(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Return)
            if info.returns_value:
                value = updated.value or cst.Name("None")
                first = (
                    value
                    if not isinstance(value, cst.Tuple)
                    else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                )
                return updated.with_changes(value=cst.Tuple([cst.Element(first), *names]))
            single = names[0].value if len(names) == 1 else cst.Tuple(names)
            return updated.with_changes(value=single)

        return rewrite

    def _finish_signature(self, info: MethodInfo) -> Replacement:
        is_entry = info is self.entry
        attrs = sorted(info.reads | set(info.writes), key=self._first_use)

        def finish(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.FunctionDef)
            params = updated.params
            positional = list(params.params)
            if info.kind != "static" and positional:
                positional = positional[1:]
            kwonly = list(params.kwonly_params)
            for attr in attrs:
                default: cst.BaseExpression | None = None
                init = self.hierarchy.init_attrs.get(attr)
                if is_entry and attr in info.writes and attr not in info.reads:
                    default = cst.Name("None")
                elif is_entry and has_default(init):
                    default = cst.parse_expression(repr(init.default))
                kwonly.append(cst.Param(cst.Name(self.param_names[attr]), default=default))
            star = params.star_arg
            if kwonly and not isinstance(star, (cst.Param, cst.ParamStar)):
                star = cst.ParamStar()
            decorators = [d for d in updated.decorators if not is_binding_decorator(d)]
            body = updated.body
            if info.writes and not _ends_in_exit(body):
                tail = self._return_with_writes(info)(cst.Return(value=None))
                body = body.with_changes(body=[*body.body, cst.SimpleStatementLine([tail])])  # type: ignore[list-item]
            return updated.with_changes(
                name=cst.Name(info.function_name),
                params=params.with_changes(params=positional, kwonly_params=kwonly, star_arg=star),
                decorators=decorators,
                body=body,
            )

        return finish

    def outputs(self) -> list[str]:
        outs = ["return"] if self.entry.returns_value or not self.entry.writes else []
        return outs + [f"self.{w}" for w in self.entry.writes]


def _ends_in_exit(body: cst.BaseSuite) -> bool:
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return False
    last = body.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise))


def _identifiers(parsed: ParsedModule, node: cst.FunctionDef) -> set[str]:
    names: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            parent = parsed.parent(name)
            if isinstance(parent, cst.Attribute) and parent.attr is name:
                return
            if isinstance(parent, cst.Arg) and parent.keyword is name:
                return
            names.add(name.value)

    node.visit(_Names())
    return names


def _snake(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def entry_name_for(qualname: str) -> str:
    parts = qualname.split(".")
    if len(parts) == 1:
        return parts[0]
    return f"{_snake(parts[-2])}_{parts[-1].lstrip('_')}"
