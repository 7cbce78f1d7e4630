"""The controller against a fake executor: the store, archive, sampling and stop rules run for real."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import replace

import pytest
from search_fakes import BumpMutator, FakeExecutor, ScriptedMutator, make_tiny_task, program_source

from evaluators.task import load_task
from evolution.config import ArchiveConfig, FeatureDim, LLMEndpoint, MutationConfig, SearchConfig, StopConfig
from evolution.controller import Controller
from evolution.dedup import candidate_sha
from evolution.errors import SearchError
from evolution.operators import OperatorSet
from evolution.redact import Redactor
from evolution.replay import rebuild_archive
from evolution.store import STORE_FILE, PlacementRow, RunStore, new_program_id
from evolution.types import MutationOutcome, MutationRequest, Program, TokenUsage

ARCHIVE = ArchiveConfig(
    islands=2,
    features=(
        FeatureDim("complexity", bins=4, low=10, high=200, scale="log"),
        FeatureDim("diversity", bins=3),
    ),
    migration_interval=2,
)


def config(**stop) -> SearchConfig:
    return SearchConfig(archive=ARCHIVE, stop=StopConfig(**{"iterations": 6, **stop}))


def run(tmp_path, mutators, cfg=None, seeds=None, executor=None, redact=None, resume=False):
    task_dir = tmp_path / "task"
    if not task_dir.exists():
        make_tiny_task(task_dir, [program_source(1.0)] if seeds is None else list(seeds))
    task = load_task(task_dir)
    cfg = cfg or config()
    run_dir = tmp_path / "run"
    if resume:
        store = RunStore.open(run_dir, redact or Redactor())
    else:
        store = RunStore.create(run_dir, task, cfg, redact or Redactor())
    executor = executor or FakeExecutor()
    try:
        controller = Controller(task, cfg, store, executor, OperatorSet.of(mutators, cfg.mutation.weights))
        summary = asyncio.run(controller.run())
    finally:
        store.close()
    return summary, executor


def reader(tmp_path) -> RunStore:
    return RunStore.open(tmp_path / "run", readonly=True)


def test_a_run_seeds_evolves_and_improves(tmp_path) -> None:
    bump = BumpMutator()
    summary, executor = run(tmp_path, [bump])
    assert summary.stop_reason.startswith("iterations")
    assert summary.iterations == 6
    with reader(tmp_path) as store:
        mutations = store.mutations()
        assert len(mutations) == 6 and {m["phase"] for m in mutations} == {"evolve"}
        children = [m for m in mutations if m["outcome"] == "child"]
        assert store.evaluation_count() == 1 + len(children)
        assert summary.best is not None and summary.best.score > 1.0
        # nothing was judged twice, and the executor saw exactly what the store holds
        shas = [e["sha"] for e in store.evaluations()]
        assert len(shas) == len(set(shas)) == len(executor.seen)
        # the seed was placed on every island; children on their home island
        kinds = Counter(p.kind for p in store.placements())
        assert kinds["seed"] == 2 and kinds["bred"] == len(children)
        assert store.state("seeded") is True and store.state("finished").startswith("iterations")
    # parents came from the archive with their stored verdicts (feedback for prompts)
    assert all(r.parent is not None and r.parent.result is not None for r in bump.requests)
    assert {r.island for r in bump.requests} == {0, 1}


def test_outcomes_without_a_usable_child_are_recorded_and_skipped(tmp_path) -> None:
    def malformed(req):
        return MutationOutcome(
            "llm:fake", None, prompt="p", response="I think you should...", error="no diff"
        )

    def outside_block(req):
        return MutationOutcome("llm:fake", "import os\n" + req.parent.source, prompt="p", response="r")

    def duplicate(req):
        return MutationOutcome(
            "llm:fake",
            req.parent.source.replace("def scale", "# a comment\ndef scale"),
            prompt="p",
            response="r",
        )

    def crash(req):
        raise RuntimeError("operator bug")

    def good(req):
        return MutationOutcome("llm:fake", program_source(2.0), prompt="p", response="r")

    scripted = ScriptedMutator("llm:fake", [malformed, outside_block, duplicate, crash, good])
    summary, executor = run(
        tmp_path,
        [scripted],
        cfg=SearchConfig(
            archive=ARCHIVE, stop=StopConfig(iterations=5), mutation=MutationConfig(in_flight=1)
        ),
    )
    with reader(tmp_path) as store:
        outcomes = [(m["outcome"], m["error"][:30]) for m in store.mutations()]
        assert [o for o, _ in outcomes] == ["malformed", "rejected", "duplicate", "error", "child"]
        assert "outside the EVOLVE-BLOCK" in store.mutations()[1]["error"]
        assert "RuntimeError: operator bug" in store.mutations()[3]["error"]
        assert store.mutations()[0]["response"] == "I think you should..."
        assert store.evaluation_count() == 2  # the seed and the one good child
    assert summary.best.score == 2.0
    assert len(executor.seen) == 2


def test_token_budget_stops_the_search(tmp_path) -> None:
    bump = BumpMutator(name="llm:fake", usage=TokenUsage(400, 200))
    cfg = SearchConfig(
        archive=ARCHIVE,
        stop=StopConfig(iterations=100, max_tokens=2000),
        mutation=MutationConfig(in_flight=1),
    )
    summary, _ = run(tmp_path, [bump], cfg=cfg)
    assert summary.stop_reason.startswith("token budget")
    assert summary.iterations == 4  # 4 x 600 tokens passes 2000; one mutation in flight at a time
    with reader(tmp_path) as store:
        usage = store.token_usage()
        assert usage.prompt_tokens == 1600 and usage.completion_tokens == 800


def test_plateau_and_exhaustion_stop_rules(tmp_path) -> None:
    calls = iter(range(1000))

    def worse(req):  # always new, never better
        return MutationOutcome("tune:worse", program_source(0.5, body=f"x * 2 + 0 * {next(calls)}"))

    summary, _ = run(
        tmp_path / "a", [ScriptedMutator("tune:worse", [worse])], cfg=config(iterations=50, plateau=3)
    )
    assert summary.stop_reason.startswith("plateau")

    def same(req):
        return MutationOutcome("tune:same", req.parent.source)

    summary, _ = run(
        tmp_path / "b", [ScriptedMutator("tune:same", [same])], cfg=config(iterations=500, exhausted=5)
    )
    assert summary.stop_reason.startswith("exhausted")
    assert summary.iterations < 20


def test_seeding_operators_and_no_seed_error(tmp_path) -> None:
    seeder = ScriptedMutator(
        "seed:inductor",
        [lambda req: MutationOutcome("seed:inductor", program_source(1.2, body="x + x"))],
        seeds=True,
    )
    summary, _ = run(tmp_path / "a", [seeder, BumpMutator()], seeds=())
    with reader(tmp_path / "a") as store:
        seed_rows = [m for m in store.mutations() if m["phase"] == "seed"]
        assert (
            len(seed_rows) == 1 and seed_rows[0]["outcome"] == "child" and seed_rows[0]["parent_id"] is None
        )
        assert Counter(p.kind for p in store.placements())["seed"] == 2
    assert summary.best.score > 1.2

    nothing = ScriptedMutator(
        "seed:inductor", [lambda req: MutationOutcome("seed:inductor", None, error="no")], True
    )
    with pytest.raises(SearchError, match="no program to mutate"):
        run(tmp_path / "b", [nothing, BumpMutator()], seeds=())


def test_migration_is_logged_and_replay_rebuilds_the_same_archive(tmp_path) -> None:
    cfg = SearchConfig(
        archive=ArchiveConfig(islands=3, features=ARCHIVE.features, migration_interval=1),
        stop=StopConfig(iterations=9),
    )
    run(tmp_path, [BumpMutator(tag_island=True)], cfg=cfg)
    with reader(tmp_path) as store:
        migrations = [p for p in store.placements() if p.kind == "migration"]
        assert migrations, "with interval 1 the ring must have migrated"
        assert store.state("migration_epoch") >= 1
        rebuilt = rebuild_archive(store, cfg.archive)
        rebuilt_again = rebuild_archive(store, cfg.archive)
    for a, b in zip(rebuilt.islands, rebuilt_again.islands, strict=True):
        assert {c: p.id for c, p in a.grid.cells().items()} == {c: p.id for c, p in b.grid.cells().items()}
    # a migrant keeps its id and lands on the next island of the ring
    for row in migrations:
        assert rebuilt.island(row.island).has(row.program_id)


def test_resume_dispatches_pending_children_and_never_reevaluates(tmp_path) -> None:
    run(tmp_path, [BumpMutator()], cfg=config(iterations=3))
    # Simulate a crash right after a child was recorded pending (dispatched, no verdict yet).
    src = program_source(9.0)
    pending = Program(
        new_program_id(), src, candidate_sha(src, "scale"), None, "tune:bump", 1, 3, created_at=time.time()
    )
    with RunStore.open(tmp_path / "run") as store:
        store.add_pending(pending)
        judged_before = {e["sha"] for e in store.evaluations()}
        count_before = store.evaluation_count()
    summary, executor = run(tmp_path, [BumpMutator()], cfg=config(iterations=6), resume=True)
    seen = [candidate_sha(s, "scale") for s in executor.seen]
    assert seen[0] == pending.sha  # the pending child first
    assert not judged_before & set(seen)  # nothing judged before was judged again
    with reader(tmp_path) as store:
        shas = [e["sha"] for e in store.evaluations()]
        assert len(shas) == len(set(shas))
        assert store.evaluation_count() == count_before + len(seen)
        assert store.mutation_count() == 6  # the iteration limit counts the whole run
    assert summary.best.score >= 9.0


def test_secrets_never_reach_the_store(tmp_path, monkeypatch) -> None:
    key = "sk-live-abcdefghijklmnop0123"
    monkeypatch.setenv("TEST_LLM_KEY", key)

    def leaky(req):
        return MutationOutcome(
            "llm:fake",
            None,
            prompt=f"Authorization: Bearer {key}",
            response=f"echo {key}",
            error=f"401 for key {key}",
        )

    cfg = SearchConfig(
        archive=ARCHIVE,
        stop=StopConfig(iterations=2),
        mutation=MutationConfig(llm=(LLMEndpoint("m", "http://127.0.0.1:1/v1", "TEST_LLM_KEY"),)),
    )
    run(tmp_path, [ScriptedMutator("llm:fake", [leaky])], cfg=cfg, redact=Redactor.from_env(cfg))
    for path in (tmp_path / "run").iterdir():
        assert key.encode() not in path.read_bytes(), path
    with reader(tmp_path) as store:
        assert "Bearer ***" in store.mutations()[0]["prompt"]


def test_evaluations_run_concurrently_up_to_capacity(tmp_path) -> None:
    class Counting(FakeExecutor):
        def __init__(self) -> None:
            super().__init__(capacity=3, delay=0.05)
            self.now = self.peak = 0

        async def evaluate(self, task, source):
            self.now += 1
            self.peak = max(self.peak, self.now)
            try:
                return await super().evaluate(task, source)
            finally:
                self.now -= 1

    calls = iter(range(1000))

    def unique(req):
        return MutationOutcome("tune:unique", program_source(1.5, body=f"x * 2 + 0 * {next(calls)}"))

    executor = Counting()
    run(tmp_path, [ScriptedMutator("tune:unique", [unique])], cfg=config(iterations=12), executor=executor)
    assert executor.peak == 3


def test_store_file_exists_and_placements_reference_islands(tmp_path) -> None:
    run(tmp_path, [BumpMutator()])
    assert (tmp_path / "run" / STORE_FILE).is_file()
    with reader(tmp_path) as store:
        assert all(isinstance(p, PlacementRow) and 0 <= p.island < 2 for p in store.placements())
        gens = store.island_generations()
        bred = sum(1 for p in store.placements() if p.kind == "bred")
        assert sum(gens.values()) == bred


def test_time_limit_leaves_unjudged_children_pending_for_the_resume(tmp_path) -> None:
    calls = iter(range(1000))

    def unique(req):
        return MutationOutcome("tune:unique", program_source(1.5, body=f"x * 2 + 0 * {next(calls)}"))

    mutator = ScriptedMutator("tune:unique", [unique])
    cfg = config(iterations=100, time_limit_s=1.2, drain_timeout_s=0.05)
    summary, _ = run(tmp_path, [mutator], cfg=cfg, executor=FakeExecutor(capacity=2, delay=0.5))
    assert summary.stop_reason.startswith("time limit")
    with reader(tmp_path) as store:
        pending = {p.sha for p in store.programs(status="pending")}
        judged = {e["sha"] for e in store.evaluations()}
    assert pending, "the evaluations cut off at the deadline stay pending"
    summary, executor = run(tmp_path, [mutator], cfg=config(iterations=summary.iterations), resume=True)
    again = [candidate_sha(s, "scale") for s in executor.seen]
    assert set(again) == pending and not judged & set(again)
    with reader(tmp_path) as store:
        assert store.programs(status="pending") == []


def test_a_dead_executor_ends_the_run_and_keeps_what_was_done(tmp_path) -> None:
    class Dying(FakeExecutor):
        async def evaluate(self, task, source):
            if len(self.seen) >= 3:
                raise SearchError("every worker died")
            return await super().evaluate(task, source)

    calls = iter(range(1000))

    def unique(req):
        return MutationOutcome("tune:unique", program_source(1.5, body=f"x * 2 + 0 * {next(calls)}"))

    with pytest.raises(SearchError, match="every worker died"):
        run(tmp_path, [ScriptedMutator("tune:unique", [unique])], cfg=config(iterations=20), executor=Dying())
    with reader(tmp_path) as store:
        assert store.evaluation_count() == 3
        assert store.programs(status="pending")  # children that never got a verdict wait for the resume


class CaseExecutor(FakeExecutor):
    """Judges `N8 = a` / `N64 = b` markers as the speedups of the tiny task's two cases (8 and 64 floats).
    `NOISE = f` scales the reference's time in the search's evaluation of a program (the GPU busier or
    idler then), never the program's own times; timed against a rival, a case's speedup is the ratio of the
    two programs' markers; timed against torch.compile, compile's speedup over eager is `compiled`'s."""

    def __init__(self, compiled: dict[str, float] | None = None, backend: str = "fake") -> None:
        super().__init__()
        self.compiled = compiled or {"n8": 1.0, "n64": 1.0}
        self.backend = backend

    @property
    def backend_name(self) -> str:
        return self.backend

    async def evaluate(self, task, source: str, *, against: str = "", baseline: str = ""):
        import math
        import re

        from evaluators.result import CaseResult, RegimeTiming, TimingStats
        from evolution.executors import Evaluated

        def marker(text: str, name: str) -> float:
            found = re.search(rf"^{name} = ([0-9.]+)$", text, re.M)
            return float(found.group(1)) if found else 1.0

        base = (await super().evaluate(task, source, against=against, baseline=baseline)).result
        cases = []
        for name, n in (("n8", 8), ("n64", 64)):
            s = marker(source, f"N{n}")
            reference_us = 10.0 / marker(against, f"N{n}") if against else 10.0 * marker(source, "NOISE")
            if baseline == "compile":
                reference_us = 10.0 / self.compiled[name]
            speedup = reference_us / (10.0 / s)
            timing = RegimeTiming(
                TimingStats(reference_us, 0.01, 20),
                TimingStats(10.0 / s, 0.01, 20),
                speedup,
                speedup * 0.99,
                speedup * 1.01,
            )
            cases.append(CaseResult(name, {"n": n}, True, timings={"wall": timing, "graph": timing}))
        score = math.exp(sum(math.log(c.timings["wall"].speedup) for c in cases) / len(cases))
        result = replace(base, cases=tuple(cases), score=score, speedup=score)
        return Evaluated(result, "fake:0", 1)


