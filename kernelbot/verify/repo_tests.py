"""Run a repository's test command on some of its test files and read back every test's outcome by id.

With pytest (the command names it) the run writes a JUnit XML report (xunit1, which records each test's
file) and keeps going past collection errors, so each test gets an id like `tests/test_x.py::TestK::test_m[2]`
and a file that fails to import is one failing id (`tests/test_x.py`). Any other runner is judged as a whole:
one id, the command itself, failing when it exits non-zero.

The tests run from the work tree's root with the work tree's source root first on PYTHONPATH (the checkout's
code is what is tested, not an installed copy), without writing bytecode or pytest's cache into the tree, and
with a bare `python` in the command meaning this interpreter.
"""

from __future__ import annotations

import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelbot.verify.process import read_regular_file, resolve_command, run_captured, tail, worktree_env

DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class TestRun:
    """The outcome of one run of the test command: counts, and the ids of the tests that failed or errored."""

    __test__ = False  # not a pytest test class, despite the name

    command: tuple[str, ...]
    exit_code: int | None  # None: killed at the timeout
    passed: int
    failed: int
    skipped: int
    failures: tuple[str, ...]  # failed or errored test ids, sorted
    duration_s: float
    log: str = ""  # path of the full output, relative to the run directory when written under it
    note: str = ""  # why the run has no per-test results, when it has none

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    def to_dict(self) -> dict[str, object]:
        return {
            "command": list(self.command),
            "exit_code": self.exit_code,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "failures": list(self.failures),
            "duration_s": self.duration_s,
            "log": self.log,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: dict) -> TestRun:
        return cls(
            command=tuple(data["command"]),
            exit_code=data["exit_code"],
            passed=int(data["passed"]),
            failed=int(data["failed"]),
            skipped=int(data["skipped"]),
            failures=tuple(data["failures"]),
            duration_s=float(data["duration_s"]),
            log=data.get("log", ""),
            note=data.get("note", ""),
        )


@dataclass(frozen=True)
class TestOutcomes:
    """Per-test results parsed from a JUnit report: id -> "passed" | "failed" | "skipped"."""

    __test__ = False

    results: dict[str, str] = field(default_factory=dict)

    def counts(self) -> tuple[int, int, int]:
        values = list(self.results.values())
        return values.count("passed"), values.count("failed"), values.count("skipped")

    def failures(self) -> tuple[str, ...]:
        return tuple(sorted(k for k, v in self.results.items() if v == "failed"))


def is_pytest(command: Sequence[str]) -> bool:
    return any(Path(part).name in ("pytest", "py.test") for part in command)


def run_tests(
    worktree: Path,
    command: Sequence[str],
    files: Sequence[Path],
    *,
    source_root: str = "",
    report_dir: Path,
    label: str,
    env: dict[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> TestRun:
    """Run `command` on `files` (relative to `worktree`) and return each test's outcome.

    The JUnit report and the full output are written to `report_dir` as `<label>.xml` / `<label>.log`."""
    report_dir.mkdir(parents=True, exist_ok=True)
    junit = report_dir / f"{label}.xml"
    log = report_dir / f"{label}.log"
    junit.unlink(missing_ok=True)
    argv = resolve_command(command)
    pytest = is_pytest(argv)
    # The tests write their report into a folder of their own (the only writable one besides their private
    # scratch); it is copied into the run directory afterwards, as a regular file only.
    with tempfile.TemporaryDirectory(prefix="kernelbot-junit-") as out:
        if pytest:
            argv += [
                "-p",
                "no:cacheprovider",
                "--continue-on-collection-errors",
                "-o",
                "junit_family=xunit1",
                f"--junitxml={Path(out) / junit.name}",
            ]
        argv += [str(f) for f in files]
        started = time.monotonic()
        exit_code, output = run_captured(
            argv, worktree, worktree_env(worktree, source_root, env), timeout_s, writable=(Path(out),)
        )
        duration = round(time.monotonic() - started, 2)
        report = read_regular_file(Path(out) / junit.name)
        if report is not None:
            junit.write_bytes(report)
    log.write_text(output)
    shown = (*command, *(str(f) for f in files))  # what a person would type, without the report flags
    if exit_code is None:
        note = f"killed after {timeout_s:.0f}s (the test run's time limit)"
        return TestRun(shown, None, 0, 1, 0, (_whole_run_id(command),), duration, str(log), note)
    if pytest and junit.is_file():
        outcomes = parse_junit(junit)
        passed, failed, skipped = outcomes.counts()
        if exit_code in (0, 1, 5) or failed:
            return TestRun(shown, exit_code, passed, failed, skipped, outcomes.failures(), duration, str(log))
    # No per-test results: pytest could not start (exit 2-4) or the runner is not pytest.
    if exit_code == 0:
        return TestRun(shown, 0, 1, 0, 0, (), duration, str(log), "judged as a whole (no per-test report)")
    note = f"exit code {exit_code} without per-test results: {tail(output, 300)}"
    return TestRun(shown, exit_code, 0, 1, 0, (_whole_run_id(command),), duration, str(log), note)


def _whole_run_id(command: Sequence[str]) -> str:
    return f"({' '.join(command)})"


def parse_junit(path: Path) -> TestOutcomes:
    """Read a pytest JUnit XML (xunit1) report into test id -> outcome."""
    results: dict[str, str] = {}
    for case in ET.parse(path).iter("testcase"):
        test_id = _test_id(case.attrib)
        children = {child.tag for child in case}
        if children & {"failure", "error"}:
            outcome = "failed"
        elif "skipped" in children:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A test that errors in teardown after passing appears twice: the failure wins.
        if results.get(test_id) != "failed":
            results[test_id] = outcome
    return TestOutcomes(results)


def _test_id(attrib: dict[str, str]) -> str:
    """pytest's node id from a testcase's file, classname and name.

    pytest writes classname as the node id's path (dots for slashes, no `.py`) followed by its classes."""
    file = attrib.get("file", "")
    classname = attrib.get("classname", "")
    name = attrib.get("name", "")
    if not classname:  # a collection error: the name is the module's dotted path
        return file or name
    if not file:
        return f"{classname}::{name}"
    module = Path(file).with_suffix("").as_posix().replace("/", ".")
    if classname == module:
        return f"{file}::{name}"
    if classname.startswith(module + "."):
        return "::".join([file, *classname[len(module) + 1 :].split("."), name])
    return f"{file}::{classname}::{name}"
