"""Test doubles for the search: an executor that judges by a marker in the source, and scripted mutators.

The fake executor reads `SCORE = <x>` (or `FAIL = "<stage>"`) from a candidate (code, not a comment, so that
different scores are different candidates), so tests control
the fitness landscape exactly while the store, archive, sampling and controller run for real.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from evaluators.result import CaseResult, EvalResult, Hardware, RegimeTiming, Stage, TimingStats
from evolution.dedup import candidate_sha
from evolution.executors import Evaluated
from evolution.types import MutationOutcome, MutationRequest, Program, TokenUsage

_SCORE = re.compile(r"^SCORE = ([0-9.]+)$", re.MULTILINE)
_FAIL = re.compile(r"^FAIL = \"(\w+)\"$", re.MULTILINE)

TINY_TOML = """\
name = "tiny_scale"
entry = "scale"
regime = "wall"

[[cases]]
name = "n8"
n = 8

[[cases]]
name = "n64"
n = 64
"""
TINY_REFERENCE = "import torch\n\n\ndef scale(x):\n    return x * 2\n"
TINY_INPUTS = (
    "import torch\n\n\ndef make_inputs(case, seed, device):\n"
    "    g = torch.Generator().manual_seed(seed)\n"
    "    return (torch.randn(case['n'], generator=g).to(device),), {}\n"
)


def program_source(score: float, body: str = "x * 2", fail: str = "") -> str:
    """A candidate-shaped source whose fake verdict is `score` (or a failure at stage `fail`)."""
    marker = f'FAIL = "{fail}"' if fail else f"SCORE = {score}"
    return (
        "import torch\n\n# EVOLVE-BLOCK-START\n"
        f"{marker}\n"
        f"def scale(x):\n    return {body}\n"
        "# EVOLVE-BLOCK-END\n"
    )


def make_tiny_task(root: Path, seeds: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(TINY_TOML)
    (root / "reference.py").write_text(TINY_REFERENCE)
    (root / "inputs.py").write_text(TINY_INPUTS)
    if seeds:
        (root / "candidates").mkdir(exist_ok=True)
        for i, src in enumerate(seeds):
            (root / "candidates" / f"seed{i}.py").write_text(src)
    return root


# What the fake workers report: a device and versions no real machine has, to find in prompts.
FAKE_HARDWARE = Hardware(
    backend="fake", device="fake-gpu", torch="9.8.7", triton="6.5.4", sm_count=7, memory_bandwidth_gbps=1234.0
)


def fake_result(task: str, entry: str, source: str) -> EvalResult:
    fail = _FAIL.search(source)
    sha = candidate_sha(source, entry)
    hw = FAKE_HARDWARE
    if fail:
        stage = Stage(fail.group(1))
        return EvalResult(
            task, sha, "fake", "wall", stage, False, reason=f"fake failure at {stage.value}", hardware=hw
        )
    m = _SCORE.search(source)
    score = float(m.group(1)) if m else 1.0
    timing = RegimeTiming(  # the candidate takes 10 us, twice the roofline floor of 5 us
        TimingStats(10.0 * score, 0.01, 20),
        TimingStats(10.0, 0.01, 20),
        score,
        score * 0.95,
        score * 1.05,
        claim_low=score * 0.95 / 1.01,
        floor_us=5.0,
    )
    case = CaseResult("n8", {"n": 8}, True, 0.0, 0.0, timings={"wall": timing, "graph": timing})
    return EvalResult(
        task,
        sha,
        "fake",
        "wall",
        Stage.TIMING,
        True,
        correct=True,
        score=score,
        speedup=score,
        speedup_ci=(score * 0.95, score * 1.05),
        cases=(case,),
        hardware=hw,
    )


class FakeExecutor:
    """Judges by marker; records every source it saw; optional delay to keep evaluations in flight."""

    def __init__(self, capacity: int = 2, delay: float = 0.0) -> None:
        self._capacity = capacity
        self.delay = delay
        self.seen: list[str] = []
        self.duels: list[tuple[str, str]] = []  # (candidate, rival) of evaluations timed against a rival
        self.baselines: list[tuple[str, str]] = []  # (candidate, baseline) of those timed against another one
        self.started = False
        self.closed = False

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def backend_name(self) -> str:
        return "fake"

    async def start(self) -> None:
        self.started = True

    async def hardware(self) -> Hardware:
        return FAKE_HARDWARE

    async def evaluate(self, task, source: str, *, against: str = "", baseline: str = "") -> Evaluated:
        """The marker's verdict; timed against a rival, its score is the ratio of the two markers."""
        if against:
            self.duels.append((source, against))
        elif baseline:
            self.baselines.append((source, baseline))
        else:
            self.seen.append(source)
        if self.delay:
            await asyncio.sleep(self.delay)
        result = fake_result(task.name, task.entry, source)
        rival = _SCORE.search(against) if against else None
        if rival is not None and result.passed:
            ratio = result.score / float(rival.group(1))
            result = replace(result, score=ratio, speedup=ratio)
        return Evaluated(result, "fake:0", 1)

    async def close(self) -> None:
        self.closed = True


