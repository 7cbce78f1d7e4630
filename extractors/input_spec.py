"""Input specs: a TOML description of a task's inputs with symbolic sizes, expanded into named cases and a
generated, self-contained inputs.py.

    [sizes]                      # a list makes one case per value (cartesian product over lists)
    tokens = [1, 8, 64, 256]
    hidden = 4096

    [[cases]]                    # optional: explicit cases instead of the product (sizes give defaults)
    name = "decode"
    tokens = 1

    [args.x]                     # a tensor: shape over sizes, dtype, how to fill it
    shape = ["tokens", "hidden"]
    dtype = "bfloat16"           # or a size naming a dtype per case: [sizes] dtype = ["float32", "bfloat16"]
    init = "randn"               # randn | rand | randint | ones | zeros | full | arange | perm | probs
    [args.topk]
    value = 8                    # a Python number/bool, or an expression over sizes ("hidden // 2")
    [args.mode]
    text = "static"              # a literal string
    [args.seq_lens]              # any Python expression: torch, math, gen, device, sizes, earlier args
    expr = "torch.randint(1, 64, (tokens,), generator=gen).to(torch.int32)"
    [args.bias]
    none = true
    [args.residual]              # any argument may add `when`: an expression over the case; false -> None
    shape = ["tokens", "hidden"]
    when = "with_residual"
"""

from __future__ import annotations

import itertools
import json  # a JSON string is a TOML basic string: the refusal's `expr = ...` is pasteable
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractors.errors import SpecError
from extractors.signature import Param, call_order

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEMPLATES = Path(__file__).parent / "templates"
INITS = ("randn", "rand", "randint", "ones", "zeros", "full", "arange", "perm", "probs")
DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "float8_e4m3fn",
    "float8_e5m2",
)
_ARG_KINDS = ("shape", "value", "text", "expr", "none")
_TENSOR_KEYS = {
    "shape",
    "dtype",
    "init",
    "low",
    "high",
    "mean",
    "std",
    "fill",
    "start",
    "step",
    "comment",
    "when",
}
_DYNAMIC_SIZES = {"tokens", "batch", "num_tokens", "bs", "batch_size", "seq_len", "num_seqs"}


@dataclass
class InputSpec:
    sizes: dict[str, list[Any]] = field(default_factory=dict)
    cases: list[dict[str, Any]] | None = None
    args: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = "spec"  # "spec" | "draft" — where it came from, for the summary
    # Sizes the spec declares to vary at serving time though its cases hold them fixed (a decode step's
    # longest sequence): the kernel must take them at run time, not compile one variant per value.
    dynamic: list[str] = field(default_factory=list)

    def expand_cases(self) -> list[tuple[str, dict[str, Any]]]:
        defaults = {k: v[0] for k, v in self.sizes.items()}
        if self.cases:
            out = []
            for i, case in enumerate(self.cases):
                name = str(case.get("name") or f"case{i}")
                out.append((name, {**defaults, **{k: v for k, v in case.items() if k != "name"}}))
            return out
        varying = [k for k, v in self.sizes.items() if len(v) > 1]
        combos = itertools.product(*(self.sizes[k] for k in self.sizes))
        out = []
        for combo in combos:
            params = dict(zip(self.sizes, combo, strict=True))
            name = "_".join(f"{k}{params[k]}" for k in varying) or "default"
            out.append((name, params))
        return out

    def dynamic_sizes(self) -> list[str]:
        """The batch-like sizes the cases vary, and the sizes the spec declares dynamic."""
        cases = self.expand_cases()
        varied = [k for k in self.sizes if k in _DYNAMIC_SIZES and len({str(c[1].get(k)) for c in cases}) > 1]
        return [k for k in self.sizes if k in varied or k in self.dynamic]

    def to_toml_dict(self) -> dict[str, Any]:
        # A plain top-level key goes before every table (after one it would belong to that table).
        data: dict[str, Any] = {"dynamic": self.dynamic} if self.dynamic else {}
        data["sizes"] = {k: (v if len(v) > 1 else v[0]) for k, v in self.sizes.items()}
        if self.cases:
            data["cases"] = self.cases
        data["args"] = self.args
        return data


