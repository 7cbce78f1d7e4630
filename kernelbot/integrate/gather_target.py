"""Gatherer: finds the function or method to rewrite by its dotted qualname and collects what the rewrite
needs to know about it (is it a method, a staticmethod, does it return values), plus the reasons it cannot be
rewritten: async functions and generators (a guarded `return kernel(...)` changes what they are), and
decorators under which a Python guard cannot run or the function is not the code that runs (TorchScript,
Triton, overloads, abstract methods, custom-op registrations, classmethods)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

# Decorator names (as written, call arguments aside) that refuse the rewrite, with the reason.
_REFUSED_DECORATORS = {
    "torch.jit.script": "TorchScript compiles the body, and cannot compile the Python guard",
    "jit.script": "TorchScript compiles the body, and cannot compile the Python guard",
    "triton.jit": "it is a Triton kernel already",
    "triton.autotune": "it is a Triton kernel already",
    "classmethod": "classmethods are not extracted as tasks",
    "overload": "an @overload stub is not the code that runs",
    "typing.overload": "an @overload stub is not the code that runs",
    "abstractmethod": "an abstract method is not the code that runs",
    "abc.abstractmethod": "an abstract method is not the code that runs",
    "torch.library.custom_op": "a custom op's registration fixes its schema and fake implementation",
    "torch.library.impl": "a custom op's registration fixes its schema and fake implementation",
    "torch.library.register_fake": "a fake implementation must stay pure PyTorch",
}


# Decorators that compile the function they wrap (torch.compile, and SGLang's torch_compile helpers).
_COMPILE_DECORATORS = {"compile", "torch_compile", "maybe_torch_compile"}


@dataclass
class Target:
    node: cst.FunctionDef
    classes: tuple[cst.ClassDef, ...]
    is_static: bool
    returns_value: bool  # some own `return <value>`
    refusals: list[str] = field(default_factory=list)
    decorators: tuple[str, ...] = ()  # as written, call arguments aside

    @property
    def compiled(self) -> bool:
        """Decorated with torch.compile (or a wrapper named like it): the engine runs it compiled."""
        return any(name.split(".")[-1] in _COMPILE_DECORATORS for name in self.decorators)

    @property
    def is_method(self) -> bool:
        return bool(self.classes) and not self.is_static

    @property
    def owner(self) -> cst.ClassDef | None:
        return self.classes[-1] if self.classes else None


class GatherTargetVisitor(cst.CSTVisitor):
    def __init__(self, qualname: str) -> None:
        super().__init__()
        self.qualname = qualname
        self.found: list[Target] = []
        self._classes: list[cst.ClassDef] = []
        self._functions = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self._functions == 0:
            path = ".".join([*(c.name.value for c in self._classes), node.name.value])
            if path == self.qualname:
                self.found.append(_describe(node, tuple(self._classes)))
        self._functions += 1
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions -= 1


def runs_compiled(source: str, qualname: str) -> bool:
    """Whether `qualname` in the module `source` is a function the engine runs under torch.compile (its
    decorators, as Target.compiled reads them); False when the module does not define it."""
    gatherer = GatherTargetVisitor(qualname)
    try:
        cst.parse_module(source).visit(gatherer)
    except cst.ParserSyntaxError:
        return False
    return any(target.compiled for target in gatherer.found)


def _describe(node: cst.FunctionDef, classes: tuple[cst.ClassDef, ...]) -> Target:
    decorators = [_decorator_name(d) for d in node.decorators]
    body = _OwnBody()
    node.body.visit(body)
    target = Target(
        node, classes, "staticmethod" in decorators, body.returns_value, decorators=tuple(decorators)
    )
    if node.asynchronous is not None:
        target.refusals.append("it is an async function")
    if body.yields:
        target.refusals.append("it is a generator (it yields)")
    for name in decorators:
        reason = _REFUSED_DECORATORS.get(name)
        if reason:
            target.refusals.append(f"it is decorated with @{name}: {reason}")
    return target


def _decorator_name(decorator: cst.Decorator) -> str:
    expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
    return cst.Module([]).code_for_node(expr)


class _OwnBody(cst.CSTVisitor):
    """Returns and yields of the function itself, not of functions, lambdas or classes nested in it."""

    def __init__(self) -> None:
        super().__init__()
        self.returns_value = False
        self.yields = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns_value = True

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields = True
