"""An FX graph and its shape environment as plain data (the dict model.Graph is read from): placeholders with
the host expression of their source (`L['x'].size()[0]` -> `x.shape[0]`), nodes with encoded arguments, size
symbols with their hints and guards, and size expressions in plain sympy.
"""

from __future__ import annotations

import re
from typing import Any

from evolution.writers.fusion.trace.host_values import HostValues, is_host_node, unbacked_symbol
from evolution.writers.fusion.trace.labels import source_aliases, source_labels
from evolution.writers.fusion.trace.sizes import size_names
from evolution.writers.fusion.trace.sym_text import sym_text
from evolution.writers.tracing.errors import TraceError

_SOURCE_PATTERNS = (
    (re.compile(r"\.size\(\)\[(\d+)\]"), r".shape[\1]"),
    (re.compile(r"\.stride\(\)\[(\d+)\]"), r".stride(\1)"),
)


def placeholder_source(node: Any) -> str:
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is None:
        raise TraceError(f"graph input {node.name} has no source among the reference's arguments")
    return source.name() if callable(source.name) else str(source.name)


def is_python_number(node: Any) -> bool:
    """A Python number Dynamo passes to the graph as a 0-d tensor (an unspecialised float)."""
    return bool(getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False))


def _host_expression(source: str) -> str | None:
    """`L['x'].size()[0]` -> `x.shape[0]`; None for what host code cannot name (globals, closures)."""
    match = re.fullmatch(r"L\['(\w+)'\](.*)", source)
    if match is None:
        return None
    rest = match.group(2)
    for pattern, replacement in _SOURCE_PATTERNS:
        rest = pattern.sub(replacement, rest)
    if not re.fullmatch(r"(\.shape\[\d+\]|\.stride\(\d+\)|\.storage_offset\(\)|\[\d+\])*", rest):
        return None
    return match.group(1) + rest


def _global_value(source: str, reference: Any) -> Any:
    match = re.fullmatch(r"G\['(\w+)'\]", source)
    if match is None or match.group(1) not in reference.__globals__:
        raise TraceError(
            f"graph input {source} is neither an argument of the reference nor a module constant"
        )
    value = reference.__globals__[match.group(1)]
    if not isinstance(value, (int, float, bool)):
        raise TraceError(f"the reference reads the module global {match.group(1)} ({type(value).__name__})")
    return value