def load_spec(path: Path) -> InputSpec:
    try:
        raw = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise SpecError(f"--spec {path}: cannot read it: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"--spec {path} is not valid TOML: {exc}") from exc
    return parse_spec(raw, str(path))


def parse_spec(raw: dict[str, Any], where: str) -> InputSpec:
    unknown = set(raw) - {"sizes", "cases", "args", "dynamic"}
    if unknown:
        raise SpecError(
            f"{where}: unknown top-level keys {sorted(unknown)} (expected sizes, cases, args, dynamic)"
        )
    sizes_raw = raw.get("sizes", {})
    if not isinstance(sizes_raw, dict):
        raise SpecError(f"{where}: [sizes] must be a table of name = value or [values]")
    sizes: dict[str, list[Any]] = {}
    for name, value in sizes_raw.items():
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, (int, float, bool, str)) for v in values):
            raise SpecError(f"{where}: sizes.{name} must be a number or a non-empty list of numbers")
        sizes[name] = values
    cases = raw.get("cases")
    if cases is not None and (not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases)):
        raise SpecError(f"{where}: [[cases]] must be an array of tables")
    if cases is not None:
        names = [str(c.get("name", "")) for c in cases]
        if any(not n for n in names) or len(set(names)) != len(names):
            raise SpecError(f"{where}: every [[cases]] entry needs a unique non-empty name")
    args = raw.get("args", {})
    if not isinstance(args, dict) or not args:
        raise SpecError(f"{where}: needs an [args.<parameter>] table for each argument to pass")
    for name, arg in args.items():
        _check_arg(name, arg, where)
    dynamic = _dynamic(raw.get("dynamic", []), sizes, where)
    spec = InputSpec(sizes=sizes, cases=cases, args=args, dynamic=dynamic)
    _check_dtype_sizes(spec, where)
    return spec


def _dynamic(raw: Any, sizes: dict[str, list[Any]], where: str) -> list[str]:
    """The declared dynamic sizes: integer sizes of [sizes], each named once."""
    if not isinstance(raw, list) or not all(isinstance(k, str) for k in raw) or len(set(raw)) != len(raw):
        raise SpecError(f"{where}: dynamic must be a list of size names, each once")
    for key in raw:
        if key not in sizes:
            raise SpecError(f"{where}: dynamic names {key!r}, which is not in [sizes]")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes[key]):
            raise SpecError(f"{where}: dynamic names {key!r}, whose values are not integers")
    return list(raw)


def _check_arg(name: str, arg: Any, where: str) -> None:
    if not isinstance(arg, dict):
        raise SpecError(f"{where}: args.{name} must be a table")
    if "when" in arg and not isinstance(arg["when"], str):
        raise SpecError(f"{where}: args.{name}.when must be a string (an expression over the case)")
    kinds = [k for k in _ARG_KINDS if k in arg]
    if len(kinds) != 1:
        raise SpecError(
            f"{where}: args.{name} needs exactly one of {', '.join(_ARG_KINDS)} (got {kinds or 'none'})"
        )
    if kinds[0] == "shape":
        extra = set(arg) - _TENSOR_KEYS
        if extra:
            raise SpecError(f"{where}: args.{name}: unknown keys {sorted(extra)} for a tensor")
        if not isinstance(arg["shape"], list) or not all(isinstance(d, (int, str)) for d in arg["shape"]):
            raise SpecError(f"{where}: args.{name}.shape must be a list of ints and size names/expressions")
        if not isinstance(arg.get("dtype", "float32"), str):
            raise SpecError(f"{where}: args.{name}.dtype must be a dtype name or a size naming one")
        if arg.get("init", "randn") not in INITS:
            raise SpecError(f"{where}: args.{name}.init {arg.get('init')!r} is not one of {', '.join(INITS)}")
    elif kinds[0] in ("text", "expr") and not isinstance(arg[kinds[0]], str):
        raise SpecError(f"{where}: args.{name}.{kinds[0]} must be a string")


