"""Names for sizes from a task's input spec: the name its SPEC gives each axis of a tensor argument
(`'query': {'shape': ['tokens', 'heads', 'head_dim']}`), for the sizes the reference leaves unnamed.

A reference seldom binds every size to a variable (`rotate_half` reads `x.shape[-1]`), and a size without
one is called after where it is read (`key_size2`, `QUERY_SIZE1`). The spec that builds the task's inputs
names each axis in the engine's words, so `key.shape[2]` is `head_dim` and `query.shape[1]` is `heads`.
Only a plain name counts (not `'tokens * 2'` nor a number), and not one the reference's module uses for
anything (a value the kernel may be named after) nor one the writer reserves for its own code. The names
are for the reader only: a spec that cannot be read names nothing. Both writers use them: the fusion
writer for its kernel parameters and host sizes, the Inductor seed for its host sizes.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import re
from pathlib import Path
from typing import Any

from evaluators.task import spec_literals

_AXIS = re.compile(r"(\w+)\.shape\[(\d+)\]")
# Names no generated code may rebind: builtins and the modules a candidate imports.
_EVERYWHERE = frozenset({*dir(builtins), "torch", "triton", "tl", "math", "libdevice"})


def spec_dim_names(
    inputs_path: Path, symbols: dict[str, str], reference: Any, reserved: set[str]
) -> dict[str, str]:
    """Size symbol -> the spec's name for the axis it is read from. `symbols`: each size symbol's host
    source (`s0` -> `key.shape[2]`); `reserved`: names the writer's own code binds (builtins and the
    imported modules are never taken)."""
    shapes = _spec_shapes(inputs_path)
    used = _module_identifiers(reference)
    if not shapes or used is None:
        return {}
    found: dict[str, str] = {}
    for symbol, source in symbols.items():
        axis = _AXIS.fullmatch(source)
        shape = shapes.get(axis[1], []) if axis else []
        name = shape[int(axis[2])] if axis and int(axis[2]) < len(shape) else None
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            continue
        if name not in used | reserved | _EVERYWHERE and not name.startswith("_"):
            found[symbol] = name
    return found


def _spec_shapes(inputs_path: Path) -> dict[str, list[Any]]:
    """Argument -> the `shape` list its SPEC entry gives; empty for inputs written otherwise."""
    spec = spec_literals(inputs_path).get("SPEC")
    if not isinstance(spec, dict):
        return {}
    return {
        str(name): list(entry["shape"])
        for name, entry in spec.items()
        if isinstance(entry, dict) and isinstance(entry.get("shape"), (list, tuple))
    }


def _module_identifiers(reference: Any) -> set[str] | None:
    """Every name the reference's module reads, binds or takes as a parameter (its helpers' too, whose
    values a kernel may be named after); None where its source cannot be read."""
    code = getattr(inspect.unwrap(reference), "__code__", None)
    try:
        tree = ast.parse(Path(code.co_filename).read_text()) if code is not None else None
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is None:
        return None
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return found | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
