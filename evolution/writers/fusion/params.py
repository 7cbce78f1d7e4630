"""A kernel's parameters, each with the host expression that passes it.

Sizes never appear in a kernel as a case's literal: every symbolic size becomes a parameter (a constexpr
when no dynamic size enters it, a run-time argument otherwise), named after the reference's variable for
it (`num_experts = scores.shape[1]`) or else the host expression it comes from, and a padded register
extent is the constexpr next power of two of one.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.code_text import unwrapped

# A composed size name longer than this is replaced by a numbered one: it would lengthen every line it is in.
_MAX_COMPOSED = 28


@dataclass
class Param:
    name: str
    host: str  # host expression that computes it
    kind: str  # "pointer" | "stride" | "size" | "scalar"
    constexpr: bool = False
    comment: str = ""


class KernelParams:
    """Parameters of the kernel, in order of first use, each with the host expression that passes it."""

    def __init__(
        self, symbol_sources: dict[str, str], dynamic: set[str], size_names: dict[str, str] | None = None
    ) -> None:
        self.params: dict[str, Param] = {}
        self.symbol_sources = symbol_sources
        self.dynamic = dynamic
        self.size_names = size_names or {}
        self._sizes: dict[str, str] = {}
        self._counter = itertools.count()

    def add(self, param: Param) -> str:
        if param.name not in self.params:
            self.params[param.name] = param
        return param.name

    def host_size(self, expr: sympy.Expr) -> str:
        return symbols.python(expr, {s: s for s in symbols.symbols_of(expr)})

    def size(self, expr: sympy.Expr | int, *, constexpr: bool | None = None) -> str:
        """Kernel-side code for a size: a literal, or a parameter computed by the host."""
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return str(int(expr))
        key = str(expr)
        if key in self._sizes:
            return self._sizes[key]
        static = not (symbols.symbols_of(expr) & self.dynamic)
        name = self._size_name(expr, static)
        comment = self._describe(expr)
        self.add(
            Param(name, self.host_size(expr), "size", static if constexpr is None else constexpr, comment)
        )
        self._sizes[key] = name
        return name

    def pad(self, expr: sympy.Expr) -> str:
        """The constexpr power of two that holds `expr` (the register extent of an atom)."""
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return str(next_pow2(int(expr)))
        key = f"pad:{expr}"
        if key in self._sizes:
            return self._sizes[key]
        base = self.size(expr)
        name = f"{base.upper()}_P2" if base.isidentifier() else f"PAD_{next(self._counter)}"
        self.add(Param(name, f"triton.next_power_of_2({unwrapped(self.host_size(expr))})", "size", True))
        self._sizes[key] = name
        return name

    def derived(self, passed: set[str]) -> dict[str, str]:
        """Constexpr size parameter -> the kernel's expression for it over other constexpr parameters in
        `passed` (`GATING_OUTPUT_SIZE1 // NUM_EXPERT_GROUP`): a size the kernel can compute from sizes it is
        compiled for needs no parameter of its own (the compiler folds it)."""
        found: dict[str, str] = {}
        for key, name in self._sizes.items():
            param = self.params.get(name)
            if key.startswith("pad:") or param is None or not param.constexpr or name not in passed:
                continue
            expr = symbols.parse(key)
            if isinstance(expr, sympy.Symbol):
                continue
            names = {s: self._sizes.get(s, "") for s in symbols.symbols_of(expr)}
            if all(n in passed and n not in found and self.params[n].constexpr for n in names.values()):
                found[name] = symbols.python(expr, names)
        return found

    def _size_name(self, expr: sympy.Expr, static: bool) -> str:
        name = self._word(expr)
        if name is None:
            name = f"size_{next(self._counter)}"
        name = name.upper() if static else name
        while name in self.params:
            name += "_"
        return name

    def _word(self, expr: sympy.Expr) -> str | None:
        """The name of a size: the reference's own, the host expression's, or one composed from the names of
        the sizes it is computed from (`half_head_dim`, `expert_group_size`); None where a part has no
        name or the name would be longer than a reader takes in at a glance."""
        source = self.symbol_sources.get(expr.name, "") if isinstance(expr, sympy.Symbol) else ""
        if not source.isidentifier() and str(expr) in self.size_names:  # the reference's name for it
            return self.size_names[str(expr)]
        if source:
            return re.sub(r"\W+", "_", source).strip("_").replace("_shape_", "_size")
        name = self._composed(expr)
        return name if name is not None and len(name) <= _MAX_COMPOSED else None

    def _composed(self, expr: sympy.Expr) -> str | None:
        if expr.could_extract_minus_sign():
            inner = self._word(-expr)
            return f"neg_{inner}" if inner else None
        if isinstance(expr, sympy.floor):
            numerator, denominator = sympy.fraction(sympy.together(expr.args[0]))
            top = self._word(numerator)
            if top and denominator == 2:
                return f"half_{top}"
            bottom = self._word(denominator) if not denominator.is_Integer else None
            if top and bottom:  # num_experts // num_expert_group: the size of an expert group
                return f"{bottom.removeprefix('num_')}_size"
            return None
        if isinstance(expr, sympy.Mul) and len(expr.args) == 2:
            words = [self._word(factor) for factor in expr.args]
            return "_times_".join(w for w in words if w) if all(words) else None
        return None

    def _describe(self, expr: sympy.Expr) -> str:
        names = {s: self.symbol_sources.get(s, s) for s in symbols.symbols_of(expr)}
        try:
            return symbols.python(expr, names)
        except symbols.SizeError:
            return str(expr)


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
