"""Reading Inductor's output module: its kernels (with the ATen ops each was fused from), its host `call`
function, and the launch parameters a converted kernel starts from."""

from __future__ import annotations

import ast
import re

from evolution.writers.inductor.kernels import InductorConversionError, InductorUnsupported, Kernel

_ORIGIN_COMMENT = re.compile(r"Original ATen: \[([^\]]*)\]")

# Default launch parameters per (kernel kind, reduction hint): a reasonable start for the launch tuner.
_POINTWISE = {
    1: {"XBLOCK": 1024},
    2: {"XBLOCK": 32, "YBLOCK": 32},
    3: {"XBLOCK": 16, "YBLOCK": 16, "ZBLOCK": 4},
}
_REDUCTION = {
    "INNER": {"XBLOCK": 1, "R0_BLOCK": 2048, "RBLOCK": 2048},
    "OUTER": {"XBLOCK": 64, "R0_BLOCK": 8, "RBLOCK": 8},
    "OUTER_TINY": {"XBLOCK": 64, "R0_BLOCK": 8, "RBLOCK": 8},
    "DEFAULT": {"XBLOCK": 16, "R0_BLOCK": 128, "RBLOCK": 128},
}


def kernel_sources(wrapper: str) -> dict[str, tuple[str, str]]:
    """Inductor's kernels in the wrapper: name -> (module source, "aten.op, ..." it was fused from)."""
    module = ast.parse(wrapper)
    lines = wrapper.splitlines()
    found: dict[str, tuple[str, str]] = {}
    for node in module.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Attribute) and ast.unparse(func.value) == "async_compile"):
            continue
        if func.attr != "triton":
            raise InductorUnsupported(
                f"Inductor generated a {func.attr!r} kernel, not Triton (is Triton Inductor's backend here?)"
            )
        name_node, source_node = node.value.args[:2]
        if not (isinstance(name_node, ast.Constant) and isinstance(source_node, ast.Constant)):
            raise InductorConversionError("unexpected async_compile.triton call in Inductor's output")
        found[str(name_node.value)] = (str(source_node.value), origin_before(lines, node.lineno))
    return found


def origin_before(lines: list[str], lineno: int, *, across_code: bool = False) -> str:
    """The "Original ATen: [...]" list of the comment above line `lineno` (1-based): in the comment block
    right above it, or (`across_code`, for launches) anywhere back to the previous launch."""
    i = lineno - 2
    while i >= 0:
        line = lines[i].lstrip()
        if not line.startswith("#") and (not across_code or ".run(" in line or line.startswith("def ")):
            break
        match = _ORIGIN_COMMENT.search(line)
        if match:
            return match.group(1)
        i -= 1
    return ""


def find_call(module: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise InductorConversionError("Inductor's wrapper has no call() function (unknown output format)")


def launch_defaults(kernel: Kernel) -> dict[str, int]:
    if kernel.kind == "pointwise":
        axes = sum(1 for p in kernel.block_params if p in ("XBLOCK", "YBLOCK", "ZBLOCK"))
        values = dict(_POINTWISE.get(max(axes, 1), _POINTWISE[3]))
        values["num_warps"] = 4
        return values
    hint = kernel.reduction_hint if kernel.reduction_hint in _REDUCTION else "DEFAULT"
    values = dict(_REDUCTION[hint])
    if kernel.kind == "persistent_reduction" and hint != "INNER":
        values["XBLOCK"] = 8
    values["YBLOCK"] = 16
    values["num_warps"] = 8 if hint in ("INNER", "OUTER") else 4
    return values
