"""What the capture subprocess hands back: Inductor's output code for one specialisation of the reference,
plus how its graph inputs and outputs relate to the reference's own arguments and return value.

Kept free of torch so that the parent process (and the conversion tests) can read captures cheaply.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

# Output structure leaves, as JSON: {"out": i} (i-th output of Inductor's graph), {"arg": name} (the
# reference returned one of its arguments), {"const": repr}. Containers: {"tuple": [...]}, {"list": [...]},
# {"dict": [[key, node], ...]}.
OutputNode = dict[str, Any]


@dataclass(frozen=True)
class GraphInput:
    """One input of Inductor's graph, in order, and the host expression that produces it."""

    kind: (
        str  # "tensor" | "symint" (a size, stride or int argument) | "scalar" (a float/int wrapped as tensor)
    )
    expr: str  # e.g. "x", "x.shape[0]", "eps"
    # Whether the value can change from call to call of one served model: it follows the task's dynamic
    # keys (tokens) or the inputs' random draws. True unless the capture showed it fixed; a size that is
    # not may be a kernel's tl.constexpr (one compilation per model, not one per call).
    dynamic: bool = True


@dataclass(frozen=True)
class Capture:
    variant: str  # label of the dtype specialisation, e.g. "bfloat16" ("" when there is only one)
    case: str  # the task case whose inputs were traced
    wrapper: str  # Inductor's output code (host `call` plus kernels in async_compile.triton strings)
    inputs: tuple[GraphInput, ...]
    outputs: OutputNode
    dtypes: dict[str, str] = field(default_factory=dict)  # tensor argument -> dtype name ("bfloat16")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capture:
        return cls(
            variant=str(data["variant"]),
            case=str(data["case"]),
            wrapper=str(data["wrapper"]),
            inputs=tuple(GraphInput(**i) for i in data["inputs"]),
            outputs=data["outputs"],
            dtypes=dict(data.get("dtypes", {})),
        )


@dataclass(frozen=True)
class CaptureReport:
    """The subprocess's answer: captures for every dtype specialisation, or why there are none."""

    captures: tuple[Capture, ...] = ()
    error: str = ""
    signature: str = ""  # the reference entry's `def` line (parameters with annotations and defaults)
    torch_version: str = ""
    device: str = ""
    notes: tuple[str, ...] = ()  # e.g. "case t1 specialises a size of 1; traced t256 instead"
    # a size input's host expression -> the name the task's input spec gives that axis ("key.shape[2]" ->
    # "head_dim"; evolution/writers/tracing/spec_dims.py)
    size_names: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "captures": [c.to_dict() for c in self.captures],
                "error": self.error,
                "signature": self.signature,
                "torch_version": self.torch_version,
                "device": self.device,
                "notes": list(self.notes),
                "size_names": self.size_names,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> CaptureReport:
        data = json.loads(text)
        return cls(
            captures=tuple(Capture.from_dict(c) for c in data.get("captures", [])),
            error=str(data.get("error", "")),
            signature=str(data.get("signature", "")),
            torch_version=str(data.get("torch_version", "")),
            device=str(data.get("device", "")),
            notes=tuple(data.get("notes", [])),
            size_names={str(k): str(v) for k, v in data.get("size_names", {}).items()},
        )
