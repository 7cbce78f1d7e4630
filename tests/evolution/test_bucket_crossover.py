"""Bucket crossover on the shipped example candidates: the split it picks from per-case speedups, the child it
writes (parses, edits only the parent's EVOLVE-BLOCK, passes the static checks), and, what matters most,
that the child is correct and really routes each call by the bytes of its tensor inputs (Triton interpreter
on CPU; the evaluator itself judges two children end to end)."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from evaluators.api import evaluate_candidate
from evaluators.candidate import check_evolve_block, find_evolve_block, parse_candidate
from evaluators.config import EvalConfig
from evaluators.correctness.compare import compare_tensors
from evaluators.correctness.tolerances import tolerance_for
from evaluators.result import CaseResult, EvalResult, RegimeTiming, Stage, TimingStats
from evaluators.static.checks import check_static
from evaluators.task import Task, load_task
from evolution.config import DEFAULT_WEIGHTS, SearchConfig
from evolution.dedup import candidate_sha
from evolution.mutators.bucket_crossover import (
    MIN_GAIN,
    OPERATOR,
    STRUCTURE_GAIN,
    BucketCrossoverMutator,
    best_split,
    inductor_written,
    kernel_bodies,
)
from evolution.operators import build_operators
from evolution.types import MutationRequest, Program

TASKS = Path(__file__).resolve().parents[2] / "examples" / "tasks"
SILU_A, SILU_B = "silu_and_mul_triton.py", "silu_and_mul_flat_triton.py"
SILU_C = "silu_and_mul_constexpr_d_triton.py"
RMS_A, RMS_B = "rmsnorm_residual_triton.py", "rmsnorm_residual_rowwise_triton.py"
# Small tasks for the interpreter: the same reference and inputs as the examples, tiny listed cases.
SMALL_CASES = {
    "silu_and_mul": [("t1_d64", 1, 64), ("t3_d200", 3, 200), ("t40_d256", 40, 256), ("t97_d200", 97, 200)],
    "rmsnorm_residual": [("t1_h64", 1, 64), ("t3_h96", 3, 96), ("t40_h128", 40, 128), ("t70_h100", 70, 100)],
}
_ids = itertools.count()

pytestmark = pytest.mark.skipif(not (TASKS / "silu_and_mul").is_dir(), reason="example tasks not present")


def timed(
    task: Task, source: str, speedup: Callable[[dict], float], pid: str = "", reference_us: float = 10.0
) -> Program:
    """A correct Program whose per-case graph speedups are `speedup(case params)` (a synthetic timing run),
    the reference taking `reference_us` on every case."""
    reference = TimingStats(median_us=reference_us, cv=0.01, samples=30)
    cases = tuple(
        CaseResult(
            c.name,
            dict(c.params),
            True,
            timings={
                "graph": RegimeTiming(
                    reference, TimingStats(reference_us / s, 0.01, 30), s, s * 0.99, s * 1.01
                )
            },
        )
        for c in task.cases
        if (s := speedup(c.params)) > 0
    )
    gmean = math.exp(sum(math.log(c.timings["graph"].speedup) for c in cases) / len(cases))
    sha = candidate_sha(source, task.entry)
    result = EvalResult(
        task.name, sha, "triton-cuda", "graph", Stage.TIMING, True, correct=True, score=gmean, cases=cases
    )
    return Program(pid or f"p{next(_ids)}", source, sha, None, "seed:file", 0, 0, result=result)


def candidate(task: str, name: str) -> str:
    return (TASKS / task / "candidates" / name).read_text()


def cross(parent: Program, *inspirations: Program, task: Task) -> tuple[str | None, str]:
    outcome = asyncio.run(BucketCrossoverMutator().mutate(MutationRequest(task, parent, inspirations)))
    assert outcome.operator == OPERATOR
    return outcome.child_source, outcome.error


def small_task(tmp_path: Path, name: str) -> Task:
    root = tmp_path / name
    root.mkdir()
    for f in ("reference.py", "inputs.py"):
        shutil.copy(TASKS / name / f, root / f)
    width = "d" if name == "silu_and_mul" else "hidden"
    toml = [f'name = "{name}"', f'entry = "{name}"', 'regime = "graph"', 'dynamic = ["tokens"]']
    for case, tokens, size in SMALL_CASES[name]:
        toml += [
            "[[cases]]",
            f'name = "{case}"',
            f"tokens = {tokens}",
            f"{width} = {size}",
            'dtype = "float32"',
        ]
    (root / "task.toml").write_text("\n".join(toml) + "\n")
    return load_task(root)


def load_module(source: str, path: Path) -> ModuleType:
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kb_crossover_child_{next(_ids)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_valid_child(parent: str, child: str, task: Task) -> None:
    parse_candidate(child, task.entry)
    check_evolve_block(parent, child)  # the controller's own check: nothing outside the block changed
    report = check_static(child, task)
    assert not report.findings and not report.errors, (report.findings, report.errors)


def assert_matches_reference(task: Task, fn: Callable, params: dict) -> None:
    args, kwargs = task.load_make_inputs()(dict(params), 0, "cpu")
    expected = task.load_reference()(*args, **kwargs)
    got = fn(*args, **kwargs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for e, g in zip(expected, got if isinstance(got, tuple) else (got,), strict=True):
        verdict = compare_tensors(e, g, tolerance_for(e.dtype, task))
        assert verdict.ok, verdict.reason


def silu_bytes(tokens: int, d: int, size: int = 2) -> int:
    return tokens * 2 * d * size


@pytest.fixture(scope="module")
def silu() -> Task:
    return load_task(TASKS / "silu_and_mul")


@pytest.fixture(scope="module")
def rms() -> Task:
    return load_task(TASKS / "rmsnorm_residual")


def test_split_on_the_example_task_sends_small_cases_to_the_decode_winner(silu):
    # A (row kernel) wins the two 4096-token prefills, B (flat kernel) everything else. By input bytes the
    # smaller prefill (t4096_d2048, 33.5 MB) sits below t512_d14336_fp32 and t1024_d18432: the best cut puts
    # B on the cases up to t256_d14336 (14.7 MB), since B would lose more on t4096_d2048 than it gains above.
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.30 if p["tokens"] >= 4096 else 1.00)
    b = timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 1.05 if p["tokens"] >= 4096 else 1.10)
    child, error = cross(a, b, task=silu)
    assert error == "" and child is not None
    low, high = silu_bytes(256, 14336), silu_bytes(4096, 2048)
    assert f"\nCROSSOVER_BYTES = {round(math.sqrt(low * high))}\n" in child
    block = find_evolve_block(child).text
    assert (
        "if nbytes <= CROSSOVER_BYTES:\n        return _silu_and_mul_small(x)\n"
        "    return _silu_and_mul_large(x)" in block
    )
    note = " ".join(
        block.split("# Bucket crossover:")[1].split("CROSSOVER_BYTES =")[0].replace("#", "").split()
    )
    assert "t1_d2048_bf16 (1.10x vs 1.00x)" in note and "t256_d14336_bf16" in note
    assert "t512_d14336_fp32" not in note and "+4.9%" in note  # (1.1 ** 4) ** (1 / 8): four of eight cases
    assert_valid_child(a.source, child, silu)


def test_a_speedup_the_partner_owes_to_a_slower_reference_routes_nothing(silu):
    """B's speedups beat A's by 10 % on the small cases only because B's evaluation timed the reference 12 %
    slower (the GPU shared with other work then): B's own kernel is no faster there, so no split; with the
    reference at A's time the same speedups are a faster kernel and route."""
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.30 if p["tokens"] >= 4096 else 1.00)

    def b_speedup(p: dict) -> float:
        return 1.05 if p["tokens"] >= 4096 else 1.10

    slowed = timed(silu, candidate("silu_and_mul", SILU_B), b_speedup, reference_us=11.2)
    child, error = cross(a, slowed, task=silu)
    assert child is None and "no size split beats the parent by 1%" in error
    child, error = cross(a, timed(silu, candidate("silu_and_mul", SILU_B), b_speedup), task=silu)
    assert error == "" and child is not None and "CROSSOVER_BYTES" in child


