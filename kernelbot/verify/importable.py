"""Whether the repository's tests can run here at all: the modules the generated test imports from the
repository (everything but the new kernel module, which the base does not have) are imported on the base
tree, in a subprocess with the environment the tests get. When that fails before any change is made, no test
result on either side would say anything about the change: a release unpacked on a machine without the
engine's dependencies (`--repo pypi:sglang==...` on a laptop) fails the same way before and after, and the
generated test would look like a new failure.

    problem = base_import_problem(base_tree, change_tree / generated_test, kernel_module, source_root, env)
    problem.reason()           # "before the change, `import sglang.srt.layers.activation` fails: ..."
    problem.advice("sglang")   # what to do about it, for the user
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from kernelbot.verify.process import run_captured, tail, worktree_env

# Imports each module in turn; the first that fails is reported as one JSON line on stdout.
_PROBE = """
import importlib, json, sys, traceback
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except BaseException as exc:
        missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        print(json.dumps({"module": name, "error": last, "missing": missing or ""}))
        sys.exit(1)
# Every module imported: leave without the teardown of what they loaded (torch: a second or more).
sys.stdout.flush()
sys.stderr.flush()
__import__("os")._exit(0)
"""
PROBE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ImportProblem:
    """A module the tests need that cannot be imported on the base tree."""

    module: str
    error: str  # the exception's last line: "ModuleNotFoundError: No module named 'sgl_kernel'"
    missing: str = ""  # the module that is not installed, for a ModuleNotFoundError

    def reason(self) -> str:
        return f"before the change, `import {self.module}` fails: {self.error}"

    def advice(self, package: str) -> str:
        what = f"the module `{self.missing}`" if self.missing else "what that import needs"
        return (
            f"install {package}'s dependencies in this environment ({what} is missing here), or run "
            "kernelbot on the machine that has them"
        )


def base_import_problem(
    base: Path,
    generated_test: Path,
    kernel_module: str,
    source_root: str = "",
    env: dict[str, str] | None = None,
) -> ImportProblem | None:
    """The first module `generated_test` imports that the base tree cannot (None when all import)."""
    modules = [m for m in imported_modules(generated_test) if m != kernel_module]
    if not modules:
        return None
    argv = [sys.executable, "-c", _PROBE, json.dumps(modules)]
    code, output = run_captured(argv, base, worktree_env(base, source_root, env), PROBE_TIMEOUT_S)
    if code == 0:
        return None
    if code is None:
        return ImportProblem(modules[0], f"importing did not finish within {PROBE_TIMEOUT_S:.0f}s")
    for line in reversed(output.splitlines()):
        try:
            found = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict) and "module" in found:
            return ImportProblem(str(found["module"]), str(found["error"]), str(found.get("missing") or ""))
    return ImportProblem(modules[0], f"the import check exited {code}: {tail(output, 300)}")


def imported_modules(path: Path) -> list[str]:
    """The absolute imports at the top level of `path` (guarded ones included), in order, each once."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return list(dict.fromkeys(names))


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with those inside top-level if / try blocks (imports made at import time)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body)
    return out
