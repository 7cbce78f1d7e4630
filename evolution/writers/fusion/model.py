"""The traced graph as plain data: what the tracing subprocess (evolution.writers.fusion.trace) hands back
and the generator reads. Free of torch, so the search process reads it cheaply and tests can build graphs by
hand.

One `Graph` per specialisation of the reference: the cases whose inputs run through the same ATen graph
(equal dtypes, equal control flow). Sizes and int arguments are sympy expressions over symbols (`s77`) kept as
text; `symbols` says which host expression each symbol stands for (`x.shape[0]`, `topk`), `hints` its value on
the traced inputs, `guards` what Dynamo assumed about them (the host dispatch tells specialisations apart with
the guards that differ).

Node arguments are JSON values: a tensor produced by another node or a placeholder is {"node": name}, a size
or int computed from symbols {"sym": "s27//2"}, a dtype {"dtype": "float32"}, anything else without meaning
for the kernel (devices, layouts, memory formats) {"opaque": text}; numbers, bools, None and lists stay as
they are. The reference's return value maps onto graph outputs as in evolution.writers.inductor.model
(OutputNode: {"out": i}, {"arg": name}, {"const": repr}, {"tuple"|"list": [...]}, {"dict": [[k, node]...]}).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

OutputNode = dict[str, Any]


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[str, ...]  # sympy text per dimension ("s77", "64", "s27//2")
    dtype: str  # torch dtype name without the prefix: "bfloat16", "int64", "bool"
    contiguous: bool = False  # an input laid out row-major on every case of its graph (strides from sizes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorMeta:
        return cls(
            tuple(str(s) for s in data["shape"]), str(data["dtype"]), bool(data.get("contiguous", False))
        )


@dataclass(frozen=True)
class Placeholder:
    """One input of the graph and where it comes from on the host."""

    name: str  # the graph's placeholder name ("arg0_1")
    kind: str  # "tensor" | "symint" | "scalar" (a Python number passed as a 0-d tensor) | "const"
    source: str  # host expression over the entry's parameters ("x", "x.shape[0]", "eps"); "" for const
    meta: TensorMeta | None = None  # tensors and scalars
    symbol: str = ""  # symint: its sympy text
    value: float | int | bool | None = None  # const: a module global's value at trace time

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Placeholder:
        meta = data.get("meta")
        return cls(
            name=str(data["name"]),
            kind=str(data["kind"]),
            source=str(data.get("source", "")),
            meta=TensorMeta.from_dict(meta) if meta else None,
            symbol=str(data.get("symbol", "")),
            value=data.get("value"),
        )


@dataclass(frozen=True)
class Node:
    name: str
    target: str  # "aten.add.Tensor", "getitem"
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outputs: tuple[TensorMeta, ...]  # one per tensor the op returns (topk: values, indices)
    label: str = ""  # the reference's variable that holds this value (`variance`), when one does
    aliases: tuple[str, ...] = ()  # its other names in the reference (`residual = x`)

    @property
    def meta(self) -> TensorMeta:
        return self.outputs[0]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        return cls(
            name=str(data["name"]),
            target=str(data["target"]),
            args=tuple(data.get("args", [])),
            kwargs=dict(data.get("kwargs", {})),
            outputs=tuple(TensorMeta.from_dict(m) for m in data.get("outputs", [])),
            label=str(data.get("label", "")),
            aliases=tuple(str(a) for a in data.get("aliases", [])),
        )


@dataclass(frozen=True)
class Graph:
    """One specialisation: the ATen graph, its inputs and outputs, and the cases it serves."""

    cases: tuple[str, ...]
    placeholders: tuple[Placeholder, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Any, ...]  # graph outputs: {"node": name} (or a sym / constant)
    mutations: tuple[tuple[str, Any], ...]  # (placeholder name, {"node": name}): copy_ into an input
    result: OutputNode  # the reference's return value over `outputs` and the entry's parameters
    symbols: dict[str, str] = field(default_factory=dict)  # symbol -> host expression
    hints: dict[str, int] = field(default_factory=dict)  # symbol -> value on the traced inputs
    guards: tuple[str, ...] = ()
    arg_kinds: dict[str, str] = field(default_factory=dict)  # parameter -> "tensor:bfloat16" | "none" | ...
    dynamic_symbols: tuple[str, ...] = ()  # symbols that vary with the task's dynamic case keys
    size_names: dict[str, str] = field(default_factory=dict)  # size text -> the reference's name for it

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def placeholder(self, name: str) -> Placeholder | None:
        for p in self.placeholders:
            if p.name == name:
                return p
        return None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Graph:
        return cls(
            cases=tuple(data.get("cases", [])),
            placeholders=tuple(Placeholder.from_dict(p) for p in data["placeholders"]),
            nodes=tuple(Node.from_dict(n) for n in data["nodes"]),
            outputs=tuple(data.get("outputs", [])),
            mutations=tuple((str(a), v) for a, v in data.get("mutations", [])),
            result=data.get("result", {"const": "None"}),
            symbols={str(k): str(v) for k, v in data.get("symbols", {}).items()},
            hints={str(k): int(v) for k, v in data.get("hints", {}).items()},
            guards=tuple(data.get("guards", [])),
            arg_kinds={str(k): str(v) for k, v in data.get("arg_kinds", {}).items()},
            dynamic_symbols=tuple(data.get("dynamic_symbols", [])),
            size_names={str(k): str(v) for k, v in data.get("size_names", {}).items()},
        )


@dataclass(frozen=True)
class TraceReport:
    """The tracing subprocess's answer: one graph per specialisation, or why there is none."""

    graphs: tuple[Graph, ...] = ()
    error: str = ""
    signature: str = ""  # the entry's parameter list as written in reference.py (ast.unparse of its args)
    returns: str = ""  # its return annotation text ("" when none)
    params: tuple[str, ...] = ()  # parameter names in order
    # Module-level statements the signature's defaults need (`TOP_K = 8`, an enum class), in order.
    constants: tuple[str, ...] = ()
    torch_version: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> TraceReport:
        data = json.loads(text)
        return cls(
            graphs=tuple(Graph.from_dict(g) for g in data.get("graphs", [])),
            error=str(data.get("error", "")),
            signature=str(data.get("signature", "")),
            returns=str(data.get("returns", "")),
            params=tuple(data.get("params", [])),
            constants=tuple(data.get("constants", [])),
            torch_version=str(data.get("torch_version", "")),
            notes=tuple(data.get("notes", [])),
        )
