"""The entry's `def` line in a candidate: the reference's parameters (kinds and defaults as they are) with the
type hints a standalone candidate can resolve.

Extracted references start with `from __future__ import annotations` and name types only in hints
(`Optional[torch.Tensor]`, `nn.Module`, `ForwardBatch`) that they never import: there the hints are never
evaluated. A candidate must not read a name it does not define (the seed checks every name), so a hint is
kept when each name in it is `torch`, a builtin or a `typing` name (which the candidate then imports), and
dropped otherwise; the parameter keeps its name, kind and default either way.
"""

from __future__ import annotations

import ast
import builtins
import typing
from dataclasses import dataclass

from evolution.writers.inductor.kernels import InductorConversionError

_RESOLVED_ROOTS = frozenset({"torch"}) | frozenset(dir(builtins))


@dataclass(frozen=True)
class EntrySignature:
    args: ast.arguments
    returns: ast.expr | None
    typing_names: tuple[str, ...]  # names the kept hints take from `typing`

    @property
    def params(self) -> list[str]:
        a = self.args
        return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]

    def def_line(self, name: str) -> str:
        returns = f" -> {ast.unparse(self.returns)}" if self.returns is not None else ""
        return f"def {name}({ast.unparse(self.args)}){returns}:"

    def typing_import(self) -> str:
        return f"from typing import {', '.join(self.typing_names)}" if self.typing_names else ""


def entry_signature(def_line: str, entry: str) -> EntrySignature:
    """Parse `def entry(...) -> ...:` (the capture's signature) into the candidate's version of it."""
    try:
        node = ast.parse(def_line + "\n    ...").body[0]
    except SyntaxError as exc:
        raise InductorConversionError(f"the reference's signature does not parse: {exc}") from exc
    if not isinstance(node, ast.FunctionDef) or node.name != entry:
        raise InductorConversionError(f"the reference's signature does not define {entry!r}")
    wanted: set[str] = set()
    args = node.args
    for param in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if param is not None and param.annotation is not None:
            param.annotation = _resolvable(param.annotation, wanted)
    returns = _resolvable(node.returns, wanted) if node.returns is not None else None
    return EntrySignature(args, returns, tuple(sorted(wanted)))


def _resolvable(hint: ast.expr, typing_names: set[str]) -> ast.expr | None:
    """`hint` when the candidate can resolve every name in it (adding the `typing` ones it needs to
    `typing_names`); None when it names something else (a class of the engine, `nn`, a bare `Tensor`)."""
    roots = {n.id for n in ast.walk(hint) if isinstance(n, ast.Name)}
    from_typing = {r for r in roots - _RESOLVED_ROOTS if r in typing.__all__}
    if roots - _RESOLVED_ROOTS - from_typing:
        return None
    typing_names |= from_typing
    return hint
