"""The judge: loads Tasks and Candidates and turns a candidate into an EvalResult in an isolated worker.

This package is the floor of kernelbot: it imports nothing from `extractors`, `evolution` or `kernelbot`.
"""

from evaluators.candidate import (
    EVOLVE_END,
    EVOLVE_START,
    Candidate,
    check_evolve_block,
    find_evolve_block,
    load_candidate,
    parse_candidate,
    replace_evolve_block,
)
from evaluators.config import EvalConfig, TimingConfig
from evaluators.errors import (
    BackendUnavailable,
    CandidateError,
    DegenerateTaskError,
    EvolveBlockViolation,
    KernelbotError,
    TaskError,
)
from evaluators.result import (
    HACK_CLASSES,
    CaseResult,
    EvalResult,
    HackFinding,
    Hardware,
    Mismatch,
    RegimeTiming,
    Stage,
    TimingStats,
)
from evaluators.task import Case, Task, load_task

__all__ = [
    "EVOLVE_END",
    "EVOLVE_START",
    "HACK_CLASSES",
    "BackendUnavailable",
    "Candidate",
    "CandidateError",
    "Case",
    "CaseResult",
    "DegenerateTaskError",
    "EvalConfig",
    "EvalResult",
    "EvolveBlockViolation",
    "HackFinding",
    "Hardware",
    "KernelbotError",
    "Mismatch",
    "RegimeTiming",
    "Stage",
    "Task",
    "TaskError",
    "TimingConfig",
    "TimingStats",
    "check_evolve_block",
    "find_evolve_block",
    "load_candidate",
    "load_task",
    "parse_candidate",
    "replace_evolve_block",
]
