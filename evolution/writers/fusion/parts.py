"""Names for the parts of one argument that the reference reads apart.

Each part is a load of the same argument, so without this they read as `x`, `x_2`, `x_3`.
- A gated activation takes one tensor holding two projections side by side and multiplies the activation
  of the first by the second: `F.silu(x[..., :d]) * x[..., d:]`, or `gate, up = x.chunk(2, -1)`. The
  engines' own kernels call the halves `gate` and `up` (LMDeploy's `activation.py`), and so does a reviewer;
  the reference rarely names them itself, since a tuple unpacking or an inline slice gives the trace no
  variable.
- Otherwise two slices of an argument that meet at one point along one dim (`x[..., :half]`,
  `x[..., half:]`, as rotary embeddings' `rotate_half` takes them) are its low and high part, `query_lo`
  and `query_hi`, as LMDeploy's rotary kernel has `q_l` and `q_h`.
"""

from __future__ import annotations

from typing import Any

from evolution.writers.fusion.memory import tensor_name
from evolution.writers.fusion.model import Graph, Node

# Activations that gate the other half (SwiGLU, GeGLU, ReGLU and the sigmoid GLU).
GATE_ACTIVATIONS = frozenset(
    {"aten.silu.default", "aten.gelu.default", "aten.relu.default", "aten.sigmoid.default"}
)
_END = 2**63 - 1  # a slice's end that runs to the end of its dim
_CASTS = ("aten._to_copy.default", "prims.convert_element_type.default", "aten.to.dtype")
_PART_OPS = ("aten.slice.Tensor", "aten.slice_copy.Tensor", "getitem")


def part_names(graph: Graph) -> dict[str, str]:
    """Node -> the name of the part it holds: for each half of a gated activation `gate` (the one the
    activation reads) and `up` (the one it multiplies); else for two slices of an argument that meet,
    `<argument>_lo` and `<argument>_hi`."""
    nodes = {n.name: n for n in graph.nodes}
    names: dict[str, str] = {}
    for node in graph.nodes:
        if node.target != "aten.mul.Tensor" or len(node.args) != 2:
            continue
        for gated, other in (node.args, node.args[::-1]):
            activation = through_casts(nodes, gated)
            if activation is None or activation.target not in GATE_ACTIVATIONS or not activation.args:
                continue
            gate, up = _part(nodes, activation.args[0]), _part(nodes, other)
            if gate is not None and up is not None and gate[1] == up[1] and gate[0] != up[0]:
                names.setdefault(gate[0], "gate")
                names.setdefault(up[0], "up")
                break
    for low, high, whole in _meeting_slices(graph):
        if low not in names and high not in names:
            names[low], names[high] = f"{whole}_lo", f"{whole}_hi"
    return names


def _meeting_slices(graph: Graph) -> list[tuple[str, str, str]]:
    """(low slice, high slice, the argument's name) for each argument that two slices take apart at one
    point along one dim: `[0, m)` and `[m, end)`."""
    arguments = {p.name: tensor_name(p.source) for p in graph.placeholders if p.kind == "tensor"}
    slices: dict[tuple[str, int], list[Node]] = {}
    for node in graph.nodes:
        if node.target not in _PART_OPS[:2] or len(node.args) != 4 or not isinstance(node.args[1], int):
            continue
        base = node.args[0]
        if isinstance(base, dict) and base.get("node") in arguments:
            slices.setdefault((base["node"], node.args[1]), []).append(node)
    found = []
    for (argument, _), taken in slices.items():
        if len(taken) != 2:
            continue
        low, high = sorted(taken, key=lambda n: n.args[2] != 0)
        if low.args[2] == 0 and high.args[3] == _END and low.args[3] == high.args[2]:
            found.append((low.name, high.name, arguments[argument]))
    return found


def _node(nodes: dict[str, Node], ref: Any) -> Node | None:
    return nodes.get(ref["node"]) if isinstance(ref, dict) and "node" in ref else None


def through_casts(nodes: dict[str, Node], ref: Any) -> Node | None:
    """The node `ref` holds, looking through dtype casts."""
    node = _node(nodes, ref)
    while node is not None and node.target in _CASTS and node.args:
        node = _node(nodes, node.args[0])
    return node


def _part(nodes: dict[str, Node], ref: Any) -> tuple[str, str] | None:
    """(node, the value it is a part of) where `ref` (through casts) is a slice of a value or a piece of
    its `split`/`chunk`; None otherwise."""
    node = through_casts(nodes, ref)
    if node is None or node.target not in _PART_OPS or not node.args:
        return None
    whole = node.args[0]
    if node.target == "getitem":
        split = _node(nodes, whole)
        if split is None or not split.target.startswith(("aten.split", "aten.chunk")) or not split.args:
            return None
        whole = split.args[0]
    if not isinstance(whole, dict) or "node" not in whole:
        return None
    return node.name, f"{whole['node']}:{whole.get('output', 0)}"
