"""Size expressions: sympy text from the tracer parsed back, evaluated on a specialisation's hints (the
structural decisions: is this size 1, do these sizes match), and printed as Python for host code and kernels.

Symbols are integers without a sign assumption (an int argument may be -1). Host code names each symbol by a
variable bound from its source (`s91 = gating_output.shape[1]`); kernels read sizes through parameters.
"""

from __future__ import annotations

import functools
import re

import sympy
from sympy.printing.str import StrPrinter

_SYMBOL = re.compile(r"\b[su]\d+\b")


class SizeError(Exception):
    """A size expression the generator cannot read or evaluate."""


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> sympy.Expr:
    names = {name: sympy.Symbol(name, integer=True) for name in _SYMBOL.findall(text)}
    try:
        return sympy.sympify(text, locals=names)
    except (sympy.SympifyError, SyntaxError, TypeError) as exc:
        raise SizeError(f"cannot read the size expression {text!r}") from exc


def as_expr(value: object) -> sympy.Expr:
    """An encoded size argument (an int, or {"sym": text}) as a sympy expression."""
    if isinstance(value, bool):
        return sympy.Integer(int(value))
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, dict) and "sym" in value:
        return parse(str(value["sym"]))
    if isinstance(value, sympy.Basic):
        return value
    raise SizeError(f"expected a size, found {value!r}")


def evaluate(expr: sympy.Expr, hints: dict[str, int]) -> int:
    """The value of `expr` on the traced inputs."""
    free = {s: hints[s.name] for s in expr.free_symbols if s.name in hints}
    missing = [s.name for s in expr.free_symbols if s.name not in hints]
    if missing:
        raise SizeError(f"no traced value for {', '.join(sorted(missing))} in {expr}")
    value = expr.subs(free)
    try:
        return int(value)
    except TypeError as exc:
        raise SizeError(f"{expr} does not evaluate to an integer ({value})") from exc


class _PythonPrinter(StrPrinter):
    """Integer Python: floor(a/b) -> (a // b), Mod -> %, Max/Min -> max()/min(), symbols renamed."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        if expr.name not in self.names:
            raise SizeError(f"the size symbol {expr.name} has no name in this scope")
        return self.names[expr.name]

    def _print_floor(self, expr: sympy.Expr) -> str:
        numer, denom = sympy.fraction(sympy.together(expr.args[0]))
        return f"({self._print(numer)} // {self._print(denom)})"

    def _print_ceiling(self, expr: sympy.Expr) -> str:
        numer, denom = sympy.fraction(sympy.together(expr.args[0]))
        return f"(-(-{self._print(numer)} // {self._print(denom)}))"

    def _print_Mod(self, expr: sympy.Expr) -> str:
        return f"({self._print(expr.args[0])} % {self._print(expr.args[1])})"

    def _print_Max(self, expr: sympy.Expr) -> str:
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr: sympy.Expr) -> str:
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Rational(self, expr: sympy.Rational) -> str:
        if expr.q == 1:
            return str(expr.p)
        raise SizeError(f"a size expression divides without floor: {expr}")

    def _print_Mul(self, expr: sympy.Expr) -> str:
        numer, denom = sympy.fraction(expr)
        if denom != 1:
            raise SizeError(f"a size expression divides without floor: {expr}")
        factors = sympy.Mul.make_args(numer)
        sign = ""
        if factors and factors[0] == -1:
            sign, factors = "-", factors[1:]
        return sign + " * ".join(self._wrap(f) for f in factors)

    def _print_Add(self, expr: sympy.Expr, order: str | None = None) -> str:
        terms = [self._print(t) for t in sympy.Add.make_args(expr)]
        text = terms[0]
        for term in terms[1:]:
            text += f" - {term[1:]}" if term.startswith("-") else f" + {term}"
        return f"({text})"

    def _print_Pow(self, expr: sympy.Expr, rational: bool = False) -> str:
        base, exponent = expr.args
        if exponent.is_Integer and int(exponent) > 0:
            return " * ".join([self._wrap(base)] * int(exponent))
        raise SizeError(f"a size expression raises to {exponent}: {expr}")

    def _wrap(self, expr: sympy.Expr) -> str:
        text = self._print(expr)
        return f"({text})" if isinstance(expr, sympy.Add) and not text.startswith("(") else text


def python(expr: sympy.Expr, names: dict[str, str]) -> str:
    """`expr` as a Python (and Triton) integer expression with symbols replaced by `names`."""
    return _PythonPrinter(names).doprint(sympy.sympify(expr))


def symbols_of(expr: sympy.Expr) -> set[str]:
    return {s.name for s in expr.free_symbols}


def guard_equalities(guards: tuple[str, ...] | list[str]) -> list[tuple[sympy.Expr, sympy.Expr]]:
    """(compound expression, symbol or number) for each guard `Eq(a, b)` that says one is the other: what
    Dynamo checked on every traced call (a view's element count, `Eq(s91, s1*floor(s91/s1))`), so a kernel
    written for this graph may read the expression as the simpler size."""
    found: list[tuple[sympy.Expr, sympy.Expr]] = []
    for text in guards:
        if not text.startswith("Eq("):
            continue
        try:
            guard = parse(text)
        except SizeError:
            continue
        if not isinstance(guard, sympy.Equality):
            continue
        for simple, compound in ((guard.lhs, guard.rhs), (guard.rhs, guard.lhs)):
            atomic = compound.is_Symbol or compound.is_Integer
            if (simple.is_Symbol or simple.is_Integer) and not atomic and (compound, simple) not in found:
                found.append((compound, simple))
                break
    return found


def settle(text: str, equalities: list[tuple[sympy.Expr, sympy.Expr]]) -> str:
    """The size expression `text` with every compound `equalities` names replaced by its simple side."""
    if not equalities:
        return text
    expr = parse(text)
    settled = expr
    for compound, simple in equalities:
        settled = settled.subs(compound, simple)
    return text if settled == expr else str(settled)