def test_partner_on_the_large_side_and_the_best_of_several_partners(silu):
    def big(p: dict) -> bool:  # above 50 MB: t512_d14336_fp32, t1024_d18432_bf16, t4096_d14336_bf16
        return silu_bytes(p["tokens"], p["d"], 4 if p["dtype"] == "float32" else 2) > 50e6

    source_b = candidate("silu_and_mul", SILU_B)
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.00 if big(p) else 1.10)
    weak = timed(silu, source_b, lambda p: 1.04 if big(p) else 1.00)
    strong = timed(
        silu, source_b.replace("LARGE_BLOCK = 2048", "LARGE_BLOCK = 4096"), lambda p: 1.2 if big(p) else 1
    )
    child, error = cross(a, weak, strong, task=silu)
    assert error == "" and child is not None
    assert "LARGE_BLOCK_large = 4096" in child  # the stronger partner was chosen
    low, high = silu_bytes(4096, 2048), silu_bytes(512, 14336, 4)  # 33.5 MB | 58.7 MB
    assert f"\nCROSSOVER_BYTES = {round(math.sqrt(low * high))}\n" in child
    assert "return _silu_and_mul_small(x)\n    return _silu_and_mul_large(x)" in child
    assert_valid_child(a.source, child, silu)


def test_rmsnorm_pair_makes_a_valid_child(rms):
    a = timed(rms, candidate("rmsnorm_residual", RMS_A), lambda p: 1.0 if p["tokens"] < 256 else 1.2)
    b = timed(rms, candidate("rmsnorm_residual", RMS_B), lambda p: 1.1 if p["tokens"] < 256 else 1.0)
    child, error = cross(a, b, task=rms)
    assert error == "" and child is not None
    # The signature is A's, defaults and annotations included; eps goes through by name.
    assert "def rmsnorm_residual(\n    x: torch.Tensor," in child
    assert "eps: float = 1e-6" in child.split("CROSSOVER_BYTES = ")[1]
    assert "return _rmsnorm_residual_small(x, residual, weight, eps=eps)" in child
    assert_valid_child(a.source, child, rms)