def graph_dict(fw: Any, sources: list[tuple[str, bool]], reference: Any) -> dict[str, Any]:
    import torch

    placeholders = [n for n in fw.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sources):
        raise TraceError("AOTAutograd's graph has other inputs than Dynamo's (parameters or buffers)")
    inputs: list[dict[str, Any]] = []
    graph_inputs: set[str] = set()  # placeholders and constants: what a copy_ may write into
    for node, (source, number) in zip(placeholders, sources, strict=True):
        graph_inputs.add(node.name)
        inputs.append(_placeholder_dict(node, source, number, reference))
    nodes: list[dict[str, Any]] = []
    mutations: list[list[Any]] = []
    outputs: list[Any] = []
    written: dict[str, str] = {}  # a copy_ into an input -> the input (a returned copy_ returns the input)
    calls = [n for n in fw.graph.nodes if n.op == "call_function"]
    labels = source_labels(calls)
    aliases = source_aliases(calls, labels)
    host = HostValues({p["name"]: p["source"] for p in inputs if p["source"]})
    host.placeholder_shapes = {p["name"]: p["meta"]["shape"] for p in inputs if p.get("meta")}
    for node in fw.graph.nodes:
        if node.op == "output":
            result = node.args[0]
            outputs = [_encode(a) for a in (result if isinstance(result, (list, tuple)) else [result])]
            outputs = [
                {"node": written[o["node"]]} if _is_ref(o) and o["node"] in written else o for o in outputs
            ]
            continue
        if node.op == "get_attr":
            inputs.append(_constant_dict(node.name, getattr(fw, str(node.target))))
            graph_inputs.add(node.name)
            continue
        if node.op != "call_function":
            continue
        value = node.meta.get("val")
        target = _target_name(node.target)
        symbol = unbacked_symbol(value)
        if is_host_node(target) and symbol is not None:
            kind = "float" if isinstance(value, torch.SymFloat) else "int"
            host.item(symbol, node.args[0].name, kind)
            continue
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
            continue  # size arithmetic: its uses carry the expression itself
        if is_host_node(target):
            continue  # a run-time assertion on a host value
        if target == "aten.copy_.default" and getattr(node.args[0], "name", None) in graph_inputs:
            mutations.append([node.args[0].name, _encode(node.args[1])])
            written[node.name] = node.args[0].name
            continue
        nodes.append(
            {
                "name": node.name,
                "target": target,
                "args": [_encode(a) for a in node.args],
                "kwargs": {k: _encode(v) for k, v in node.kwargs.items()},
                "outputs": _metas(value),
                **({"label": labels[node.name]} if node.name in labels else {}),
                **({"aliases": list(aliases[node.name])} if node.name in aliases else {}),
            }
        )
        host.node(nodes[-1])
    held = {
        p["source"]: (p["kind"], n.meta.get("val"))
        for p, n in zip(inputs[: len(placeholders)], placeholders, strict=True)
        if p["source"]
    }
    names = _size_names(calls, held, reference)
    if not host.reads and not host.extents:
        return _encoded(inputs, nodes, outputs, mutations, names)
    only_host = host.host_only(nodes, outputs, mutations)
    nodes = [n for n in nodes if n["name"] not in only_host]
    for rename in (host.name_values, host.name_bounds):
        named = rename(names)
        if named:
            nodes, outputs, mutations = _substituted((nodes, outputs, mutations), named)
            host.extents = {
                s: (_substituted_text(size, named), _substituted(bounds, named))
                for s, (size, bounds) in host.extents.items()
            }
            names = {_substituted_text(t, named): n for t, n in names.items()}
    extents = host.extent_names(names)
    names.update({s: n for s, n in extents.items() if n not in names.values()})
    return {**_encoded(inputs, nodes, outputs, mutations, names), "host_symbols": host.host_codes()}


def _encoded(inputs: Any, nodes: Any, outputs: Any, mutations: Any, names: dict[str, str]) -> dict[str, Any]:
    return {
        "placeholders": inputs,
        "nodes": nodes,
        "outputs": outputs,
        "mutations": mutations,
        "size_names": names,
    }


def _substituted_text(text: str, mapping: dict[str, str]) -> str:
    from evolution.writers.fusion import symbols

    if not re.search(r"\bu\d+\b", text):  # over no host value
        return text
    return str(symbols.parse(text).subs({symbols.parse(k): symbols.parse(v) for k, v in mapping.items()}))


def _substituted(value: Any, mapping: dict[str, str]) -> Any:
    """An encoded value with each size expression (a sym, a shape entry) rewritten by `mapping`."""
    if isinstance(value, dict):
        if set(value) == {"sym"}:
            return {"sym": _substituted_text(str(value["sym"]), mapping)}
        if "shape" in value:
            return {**value, "shape": [_substituted_text(str(d), mapping) for d in value["shape"]]}
        return {k: _substituted(v, mapping) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_substituted(v, mapping) for v in value)
    return value


def _size_names(calls: list[Any], held: dict[str, tuple[str, Any]], reference: Any) -> dict[str, str]:
    """The reference's names for sizes; none where its source reads in a way not foreseen (the names are
    for the reader only: a trace never fails for want of them)."""
    try:
        return size_names(calls, held, reference)
    except Exception:
        return {}


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "node" in value


