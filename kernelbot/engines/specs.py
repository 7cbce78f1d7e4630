"""Input specs shipped for an engine's functions, so that nobody writes one to run the bundled example.

`engines/<profile>/specs/<dotted function>.toml`, e.g. `engines/example/specs/minisglang.layers.activation.
SiluAndMul.forward_native.toml` for `minisglang.layers.activation:SiluAndMul.forward_native` (the path form
`minisglang/layers/activation.py:SiluAndMul.forward_native` finds the same file).
"""

from __future__ import annotations

from pathlib import Path

ENGINES = Path(__file__).resolve().parent


def dotted(function: str) -> str:
    """`pkg/mod.py:Cls.meth` or `pkg.mod:Cls.meth` -> `pkg.mod.Cls.meth`."""
    module, sep, qualname = function.partition(":")
    if not sep:
        return function
    module = module.removesuffix(".py").replace("/", ".").strip(".")
    return f"{module}.{qualname}"


def shipped_spec(profile: str, function: str) -> Path | None:
    path = ENGINES / profile / "specs" / f"{dotted(function)}.toml"
    return path if path.is_file() else None


def shipped_functions(profile: str) -> list[str]:
    """The functions a profile ships specs for, in `module:Qualname` form where it can be told apart."""
    return sorted(p.stem for p in (ENGINES / profile / "specs").glob("*.toml"))