def test_a_partner_without_inductors_code_goes_first_where_it_loses_no_case_by_the_noise(rms):
    """Two partners lead the parent at 4096 tokens: torch.compile's kernel (Inductor-named) and a kernel of
    the same structure without it. Half a percent apart, the child routes to the one a reviewer reads more
    easily; 3 % apart, to the faster."""
    source_b = candidate("rmsnorm_residual", RMS_B)
    inductor_source = source_b.replace("_rmsnorm_residual_kernel", "_red_fused_add_mean_mul_pow_rsqrt_0")
    assert inductor_written(inductor_source) and not inductor_written(source_b)
    plain_source = source_b.replace("CHUNK_BLOCK = 4096", "CHUNK_BLOCK = 2048")
    a = timed(rms, candidate("rmsnorm_residual", RMS_A), lambda p: 1.1 if p["tokens"] < 4096 else 1.0)
    for inductor_lead, routed in ((1.205, "CHUNK_BLOCK_large = 2048"), (1.24, "_red_fused_add_")):
        inductor = timed(rms, inductor_source, lambda p, s=inductor_lead: s if p["tokens"] == 4096 else 1.0)
        plain = timed(rms, plain_source, lambda p: 1.2 if p["tokens"] == 4096 else 1.0)
        child, error = cross(a, inductor, plain, task=rms)
        assert error == "" and child is not None
        assert routed in child
        assert_valid_child(a.source, child, rms)


def test_no_usable_inspiration_is_a_failed_outcome(silu):
    source = candidate("silu_and_mul", SILU_A)
    a = timed(silu, source, lambda p: 1.0)
    same = timed(silu, source, lambda p: 2.0)  # same code as the parent
    wrong = Program(
        "w",
        candidate("silu_and_mul", SILU_B),
        "sha-w",
        None,
        "llm:x",
        0,
        0,
        result=a.result.with_updates(correct=False, score=0.0),
    )
    untimed = Program(
        "u",
        candidate("silu_and_mul", SILU_B),
        "sha-u",
        None,
        "llm:x",
        0,
        0,
        result=a.result.with_updates(
            cases=tuple(c.__class__(c.name, c.params, True) for c in a.result.cases)
        ),
    )
    child, error = cross(a, same, wrong, untimed, task=silu)
    assert child is None and "no inspiration to cross with" in error
    child, error = cross(a, task=silu)
    assert child is None and "no inspiration to cross with" in error
    interpreted = Program("i", source, "sha-i", None, "seed:file", 0, 0, result=untimed.result)
    child, error = cross(interpreted, a, task=silu)
    assert child is None and "no per-case speedups" in error


def test_gain_below_the_minimum_is_a_failed_outcome(silu):
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.0)
    # B is 0.8 % faster on the small cases: under MIN_GAIN however the cases are routed.
    b = timed(
        silu, candidate("silu_and_mul", SILU_B), lambda p: 1.0 + MIN_GAIN * 0.8 if p["tokens"] < 1024 else 0.9
    )
    child, error = cross(a, b, task=silu)
    assert child is None and "no size split beats the parent by 1%" in error


def test_a_second_kernel_body_needs_the_larger_gain(silu):
    """B, another kernel, is 3 % faster on the small cases: above MIN_GAIN, below STRUCTURE_GAIN, so no child
    carries its body beside A's; B's own code at another block size (a launch table, one body) gains the
    same 3 % and is routed."""
    source_b = candidate("silu_and_mul", SILU_B)
    retuned = source_b.replace("LARGE_BLOCK = 2048", "LARGE_BLOCK = 4096")
    assert kernel_bodies(candidate("silu_and_mul", SILU_A), "silu_and_mul") == 1

    def small(p: dict) -> bool:
        return p["tokens"] < 1024

    gain = 1.0 + (MIN_GAIN + STRUCTURE_GAIN) / 2
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.0)
    child, error = cross(a, timed(silu, source_b, lambda p: gain if small(p) else 0.9), task=silu)
    assert child is None and "a second kernel body for 3.0% on the cases it routes (at least 5%" in error
    b = timed(silu, source_b, lambda p: 1.0)
    child, error = cross(b, timed(silu, retuned, lambda p: gain if small(p) else 0.9), task=silu)
    assert error == "" and child is not None
    assert kernel_bodies(child, "silu_and_mul") == kernel_bodies(source_b, "silu_and_mul")


