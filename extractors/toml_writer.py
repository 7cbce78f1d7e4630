"""A small TOML writer for the files the extractors emit (task.toml, draft specs): strings, numbers,
booleans, lists of scalars, tables and arrays of tables. Comments can be put before a table."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def dumps(data: Mapping[str, Any], comments: Mapping[str, str] | None = None) -> str:
    comments = comments or {}
    lines: list[str] = []
    _table(data, [], lines, comments)
    return "\n".join(lines).strip() + "\n"


def _table(data: Mapping[str, Any], path: list[str], lines: list[str], comments: Mapping[str, str]) -> None:
    scalars = {k: v for k, v in data.items() if not _is_table(v) and not _is_table_array(v) and v is not None}
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in data.items():
        sub = [*path, key]
        dotted = ".".join(_key(p) for p in sub)
        if _is_table(value):
            lines.append("")
            if dotted in comments:
                lines.extend(f"# {c}" for c in comments[dotted].splitlines())
            lines.append(f"[{dotted}]")
            _table(value, sub, lines, comments)
        elif _is_table_array(value):
            if dotted in comments:
                lines.append("")
                lines.extend(f"# {c}" for c in comments[dotted].splitlines())
            for item in value:
                lines.append("")
                lines.append(f"[[{dotted}]]")
                _table(item, sub, lines, comments)


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value if v is not None) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")
