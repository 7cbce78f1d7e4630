"""`kernelbot evolve TASK`: search for fast correct Triton candidates; every step lands in RUN/run.sqlite.

A fresh run refuses a directory that already holds one; `--resume` continues it (pending children are judged,
nothing judged is judged again, the iteration limit counts the whole run). At the end the winner is written
to RUN/best.py, the growth curve to RUN/growth.{csv,json} and a summary to RUN/summary.json (also printed
with --json: best per-case speedups in both regimes).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from evaluators import secrets
from evaluators.backends import require_backend
from evaluators.candidate import load_candidate
from evaluators.task import Task, load_task
from evolution.config import SearchConfig, load_config, override, parse_llm_flag
from evolution.controller import Controller, RunSummary
from evolution.executors import make_executor, resolve_backend
from evolution.llm_client import LLMError, check_endpoints
from evolution.operators import build_operators
from evolution.progress import make_progress
from evolution.redact import Redactor
from evolution.stopping import format_usd
from evolution.store import RunStore
from evolution.summary import run_summary
from kernelbot.console import console, err_console
from kernelbot.errors import ConfigError, RunStateError, TransportError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h' -> seconds."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise ConfigError(f"--time-limit {text!r}: expected a positive duration like 600, 90s, 30m or 2h")
    return float(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        devices = tuple(int(d) for d in text.split(",") if d.strip())
    except ValueError as exc:
        raise ConfigError(f"--devices {text!r}: expected GPU indices like 0,1,2") from exc
    if not devices or min(devices) < 0:
        raise ConfigError(f"--devices {text!r}: expected GPU indices like 0,1,2")
    return devices


def build_config(
    base: SearchConfig,
    *,
    iterations: int | None,
    time_limit: str | None,
    llm: list[str] | None,
    api_key_env: str | None,
    workers: str | None,
    backend: str | None,
    devices: str | None,
    workers_per_device: int | None,
    seed_files: list[Path] | None,
    inductor_seed: bool | None,
    fusion_seed: bool | None = None,
    seed: int | None,
) -> SearchConfig:
    changes: dict[str, Any] = {
        "stop__iterations": iterations,
        "stop__time_limit_s": parse_duration(time_limit) if time_limit else None,
        "executor__workers": workers,
        "executor__backend": backend,
        "executor__devices": parse_devices(devices),
        "executor__workers_per_device": workers_per_device,
        "mutation__seed_files": tuple(str(p) for p in seed_files) if seed_files else None,
        "mutation__inductor_seed": inductor_seed,
        "mutation__fusion_seed": fusion_seed,
        "seed": seed,
    }
    if llm:
        key_env = api_key_env or "KERNELBOT_LLM_API_KEY"
        changes["mutation__llm"] = tuple(parse_llm_flag(spec, key_env) for spec in llm)
    return override(base, **changes)


def run(
    task_path: Path,
    *,
    out: Path | None,
    resume: bool,
    config_file: Path | None,
    as_json: bool,
    **flags: Any,
) -> int:
    task = load_task(task_path)
    run_dir = out or Path("runs") / f"{task.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if resume:
        store, config = _reopen(run_dir, task, config_file, flags)
    else:
        config = build_config(load_config(config_file), **flags)
        hold_key_variables(config)
        _check_inputs(task, config)  # before the run directory is created: a typo costs nothing
        store = RunStore.create(run_dir, task, config, Redactor.from_env(config))
    try:
        summary = asyncio.run(_search(task, config, store, quiet=as_json))
        result = run_summary(
            store, run_dir, stop_reason=summary.stop_reason, elapsed_s=round(summary.elapsed_s, 1)
        )
    finally:
        store.close()
    _report(result, as_json)
    return 0


def _reopen(
    run_dir: Path, task: Task, config_file: Path | None, flags: dict[str, Any]
) -> tuple[RunStore, SearchConfig]:
    if not (run_dir / "run.sqlite").is_file():
        raise RunStateError(f"--resume: {run_dir} holds no run to resume (start one without --resume)")
    store = RunStore.open(run_dir)
    try:
        stored = store.config()
        name = store.meta().get("task_name")
        if name != task.name:
            raise RunStateError(f"--resume: {run_dir} is a run of task {name!r}, not {task.name!r}")
        if config_file is not None:
            # The archive's shape must not change under a run; stop rules, sampling, workers, operators may.
            fresh = load_config(config_file)
            stored = replace(fresh, archive=stored.archive, seed=stored.seed)
        config = build_config(stored, **flags)
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


async def _search(task: Task, config: SearchConfig, store: RunStore, *, quiet: bool) -> RunSummary:
    executor = make_executor(config.executor, config.eval)
    # With --json, stdout carries only the summary: progress goes to stderr.
    progress = make_progress(err_console if quiet else console)
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


def _report(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        console.print(json.dumps(summary, indent=2, default=str), markup=False, highlight=False)
        return
    best = summary.get("best")
    console.print(f"stopped: {summary.get('stop_reason')}")
    console.print(f"evaluations: {summary['evaluations']}  outcomes: {summary['outcomes']}")
    if best is None:
        console.print("no correct candidate was found")
    else:
        speedup = f", speedup {best['speedup']:.3f}x" if best.get("speedup") else ""
        console.print(f"best: {best['program_id']} ({best['operator']}) score {best['score']:.3f}{speedup}")
        console.print(f"winner written to {best['candidate_file']}")
    for line in usage_lines(summary.get("tokens") or {}):
        console.print(line, markup=False, highlight=False)
    console.print(f"growth curve: {summary['growth']['csv']}")


def usage_lines(tokens: dict[str, Any]) -> list[str]:
    """What the LLM endpoints cost: one line per model, and the total when there are several."""
    models = tokens.get("by_model") or {}
    lines = [
        f"LLM {model}: {u['requests']} answer(s), {u['prompt']} prompt + {u['completion']} completion "
        f"tokens, {format_usd(u['cost_usd'])}"
        for model, u in models.items()
    ]
    if len(models) > 1:
        total = tokens.get("prompt", 0) + tokens.get("completion", 0)
        lines.append(f"LLM total: {total} tokens, {format_usd(tokens.get('cost_usd', 0.0))}")
    return lines
