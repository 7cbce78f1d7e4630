"""Small pieces the timing stage (evaluators.timing) shares between its regimes: seeds derived per purpose,
the device's sync and L2 size, errors that name who raised, and the sandbox's arming."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from evaluators.context import JudgeContext
from evaluators.result import HackFinding, Hardware
from evaluators.task import Case
from evaluators.timing.graph import CaptureError
from evaluators.timing.graph import device_synchronize as _cuda_synchronize
from evaluators.timing.inputs import Inputs


class RegimeFailure(Exception):
    def __init__(self, reason: str, findings: list[HackFinding] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.findings = findings or []


class RegimeSkipped(Exception):
    pass


def derive_seed(seeds: tuple[int, ...], *parts: object) -> int:
    """A 31-bit seed from the evaluation's hidden seeds and a purpose, stable within one evaluation."""
    digest = hashlib.blake2b(repr((tuple(seeds), *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


def device_sync(ctx: JudgeContext) -> Callable[[], None]:
    if ctx.backend.device.startswith("cuda"):
        return _cuda_synchronize
    return ctx.backend.synchronize


def l2_bytes(ctx: JudgeContext) -> int | None:
    if not ctx.backend.device.startswith("cuda"):
        return None
    import torch

    props = torch.cuda.get_device_properties(torch.device(ctx.backend.device))
    return int(getattr(props, "L2_cache_size", 0) or 0) or None


def hardware(ctx: JudgeContext) -> Hardware:
    # The worker may leave the Hardware it recorded before the candidate import (no subprocess needed then).
    hw = ctx.notes.get("hardware")
    return hw if isinstance(hw, Hardware) else ctx.backend.hardware()


def release_cached_memory(ctx: JudgeContext) -> None:
    """Hand the allocator's cached blocks back before a case is captured: during a capture it cannot free
    them, so under a worker's memory share (EvalConfig.device_memory_share) a capture would fail on memory
    that the previous case (or the correctness stage) only keeps cached."""
    if ctx.backend.device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def armed(ctx: JudgeContext) -> contextlib.AbstractContextManager[Any]:
    arm = getattr(ctx.sandbox, "armed", None)
    return arm() if callable(arm) else contextlib.nullcontext()


def bind(fn: Callable[..., Any], inputs: Inputs) -> dict[str, Any]:
    args, kwargs = inputs
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {f"arg{i}": a for i, a in enumerate(args)} | dict(kwargs)
    return dict(bound.arguments)


def describe_error(who: str, when: str, case: Case, exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"the {who} raised during {when} of case {case.name!r}: {type(exc).__name__}: " + (
        text[0] if text else ""
    )


def guarded(who: str, regime: str, case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, with any exception it raises (other than a capture error) turned into a failure naming `who`."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (RegimeFailure, RegimeSkipped, CaptureError):
            raise
        except Exception as exc:
            raise RegimeFailure(describe_error(who, f"{regime} timing", case, exc)) from exc

    return call
