"""What a candidate must rebuild besides the graph: how the reference's return value maps onto graph outputs
and arguments (a tensor it returns is one or the other), and the kind of each argument the dispatch between
specialisations tells apart.
"""

from __future__ import annotations

from typing import Any

from evolution.writers.fusion.model import OutputNode
from evolution.writers.fusion.trace.errors import TraceError


def result_structure(value: Any, outputs: list[Any], arguments: dict[str, Any]) -> OutputNode:
    import torch

    if torch.is_tensor(value):
        for index, output in enumerate(outputs):
            if output is value:
                return {"out": index}
        for name, argument in arguments.items():
            if argument is value:
                return {"arg": name}
        raise TraceError("the reference returns a tensor that is neither a graph output nor an argument")
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"const": repr(value)}
    if type(value) is tuple:
        return {"tuple": [result_structure(v, outputs, arguments) for v in value]}
    if type(value) is list:
        return {"list": [result_structure(v, outputs, arguments) for v in value]}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"dict": [[k, result_structure(v, outputs, arguments)] for k, v in value.items()]}
    raise TraceError(f"the reference returns a {type(value).__name__}, which a candidate cannot rebuild")


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