def _check_dtype_sizes(spec: InputSpec, where: str) -> None:
    """A tensor's dtype is a dtype name, or a size whose value in every case is one (a spec checking the
    function in several dtypes names them per case)."""
    cases = spec.expand_cases()
    for name, arg in spec.args.items():
        dtype = arg.get("dtype", "float32") if "shape" in arg else "float32"
        if dtype in DTYPES:
            continue
        values = [params.get(dtype) for _, params in cases]
        if dtype not in spec.sizes and not all(dtype in params for _, params in cases):
            raise SpecError(
                f"{where}: args.{name}.dtype {dtype!r} is neither one of {', '.join(DTYPES)} nor a size"
            )
        wrong = sorted({repr(v) for v in values if v not in DTYPES})
        if wrong:
            raise SpecError(
                f"{where}: args.{name}.dtype names the size {dtype!r}, whose values {', '.join(wrong)} are "
                f"not dtypes ({', '.join(DTYPES)})"
            )


def check_against_signature(
    spec: InputSpec, signature: list[Param], where: str, built_by: dict[str, list[str]] | None = None
) -> None:
    """`built_by`: parameter -> the expressions `__init__` builds it with (shown as the `expr` to give)."""
    known = {p.name for p in signature}
    has_varkw = any(p.kind == "varkw" for p in signature)
    stray = [n for n in spec.args if n not in known]
    if stray and not has_varkw:
        raise SpecError(f"{where}: args {stray} are not parameters of the entry ({', '.join(sorted(known))})")
    missing = [p.name for p in signature if p.required and p.name not in spec.args]
    if missing:
        tables = "; ".join(
            _table_for(p, (built_by or {}).get(p.name, [])) for p in signature if p.name in missing
        )
        raise SpecError(
            f"{where}: no [args.<name>] for required parameters {missing}; give each a table, e.g. {tables} "
            '(a tensor as shape = ["tokens", "hidden"], a number as value = 8, a string as text = "...", '
            "any other value (a module, a callable, a tuple) as a Python expression: "
            'expr = "torch.nn.SiLU()", '
            "over torch, math, the sizes and earlier arguments)"
        )


def _table_for(param: Param, built_by: list[str]) -> str:
    """The table most likely to fit a missing parameter: the expression `__init__` builds it with, else one
    its annotation suggests."""
    if built_by:
        text = built_by[0].strip()
        text = "torch." + text if text.startswith(("nn.", "F.")) else text
        text = text.replace("torch.F.", "torch.nn.functional.")
        return f"[args.{param.name}] expr = {json.dumps(text)} (as __init__ builds it)"
    annotation = param.annotation.replace(" ", "")
    if annotation in ("int", "float"):
        return f"[args.{param.name}] value = {8 if annotation == 'int' else 1.0}"
    if annotation == "str":
        return f'[args.{param.name}] text = "..."'
    if annotation == "bool":
        return f"[args.{param.name}] value = false"
    if "Tensor" in annotation:
        return f'[args.{param.name}] shape = ["tokens", "hidden"]'
    return f'[args.{param.name}] expr = "..."'


def render_inputs(spec: InputSpec, signature: list[Param], task_name: str, header: str = "") -> str:
    order = call_order(signature, set(spec.args))
    order += [(n, "keyword") for n in spec.args if n not in {o[0] for o in order}]
    template = (TEMPLATES / "inputs_spec.py.tmpl").read_text()
    text = template.replace("{{TASK}}", task_name)
    text = text.replace("{{SPEC}}", _pretty({n: spec.args[n] for n, _ in order}))
    text = text.replace("{{ORDER}}", _pretty(order))
    return (header + text) if header else text


def _pretty(value: Any, indent: int = 0) -> str:
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{k!r}: {_pretty(v, indent + 4)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return "[\n" + "\n".join(f"{pad}{v!r}," for v in value) + "\n" + " " * indent + "]"
    return repr(value)