@pytest.mark.slow  # one trace of the task (Dynamo, seconds)
def test_a_one_row_parent_and_a_two_row_partner_cross_as_one_kernel(tmp_path):
    """Fusion candidates at one and two rows a program, B 3 % faster on the small cases: with the run's fusion
    writer, A is written with the 2-D row tile (crossover.row_tile), the two differ only in ROWS and the
    child carries one kernel body with a rows table, so the gain below STRUCTURE_GAIN is enough. Without the
    writer, the two bodies are refused. The child matches the reference on every case."""
    from evolution.writers.fusion.knobs import Knobs
    from evolution.writers.fusion.writer import FusionWriter

    task = small_task(tmp_path, "rmsnorm_residual")
    writer = FusionWriter()
    report = asyncio.run(writer.report(task))
    one, two = (asyncio.run(writer.write(task, report, Knobs(rows=r))).source for r in (1, 2))
    gain = 1.0 + (MIN_GAIN + STRUCTURE_GAIN) / 2
    a = timed(task, one, lambda p: 1.0)
    b = timed(task, two, lambda p: gain if p["tokens"] < 40 else 0.9)
    child, error = cross(a, b, task=task)
    assert child is None and "a second kernel body" in error
    outcome = asyncio.run(BucketCrossoverMutator(writer=writer).mutate(MutationRequest(task, a, (b,))))
    child = outcome.child_source
    assert outcome.error == "" and child is not None
    assert '"row_tile": true' in child
    assert kernel_bodies(child, task.entry) == kernel_bodies(one, task.entry) == 1
    assert_valid_child(a.source, child, task)
    entry = getattr(load_module(child, tmp_path / "child.py"), task.entry)
    for case in task.cases:
        assert_matches_reference(task, entry, dict(case.params))


@pytest.mark.slow  # one trace of the task (Dynamo, seconds)
def test_a_one_row_partner_of_a_child_with_more_rows_is_written_in_the_row_tile(tmp_path):
    """The run's last crossover meets each case's leader in turn: a child routing two rows a program and a
    two-pass kernel, crossed with a one-row leader, takes the leader in the 2-D row tile, and flattened as
    integrate ships it the grandchild holds one kernel for one and two rows beside the two-pass one. It
    matches the reference on every case. A one-row code inside a crossover child stays as it is (its names
    were suffixed when it was routed to, or it launches with a launch table), and so does a one-row parent
    whose task this writer never traced."""
    from evolution.mutators.crossover.row_tile import row_tiled
    from evolution.mutators.crossover.source import Route, build_child
    from evolution.writers.fusion.knobs import Knobs
    from evolution.writers.fusion.writer import FusionWriter

    task = small_task(tmp_path, "rmsnorm_residual")
    writer = FusionWriter()
    report = asyncio.run(writer.report(task))

    def written(**knobs) -> str:
        return asyncio.run(writer.write(task, report, Knobs(**knobs))).source

    one, two, two_pass = written(), written(rows=2), written(passes="two", block=32)
    routed = build_child(two, two_pass, task.entry, Route(20_000, False, ""))  # two passes above 20 kB
    source, partner = row_tiled([routed, one], task, writer)
    assert source == routed and '"row_tile": true' in partner
    child = build_child(routed, partner, task.entry, Route(600, True, ""))  # one row up to 600 bytes
    assert kernel_bodies(child, task.entry) == 2
    assert kernel_bodies(build_child(routed, one, task.entry, Route(600, True, "")), task.entry) == 3
    entry = getattr(load_module(child, tmp_path / "child.py"), task.entry)
    for case in task.cases:
        assert_matches_reference(task, entry, dict(case.params))
    routed_one = build_child(one, two_pass, task.entry, Route(20_000, False, ""))
    assert row_tiled([routed_one, two], task, writer) == [routed_one, two]
    # ... also beside a code the fusion writer did not write (no knobs line, as an Inductor seed's)
    unknobbed = re.sub(r"^# fusion-knobs: .*\n", "", two_pass, flags=re.M)
    routed_one = build_child(one, unknobbed, task.entry, Route(20_000, False, ""))
    assert routed_one.count("# fusion-knobs: ") == 1
    assert row_tiled([routed_one, two], task, writer) == [routed_one, two]
    # ... and a launch table's child: one code and one knobs line, launched with another's warps up to a
    # size, which writing it again from its knobs would drop
    launched = build_child(one, written(warps=2.0), task.entry, Route(600, True, ""))
    assert launched.count("# fusion-knobs: ") == 1 and "_launch(" in launched
    assert row_tiled([launched, two], task, writer) == [launched, two]
    assert row_tiled([one, two], task, FusionWriter()) == [one, two]


