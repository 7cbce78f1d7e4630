"""The example engine's target specs (kernelbot/engines/example/specs/*.toml): each function of
examples/minirepo they name is extracted with its spec and cut to its smallest case, seed:fusion writes a
candidate for it, and the evaluator (the interpreter) finds that candidate correct. Among them the decode
metadata refresh, whose graph returns a host int read from a CPU tensor (`int(seq_lens_cpu[:bs].max()) +
seq_len_delta`) and slices by a bound over it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import tomllib

from bench.shipped_module import gpu_launches, shipped_entry, shipped_module
from evaluators.task import Task, load_task
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.fusion.writer import FusionWriter
from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile

ROOT = Path(__file__).resolve().parents[3]
SPECS = ROOT / "kernelbot" / "engines" / "example" / "specs"
REPO = ROOT / "examples" / "minirepo"
FUNCTIONS = {
    "minisglang.attention.flash_backend.FlashDecodeBackend.init_forward_metadata_replay": (
        "minisglang.attention.flash_backend:FlashDecodeBackend.init_forward_metadata_replay"
    ),
    "minisglang.layers.activation.SiluAndMul.forward_native": (
        "minisglang.layers.activation:SiluAndMul.forward_native"
    ),
    "minisglang.layers.layernorm.RMSNorm.forward_native": (
        "minisglang.layers.layernorm:RMSNorm.forward_native"
    ),
    "minisglang.layers.moe.topk.biased_grouped_topk": "minisglang.layers.moe.topk:biased_grouped_topk",
}


def test_every_target_spec_is_covered() -> None:
    assert sorted(p.stem for p in SPECS.glob("*.toml")) == sorted(FUNCTIONS)


def _smallest_case_only(task_dir: Path) -> None:
    """Keep the task's case of the fewest elements (the smallest sum of its int keys)."""
    toml = task_dir / "task.toml"
    text = toml.read_text()
    cases = tomllib.loads(text)["cases"]
    smallest = min(cases, key=lambda c: sum(v for v in c.values() if type(v) is int))
    head, *blocks = re.split(r"(?m)^\[\[cases\]\]\n", text)
    kept = [b for b, c in zip(blocks, cases, strict=True) if c is smallest]
    assert all(not re.search(r"(?m)^\[", b) for b in blocks), "the cases are the file's last tables"
    toml.write_text(head + "".join(f"[[cases]]\n{b}" for b in kept))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Task, str | None, str]]:
    """Per spec: its task (extracted, cut to its smallest case), and the seed seed:fusion writes for it or
    why none (the four traces run at once)."""
    tasks = {}
    for spec, function in FUNCTIONS.items():
        task_dir = tmp_path_factory.mktemp("example") / "task"
        extract(ExtractOptions(REPO, function, out=task_dir, spec=SPECS / f"{spec}.toml", probe=False))
        _smallest_case_only(task_dir)
        tasks[spec] = load_task(task_dir)
    mutator = FusionSeedMutator(FusionWriter())

    async def all_seeds() -> list[MutationOutcome]:
        return await asyncio.gather(*(mutator.mutate(MutationRequest(t, None)) for t in tasks.values()))

    outcomes = asyncio.run(all_seeds())
    return {
        spec: (task, outcome.child_source, outcome.error or "")
        for (spec, task), outcome in zip(tasks.items(), outcomes, strict=True)
    }


@pytest.mark.parametrize("spec", sorted(FUNCTIONS))
def test_example_target_reaches_a_correct_fusion_seed(spec: str, seeds, judge) -> None:
    task, source, error = seeds[spec]
    assert source, error
    result = judge(task, source)
    assert result.passed, f"{result.stage.value}: {result.reason}"


def test_example_targets_compile_for_the_gpu(seeds, tmp_path: Path) -> None:
    """Every seed's shipped module compiles for sm_90 (bench/cuda_compile_check.py): what the
    interpreter cannot tell; and it launches the seed's own instructions (equal PTX), so the module is as
    fast as the candidate the search timed."""
    width = load_profile("example").formatter.line_length
    jobs = []
    for spec, (task, source, error) in seeds.items():
        assert source, error
        module = tmp_path / f"{spec.replace('.', '_')}.py"
        module.write_text(shipped_module(task.root, source, width))
        raw = tmp_path / f"{spec.replace('.', '_')}_seed.py"
        raw.write_text(source)
        jobs += [(task.root, module, shipped_entry(task.root)), (task.root, raw, task.entry)]
    launches = gpu_launches(jobs)
    for k, spec in enumerate(seeds):
        module_launches, seed_launches = launches[2 * k], launches[2 * k + 1]
        assert module_launches, f"{spec}: the module launched no kernel"
        assert [c["ptx"] for c in module_launches] == [c["ptx"] for c in seed_launches], spec
