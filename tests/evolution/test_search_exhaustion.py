"""A search whose operators run out of moves stops and says so (never spins), and a run that has nothing to
evolve from ends with the right kind of error: the user's (exit 1; wrong seeds among them) or kernelbot's
own (exit 3, a crash report: an operator raised). The controller, store, archive and the real launch tuner
run against the fake executor."""

from __future__ import annotations

import re

import pytest
from search_fakes import BumpMutator, ScriptedMutator, make_tiny_task, program_source
from test_controller import ARCHIVE, reader, run

from evolution.config import MutationConfig, SearchConfig, StopConfig
from evolution.errors import SearchError
from evolution.mutators.launch_tuning import LaunchTuningMutator
from evolution.seeding import SeedingCrash
from evolution.types import MutationOutcome, MutationRequest
from kernelbot import exit_codes
from kernelbot.cli import main

# Two launch knobs: 5 warp counts x 5 stage counts = 25 configurations in all.
TUNABLE = (
    "import torch\n\n# EVOLVE-BLOCK-START\nSCORE = 1.0\n"
    "def scale(x):\n"
    "    _kernel[(1,)](x, num_warps=4, num_stages=2)\n"
    "    return x * 2\n"
    "# EVOLVE-BLOCK-END\n"
)
_SCORE = re.compile(r"^SCORE = ([0-9.]+)$", re.MULTILINE)


def config(iterations: int = 400, **mutation) -> SearchConfig:
    return SearchConfig(
        archive=ARCHIVE,
        stop=StopConfig(iterations=iterations, exhausted=10_000),  # the streak rule must not be what stops
        mutation=MutationConfig(**mutation),
    )


class CappedBump:
    """Proposes one child per parent (its score + 0.25, up to 2.0) and then has nothing new for it
    (exhausted). Like bucket crossover, its answer may depend on the inspirations: unless it says otherwise,
    the mark holds for the same inspirations only."""

    def __init__(self, name: str = "cross:capped", ignores_inspirations: bool = False) -> None:
        self.name = name
        self.exhaustion_ignores_inspirations = ignores_inspirations
        self.proposed: set[str] = set()  # parents whose child was proposed
        self.spent: set[tuple[str, frozenset[str] | None]] = set()
        self.asked_again = 0  # requests for a pair already answered "exhausted"

    def can_seed(self) -> bool:
        return False

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        parent = request.parent
        assert parent is not None
        shown = (
            None if self.exhaustion_ignores_inspirations else frozenset(p.id for p in request.inspirations)
        )
        if (parent.id, shown) in self.spent:
            self.asked_again += 1
        marker = _SCORE.search(parent.source).group(0)
        score = float(marker.removeprefix("SCORE = "))
        if score >= 2.0 or parent.id in self.proposed:
            self.spent.add((parent.id, shown))
            why = "the parent is at the cap" if score >= 2.0 else "its child was already proposed"
            return MutationOutcome(self.name, None, error=why, exhausted=True)
        self.proposed.add(parent.id)
        return MutationOutcome(self.name, parent.source.replace(marker, f"SCORE = {score + 0.25}"))


def test_launch_tuning_walks_the_whole_space_then_stops_and_says_why(tmp_path) -> None:
    tuner = LaunchTuningMutator(seed=0)
    summary, executor = run(tmp_path, [tuner], cfg=config(), seeds=[TUNABLE])
    assert summary.stop_reason.startswith("move space exhausted")
    assert "tune:launch: every nearby launch configuration of this parent was already proposed" in (
        summary.stop_reason
    )
    assert len(executor.seen) == len(set(executor.seen)) <= 25
    with reader(tmp_path) as store:
        outcomes = [m["outcome"] for m in store.mutations()]
        evaluations = store.evaluation_count()
    # No spinning: an attempt without a child happens at most once per parent (its last, exhausted answer).
    assert outcomes.count("error") <= evaluations
    assert summary.iterations < 60


