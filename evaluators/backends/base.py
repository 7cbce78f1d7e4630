"""What an evaluator backend provides; each backend module satisfies this Protocol."""

from __future__ import annotations

from typing import Protocol

from evaluators.result import Hardware


class Backend(Protocol):
    name: str
    can_time: bool  # False: correctness only, never a speedup (the interpreter)

    @property
    def device(self) -> str:
        """The torch device string candidates run on ("cuda:0", "cpu")."""
        ...

    def unavailable_reason(self) -> str | None:
        """None when this backend can run here, else one sentence saying why not (checked in the parent)."""
        ...

    def worker_env(self) -> dict[str, str]:
        """Environment variables a worker process needs before importing triton (TRITON_INTERPRET=1)."""
        ...

    def init_device(self) -> None:
        """Called in a warm worker before any candidate arrives: create the context, warm the allocator."""
        ...

    def synchronize(self) -> None: ...

    def hardware(self) -> Hardware: ...

    def poison_allocator(self, nbytes: int) -> None:
        """Fill memory the allocator will hand out next with NaN, so stale results cannot pass."""
        ...

    def flush_l2(self) -> None:
        """Evict the device cache between timed calls (cold-cache tasks); no-op where meaningless."""
        ...
