"""Names for sizes from a task's input spec: the name its SPEC gives each axis of a tensor argument
(`'query': {'shape': ['tokens', 'heads', 'head_dim']}`), for the sizes the reference leaves unnamed.

A reference seldom binds every size to a variable (`rotate_half` reads `x.shape[-1]`), and a size without
one is called after where it is read (`key_size2`, `QUERY_SIZE1`). The spec that builds the task's inputs
names each axis in the engine's words, so `key.shape[2]` is `head_dim` and `query.shape[1]` is `heads`.
Only a plain name counts (not `'tokens * 2'` nor a number), and not one the reference's module uses for
anything (a value the kernel may be named after), nor a parameter's or one the generated code binds. The
names are for the reader only: a spec that cannot be read names nothing.
"""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path
from typing import Any

from evolution.writers.fusion.trace.sizes import module_identifiers, reserved_names

_AXIS = re.compile(r"(\w+)\.shape\[(\d+)\]")


def spec_dim_names(inputs_path: Path, symbols: dict[str, str], reference: Any) -> dict[str, str]:
    """Size symbol -> the spec's name for the axis it is read from. `symbols`: each size symbol's host
    source (`s0` -> `key.shape[2]`)."""
    shapes = _spec_shapes(inputs_path)
    used = module_identifiers(reference)
    if not shapes or used is None:
        return {}
    reserved = reserved_names(set())
    found: dict[str, str] = {}
    for symbol, source in symbols.items():
        axis = _AXIS.fullmatch(source)
        shape = shapes.get(axis[1], []) if axis else []
        name = shape[int(axis[2])] if axis and int(axis[2]) < len(shape) else None
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            continue
        if name not in used and name not in reserved and not name.startswith("_"):
            found[symbol] = name
    return found


def _spec_shapes(inputs_path: Path) -> dict[str, list[Any]]:
    """Argument -> the `shape` list its SPEC entry gives (a spec-generated inputs.py, read without running
    it); empty for inputs written otherwise."""
    try:
        tree = ast.parse(inputs_path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == "SPEC":
            try:
                spec = ast.literal_eval(statement.value)
            except ValueError:
                return {}
            if not isinstance(spec, dict):
                return {}
            return {
                str(name): list(entry["shape"])
                for name, entry in spec.items()
                if isinstance(entry, dict) and isinstance(entry.get("shape"), (list, tuple))
            }
    return {}
