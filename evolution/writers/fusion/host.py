"""Host code of one specialisation: bind the sizes the kernel needs from the arguments' shapes, allocate the
outputs, compute the launch's sizes, grid and num_warps, launch, return what the reference returns.

Host code only reads shapes and strides, allocates with torch.empty and launches: no PyTorch compute, but
for a host value the reference reads from a CPU tensor (`max_seq_len_k = int(seq_lens_cpu[:bs].max()) +
seq_len_delta`, trace.host_values), which it computes as the reference does and passes as a run-time size.
"""

from __future__ import annotations

import re

from evolution.writers.fusion import symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.kernel import KernelCode, in_signature_order
from evolution.writers.fusion.model import Graph, OutputNode
from evolution.writers.fusion.tiles import STORAGE_DTYPE

_SYMBOL = re.compile(r"\b[su]\d+\b")


def host_body(graph: Graph, kernel: KernelCode, device_of: str, *, fixed_warps: bool = False) -> list[str]:
    """The statements of the host function (indented one level); `fixed_warps`: every launch with
    NUM_WARPS warps (Inductor's choice) instead of warps sized by the tile."""
    lines: list[str] = []
    needed = _symbols_needed(kernel) | _returned_sizes(graph)
    pending = list(needed)
    while pending:  # a size the host computes from others (`u1 = len(range(s9)[:u0])`) needs them
        found = set(_SYMBOL.findall(graph.symbols.get(pending.pop(), ""))) - needed
        needed |= found
        pending += found
    # the host's reads of tensor values (u0) after the sizes of the arguments they read, in the order the
    # trace gives them (each after those it reads)
    order = {symbol: k for k, symbol in enumerate(graph.symbols)}
    for symbol in sorted(needed, key=lambda s: (s[0] == "u", order.get(s, 0) if s[0] == "u" else int(s[1:]))):
        source = graph.symbols.get(symbol)
        if source is None:
            raise LoweringError(f"the size {symbol} has no expression over the reference's arguments")
        lines.append(f"{symbol} = {source}")
    for store in kernel.stores:
        if not store.fresh:
            continue
        shape = ", ".join(_size(e) for e in store.full_shape)
        shape = f"({shape},)" if len(store.full_shape) == 1 else f"({shape})"
        dtype = STORAGE_DTYPE[store.storage].replace("tl.int1", "torch.bool").replace("tl.", "torch.")
        lines.append(f"{store.target} = torch.empty({shape}, dtype={dtype}, device={device_of}.device)")
    passed = {p.name for p in kernel.params}
    counts = [name if name in passed else host for name, host in kernel.grid]
    if len(counts) > 1:  # a product of counts: a sum or quotient in parentheses, a name or call bare
        counts = [c if c.isidentifier() or _is_call(c) else f"({c})" for c in counts]
    # A size the launch alone reads is passed as its expression; one the grid or num_warps also reads is
    # bound once.
    shared = " ".join([kernel.tile_elements, *counts, *(p.host for p in kernel.params)])
    # Sizes are bound in the order the kernel found them (a grid count reads its block); the launch passes
    # them in the signature's.
    passed_as: dict[str, str] = {}
    for param in kernel.params:
        if param.kind != "size" or param.host == param.name:
            passed_as[param.name] = param.host
        elif re.search(rf"\b{param.name}\b", shared):
            lines.append(f"{param.name} = {param.host}")
            passed_as[param.name] = param.name
        else:
            passed_as[param.name] = param.host
    arguments = [f"{p.name}={passed_as[p.name]}" for p in in_signature_order(kernel.params)]
    total = " * ".join(counts) or "1"
    warps = "NUM_WARPS" if fixed_warps else f"_num_warps({kernel.tile_elements})"
    if kernel.split_block:  # warps for the full block, then more programs of fewer elements each
        if not fixed_warps:
            lines.append(f"num_warps = {warps}")
            warps = "num_warps"
        lines.append(f"if {total} < SMALL_GRID:")
        lines.append(f"    {kernel.split_block} = min({kernel.split_block}, SMALL_BLOCK)")
    if not total.isidentifier() or kernel.persistent:  # a count that is one size is launched by its name
        lines.append(f"programs = {total}")
        total = "programs"
    launch = f"min({total}, PROGRAMS)" if kernel.persistent else total
    # No test for an empty input: Triton launches nothing for a grid of 0 programs, and an empty tensor's
    # null pointer is one it accepts.
    lines.append(f"{kernel.name}[({launch},)](")
    lines.extend(f"    {a}," for a in arguments)
    lines.append(f"    num_warps={warps},")
    lines.append(")")
    return lines


def _is_call(code: str) -> bool:
    """`code` is one call (`triton.cdiv(n, BLOCK)`), whose parentheses already bind it."""
    if not re.match(r"[\w.]+\(", code) or not code.endswith(")"):
        return False
    depth = 0
    for k, char in enumerate(code):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and "(" in code[: k + 1]:
            return k == len(code) - 1
    return False


def _size(expr: object) -> str:
    import sympy

    return symbols.python(sympy.sympify(expr), {s: s for s in symbols.symbols_of(sympy.sympify(expr))})


def _returned_sizes(graph: Graph) -> set[str]:
    """The symbols of the sizes the graph returns (a host value: `max_seq_len_k`)."""
    found: set[str] = set()
    for output in graph.outputs:
        if isinstance(output, dict) and set(output) == {"sym"}:
            found |= symbols.symbols_of(symbols.parse(str(output["sym"])))
    return found


def _symbols_needed(kernel: KernelCode) -> set[str]:
    found: set[str] = set()
    for param in kernel.params:
        if param.kind == "size":
            found |= set(_SYMBOL.findall(param.host))
    for _, host in kernel.grid:
        found |= set(_SYMBOL.findall(host))
    for store in kernel.stores:
        if store.fresh:
            for extent in store.full_shape:
                found |= symbols.symbols_of(extent)
    return found


def returned(node: OutputNode, holders: dict[int, str]) -> str:
    """The Python expression for the reference's return value."""
    if "out" in node:
        index = int(node["out"])
        if index not in holders:
            raise LoweringError(f"the reference returns graph output {index}, which no store writes")
        return holders[index]
    if "arg" in node:
        return str(node["arg"])
    if "const" in node:
        return str(node["const"])
    if "tuple" in node:
        items = [returned(n, holders) for n in node["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "list" in node:
        return "[" + ", ".join(returned(n, holders) for n in node["list"]) + "]"
    if "dict" in node:
        return "{" + ", ".join(f"{k!r}: {returned(n, holders)}" for k, n in node["dict"]) + "}"
    raise LoweringError(f"unknown result structure {node}")
