"""The values a kernel is written in: atoms (axes of the iteration space), tiles (emitted values over some
atoms) and index forms (where a value is read: affine in atoms, or computed from data).

An atom is created for every dimension a store writes and every dimension a reduction, scan or top-k runs
over. Atoms of equal extent are one atom (a row's hidden axis is the same `tl.arange` whether the norm's sum
or its output reads it, so the load is shared) unless a value needs both at once (the positions a scatter
writes against the positions it reads): then a distinct atom of the same extent is made. Per region of the
kernel an atom is bound to the program grid (a scalar index), to a block of the grid (program * BLOCK +
arange) or to registers (arange over the extent's power of two, masked); a tile's axes are its register and
block atoms in the region's order, so two tiles broadcast by inserting `None` axes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import sympy

# Triton dtypes of emitted values, by torch dtype. Floating values are computed in float32 (float64 stays).
COMPUTE_DTYPE = {
    "float32": "fp32",
    "bfloat16": "fp32",
    "float16": "fp32",
    "float64": "fp64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "i1",
}
STORAGE_DTYPE = {
    "float32": "tl.float32",
    "bfloat16": "tl.bfloat16",
    "float16": "tl.float16",
    "float64": "tl.float64",
    "int64": "tl.int64",
    "int32": "tl.int32",
    "int16": "tl.int16",
    "int8": "tl.int8",
    "uint8": "tl.uint8",
    "bool": "tl.int1",
}
TL_DTYPE = {
    "fp32": "tl.float32",
    "fp64": "tl.float64",
    "i64": "tl.int64",
    "i32": "tl.int32",
    "i16": "tl.int16",
    "i8": "tl.int8",
    "u8": "tl.uint8",
    "i1": "tl.int1",
}
FLOATS = ("fp32", "fp64")


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def compute_dtype(torch_dtype: str) -> str:
    if torch_dtype not in COMPUTE_DTYPE:
        raise KeyError(torch_dtype)
    return COMPUTE_DTYPE[torch_dtype]


@dataclass(eq=False)
class Atom:
    """One axis of the iteration space. Equality is identity: two atoms of one extent may coexist."""

    name: str
    extent: sympy.Expr
    hint: int  # the extent on the traced inputs

    def __repr__(self) -> str:
        return f"{self.name}[{self.extent}]"


class AtomTable:
    """Atoms by extent: an existing atom of the extent unless the caller must avoid it. The latest one is
    preferred: it belongs to the innermost op being lowered, whose other values already live on it (a top-p
    filter's normalising sum then reuses the sort its scatter reads)."""

    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        self._counter = itertools.count()

    def get(self, extent: sympy.Expr, hint: int, avoid: frozenset[Atom] | set[Atom] = frozenset()) -> Atom:
        for atom in reversed(self.atoms):
            if atom.extent == extent and atom not in avoid:
                return atom
        atom = Atom(f"a{next(self._counter)}", extent, hint)
        self.atoms.append(atom)
        return atom

    def order(self, atom: Atom) -> int:
        return self.atoms.index(atom)


@dataclass(frozen=True)
class Tile:
    """An emitted value: `code` (a variable or literal) over `atoms` (register/block axes, region order)."""

    code: str
    atoms: tuple[Atom, ...]
    dtype: str  # a key of TL_DTYPE
    grid: frozenset[Atom] = frozenset()  # grid-scalar atoms it depends on (a persistent loop cannot hoist it)

    @property
    def is_scalar(self) -> bool:
        return not self.atoms


@dataclass(frozen=True)
class Affine:
    """An index `sum(coef * atom) + const`, coefficients and constant being size expressions."""

    terms: tuple[tuple[Atom, sympy.Expr], ...] = ()
    const: sympy.Expr = field(default_factory=lambda: sympy.Integer(0))

    @staticmethod
    def of(atom: Atom) -> Affine:
        return Affine(((atom, sympy.Integer(1)),), sympy.Integer(0))

    @staticmethod
    def constant(value: sympy.Expr | int) -> Affine:
        return Affine((), sympy.sympify(value))

    @property
    def atom(self) -> Atom | None:
        """The atom when the index is exactly one atom (coefficient 1, no offset)."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0:
            return self.terms[0][0]
        return None

    @property
    def atoms(self) -> frozenset[Atom]:
        return frozenset(a for a, _ in self.terms)

    def scaled(self, factor: sympy.Expr) -> Affine:
        return Affine(
            tuple((a, sympy.expand(c * factor)) for a, c in self.terms), sympy.expand(self.const * factor)
        )

    def plus(self, other: Affine) -> Affine:
        coefs: dict[Atom, sympy.Expr] = {}
        order: list[Atom] = []
        for atom, coef in (*self.terms, *other.terms):
            if atom not in coefs:
                order.append(atom)
                coefs[atom] = sympy.Integer(0)
            coefs[atom] = sympy.expand(coefs[atom] + coef)
        terms = tuple((a, coefs[a]) for a in order if coefs[a] != 0)
        return Affine(terms, sympy.expand(self.const + other.const))

    def offset(self, value: sympy.Expr | int) -> Affine:
        return Affine(self.terms, sympy.expand(self.const + value))

    def key(self) -> tuple:
        return ("A", tuple((id(a), str(c)) for a, c in self.terms), str(self.const))


@dataclass(frozen=True)
class Computed:
    """An index whose values are a tile (data-dependent, or arithmetic an affine form cannot hold)."""

    tile: Tile

    @property
    def atoms(self) -> frozenset[Atom]:
        return frozenset(self.tile.atoms)

    def key(self) -> tuple:
        return ("C", self.tile.code)


IndexExpr = Affine | Computed
Index = tuple[IndexExpr, ...]


def index_atoms(index: Index) -> frozenset[Atom]:
    found: set[Atom] = set()
    for entry in index:
        found |= entry.atoms
    return frozenset(found)


def index_key(index: Index) -> tuple:
    return tuple(entry.key() for entry in index)


def floordiv_affine(index: Affine, divisor: sympy.Expr, extents: dict[Atom, sympy.Expr]) -> Affine | None:
    """index // divisor as an affine form when the division is exact on atoms: every term whose coefficient
    is a multiple of the divisor goes to the quotient, and the remaining terms (plus constant) are known to
    stay in [0, divisor). None when that cannot be shown."""
    quotient: list[tuple[Atom, sympy.Expr]] = []
    rest: list[tuple[Atom, sympy.Expr]] = []
    for atom, coef in index.terms:
        ratio = sympy.simplify(coef / divisor)
        if ratio.is_integer or (ratio.free_symbols and sympy.denom(sympy.together(ratio)) == 1):
            quotient.append((atom, ratio))
        else:
            rest.append((atom, coef))
    const_ratio = sympy.simplify(index.const / divisor)
    rest_const = index.const
    const_q = sympy.Integer(0)
    if index.const != 0 and sympy.denom(sympy.together(const_ratio)) == 1:
        const_q, rest_const = const_ratio, sympy.Integer(0)
    if not _below(rest, rest_const, divisor, extents):
        return None
    return Affine(tuple(quotient), const_q)


def mod_affine(index: Affine, divisor: sympy.Expr, extents: dict[Atom, sympy.Expr]) -> Affine | None:
    """index % divisor as an affine form under the same conditions as floordiv_affine."""
    quotient = floordiv_affine(index, divisor, extents)
    if quotient is None:
        return None
    return index.plus(quotient.scaled(-divisor))


def _below(terms: list[tuple[Atom, sympy.Expr]], const: sympy.Expr, bound: sympy.Expr, extents: dict) -> bool:
    """sum(coef * atom) + const stays in [0, bound) for atoms in their extents (coefficients >= 0)."""
    if not terms and const == 0:
        return True
    top = const + sum((coef * (extents[atom] - 1) for atom, coef in terms), sympy.Integer(0))
    gap = sympy.simplify(bound - 1 - top)
    return bool(gap.is_nonnegative) or gap == 0 or (gap.is_number and gap >= 0)