def case_source(n8: float, n64: float, body: str, noise: float = 1.0) -> str:
    noisy = f"NOISE = {noise}\n" if noise != 1.0 else ""
    return (
        "import torch\n\n# EVOLVE-BLOCK-START\n"
        f"N8 = {n8}\nN64 = {n64}\n{noisy}\n\ndef scale(x):\n    return {body}\n"
        "# EVOLVE-BLOCK-END\n"
    )


def test_the_best_meets_the_case_leaders_of_every_island_before_the_run_ends(tmp_path) -> None:
    """A run that stops with its best slower than another program on one case: one bucket crossover more,
    parent the best, inspirations the fastest program of each case it does not lead (mode "final")."""
    from evolution.mutators.bucket_crossover import OPERATOR, BucketCrossoverMutator

    fast_small = case_source(2.0, 1.0, "x * 2")
    fast_large = case_source(1.0, 1.5, "x + x")
    _, executor = run(
        tmp_path,
        [BucketCrossoverMutator()],
        cfg=config(iterations=0),
        seeds=[fast_small, fast_large],
        executor=CaseExecutor(),
    )
    with reader(tmp_path) as store:
        final = [m for m in store.mutations() if m["mode"] == "final"]
        assert len(final) == 1 and final[0]["operator"] == OPERATOR and final[0]["outcome"] == "child"
        programs = {p.id: p for p in store.programs()}
        assert programs[final[0]["parent_id"]].source == fast_small
        inspirations = json.loads(final[0]["inspiration_ids"])
        assert [programs[i].source for i in inspirations] == [fast_large]
    child = executor.seen[-1]  # judged: the large case routed to the other program's code
    assert "def _scale_large(" in child and "CROSSOVER_BYTES" in child


