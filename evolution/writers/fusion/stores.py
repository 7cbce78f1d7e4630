"""What a kernel writes: one store per graph output (a fresh tensor the host allocates) and per input the
reference writes in place. An in-place write that only replaces a slice of its input (`buf[1:].copy_(x)`
traces as slice_scatter(buf, x, ...)) is a store of x into that slice, so the rest of the input is neither
read nor rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import op_name
from evolution.writers.fusion.model import Graph


@dataclass(frozen=True)
class Store:
    target: str  # host expression of the tensor written: an argument, or the name of a fresh output
    value: dict[str, Any]  # the graph value written ({"node": name})
    shape: tuple[sympy.Expr, ...]  # extents of the value (the written region)
    storage: str  # torch dtype of the target
    fresh: bool  # allocated by the host (a graph output) rather than an argument written in place
    full_shape: tuple[sympy.Expr, ...] = ()  # the target's shape (fresh outputs: what to allocate)
    # Per dim of the value: (dim of the target, start, step); the target's other dims are read at 0.
    placement: tuple[tuple[int, sympy.Expr, sympy.Expr], ...] = field(default_factory=tuple)
    target_rank: int = 0
    contiguous: bool = False  # an argument written in place that is laid out row-major (strides from sizes)


_HOST_NAMES = frozenset({"programs", "torch", "triton", "tl"})


def _output_name(graph: Graph, nodes: dict, name: str, k: int, taken: set[str]) -> str:
    """The host variable of a fresh output: the reference's name for the value (`topk_weights`, found on
    the node or on what it casts or scales, up to three ops back), the name of the op's output for one
    output of a several-output op (`topk_ids`: the reference unpacked it, so no variable of its own names
    it, and the op's input is not what it holds), that name with `_out` where an argument already has it (a
    norm returns the `x` and `residual` it rebound: `x_out`, `residual_out`; a name the reference gave
    only by `residual = x` counts), else `out` (the graph's only output) or `out<k>`."""
    node = nodes.get(name)
    labels: tuple[str, ...] = ()
    for _ in range(4):
        if node is None or node.label:
            labels = (node.label, *node.aliases) if node is not None else ()
            break
        if node.target == "getitem" and isinstance(node.args[0], dict):
            made_by = nodes.get(node.args[0].get("node"))
            labels = (op_name(made_by.target, int(node.args[1])),) if made_by is not None else ()
            break
        source = next((a for a in node.args if isinstance(a, dict) and "node" in a), None)
        scales = node.target.startswith(("aten.mul.", "aten.div."))
        if source is None or (op_name(node.target, 0) and not scales):
            break  # past a cast or a scaling only: `silu(gate) * up` is not `gate`
        node = nodes.get(source["node"])
    reserved = set(graph.arg_kinds) | set(graph.symbols) | _HOST_NAMES | taken
    usable = [label for label in labels if label and label.isidentifier() and not label.isupper()]
    for candidate in [*usable, *(f"{label}_out" for label in usable)]:
        if candidate not in reserved:
            return candidate
    fresh = [o for o in graph.outputs if isinstance(o, dict) and "node" in o]
    return "out" if len(fresh) == 1 and "out" not in reserved else f"out{k}"


def build_stores(graph: Graph) -> tuple[list[Store], dict[int, str]]:
    """The stores of `graph`, and for each graph output the host expression that holds it."""
    stores: list[Store] = []
    holders: dict[int, str] = {}
    written: dict[str, str] = {}
    placeholders = {p.name: p for p in graph.placeholders}
    nodes = {n.name: n for n in graph.nodes}
    for position, output in enumerate(graph.outputs):
        if isinstance(output, dict) and set(output) == {"sym"}:  # a size the host computes
            expr = symbols.parse(str(output["sym"]))
            holders[position] = symbols.python(expr, {s: s for s in symbols.symbols_of(expr)})
            continue
        if not isinstance(output, dict) or "node" not in output:
            raise LoweringError(f"graph output {position} is not a tensor ({output!r})")
        name = output["node"]
        if name in placeholders:
            holders[position] = placeholders[name].source
            continue
        if name in written:
            holders[position] = written[name]
            continue
        meta = nodes[name].meta
        shape = tuple(symbols.parse(s) for s in meta.shape)
        target = _output_name(graph, nodes, name, len(written), set(written.values()))
        written[name] = target
        holders[position] = target
        placement = tuple((d, sympy.Integer(0), sympy.Integer(1)) for d in range(len(shape)))
        stores.append(Store(target, output, shape, meta.dtype, True, shape, placement, len(shape)))
    for placeholder_name, value in graph.mutations:
        written_into = placeholders[placeholder_name]
        if written_into.meta is None:
            raise LoweringError(f"the reference writes into {written_into.source}, which is not a tensor")
        stores.append(
            _in_place(graph, nodes, placeholder_name, written_into.source, written_into.meta, value)
        )
    return stores, holders


def _in_place(graph: Graph, nodes: dict, placeholder: str, source: str, meta: Any, value: Any) -> Store:
    full = tuple(symbols.parse(s) for s in meta.shape)
    rank = len(full)
    placement = [(d, sympy.Integer(0), sympy.Integer(1)) for d in range(rank)]
    current = value
    node = nodes.get(current.get("node")) if isinstance(current, dict) else None
    while (
        node is not None
        and node.target == "aten.slice_scatter.default"
        and _is_region(nodes, node.args[0], placeholder, placement, graph)
    ):
        dim = int(node.args[2]) if len(node.args) > 2 else 0
        dim = dim + rank if dim < 0 else dim
        start = node.args[3] if len(node.args) > 3 else 0
        step = node.args[5] if len(node.args) > 5 else 1
        start_expr = symbols.as_expr(start if start is not None else 0)
        if symbols.evaluate(start_expr, graph.hints) < 0:
            start_expr = start_expr + full[dim]
        _, old_start, old_step = placement[dim]
        new_step = symbols.as_expr(step if step is not None else 1)
        placement[dim] = (
            dim,
            sympy.expand(old_start + old_step * start_expr),
            sympy.expand(old_step * new_step),
        )
        current = node.args[1]
        node = nodes.get(current.get("node")) if isinstance(current, dict) else None
    if node is None:
        raise LoweringError(f"the in-place write into {source} is not computed by the graph")
    shape = tuple(symbols.parse(s) for s in node.meta.shape)
    if len(shape) != rank:
        raise LoweringError(f"the in-place write into {source} changes its rank")
    return Store(source, current, shape, meta.dtype, False, full, tuple(placement), rank, meta.contiguous)


def _is_region(nodes: dict, ref: Any, placeholder: str, placement: list, graph: Graph) -> bool:
    """`ref` is the placeholder viewed through exactly the slices written so far (full slices allowed)."""
    seen: dict[int, tuple] = {}
    while isinstance(ref, dict) and ref.get("node") != placeholder:
        node = nodes.get(ref.get("node"))
        if node is None or node.target != "aten.slice.Tensor":
            return False
        dim = int(node.args[1]) if len(node.args) > 1 else 0
        start = symbols.as_expr(node.args[2] if len(node.args) > 2 and node.args[2] is not None else 0)
        step = symbols.as_expr(node.args[4] if len(node.args) > 4 else 1)
        if symbols.evaluate(start, graph.hints) != 0 or step != 1:
            seen[dim] = (start, step)
        ref = node.args[0]
    if not isinstance(ref, dict):
        return False
    for dim, (_, start, step) in enumerate(placement):
        wanted = seen.get(dim, (sympy.Integer(0), sympy.Integer(1)))
        if (start, step) != wanted and not (start == 0 and step == 1 and dim not in seen):
            return False
    return all(placement[d][1:] == seen[d] for d in seen)
