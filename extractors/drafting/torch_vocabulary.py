"""What the use gatherers know about torch: which calls take sizes, which index, mask or cast, and the names
every tensor has (an attribute outside them marks an object of the repository, not a tensor)."""

from __future__ import annotations

import functools

import libcst as cst

from extractors.drafting.local_values import dotted

MODULES = {"torch", "F", "nn", "math", "np", "numpy"}
# torch.<fn>(...) whose positional arguments are sizes (for `full`, only the first one).
SIZE_FUNCTIONS = {"arange", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm"}
# Tensor methods whose arguments are sizes (all positional arguments; `topk`/`kthvalue`: only k).
SIZE_METHODS = {
    "view",
    "reshape",
    "expand",
    "repeat",
    "new_zeros",
    "new_ones",
    "new_empty",
    "tile",
    "resize_",
    "split",
    "chunk",
    "narrow",
    "unflatten",
}
K_METHODS = {"topk", "kthvalue"}
CASTS = {
    "float": "float32",
    "half": "float16",
    "bfloat16": "bfloat16",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "bool": "bool",
}
# method -> (position of dim, position of index) for methods whose index argument indexes `dim` of the owner.
INDEX_METHODS = {
    "index_select": (0, 1),
    "gather": (0, 1),
    "scatter": (0, 1),
    "scatter_": (0, 1),
    "scatter_add": (0, 1),
    "scatter_add_": (0, 1),
    "scatter_reduce": (0, 1),
    "scatter_reduce_": (0, 1),
    "index_add_": (0, 1),
    "index_copy_": (0, 1),
    "index_fill_": (0, 1),
}
MASK_METHODS = {"masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_", "masked_select"}
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


@functools.lru_cache(maxsize=1)
def tensor_attributes() -> frozenset[str]:
    import torch

    return frozenset(a for a in dir(torch.Tensor) if not a.startswith("__"))


def is_none_index(element: cst.BaseSlice) -> bool:
    return (
        isinstance(element, cst.Index)
        and isinstance(element.value, cst.Name)
        and element.value.value == "None"
    )


def string_literals(expr: cst.BaseExpression) -> list[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return [value] if isinstance(value, str) else []
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        out: list[str] = []
        for element in expr.elements:
            inner = string_literals(element.value)
            if not inner:
                return []
            out += inner
        return out
    return []


def dtype_argument(node: cst.Call) -> str:
    for arg in node.args:
        name = dotted(arg.value)
        if name.startswith("torch.") and (arg.keyword is None or arg.keyword.value == "dtype"):
            return {"float": "float32", "long": "int64", "int": "int32", "half": "float16"}.get(
                name.removeprefix("torch."), name.removeprefix("torch.")
            )
    return ""
