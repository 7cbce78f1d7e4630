"""The target repository's formatters, run directly at the versions its pre-commit config pins.

pre-commit itself would clone each hook's repository (network); instead every `tool==version` gets its own
virtual environment under the kernelbot cache ($KERNELBOT_CACHE/tools, default ~/.cache/kernelbot/tools),
installed from the package registry on first use and reused afterwards. The tools run from the repository
root on the files given, in the profile's order, with the profile's settings; the repository's own config
files (pyproject.toml, .isort.cfg) apply as they would under pre-commit.

    format_files(repo, [Path("pkg/mod.py")], profile.formatter)   -> FormatOutcome
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.subprocesses import run
from kernelbot.engines.model import Formatter, FormatterTool
from kernelbot.errors import KernelbotError

_READY = ".kernelbot-ready"
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


class FormatterError(KernelbotError):
    """A pinned formatter cannot be installed, or it failed on a file (not: it changed the file)."""


@dataclass(frozen=True)
class ToolKind:
    """How to call one kind of tool: its executable in the venv, the arguments before the profile's own,
    and the exit codes that mean success. `findings_exit` means "ran, but reports problems it could not
    fix" (ruff check), which the caller may show rather than fail on."""

    executable: str
    leading: tuple[str, ...] = ()
    ok_exit: tuple[int, ...] = (0,)
    findings_exit: tuple[int, ...] = ()


TOOLS: dict[str, ToolKind] = {
    "black": ToolKind("black", ("--quiet",)),
    "isort": ToolKind("isort", ("--quiet",)),
    "ruff-check": ToolKind(
        "ruff", ("check", "--fix", "--no-cache", "--quiet", "--output-format", "concise"), findings_exit=(1,)
    ),
    "ruff-format": ToolKind("ruff", ("format", "--no-cache", "--quiet")),
    # Exits 1 when it rewrote a file: that is its success.
    "double-quote-string-fixer": ToolKind("double-quote-string-fixer", (), ok_exit=(0, 1)),
}


@dataclass(frozen=True)
class FormatOutcome:
    tools: tuple[str, ...]  # requirement of each tool run, in order
    findings: tuple[str, ...]  # problems a checker reported and could not fix, one per line


def tools_dir() -> Path:
    root = os.environ.get("KERNELBOT_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "kernelbot") / "tools"


def format_files(
    repo: Path,
    files: Sequence[Path],
    formatter: Formatter,
    *,
    new_files: Sequence[Path] = (),
    timeout: float = 300.0,
) -> FormatOutcome:
    """Run the formatter's tools over `files` and `new_files` (paths relative to `repo`), rewriting them in
    place; `new_files` get the formatter's new_file_tools first."""
    findings: list[str] = []
    ran = []
    for tools, paths in (
        (formatter.new_file_tools, list(new_files)),
        (formatter.tools, [*new_files, *files]),
    ):
        for tool in tools:
            chosen = [path for path in paths if tool.applies_to(path)]  # the hook's files / exclude
            if chosen:
                findings += run_tool(repo, chosen, tool, timeout)
                ran.append(tool.requirement)
    return FormatOutcome(tuple(ran), tuple(findings))


def run_tool(repo: Path, files: Sequence[Path], tool: FormatterTool, timeout: float = 300.0) -> list[str]:
    """Run one tool; returns the findings it could not fix (empty for pure formatters)."""
    kind = TOOLS[tool.name]
    executable = ensure_tool(tool.requirement, kind.executable)
    cmd = [str(executable), *kind.leading, *tool.args, *(str(f) for f in files)]
    done = run(cmd, cwd=repo, timeout_s=timeout, env=_tool_env())
    if done.timed_out:
        raise FormatterError(f"{tool.requirement} did not finish within {timeout:.0f}s on {len(files)} files")
    if done.returncode in kind.findings_exit:
        return [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode not in kind.ok_exit:
        output = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise FormatterError(
            f"{tool.requirement} failed (exit {done.returncode}) on {', '.join(map(str, files))}: "
            + " | ".join(output)
        )
    return []


def ensure_tool(requirement: str, executable: str) -> Path:
    """The path of `executable` from a venv holding `requirement`, installing that venv on first use."""
    venv = tool_venv(requirement)
    path = venv / "bin" / executable
    if not path.is_file():
        raise FormatterError(f"{requirement} is installed in {venv} but provides no {executable}")
    return path


def tool_venv(requirement: str) -> Path:
    """A virtual environment holding `requirement` (name==version), created under tools_dir() when missing.
    Concurrent callers wait on a lock file; a half-built venv (killed install) is rebuilt."""
    match = _REQUIREMENT.match(requirement.strip())
    if not match:
        raise FormatterError(f"formatter requirement {requirement!r} must pin a version: name==version")
    name, version = match.groups()
    venv = tools_dir() / f"{name.lower()}-{version}"
    if (venv / _READY).is_file():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with _locked(venv.with_name(venv.name + ".lock")):
        if (venv / _READY).is_file():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        problem = _install(requirement, venv)
        if problem:
            shutil.rmtree(venv, ignore_errors=True)
            raise FormatterError(
                f"formatter {requirement} is not installed and could not be installed: {problem}; install it "
                f"with `python -m venv {venv} && {venv}/bin/pip install {requirement}` or make the package "
                "registry reachable"
            )
        (venv / _READY).write_text(f"{requirement}\n")
    return venv


def _install(requirement: str, venv: Path) -> str:
    """Create `venv` and pip-install `requirement` into it; returns "" or what went wrong."""
    steps = [
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            requirement,
        ],
    ]
    for cmd in steps:
        try:
            done = run(cmd, timeout_s=600)
        except OSError as exc:
            return str(exc)
        if done.timed_out:
            return f"`{' '.join(cmd[2:4])}` timed out"
        if done.returncode != 0:
            lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
            return lines[-1].strip() if lines else f"exit {done.returncode}"
    return ""


def _tool_env() -> dict[str, str]:
    """The environment tools run in: ours, minus variables that would make them import our packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
