"""A draft assignment: for every argument the draft passes, its kind and value (a tensor's dimensions as
expressions over named sizes, its dtype and how it is filled; a number; a string; None), plus the sizes'
values. It turns into an input-spec `args` table, and describes itself in one line per argument."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from extractors.drafting.shape_sources import DEFAULT

KINDS = ("tensor", "int", "float", "bool", "str", "none")


@dataclass
class ArgDraft:
    name: str
    kinds: list[str]  # candidate kinds, best first; `kind` is the one in use
    kind: str
    why: list[str] = field(default_factory=list)
    # tensors
    dims: list[str] = field(default_factory=list)
    confidence: list[int] = field(default_factory=list)
    dtype: str = "float32"
    fill: dict[str, Any] = field(default_factory=dict)  # init, low, high, mean, std
    # everything else
    value: Any = None  # int/float/bool (or an expression over sizes), or the string
    literals: list[str] = field(default_factory=list)  # a string's candidates
    optional: bool = False  # the code tests it against None: None is a path of its own
    default: str | None = None  # source text of the signature's default, None when required
    annotation: str = ""  # the signature's type hint, `torch.` and Optional[] removed
    shaped: bool = False  # dims were drafted (a 0-d tensor has none)

    def spec(self) -> dict[str, Any]:
        if self.kind == "none":
            return {"none": True}
        if self.kind == "tensor":
            out: dict[str, Any] = {"shape": list(self.dims), "dtype": self.dtype}
            out.update(self.fill)
            return out
        if self.kind == "str":
            return {"text": str(self.value)}
        return {"value": self.value}

    def describe(self, sizes: dict[str, int]) -> str:
        if self.kind == "none":
            return "None"
        if self.kind == "tensor":
            dims = ", ".join(self.dims)
            fill = self.fill.get("init", "randn")
            extra = ""
            if "high" in self.fill:
                extra = f" in [{self.fill.get('low', 0)}, {self.fill['high']})"
            return f"tensor [{dims}] {self.dtype} {fill}{extra}"
        if self.kind == "str":
            return repr(self.value)
        if isinstance(self.value, str):
            try:
                shown = eval(self.value, {"__builtins__": {"min": min, "max": max}}, dict(sizes))
            except Exception:  # an expression over sizes not known yet: show it as written
                shown = "?"
            return f"{self.kind} = {self.value} ({shown})"
        return f"{self.kind} = {self.value!r}"

    @property
    def value_kind(self) -> str:
        """The kind it has when given a value (an optional argument drafted as None has one too)."""
        return self.kind if self.kind != "none" else next((k for k in self.kinds if k != "none"), "none")

    def set_kind(self, kind: str) -> None:
        self.kind = kind
        if kind == "tensor" and not self.shaped:
            self.dims, self.confidence = ["tokens", "hidden"], [DEFAULT, DEFAULT]


@dataclass
class Assignment:
    args: dict[str, ArgDraft]
    sizes: dict[str, int]  # fixed sizes; "tokens" and "batch" are overridden per case
    model: str = ""
    scale: int = 1  # the model's widths are divided by this, so that the CPU runs the cases (cpu_budget)
    attempts: list[str] = field(default_factory=list)  # what each repair changed

    def copy(self) -> Assignment:
        return copy.deepcopy(self)

    def spec_args(self) -> dict[str, dict[str, Any]]:
        return {name: arg.spec() for name, arg in self.args.items()}

    def describe(self) -> list[str]:
        return [f"{name}: {arg.describe(self.sizes)}" for name, arg in self.args.items()]

    def key(self) -> str:
        return repr(sorted((n, repr(a.spec())) for n, a in self.args.items()))
