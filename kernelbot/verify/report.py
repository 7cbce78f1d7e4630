"""What verification found, as written to RUN/verify.json: the related tests before and after the change
(new failures apart from those already there), the end-to-end benchmark of both sides, and the verdict.

    {"schema": 1, "ok": bool, "tests_ran": bool, "refusal": str,
     "tests": {"command": [...], "files": [...], "before": TestRun, "after": TestRun,
               "new_failures": [id], "preexisting_failures": [id], "fixed": [id],
               "cannot_run": str, "advice": str},
     "e2e": {"measured": bool, "reason": str, "command": [...], "metric", "unit", "higher_is_better",
             "before": [..], "after": [..], "means": {"before", "after"}, "stdev": {...}, "cv": {...},
             "delta_pct", "ci_pct": [lo, hi], "confidence", "method", "order", "runs", "logs"}}

`ok` is false exactly when the change makes a test fail that did not fail before; `refusal` then names them.
`tests_ran` is false when the tests could not run here at all: the repository's code they import fails to
import before any change (`cannot_run` says how, `advice` what to do); nothing is then known to be broken,
and nothing is known to work.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelbot.errors import RunStateError
from kernelbot.verify.benchmark import E2EOutcome
from kernelbot.verify.repo_tests import TestRun

SCHEMA = 1
_NAMED = 5  # failing tests named in the one-line refusal (verify.json lists them all)


@dataclass(frozen=True)
class TestComparison:
    """The related tests on the base and on the change, and how their failures differ."""

    __test__ = False

    command: tuple[str, ...]
    files: tuple[str, ...]
    before: TestRun
    after: TestRun
    new_failures: tuple[str, ...]
    preexisting_failures: tuple[str, ...]
    fixed: tuple[str, ...]
    # Why the tests were not run at all ("" when they ran): the repository's code the tests import cannot be
    # imported here even before the change (kernelbot.verify.importable), and what to do about it.
    cannot_run: str = ""
    advice: str = ""

    @classmethod
    def not_run(
        cls, command: tuple[str, ...], files: tuple[str, ...], reason: str, advice: str
    ) -> TestComparison:
        run = TestRun(command, None, 0, 0, 0, (), 0.0, note=f"not run: {reason}")
        return cls(command, files, run, run, (), (), (), cannot_run=reason, advice=advice)

    @classmethod
    def of(
        cls, command: tuple[str, ...], files: tuple[str, ...], before: TestRun, after: TestRun
    ) -> TestComparison:
        failed_before, failed_after = set(before.failures), set(after.failures)
        return cls(
            command=command,
            files=files,
            before=before,
            after=after,
            new_failures=tuple(sorted(failed_after - failed_before)),
            preexisting_failures=tuple(sorted(failed_after & failed_before)),
            fixed=tuple(sorted(failed_before - failed_after)),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "command": list(self.command),
            "files": list(self.files),
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "new_failures": list(self.new_failures),
            "preexisting_failures": list(self.preexisting_failures),
            "fixed": list(self.fixed),
            "cannot_run": self.cannot_run,
            "advice": self.advice,
        }

    @classmethod
    def from_dict(cls, data: dict) -> TestComparison:
        return cls(
            command=tuple(data["command"]),
            files=tuple(data["files"]),
            before=TestRun.from_dict(data["before"]),
            after=TestRun.from_dict(data["after"]),
            new_failures=tuple(data["new_failures"]),
            preexisting_failures=tuple(data["preexisting_failures"]),
            fixed=tuple(data["fixed"]),
            cannot_run=str(data.get("cannot_run", "")),
            advice=str(data.get("advice", "")),
        )


@dataclass(frozen=True)
class VerifyReport:
    tests: TestComparison
    e2e: E2EOutcome

    @property
    def ok(self) -> bool:
        return not self.tests.new_failures

    @property
    def tests_ran(self) -> bool:
        """False when the tests could not run here at all (TestComparison.cannot_run says why)."""
        return not self.tests.cannot_run

    @property
    def refusal(self) -> str:
        """One line naming the tests the change breaks ("" when it breaks none)."""
        new = self.tests.new_failures
        if not new:
            return ""
        named = ", ".join(new[:_NAMED]) + (f" and {len(new) - _NAMED} more" if len(new) > _NAMED else "")
        return f"with the change {len(new)} related test(s) fail that did not fail before it: {named}"

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "tests_ran": self.tests_ran,
            "refusal": self.refusal,
            "tests": self.tests.to_dict(),
            "e2e": self.e2e.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> VerifyReport:
        if data.get("schema") != SCHEMA:
            raise RunStateError(
                f"the verification report has schema {data.get('schema')!r}; this kernelbot reads {SCHEMA}"
            )
        return cls(tests=TestComparison.from_dict(data["tests"]), e2e=E2EOutcome.from_dict(data["e2e"]))
