"""Running a repository's tests for real (pytest subprocesses) and telling new failures from old ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.sandbox import availability
from kernelbot.verify.repo_tests import parse_junit, run_tests
from kernelbot.verify.report import TestComparison

PYTEST = ["python", "-m", "pytest", "-q"]

SUITE = """
import pytest
import pkg

def test_value():
    assert pkg.VALUE == 1

def test_always_broken():
    assert False, "broken upstream"

class TestGroup:
    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert n <= pkg.LIMIT

@pytest.mark.skip(reason="needs a GPU")
def test_gpu():
    pass
"""


def tree(root: Path, value: int, limit: int) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(f"VALUE = {value}\nLIMIT = {limit}\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_pkg.py").write_text(SUITE)
    return root


def test_outcomes_by_id_and_the_tree_own_code_is_tested(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", value=1, limit=2)
    change = tree(tmp_path / "change", value=2, limit=1)
    (change / "tests" / "test_new.py").write_text("import pkg.missing\n")  # a file that cannot be collected
    files = [Path("tests/test_pkg.py")]
    before = run_tests(base, PYTEST, files, report_dir=tmp_path / "logs", label="base")
    after = run_tests(
        change, PYTEST, [*files, Path("tests/test_new.py")], report_dir=tmp_path / "logs", label="ch"
    )
    assert (before.passed, before.failed, before.skipped) == (3, 1, 1)
    assert before.failures == ("tests/test_pkg.py::test_always_broken",)
    assert after.failures == (
        "tests/test_new.py",
        "tests/test_pkg.py::TestGroup::test_param[2]",
        "tests/test_pkg.py::test_always_broken",
        "tests/test_pkg.py::test_value",
    )
    assert after.command == (*PYTEST, "tests/test_pkg.py", "tests/test_new.py")  # no report flags shown
    assert Path(after.log).read_text().count("broken upstream") >= 1
    compared = TestComparison.of(tuple(PYTEST), ("tests/test_pkg.py",), before, after)
    assert compared.preexisting_failures == ("tests/test_pkg.py::test_always_broken",)
    assert compared.new_failures == (
        "tests/test_new.py",
        "tests/test_pkg.py::TestGroup::test_param[2]",
        "tests/test_pkg.py::test_value",
    )
    assert compared.fixed == ()
    assert TestComparison.from_dict(compared.to_dict()) == compared
    # Nothing was written into the work trees: no bytecode, no pytest cache.
    leftovers = {p.name for p in change.rglob("*")} - {
        "pkg",
        "__init__.py",
        "tests",
        "test_pkg.py",
        "test_new.py",
    }
    assert leftovers == set()


def test_a_command_pytest_cannot_start_is_one_failure(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", value=1, limit=2)
    run = run_tests(base, PYTEST, [Path("tests/nope.py")], report_dir=tmp_path / "logs", label="x")
    assert run.exit_code == 4 and run.failures == ("(python -m pytest -q)",)
    assert "not found" in run.note


def test_other_runners_are_judged_as_a_whole(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", value=1, limit=2)
    ok = run_tests(
        base, ["python", "-c", "import pkg; assert pkg.VALUE == 1"], [], report_dir=tmp_path, label="a"
    )
    assert ok.failures == () and ok.passed == 1
    bad = run_tests(
        base, ["python", "-c", "import pkg; assert pkg.VALUE == 2"], [], report_dir=tmp_path, label="b"
    )
    assert bad.failures == ("(python -c import pkg; assert pkg.VALUE == 2)",) and bad.exit_code == 1


def test_a_hanging_run_is_killed_at_its_limit(tmp_path: Path) -> None:
    base = tree(tmp_path / "base", value=1, limit=2)
    (base / "tests" / "test_hang.py").write_text("import time\n\ndef test_hang():\n    time.sleep(60)\n")
    run = run_tests(base, PYTEST, [Path("tests/test_hang.py")], report_dir=tmp_path, label="h", timeout_s=3)
    assert run.exit_code is None and run.failed == 1 and "killed after 3s" in run.note
    assert run.duration_s < 30


def test_junit_ids_of_unittest_classes(tmp_path: Path) -> None:
    base = tmp_path / "t"
    (base / "test").mkdir(parents=True)
    (base / "test" / "test_unit.py").write_text(
        "import unittest\n\n\nclass TestOp(unittest.TestCase):\n"
        "    def test_ok(self):\n        pass\n\n    def test_bad(self):\n        self.fail('x')\n"
    )
    run = run_tests(
        base, [sys.executable, "-m", "pytest"], [Path("test/test_unit.py")], report_dir=tmp_path, label="u"
    )
    assert run.failures == ("test/test_unit.py::TestOp::test_bad",) and run.passed == 1
    outcomes = parse_junit(tmp_path / "u.xml")
    assert outcomes.results == {
        "test/test_unit.py::TestOp::test_ok": "passed",
        "test/test_unit.py::TestOp::test_bad": "failed",
    }


SNOOP = """
import os

def test_no_secret_in_reach():
    found = [k for k, v in os.environ.items() if "SENTINEL" in v]
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"SENTINEL" in f.read():
                    found.append(pid)
        except OSError:
            pass
    print("SNOOPED", found)
    assert not found

def test_the_tree_is_read_only():
    with open(os.path.join(os.path.dirname(__file__), "planted.py"), "w") as f:
        f.write("x = 1\\n")
"""


@pytest.mark.skipif(not availability().ok, reason="no bubblewrap box on this machine")
def test_the_repository_tests_run_in_a_box_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = {"GITHUB_TOKEN": "ghp_SENTINEL_verify", "KERNELBOT_LLM_API_KEY": "sk-SENTINEL-verify"}
    for key, value in secret.items():
        monkeypatch.setenv(key, value)
    # kernelbot's own process holds its secrets in the environment it started with (/proc/<pid>/environ)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env={**os.environ})
    try:
        root = tree(tmp_path / "tree", value=1, limit=2)
        (root / "tests" / "test_snoop.py").write_text(SNOOP)
        run = run_tests(root, PYTEST, [Path("tests/test_snoop.py")], report_dir=tmp_path / "logs", label="x")
    finally:
        holder.kill()
        holder.wait()
    log = Path(run.log).read_text()
    assert run.passed == 1, log  # test_no_secret_in_reach: nothing with the sentinel in reach
    assert run.failures == ("tests/test_snoop.py::test_the_tree_is_read_only",), log
    assert "Read-only file system" in log
    assert "SENTINEL" not in log and not (root / "tests" / "planted.py").exists()
