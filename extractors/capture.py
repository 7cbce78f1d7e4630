"""`kernelbot capture`: run a command (the repo's tests, a benchmark, a serving script) with the target
wrapped by an import hook, record its first K distinct calls, and write a Task whose cases replay them."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evaluators.sandbox import boxed_argv, read_regular_file
from evaluators.subprocesses import Finished, run
from extractors.errors import ExtractionError
from extractors.extract import ExtractionSummary, ExtractOptions, PreparedInputs, build, extract
from extractors.signature import entry_signature

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class CaptureOptions:
    repo: Path
    function: str
    command: list[str]
    max_calls: int = 8
    out: Path | None = None
    regime: str | None = None  # None: as extract chooses (ExtractOptions.regime)
    force: bool = False
    timeout: float = 1800.0


def capture(options: CaptureOptions) -> tuple[ExtractionSummary, list[dict]]:
    if not options.command:
        raise ExtractionError("capture needs a command to run after `--`, e.g. -- python -m pytest tests/")
    if options.max_calls < 1:
        raise ExtractionError("--max-calls must be at least 1")
    index, located, built, _ = build(options.repo, options.function)
    signature = entry_signature(built.source, built.entry)
    positional = [p.name for p in signature if p.kind == "positional"]
    with tempfile.TemporaryDirectory(prefix="kernelbot-capture-") as scratch:
        raw = Path(scratch) / "calls"
        raw.mkdir()
        bootstrap = Path(scratch) / "bootstrap"
        bootstrap.mkdir()
        (bootstrap / "sitecustomize.py").write_text((TEMPLATES / "capture_sitecustomize.py").read_text())
        config = Path(scratch) / "config.json"
        config.write_text(
            json.dumps(
                {
                    "module": located.ref.name,
                    "qualname": located.definition.qualname,
                    "out": str(raw),
                    "max_calls": options.max_calls,
                    "positional": positional,
                    "attribute_params": built.attribute_params,
                }
            )
        )
        source_root = index.source_root_of(located.ref.path)
        done = _run(options, bootstrap, source_root, config, index.root)
        listed = read_regular_file(raw / "calls.json")
        calls = json.loads(listed) if listed is not None else []
        # regular files only: a link left in the recorder's folder must not bring a file of ours along
        usable = [c for c in calls if "skipped" not in c and _regular(raw / f"{c['call']}.pt")]
        if not usable:
            why = "; ".join(c["skipped"] for c in calls) or "it was never called"
            raise ExtractionError(
                f"no call of {options.function} was recorded while running `{shlex.join(options.command)}` "
                f"(exit code {done.returncode}): {why}. Last output: {_tail(done)}"
            )
        inputs = PreparedInputs(
            source=(TEMPLATES / "inputs_capture.py.tmpl").read_text().replace("{{TASK}}", built.entry),
            cases=[{"name": c["call"], "call": c["call"]} for c in usable],
            origin="capture",
            notes=[f"{c['call']}: {_shapes(c)}" for c in usable]
            + [f"{c['call']}: {c['skipped']}" for c in calls if "skipped" in c],
            captured_files=[raw / f"{c['call']}.pt" for c in usable],
        )
        summary = extract(
            ExtractOptions(
                options.repo, options.function, out=options.out, regime=options.regime, force=options.force
            ),
            inputs,
        )
    return summary, calls


def _run(options: CaptureOptions, bootstrap: Path, source_root: Path, config: Path, cwd: Path) -> Finished:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(bootstrap), str(source_root), env.get("PYTHONPATH", "")) if p
    )
    env["KERNELBOT_CAPTURE_CONFIG"] = str(config)
    command = [sys.executable if c == "python" else c for c in options.command]
    # The repository's code runs: in an OS box with the repository read-only, the recorder's folder
    # writable, the GPU, and no secret (evaluators.sandbox).
    found = shutil.which(command[0])
    command, env = boxed_argv(
        command,
        env,
        what="the captured command",
        read_only=(cwd, source_root, bootstrap, config, *([Path(found).resolve()] if found else [])),
        writable=(Path(json.loads(config.read_text())["out"]),),
        cwd=cwd,
        gpu=True,
    )
    try:
        done = run(command, cwd=cwd, env=env, timeout_s=options.timeout)
    except FileNotFoundError as exc:
        raise ExtractionError(f"cannot run `{shlex.join(options.command)}`: {exc}") from exc
    if done.timed_out:
        raise ExtractionError(f"`{shlex.join(options.command)}` ran past --timeout {options.timeout:g}s")
    return done


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _shapes(call: dict) -> str:
    parts = []
    for name, info in call["arguments"].items():
        if "shape" in info:
            parts.append(f"{name}: {info['dtype']}{info['shape']}")
        else:
            parts.append(f"{name}={info['value']}")
    return ", ".join(parts)


def _tail(done: Finished) -> str:
    text = (done.stderr or done.stdout or "").strip().splitlines()
    return " | ".join(text[-3:]) if text else "(no output)"
