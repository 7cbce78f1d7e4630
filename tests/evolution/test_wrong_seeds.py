"""A search whose every seed is judged wrong does not crash. A fusion seed that compiled and ran but computed
wrong results (tied experts in another order, before the task declared its ties) is a parent fusion
variants start from, and a variant that comes out right wins; a seed that never ran is handed to no
variant. When nothing is left to try and nothing is correct the run ends with one SearchError saying that no
kernel passed the evaluator and why the candidates failed: `kernelbot evolve` exits 1, never 3. The
controller, store and archive run for real against the fake executor."""

from __future__ import annotations

import re

import pytest
from search_fakes import FakeExecutor, ScriptedMutator, fake_result, make_tiny_task, program_source
from test_controller import reader, run
from test_search_exhaustion import config

from evaluators.result import HackFinding
from evolution.dedup import candidate_sha
from evolution.errors import SearchError
from evolution.moves import parent_fits
from evolution.mutators.bucket_crossover import BucketCrossoverMutator
from evolution.mutators.fusion_variant import FusionVariantMutator
from evolution.mutators.launch_tuning import LaunchTuningMutator
from evolution.operators import OperatorSet
from evolution.types import MutationOutcome, MutationRequest, Program
from kernelbot import exit_codes
from kernelbot.cli import main

MARK = "# fusion-knobs: {}"  # the fusion generator's line (default knobs): variants take such parents


def fusion_seed(fail: str) -> ScriptedMutator:
    """seed:fusion writing one kernel the fake evaluator fails at stage `fail`."""
    source = program_source(0, fail=fail).replace("def scale", f"{MARK}\ndef scale")
    return ScriptedMutator("seed:fusion", [lambda req: MutationOutcome("seed:fusion", source)], seeds=True)


class Variants(FusionVariantMutator):
    """The real fusion:variant as the controller sees it (which parents it takes, `accepts` reading the
    knobs line), its answers scripted: `wrong` children that still fail at correctness, then (when
    `repair`) one that is right, then nothing new for the parent."""

    def __init__(self, wrong: int, repair: bool) -> None:
        super().__init__()
        self.wrong, self.repair = wrong, repair
        self.handed: list[str] = []
        self.made = 0

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        assert request.parent is not None
        self.handed.append(request.parent.source)
        if self.made < self.wrong + self.repair:
            self.made += 1
            child = re.sub(r"^VARIANT = \d+\n", "", request.parent.source, flags=re.MULTILINE)
            child = child.replace(MARK, f"{MARK}\nVARIANT = {self.made}")
            if self.made > self.wrong:
                child = child.replace('FAIL = "correctness"', "SCORE = 1.0")
            return MutationOutcome(self.name, child)
        return MutationOutcome(self.name, None, error="every one-knob variant was proposed", exhausted=True)


def test_a_wrong_fusion_seed_is_evolved_and_a_right_variant_wins(tmp_path) -> None:
    variants = Variants(wrong=2, repair=True)
    operators = [fusion_seed("correctness"), variants, LaunchTuningMutator()]
    summary, _ = run(tmp_path, operators, cfg=config(iterations=20), seeds=())
    assert summary.best is not None and summary.best.operator == "fusion:variant" and summary.best.correct
    assert variants.handed and all(MARK in s for s in variants.handed)
    with reader(tmp_path) as store:
        assert store.state("seeded") is True


def test_a_seed_that_never_ran_is_handed_to_no_variant(tmp_path) -> None:
    variants = Variants(wrong=0, repair=True)
    with pytest.raises(SearchError, match=r"^no kernel passed the evaluator .*every seed candidate failed"):
        run(tmp_path, [fusion_seed("compile"), variants, LaunchTuningMutator()], cfg=config(), seeds=())
    assert variants.handed == []


def test_variants_that_stay_wrong_end_the_run_with_no_kernel_passed(tmp_path) -> None:
    variants = Variants(wrong=3, repair=False)
    with pytest.raises(SearchError) as caught:
        run(tmp_path, [fusion_seed("correctness"), variants, LaunchTuningMutator()], cfg=config(), seeds=())
    message = str(caught.value)
    assert message.startswith("no kernel passed the evaluator for task 'tiny_scale'")
    assert "most common failure: correctness: fake failure at correctness" in message
    assert "move space exhausted" in message and "tune:launch: no correct program to start from" in message
    assert variants.made == 3
    with reader(tmp_path) as store:  # the run is on record as finished, every wrong kernel kept
        assert store.state("finished", "").startswith("move space exhausted")
        assert store.evaluation_count() == 4


def test_a_budget_stop_is_no_verdict(tmp_path) -> None:
    """Stopped by its iteration limit, the run may still find a kernel on --resume: no error."""
    variants = Variants(wrong=10, repair=False)
    summary, _ = run(tmp_path, [fusion_seed("correctness"), variants], cfg=config(iterations=2), seeds=())
    assert summary.stop_reason.startswith("iterations") and not (summary.best and summary.best.correct)


def test_evolve_exits_1_with_one_line_when_no_kernel_passed(tmp_path, monkeypatch, capsys) -> None:
    def operators(config, device):
        return OperatorSet.of([fusion_seed("correctness"), Variants(2, False), LaunchTuningMutator()], {})

    monkeypatch.setattr("evolution.search.make_executor", lambda config, eval_config: FakeExecutor())
    monkeypatch.setattr("evolution.search.build_operators", operators)
    monkeypatch.setenv("KERNELBOT_HOME", str(tmp_path / "home"))
    task = make_tiny_task(tmp_path / "task")
    (task / "candidates").mkdir(exist_ok=True)  # no seed of the user's: only the generated one
    argv = ["evolve", str(task), "--out", str(tmp_path / "run"), "--backend", "triton-interpret"]
    code = main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == exit_codes.USER_ERROR, err[-2000:]
    assert len(errors) == 1 and errors[0].startswith("error: no kernel passed the evaluator"), err[-2000:]
    assert "kernelbot bug" not in err and not (tmp_path / "home" / "crashes").exists()


def _program(source: str, hacked: bool = False) -> Program:
    result = fake_result("t", "scale", source)
    if hacked:
        result = result.with_updates(hacks=(HackFinding("input_mutation", "evidence"),))
    return Program("p", source, candidate_sha(source, "scale"), None, "seed:fusion", 0, 0, result=result)


def test_which_parents_each_real_operator_is_handed() -> None:
    fused = program_source(1.0).replace("def scale", f"{MARK}\ndef scale")
    correct = _program(fused)
    wrong = _program(fused.replace("SCORE = 1.0", 'FAIL = "correctness"'))
    broken = _program(fused.replace("SCORE = 1.0", 'FAIL = "compile"'))
    flagged = _program(fused, hacked=True)
    variant = FusionVariantMutator()
    assert variant.accepts(fused), "the header must parse for this test to mean anything"
    assert [parent_fits(variant, p) for p in (correct, wrong, broken, flagged)] == [True, True, False, False]
    for keeps_results in (LaunchTuningMutator(), BucketCrossoverMutator()):
        assert [parent_fits(keeps_results, p) for p in (correct, wrong, broken)] == [True, False, False]
