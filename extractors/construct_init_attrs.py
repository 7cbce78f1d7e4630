"""Rebuilds an attribute that `__init__` builds with PyTorch (`self.silu = nn.SiLU(inplace)`, `self.act =
nn.GELU(approximate=approximate)`) as a module-level value of the reference, built the way `__init__` builds
it: the constructor's arguments come from the literals of the call, the defaults of `__init__`'s parameters,
or, for a parameter without a default, a drafted value (a `bool` is False: the out-of-place path, which
writes no input). The method then uses that value instead of taking the attribute as a parameter: no input
has to carry a module, and no guard has to compare one.

Only values that are a pure function of PyTorch and of those arguments are rebuilt: a call (or attribute) of a
name imported from torch, assigned once, unconditionally, in `__init__`'s own body.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass

import libcst as cst
import torch

from extractors.bindings import ThirdParty
from extractors.closure import ClosureBuilder, Unit
from extractors.gather_init_attrs import InitAttr, InitParam
from extractors.parsed_module import ParsedModule

# Drafted values for `__init__` parameters without a default, by annotation: what the module is built with.
_DRAFTED = {"bool": ("False", "the out-of-place path: it writes no input")}


@dataclass(frozen=True)
class ConstructedAttr:
    attr: str
    name: str  # the module-level name in the reference
    source: str  # the expression it is built from, as emitted
    note: str  # what was built and from what, for the reference's notes and task.toml


def construct_attribute(
    builder: ClosureBuilder, owner_name: str, attr: str, init: InitAttr | None
) -> ConstructedAttr | None:
    """The rebuilt attribute, or None where it is not a pure function of PyTorch and the arguments."""
    if init is None or len(init.nodes) != 1 or not init.unconditional[0]:
        return None
    parsed = init.owner
    if not isinstance(parsed, ParsedModule):
        return None
    value = init.nodes[0]
    root = _root(value)
    if root is None:
        return None
    binding = builder.resolve(parsed, root)
    if not isinstance(binding, ThirdParty) or binding.package != "torch":
        return None
    substitutions: dict[str, tuple[str, str]] = {}  # parameter -> (source, why)
    for name in _free_names(value):
        if name == root:
            continue
        param = init.init_params.get(name)
        if param is None:
            return None  # a global or local of __init__ other than its parameters: not rebuilt
        drafted = _argument(param)
        if drafted is None:
            return None
        substitutions[name] = drafted
    values = {k: v[0] for k, v in substitutions.items()}
    plain = cst.Module([]).code_for_node(_substitute(value, root, root, values))
    if not _stateless(plain, root, binding):
        return None
    emitted_root = builder.name_for(parsed, root)
    rebuilt = _substitute(value, root, emitted_root, values)
    name = builder.names.claim(("init-attr", str(parsed.path), owner_name, attr), f"_{attr}")
    statement = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], rebuilt)])
    source = cst.Module([]).code_for_node(rebuilt)
    builder.units.append(Unit(parsed, statement, f"{parsed.name}:{owner_name}.__init__ (self.{attr})"))
    said = "; ".join(f"{k}={v[0]} ({v[1]})" for k, v in substitutions.items())
    note = f"self.{attr} = {init.expressions[0]} in __init__: built once as {name} = {source}"
    return ConstructedAttr(attr, name, source, note + (f" with {said}" if said else ""))


def _stateless(source: str, root: str, binding: ThirdParty) -> bool:
    """Whether the value is a module without parameters or buffers, or a function: something that computes,
    not weights (weights stay inputs, so that a kernel is judged on random ones)."""
    try:
        module = importlib.import_module(binding.module)
        if binding.dotted:
            module = importlib.import_module(binding.package)
        scope = {root: module if binding.name is None else getattr(module, binding.name)}
        built = eval(source, scope)  # PyTorch names and literals only (checked above)
    except Exception:  # not buildable here: left a parameter
        return False
    if isinstance(built, torch.nn.Module):
        return not any(True for _ in built.parameters()) and not any(True for _ in built.buffers())
    return callable(built) and not isinstance(built, (type, torch.Tensor))


def _argument(param: InitParam) -> tuple[str, str] | None:
    if param.default is not None:
        try:
            ast.literal_eval(param.default)
        except (ValueError, SyntaxError):
            return None
        return param.default, "__init__'s default"
    annotation = param.annotation.replace("typing.", "").strip()
    drafted = _DRAFTED.get(annotation)
    if drafted is None:
        return None
    return drafted[0], f"no default: drafted, {drafted[1]}"


def _root(value: cst.BaseExpression) -> str | None:
    """`nn` of `nn.SiLU(inplace)` or `torch.nn.functional.silu`: the name the call or chain starts at."""
    node: cst.BaseExpression = value.func if isinstance(value, cst.Call) else value
    if not isinstance(node, cst.Attribute):
        return None
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _free_names(value: cst.BaseExpression) -> set[str]:
    names: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False  # `.attr` is no name

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False  # `keyword=` is no name

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            names.add("<lambda>")  # never rebuilt
            return False

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    value.visit(_Names())
    return names


def _substitute(
    value: cst.BaseExpression, root: str, emitted_root: str, values: dict[str, str]
) -> cst.BaseExpression:
    out = value.visit(_Substitute(root, emitted_root, values))
    if not isinstance(out, cst.BaseExpression):  # names are replaced by names: an expression stays one
        raise TypeError(f"substituting into {cst.Module([]).code_for_node(value)} gave {type(out).__name__}")
    return out


class _Substitute(cst.CSTTransformer):
    def __init__(self, root: str, emitted_root: str, values: dict[str, str]) -> None:
        super().__init__()
        self.root = root
        self.emitted_root = emitted_root
        self.values = values
        self.skip: set[int] = set()  # `.attr` and `keyword=` names: no references

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if id(original_node) in self.skip:
            return updated_node
        if original_node.value in self.values:
            return cst.parse_expression(self.values[original_node.value])
        if original_node.value == self.root:
            return updated_node.with_changes(value=self.emitted_root)
        return updated_node
