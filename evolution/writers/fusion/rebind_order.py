"""Read a value before the reference rebinds its name, as the reference does.

The emitter writes each stored value where its store needs it, at the end of the kernel. A norm's residual
is the sum `x + residual` rounded to the input's dtype, and it is stored last. The reference computes it
before it rebinds `x` to the normalised row:

    x = x + residual.to(torch.float32)
    residual = x.to(orig_dtype)
    ...
    x = x * torch.rsqrt(variance + self.variance_epsilon)

Written at the end, the rounding still reads the old `x` after the new one is bound, so naming.py cannot
give the new value the reference's name and writes `x_2`. Here such a statement moves up to just before
the first rebinding of a name it reads. Only a pure statement moves: one name bound from Triton math and
casts, with no load, store or call of another function. It moves only within its own statement list (the
kernel's, or a loop's body), never above what it reads. Triton orders the instructions itself, so the
kernel computes the same values.

A store can read the old value too: LMDeploy's norm keeps the sum under a second name (`residual = x`)
and returns it, so the kernel stores the old `x` into `residual_out` at the end. `stored_values` first
binds such a store's value to a name of its own, named for the output it is written to (`residual`), which
then moves like any pure statement: `residual = x.to(tl.bfloat16)` before `x = x * tl.rsqrt(...)`.
"""

from __future__ import annotations

import ast
import re

_EFFECTS = ("load", "store", "atomic", "debug_barrier", "device_print", "device_assert", "inline_asm")


def reads_before_rebinding(kernel_text: str, reference_names: dict[str, str]) -> str:
    """`kernel_text` (one @triton.jit function, values in SSA form) with each pure statement that reads a
    value the reference later rebinds in its statement list (the kernel's, or a loop's body: a persistent
    kernel's rows) moved to just before that rebinding. `reference_names` maps a value to the reference
    variable it holds (`v7` -> `x`)."""
    for _ in range(kernel_text.count("\n") + 1):  # one statement list reordered a round
        tree = ast.parse(kernel_text)
        fn = tree.body[0]
        if not isinstance(fn, ast.FunctionDef):
            return kernel_text
        for body in _statement_lists(fn):
            moved = _reordered(kernel_text, body, reference_names)
            if moved != kernel_text:
                kernel_text = moved
                break
        else:
            return kernel_text
    return kernel_text


def _statement_lists(fn: ast.FunctionDef) -> list[list[ast.stmt]]:
    """The function's body and every block nested in it."""
    found = [fn.body]
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While, ast.If)) and node is not fn:
            found += [b for b in (node.body, node.orelse) if b]
    return found


def _reordered(kernel_text: str, body: list[ast.stmt], reference_names: dict[str, str]) -> str:
    lines = kernel_text.splitlines(keepends=True)
    order = list(range(len(body)))  # statement positions in the order they are written
    for k in range(len(body)):
        statement = body[k]
        if not _pure_assignment(statement):
            continue
        assert isinstance(statement, ast.Assign)
        reads = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
        rebound = {reference_names[r] for r in reads if r in reference_names}
        at = order.index(k)
        target = None
        for earlier in range(at - 1, -1, -1):
            bound = _bound(body[order[earlier]])
            if bound & reads:
                break  # never above what it reads
            if any(reference_names.get(b) in rebound for b in bound):
                target = earlier
        if target is not None:
            order.insert(target, order.pop(at))
    if order == list(range(len(body))):
        return kernel_text
    # Each statement with the comment lines above it and the blank lines after it, up to the next one.
    starts = [_start(lines, s) for s in body]
    ends = [*starts[1:], body[-1].end_lineno or body[-1].lineno]
    head, tail = "".join(lines[: starts[0]]), "".join(lines[ends[-1] :])
    chunks = ["".join(lines[a:b]) for a, b in zip(starts, ends, strict=True)]
    chunks = [c if c.endswith("\n") else c + "\n" for c in chunks]
    return head + "".join(chunks[i] for i in order) + tail


def stored_values(kernel_text: str, reference_names: dict[str, str]) -> tuple[str, dict[str, str]]:
    """`kernel_text` with the value of each store that reads a value the reference rebinds before the store
    (in the store's statement list) bound to a new name on the line above it, and for each new name the
    name of the value it holds: the output's (`residual` for `residual_out_ptr`, where the reference has a
    `residual`)."""
    tree = ast.parse(kernel_text)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        return kernel_text, {}
    lines = kernel_text.splitlines(keepends=True)
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    named: dict[str, str] = {}
    edits: list[tuple[ast.stmt, ast.expr, str]] = []
    for body, k, statement in ((b, k, s) for b in _statement_lists(fn) for k, s in enumerate(b)):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "tl.store" and len(call.args) >= 2):
            continue
        value = call.args[1]
        if statement.lineno != statement.end_lineno or not _pure(value):
            continue
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        rebound = {reference_names[r] for r in reads if r in reference_names}
        since = _after_last(body[:k], reads)
        if not any(reference_names.get(b) in rebound for s in since for b in _bound(s)):
            continue
        base = _output_base(call.args[0], set(reference_names.values()))
        if base is None:
            continue
        name = next(f"stored{j}" for j in range(len(taken) + 1) if f"stored{j}" not in taken)
        taken.add(name)
        named[name] = base
        edits.append((statement, value, name))
    for statement, value, name in sorted(edits, key=lambda edit: -edit[0].lineno):
        row = statement.lineno - 1
        line = lines[row]
        indent = line[: len(line) - len(line.lstrip())]
        text = ast.get_source_segment(kernel_text, value) or ""
        start, end = value.col_offset, value.end_col_offset or value.col_offset
        lines[row] = f"{indent}{name} = {text}\n" + line[:start] + name + line[end:]
    return "".join(lines), named


def _after_last(statements: list[ast.stmt], reads: set[str]) -> list[ast.stmt]:
    """The statements after the last one that binds a name of `reads`."""
    last = max((k for k, s in enumerate(statements) if _bound(s) & reads), default=-1)
    return statements[last + 1 :]


def _output_base(pointer: ast.expr, reference: set[str]) -> str | None:
    """The name of the output a store's pointer expression writes: `residual` for `residual_out_ptr + ...`
    where the reference has a `residual`, else the output's own name; None for a numbered `out1`."""
    pointers = [n.id for n in ast.walk(pointer) if isinstance(n, ast.Name) and n.id.endswith("_ptr")]
    if len(pointers) != 1:
        return None
    output = pointers[0].removesuffix("_ptr")
    if output.endswith("_out") and output.removesuffix("_out") in reference:
        return output.removesuffix("_out")
    return None if re.fullmatch(r"out\d*", output) else output


def _pure_assignment(statement: ast.stmt) -> bool:
    """`name = expression` of Triton math and casts only: no memory access, no call of another function."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return False
    return _pure(statement.value)


def _pure(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr.startswith(_EFFECTS):
                return False
    return True


def _bound(statement: ast.stmt) -> set[str]:
    """Every name a statement binds, its nested blocks included."""
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _start(lines: list[str], statement: ast.stmt) -> int:
    """The statement's first line (0-based), the comment lines right above it included."""
    start = statement.lineno - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start
