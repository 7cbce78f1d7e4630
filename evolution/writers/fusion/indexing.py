"""Arithmetic on index forms: scaling, sums, and the floor division and remainder a reshape needs, kept
affine where it provably is (`(g * S + s) // S` is `g` when `s` is an atom of extent S), computed as integer
tiles where not. Index values are never negative, so Triton's truncating `//` and `%` are exact here.
"""

from __future__ import annotations

import sympy

from evolution.writers.fusion.emit import Emitter
from evolution.writers.fusion.tiles import (
    Affine,
    Atom,
    Computed,
    IndexExpr,
    Tile,
    floordiv_affine,
    mod_affine,
)


def scale(emitter: Emitter, entry: IndexExpr, factor: sympy.Expr) -> IndexExpr:
    if factor == 1:
        return entry
    if isinstance(entry, Affine):
        return entry.scaled(factor)
    size = Tile(emitter.params.size(factor), (), "i32")
    return Computed(emitter.binary("({a} * {b})", entry.tile, size, entry.tile.dtype))


def add(emitter: Emitter, a: IndexExpr, b: IndexExpr) -> IndexExpr:
    if isinstance(a, Affine) and isinstance(b, Affine):
        return a.plus(b)
    ta, tb = emitter.index_tile(a), emitter.index_tile(b)
    return Computed(emitter.binary("({a} + {b})", ta, tb, _wider(ta.dtype, tb.dtype)))


def offset(emitter: Emitter, entry: IndexExpr, value: sympy.Expr) -> IndexExpr:
    if value == 0:
        return entry
    if isinstance(entry, Affine):
        return entry.offset(value)
    size = Tile(emitter.params.size(value), (), "i32")
    return Computed(emitter.binary("({a} + {b})", entry.tile, size, entry.tile.dtype))


def floordiv(
    emitter: Emitter, entry: IndexExpr, divisor: sympy.Expr, extents: dict[Atom, sympy.Expr]
) -> IndexExpr:
    if divisor == 1:
        return entry
    if isinstance(entry, Affine):
        simplified = floordiv_affine(entry, divisor, extents)
        if simplified is not None:
            return simplified
    tile = emitter.index_tile(entry)
    size = Tile(emitter.params.size(divisor), (), "i32")
    return Computed(emitter.binary("({a} // {b})", tile, size, tile.dtype))


def mod(
    emitter: Emitter, entry: IndexExpr, divisor: sympy.Expr, extents: dict[Atom, sympy.Expr]
) -> IndexExpr:
    if isinstance(entry, Affine):
        simplified = mod_affine(entry, divisor, extents)
        if simplified is not None:
            return simplified
    tile = emitter.index_tile(entry)
    size = Tile(emitter.params.size(divisor), (), "i32")
    return Computed(emitter.binary("({a} % {b})", tile, size, tile.dtype))


def flip(emitter: Emitter, entry: IndexExpr, size: sympy.Expr) -> IndexExpr:
    """size - 1 - entry."""
    negated = scale(emitter, entry, sympy.Integer(-1))
    return offset(emitter, negated, size - 1)


def _wider(a: str, b: str) -> str:
    return "i64" if "i64" in (a, b) else "i32"
