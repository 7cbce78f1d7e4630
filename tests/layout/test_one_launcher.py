"""One module starts a command with a time limit and kills it (evaluators.subprocesses): elsewhere in the
packages and benchmarks, no Popen / subprocess.run / asyncio subprocess of its own, no os.killpg, and no
TimeoutExpired to catch. A second copy of that code is where a group goes unkilled or an output is lost."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("evaluators", "extractors", "evolution", "kernelbot", "bench")
HELPER = REPO / "evaluators" / "subprocesses.py"
# module -> the names that launch a process or kill a group; any use outside the helper is a finding
FORBIDDEN = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput",
                   "TimeoutExpired"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"killpg", "system", "popen"},
}  # fmt: skip
# Every forbidden use spells one of these: only files holding one are parsed (the scan stays cheap).
WORDS = ("subprocess", "killpg", "os.system", "os.popen", "TimeoutExpired")


def findings(path: Path, source: str) -> list[str]:
    """'path:line: what' for each launch or kill written outside the helper."""
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in FORBIDDEN.get(node.value.id, ()):
                found.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN:
            for alias in node.names:
                if alias.name in FORBIDDEN[node.module]:
                    found.append(f"{path}:{node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Name) and node.id == "TimeoutExpired":
            found.append(f"{path}:{node.lineno}: TimeoutExpired")
    return found


def test_only_the_helper_launches_and_kills_processes() -> None:
    found = []
    for package in SCANNED:
        for path in sorted((REPO / package).rglob("*.py")):
            text = path.read_text()
            if path != HELPER and any(word in text for word in WORDS):
                found += findings(path.relative_to(REPO), text)
    assert not found, (
        "start commands through evaluators.subprocesses (run, run_async, Started, kill_group):\n"
        + "\n".join(found)
    )


def test_each_shape_of_a_second_launcher_is_found() -> None:
    source = (
        "import asyncio, os, subprocess\n"
        "from subprocess import Popen\n"
        "def f(p):\n"
        "    try:\n"
        "        subprocess.run(['x'], timeout=1)\n"
        "    except subprocess.TimeoutExpired:\n"
        "        os.killpg(p, 9)\n"
        "    asyncio.create_subprocess_exec('x')\n"
        "    os.kill(p, 0)\n"  # a liveness probe or a single kill is not a launcher
        "    return subprocess.PIPE\n"
    )
    found = [line.split(": ", 1)[1] for line in findings(Path("m.py"), source)]
    assert sorted(found) == [
        "asyncio.create_subprocess_exec",
        "from subprocess import Popen",
        "os.killpg",
        "subprocess.TimeoutExpired",
        "subprocess.run",
    ]
