"""The acceptance functions of the LLM-free path, fresh from their pip releases and shrunk for CPU: each
reference runs, and where the Inductor seed applies, `kernelbot evolve` with no candidates/, no --seed and no
--llm reaches a correct candidate through the Triton interpreter. Where Inductor leaves an op to ATen the
Inductor seed says so once, naming the op (the fusion seed covers those; its tests live beside it).

The task list and the extraction are bench/fresh_tasks.py's (the GPU acceptance run uses the same code with
bench/specs/); the shrunk specs are tests/evolution/specs/. Releases come from the source cache and are
downloaded on first use: skipped with the reason when the registry is unreachable.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import torch

from bench.fresh_tasks import FRESH_TASKS, extract_fresh, releases
from evaluators.task import load_task
from evolution.mutators.inductor_seed import InductorSeedMutator
from evolution.types import MutationRequest
from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release
from kernelbot import exit_codes
from kernelbot.cli import main

SPECS = Path(__file__).parent / "specs"
SEEDED_BY_INDUCTOR = (
    "sglang_decode_metadata",
    "sglang_rmsnorm_residual",
    "sglang_silu_and_mul",
    "lmdeploy_rmsnorm_residual",
    "lmdeploy_apply_rotary",
)
# A whole `kernelbot evolve` per kind of function the Inductor seed handles (a norm, an activation, rotary):
# SGLang's decode metadata (a minute under the interpreter) and LMDeploy's norm take the same path, and all
# five are searched on the GPU by `bench/run.sh llm-free`.
EVOLVED_HERE = ("sglang_rmsnorm_residual", "sglang_silu_and_mul", "lmdeploy_apply_rotary")
LEFT_TO_ATEN = {
    "sglang_biased_grouped_topk": "aten.topk.default",
    "lmdeploy_softmax_topk": "aten.topk.default",
}

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    for release in releases():
        try:
            fetch_release(release)
        except ExtractionError as exc:
            pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")
    out = tmp_path_factory.mktemp("fresh")
    return {task.name: extract_fresh(task, out, SPECS) for task in FRESH_TASKS}


def test_every_acceptance_function_has_a_shrunk_spec_and_a_serving_one() -> None:
    bench_specs = Path(__file__).resolve().parents[2] / "bench" / "specs"
    names = {t.name for t in FRESH_TASKS}
    assert len(names) == 7 and set(SEEDED_BY_INDUCTOR) | set(LEFT_TO_ATEN) == names
    assert {p.stem for p in SPECS.glob("*.toml")} == names == {p.stem for p in bench_specs.glob("*.toml")}


@pytest.mark.parametrize("name", [t.name for t in FRESH_TASKS])
def test_the_fresh_reference_runs_on_every_case(fresh: dict[str, dict], name: str) -> None:
    record = fresh[name]
    assert record["ok"], record
    task_dir = Path(record["task_dir"])
    assert not (task_dir / "candidates").exists()
    task = load_task(task_dir)
    assert task.source.commit == record["release"]
    reference = task.load_reference()
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 0, "cpu")
        with torch.no_grad():
            result = reference(*args, **kwargs)
        tensors = list(_leaves((result, args, kwargs)))
        assert tensors and not any(t.isnan().any() for t in tensors if t.is_floating_point()), case.name


@pytest.mark.parametrize("name", EVOLVED_HERE)
def test_evolve_with_nothing_but_the_reference_reaches_a_correct_candidate(
    fresh: dict[str, dict], name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_dir = fresh[name]["task_dir"]
    run = tmp_path / "run"
    argv = [
        "evolve",
        task_dir,
        "--out",
        str(run),
        "--iterations",
        "1",
        "--json",
        "--backend",
        "triton-interpret",
        "--no-fusion-seed",  # the Inductor seed's own path (the fusion seed's is tests/evolution/fusion)
    ]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == exit_codes.OK, err[-3000:]
    summary = json.loads(out)
    best = summary["best"]
    assert best is not None and best["operator"] == "seed:inductor" and best["score"] > 0, err[-3000:]
    assert (run / "best.py").is_file()


@pytest.mark.parametrize("name", sorted(LEFT_TO_ATEN))
def test_the_inductor_seed_names_the_op_it_leaves_to_aten(fresh: dict[str, dict], name: str) -> None:
    task = load_task(fresh[name]["task_dir"])
    outcome = asyncio.run(InductorSeedMutator().mutate(MutationRequest(task, None)))
    assert outcome.child_source is None and not outcome.internal, outcome.error
    assert outcome.error.count(LEFT_TO_ATEN[name]) == 1 and "falls back to ATen" in outcome.error


def _leaves(value: object):  # type: ignore[no-untyped-def]
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
