"""Sympy text of a traced size: torch's own size functions (FloorDiv, CeilDiv, ModularIndexing, ...) spelled
in plain sympy, which the generator's symbols parse. Shared by the trace's encoder and its reading of the
reference's names for sizes."""

from __future__ import annotations

from typing import Any

from evolution.writers.tracing.errors import TraceError


def sym_text(expr: Any) -> str:
    """Sympy text of a size expression with torch's own functions spelled in plain sympy."""
    import sympy

    def plain(e: Any) -> Any:
        if not getattr(e, "args", ()):
            return e
        args = [plain(a) for a in e.args]
        name = type(e).__name__
        if name == "FloorDiv":
            return sympy.floor(args[0] / args[1])
        if name in ("CleanDiv", "IntTrueDiv", "FloatTrueDiv", "TruncToFloat"):
            return args[0] / args[1] if len(args) == 2 else args[0]
        if name == "CeilDiv":
            return sympy.ceiling(args[0] / args[1])
        if name in ("PythonMod", "Mod"):
            return sympy.Mod(args[0], args[1])
        if name == "ModularIndexing":
            return sympy.Mod(sympy.floor(args[0] / args[1]), args[2])
        if name in ("Identity", "ToFloat", "TruncToInt", "FloorToInt", "RoundToInt"):
            return args[0]
        if isinstance(e, (sympy.Basic,)) and type(e).__module__.startswith("sympy"):
            return e.func(*args)
        raise TraceError(f"a size expression uses {name}, which the generator does not read")

    return str(plain(expr))
