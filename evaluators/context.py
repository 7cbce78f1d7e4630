"""What the in-worker stages share while judging one candidate (built by the worker, read by the stages)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from evaluators.backends.base import Backend
from evaluators.config import EvalConfig
from evaluators.task import Task


@dataclass
class JudgeContext:
    task: Task
    backend: Backend
    config: EvalConfig
    seeds: tuple[int, ...]  # hidden, drawn by the parent for this evaluation only
    reference: Callable[..., Any]
    candidate: Callable[..., Any]
    candidate_module: ModuleType
    candidate_path: Path
    candidate_source: str
    sandbox: Any = None  # evaluators.guards.Sandbox, installed by the worker before the candidate import
    progress: Callable[[str], None] = lambda stage: None  # tells the parent which stage runs now
    log: Callable[[str], None] = print
    notes: dict[str, Any] = field(default_factory=dict)  # facts one stage leaves for the next
