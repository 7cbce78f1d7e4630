"""Test files need distinct basenames: the tests folders are not packages, so pytest imports each test file
as a top-level module under its basename, and a second file of the same name stops the whole collection
("import file mismatch") — on a clean checkout, where no stale __pycache__ hides it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_file_basenames_are_unique() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        by_name[path.name].append(path.relative_to(TESTS).as_posix())
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"test files sharing a basename (rename one): {clashes}"
