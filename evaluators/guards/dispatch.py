"""ATen kernels re-registered by the candidate: `torch.library.Library("aten", "IMPL").impl("mul.Tensor",
...)` or `torch._C._dispatch_library(...)` replaces the kernel the reference calls, in this process, and no
audit event says so. A wrong kernel then matches a reference that computes the same wrong thing.

`DispatchTable` keeps the dispatcher's registrations for every `aten::` operator as the worker saw them
before the candidate was imported (`torch._C._dispatch_dump`: one line per dispatch key with the file and
line that registered its kernel), and `changes()` lists the registrations added since. Torch registers
some kernels lazily (meta and fake-tensor kernels, when a module is first imported); a registration made
from inside torch's own package is not the candidate's and is ignored. The comparison of ~3,000 operators
takes some tens of milliseconds, so the sandbox runs it at its stage boundaries, not at every call.
"""

from __future__ import annotations

import os
import re
from types import FrameType

# "CPU: registered at /path/file.py:12 :: (none) [ boxed ]" -> key, location
_LINE = re.compile(r"^(?P<key>[A-Za-z0-9_]+): registered at (?P<where>.+?)(?: :: |$)")
_NAMESPACE = "aten::"


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.realpath(torch.__file__)) + os.sep


def _snapshot() -> dict[str, str]:
    import torch

    dump = torch._C._dispatch_dump
    return {name: dump(name) for name in torch._C._dispatch_get_all_op_names() if name.startswith(_NAMESPACE)}


class DispatchTable:
    def __init__(self) -> None:
        self._before = _snapshot()
        self._torch_dir = _torch_dir()

    def changes(self) -> list[str]:
        """One line of evidence per operator whose kernels someone outside torch registered since."""
        found: list[str] = []
        for name, text in _snapshot().items():
            before = self._before.get(name, "")
            if text == before:
                continue
            added = []
            for line in sorted(set(text.splitlines()) - set(before.splitlines())):
                match = _LINE.match(line)
                if match is None or "(inactive)" in line:
                    continue
                where = match["where"]
                if os.path.realpath(where.rsplit(":", 1)[0]).startswith(self._torch_dir):
                    continue  # torch's own lazy registrations (meta kernels, decompositions)
                added.append(f"{match['key']} kernel registered at {where}")
            if added:
                new = "" if name in self._before else " (a new operator)"
                found.append(f"{name}{new}: {'; '.join(added)}")
        return found


# The methods of torch._C._DispatchModule (the handle torch.library.Library wraps) that register something.
REGISTRATION_METHODS = (
    "impl",
    "impl_t_t",
    "impl_with_aoti_compile",
    "fallback",
    "fallback_fallthrough",
    "def_",
    "def_legacy",
    "def_name_t_t",
    "def_schema_t_t",
    "define",
)
_LIBRARY_PARTS = (f"torch{os.sep}library.py", f"torch{os.sep}_library{os.sep}")


def caller_beyond_torch_library(frame: FrameType | None) -> FrameType | None:
    """The first frame outside torch.library's own modules: who asked for the registration."""
    while frame is not None and any(part in frame.f_code.co_filename for part in _LIBRARY_PARTS):
        frame = frame.f_back
    return frame


_baseline: DispatchTable | None = None


def baseline() -> DispatchTable:
    """The table as first taken in this process: a warm worker takes it before any candidate exists."""
    global _baseline
    if _baseline is None:
        _baseline = DispatchTable()
    return _baseline
