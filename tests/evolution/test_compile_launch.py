"""tune:compile: the Inductor seed launched as torch.compile launched each shape.

The reports in data/ were recorded on an H200 (torch 2.11, triton 3.6) by
`python -m evolution.writers.inductor.compile_launches` for SGLang's RMSNorm and SiLU-and-mul, extracted
from sglang==0.5.23 at the serving sizes of bench/specs/; the captures beside them are the Inductor seed's
own, from the same machine. The seeds are rendered from those captures here, as the search renders them.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from search_fakes import timed_program

from evaluators.task import load_task
from evolution.config import SearchConfig
from evolution.islands import Archive
from evolution.moves import MoveChooser
from evolution.mutators.compile_launch import (
    OPERATOR,
    CompileLaunchMutator,
    launch_changes,
    seed_launches,
)
from evolution.mutators.inductor_seed import OPERATOR as INDUCTOR_SEED
from evolution.mutators.tuning_sites import ParsedCandidate
from evolution.operators import build_operators
from evolution.sampling import ParentSampler
from evolution.types import MutationRequest, Program
from evolution.writers.inductor.compile_launches import (
    CaseLaunches,
    CompiledLaunch,
    CompileLaunchReport,
    record_task,
)
from evolution.writers.inductor.model import CaptureReport
from evolution.writers.inductor.render import render_candidate

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parents[2] / "examples" / "tasks"
RMSNORM = ("sglang_rmsnorm_residual", "rms_norm_forward_native")
SILU = ("sglang_silu_and_mul", "silu_and_mul_forward_native")


def seed_of(name: str, entry: str) -> str:
    capture = CaptureReport.from_json((DATA / f"inductor_capture_{name}.json").read_text())
    return render_candidate(capture, name, entry)


def report_of(name: str) -> CompileLaunchReport:
    return CompileLaunchReport.from_json((DATA / f"compile_launches_{name}.json").read_text())


def knob_values(source: str) -> dict[str, int]:
    return {s.name: s.value for s in ParsedCandidate(source).sites() if s.key.startswith("name:")}


def program(source: str, operator: str = INDUCTOR_SEED) -> Program:
    return Program("p", source, "p", None, operator, 0, 0)


def test_the_recorded_report_reads_back_as_written() -> None:
    report = report_of(RMSNORM[0])
    assert CompileLaunchReport.from_json(report.to_json()) == report
    assert len(report.cases) == 8 and not report.error
    launch = report.cases["tokens4096_hidden7168"].launches[0]
    assert launch.kind == "reduction" and launch.kernel.startswith("triton_red_")


def test_rmsnorm_seed_gets_each_launch_compile_chose_largest_case_first() -> None:
    seed = seed_of(*RMSNORM)
    assert knob_values(seed) == {"K0_XBLOCK": 1, "K0_R0_BLOCK": 2048, "K0_NUM_WARPS": 8, "K0_NUM_STAGES": 1}
    changes = launch_changes(seed, ParsedCandidate(seed).sites(), report_of(RMSNORM[0]))
    # torch.compile ran the seed's very kernel at every shape, with 16 warps, and a 4096-element chunk at
    # some: two distinct launches, the one of the largest case (4096 x 7168) first.
    assert [c.changes for c in changes] == [
        {"name:K0_NUM_WARPS": 16, "name:K0_R0_BLOCK": 4096},
        {"name:K0_NUM_WARPS": 16},
    ]
    assert changes[0].cases[0] == "tokens4096_hidden7168"
    assert sorted(c for change in changes for c in change.cases) == sorted(report_of(RMSNORM[0]).cases)


def test_pointwise_launch_fixes_the_per_call_floor_too() -> None:
    seed = seed_of(*SILU)
    assert knob_values(seed) == {"K0_XBLOCK": 1024, "K0_MIN_XBLOCK": 256, "K0_NUM_WARPS": 4}
    changes = launch_changes(seed, ParsedCandidate(seed).sites(), report_of(SILU[0]))
    first = changes[0]
    assert first.cases[0] == "tokens4096_intermediate14336"
    # compile's block at that shape is the seed's largest, and the per-call floor is raised to it, so the
    # child launches exactly compile's block there.
    assert first.changes == {"name:K0_MIN_XBLOCK": 1024}
    assert {"name:K0_XBLOCK": 512, "name:K0_MIN_XBLOCK": 512, "name:K0_NUM_WARPS": 8} in [
        c.changes for c in changes
    ]


def test_a_kernel_of_another_kind_at_that_shape_is_left_alone() -> None:
    seed = seed_of(*RMSNORM)
    launch = CompiledLaunch(
        "triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0",
        "persistent_reduction",
        {"XBLOCK": 1, "num_warps": 8, "num_stages": 1},
    )
    report = CompileLaunchReport("cuda", cases={"small": CaseLaunches("bfloat16", 10, (launch,))})
    assert launch_changes(seed, ParsedCandidate(seed).sites(), report) == []
    outcome = CompileLaunchMutator(device="cuda")._child(seed, RMSNORM[1], report)
    assert outcome.child_source is None and outcome.exhausted
    assert "other kinds of kernel" in outcome.error


def test_each_dtype_group_sets_its_own_knobs() -> None:
    capture = CaptureReport.from_json(_example_capture("silu_and_mul"))
    seed = render_candidate(capture, "silu_and_mul", "silu_and_mul")
    assert {launch.prefix for launch in seed_launches(seed)} == {"BF16_K0_", "FP32_K0_"}
    launch = CompiledLaunch("triton_poi_fused_mul_silu_slice_0", "pointwise", {"XBLOCK": 512, "num_warps": 8})
    report = CompileLaunchReport("cuda", cases={"t512_d14336_fp32": CaseLaunches("float32", 100, (launch,))})
    (change,) = launch_changes(seed, ParsedCandidate(seed).sites(), report)
    assert change.changes == {
        "name:FP32_K0_XBLOCK": 512,
        "name:FP32_K0_MIN_XBLOCK": 512,
        "name:FP32_K0_NUM_WARPS": 8,
    }


def _example_capture(task: str) -> str:
    from evolution.writers.inductor.capture import capture_task

    return capture_task(str(EXAMPLES / task), "cpu").to_json()


def test_the_mutator_proposes_each_launch_once_then_says_it_is_spent() -> None:
    task = load_task(EXAMPLES / "rmsnorm_residual")  # only its root and entry are read here
    seed = program(seed_of(*RMSNORM))
    mutator = CompileLaunchMutator(device="cuda")

    async def children() -> list:
        mutator._reports[str(task.root)] = asyncio.get_running_loop().create_future()
        mutator._reports[str(task.root)].set_result(report_of(RMSNORM[0]))
        return [await mutator.mutate(MutationRequest(task, seed)) for _ in range(3)]

    first, second, third = asyncio.run(children())
    assert first.operator == OPERATOR and knob_values(first.child_source or "")["K0_R0_BLOCK"] == 4096
    assert knob_values(second.child_source or "") == {
        "K0_XBLOCK": 1,
        "K0_R0_BLOCK": 2048,
        "K0_NUM_WARPS": 16,
        "K0_NUM_STAGES": 1,
    }
    assert third.child_source is None and third.exhausted and "already proposed" in third.error
    # Only the launch constants moved: the kernel and the host code are the seed's.
    body = [line for line in seed.source.splitlines() if not line.startswith("K0_")]
    assert [line for line in (first.child_source or "").splitlines() if not line.startswith("K0_")] == body


def test_the_seed_is_a_parent_once_compile_s_launches_are_recorded() -> None:
    task = load_task(EXAMPLES / "rmsnorm_residual")
    source = seed_of(*RMSNORM)
    mutator = CompileLaunchMutator(device="cuda")
    mutator.start(task)
    assert not mutator.accepts_program(program(source))  # outside a search's event loop: nothing starts
    recordings: list[str] = []

    async def answers() -> list[bool]:
        released = asyncio.Event()

        async def recorded(task_dir: str) -> CompileLaunchReport:  # the subprocess needs a GPU
            recordings.append(task_dir)
            await released.wait()
            return report_of(RMSNORM[0])

        mutator._recorded = recorded  # type: ignore[method-assign]
        seen = [mutator.accepts_program(program(source))]  # starts the recording, not done yet
        await asyncio.sleep(0)
        seen.append(mutator.accepts_program(program(source)))
        released.set()
        await asyncio.sleep(0.01)
        seen.append(mutator.accepts_program(program(source)))
        seen.append(mutator.accepts_program(program(source, operator="tune:launch")))
        seen.append(mutator.accepts_program(program("def f(x):\n    return x\n")))
        return seen

    assert asyncio.run(answers()) == [False, False, True, False, False]
    assert recordings == [str(task.root)]  # one recording, however often the seed is seen


def test_on_a_cpu_nothing_is_recorded_and_the_move_rests() -> None:
    task = load_task(EXAMPLES / "rmsnorm_residual")
    assert record_task(str(task.root), "cpu").error == "torch.compile's autotuning needs a GPU"
    mutator = CompileLaunchMutator(device="cpu")
    outcome = asyncio.run(mutator.mutate(MutationRequest(task, program(seed_of(*RMSNORM)))))
    assert outcome.child_source is None and outcome.exhausted
    assert "needs a GPU" in outcome.error


def test_asked_first_operators_come_before_the_weighted_draw() -> None:
    operators = build_operators(SearchConfig(), "cuda")
    (move_first,) = [m for m in operators.evolvers if m.name == OPERATOR]
    task = load_task(EXAMPLES / "rmsnorm_residual")
    move_first.start(task)  # type: ignore[attr-defined]
    loop = asyncio.new_event_loop()
    recorded = loop.create_future()
    recorded.set_result(report_of(RMSNORM[0]))
    move_first._reports[str(task.root)] = recorded  # type: ignore[attr-defined]
    loop.close()
    source = seed_of(*RMSNORM)
    config = SearchConfig()
    archive = Archive(config.archive)
    # The Inductor seed, and a faster program of another cell: the draw by weight alone would mostly pick
    # another operator, and the sampler the faster parent.
    archive.place(timed_program("p", {"a": 1.0}, source=source, operator=INDUCTOR_SEED), 0)
    archive.place(timed_program("q", {"a": 2.0}, source="x", operator="tune:launch"), 0)
    assert {p.id for p in archive.all_elites()} == {"p", "q"}
    for seed in range(5):
        chooser = MoveChooser(
            operators, ParentSampler(config.sampling, random.Random(seed)), random.Random(seed)
        )
        move = chooser.next(archive, 0)
        assert move is not None
        assert move.operator.name == OPERATOR and move.choice.parent.id == "p"
    # Once spent on the seed, the draw goes on by weight.
    assert move is not None
    chooser.mark_spent(move.operator, move.choice.parent, move.choice.inspirations, "spent")
    later = chooser.next(archive, 0)
    assert later is not None and later.operator.name != OPERATOR


def test_the_move_joins_a_search_on_a_gpu_only() -> None:
    assert OPERATOR in [m.name for m in build_operators(SearchConfig(), "cuda").evolvers]
    assert OPERATOR not in [m.name for m in build_operators(SearchConfig(), "cpu").evolvers]
    no_seed = SearchConfig.from_dict({"mutation": {"inductor_seed": False}})
    assert OPERATOR not in [m.name for m in build_operators(no_seed, "cuda").evolvers]


@pytest.mark.gpu
def test_recording_on_a_gpu_gives_each_case_its_launches() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    report = record_task(str(EXAMPLES / "rmsnorm_residual"), "cuda")
    task = load_task(EXAMPLES / "rmsnorm_residual")
    assert not report.error
    assert set(report.cases) | set(report.skipped) == {c.name for c in task.cases}
    for case in report.cases.values():
        assert case.launches and all(launch.config.get("num_warps") for launch in case.launches)
