"""Helpers of the integration tests: the codemod assertion (both sides dedented, like LibCST's CodemodTest),
real source files read from the cached SGLang/LMDeploy releases (skipped when they cannot be fetched) and a
kernel's PTX for sm_90, compiled without a GPU."""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import Codemod

from evaluators.sandbox import box_env
from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release
from kernelbot.engines.model import Formatter
from kernelbot.formatting import format_files


def assert_transform(transform: cst.CSTTransformer | Codemod, before: str, after: str) -> str:
    """Apply `transform` to `before` (dedented) and compare with `after` (dedented); returns the result."""
    module = cst.parse_module(textwrap.dedent(before).lstrip("\n"))
    if isinstance(transform, Codemod):
        result = transform.transform_module(module).code
    else:
        result = module.visit(transform).code
    assert result == textwrap.dedent(after).lstrip("\n"), "\n" + result
    return result


def release_file(requirement: str, path: str) -> str:
    """The text of `path` in an unpacked release (sglang==0.5.23...), or a skip saying why not."""
    try:
        root = fetch_release(requirement)
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {requirement} (is the package registry reachable?): {exc}")
    return (Path(root) / path).read_text()


def release_root(requirement: str) -> Path:
    try:
        return Path(fetch_release(requirement))
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {requirement} (is the package registry reachable?): {exc}")


def formatter_changes(
    repo: Path, texts: dict[Path, str], formatter: Formatter
) -> dict[Path, list[tuple[list[str], list[str]]]]:
    """What the formatter changes in each text, placed beside its path in `repo` (one run for all of them):
    (old lines, new lines) per change."""
    probes = {path: path.with_name(f"_probe{i}_{path.name}") for i, path in enumerate(texts)}
    for path, probe in probes.items():
        (repo / probe).write_text(texts[path])
    try:
        format_files(repo, list(probes.values()), formatter)
        formatted = {path: (repo / probe).read_text() for path, probe in probes.items()}
    finally:
        for probe in probes.values():
            (repo / probe).unlink()
    changes = {}
    for path, text in texts.items():
        before, after = text.splitlines(), formatted[path].splitlines()
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changes[path] = [
            (before[i1:i2], after[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
        ]
    return changes


def assert_formatter_is_satisfied(
    repo: Path, touched: tuple[Path, ...], formatter: Formatter, base: dict
) -> None:
    """Running the formatter again changes nothing it would not change on the untouched file too (the lines
    upstream left unformatted stay as they were; see kernelbot.integrate.line_merge)."""
    now = formatter_changes(repo, {path: (repo / path).read_text() for path in touched}, formatter)
    before = formatter_changes(repo, {path: base[path] for path in touched if path in base}, formatter)
    for path in touched:
        assert now[path] == before.get(path, []), f"{path}: the formatter would still change {now[path]}"


# Compiles the kernel named argv[1] of each file after argv[3] for sm_90 (ptxas included, no GPU needed), with
# the signature and constexprs (parameter index -> value) of argv[2] and argv[3] in JSON, and prints its
# PTX without source locations, debug sections or comments.
_COMPILE_SM90 = textwrap.dedent(
    """
    import importlib.util, json, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel, signature = sys.argv[1], json.loads(sys.argv[2])
    constants = {(int(k),): v for k, v in json.loads(sys.argv[3]).items()}
    for k, path in enumerate(sys.argv[4:]):
        spec = importlib.util.spec_from_file_location(f"m{k}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        source = ASTSource(getattr(module, kernel), signature, constants)
        ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
        ptx = ptx.split(".section\\t.debug", 1)[0]
        kept = [l for l in ptx.splitlines() if not l.lstrip().startswith((".loc", ".file", "//"))]
        print("=====", "\\n".join(kept))
    """
)


def sm90_ptx(
    files: list[Path], kernel: str, signature: dict[str, str], constants: dict[int, int], cache: Path
) -> list[str]:
    """The PTX of the @triton.jit function `kernel` of each file for sm_90 (`signature`: parameter -> Triton
    type or "constexpr"; `constants`: a constexpr's index -> its value), compiled with Triton's cache in
    `cache`."""
    # The sandbox's environment (no secret), without the interpreter, which would replace the compiler.
    env = {k: v for k, v in box_env().items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(cache)
    args = [kernel, json.dumps(signature), json.dumps(constants), *map(str, files)]
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE_SM90, *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split("=====")[1:]