@pytest.mark.slow  # one trace of the task (Dynamo, seconds)
def test_chained_a_one_row_parent_and_a_later_two_row_leader_are_one_kernel(tmp_path):
    """The run's last crossover routes a one-row parent first to a two-pass leader (the largest gain, on the
    largest case), then to a two-row leader (the smallest cases): the child is built again from all three,
    the parent in the row tile, so one kernel serves one and two rows beside the two-pass one (left as it
    is: no code of its structure takes more rows). Without the run's fusion writer it carries three
    bodies. It matches the reference on every case."""
    from evolution.writers.fusion.knobs import Knobs
    from evolution.writers.fusion.writer import FusionWriter

    task = small_task(tmp_path, "rmsnorm_residual")
    writer = FusionWriter()
    report = asyncio.run(writer.report(task))

    def written(**knobs) -> str:
        return asyncio.run(writer.write(task, report, Knobs(**knobs))).source

    # the two-pass leader runs the largest case (70 tokens), the two-row one up to 3 tokens, the parent 40
    parent = timed(task, written(), lambda p: 1.0)
    two_pass = timed(task, written(passes="two", block=32), lambda p: 1.5 if p["tokens"] >= 70 else 0.9)
    two_rows = timed(task, written(rows=2), lambda p: 1.1 if p["tokens"] <= 3 else 0.9)
    request = MutationRequest(task, parent, (two_pass, two_rows))
    bodies = []
    for mutator in (BucketCrossoverMutator(writer=writer), BucketCrossoverMutator()):
        outcome = asyncio.run(mutator.chained().mutate(request))
        assert outcome.error == "" and outcome.child_source is not None
        bodies.append(kernel_bodies(outcome.child_source, task.entry))
    assert bodies == [2, 3]
    child = asyncio.run(BucketCrossoverMutator(writer=writer).chained().mutate(request)).child_source
    assert child is not None and child.count('"row_tile": true') == 1  # the parent's, not the two-pass one
    entry = getattr(load_module(child, tmp_path / "child.py"), task.entry)
    for case in task.cases:
        assert_matches_reference(task, entry, dict(case.params))


def test_a_second_kernel_body_that_lifts_a_case_behind_torch_compile_needs_only_the_minimum_gain(silu):
    """The same 3 % from another kernel, where the parent trails torch.compile on a small case: B's body
    enters beside A's. Behind compile only on a case B does not gain on, or not routed to B, it does not."""
    source_a, source_b = candidate("silu_and_mul", SILU_A), candidate("silu_and_mul", SILU_B)
    gain = 1.0 + (MIN_GAIN + STRUCTURE_GAIN) / 2
    a = timed(silu, source_a, lambda p: 1.0)
    b = timed(silu, source_b, lambda p: gain if p["tokens"] < 1024 else 0.9)
    small = next(c.name for c in silu.cases if c.params["tokens"] < 1024)
    large = next(c.name for c in silu.cases if c.params["tokens"] >= 1024)

    def cross_behind(behind: tuple[str, ...]) -> tuple[str | None, str]:
        request = MutationRequest(silu, a, (b,), behind_compile=behind)
        outcome = asyncio.run(BucketCrossoverMutator().mutate(request))
        return outcome.child_source, outcome.error

    child, error = cross_behind((small,))
    assert error == "" and child is not None
    assert kernel_bodies(child, "silu_and_mul") == 2 and "_silu_and_mul_small(" in child
    for behind in ((large,), ()):
        child, error = cross_behind(behind)
        assert child is None and "or 1% on a case behind torch.compile" in error


def test_a_gain_on_the_largest_case_alone_is_routed(silu):
    # B (a looped reduction, say) is 5 % faster on the largest case only and 3 % slower elsewhere: the whole
    # geometric mean moves by 0.6 %, under MIN_GAIN, yet 5 % on that case is far above its noise. The child
    # sends that case alone to B.
    def largest(p: dict) -> bool:  # t4096_d14336_bf16, 117 MB, the one case above 100 MB
        return silu_bytes(p["tokens"], p["d"], 4 if p["dtype"] == "float32" else 2) > 100e6

    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.0)
    b = timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 1.05 if largest(p) else 0.97)
    assert sum(largest(c.params) for c in silu.cases) == 1
    child, error = cross(a, b, task=silu)
    assert error == "" and child is not None
    assert "return _silu_and_mul_small(x)\n    return _silu_and_mul_large(x)" in child
    note = " ".join(
        child.split("# Bucket crossover:")[1].split("CROSSOVER_BYTES =")[0].replace("#", "").split()
    )
    assert "t4096_d14336_bf16 (1.05x vs 1.00x)" in note and note.count("x vs") == 1
    assert_valid_child(a.source, child, silu)


def test_a_child_whose_routing_does_not_flatten_is_refused(silu, monkeypatch):
    """The module integrate writes flattens the child's size routing; a child it could not flatten would
    ship each route's code as nested, so the crossover gives way to the next partner or refuses. The
    example pair flattens, and with the flattener failing it is refused."""
    import evolution.mutators.bucket_crossover as bucket

    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.30 if p["tokens"] >= 4096 else 1.00)
    b = timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 1.05 if p["tokens"] >= 4096 else 1.10)
    child, error = cross(a, b, task=silu)
    assert error == "" and child is not None and bucket.flat_child(child, silu.entry) is not None
    monkeypatch.setattr(bucket, "flat_routes", lambda block, entry, tensors=None: None)
    child, error = cross(a, b, task=silu)
    assert child is None and "does not flatten into one dispatcher" in error