def test_the_final_crossover_is_told_where_the_best_trails_torch_compile(tmp_path) -> None:
    """Before the final crossover the best is timed against torch.compile in one worker: it trails compile
    on the small case (2.0x over eager where compile is 2.5x), and the crossover's request names that case;
    the figures stay in the store. Under Triton's interpreter nothing is timed against compile."""
    from evolution.compile_check import COMPILE_STATE
    from evolution.mutators.bucket_crossover import BucketCrossoverMutator
    from evolution.summary import run_summary

    requests: list[MutationRequest] = []

    class Recording(BucketCrossoverMutator):  # the final crossover runs a copy of it (chained())
        def mutate_source(self, request: MutationRequest) -> MutationOutcome:
            requests.append(request)
            return super().mutate_source(request)

    fast_small = case_source(2.0, 1.0, "x * 2")
    fast_large = case_source(1.0, 1.5, "x + x")
    for backend, behind in (("fake", ("n8",)), ("triton-interpret", ())):
        requests.clear()
        root = tmp_path / backend
        executor = CaseExecutor(compiled={"n8": 2.5, "n64": 0.9}, backend=backend)
        run(root, [Recording()], cfg=config(iterations=0), seeds=[fast_small, fast_large], executor=executor)
        [final] = requests  # no iteration before the final crossover
        assert final.parent is not None and final.parent.source == fast_small
        assert final.behind_compile == behind
        with reader(root) as store:
            kept = store.state(COMPILE_STATE)
            assert run_summary(store, root / "run").to_dict()["compile_check"] == kept  # summary.json too
        if backend == "fake":
            assert executor.baselines == [(fast_small, "compile")]
            assert kept["challenger"] == final.parent.id and kept["behind"] == ["n8"]
            assert kept["speedups"] == {"n8": pytest.approx(0.8), "n64": pytest.approx(1.0 / 0.9)}
        else:
            assert executor.baselines == [] and kept is None


