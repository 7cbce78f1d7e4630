"""The runtime sandbox installed in each worker process before the candidate is imported.

`Sandbox.install()` adds an audit hook (irrevocable, by design: a candidate cannot remove it), wraps the
thread-start primitives, and snapshots the harness's attributes and the global precision flags. From then on
every audited event whose stack holds the candidate's file is judged by `AuditPolicy`; the wrappers and
snapshot comparisons add what the audit hook cannot see (threads, module-level monkey-patching, flag changes,
torch modes left pushed). `findings()` returns everything seen so far as HackFindings with evidence.

The candidate must be imported from `candidate_path`: its code objects carry that file name, and that is how
an event is attributed to it (see guards.audit.Attributor).
"""

from __future__ import annotations

import _thread
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evaluators.guards import dispatch
from evaluators.guards.audit import Attributor, AuditPolicy, Violation
from evaluators.guards.snapshots import (
    HarnessSnapshot,
    flag_changes,
    mode_stack_depths,
    precision_flags,
)
from evaluators.result import HackFinding

_MAX_FINDINGS = 200


class SandboxViolation(PermissionError):
    """Raised into candidate code that tries something the sandbox forbids (after recording it)."""


_warmed_up = False
_active: Sandbox | None = None  # the sandbox installed last in this process (one per worker)


def warm_up() -> None:
    """Import lazily-loaded machinery the guards use (torch._dynamo is pulled in by dispatch modes), so that
    loading it never happens while a candidate call is being watched. Call it in a warm worker, before a
    candidate arrives; `Sandbox.install` calls it too."""
    global _warmed_up
    if _warmed_up:
        return
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Noop(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Callable[..., Any], types: tuple, args: tuple = (), kwargs: dict | None = None
        ) -> Any:
            return func(*args, **(kwargs or {}))

    with _Noop():
        torch.empty(2).fill_(1).view(1, 2).t()
    import triton.testing  # noqa: F401  (the timing stage uses it; snapshot it as loaded)

    dispatch.baseline()  # the ATen registrations before any candidate exists
    _warmed_up = True