def _constant_dict(name: str, value: Any) -> dict[str, Any]:
    """A tensor constant of the graph (a Python number the reference turned into a tensor)."""
    import torch

    if not torch.is_tensor(value) or value.numel() != 1:
        raise TraceError("the reference computes with a constant tensor of more than one element")
    number = value.item()
    return {"name": name, "kind": "const", "source": "", "value": number}


def _placeholder_dict(node: Any, source: str, number: bool, reference: Any) -> dict[str, Any]:
    import torch

    value = node.meta.get("val")
    if source.startswith("G["):
        return {"name": node.name, "kind": "const", "source": "", "value": _global_value(source, reference)}
    expr = _host_expression(source)
    if expr is None:
        raise TraceError(f"graph input {source} is not an expression of the reference's arguments")
    if isinstance(value, (torch.SymInt, int)):
        text = sym_text(value.node.expr) if isinstance(value, torch.SymInt) else str(value)
        return {"name": node.name, "kind": "symint", "source": expr, "symbol": text}
    if isinstance(value, (torch.SymFloat, float)):
        return {
            "name": node.name,
            "kind": "scalar",
            "source": expr,
            "meta": {"shape": [], "dtype": "float64"},
        }
    if torch.is_tensor(value):
        kind = "scalar" if number else "tensor"
        meta = {**_metas(value)[0], "contiguous": _is_contiguous(value)}
        return {"name": node.name, "kind": kind, "source": expr, "meta": meta}
    raise TraceError(f"graph input {source} is a {type(value).__name__}, which a kernel cannot take")


def shape_env_facts(shape_env: Any) -> dict[str, Any]:
    if shape_env is None:
        return {"symbols": {}, "hints": {}, "guards": []}
    symbols: dict[str, str] = {}
    for symbol, found in shape_env.var_to_sources.items():
        for source in found:
            expr = _host_expression(source.name() if callable(source.name) else str(source.name))
            if expr is not None:
                symbols[str(symbol)] = expr
                break
    values = getattr(shape_env, "backed_var_to_val", None) or shape_env.var_to_val
    hints = {str(s): int(v) for s, v in values.items() if _is_int(v)}
    guards = []
    for guard in shape_env.guards:
        try:
            guards.append(sym_text(guard.expr))
        except TraceError:
            continue
    return {"symbols": symbols, "hints": hints, "guards": guards}


def _is_int(value: Any) -> bool:
    try:
        return int(value) == value
    except (TypeError, ValueError):
        return False


def _metas(value: Any) -> list[dict[str, Any]]:
    import torch

    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _metas(v)]
    if torch.is_tensor(value):
        shape = [sym_text(d.node.expr) if isinstance(d, torch.SymInt) else str(int(d)) for d in value.shape]
        return [{"shape": shape, "dtype": str(value.dtype).removeprefix("torch.")}]
    return []


def _is_contiguous(value: Any) -> bool:
    """Every dim of more than one element has the stride of a row-major layout of the shape, as sympy
    expressions (Dynamo guards the strides, so a traced case laid out otherwise makes another graph): the
    kernel then derives the strides from the sizes instead of taking them as arguments."""
    import sympy
    import torch

    def expr(d: Any) -> Any:
        return sympy.sympify(sym_text(d.node.expr)) if isinstance(d, torch.SymInt) else sympy.Integer(int(d))

    shape = [expr(d) for d in value.shape]
    strides = [expr(d) for d in value.stride()]
    for dim, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        if size != 1 and sympy.simplify(stride - sympy.Mul(*shape[dim + 1 :])) != 0:
            return False
    return True


def _target_name(target: Any) -> str:
    import operator

    if target is operator.getitem:
        return "getitem"
    return str(target)


def _encode(value: Any) -> Any:
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        meta = value.meta.get("val")
        if isinstance(meta, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return {"sym": sym_text(meta.node.expr)}
        if isinstance(meta, (bool, int, float)):
            return meta
        return {"node": value.name}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": sym_text(value.node.expr)}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"opaque": str(value)}
