"""The H200 experiment variants under bench/variants/<task>/ are valid candidates: the evaluator (on Triton's
interpreter here) judges each correct on the task's small cases, each matches the reference on shapes that
reach its other launch branches, and bench/vs_compile.py accepts the sweep's arguments."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.result import EvalResult

REPO = Path(__file__).resolve().parents[2]
VARIANTS_DIR = REPO / "bench" / "variants"
TASKS = REPO / "examples" / "tasks"
VARIANTS = sorted(VARIANTS_DIR.glob("*/*.py"))
# Small cases only (decode sizes; rmsnorm's t8_h7168 reaches the three-piece path), one seed per case.
JUDGE_CONFIG = EvalConfig(
    backend="triton-interpret", interpret_max_numel=130_000, interpret_budget_s=10.0, seeds_per_case=1
)
# Shapes past each variant's size thresholds (many rows, odd and non-power-of-two widths, chunked rows).
BRANCH_SHAPES = {
    "rmsnorm_residual": [
        {"tokens": 67, "hidden": 320},
        {"tokens": 1, "hidden": 1023},
        {"tokens": 70, "hidden": 1536},
        {"tokens": 2, "hidden": 3584},
        {"tokens": 2, "hidden": 10000},
    ],
    "silu_and_mul": [
        {"tokens": 97, "d": 200},
        {"tokens": 70, "d": 1000},
        {"tokens": 80, "d": 2048},
        {"tokens": 2, "d": 4500},
        {"tokens": 1, "d": 64},
    ],
}


def load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kb_variant_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variant_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.fixture(scope="module")
def judged(request: pytest.FixtureRequest) -> Iterator[dict[Path, Future[EvalResult]]]:
    """The evaluator's verdict on every variant the selected tests judge, all submitted at once to a pool of
    two workers (the interpreter runs on one core each), in the tests' order: variant path -> its verdict."""
    selected = [
        item.callspec.params["path"]
        for item in request.session.items
        if item.module is request.module and "judged" in getattr(item, "fixturenames", ())
    ]
    with (
        WorkerPool("triton-interpret", size=2, config=JUDGE_CONFIG) as pool,
        ThreadPoolExecutor(max_workers=2) as submit,
    ):
        yield {
            path: submit.submit(
                pool.evaluate, TASKS / path.parent.name, path.read_text(), config=JUDGE_CONFIG
            )
            for path in selected
        }
        submit.shutdown(cancel_futures=True)


def test_every_task_has_variants():
    counts = {task: len(list((VARIANTS_DIR / task).glob("*.py"))) for task in BRANCH_SHAPES}
    assert all(6 <= n <= 10 for n in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("path", VARIANTS, ids=variant_id)
def test_evaluator_judges_the_variant_correct(judged, path):
    result = judged[path].result()
    assert result.correct and not result.hacks, (result.stage, result.reason, result.hacks)
    assert result.score == 1.0


@pytest.mark.parametrize("path", VARIANTS, ids=variant_id)
def test_variant_matches_the_reference_on_branch_shapes(load_harness, path, device):
    harness = load_harness(path.parent.name)
    fn = getattr(load_module(path), harness.task.entry)
    for shape in BRANCH_SHAPES[path.parent.name]:
        for dtype in ("bfloat16", "float32"):
            args, kwargs = harness.inputs({**shape, "dtype": dtype, "eps": 1e-6}, seed=4, device=device)
            verdict = harness.check(fn, args, kwargs)
            assert verdict.ok, f"{shape} {dtype}: {verdict.reason}"


def test_vs_compile_accepts_a_variant_sweep():
    from bench.vs_compile import build_parser, parse_jobs

    rms = [f"{TASKS / 'rmsnorm_residual'}={p}" for p in VARIANTS if p.parent.name == "rmsnorm_residual"]
    argv = ["--out", "o", "--compile-only", "--cases", "t4096_h4096_bf16,t16_d1792_fp32", *rms]
    argv.append(f"{TASKS / 'silu_and_mul'}={VARIANTS_DIR / 'silu_and_mul' / 'tiny_one_warp.py'}")
    args = build_parser().parse_args(argv)
    assert args.compile_only and len(args.pairs) == len(rms) + 1
    jobs, names = parse_jobs(args.pairs, args.cases)
    assert len(jobs) == len(rms) + 1 and names == {"t4096_h4096_bf16", "t16_d1792_fp32"}
    defaults = build_parser().parse_args(["--out", "o", rms[0]])
    assert not defaults.compile_only and parse_jobs(defaults.pairs, defaults.cases)[1] is None


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ("t4096_h4096_bf16,no_such_case", "no_such_case is not a case"),
        ("t16_d1792_fp32", "names no case of .*rmsnorm_residual"),
    ],
)
def test_vs_compile_rejects_cases_it_cannot_time(cases, message):
    from bench.vs_compile import parse_jobs

    pair = f"{TASKS / 'rmsnorm_residual'}={VARIANTS_DIR / 'rmsnorm_residual' / 'row_hints.py'}"
    silu = f"{TASKS / 'silu_and_mul'}={VARIANTS_DIR / 'silu_and_mul' / 'tiny_one_warp.py'}"
    with pytest.raises(ValueError, match=message):
        parse_jobs([pair, silu], cases)
