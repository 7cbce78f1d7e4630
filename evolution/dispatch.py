"""The dispatch path every executor shares: an evaluation goes to the least-loaded slot (a local GPU's pool or
a Ray actor); when the slot's infrastructure fails (the pool itself breaks, the actor dies) the same candidate
is retried on another slot, so a dead worker loses no evaluation. A bad *candidate* never counts as such a
failure: the pool turns it into an EvalResult. A KernelbotError (bad task, unavailable backend) is the user's
to fix and ends the run at once.

Its own module so that evolution.executors (local pools, and the factory that picks an executor) and
evolution.ray_executor (Ray actors) both build on it without importing each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from evaluators.candidate import Candidate
from evaluators.errors import KernelbotError
from evaluators.job import KILLED_FROM_OUTSIDE
from evaluators.result import EvalResult, Hardware
from evaluators.task import Task
from evolution.errors import SearchError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Evaluated:
    result: EvalResult
    worker: str  # the slot that judged it ("cuda:0", "ray-actor-2")
    attempts: int  # > 1 when earlier slots failed


class Executor(Protocol):
    @property
    def capacity(self) -> int:
        """How many evaluations can run at once."""
        ...

    @property
    def backend_name(self) -> str: ...

    async def start(self) -> None: ...

    async def hardware(self) -> Hardware:
        """What the evaluation workers run on, known once they have started (before any evaluation): the
        seed prompt's GPU and versions."""
        ...

    async def evaluate(self, task: Task, source: str, *, against: str = "", baseline: str = "") -> Evaluated:
        """Judge `source`, timed against the task's reference, or against the program `against` (another
        source for the task, in the same worker: the search's final comparison), or against `baseline`
        (evaluators.timing.baselines: "compile", torch.compile of the reference, before the final
        crossover)."""
        ...

    async def close(self) -> None: ...


@dataclass
class Slot:
    name: str
    capacity: int
    handle: Any  # a WorkerPool, or a Ray actor handle
    in_flight: int = 0
    failures: int = 0
    alive: bool = True

    @property
    def load(self) -> float:
        return self.in_flight / max(self.capacity, 1)


class DispatchingExecutor:
    """Least-loaded dispatch with retry-elsewhere on infrastructure failure; subclasses say how to run one."""

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts
        self.slots: list[Slot] = []

    @property
    def capacity(self) -> int:
        return sum(s.capacity for s in self.slots if s.alive)

    def _pick(self, avoid: set[str]) -> Slot:
        alive = [s for s in self.slots if s.alive]
        if not alive:
            raise SearchError("no evaluation worker is left alive (every pool or actor failed)")
        fresh = [s for s in alive if s.name not in avoid] or alive
        return min(fresh, key=lambda s: (s.load, s.failures, s.name))

    async def evaluate(self, task: Task, source: str, *, against: str = "", baseline: str = "") -> Evaluated:
        candidate = Candidate(source=source, entry=task.entry)
        tried: set[str] = set()
        last: BaseException | None = None
        for attempt in range(1, self.max_attempts + 1):
            slot = self._pick(tried)
            tried.add(slot.name)
            slot.in_flight += 1
            try:
                result = await self._run(slot, task, candidate, against, baseline)
                if _killed_from_outside(result) and attempt == 1 and self.max_attempts > 1:
                    # An operator, a dying GPU host or the OOM killer: judge it once more elsewhere, and
                    # accept the second verdict (a candidate that really exhausts memory dies again).
                    log.warning("worker judging %s was SIGKILLed from outside; retrying", candidate.sha)
                    continue
                return Evaluated(result, slot.name, attempt)
            except (KernelbotError, asyncio.CancelledError):
                raise
            except Exception as exc:  # the slot broke, not the candidate: retry elsewhere
                last = exc
                slot.failures += 1
                log.warning(
                    "evaluation of %s failed on %s (%s); retrying elsewhere", candidate.sha, slot.name, exc
                )
                await self._on_failure(slot, exc)
            finally:
                slot.in_flight -= 1
        raise SearchError(
            f"evaluation of candidate {candidate.sha} failed on {self.max_attempts} workers; "
            f"last error: {last!r}"
        )

    async def hardware(self) -> Hardware:
        """The first live slot's report (the GPUs of one run are alike); only the backend's name before
        start() or from a slot that cannot tell."""
        for slot in self.slots:
            if slot.alive:
                reported = await self._hardware(slot)
                if reported is not None:
                    return reported
                break
        return Hardware(backend=self.backend_name)

    @property
    def backend_name(self) -> str:
        raise NotImplementedError

    async def _hardware(self, slot: Slot) -> Hardware | None:
        return None

    async def _run(
        self, slot: Slot, task: Task, candidate: Candidate, against: str, baseline: str
    ) -> EvalResult:
        raise NotImplementedError

    async def _on_failure(self, slot: Slot, exc: BaseException) -> None:
        """Called after a slot failed; by default a slot that failed twice is retired."""
        if slot.failures >= 2:
            slot.alive = False


def _killed_from_outside(result: EvalResult) -> bool:
    return not result.passed and KILLED_FROM_OUTSIDE in result.reason


PoolFactory = Callable[..., Any]


def resolve_backend(name: str) -> str:
    if name != "auto":
        return name
    from evaluators.backends import detect_backend

    return detect_backend()


async def reported_hardware(executor: Executor, known: Hardware, note: Callable[[str], None]) -> Hardware:
    """What the executor's workers report they run on, else `known` (the latest evaluation's hardware).

    Asked at every start, a resume too: the run may have moved to another machine. A backend whose workers
    cannot start is the user's to fix (a KernelbotError ends the run); any other failure to answer leaves
    `known`, with a note."""
    try:
        reported = await executor.hardware()
    except KernelbotError:
        raise
    except Exception as exc:
        note(f"the evaluation workers did not report their hardware ({type(exc).__name__}: {exc})")
        return known
    return reported if reported.device or not known.device else known
