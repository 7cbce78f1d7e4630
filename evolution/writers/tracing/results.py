"""What a writer must rebuild besides the traced code: how the reference's return value maps onto the graph's
outputs and the reference's arguments (a tensor it returns is one or the other), and the kind of each argument
the dispatch between specialisations tells apart. Both writers record the same structure, as plain data:

    {"out": i}  {"arg": name}  {"const": repr}  {"tuple" | "list": [node, ...]}  {"dict": [[key, node], ...]}
"""

from __future__ import annotations

from typing import Any

from evolution.writers.tracing.errors import TraceError

OutputNode = dict[str, Any]
# The plain values a candidate can write back as literals (the Inductor writer keeps numbers out: a number
# its graph computed would be baked into the host code).
ALL_CONSTANTS: tuple[type, ...] = (bool, int, float, str)


def result_structure(
    value: Any,
    outputs: list[Any],
    arguments: dict[str, Any],
    *,
    constants: tuple[type, ...] = ALL_CONSTANTS,
    error: type[Exception] = TraceError,
    who: str = "a candidate",
) -> OutputNode:
    """`value` (what the reference returned) as an OutputNode over the graph's `outputs` (matched by identity)
    and the reference's `arguments`; `error` (saying `who` cannot rebuild it) for anything else."""
    import torch

    def walk(value: Any) -> OutputNode:
        if torch.is_tensor(value):
            for index, output in enumerate(outputs):
                if output is value:
                    return {"out": index}
            for name, argument in arguments.items():
                if argument is value:
                    return {"arg": name}
            raise error("the reference returns a tensor that is neither a graph output nor an argument")
        if type(value) is int:  # a host size the graph returns (`int(lens.max()) + delta`)
            for index, output in enumerate(outputs):
                if type(output) is int and output == value:
                    return {"out": index}
        if value is None or isinstance(value, constants):
            return {"const": repr(value)}
        if type(value) is tuple:
            return {"tuple": [walk(v) for v in value]}
        if type(value) is list:
            return {"list": [walk(v) for v in value]}
        if type(value) is dict and all(isinstance(k, str) for k in value):
            return {"dict": [[k, walk(v)] for k, v in value.items()]}
        raise error(f"the reference returns a {type(value).__name__}, which {who} cannot rebuild")

    return walk(value)


def arg_kinds(arguments: dict[str, Any]) -> dict[str, str]:
    import torch

    kinds = {}
    for name, value in arguments.items():
        if torch.is_tensor(value):
            kinds[name] = f"tensor:{str(value.dtype).removeprefix('torch.')}"
        elif value is None:
            kinds[name] = "none"
        elif isinstance(value, bool):
            kinds[name] = f"bool:{value}"
        elif isinstance(value, str):
            kinds[name] = f"str:{value}"
        elif isinstance(value, int):
            kinds[name] = "int"
        elif isinstance(value, float):
            kinds[name] = "float"
        else:
            kinds[name] = type(value).__name__
    return kinds