def test_the_pick_is_timed_against_its_challengers_and_a_faster_one_ships(tmp_path) -> None:
    """The search's numbers put `leader` first: `child` is as fast on the small case and 10 % faster on the
    large one, but its evaluation timed the reference 10 % faster. Side by side with the leader, in one
    worker, the child's gain shows and it ships; a copy of the leader as noisy is no challenger."""
    from evolution.final_comparison import FINAL_STATE
    from evolution.summary import best_program, run_summary

    leader = case_source(2.0, 1.0, "x * 2")
    child = case_source(2.0, 1.1, "x + x", noise=0.9)
    copy = case_source(2.0, 1.0, "x * 2.0", noise=0.95)
    summary, executor = run(
        tmp_path, [], cfg=config(iterations=0), seeds=[leader, child, copy], executor=CaseExecutor()
    )
    assert summary.best is not None and summary.best.source == leader  # the fittest by the search's numbers
    assert executor.duels == [(child, leader)]
    with reader(tmp_path) as store:
        kept = store.state(FINAL_STATE)
        best = best_program(store)
        assert best is not None and best.source == child
        programs = {p.source: p.id for p in store.programs()}
        written = run_summary(store, tmp_path / "run")  # summary.json says what decided the winner
    assert written.best is not None and written.best.program_id == programs[child]
    assert written.to_dict()["final_comparison"] == kept
    assert kept["pick"] == programs[leader] and kept["winner"] == programs[child]
    [figures] = kept["duels"]
    assert figures["speedups"] == {"n8": 1.0, "n64": pytest.approx(1.1)}