def test_a_gain_in_the_middle_sizes_alone_is_routed_as_a_band(silu):
    """B is 8 % faster on the 64- to 256-token cases and 5 % slower on the smaller and larger ones (a launch
    that suits a decode batch): no cut isolates them, the band does, and only B's middle cases go to it.
    Where B also gains on every case above, the cut (B on the whole large side) is taken, not a band."""

    def middle(p: dict) -> bool:
        return 64 <= p["tokens"] <= 256

    split = best_split(
        {c.name: 1.0 for c in silu.cases},
        timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 1.0),
        {c.name: 1.08 if middle(c.params) else 0.95 for c in silu.cases},
        {
            c.name: silu_bytes(c.params["tokens"], c.params["d"], 4 if c.params["dtype"] == "float32" else 2)
            for c in silu.cases
        },
    )
    assert split is not None and split.floor is not None and split.b_small
    assert set(split.b_cases) == {c.name for c in silu.cases if middle(c.params)}
    a = timed(silu, candidate("silu_and_mul", SILU_A), lambda p: 1.0)
    b = timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 1.08 if middle(p) else 0.95)
    child, error = cross(a, b, task=silu)
    assert error == "" and child is not None
    assert f"Cases up to {split.floor} bytes run the code before the band." in " ".join(
        child.replace("#", "").split()
    )
    assert_valid_child(a.source, child, silu)
    above = timed(silu, candidate("silu_and_mul", SILU_B), lambda p: 0.95 if p["tokens"] < 64 else 1.08)
    child, error = cross(a, above, task=silu)
    assert error == "" and child is not None and "the code before the band" not in child


@pytest.mark.slow  # one trace of the task (Dynamo, seconds)
def test_a_band_of_another_launch_flattens_to_one_kernel_and_matches_the_reference(tmp_path):
    """A two-row parent and a one-row leader faster on the middle cases only (3 and 40 tokens), as the
    run's last crossover meets them: the child runs the leader on the band (written in the row tile, it is
    the parent's code launched at one row) and the parent on both sides of it. Flattened as integrate
    ships it, that is one kernel with a launch table whose test is the band, and both the child and the
    flat module match the reference on every case. The parent's own constants name the kernel's
    parameters (`ROWS`), which once kept a launch table out."""
    from evaluators.candidate import replace_evolve_block
    from evolution.mutators.crossover.routes import flat_routes
    from evolution.writers.fusion.knobs import Knobs
    from evolution.writers.fusion.writer import FusionWriter

    task = small_task(tmp_path, "rmsnorm_residual")
    writer = FusionWriter()
    report = asyncio.run(writer.report(task))
    two, one = (asyncio.run(writer.write(task, report, Knobs(rows=r))).source for r in (2, 1))
    parent = timed(task, two, lambda p: 1.0)
    leader = timed(task, one, lambda p: 1.04 if 3 <= p["tokens"] <= 40 else 0.95)
    outcome = asyncio.run(
        BucketCrossoverMutator(writer=writer).chained().mutate(MutationRequest(task, parent, (leader,)))
    )
    child = outcome.child_source
    assert outcome.error == "" and child is not None
    assert kernel_bodies(child, task.entry) == 1 and ", ROWS=1)" in child  # the parent's code, one row
    flat = flat_routes(find_evolve_block(child).text, task.entry)
    assert flat is not None and flat.count("@triton.jit") == 1
    assert re.search(r"rows = 1 if \d+ < nbytes <= \d+ else ROWS", flat), flat
    for k, source in enumerate((child, replace_evolve_block(child, flat))):
        entry = getattr(load_module(source, tmp_path / f"child{k}.py"), task.entry)
        for case in task.cases:
            assert_matches_reference(task, entry, dict(case.params))