class Sandbox:
    def __init__(self, candidate_path: Path, protected_paths: Sequence[Path]) -> None:
        self.candidate_path = Path(candidate_path)
        self.protected_paths = tuple(Path(p) for p in protected_paths)
        self.attributor = Attributor(str(self.candidate_path))
        self._policy: AuditPolicy | None = None
        self._violations: list[Violation] = []
        self._seen: set[tuple[str, str]] = set()
        self._depth = 0
        self._installed = False
        self._busy = threading.local()
        self._snapshot: HarnessSnapshot | None = None
        self._flags: dict[str, object] = {}
        self._modes = (0, 0)

    # --- lifecycle ---------------------------------------------------------------------------------

    def install(self) -> None:
        if self._installed:
            return
        warm_up()
        self._policy = AuditPolicy(self.attributor, self.protected_paths)
        self._wrap_thread_starts()
        global _active
        _active = self
        self._wrap_dispatcher()
        self._snapshot = HarnessSnapshot()
        self._flags = precision_flags()
        self._modes = mode_stack_depths()
        sys.addaudithook(self._hook)
        self._installed = True

    @property
    def installed(self) -> bool:
        return self._installed

    @contextmanager
    def armed(self) -> Iterator[None]:
        """Candidate code runs inside (import, calls). Re-entrant; state is checked as the last exits."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._installed:
                self.checkpoint()

    @property
    def is_armed(self) -> bool:
        return self._depth > 0

    # --- findings ----------------------------------------------------------------------------------

    def record(self, kind: str, evidence: str) -> None:
        key = (kind, evidence)
        if key in self._seen or len(self._violations) >= _MAX_FINDINGS:
            return
        self._seen.add(key)
        self._violations.append(Violation(kind, evidence))

    def checkpoint(self, label: str = "") -> None:
        """Compare harness identities, precision flags and torch mode stacks with the install-time state."""
        if not self._installed:
            return
        suffix = f" ({label})" if label else ""
        assert self._snapshot is not None
        for change in self._snapshot.changes():
            self.record("harness_patch", change + suffix)
        for change in flag_changes(self._flags, precision_flags()):
            self.record("precision_downgrade", f"global precision flag changed: {change}{suffix}")
        modes = mode_stack_depths()
        if modes != self._modes:
            self.record(
                "harness_patch",
                f"left torch modes pushed after returning (function/dispatch mode stack depth {self._modes} "
                f"-> {modes}): later torch calls, the harness's included, would be intercepted{suffix}",
            )

    def check_dispatcher(self) -> None:
        """Compare the dispatcher's ATen registrations with the table taken before the candidate existed
        (guards.dispatch): the backstop behind the wrapped registration methods, for a candidate that found
        another way in. Tens of milliseconds, so the cascade asks once, before it passes a candidate."""
        if self._installed:
            for change in dispatch.baseline().changes():
                self.record("kernel_override", f"re-registers an ATen kernel: {change}")

    def findings(self) -> list[HackFinding]:
        self.checkpoint()
        return [HackFinding(v.kind, v.evidence, detector="runtime") for v in self._violations]

    # --- the audit hook ----------------------------------------------------------------------------

    def _hook(self, event: str, args: tuple) -> None:
        if not AuditPolicy.interesting(event) or getattr(self._busy, "on", False):
            return
        self._busy.on = True
        violation = None
        try:
            frame = sys._getframe(1)
            origin = self.attributor.origin(frame)
            if origin not in (None, "triton"):
                assert self._policy is not None
                violation = self._policy.check(event, args, origin, frame)
        except Exception as exc:  # a guard bug must not look like a candidate crash; keep it visible
            self.record("sandbox_escape", f"guard error while judging {event}: {type(exc).__name__}: {exc}")
        finally:
            self._busy.on = False
        if violation is not None:
            self.record(violation.kind, violation.evidence)
            # Refuse the operation too: recording alone would let a candidate delete files or open sockets.
            raise SandboxViolation(f"kernelbot sandbox refused: {violation.evidence}")

    # --- the dispatcher ------------------------------------------------------------------------------

    def _wrap_dispatcher(self) -> None:
        """Registering a kernel from candidate code (torch.library.Library, torch._C._dispatch_library) is
        refused: every such registration goes through a method of the dispatcher's handle class."""
        import torch

        handle = torch._C._DispatchModule
        for name in dispatch.REGISTRATION_METHODS:
            original = getattr(handle, name, None)
            if original is not None and not getattr(original, "_kb_wrapped", False):
                setattr(handle, name, self._registration_wrapper(name, original))

    @staticmethod
    def _registration_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def register(handle: Any, *args: Any, **kwargs: Any) -> Any:
            sandbox = _active  # the wrapper stays on the class; the sandbox installed last judges
            frame = dispatch.caller_beyond_torch_library(sys._getframe(1))
            if (
                sandbox is not None
                and frame is not None
                and sandbox.attributor.file_kind(frame.f_code.co_filename) == "candidate"
            ):
                shown = ", ".join(repr(a)[:80] for a in args[:2] if isinstance(a, str))
                where = sandbox.attributor.where(frame)
                evidence = f"registers a kernel with the dispatcher: {name}({shown}) ({where})"
                sandbox.record("kernel_override", evidence)
                raise SandboxViolation(f"kernelbot sandbox refused: {evidence}")
            return original(handle, *args, **kwargs)

        register._kb_wrapped = True  # type: ignore[attr-defined]
        return register

    # --- threads -----------------------------------------------------------------------------------

    def _wrap_thread_starts(self) -> None:
        for owner, name in (
            (_thread, "start_new_thread"),
            (_thread, "start_joinable_thread"),
            (threading, "_start_new_thread"),
            (threading, "_start_joinable_thread"),
        ):
            original = getattr(owner, name, None)
            if original is not None and not getattr(original, "_kb_wrapped", False):
                setattr(owner, name, self._thread_wrapper(original))

    def _thread_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        sandbox = self

        def start(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            frame = sys._getframe(1)
            origin = sandbox.attributor.origin(frame)
            if origin in ("direct", "indirect"):
                owner = getattr(function, "__self__", None)
                target_fn = (
                    getattr(owner, "_target", None) if isinstance(owner, threading.Thread) else function
                )
                target = getattr(target_fn, "__qualname__", None) or type(target_fn).__name__
                evidence = f"starts a thread running {target} ({sandbox.attributor.where(frame)})"
                sandbox.record("threads_processes", evidence)
                raise SandboxViolation(f"kernelbot sandbox refused: {evidence}")
            return original(function, *args, **kwargs)

        start._kb_wrapped = True  # type: ignore[attr-defined]
        return start