def test_a_smaller_gain_ships_where_the_pick_trails_torch_compile(tmp_path) -> None:
    """`child` is 1.5 % faster than `leader` on the small case side by side: below the gain a challenger
    needs (AHEAD), above the one it needs on a case the pick trails torch.compile on (LIFT). Where compile is
    2.5x over eager there, the compile check names the case and the child ships; where compile is slower
    than the leader everywhere, the leader stays."""
    from evolution.final_comparison import AHEAD, FINAL_STATE, LIFT
    from evolution.mutators.bucket_crossover import BucketCrossoverMutator

    assert 1.0 + LIFT < 1.015 < 1.0 + AHEAD
    leader = case_source(2.0, 1.0, "x * 2")
    child = case_source(2.03, 1.0, "x + x", noise=0.97)  # the search timed its reference 3 % faster
    fast_large = case_source(1.0, 1.5, "x * 2.0")  # leads the large case: the final crossover runs
    for compiled, ships in (({"n8": 2.5, "n64": 0.9}, child), ({"n8": 1.5, "n64": 0.9}, leader)):
        root = tmp_path / str(compiled["n8"])
        executor = CaseExecutor(compiled=compiled)
        run(
            root,
            [BucketCrossoverMutator()],
            cfg=config(iterations=0),
            seeds=[leader, child, fast_large],
            executor=executor,
        )
        assert executor.baselines == [(leader, "compile")]
        assert (child, leader) in executor.duels
        with reader(root) as store:
            programs = {p.id: p.source for p in store.programs()}
            kept = store.state(FINAL_STATE)
        assert programs[kept["pick"]] == leader and programs[kept["winner"]] == ships