class BumpMutator:
    """Raises the parent's score marker by `step` (a child is always new and better)."""

    def __init__(
        self,
        name: str = "tune:bump",
        step: float = 0.25,
        usage: TokenUsage | None = None,
        tag_island: bool = False,
    ) -> None:
        self.name = name
        self.step = step
        self.tag_island = tag_island  # children of different islands differ even from the same parent
        self.usage = usage or TokenUsage()
        self.requests: list[MutationRequest] = []

    def can_seed(self) -> bool:
        return False

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        self.requests.append(request)
        assert request.parent is not None
        m = _SCORE.search(request.parent.source)
        score = float(m.group(1)) if m else 1.0
        child = request.parent.source.replace(m.group(0), f"SCORE = {score + self.step:.4f}") if m else None
        if child is not None and self.tag_island:
            child = re.sub(r"^ISLAND = \d+\n", "", child, flags=re.MULTILINE)
            child = child.replace("def scale", f"ISLAND = {request.island}\ndef scale")
        return MutationOutcome(self.name, child, usage=self.usage)


class ScriptedMutator:
    """Returns the outcomes a test lists, one per call (the last one repeats)."""

    def __init__(
        self, name: str, script: list[Callable[[MutationRequest], MutationOutcome]], seeds: bool = False
    ):
        self.name = name
        self.script = script
        self.calls = 0
        self.seeds = seeds

    def can_seed(self) -> bool:
        return self.seeds

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return step(request)


class MarkerPool:
    """WorkerPool's surface (backend, size=, device_index=, config=; evaluate_async; close) judging by marker.

    Ray actors host it in tests (shipped by value); `SLOW = "<seconds>"` in a candidate delays its verdict.
    """

    def __init__(self, backend, *, size, device_index, config):
        self.backend, self.size, self.device_index = backend, size, device_index

    async def evaluate_async(self, task, candidate):
        m = re.search(r'^SLOW = "([0-9.]+)"$', candidate.source, re.MULTILINE)
        if m:
            await asyncio.sleep(float(m.group(1)))
        return fake_result(task.name, task.entry, candidate.source)

    def close(self):
        pass


def timed_program(
    pid: str,
    speedups: dict[str, float],
    *,
    source: str = "x",
    operator: str = "op",
    correct: bool = True,
    created_at: float = 0.0,
) -> Program:
    """A Program timed per case in the graph regime at `speedups` (a synthetic timing run), its score their
    geometric mean."""
    reference = TimingStats(median_us=10.0, cv=0.01, samples=30)
    cases = tuple(
        CaseResult(
            name,
            {},
            correct,
            timings={
                "graph": RegimeTiming(reference, TimingStats(10.0 / s, 0.01, 30), s, s * 0.99, s * 1.01)
            },
        )
        for name, s in speedups.items()
    )
    score = math.prod(speedups.values()) ** (1 / len(speedups))
    result = EvalResult(
        "t", pid, "triton-cuda", "graph", Stage.TIMING, correct, correct=correct, score=score, cases=cases
    )
    return Program(pid, source, pid, None, operator, 0, 0, result, created_at=created_at)
