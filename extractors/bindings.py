"""What a name used by the extracted code stands for, and how one import alias is resolved.

Names resolve to code of the same repository (closed over), to a module of the repository (its attributes
are closed over one by one), to an import the reference may keep (stdlib, torch, triton, numpy), or to
something unavailable (another third-party package, an unresolvable name), which the reference replaces by
a stub that raises when reached and the summary reports.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import libcst as cst

from extractors.repo_index import ModuleRef, RepoIndex

# Packages the emitted reference may import: it must run with torch alone.
ALLOWED_PACKAGES = frozenset({"torch", "triton", "numpy"}) | frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class RepoName:
    """A name defined (or re-exported) by a module of the repository."""

    module: ModuleRef
    name: str


@dataclass(frozen=True)
class RepoModule:
    module: ModuleRef


@dataclass(frozen=True)
class ThirdParty:
    """An import statement kept as is in the reference. `bound` is the local name it creates."""

    module: str
    name: str | None  # `from module import name`; None for `import module [as bound]`
    bound: str
    dotted: bool = False  # `import a.b.c` (binds `a`)

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    def statement(self, as_name: str) -> str:
        if self.dotted:
            return f"import {self.module}"
        if self.name is None:
            return f"import {self.module}" if as_name == self.module else f"import {self.module} as {as_name}"
        return f"from {self.module} import {self.name}" + (f" as {as_name}" if as_name != self.name else "")


@dataclass(frozen=True)
class Unavailable:
    name: str
    reason: str


Binding = RepoName | RepoModule | ThirdParty | Unavailable


def dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_name(node.value)}.{node.attr.value}"
    raise ValueError(f"not a dotted name: {type(node).__name__}")


def import_aliases(node: cst.Import | cst.ImportFrom) -> list[cst.ImportAlias]:
    if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
        return []
    return list(node.names)  # type: ignore[arg-type]


def bound_name(node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return dotted_name(alias.asname.name)
    return dotted_name(alias.name)


def from_module(index: RepoIndex, current: ModuleRef, node: cst.ImportFrom) -> str:
    module = dotted_name(node.module) if node.module is not None else None
    dots = len(node.relative)
    if dots:
        return index.resolve_relative(current, dots, module)
    return module or ""


def resolve_alias(
    index: RepoIndex, current: ModuleRef, node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias
) -> Binding | None:
    """What one alias of an import statement binds; None for `from __future__` imports."""
    bound = bound_name(node, alias)
    if isinstance(node, cst.ImportFrom):
        module = from_module(index, current, node)
        if module == "__future__":
            return None
        name = dotted_name(alias.name)
        ref = index.find_module(module) if module else None
        if ref is not None:
            sub = index.find_module(f"{module}.{name}")
            return RepoModule(sub) if sub is not None else RepoName(ref, name)
        if node.relative:
            return Unavailable(bound, f"relative import of {module!r} from {current.name} matches no file")
        if module.split(".")[0] in ALLOWED_PACKAGES:
            return ThirdParty(module, name, bound)
        return Unavailable(
            bound,
            f"`from {module} import {name}`: {module.split('.')[0]} is not part of "
            "the repository and not torch/triton/numpy/stdlib",
        )
    module = dotted_name(alias.name)
    ref = index.find_module(module)
    if ref is not None:
        if alias.asname is None and "." in module:
            root = index.find_module(module.split(".")[0])
            return RepoModule(root) if root is not None else RepoModule(ref)
        return RepoModule(ref)
    if module.split(".")[0] in ALLOWED_PACKAGES:
        return ThirdParty(module, None, bound.split(".")[0], dotted=alias.asname is None and "." in module)
    return Unavailable(
        bound.split(".")[0],
        f"`import {module}`: not part of the repository and not torch/triton/numpy/stdlib",
    )
