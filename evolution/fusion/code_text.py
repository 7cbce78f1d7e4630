"""Source text of the values the emitter writes: literals of each dtype, and the checks and parentheses
that decide whether code can be used as an operand as it is (a name or a literal needs no binding).
"""

from __future__ import annotations

import re


def literal(value: float | int | bool, dtype: str) -> str:
    if dtype == "i1":
        return "1" if value else "0"
    if dtype in ("fp32", "fp64"):
        number = float(value)
        if number != number:
            return "float('nan')"
        if number in (float("inf"), float("-inf")):
            return "float('inf')" if number > 0 else "float('-inf')"
        return repr(number)
    return str(int(value))


def literal_value(code: str) -> float | int:
    text = code.strip("()")
    if "float(" in text:
        return float(text.replace("float(", "").rstrip(")").strip("'"))
    return float(text) if any(c in text for c in ".einf") else int(text)


def is_literal(code: str) -> bool:
    return bool(re.fullmatch(r"\(?-?[\d.]+(e[-+]?\d+)?\)?|float\('-?(inf|nan)'\)", code))


def is_simple(code: str) -> bool:
    return code.isidentifier() or is_literal(code)


def wrapped(code: str) -> str:
    if code.isidentifier() or (code.startswith("(") and code.endswith(")") and _balanced(code[1:-1])):
        return code
    return f"({code})"


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
