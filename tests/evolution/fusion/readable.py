"""What a generated candidate must be to ship in a pull request (docs/fusion.md, "Readable output"): the
reference's names rather than numbered ones, one @triton.jit body per structure, only code the device runs,
lines within the engine's limit and a bounded length. `problems(source)` lists every rule it breaks."""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize

NUMBERED = re.compile(r"v\d+|a\d+_\d+")
INTERPRETER_BRANCHES = ("is_available(", "TRITON_INTERPRET", "EMULATE", "_interpreted(")
LINE_LIMIT = 110  # the example engine's ruff line length (examples/minirepo/pyproject.toml)
# The engines' own kernels for these ops are 100-200 lines; the generated MoE router (its top-k building
# blocks included) and the two-dtype activations are still above 200, hence the bound of 250.
MAX_LINES = 250


def numbered_names(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sorted({t.string for t in tokens if t.type == tokenize.NAME and NUMBERED.fullmatch(t.string)})


def _normalised(fn: ast.FunctionDef) -> str:
    """The body of `fn` with every name replaced by its order of first appearance (renaming-blind)."""
    body = copy.deepcopy(fn)
    body.name = "f"
    body.decorator_list = []
    order: dict[str, str] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Name):
            node.id = order.setdefault(node.id, f"n{len(order)}")
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg is not None):
            node.arg = order.setdefault(node.arg, f"n{len(order)}")
    return ast.dump(body)


def jit_functions(source: str) -> list[ast.FunctionDef]:
    return [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def duplicate_kernels(source: str) -> list[tuple[str, str]]:
    """Pairs of @triton.jit functions whose bodies are equal up to renaming."""
    seen: dict[str, str] = {}
    pairs = []
    for fn in jit_functions(source):
        key = _normalised(fn)
        if key in seen:
            pairs.append((seen[key], fn.name))
        else:
            seen[key] = fn.name
    return pairs


def problems(source: str, *, limit: int = LINE_LIMIT, max_lines: int = MAX_LINES) -> list[str]:
    found = []
    names = numbered_names(source)
    if names:
        found.append(f"numbered names: {', '.join(names[:8])}")
    for first, second in duplicate_kernels(source):
        found.append(f"{first} and {second} have one body")
    for marker in INTERPRETER_BRANCHES:
        if marker in source:
            found.append(f"an interpreter branch ({marker})")
    long = [k + 1 for k, line in enumerate(source.splitlines()) if len(line) > limit]
    if long:
        found.append(f"lines over {limit} characters: {long[:5]}")
    count = len(source.splitlines())
    if count > max_lines:
        found.append(f"{count} lines (at most {max_lines})")
    return found
