"""How an engine takes a new kernel: the one Protocol each engine's `convention.py` implements, and what the
integration (kernelbot.integrate) hands it and gets back.

The integration builds the kernel module, its guard and the generated test the same way for every engine;
a convention decides where the kernel module goes (`kernel_file`) and how the engine reaches it (`wire`):
SGLang and the example engine add a `forward_triton` backend to the op, LMDeploy a `Triton<Op>Impl` in its
CUDA backend, and functions that are not ops get a guarded call where they are defined (call_site). A profile
names its convention (`convention = "sglang"` in profile.toml); user profiles that extend one inherit it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import libcst as cst

    from kernelbot.engines.model import Profile
    from kernelbot.integrate.envelope import Envelope
    from kernelbot.integrate.gather_target import Target
    from kernelbot.integrate.placement import Placement
    from kernelbot.integrate.route_to_kernel import KernelCall
    from kernelbot.integrate.task_view import TaskView

# profile.toml's `convention` -> the module implementing it
CONVENTIONS = {
    "call-site": "kernelbot.engines.call_site",
    "sglang": "kernelbot.engines.sglang.convention",
    "lmdeploy": "kernelbot.engines.lmdeploy.convention",
    "example": "kernelbot.engines.example.convention",
}


@dataclass(frozen=True)
class SlotEvidence:
    """What the integration is told about the kernel's measurements (by the confirmation stage).

    `beats_current_path`: the kernel was faster than the path the engine dispatches the op to today, on the
    measuring GPU (True), was not (False), or that was not measured (None). Only True lets the engine select
    the kernel by itself; otherwise it is added opt-in. `measured_compiled`: the kernel was timed inside
    torch.compile, so a call may go into a function the engine compiles."""

    beats_current_path: bool | None = None
    measured_compiled: bool = False


@dataclass(frozen=True)
class KernelRequest:
    """Where should the kernel module go? `placement` holds the profile's answer."""

    repo: Path
    profile: Profile
    placement: Placement
    target: Target
    qualname: str


@dataclass(frozen=True)
class WireRequest:
    """Everything a convention needs to make the engine call the kernel. `module` is the parsed source
    module (`original` its text); `call` the kernel call with the function's own arguments."""

    repo: Path
    profile: Profile
    placement: Placement
    view: TaskView
    target: Target
    module: cst.Module
    original: str
    call: KernelCall
    envelope: Envelope
    evidence: SlotEvidence


@dataclass(frozen=True)
class TestHook:
    """How the generated test reaches the kernel path: `method` of `owner` ((module, class); None: the
    class of the function itself), called with the function's arguments."""

    __test__ = False  # not a test class, whatever pytest infers from its name

    method: str
    owner: tuple[str, str] | None = None


@dataclass(frozen=True)
class Wiring:
    """What a convention did. `edits` maps repo-relative paths to (text before, text after); None before
    means a new file. `slot` says in words where the kernel went; `auto_selected` whether the engine now
    picks it by itself, and `selection` why or why not (for the PR body). `in_compile_region` is True when
    the call sits in a function the engine runs under torch.compile. `reference` is the file holding the
    reference code; unless `edits_reference` (the call-site convention, which routes the function itself),
    the function in it keeps every line (the integration checks)."""

    edits: dict[Path, tuple[str | None, str]]
    slot: str
    auto_selected: bool
    selection: str
    test_hook: TestHook
    reference: Path
    in_compile_region: bool = False
    edits_reference: bool = False
    notes: tuple[str, ...] = field(default=())


class Convention(Protocol):
    name: str

    def kernel_file(self, request: KernelRequest) -> PurePosixPath | None:
        """The kernel module's path (source-root relative part included), or None for the profile's rule."""
        ...

    def wire(self, request: WireRequest) -> Wiring:
        """The edits that make the engine call the kernel. Raises IntegrationError to refuse."""
        ...


def convention_for(name: str) -> Convention:
    module = importlib.import_module(CONVENTIONS[name])
    return module.CONVENTION
