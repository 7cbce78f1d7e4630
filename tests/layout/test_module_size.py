"""No Python module outside tests/ grows past 400 lines: one module per concern, and a module that has grown
that far holds more than one (STYLE.md; OpenEvolve's 2,616-line database.py is the picture to avoid)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from import_graph import REPO

MAX_LINES = 400

# Modules allowed over the limit for now, each with the issue that splits it and the line count it had
# when it was listed (it must not grow further). Empty: none is over the limit.
KNOWN_OVER: dict[str, tuple[int, str]] = {}

SKIPPED_DIRS = {"tests", "__pycache__", "build", "dist", "node_modules"}


def python_modules(root: Path) -> Iterator[Path]:
    """Every .py file of the repository outside tests/, hidden folders, virtual environments and builds."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not _skipped(Path(folder, name)))
        yield from (Path(folder, name) for name in sorted(files) if name.endswith(".py"))


def _skipped(folder: Path) -> bool:
    name = folder.name
    return (
        name.startswith(".")
        or name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or (folder / "pyvenv.cfg").exists()
    )


def line_counts(root: Path) -> dict[str, int]:
    return {
        path.relative_to(root).as_posix(): len(path.read_text(errors="replace").splitlines())
        for path in python_modules(root)
    }


def test_no_module_outside_tests_exceeds_the_limit() -> None:
    counts = line_counts(REPO)
    over = {
        rel: n
        for rel, n in counts.items()
        if n > MAX_LINES and not (rel in KNOWN_OVER and n <= KNOWN_OVER[rel][0])
    }
    assert not over, f"modules over {MAX_LINES} lines (split them by concern): " + ", ".join(
        f"{rel} ({n})" for rel, n in sorted(over.items())
    )


def test_known_exceptions_are_still_over_the_limit() -> None:
    """A listed module that was split leaves the list, so the list never excuses a module that grows back."""
    counts = line_counts(REPO)
    stale = [rel for rel in KNOWN_OVER if counts.get(rel, 0) <= MAX_LINES]
    assert not stale, f"no longer over {MAX_LINES} lines (remove from KNOWN_OVER): {stale}"


def test_the_walk_sees_the_packages_and_skips_tests(tmp_path: Path) -> None:
    counts = line_counts(REPO)
    assert "evaluators/timing/stage.py" in counts and "bench/throughput.py" in counts
    assert not any(rel.startswith(("tests/", ".venv/")) for rel in counts)
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_big.py").write_text("x = 1\n" * 900)
    (tmp_path / "env" / "lib").mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "lib" / "site.py").write_text("x = 1\n" * 900)
    assert line_counts(tmp_path) == {"pkg/sub/big.py": MAX_LINES + 1}