@pytest.mark.parametrize(
    ("name", "pair"), [("silu_and_mul", (SILU_A, SILU_B)), ("rmsnorm_residual", (RMS_A, RMS_B))]
)
def test_child_routes_by_bytes_and_matches_the_reference(tmp_path, name, pair):
    task = small_task(tmp_path, name)
    a = timed(task, candidate(name, pair[0]), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    b = timed(task, candidate(name, pair[1]), lambda p: 1.2 if p["tokens"] < 40 else 1.0)
    child, error = cross(a, b, task=task)
    assert error == "" and child is not None
    assert_valid_child(a.source, child, task)
    module = load_module(child, tmp_path / "child.py")
    calls: list[str] = []
    for side in ("small", "large"):
        original = getattr(module, f"_{name}_{side}")
        setattr(
            module,
            f"_{name}_{side}",
            lambda *args, _f=original, _s=side, **kw: calls.append(_s) or _f(*args, **kw),
        )
    entry = getattr(module, name)
    for case in task.cases:
        calls.clear()
        assert_matches_reference(task, entry, dict(case.params))
        assert calls == (["small"] if int(case.params["tokens"]) < 40 else ["large"]), case.name


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "pair"), [("silu_and_mul", (SILU_A, SILU_B)), ("rmsnorm_residual", (RMS_A, RMS_B))]
)
def test_the_evaluator_judges_the_child_correct(tmp_path, name, pair):
    task = small_task(tmp_path, name)
    a = timed(task, candidate(name, pair[0]), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    b = timed(task, candidate(name, pair[1]), lambda p: 1.2 if p["tokens"] < 40 else 1.0)
    child, _ = cross(a, b, task=task)
    config = EvalConfig(backend="triton-interpret", seeds_per_case=1, drift_calls=2)
    result = evaluate_candidate(task, child, config)
    assert result.correct and not result.hacks, (result.stage, result.reason, result.logs[-2000:])


def test_nested_crossovers_keep_names_apart_and_stay_correct(tmp_path):
    task = small_task(tmp_path, "silu_and_mul")
    a = timed(task, candidate("silu_and_mul", SILU_A), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    b = timed(task, candidate("silu_and_mul", SILU_B), lambda p: 1.2 if p["tokens"] < 40 else 1.0)
    first, _ = cross(a, b, task=task)
    assert first is not None
    # The child (A's lineage) crossed with B again: B's names now need "_small2", A's entry "_large2".
    c = timed(task, first, lambda p: 1.3 if p["tokens"] < 3 else 1.0)
    again, error = cross(c, b, task=task)
    assert error == "" and again is not None
    for name in ("def _silu_and_mul_large2(", "def _silu_and_mul_small2(", "CROSSOVER_BYTES2 ="):
        assert name in again, name
    # What B defines exactly as the parent does (SMALL_BLOCK, equal in both) is not copied a second time.
    assert "SMALL_BLOCK_small2 =" not in again and again.count("SMALL_BLOCK = ") == 1
    # A plain parent crossed with the crossover child, whose code goes in renamed.
    d = timed(task, candidate("silu_and_mul", SILU_B), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    c2 = timed(task, first, lambda p: 1.3 if p["tokens"] < 40 else 1.0)
    mixed, error = cross(d, c2, task=task)
    assert error == "" and mixed is not None
    # "_small" names are taken by the inspiration's own code and "_silu_and_mul_large" too: "_small2" and
    # "_large2" it is.
    for name in (
        "def _silu_and_mul_large2(",
        "def _silu_and_mul_large_small2(",
        "def _silu_and_mul_small_small2(",
        "CROSSOVER_BYTES_small2 =",
    ):
        assert name in mixed, name
    for parent, child in ((c, again), (d, mixed)):
        assert_valid_child(parent.source, child, task)
        module = load_module(child, tmp_path / f"nested_{next(_ids)}.py")
        for case in task.cases:
            assert_matches_reference(task, module.silu_and_mul, dict(case.params))


def test_chained_the_child_routes_each_end_to_its_own_leader(tmp_path):
    # The run's last crossover: B leads the two smallest cases, C the largest, the parent the one between.
    # One split takes B alone (+4.9 % against C's +3.6 %); chained, C's split follows on what B's left.
    task = small_task(tmp_path, "silu_and_mul")
    a = timed(task, candidate("silu_and_mul", SILU_A), lambda p: 1.0)
    b = timed(task, candidate("silu_and_mul", SILU_B), lambda p: 1.1 if p["tokens"] <= 3 else 0.9)
    c = timed(task, candidate("silu_and_mul", SILU_C), lambda p: 1.15 if p["tokens"] == 97 else 0.9)
    single, error = cross(a, b, c, task=task)
    assert error == "" and single is not None
    assert re.findall(r"^CROSSOVER_BYTES\w* =", single, re.M) == ["CROSSOVER_BYTES ="]
    mutator = BucketCrossoverMutator().chained()
    outcome = asyncio.run(mutator.mutate(MutationRequest(task, a, (b, c))))
    child = outcome.child_source
    assert outcome.error == "" and child is not None
    assert_valid_child(a.source, child, task)
    module = load_module(child, tmp_path / "chained.py")
    calls: list[str] = []
    # The first split (B up to 3 tokens) is the parent of the second (C above 40): B's code is "_small",
    # A's "_large", C's "_large2".
    hosts = (("_silu_and_mul_small", "b"), ("_silu_and_mul_large", "a"), ("_silu_and_mul_large2", "c"))
    assert len(re.findall(r"^CROSSOVER_BYTES\w* =", child, re.M)) == 2
    for host, code in hosts:
        original = getattr(module, host)
        setattr(module, host, lambda *args, _f=original, _c=code, **kw: calls.append(_c) or _f(*args, **kw))
    expected = {1: "b", 3: "b", 40: "a", 97: "c"}
    for case in task.cases:
        calls.clear()
        assert_matches_reference(task, module.silu_and_mul, dict(case.params))
        assert calls[-1:] == [expected[int(case.params["tokens"])]], (case.name, calls)
    # Nothing routed again: the child already was, or nothing gains.
    mutator.seen = {candidate_sha(child, task.entry)}.__contains__
    again = asyncio.run(mutator.mutate(MutationRequest(task, a, (b, c))))
    assert again.child_source is None and "already proposed" in again.error


def test_imports_the_parent_lacks_are_added_and_outside_helpers_refused(tmp_path):
    task = small_task(tmp_path, "silu_and_mul")
    a = timed(task, candidate("silu_and_mul", SILU_A), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    source_b = candidate("silu_and_mul", SILU_B).replace("import torch\n", "import math\nimport torch\n", 1)
    source_b = source_b.replace("SMALL_NUMEL = 1 << 16", "SMALL_NUMEL = math.prod((1 << 8, 1 << 8))")
    b = timed(task, source_b, lambda p: 1.2 if p["tokens"] < 40 else 1.0)
    child, error = cross(a, b, task=task)
    assert error == "" and child is not None
    assert "\nimport math\n" in find_evolve_block(child).text and "math.prod((1 << 8, 1 << 8))" in child
    assert_valid_child(a.source, child, task)
    module = load_module(child, tmp_path / "with_math.py")
    assert_matches_reference(task, module.silu_and_mul, {"tokens": 3, "d": 200, "dtype": "float32"})
    # A helper B's block needs from outside its block cannot be carried: refused with a reason.
    helper = source_b.replace("# EVOLVE-BLOCK-START", "HELPER_ROWS = 4\n\n# EVOLVE-BLOCK-START")
    helper = helper.replace("SMALL_BLOCK = 512", "SMALL_BLOCK = 128 * HELPER_ROWS")
    child, error = cross(a, timed(task, helper, lambda p: 1.2 if p["tokens"] < 40 else 1.0), task=task)
    assert child is None and "['HELPER_ROWS'], defined outside its EVOLVE-BLOCK" in error


def test_names_read_only_inside_functions_are_carried_or_refused(tmp_path):
    """The constexpr seed reads libdevice only inside its kernel (and only on a GPU: the interpreter never
    takes that branch), yet the child needs its import; an outside helper read only in a body is refused."""
    task = small_task(tmp_path, "silu_and_mul")
    a = timed(task, candidate("silu_and_mul", SILU_A), lambda p: 1.0 if p["tokens"] < 40 else 1.3)
    source_b = candidate("silu_and_mul", "silu_and_mul_constexpr_d_triton.py")
    b = timed(task, source_b, lambda p: 1.2 if p["tokens"] < 40 else 1.0)
    child, error = cross(a, b, task=task)
    assert error == "" and child is not None
    assert "\nfrom triton.language.extra import libdevice\n" in find_evolve_block(child).text
    assert_valid_child(a.source, child, task)
    module = load_module(child, tmp_path / "with_libdevice.py")
    assert module.libdevice.exp is not None
    assert_matches_reference(task, module.silu_and_mul, {"tokens": 3, "d": 200, "dtype": "float32"})
    helper = source_b.replace("# EVOLVE-BLOCK-START", "def _rows(n):\n    return n\n\n\n# EVOLVE-BLOCK-START")
    helper = helper.replace("    n_out = out.numel()\n", "    n_out = _rows(out.numel())\n", 1)
    child, error = cross(a, timed(task, helper, lambda p: 1.2 if p["tokens"] < 40 else 1.0), task=task)
    assert child is None and "['_rows'], defined outside its EVOLVE-BLOCK" in error


def test_registered_by_default_with_its_weight():
    operators = build_operators(SearchConfig(), "cpu")
    assert OPERATOR in operators.names
    crossover = next(m for m in operators.evolvers if m.name == OPERATOR)
    assert not crossover.can_seed() and crossover.needs_correct_parent
    weights = dict(zip((m.name for m in operators.evolvers), operators.weights, strict=True))
    assert weights[OPERATOR] == DEFAULT_WEIGHTS["cross"] == SearchConfig().mutation.weights["cross"]
    # A config that names only the older families still gives crossover its default share, not 1.0.
    from evolution.config import MutationConfig
    from evolution.operators import OperatorSet

    only_old = OperatorSet.of(operators.evolvers, MutationConfig(weights={"tune": 0.2}).weights)
    assert (
        dict(zip((m.name for m in only_old.evolvers), only_old.weights, strict=True))[OPERATOR]
        == DEFAULT_WEIGHTS["cross"]
    )
    off = OperatorSet.of(operators.evolvers, {"cross": 0.0})
    assert OPERATOR not in [m.name for m in off.evolvers]
