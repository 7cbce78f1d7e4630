"""Renders a task's input spec (SPEC/ORDER of a spec-generated inputs.py) as a plain `make_inputs` function
for the generated test: one line per argument, drawing the same values from the same seed as the task's
inputs.py does, so a maintainer reads what is built instead of a spec interpreter. An argument with `when`
is None where its case key is false (without drawing, as inputs.py does); tensors in the spec's activation
dtype (or whose dtype is the case key naming it) take the test's `float_dtype` instead, so one spec checks
every dtype the task's cases were built in. See
extractors/input_spec.py for the spec's fields."""

from __future__ import annotations

import keyword
import re
from typing import Any

from extractors.input_spec import DTYPES
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.task_view import InputSpecSource

_RESERVED = {"torch", "math", "gen", "seed", "device", "float_dtype"}
_FLOAT_INITS = {"randn", "rand", "probs", "ones", "zeros", "arange"}


def render_make_inputs(spec: InputSpecSource, sizes: list[str], swap: str | None = None) -> str:
    """`def make_inputs(*, <sizes>, seed) -> (args, kwargs)` building CPU values; with `swap` (a dtype
    name), also a `float_dtype` parameter that tensors of that dtype take instead."""
    clash = sorted(_RESERVED & {*spec.spec, *sizes})
    if clash:
        raise IntegrationError(f"the input spec names {clash}, which the generated test uses itself")
    params = ", ".join([*sizes, *(["float_dtype"] if swap else []), "seed"])
    doc = "the values the task's inputs.py draws from `seed`"
    if swap:
        doc += f", with float_dtype where it has {swap}" if swap in DTYPES else ", in float_dtype"
    lines = [
        f"def make_inputs(*, {params}):",
        *_docstring(f"The entry's arguments for one case, on the CPU: {doc}."),
        "    gen = torch.Generator().manual_seed(seed)",
    ]
    for name, arg in spec.spec.items():
        value = _value(name, arg, swap)
        if "when" in arg:
            value = f"{value} if {_expr(arg['when'], wrap=True)} else None"
        lines.append(f"    {name} = {value}")
    positional = [n for n, kind in spec.order if kind == "positional"]
    named = [n for n, kind in spec.order if kind != "positional"]
    args = "(" + ", ".join(positional) + ("," if len(positional) == 1 else "") + ")"
    kwargs = "{" + ", ".join(f'"{n}": {n}' for n in named) + "}"
    lines.append(f"    return {args}, {kwargs}")
    return "\n".join(lines) + "\n"


def needs_math(source: str) -> bool:
    return "math." in source


def _docstring(text: str, width: int = 80) -> list[str]:
    words, lines, line = text.split(), [], '    """'
    for word in words:
        if len(line) + 1 + len(word) > width and line.strip('" '):
            lines.append(line)
            line = "    "
        line += ("" if line.endswith(('"', " ")) else " ") + word
    lines.append(line + '"""')
    return lines


def _value(name: str, arg: dict[str, Any], swap: str | None = None) -> str:
    if "shape" in arg:
        return _tensor(name, arg, swap)
    if "value" in arg:
        return _expr(arg["value"])
    if "text" in arg:
        return repr(arg["text"])
    if "expr" in arg:
        return f"({arg['expr']})" if "\n" not in arg["expr"] else arg["expr"]
    return "None"


def _tensor(name: str, arg: dict[str, Any], swap: str | None = None) -> str:
    dims = [str(d) for d in arg["shape"]]
    shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    dtype = arg.get("dtype", "float32")
    init = arg.get("init", "randn")
    numel = f"math.prod({shape})"
    if init == "randn":
        text = _affine(f"torch.randn({shape}, generator=gen)", arg.get("std", 1.0), arg.get("mean", 0.0))
    elif init == "rand":
        low, high = arg.get("low", 0.0), arg.get("high", 1.0)
        text = _affine(f"torch.rand({shape}, generator=gen)", _difference(high, low), low)
    elif init == "randint":
        low, high = arg.get("low", 0), arg.get("high", 2)
        upper = (
            _expr(high)
            if _is_number(low) and _is_number(high) and high > low
            else f"max({_expr(high)}, {_expr(low)} + 1)"
        )
        text = f"torch.randint({_expr(low)}, {upper}, {shape}, generator=gen)"
    elif init == "perm":
        high = _expr(arg["high"]) if "high" in arg else numel
        text = _affine(
            f"torch.randperm({high}, generator=gen)[: {numel}].reshape({shape})", 1, arg.get("low", 0)
        )
    elif init == "arange":
        start, step = arg.get("start", 0), arg.get("step", 1)
        text = _affine(f"torch.arange({numel})", step, start) + f".reshape({shape})"
    elif init == "probs":
        logits = _affine(f"torch.randn({shape}, generator=gen)", arg.get("std", 1.0), 0)
        text = f"torch.softmax({logits}, dim=-1)"
    elif init in ("ones", "zeros"):
        text = f"torch.{init}({shape})"
    elif init == "full":
        text = f"torch.full({shape}, {_expr(arg.get('fill', 0))})"
    else:
        raise IntegrationError(f"input spec: args.{name}.init {init!r} is not one the test can render")
    target = "float_dtype" if swap is not None and dtype == swap else f"torch.{dtype}"
    if target == "torch.float32" and init in _FLOAT_INITS:
        return text
    return f"({text}).to({target})" if not _is_call(text) else f"{text}.to({target})"


def _affine(base: str, scale: object, offset: object) -> str:
    text = base
    if not (_is_number(scale) and scale == 1):
        text = f"{text} * {_expr(scale, wrap=True)}"
    if not (_is_number(offset) and offset == 0):
        text = f"{text} + {_expr(offset, wrap=True)}"
    return text


def _difference(high: object, low: object) -> object:
    if _is_number(high) and _is_number(low):
        return high - low  # type: ignore[operator]
    return f"({_expr(high)}) - ({_expr(low)})"


def _expr(value: object, wrap: bool = False) -> str:
    """A spec number or size expression as source; with `wrap`, parenthesised unless it is atomic."""
    if isinstance(value, str):
        atomic = re.fullmatch(r"[A-Za-z_]\w*|\d+(\.\d*)?|\(.*\)", value.strip()) is not None
        if keyword.iskeyword(value.strip()):
            raise IntegrationError(f"input spec: {value!r} is not an expression")
        return value.strip() if atomic or not wrap else f"({value.strip()})"
    return repr(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_call(text: str) -> bool:
    """Whether `text` is one call (or a call chain) that `.to(...)` may follow without parentheses."""
    depth = 0
    for i, char in enumerate(text):
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0 and char in " +-*/" and i > 0:
            return False
    return True