class _AskedFirst(BumpMutator):
    """Bumps the seed file's program once, then says it is spent; told the run's task as the run starts."""

    asked_first = True
    exhaustion_ignores_inspirations = True

    def __init__(self) -> None:
        super().__init__(name="tune:first")
        self.started: list[str] = []

    def start(self, task) -> None:
        self.started.append(task.name)

    def accepts_program(self, program) -> bool:
        return program.operator == "seed:file"

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        outcome = await super().mutate(request)
        return replace(outcome, exhausted=True)


def test_an_operator_asked_first_breeds_before_the_weighted_draw_and_is_told_the_task(tmp_path) -> None:
    first, bump = _AskedFirst(), BumpMutator()
    run(tmp_path, [bump, first], cfg=config(iterations=4))
    assert first.started == ["tiny_scale"]
    with reader(tmp_path) as store:
        operators = [m["operator"] for m in store.mutations() if m["phase"] == "evolve"]
    # It is asked first, by every move started before its answer came back (each may bring another
    # child), all on the seed; once it said it is spent, the draw by weight has bump alone.
    asked = len(first.requests)
    assert 1 <= asked <= FakeExecutor().capacity + 1
    assert operators[:asked] == ["tune:first"] * asked and operators[asked:] == ["tune:bump"] * (4 - asked)
    assert all(r.parent is not None and r.parent.operator == "seed:file" for r in first.requests)