def test_an_exhausted_pair_is_not_asked_again_until_its_inspirations_change(tmp_path) -> None:
    capped = CappedBump()
    one_at_a_time = config(in_flight=1)
    summary, _ = run(tmp_path, [capped], cfg=one_at_a_time, seeds=[program_source(1.0)])
    assert summary.stop_reason.startswith("move space exhausted: no operator has anything new")
    assert capped.asked_again == 0 and capped.spent
    assert summary.best is not None and summary.best.score == 2.0

    lasting = CappedBump("tune:capped", ignores_inspirations=True)
    summary, _ = run(tmp_path / "lasting", [lasting], cfg=one_at_a_time, seeds=[program_source(1.0)])
    assert summary.stop_reason.startswith("move space exhausted") and lasting.asked_again == 0
    assert "(tune:capped: " in summary.stop_reason  # the operator's own words
    assert len({parent for parent, _ in lasting.spent}) == len(lasting.spent)  # one mark per parent

    # Several mutations in flight: a pair chosen again before its first answer came back is the only
    # repeat, so the run still stops, in a few attempts per pair.
    concurrent = CappedBump()
    summary, _ = run(
        tmp_path / "concurrent", [concurrent], cfg=config(in_flight=3), seeds=[program_source(1.0)]
    )
    assert summary.stop_reason.startswith("move space exhausted")
    assert concurrent.asked_again <= 2 * len(concurrent.spent) and summary.iterations < 60


def test_an_operator_with_moves_left_keeps_the_run_going(tmp_path) -> None:
    capped = CappedBump()
    bump = BumpMutator("llm:bump", step=0.01)  # never exhausted (an LLM always has another answer)
    summary, _ = run(tmp_path, [capped, bump], cfg=config(iterations=40), seeds=[program_source(1.0)])
    assert summary.stop_reason.startswith("iterations") and summary.iterations == 40
    assert capped.asked_again == 0


class Picky(CappedBump):
    """Works only on parents whose source carries its mark (fusion variants need the generator's header)."""

    mark = "# picky-ok"

    def __init__(self) -> None:
        super().__init__("fusion:picky", ignores_inspirations=True)
        self.handed: list[str] = []

    def accepts(self, source: str) -> bool:
        return self.mark in source

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        assert request.parent is not None
        self.handed.append(request.parent.source)
        return await super().mutate(request)


def test_an_operator_is_never_handed_a_parent_it_does_not_accept(tmp_path) -> None:
    picky = Picky()
    bump = BumpMutator("llm:bump", step=0.01)
    summary, _ = run(tmp_path, [picky, bump], cfg=config(iterations=12), seeds=[program_source(1.0)])
    assert summary.iterations == 12 and picky.handed == []  # every iteration went to an operator that works

    summary, _ = run(tmp_path / "alone", [picky], cfg=config(), seeds=[program_source(1.0)])
    assert picky.handed == []
    assert "fusion:picky: no program it can start from" in summary.stop_reason

    marked = Picky()
    summary, _ = run(
        tmp_path / "marked", [marked], cfg=config(), seeds=[program_source(1.0) + Picky.mark + "\n"]
    )
    assert marked.handed and all(Picky.mark in source for source in marked.handed)


def test_operators_that_need_a_correct_parent_stop_when_there_is_none(tmp_path) -> None:
    seeder = ScriptedMutator(
        "seed:inductor",
        [lambda req: MutationOutcome("seed:inductor", program_source(0, fail="correctness"))],
        True,
    )
    # A generated seed the evaluator finds wrong, and nothing here that could start from it: no kernel
    # passed (the user's to act on, not a crash: the task's contract may be what the kernel misses).
    with pytest.raises(SearchError, match=r"^no kernel passed the evaluator .*every seed candidate failed"):
        run(tmp_path / "a", [seeder, LaunchTuningMutator()], cfg=config(), seeds=())
    # A wrong candidate of the user's own is the user's to fix.
    with pytest.raises(SearchError, match=r"every seed candidate failed .*fix the task or the candidates"):
        run(
            tmp_path / "b",
            [LaunchTuningMutator()],
            cfg=config(),
            seeds=[program_source(0, fail="correctness")],
        )
    # An operator that can repair wrong parents (an LLM) keeps the run going.
    summary, _ = run(
        tmp_path / "c",
        [BumpMutator("llm:x")],
        cfg=config(iterations=3),
        seeds=[program_source(0, fail="compile")],
    )
    assert summary.stop_reason.startswith("iterations")


