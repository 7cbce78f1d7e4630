"""The search loop: seed, then keep several mutations in flight and feed their children to the executor.

Everything that happens is committed to the run store before the next step depends on it: a child is stored
`pending` before dispatch, an evaluation with its placements in one transaction. A resumed run therefore
re-dispatches pending children, never re-evaluates a judged one, and rebuilds the archive from the log.
Mutations run in this process's event loop; evaluations run in the executor's workers (separate pools).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluators.candidate import check_evolve_block
from evaluators.errors import CandidateError
from evaluators.result import EvalResult, Hardware
from evaluators.task import Task
from evaluators.timing.baselines import COMPILE
from evolution.compile_check import COMPILE_STATE, UNTIMED_BACKENDS
from evolution.compile_check import record as compile_record
from evolution.config import SearchConfig
from evolution.dedup import SeenShas, candidate_sha
from evolution.dispatch import reported_hardware
from evolution.executors import Executor
from evolution.final_comparison import FINAL_STATE, Duel, challengers, duel, record, settle
from evolution.islands import Archive
from evolution.migration import due_epoch, migrate, plan_ring
from evolution.moves import Move, MoveChooser, parent_fits
from evolution.mutators.bucket_crossover import OPERATOR as BUCKET_OPERATOR
from evolution.mutators.bucket_crossover import BucketCrossoverMutator
from evolution.operators import OperatorSet
from evolution.progress import NullProgress, ProgressSink, Snapshot, case_bests
from evolution.replay import rebuild_archive
from evolution.sampling import ParentSampler, run_case_leaders
from evolution.seeding import SEED_FILE_OPERATOR, SeedingReport, nothing_passed, seed_sources
from evolution.stopping import StopRules
from evolution.store import MutationRecord, PlacementRow, RunStore, new_program_id
from evolution.types import MutationOutcome, MutationRequest, Mutator, Program, TokenUsage
from evolution.winner import run_winner


@dataclass(frozen=True)
class RunSummary:
    stop_reason: str
    iterations: int
    evaluations: int
    best: Program | None
    elapsed_s: float
    tokens: TokenUsage


class Controller:
    def __init__(
        self,
        task: Task,
        config: SearchConfig,
        store: RunStore,
        executor: Executor,
        operators: OperatorSet,
        *,
        seed_files: tuple[Path, ...] = (),
        progress: ProgressSink | None = None,
    ) -> None:
        self.task = task
        self.config = config
        self.store = store
        self.executor = executor
        self.operators = operators
        self.seed_files = seed_files
        self.progress = progress or NullProgress()
        self.archive: Archive = rebuild_archive(store, config.archive)
        self.seen = SeenShas(store.known_shas())
        for mutator in operators.evolvers:  # operators that can skip known sources before proposing them
            if hasattr(mutator, "seen"):
                mutator.seen = self.seen.__contains__
        self.iterations = store.mutation_count("evolve")
        self.tokens = store.token_usage()
        self.rng = random.Random(f"{config.seed}:{self.iterations}:{store.evaluation_count()}")
        self.sampler = ParentSampler(config.sampling, self.rng)
        self.stop = StopRules(config.stop, store, started_iterations=self.iterations)
        self._eval_slots = asyncio.Semaphore(1)  # resized in run() once the executor knows its capacity
        self._hardware = store.latest_hardware() or Hardware(backend=executor.backend_name)
        # Breeding jobs in flight and their phase ("mutating" | "evaluating"): a time stop drops the former.
        self._jobs: dict[asyncio.Task[None], str] = {}
        self.moves = MoveChooser(operators, self.sampler, self.rng)
        self.seeding = SeedingReport()
        self._final_iteration: int | None = None  # the final crossover's iteration, once it has run

    # --- the loop -------------------------------------------------------------------------------------------

    async def run(self) -> RunSummary:
        self._eval_slots = asyncio.Semaphore(max(1, self.executor.capacity))
        self.store.ensure_islands(len(self.archive.islands))
        self.progress.started(self.snapshot("resuming" if self.store.evaluation_count() else "seeding"))
        for mutator in self.operators.evolvers:  # operators that want the run's task before their first move
            start = getattr(mutator, "start", None)
            if start is not None:
                start(self.task)
        # The workers' GPU and versions before anything is judged: the seed prompt shows them.
        self._hardware = await reported_hardware(self.executor, self._hardware, self.progress.note)
        pending = [self._evaluate(p) for p in self.store.programs(status="pending")]
        if pending:
            await asyncio.gather(*pending)
        # A run whose seeding left nothing to evolve is not seeded: a resume seeds again, with the task's
        # candidates/ and the --seed files of that invocation (earlier ones are known and skipped).
        if not self.store.state("seeded", False) or self.archive.is_empty():
            await self._seed()
            self._check_seeded()
            self.store.set_state(seeded=True)
        reason = await self._evolve()
        await self._final_crossover()
        await self._final_comparison()
        self.store.set_state(finished=reason, finished_at=time.time())
        snapshot = self.snapshot(f"stopped: {reason}")
        self.progress.finished(snapshot)
        failed = nothing_passed(self.task.name, reason, self.archive.all_elites(), self.store)
        if failed is not None:  # out of moves with nothing correct: the run ends with that one line
            raise failed
        return RunSummary(
            reason,
            self.iterations,
            self.store.evaluation_count(),
            self.archive.best,
            self.stop.elapsed(),
            self.tokens,
        )

    async def _evolve(self) -> str:
        limit = self.config.mutation.in_flight or self.executor.capacity + 1
        running = self._jobs
        try:
            while True:
                reason = self.stop.reason(self.iterations, self.tokens)
                if reason:
                    break
                if len(running) >= limit or (self.archive.is_empty() and running):
                    await self._wait(running)
                    continue
                if self.archive.is_empty():
                    raise self.seeding.no_program(self.task.name)
                move = self.moves.next(self.archive, self.iterations % len(self.archive.islands))
                if move is None:  # nothing new for any parent: wait for what is in flight, or stop
                    if running:
                        await self._wait(running)
                        continue
                    reason = self.moves.reason(self.archive)
                    break
                job = asyncio.create_task(self._breed(self.iterations, move))
                running[job] = "mutating"
                self.iterations += 1
            await self._drain(running, reason)
        except BaseException:
            # A failed job (or Ctrl-C) ends the run: stop the others; what they committed stays committed
            # and their pending children are judged on resume.
            for job in running:
                job.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        return reason

    async def _final_crossover(self) -> None:
        """Before the run ends, its best program crossed by input size with the fastest program of every case
        it does not lead, from every island (an iteration more, mode "final"): one child routed by every
        split that still gains, one after the other. A winner found late, on one island, has rarely been a
        crossover's parent: on the H200 an SGLang RMSNorm winner was 5 % behind another island's two-pass
        kernel at 4096 tokens when the time ran out, and one split alone went to a partner that gained at
        256 tokens instead. The best is first timed against torch.compile (`_compile_check`): a second kernel
        body may enter for a smaller gain where it lifts a case that trails compile. One more evaluation
        (two with that check), each bounded by the drain's timeout; a child left unjudged stays pending for a
        resume."""
        crossover = next((m for m in self.operators.evolvers if m.name == BUCKET_OPERATOR), None)
        best = self.archive.best
        if not isinstance(crossover, BucketCrossoverMutator) or best is None or not best.correct:
            return
        leaders = run_case_leaders(self.archive.islands, best)
        if not leaders:
            return
        trailing = await self._compile_check(best)
        request = MutationRequest(
            self.task, best, tuple(leaders), self._hardware, best.island, self.iterations, trailing
        )
        self._final_iteration = self.iterations
        self.iterations += 1
        job = asyncio.create_task(self._mutate_and_evaluate(crossover.chained(), request, "evolve", "final"))
        if await self._within_drain([job]):
            job.result()

    async def _within_drain(self, jobs: list[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
        """The jobs of a final step that finished within the drain's timeout; the others are cancelled and
        awaited."""
        done, late = await asyncio.wait(jobs, timeout=self.config.stop.drain_timeout_s)
        for job in late:
            job.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return done

    async def _compile_check(self, best: Program) -> tuple[str, ...]:
        """The cases where `best` is slower than torch.compile, timed side by side in one worker
        (evolution.compile_check), the figures kept in the store; none under Triton's interpreter, or when
        the evaluation does not finish within the drain's timeout."""
        if self.executor.backend_name in UNTIMED_BACKENDS or best.result is None:
            return ()

        async def against_compile() -> EvalResult:
            async with self._eval_slots:
                return (await self.executor.evaluate(self.task, best.source, baseline=COMPILE)).result

        job = asyncio.create_task(against_compile())
        if not await self._within_drain([job]):
            self.progress.note(f"torch.compile against {best.id}: not timed within the drain's timeout")
            return ()
        figures = duel(best, job.result(), best.result.regime)
        kept = compile_record(figures)
        self.store.set_state(**{COMPILE_STATE: kept})
        timed = ", ".join(f"{case} {s:.3f}x" for case, s in figures.speedups.items()) or figures.reason
        self.progress.note(f"{best.id} against torch.compile side by side: {timed}")
        return tuple(kept["behind"])

    async def _final_comparison(self) -> None:
        """The program the run would ship timed side by side with its challengers, each against it in one
        worker (evolution.final_comparison), and the decision kept in the store, where best_program reads
        it. Where the pick is the program the compile check timed, a challenger needs a smaller gain on its
        cases behind torch.compile. The evaluations run at once, bounded by the drain's timeout; one left
        unfinished has no say."""
        programs = self.store.programs(status="evaluated")
        pick = run_winner(programs)
        if pick is None or pick.result is None:
            return
        rivals = challengers(programs, pick, self._final_iteration)
        if not rivals:
            return
        regime = pick.result.regime

        async def against_pick(program: Program) -> Duel:
            async with self._eval_slots:
                evaluated = await self.executor.evaluate(self.task, program.source, against=pick.source)
            return duel(program, evaluated.result, regime)

        jobs = [asyncio.create_task(against_pick(p)) for p in rivals]
        done = await self._within_drain(jobs)
        duels = [job.result() for job in jobs if job in done]  # a KernelbotError or a bug ends the run here
        # The compile check's cases behind, read back from the store: they hold for the program it timed.
        checked = self.store.state(COMPILE_STATE) or {}
        trailing = tuple(checked.get("behind", ())) if checked.get("challenger") == pick.id else ()
        winner = settle(pick, duels, trailing)
        self.store.set_state(**{FINAL_STATE: record(pick, duels, winner)})
        for d in duels:
            figures = ", ".join(f"{case} {s:.3f}x" for case, s in d.speedups.items()) or d.reason
            self.progress.note(f"final comparison, {d.challenger} against {pick.id} side by side: {figures}")
        if winner != pick.id:
            self.progress.note(f"final comparison: {winner} ships instead of {pick.id}")

    async def _wait(self, running: dict[asyncio.Task[None], str]) -> None:
        done, _ = await asyncio.wait(
            running, timeout=self.stop.seconds_left(), return_when=asyncio.FIRST_COMPLETED
        )
        for job in done:
            running.pop(job)
            job.result()  # a bug or a KernelbotError in a job ends the run here

    async def _drain(self, running: dict[asyncio.Task[None], str], reason: str) -> None:
        """At a stop: finish evaluations under way; on a time stop, drop mutations still awaiting answers."""
        if reason.startswith("time"):
            for job, phase in list(running.items()):
                if phase == "mutating":
                    job.cancel()
        if not running:
            return
        done, late = await asyncio.wait(running, timeout=self.config.stop.drain_timeout_s)
        for job in late:  # their children stay pending in the store: a resume evaluates them
            job.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        for job in done:
            if not job.cancelled():
                job.result()

    # --- seeding --------------------------------------------------------------------------------------------

    async def _seed(self) -> None:
        jobs = []
        for i, (path, source) in enumerate(seed_sources(self.task, self.seed_files, self.progress.note)):
            sha = candidate_sha(source, self.task.entry)
            if sha in self.seen:
                continue
            program = self._new_program(source, sha, None, SEED_FILE_OPERATOR, i, -1)
            self.store.add_pending(program)
            self.seen.add(sha)
            self.progress.note(f"seed {path.name}")
            jobs.append(self._evaluate(program))
        n = len(self.archive.islands)
        for k, seeder in enumerate(self.operators.seeders):
            for attempt in range(self.config.mutation.seed_attempts):
                request = MutationRequest(self.task, None, (), self._hardware, (k + attempt) % n, -1)
                jobs.append(self._mutate_and_evaluate(seeder, request, "seed", ""))
        await asyncio.gather(*jobs)

    def _check_seeded(self) -> None:
        """After seeding: end the run when nothing can be evolved; else note each seeder that failed."""
        if self.archive.is_empty():
            raise self.seeding.no_program(self.task.name)
        programs = list(self.archive.all_elites())
        evolvable = any(parent_fits(m, p) for m in self.operators.evolvers for p in programs)
        if self.operators.evolvers and not evolvable and not any(p.correct for p in programs):
            unique = list({p.id: p for p in programs}.values())
            raise self.seeding.no_correct_program(
                self.task.name, unique, [m.name for m in self.operators.evolvers]
            )
        for line in self.seeding.notes():
            self.progress.note(line)

    # --- one iteration --------------------------------------------------------------------------------------

    async def _breed(self, iteration: int, move: Move) -> None:
        choice = move.choice
        request = MutationRequest(
            self.task, choice.parent, choice.inspirations, self._hardware, move.island, iteration
        )
        await self._mutate_and_evaluate(move.operator, request, "evolve", choice.mode)

    async def _mutate_and_evaluate(
        self, operator: Mutator, request: MutationRequest, phase: str, mode: str
    ) -> None:
        started = time.monotonic()
        try:
            outcome = await operator.mutate(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an operator's failure costs one iteration, never the run
            error = f"{type(exc).__name__}: {exc} (at {_where(exc)})"
            outcome = MutationOutcome(operator.name, None, error=error, internal=True)
        if outcome.exhausted and request.parent is not None:
            self.moves.mark_spent(operator, request.parent, request.inspirations, outcome.error)
        child, verdict, error = self._judge_outcome(request, outcome)
        self.tokens = self.tokens + outcome.usage
        self.store.record_mutation(
            MutationRecord(
                phase=phase,
                iteration=request.iteration,
                operator=outcome.operator or operator.name,
                outcome=verdict,
                parent_id=request.parent.id if request.parent else None,
                island=request.island,
                mode=mode,
                inspiration_ids=tuple(p.id for p in request.inspirations),
                prompt=outcome.prompt,
                response=outcome.response,
                error=error,
                usage=outcome.usage,
                duration_s=time.monotonic() - started,
                child=child,
            )
        )
        self.stop.attempted(produced=child is not None)
        if child is None:
            if phase == "seed":  # said once, after seeding (or in the error that ends the run)
                self.seeding.add(outcome.operator or operator.name, error, outcome.internal)
            else:
                self.progress.note(f"{outcome.operator or operator.name}: {verdict} ({error[:120]})")
            return
        await self._evaluate(child)

    def _judge_outcome(
        self, request: MutationRequest, outcome: MutationOutcome
    ) -> tuple[Program | None, str, str]:
        """(child, verdict, error): a usable new child, or why there is none."""
        source = outcome.child_source
        if not source:
            return (
                None,
                ("malformed" if outcome.response else "error"),
                outcome.error or "no candidate produced",
            )
        parent = request.parent
        if parent is not None:
            try:
                check_evolve_block(parent.source, source)
            except CandidateError as exc:
                return None, "rejected", str(exc)
        sha = candidate_sha(source, self.task.entry)
        if sha in self.seen:
            return None, "duplicate", f"same normalised code as an earlier candidate ({sha})"
        self.seen.add(sha)
        child = self._new_program(
            source, sha, parent.id if parent else None, outcome.operator, request.island, request.iteration
        )
        return child, "child", outcome.error

    def _new_program(
        self, source: str, sha: str, parent_id: str | None, op: str, island: int, it: int
    ) -> Program:
        island %= len(self.archive.islands)
        return Program(new_program_id(), source, sha, parent_id, op, island, it, created_at=time.time())

    # --- evaluation and placement ---------------------------------------------------------------------------

    async def _evaluate(self, program: Program) -> None:
        job = asyncio.current_task()
        if job in self._jobs:
            self._jobs[job] = "evaluating"
        async with self._eval_slots:
            evaluated = await self.executor.evaluate(self.task, program.source)
        program = replace(program, result=evaluated.result)
        self._hardware = evaluated.result.hardware
        before = self.archive.best
        rows = self._place(program)
        improved = self.archive.best is not before and self.archive.best is not None
        self.stop.evaluated(improved, evaluated.result)
        island = self.archive.island(program.island)
        generation = None
        if not is_seed(program):
            island.generation += 1
            generation = (island.index, island.generation)
        best = self.archive.best
        self.store.record_evaluation(
            program.id,
            evaluated.result,
            worker=evaluated.worker,
            attempts=evaluated.attempts,
            placements=rows,
            island_generation=generation,
            state={"best_id": best.id if best else None, **self.stop.checkpoint()},
        )
        self._maybe_migrate()
        self.progress.update(self.snapshot(_describe(program)))

    def _place(self, program: Program) -> list[PlacementRow]:
        """Seeds go to every island (each island starts from them); bred children to their home island."""
        seed = is_seed(program)
        targets = range(len(self.archive.islands)) if seed else [program.island]
        rows = []
        for island in targets:
            features = self.archive.features_for(program.source, program.result, island)
            report = self.archive.place(program, island, features)
            kind = "seed" if seed else "bred"
            rows.append(PlacementRow(program.id, island, kind, features, report.cell, report.placed))
        return rows

    def _maybe_migrate(self) -> None:
        a = self.config.archive
        bred = sum(i.generation for i in self.archive.islands)
        epoch = due_epoch(bred, len(self.archive.islands), a.migration_interval)
        if epoch <= self.archive.migration_epoch:
            return
        landed = migrate(self.archive, plan_ring(self.archive, a.migrants))
        self.archive.migration_epoch = epoch
        rows = [
            PlacementRow(
                x.migrant.program.id,
                x.migrant.target,
                "migration",
                x.features,
                x.report.cell,
                x.report.placed,
            )
            for x in landed
        ]
        self.store.record_migration(epoch, rows)
        if landed:
            self.progress.note(f"migration epoch {epoch}: {len(landed)} program(s) moved along the ring")

    # --- reporting ------------------------------------------------------------------------------------------

    def snapshot(self, event: str = "") -> Snapshot:
        best = self.archive.best
        return Snapshot(
            task=self.task.name,
            iterations=self.iterations,
            iteration_limit=self.config.stop.iterations,
            evaluations=self.store.evaluation_count(),
            best_id=best.id if best else None,
            best_score=best.score if best and best.correct else 0.0,
            outcomes=self.store.stage_counts(),
            tokens=self.tokens.prompt_tokens + self.tokens.completion_tokens,
            elapsed_s=self.stop.elapsed(),
            evaluations_this_session=self.stop.evaluations_this_session,
            islands=self.archive.summary(),
            event=event,
            cases=case_bests(best.result) if best and best.correct else (),
        )


def is_seed(program: Program) -> bool:
    """Seeds (files, seeding operators) carry iteration -1; they are placed on every island."""
    return program.iteration < 0


def _describe(program: Program) -> str:
    r = program.result
    if r is None:
        return program.id
    verdict = "passed" if r.passed and not r.hacks else f"failed at {r.stage.value}"
    return f"{program.operator} {program.id}: {verdict}, score {r.score:.3f}"


def _where(exc: BaseException) -> str:
    """file:line of the innermost frame of `exc`'s traceback (where an operator's bug raised)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "?"
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
