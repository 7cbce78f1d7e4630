"""What seeding left behind, and how a run that has nothing to evolve from ends.

Each seeding operator that writes no candidate says why once: in the error a run without any program ends
with, or (when another seed worked) in one progress note. Why it failed decides how the run ends:
- the task's or the writer's limits (the reference does not run, Inductor leaves top-k to ATen, a construct
  the writer does not cover) are the user's to act on: a SearchError (exit 1) naming each seeder's reason
  and what to add;
- kernelbot's own failures (a writer raised, a conversion bug on a valid reference) end the run as a
  SeedingCrash: not a KernelbotError, so the CLI edge writes a crash report and exits 3.

A seed the evaluator judged wrong is neither: a generated kernel can be right but for the task's contract
(tied top-k ids before `[[compare.ties]]`, a tolerance), and the user's own may simply be wrong. An operator
that can start from it does (an LLM from anything, a fusion variant from a fusion kernel that ran); when none
can, or the search later runs out of moves with nothing correct, the run ends with a SearchError saying that
no kernel passed the evaluator and why the candidates failed (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.candidate import parse_candidate
from evaluators.errors import CandidateError
from evaluators.task import Task
from evolution.errors import SearchError
from evolution.store import RunStore
from evolution.summary import failure_reasons
from evolution.types import Program

SEED_FILE_OPERATOR = "seed:file"
NOTHING_PASSED = "no kernel passed the evaluator"
# Stop reasons that mean no operator has anything left to try (evolution.moves, evolution.stopping).
_OUT_OF_MOVES = ("move space exhausted", "exhausted:")
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
        """The error of a run whose seeds were all judged wrong while no operator it has can start from any
        of them (launch tuning and crossover keep a wrong kernel wrong; fusion variants need a fusion kernel
        that ran)."""
        verdicts = "; ".join(f"{p.operator} {p.id}: {_verdict(p)}" for p in programs)
        return SearchError(
            f"{NOTHING_PASSED} for task {task!r}: every seed candidate failed ({verdicts}) and no operator "
            f"of this run ({', '.join(evolvers)}) can start from a failed one; fix the task or the "
            "candidates (or pass a correct one with --seed FILE), or configure an --llm endpoint, and "
            "continue this run with --resume (it seeds again)"
        )


def nothing_passed(
    task: str, stop_reason: str, programs: Sequence[Program], store: RunStore
) -> SearchError | None:
    """The error of a search that ran out of moves with no correct program among `programs` (None when one
    is correct, or when a budget stopped it: more iterations may still find one)."""
    if any(p.correct for p in programs) or not stop_reason.startswith(_OUT_OF_MOVES):
        return None
    failures = failure_reasons(store, top=1)
    common = f"; most common failure: {failures[0]['stage']}: {failures[0]['reason']}" if failures else ""
    return SearchError(
        f"{NOTHING_PASSED} for task {task!r}{common} ({stop_reason}); fix the task or pass a correct "
        "candidate with --seed FILE, or configure an --llm endpoint, and continue this run with --resume"
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
