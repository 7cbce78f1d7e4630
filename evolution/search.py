"""The search as a library call: start or resume a run of a task in a run directory, get its summary back.

    summary = run_search(task_dir, run_dir, SearchOverrides(iterations=20), config_file=cfg)
    summary = run_search(task_dir, run_dir, SearchOverrides(), resume=True)
    summary = finished_summary(run_dir)  # a search that already ended with a winner, else None

This is the one place that assembles a search: the config (file, then overrides), the executor, the operators,
the store and the controller. `kernelbot evolve`, `kernelbot target` (and `scan` through it) call it and take
the returned SearchSummary; summary.json in the run directory is the same record written for people and
other tools, never read back by them.

A fresh run refuses a directory that already holds one; a resumed one continues it (pending children are
judged, nothing judged is judged again, the iteration limit counts the whole run). Every input a typo could
spoil (seed files, backend, LLM endpoints) is checked before the run directory is created.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluators import secrets
from evaluators.backends import require_backend
from evaluators.candidate import load_candidate
from evaluators.errors import TransportError
from evaluators.task import Task, load_task
from evolution.config import (
    DEFAULT_API_KEY_ENV,
    SearchConfig,
    load_config,
    override,
    parse_llm_flag,
    strip_llm_flag_credentials,
)
from evolution.controller import Controller, RunSummary
from evolution.errors import RunStoreError, SearchConfigError
from evolution.executors import make_executor, resolve_backend
from evolution.llm_client import LLMError, check_endpoints
from evolution.operators import build_operators
from evolution.progress import ProgressSink
from evolution.redact import Redactor
from evolution.store import STORE_FILE, RunStore
from evolution.summary import SearchSummary, best_program, run_summary

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h' -> seconds."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise SearchConfigError(
            f"--time-limit {text!r}: expected a positive duration like 600, 90s, 30m or 2h"
        )
    return float(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    """'0,1,2' -> (0, 1, 2); None stays None (every local GPU)."""
    if text is None:
        return None
    try:
        devices = tuple(int(d) for d in text.split(",") if d.strip())
    except ValueError as exc:
        raise SearchConfigError(f"--devices {text!r}: expected GPU indices like 0,1,2") from exc
    if not devices or min(devices) < 0:
        raise SearchConfigError(f"--devices {text!r}: expected GPU indices like 0,1,2")
    return devices


@dataclass(frozen=True)
class SearchOverrides:
    """What one invocation changes of the search config (None or empty: the config's own value).

    The command-line flags of `evolve`, `target` and `scan` land here as they are typed; they are checked
    (durations, GPU indices, endpoint specs) when applied to a config, so a bad one is one clear line.
    """

    iterations: int | None = None
    time_limit: str | None = None  # a duration: 600, 90s, 30m, 2h
    llm: tuple[str, ...] = ()  # MODEL@URL[#OPTIONS] of OpenAI-compatible endpoints
    api_key_env: str | None = None  # the variable holding the llm endpoints' key (None: the default)
    workers: str | None = None  # local | ray | ray://host:port
    backend: str | None = None
    devices: str | None = None  # local GPU indices: 0,1
    workers_per_device: int | None = None
    seed_files: tuple[Path, ...] = ()
    inductor_seed: bool | None = None
    fusion_seed: bool | None = None
    seed: int | None = None  # of the search's random choices

    def __post_init__(self) -> None:
        # A record one may keep or show (target.toml, a scan's plan): a URL's `user:password@` goes to the
        # secrets registry instead, from where the LLM client takes it back.
        object.__setattr__(self, "llm", tuple(strip_llm_flag_credentials(spec) for spec in self.llm))

    def apply(self, base: SearchConfig) -> SearchConfig:
        changes: dict[str, Any] = {
            "stop__iterations": self.iterations,
            "stop__time_limit_s": parse_duration(self.time_limit) if self.time_limit else None,
            "executor__workers": self.workers,
            "executor__backend": self.backend,
            "executor__devices": parse_devices(self.devices),
            "executor__workers_per_device": self.workers_per_device,
            "mutation__seed_files": tuple(str(p) for p in self.seed_files) if self.seed_files else None,
            "mutation__inductor_seed": self.inductor_seed,
            "mutation__fusion_seed": self.fusion_seed,
            "seed": self.seed,
        }
        if self.llm:
            key_env = self.api_key_env or DEFAULT_API_KEY_ENV
            changes["mutation__llm"] = tuple(parse_llm_flag(spec, key_env) for spec in self.llm)
        return override(base, **changes)


def default_run_dir(task_name: str) -> Path:
    return Path("runs") / f"{task_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_search(
    task_dir: Path,
    run_dir: Path | None = None,
    overrides: SearchOverrides | None = None,
    *,
    resume: bool = False,
    config_file: Path | None = None,
    progress: ProgressSink | None = None,
) -> SearchSummary:
    """Start (or, with resume, continue) the search of the task in `task_dir` in `run_dir` (None: a new
    runs/<task>-<time>) until a stop rule ends it; the summary is also written to run_dir/summary.json.

    `config_file` is the search config TOML; on resume it may change everything but the archive's shape.
    Raises SearchError when the search cannot go on (nothing to evolve from), and the family's
    ConfigError / RunStateError / TransportError for bad input, before anything is searched."""
    task = load_task(task_dir)
    run_dir = run_dir or default_run_dir(task.name)
    overrides = overrides or SearchOverrides()
    if resume:
        store, config = _reopen(run_dir, task, config_file, overrides)
    else:
        config = overrides.apply(load_config(config_file))
        hold_key_variables(config)
        _check_inputs(task, config)  # before the run directory is created: a typo costs nothing
        store = RunStore.create(run_dir, task, config, Redactor.from_env(config))
    try:
        ended = asyncio.run(_search(task, config, store, progress))
        return run_summary(store, run_dir, stop_reason=ended.stop_reason, elapsed_s=round(ended.elapsed_s, 1))
    finally:
        store.close()


def has_run(run_dir: Path) -> bool:
    """Whether run_dir holds a search's store (to resume, or to read back)."""
    return (run_dir / STORE_FILE).is_file()


def finished_summary(run_dir: Path) -> SearchSummary | None:
    """The summary of the search in run_dir when it ended with a winner and nothing left pending (None: it
    has to go on). Read from the store, the one record of the search; summary.json and best.py are
    written again from it."""
    store = RunStore.open(run_dir, readonly=True)
    try:
        reason = store.state("finished")
        if not reason or best_program(store) is None or store.programs(status="pending"):
            return None
        return run_summary(store, run_dir, stop_reason=reason)
    finally:
        store.close()


def _reopen(
    run_dir: Path, task: Task, config_file: Path | None, overrides: SearchOverrides
) -> tuple[RunStore, SearchConfig]:
    if not has_run(run_dir):
        raise RunStoreError(f"--resume: {run_dir} holds no run to resume (start one without --resume)")
    store = RunStore.open(run_dir)
    try:
        stored = store.config()
        name = store.meta().get("task_name")
        if name != task.name:
            raise RunStoreError(f"--resume: {run_dir} is a run of task {name!r}, not {task.name!r}")
        if config_file is not None:
            # The archive's shape must not change under a run; stop rules, sampling, workers, operators may.
            fresh = load_config(config_file)
            stored = replace(fresh, archive=stored.archive, seed=stored.seed)
        config = overrides.apply(stored)
        hold_key_variables(config)
        _check_seed_files(task, config)  # a resume of a run whose seeding failed takes new --seed files
        check_llm_endpoints(config)
        store.update_config(config)
        store.use_redactor(Redactor.from_env(config))  # the secrets of this invocation's environment
        return store, config
    except BaseException:
        store.close()
        raise


def hold_key_variables(config: SearchConfig) -> None:
    """The variables a config file names for its endpoints' keys leave the environment too (those named on
    the command line already did, where kernelbot started), before any worker starts."""
    secrets.adopt(ep.api_key_env for ep in config.mutation.llm)


def _check_inputs(task: Task, config: SearchConfig) -> None:
    _check_seed_files(task, config)
    if config.executor.workers == "local":
        require_backend(config.executor.backend)  # BackendUnavailable says why it cannot run here
    check_llm_endpoints(config)


def _check_seed_files(task: Task, config: SearchConfig) -> None:
    for path in config.mutation.seed_files:
        load_candidate(path, task.entry)  # CandidateError names the file and what is wrong


def check_llm_endpoints(config: SearchConfig) -> None:
    """One cheap request per --llm endpoint before anything is seeded: a dead endpoint or a refused key
    stops the run with one line, instead of launch tuning carrying a search whose LLM calls all fail."""
    if not config.mutation.llm:
        return
    try:
        asyncio.run(check_endpoints(config.mutation.llm))
    except LLMError as exc:
        raise TransportError(f"LLM endpoint unusable: {exc}") from None


async def _search(
    task: Task, config: SearchConfig, store: RunStore, progress: ProgressSink | None
) -> RunSummary:
    executor = make_executor(config.executor, config.eval)
    await executor.start()
    try:
        backend = resolve_backend(executor.backend_name)
        device = "cuda" if backend in ("triton-cuda", "maca") else "cpu"
        operators = build_operators(config, device)
        seed_files = tuple(Path(p) for p in config.mutation.seed_files)
        controller = Controller(
            task, config, store, executor, operators, seed_files=seed_files, progress=progress
        )
        return await controller.run()
    finally:
        await executor.close()
