"""Gatherer: decides, for every decorator in a piece of code, whether the reference keeps or drops it.

- `torch.compile` and other compiler/tracing wrappers are dropped: the reference must have eager semantics
  (and compiling it would let a candidate be compared with Inductor's numerics, not PyTorch's).
- `torch.no_grad()` / `torch.inference_mode()` are kept as decorators: they change no values, only autograd
  state, and keeping them keeps the reference honest about where it runs.
- Python's own decorators (functools, dataclasses, property, staticmethod...) and Triton's are kept.
- A decorator defined in the repository is kept and closed over like any other helper.
- Anything else (a third-party registration hook, an unresolvable name) is dropped and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import QualifiedName

from extractors.bindings import ALLOWED_PACKAGES
from extractors.parsed_module import ParsedModule

_DROPPED_PREFIXES = (
    "torch.compile",
    "torch._dynamo",
    "torch.compiler",
    "torch.jit",
    "torch.cuda.nvtx",
    "torch.library",
    "torch.fx",
    "torch._inductor",
)
_AUTOGRAD_CONTEXTS = ("torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.set_grad_enabled")


@dataclass(frozen=True)
class DecoratorDecision:
    node: cst.Decorator
    name: str  # qualified name as far as it resolves
    keep: bool
    note: str  # what the summary says about it ("" when not worth a line)


@dataclass
class DecoratorPlan:
    decisions: list[DecoratorDecision] = field(default_factory=list)

    @property
    def dropped_ids(self) -> frozenset[int]:
        return frozenset(id(d.node) for d in self.decisions if not d.keep)

    @property
    def notes(self) -> list[str]:
        return [d.note for d in self.decisions if d.note]


class ClassifyDecorators(cst.CSTVisitor):
    def __init__(self, parsed: ParsedModule, is_repo_name: object) -> None:
        super().__init__()
        self.parsed = parsed
        self.is_repo_name = is_repo_name  # callable(root name) -> bool: does it resolve inside the repo
        self.plan = DecoratorPlan()

    @classmethod
    def of(cls, parsed: ParsedModule, node: cst.CSTNode, is_repo_name: object) -> DecoratorPlan:
        visitor = cls(parsed, is_repo_name)
        node.visit(visitor)
        return visitor.plan

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        self.plan.decisions.append(self._decide(node))
        return False

    def qualname_of(self, decorator: cst.Decorator) -> str:
        owner = self.parsed.parent(decorator)
        return owner.name.value if isinstance(owner, (cst.FunctionDef, cst.ClassDef)) else "?"

    def _decide(self, node: cst.Decorator) -> DecoratorDecision:
        expr = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        qual = self.qualname_of(node)
        qualified = sorted(q.name for q in _qualified(self.parsed, expr))
        name = qualified[0] if qualified else self.parsed.code(expr)
        root = name.split(".")[0]
        if name.startswith(_DROPPED_PREFIXES):
            return DecoratorDecision(
                node,
                name,
                False,
                f"dropped @{name} on {qual} ({self.parsed.where(node)}): "
                "the reference keeps eager PyTorch semantics",
            )
        if name.startswith(_AUTOGRAD_CONTEXTS):
            return DecoratorDecision(node, name, True, f"kept @{name} on {qual} (autograd state only)")
        if root in ("builtins", "functools", "dataclasses", "abc", "typing", "contextlib", "enum"):
            return DecoratorDecision(node, name, True, "")
        if root == "triton":
            return DecoratorDecision(
                node, name, True, f"kept @{name} on {qual}: the reference runs Triton code"
            )
        local_root = _root_name(expr)
        if local_root is not None and self.is_repo_name(local_root):  # type: ignore[operator]
            return DecoratorDecision(
                node, name, True, f"kept custom decorator @{name} on {qual} (closed over)"
            )
        if root in ALLOWED_PACKAGES:
            return DecoratorDecision(node, name, True, f"kept @{name} on {qual}")
        return DecoratorDecision(
            node,
            name,
            False,
            f"dropped @{name} on {qual} ({self.parsed.where(node)}): "
            "not from the repository, torch or the stdlib",
        )


def _qualified(parsed: ParsedModule, node: cst.CSTNode) -> set[QualifiedName]:
    value = parsed.qualified_names.get(node, set())
    if callable(value) and not isinstance(value, set):  # LibCST hands some metadata out lazily
        value = value()
    return set(value)


def _root_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Call, cst.Subscript)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr.value if isinstance(expr, cst.Name) else None
