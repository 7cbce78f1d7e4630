"""Evaluation of graph values at an index: the lowering's driver.

`Evaluator.eval(ref, index)` returns the tile of a graph value (a node or placeholder) read at `index` (one
index form per dimension). Ops are lowered by functions registered per ATen target in a LoweringTable
(the modules of evolution.writers.fusion.lower fill them; the Evaluator is handed the merged table); each asks
for its operands at the indices its semantics need (a view remaps the index, a reduction adds atoms for the
reduced dimensions, a gather reads at a computed index), so nothing is materialised unless an op must see a
whole dimension at once. Evaluations are cached by (value, index, guard): a value read twice at one index is
computed once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.emit import Emitter
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.memory import load_tensor
from evolution.writers.fusion.model import Graph, Node, Placeholder, TensorMeta
from evolution.writers.fusion.params import Param
from evolution.writers.fusion.parts import part_names, through_casts
from evolution.writers.fusion.tiles import (
    Affine,
    Atom,
    AtomTable,
    Computed,
    Index,
    Tile,
    compute_dtype,
    index_atoms,
    index_key,
)

Lowering = Callable[["Evaluator", Node, Index, "Tile | None"], "Tile | list[Tile]"]
_L = TypeVar("_L", bound=Lowering)


class LoweringTable:
    """ATen target -> the function that lowers it. Built from other tables, it holds all of theirs; a target
    lowered by two of them is a mistake that would otherwise depend on the order of the merge."""

    def __init__(self, *tables: LoweringTable) -> None:
        self._lowerings: dict[str, Lowering] = {}
        for table in tables:
            for target, fn in table._lowerings.items():
                if target in self._lowerings:
                    raise ValueError(f"{target} is lowered twice")
                self._lowerings[target] = fn

    def register(self, *targets: str) -> Callable[[_L], _L]:
        """Decorator: `fn` lowers each of `targets` (and keeps its own signature for direct callers)."""

        def register(fn: _L) -> _L:
            for target in targets:
                self._lowerings[target] = fn
            return fn

        return register

    def get(self, target: str) -> Lowering | None:
        return self._lowerings.get(target)

    def __contains__(self, target: object) -> bool:
        return target in self._lowerings


@dataclass(frozen=True)
class LoadRecord:
    """A read of an input (what the row analysis checks for in-place hazards)."""

    placeholder: str
    index: Index


class Evaluator:
    def __init__(
        self,
        graph: Graph,
        emitter: Emitter,
        atoms: AtomTable,
        lowerings: LoweringTable,
        recorder: Any | None = None,
    ) -> None:
        self.graph = graph
        self.emitter = emitter
        self.atoms = atoms
        self.lowerings = lowerings
        self.recorder = recorder  # the row analysis's dry run collects facts here
        self.nodes = {n.name: n for n in graph.nodes}
        self.placeholders = {p.name: p for p in graph.placeholders}
        self.parts = part_names(graph)  # `gate`, `up`: halves of one argument (parts.py)
        self._cache: dict[tuple, Tile] = {}

    # --- graph facts -------------------------------------------------------------------------------------

    def shape(self, ref: Any) -> list[sympy.Expr]:
        return [symbols.parse(s) for s in self.meta(ref).shape]

    def hints(self, ref: Any) -> list[int]:
        return [self.hint(e) for e in self.shape(ref)]

    def hint(self, expr: sympy.Expr | int) -> int:
        return symbols.evaluate(sympy.sympify(expr), self.graph.hints)

    def dtype(self, ref: Any) -> str:
        return self.meta(ref).dtype

    def meta(self, ref: Any) -> Any:
        name, output = _ref(ref)
        if name in self.placeholders:
            placeholder = self.placeholders[name]
            meta = placeholder.meta
            if meta is None and placeholder.kind == "const":
                kind = {bool: "bool", int: "int64", float: "float64"}[type(placeholder.value)]
                return TensorMeta((), kind)
            if meta is None:
                raise LoweringError(f"graph input {name} is not a tensor")
            return meta
        return self.nodes[name].outputs[output]

    def is_tensor(self, ref: Any) -> bool:
        return isinstance(ref, dict) and "node" in ref

    # --- atoms -------------------------------------------------------------------------------------------

    def atom(
        self, extent: sympy.Expr, avoid: frozenset[Atom] | set[Atom] = frozenset(), kind: str = "select"
    ) -> Atom:
        """An atom of `extent` that is none of `avoid` and not bound to the grid of this region, spanned
        whole by an op: `kind` "reduce" (a sum, max or min, which a loop over chunks can accumulate) or
        "select" (top-k, sort, scan, scatter: the whole axis in registers)."""
        taken = set(avoid) | self.emitter.grid_atoms()
        atom = self.atoms.get(sympy.sympify(extent), self.hint(extent), frozenset(taken))
        binding = self.emitter.binding(atom)  # not in the grid: a register (or looped) axis here
        if binding.kind == "loop" and kind != "reduce":
            raise LoweringError(f"a {kind} over an axis split into chunks (two passes take sums and maxima)")
        if self.recorder is not None:
            self.recorder.spanned(atom, kind)
        return atom

    def extents(self) -> dict[Atom, sympy.Expr]:
        return {a: a.extent for a in self.atoms.atoms}

    # --- evaluation --------------------------------------------------------------------------------------

    def eval(self, ref: Any, index: Index, guard: Tile | None = None) -> Tile:
        """The value of `ref` (an encoded argument) at `index`."""
        if not self.is_tensor(ref):
            return self.scalar(ref)
        name, output = _ref(ref)
        meta = self.meta(ref)
        if len(index) != len(meta.shape):
            raise LoweringError(f"internal: {name} has {len(meta.shape)} dims, indexed with {len(index)}")
        key = (name, output, index_key(index), guard.code if guard is not None else None)
        cached = self._cache.get(key)
        if cached is not None and self.emitter.visible(cached):
            return cached
        if name in self.placeholders:
            tile = self.placeholder(self.placeholders[name], index, guard)
        else:
            tile = self._lower(self.nodes[name], output, index, guard)
        self._cache[key] = tile
        return tile

    def value_name(self, ref: Any) -> str:
        """What the reference calls `ref`'s value: its variable, else the op's name for it ("" for none)."""
        if not self.is_tensor(ref):
            return ""
        name, output = _ref(ref)
        node = self.nodes.get(name)
        if node is None:
            return ""
        if node.label and output == 0:
            return node.label
        if node.target == "getitem":  # an output of a multi-output op (`_, topk_ids = torch.topk(...)`)
            return self.value_name({"node": node.args[0]["node"], "output": int(node.args[1])})
        return op_name(node.target, output)

    def held(self, ref: Any, index: Index, guard: Tile | None = None) -> Tile | None:
        """The tile of `ref` at `index` where this region has already computed it (and it is visible here),
        else None: nothing is emitted."""
        if not self.is_tensor(ref):
            return None
        name, output = _ref(ref)
        cached = self._cache.get((name, output, index_key(index), guard.code if guard is not None else None))
        return cached if cached is not None and self.emitter.visible(cached) else None

    def _lower(self, node: Node, output: int, index: Index, guard: Tile | None) -> Tile:
        fn = self.lowerings.get(node.target)
        if fn is None:
            raise LoweringError(f"the fusion generator does not lower {node.target}")
        result = fn(self, node, index, guard)
        if isinstance(result, list):
            for i, tile in enumerate(result):
                key = (node.name, i, index_key(index), guard.code if guard is not None else None)
                self._cache[key] = tile
                self._name(node, i, tile)
            return result[output]
        self._name(node, 0, result)
        return result

    def _name(self, node: Node, output: int, tile: Tile) -> None:
        """Tell the emitter what a node's value is called: the reference's variable, else its op."""
        if node.name in self.parts:  # over the argument's name, and a helper's (`x1` in `rotate_half`)
            self.emitter.name_loaded(tile, self.parts[node.name], 4)
        elif node.label and output == 0:
            self.emitter.name_value(tile, node.label, 3)
        op = norm_name(node, self.nodes) or op_name(node.target, output)
        if op:
            self.emitter.name_value(tile, op, 2)

    def scalar(self, value: Any) -> Tile:
        """A Python number, a size expression or None used as an operand."""
        if isinstance(value, bool):
            return self.emitter.constant(value, "i1")
        if isinstance(value, int):
            return self.emitter.constant(value, "i64" if abs(value) >= 2**31 else "i32")
        if isinstance(value, float):
            return self.emitter.constant(value, "fp32")
        if isinstance(value, dict) and "sym" in value:
            expr = symbols.parse(str(value["sym"]))
            if expr.is_Integer:
                return self.emitter.constant(int(expr), "i32")
            return Tile(self.emitter.params.size(expr), (), "i32")
        raise LoweringError(f"the fusion generator cannot use {value!r} as an operand")

    def placeholder(self, p: Placeholder, index: Index, guard: Tile | None) -> Tile:
        if p.kind == "const":
            value = p.value
            dtype = "fp32" if isinstance(value, float) else ("i1" if isinstance(value, bool) else "i32")
            return self.emitter.constant(value, dtype)  # type: ignore[arg-type]
        if p.kind == "scalar":
            name = self.emitter.params.add(_scalar_param(p))
            return Tile(name, (), "fp32")
        if p.kind != "tensor" or p.meta is None:
            raise LoweringError(f"graph input {p.source} cannot be read as a tensor")
        return self.load(p, index, guard)

    def load(self, p: Placeholder, index: Index, guard: Tile | None) -> Tile:
        if self.recorder is not None:
            self.recorder.loaded(LoadRecord(p.name, index))
        return load_tensor(self.emitter, p, index, self.hints({"node": p.name}), guard)

    # --- index helpers -----------------------------------------------------------------------------------

    def broadcast(self, operand: Any, out_index: Index, out_rank: int | None = None) -> Index:
        """The index of `operand` inside an elementwise op whose output is read at `out_index`."""
        shape = self.hints(operand)
        rank = len(shape)
        out_rank = len(out_index) if out_rank is None else out_rank
        if rank > out_rank:
            raise LoweringError("internal: an operand has more dims than the op's result")
        tail = out_index[out_rank - rank :]
        return tuple(
            Affine.constant(0) if size == 1 else entry for size, entry in zip(shape, tail, strict=True)
        )

    def index_tile(self, entry: Any) -> Tile:
        return self.emitter.index_tile(entry)

    def computed(self, tile: Tile) -> Computed:
        return Computed(tile)

    def index_atoms(self, index: Index) -> frozenset[Atom]:
        return index_atoms(index)

    def result_dtype(self, node: Node) -> str:
        return compute_dtype(node.meta.dtype)


_OP_NAMES = {
    "add": "added",
    "sub": "diff",
    "mul": "product",
    "div": "quotient",
    "pow": "power",
    "sum": "total",
    "amax": "row_max",
    "amin": "row_min",
    "max": "maximum",
    "min": "minimum",
    "abs": "magnitude",
    "neg": "negated",
    "where": "selected",
    "masked_fill": "filled",
    "bitwise_not": "inverted",
    "eq": "is_equal",
    "ne": "not_equal",
    "lt": "is_less",
    "gt": "is_greater",
    "le": "at_most",
    "ge": "at_least",
    "gather": "gathered",
    "index": "gathered",
    "clamp": "clamped",
    "scatter": "scattered",
    "repeat_interleave": "repeated",
}
_PASS_THROUGH = (
    "getitem",
    "split",
    "split_with_sizes",
    "chunk",
    "unbind",
    "view",
    "_to_copy",
    "convert_element_type",
    "clone",
    "expand",
    "unsqueeze",
    "squeeze",
    "permute",
    "reshape",
    "slice",
    "select",
    "alias",
    "copy",
    "t",
    "transpose",
)
_OUTPUT_NAMES = {
    "topk": ("topk_values", "topk_ids"),
    "sort": ("sorted_values", "sorted_ids"),
    "max": ("maximum", "argmax"),
    "min": ("minimum", "argmin"),
}


def op_name(target: str, output: int) -> str:
    """A name for output `output` of ATen op `target` ("aten.rsqrt.default" -> "rsqrt"); "" for ops that
    only move or cast a value (its name stays that of what it moves)."""
    parts = target.split(".")
    base = parts[1] if len(parts) > 1 and parts[0] in ("aten", "prims") else parts[0]
    base = base.rstrip("_") or base
    if base in _PASS_THROUGH or base.startswith(("_to_copy", "convert_element_type")):
        return ""
    if base in _OUTPUT_NAMES:
        names = _OUTPUT_NAMES[base]
        return names[min(output, len(names) - 1)]
    return _OP_NAMES.get(base, base)


def squares(ref: Any, nodes: dict[str, Node]) -> bool:
    """Whether `ref` (a node reference) is a value squared (`x.pow(2)`, `x * x`), through casts."""
    node = through_casts(nodes, ref)
    if node is None:
        return False
    if node.target == "aten.pow.Tensor_Scalar":
        return len(node.args) > 1 and node.args[1] == 2
    return node.target == "aten.mul.Tensor" and len(node.args) == 2 and node.args[0] == node.args[1]


def norm_name(node: Node, nodes: dict[str, Node]) -> str:
    """What a norm's values are, where the op's name would not say: a sum or mean of squares (`sum_sq`,
    `mean_sq`) and the reciprocal root of one, an epsilon added or not (`inv_rms`); "" for other values."""
    reductions = {"aten.sum.dim_IntList": "sum_sq", "aten.mean.dim": "mean_sq"}
    if node.target in reductions and node.args and squares(node.args[0], nodes):
        return reductions[node.target]
    if node.target != "aten.rsqrt.default" or not node.args:
        return ""
    inner = through_casts(nodes, node.args[0])
    if inner is not None and inner.target in ("aten.add.Tensor", "aten.add.Scalar") and inner.args:
        inner = through_casts(nodes, inner.args[0])
    return "inv_rms" if inner is not None and norm_name(inner, nodes) in reductions.values() else ""


def _ref(ref: Any) -> tuple[str, int]:
    return str(ref["node"]), int(ref.get("output", 0))


def _scalar_param(p: Placeholder) -> Param:
    name = "".join(c if c.isalnum() else "_" for c in p.source)
    return Param(name, p.source, "scalar", False, "a Python number of the call")