def test_seeding_failures_are_said_once_and_sorted_into_the_users_and_ours(tmp_path) -> None:
    def unsupported(req):
        return MutationOutcome(
            "seed:inductor", None, error="Inductor leaves aten.topk.default to ATen (no Triton kernel for it)"
        )

    twice = ScriptedMutator("seed:inductor", [unsupported], seeds=True)
    with pytest.raises(SearchError) as caught:
        run(tmp_path / "a", [twice, BumpMutator()], cfg=config(seed_attempts=2), seeds=())
    message = str(caught.value)
    assert message.count("aten.topk.default") == 1 and "add candidates/" in message

    def crashed(req):
        raise KeyError("a bug in a writer")

    ours = ScriptedMutator("seed:inductor", [crashed], seeds=True)
    with pytest.raises(SeedingCrash, match="seeding failed inside kernelbot: seed:inductor: KeyError"):
        run(tmp_path / "b", [ours, BumpMutator()], cfg=config(), seeds=())

    internal = ScriptedMutator(
        "seed:inductor",
        [lambda req: MutationOutcome("seed:inductor", None, error="conversion bug", internal=True)],
        seeds=True,
    )
    with pytest.raises(SeedingCrash, match="conversion bug"):
        run(tmp_path / "c", [internal, BumpMutator()], cfg=config(), seeds=())

    notes: list[str] = []
    failing = ScriptedMutator("seed:inductor", [unsupported], seeds=True)
    summary, _ = run_noting(tmp_path / "d", [failing, BumpMutator()], notes)
    assert summary.best is not None  # the task's own candidate seeded the run
    assert sum("aten.topk.default" in n for n in notes) == 1


def run_noting(tmp_path, mutators, notes):
    import asyncio

    from search_fakes import FakeExecutor

    from evaluators.task import load_task
    from evolution.controller import Controller
    from evolution.operators import OperatorSet
    from evolution.progress import NullProgress
    from evolution.redact import Redactor
    from evolution.store import RunStore

    class Notes(NullProgress):
        def note(self, text: str) -> None:
            notes.append(text)

    task = load_task(make_tiny_task(tmp_path / "task", [program_source(1.0)]))
    cfg = config(iterations=2, seed_attempts=2)
    store = RunStore.create(tmp_path / "run", task, cfg, Redactor())
    try:
        controller = Controller(
            task, cfg, store, FakeExecutor(), OperatorSet.of(mutators, cfg.mutation.weights), progress=Notes()
        )
        return asyncio.run(controller.run()), None
    finally:
        store.close()


def test_kernelbots_own_seeding_failure_exits_3_with_a_crash_report(tmp_path, monkeypatch, capsys) -> None:
    from search_fakes import FakeExecutor

    from evolution.operators import OperatorSet

    def crashed(req):
        raise IndexError("list index out of range")

    def operators(config, device):
        return OperatorSet.of([ScriptedMutator("seed:inductor", [crashed], True), BumpMutator()], {})

    monkeypatch.setattr("evolution.search.make_executor", lambda config, eval_config: FakeExecutor())
    monkeypatch.setattr("evolution.search.build_operators", operators)
    monkeypatch.setenv("KERNELBOT_HOME", str(tmp_path / "home"))
    task = make_tiny_task(tmp_path / "task")
    code = main(["evolve", str(task), "--out", str(tmp_path / "run"), "--backend", "triton-interpret"])
    err = capsys.readouterr().err
    assert code == exit_codes.CRASH and "kernelbot bug" in err
    (report,) = (tmp_path / "home" / "crashes").glob("crash-*.log")
    assert "IndexError: list index out of range" in report.read_text()

    def unsupported(req):
        return MutationOutcome("seed:inductor", None, error="Inductor leaves aten.sort.default to ATen")

    def user_operators(config, device):
        return OperatorSet.of([ScriptedMutator("seed:inductor", [unsupported], True), BumpMutator()], {})

    monkeypatch.setattr("evolution.search.build_operators", user_operators)
    code = main(["evolve", str(task), "--out", str(tmp_path / "run2"), "--backend", "triton-interpret"])
    err = capsys.readouterr().err
    assert code == exit_codes.USER_ERROR and "aten.sort.default" in err and "--seed FILE" in err
