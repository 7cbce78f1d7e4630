"""Which Python code ran during one candidate call (sys.setprofile): the reference, torch.compile's machinery
or the evaluator's own modules.

Regex cannot see `sys.modules["kb_reference_..."].fn(x)` or a torch.compile'd function built at run time; the
profiler sees the code objects that actually executed. Each code object is classified once (cached by id), so
the per-call cost is one dict lookup.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from evaluators.guards.audit import Attributor

_setprofile = sys.setprofile  # bound now: a candidate replacing sys.setprofile cannot switch us off
_getprofile = sys.getprofile
# torch.compile's machinery: what compiles a frame, and what a compiled function runs (inductor's output code,
# aot_autograd's wrappers). Not all of torch._dynamo: torch._disable_dynamo (used by dispatch modes, thus by
# the guards themselves) runs eval_frame.py / decorators.py on every call.
_COMPILE_DIRS = ("_inductor", os.path.join("_functorch", "_aot_autograd"))
_COMPILE_FILES = (
    os.path.join("_dynamo", "convert_frame.py"),
    os.path.join("_dynamo", "symbolic_convert.py"),
    os.path.join("_dynamo", "output_graph.py"),
    os.path.join("_functorch", "aot_autograd.py"),
)
_MAX_EVENTS = 20
_TRITON_SHIMS = ("triton_interpret_rounding.py",)  # in evaluators/backends/


@dataclass(frozen=True)
class TracedEvent:
    kind: str  # HACK_CLASSES key
    evidence: str


class CodeTracer:
    """Context manager: records code from forbidden places that runs while it is active (this thread)."""

    def __init__(self, attributor: Attributor, reference_file: str | os.PathLike | None) -> None:
        import torch

        self.attributor = attributor
        self.reference_file = os.path.realpath(reference_file) if reference_file else ""
        torch_dir = os.path.dirname(os.path.realpath(torch.__file__))
        self.compile_dirs = tuple(os.path.join(torch_dir, d) + os.sep for d in _COMPILE_DIRS)
        self.compile_files = frozenset(os.path.join(torch_dir, f) for f in _COMPILE_FILES)
        # This file lies in evaluators/guards/: the guards' own code (wrappers and recorders that run inside a
        # watched call on the candidate's behalf) is exempt, the rest of evaluators/ is not.
        guards_dir = os.path.dirname(os.path.realpath(__file__))
        self.guards_dir = guards_dir + os.sep
        self.evaluators_dir = os.path.dirname(guards_dir) + os.sep
        # What the interpreter backend installs into Triton runs as part of Triton's interpreter, on every
        # kernel's casts: it is not the candidate calling the evaluator.
        self.triton_shims = frozenset(
            os.path.join(self.evaluators_dir, "backends", name) for name in _TRITON_SHIMS
        )
        self.events: list[TracedEvent] = []
        self._verdicts: dict[CodeType, str | None] = {}
        self._seen: set[str] = set()
        self._previous: Any = None

    def __enter__(self) -> CodeTracer:
        self._previous = _getprofile()
        _setprofile(self._on_event)
        return self

    def __exit__(self, *exc: object) -> None:
        _setprofile(self._previous)

    def _on_event(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        verdict = self._verdicts.get(code, "?")
        if verdict == "?":
            verdict = self._verdicts[code] = self._classify(code)
        if verdict is not None and len(self.events) < _MAX_EVENTS:
            if self.attributor.candidate_frame(frame) is None:
                return  # the harness's own code around the call (sync, the guards' wrappers)
            where = self.attributor.where(frame)
            evidence = (
                f"{verdict} {code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno}) "
            )
            evidence += f"called from {where}"
            if evidence not in self._seen:
                self._seen.add(evidence)
                kind = "sandbox_escape" if verdict.startswith("ran the evaluator") else "pytorch_fallback"
                self.events.append(TracedEvent(kind, evidence))

    def _classify(self, code: CodeType) -> str | None:
        filename = code.co_filename
        if filename.startswith("<"):
            return None
        path = os.path.realpath(filename)
        if self.reference_file and path == self.reference_file:
            return "ran the task's reference"
        if path.startswith(self.compile_dirs) or path in self.compile_files:
            return "ran torch.compile machinery"
        if "torchinductor_" in path:
            return "ran inductor-generated code"
        if path in self.triton_shims:
            return None
        if path.startswith(self.evaluators_dir) and not path.startswith(self.guards_dir):
            return "ran the evaluator's code"
        return None
