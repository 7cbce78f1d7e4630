"""`kernelbot scan --profile-cmd`, dynamic half: run the command under torch.profiler (through a
`sitecustomize` bootstrap, in a subprocess) and rank the repository's functions by the time of the operators
they launch: GPU time where CUDA exists, else CPU time; operator and kernel counts; host (launch) time."""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evaluators.sandbox import boxed_argv, read_regular_file
from evaluators.subprocesses import run
from extractors.errors import ExtractionError
from extractors.repo_index import RepoIndex

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class ProfiledFunction:
    target: str  # module:Qualname
    path: str
    time_us: float  # device time on CUDA, host time otherwise
    host_us: float
    device_us: float
    ops: int
    kernels: int
    share: float = 0.0  # of all attributed time
    # Of time_us, the part spent in operators that already are library kernels (GEMM, convolution, fused
    # attention): nothing a fused kernel around them can win.
    library_us: float = 0.0
    graph_us: float = 0.0  # of device_us, replayed from CUDA graphs (attributed through their capture)

    @property
    def regime(self) -> str:
        """Where this region's GPU time is spent: "graph" (mostly CUDA-graph replays) or "wall" (eager)."""
        return "graph" if self.device_us > 0 and self.graph_us >= self.device_us / 2 else "wall"

    def to_dict(self) -> dict[str, object]:
        return {**self.__dict__, "regime": self.regime}


def _executable(argv: list[str]) -> list[Path]:
    """The command's program when it is a file outside the system folders (a virtual environment's script)."""
    if not argv:
        return []
    found = shutil.which(argv[0])
    return [Path(found).resolve()] if found else []


def profile_command(
    repo: Path, command: str, top: int | None = None, timeout: float = 1800.0
) -> tuple[list[ProfiledFunction], bool]:
    index = RepoIndex(repo)
    with tempfile.TemporaryDirectory(prefix="kernelbot-profile-") as scratch:
        bootstrap = Path(scratch) / "bootstrap"
        bootstrap.mkdir()
        (bootstrap / "sitecustomize.py").write_text((TEMPLATES / "profile_sitecustomize.py").read_text())
        attribution = Path(__file__).parent / "profile_attribution.py"
        (bootstrap / "kernelbot_profile_attribution.py").write_text(attribution.read_text())
        out = Path(scratch) / "profile.json"
        config = Path(scratch) / "config.json"
        config.write_text(json.dumps({"repo": str(index.root), "out": str(out)}))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(bootstrap), env.get("PYTHONPATH", "")) if p)
        env["KERNELBOT_PROFILE_CONFIG"] = str(config)
        argv = shlex.split(command)
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # the interpreter kernelbot runs in (torch is there)
        # The repository's code runs (in a scheduled scan, whatever upstream holds today): in an OS box with
        # the repository read-only, this scratch folder writable, the GPU, and no secret (evaluators.sandbox).
        argv, env = boxed_argv(
            argv,
            env,
            what="--profile-cmd",
            read_only=(index.root, *_executable(argv)),
            writable=(Path(scratch),),
            cwd=index.root,
            gpu=True,
        )
        try:
            done = run(argv, cwd=index.root, env=env, timeout_s=timeout)
        except FileNotFoundError as exc:
            raise ExtractionError(f"--profile-cmd {command!r} cannot run: {exc}") from exc
        if done.timed_out:
            raise ExtractionError(f"--profile-cmd {command!r} ran past {timeout:g}s")
        data_bytes = read_regular_file(out)
        if data_bytes is None:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise ExtractionError(
                f"--profile-cmd {command!r} produced no profile (exit code {done.returncode}; does it use "
                f"torch and run Python?): {tail}"
            )
        data = json.loads(data_bytes)
    rows = _attribute(index, data["rows"], bool(data["cuda"]))
    if not rows:
        raise ExtractionError(
            f"--profile-cmd {command!r} ran no PyTorch operator from code inside {index.root} "
            f"(exit code {done.returncode}); point it at a test or benchmark that exercises the repository"
        )
    return (rows[:top] if top else rows), bool(data["cuda"])


def _attribute(index: RepoIndex, raw: list[dict], cuda: bool) -> list[ProfiledFunction]:
    merged: dict[str, ProfiledFunction] = {}
    for row in raw:
        path = Path(row["path"])
        target = _qualname_at(index, path, row["lines"], row["function"])
        entry = merged.setdefault(target, ProfiledFunction(target, index.relpath(path), 0.0, 0.0, 0.0, 0, 0))
        entry.host_us += row["host_us"]
        entry.device_us += row["device_us"]
        entry.ops += row["ops"]
        entry.kernels += row["kernels"]
        entry.graph_us += row.get("graph_device_us", 0.0)
        entry.library_us += row.get("library_device_us" if cuda else "library_host_us", 0.0)
    total = 0.0
    for entry in merged.values():
        entry.time_us = entry.device_us if cuda else entry.host_us
        total += entry.time_us
    for entry in merged.values():
        entry.share = round(entry.time_us / total, 4) if total else 0.0
    return sorted(merged.values(), key=lambda e: (-e.time_us, e.target))


def _qualname_at(index: RepoIndex, path: Path, lines: list[int], name: str) -> str:
    module = index.module_for_path(path).name if path.is_file() else path.stem
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return f"{module}:{name}"
    line = lines[0] if lines else 0
    best: tuple[int, str] | None = None

    def walk(body: list[ast.stmt], prefix: str) -> None:
        nonlocal best
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = prefix + stmt.name
                # The profiler names a function by its code's first line: a decorated one's decorator.
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                if first <= line <= (stmt.end_lineno or stmt.lineno):
                    if isinstance(stmt, ast.ClassDef):
                        walk(stmt.body, qual + ".")
                    elif best is None or stmt.lineno > best[0]:
                        best = (stmt.lineno, qual)

    walk(tree.body, "")
    return f"{module}:{best[1] if best else name}"
