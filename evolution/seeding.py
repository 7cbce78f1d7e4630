"""What seeding left behind, and how a run that has nothing to evolve from ends.

Each seeding operator that writes no candidate says why once: in the error a run without any program ends
with, or (when another seed worked) in one progress note. Why it failed decides how the run ends:
- the task's or the writer's limits (the reference does not run, Inductor leaves top-k to ATen, a construct
  the writer does not cover) are the user's to act on: a SearchError (exit 1) naming each seeder's reason
  and what to add;
- kernelbot's own failures (a writer raised, a conversion bug on a valid reference, or a candidate written
  by a generator seed, which must be correct by construction, failed the evaluator) end the run as a
  SeedingCrash: not a KernelbotError, so the CLI edge writes a crash report and exits 3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.candidate import parse_candidate
from evaluators.errors import CandidateError
from evaluators.task import Task
from evolution.errors import SearchError
from evolution.types import Program

SEED_FILE_OPERATOR = "seed:file"
_WHAT_TO_ADD = (
    "add candidates/ to the task, pass --seed FILE or configure an --llm endpoint, and continue this run "
    "with --resume (it seeds again)"
)


class SeedingCrash(RuntimeError):
    """Seeding failed because of a kernelbot bug; the message holds what the crash report needs."""


@dataclass(frozen=True)
class SeedFailure:
    operator: str
    error: str
    internal: bool  # kernelbot's own failure (MutationOutcome.internal)


class SeedingReport:
    def __init__(self) -> None:
        self.failures: list[SeedFailure] = []

    def add(self, operator: str, error: str, internal: bool) -> None:
        failure = SeedFailure(operator, error or "no candidate produced", internal)
        if failure not in self.failures:  # several attempts of one seeder failing alike: said once
            self.failures.append(failure)

    def notes(self) -> list[str]:
        """One line per failed seeder, for a run that goes on with the seeds that worked."""
        return [f"{f.operator} wrote no candidate: {f.error}" for f in self.failures]

    def no_program(self, task: str) -> Exception:
        """The error of a run whose seeds produced no program at all."""
        ours = [f for f in self.failures if f.internal]
        if ours:
            return SeedingCrash(
                f"no program to mutate for task {task!r}: seeding failed inside kernelbot: "
                + "; ".join(f"{f.operator}: {f.error}" for f in ours)
            )
        reasons = "; ".join(f"{f.operator}: {f.error}" for f in self.failures) or "no seed produced a program"
        return SearchError(f"no program to mutate for task {task!r} ({reasons}); {_WHAT_TO_ADD}")

    def no_correct_program(
        self, task: str, programs: Sequence[Program], evolvers: Sequence[str]
    ) -> Exception:
        """The error of a run whose seeds were all judged wrong while every operator it has only mutates
        correct parents (nothing could ever repair them)."""
        verdicts = "; ".join(f"{p.operator} {p.id}: {_verdict(p)}" for p in programs)
        generated = [
            p for p in programs if p.operator.startswith("seed:") and p.operator != SEED_FILE_OPERATOR
        ]
        if generated:
            return SeedingCrash(
                f"no correct program for task {task!r}: a generated seed failed the evaluator, which is a "
                f"kernelbot bug ({verdicts})"
            )
        return SearchError(
            f"no correct program for task {task!r}: every seed candidate failed ({verdicts}) and the "
            f"operators of this run ({', '.join(evolvers)}) only mutate correct programs; fix the "
            "candidates (or pass a correct one with --seed FILE), or configure an --llm endpoint, and "
            "continue this run with --resume (it seeds again)"
        )


def _verdict(program: Program) -> str:
    result = program.result
    if result is None:
        return "not judged"
    if result.hacks:
        return "flagged: " + ", ".join(sorted({h.kind for h in result.hacks}))
    return f"failed at {result.stage.value}: {result.reason[:300]}"


def seed_sources(
    task: Task, seed_files: Sequence[Path], note: Callable[[str], None]
) -> list[tuple[Path, str]]:
    """The seed candidates of a run: the task's candidates/ (a broken one is skipped with a note: a task may
    ship deliberately broken examples), then the user's --seed files (a bad one is an error)."""
    found: list[tuple[Path, str]] = []
    for path in sorted((task.root / "candidates").glob("*.py")):
        try:
            found.append((path, parse_candidate(path.read_text(), task.entry, path).source))
        except (CandidateError, OSError, UnicodeDecodeError) as exc:
            note(f"skipping seed {path.name}: {exc}")
    for path in seed_files:
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise CandidateError(f"cannot read seed file {path}: {exc}") from exc
        found.append((path, parse_candidate(source, task.entry, path).source))
    return found
