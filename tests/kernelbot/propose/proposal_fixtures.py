"""Builders for the propose tests: a real search store holding judged candidates, the verify.json content
kernelbot.verify writes, and a stand-in for the Profile (only the fields kernelbot.propose reads) and the
integrate stage's record.

GPU timings cannot be produced on a CPU machine, so `gpu_result` builds the EvalResult the timing stage
returns on a GPU (per case and regime: medians, CV, samples, speedup with CI), with some cases whose interval
lies above 1 and some whose interval straddles it. `interpret_result` is what the interpreter backend
returns: correctness only, no timings, big cases skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluators.result import CaseResult, EvalResult, Hardware, RegimeTiming, Stage, TimingStats
from evaluators.task import load_task
from evolution.config import LLMEndpoint, MutationConfig, SearchConfig
from evolution.dedup import candidate_sha
from evolution.redact import Redactor
from evolution.store import RunStore
from evolution.store_read import MutationRecord
from evolution.types import Program, TokenUsage
from kernelbot.confirm import NOT_MEASURED_INTERPRETER, StopRule
from kernelbot.confirm.report import CellReport, ColumnReport, ConfirmReport
from kernelbot.confirm.stoprule import estimate
from kernelbot.propose import Evidence, build_evidence
from kernelbot.propose.sections import NUMBER_FORMATS
from kernelbot.target.records import IntegrateRecord

REPO_ROOT = Path(__file__).resolve().parents[3]
SILU_TASK = REPO_ROOT / "examples" / "tasks" / "silu_and_mul"
SILU_CANDIDATE = SILU_TASK / "candidates" / "silu_and_mul_triton.py"
FUNCTION = "minisglang.layers.activation:SiluAndMul.forward_native"
OP_SLUG = "silu-and-mul-forward-native"


def integration_record() -> IntegrateRecord:
    """The integrate stage's record of the example's SiluAndMul change."""
    return IntegrateRecord(
        worktree="worktree",
        op_slug=OP_SLUG,
        kernel_module=Path("minisglang/layers/kernels/silu_and_mul_triton.py"),
        test_file=Path("tests/test_silu_and_mul_triton.py"),
        touched=(Path("minisglang/layers/activation.py"),),
        envelope=(
            "x is a CUDA tensor",
            "x.dtype is bfloat16 or float32",
            "x is contiguous",
            "x.shape[-1] is even",
        ),
        test_command=("python", "-m", "pytest", "-q", "tests/test_silu_and_mul_triton.py"),
        formatter="isort 5.13.2, black 24.8.0 (as .pre-commit-config.yaml pins them)",
    )


@dataclass(frozen=True)
class ProfileStandIn:
    name: str = "example"
    template: str = "example"
    title: str = "{summary}"
    human_steps: tuple[str, ...] = ()
    fork_remote: str = "fork"
    api_url: str = "https://api.github.com"
    repo_url: str = "https://github.com/upstream/engine"

    def pr_title(self, summary: str) -> str:
        return self.title.format(summary=summary)


BASE_SHA = "3f2a9c41d0e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4"


def evidence_for(
    tmp_path: Path,
    *,
    gpu: bool,
    profile: ProfileStandIn | None = None,
    current: str = "missing",
    **verify: bool,
) -> Evidence:
    source = SILU_CANDIDATE.read_text()
    result = gpu_result(source) if gpu else interpret_result(source)
    search = make_search(tmp_path / ("search-gpu" if gpu else "search-cpu"), result, source)
    return build_evidence(
        search_dir=search,
        task_dir=SILU_TASK,
        profile=profile or ProfileStandIn(),
        integration=integration_record(),
        verify=verify_content(e2e_measured=gpu, **verify),
        repo_url="https://github.com/example/minisglang",
        base_sha=BASE_SHA,
        base_branch="main",
        function=FUNCTION,
        op_slug=OP_SLUG,
        confirm=gpu_confirmation(current) if gpu else cpu_confirmation(),
        search_s=742.4,
    )


RULE = StopRule(min_processes=3, max_processes=10, confidence=0.975)
NO_CURRENT = "cannot import sgl_kernel: ModuleNotFoundError: No module named 'sgl_kernel'"


def _cell(case: str, params: dict[str, Any], regime: str, speedups: list[float], ref_us: float) -> CellReport:
    """A cell as kernelbot.confirm records it, its figures computed by the real stop rule."""
    est = estimate(speedups, RULE, regime=regime)
    verdict = est.verdict if est.verdict != "undecided" else "not shown"
    return CellReport(
        case, params, regime, est.speedups, est.pooled, est.lower, est.upper, est.cv, verdict,
        baseline_us=ref_us, kernel_us=ref_us / est.pooled,
    )  # fmt: skip


T1 = {"tokens": 1, "d": 2048, "dtype": "bfloat16"}
T16 = {"tokens": 16, "d": 1792, "dtype": "float32"}


def gpu_confirmation(current: str = "missing") -> ConfirmReport:
    """A confirmation on the H200 as kernelbot.confirm writes it: eager and torch.compile columns, the current
    path missing ("missing"), slower than the kernel ("slower") or faster than it ("faster")."""
    eager = ColumnReport(
        "eager", "eager", "eager PyTorch (the original code)", True, processes=3,
        cells=(
            _cell("t1_d2048_bf16", T1, "graph", [1.391, 1.402, 1.396], 5.61),
            _cell("t1_d2048_bf16", T1, "wall", [1.02, 0.97, 1.06], 21.3),
            _cell("t16_d1792_fp32", T16, "graph", [1.012, 1.031, 1.024], 6.02),
            _cell("t16_d1792_fp32", T16, "wall", [1.018, 1.005, 1.046], 22.1),
        ),
    )  # fmt: skip
    compiled = ColumnReport(
        "compile", "compile", "torch.compile of the original code (default mode, dynamic=False)", True,
        processes=3,
        cells=(
            _cell("t1_d2048_bf16", T1, "graph", [1.112, 1.118, 1.109], 4.49),
            _cell("t16_d1792_fp32", T16, "graph", [0.951, 0.948, 0.955], 5.59),
        ),
    )  # fmt: skip
    if current == "missing":
        cur = ColumnReport("current", "", "the engine's current path", False, reason=NO_CURRENT)
    else:
        speed = [1.21, 1.22, 1.215] if current == "faster" else [0.91, 0.92, 0.915]
        cur = ColumnReport(
            "current", "call:sgl_kernel:silu_and_mul", "the engine's current path `sgl_kernel:silu_and_mul`",
            True, processes=3,
            cells=(
                _cell("t1_d2048_bf16", T1, "graph", speed, 4.88),
                _cell("t16_d1792_fp32", T16, "graph", [1.11, 1.12, 1.115], 5.02),
            ),
        )  # fmt: skip
    return ConfirmReport(
        measured=True, reason="", backend="triton-cuda", device="NVIDIA H200", kernel_sha="abc",
        regimes=("graph", "wall"),
        rule={"min_processes": 3, "max_processes": 10, "confidence": 0.975,
              "spread_floor": {"graph": RULE.graph_spread_floor, "wall": RULE.wall_spread_floor}},
        columns=(eager, compiled, cur), wall_s=41.7,
    )  # fmt: skip


def cpu_confirmation() -> ConfirmReport:
    """What the confirmation writes under Triton's interpreter: one process per column, no figures."""
    return ConfirmReport(
        measured=False, reason=NOT_MEASURED_INTERPRETER, backend="triton-interpret", device="cpu",
        kernel_sha="abc", regimes=("graph", "wall"),
        rule={"min_processes": 3, "max_processes": 10, "confidence": 0.975},
        columns=(
            ColumnReport("eager", "eager", "eager PyTorch (the original code)", True, processes=1),
            ColumnReport("compile", "compile", "torch.compile of the original code", True, processes=1),
            ColumnReport("current", "", "the engine's current path", False, reason=NO_CURRENT),
        ),
        wall_s=12.3,
    )  # fmt: skip


def _timing(
    ref_us: float, cand_us: float, speedup: float, low: float, high: float, claim: float | None
) -> RegimeTiming:
    return RegimeTiming(
        reference=TimingStats(median_us=ref_us, cv=0.0123, samples=200),
        candidate=TimingStats(median_us=cand_us, cv=0.0087, samples=200),
        speedup=speedup,
        ci_low=low,
        ci_high=high,
        claim_low=claim,
    )


def gpu_result(source: str) -> EvalResult:
    cases = (
        CaseResult(
            "t1_d2048_bf16",
            {"tokens": 1, "d": 2048, "dtype": "bfloat16"},
            True,
            0.0039,
            0.0071,
            timings={
                "graph": _timing(5.61, 4.02, 1.3955, 1.3312, 1.4487, 1.3279),
                "wall": _timing(21.3, 20.9, 1.0191, 0.9733, 1.0612, 0.9637),
            },
        ),
        CaseResult(
            "t16_d1792_fp32",
            {"tokens": 16, "d": 1792, "dtype": "float32"},
            True,
            1.9e-06,
            3.3e-06,
            timings={
                "graph": _timing(6.02, 5.87, 1.0256, 0.9841, 1.0702, 0.9816),
                "wall": _timing(22.1, 21.7, 1.0184, 1.0052, 1.0456, 0.9953),
            },
        ),
        CaseResult(
            "hidden1",
            {"tokens": 3, "d": 2048, "dtype": "bfloat16"},
            True,
            0.0041,
            0.0069,
            timings={"graph": _timing(5.77, 4.11, 1.4039, 1.3508, 1.4622, None)},  # too few pairs
            hidden=True,
        ),
    )
    return EvalResult(
        task="silu_and_mul",
        candidate_sha=candidate_sha(source, "silu_and_mul"),
        backend="triton-cuda",
        regime="graph",
        stage=Stage.TIMING,
        passed=True,
        correct=True,
        score=1.2671,
        speedup=1.2671,
        speedup_ci=(1.1834, 1.3377),
        cases=cases,
        hardware=Hardware(
            backend="triton-cuda",
            device="NVIDIA H200",
            driver="570.124.06",
            torch="2.11.0+cu128",
            triton="3.6.0",
            python="3.12.3",
            runtime="12.8",
        ),
    )


def interpret_result(source: str) -> EvalResult:
    cases = (
        CaseResult("t1_d2048_bf16", {"tokens": 1, "d": 2048, "dtype": "bfloat16"}, True, 0.0662, 0.0078),
        CaseResult("t16_d1792_fp32", {"tokens": 16, "d": 1792, "dtype": "float32"}, True, 1.86e-06, 2.1e-06),
        CaseResult(
            "t256_d14336_bf16",
            {"tokens": 256, "d": 14336, "dtype": "bfloat16"},
            False,
            skipped="7340032 input elements > interpret_max_numel 2097152",
        ),
        CaseResult(
            "hidden1", {"tokens": 3, "d": 2048, "dtype": "bfloat16"}, True, 0.0606, 0.0079, hidden=True
        ),
    )
    return EvalResult(
        task="silu_and_mul",
        candidate_sha=candidate_sha(source, "silu_and_mul"),
        backend="triton-interpret",
        regime="graph",
        stage=Stage.CORRECTNESS,
        passed=True,
        correct=True,
        score=1.0,
        cases=cases,
        hardware=Hardware(
            backend="triton-interpret",
            device="cpu",
            torch="2.13.0+cpu",
            triton="3.9.0",
            python="3.11.7",
            runtime="triton interpreter",
        ),
    )


def make_search(search_dir: Path, result: EvalResult, source: str, *, elapsed_s: float = 742.4) -> Path:
    """A real run store with a seed (judged worse) and an LLM child (the winner) judged as `result`."""
    task = load_task(SILU_TASK)
    llm = (
        LLMEndpoint(model="deepseek-chat", base_url="http://127.0.0.1:1/v1", api_key_env="KB_TEST_LLM_KEY"),
    )
    config = SearchConfig(mutation=MutationConfig(llm=llm))
    seed_source = source + "\n_SEED_VARIANT = True\n"  # other code: the seed the run started from
    with RunStore.create(search_dir, task, config, Redactor()) as store:
        seed = Program(
            "p-seed", seed_source, candidate_sha(seed_source, "silu_and_mul"), None, "seed:file", 0, 0
        )
        store.add_pending(seed)
        store.record_evaluation(seed.id, result.with_updates(score=0.5, candidate_sha=seed.sha))
        child = Program(
            "p-child", source, candidate_sha(source, "silu_and_mul"), seed.id, "llm:deepseek-chat", 0, 1
        )
        store.record_mutation(
            MutationRecord(
                phase="evolve",
                iteration=1,
                operator="llm:deepseek-chat",
                outcome="child",
                parent_id=seed.id,
                usage=TokenUsage(prompt_tokens=1843, completion_tokens=612, cost_usd=0.0031),
                child=child,
            )
        )
        store.record_evaluation(child.id, result)
    (search_dir / "summary.json").write_text(json.dumps({"elapsed_s": elapsed_s}))
    return search_dir


def verify_content(*, e2e_measured: bool, claimed: bool = True) -> dict[str, Any]:
    """What kernelbot.verify writes to verify.json (its to_dict())."""
    command = ["python", "-m", "pytest", "-q", "tests/test_layers.py", "tests/test_silu_and_mul_triton.py"]
    tests = {
        "command": command,
        "files": ["tests/test_silu_and_mul_triton.py", "tests/test_layers.py"],
        "before": {
            "command": command,
            "exit_code": 1,
            "passed": 11,
            "failed": 1,
            "skipped": 0,
            "failures": ["tests/test_layers.py::test_rope_cache"],
            "duration_s": 3.2,
            "log": "",
            "note": "",
        },
        "after": {
            "command": command,
            "exit_code": 1,
            "passed": 17,
            "failed": 1,
            "skipped": 2,
            "failures": ["tests/test_layers.py::test_rope_cache"],
            "duration_s": 4.1,
            "log": "",
            "note": "",
        },
        "new_failures": [],
        "preexisting_failures": ["tests/test_layers.py::test_rope_cache"],
        "fixed": [],
    }
    if not e2e_measured:
        e2e = {
            "measured": False,
            "reason": "no GPU on this machine: both sides would run the same PyTorch code",
            "command": ["python", "benchmarks/throughput.py", "--json"],
            "cwd": "",
            "metric": "tokens_per_s",
            "unit": "tok/s",
            "higher_is_better": True,
            "runs": 0,
            "before": [],
            "after": [],
        }
    else:
        before = [10412.3, 10388.9, 10455.0, 10401.7, 10430.2]
        if claimed:
            after, mean_after, delta, low, high = (
                [10833.1, 10790.6, 10871.4, 10812.9, 10849.5],
                10831.5,
                3.973,
                3.61,
                4.42,
            )
        else:
            after, mean_after, delta, low, high = (
                [10455.1, 10371.2, 10490.8, 10398.5, 10442.0],
                10431.52,
                0.133,
                -0.31,
                0.58,
            )
        e2e = {
            "measured": True,
            "reason": "",
            "command": ["python", "benchmarks/throughput.py", "--json"],
            "cwd": "",
            "metric": "tokens_per_s",
            "unit": "tok/s",
            "higher_is_better": True,
            "runs": 5,
            "order": ["base", "change"] * 5,
            "before": before,
            "after": after,
            "logs": [],
            "means": {"before": 10417.62, "after": mean_after},
            "stdev": {"before": 25.6, "after": 31.2},
            "cv": {"before": 0.002457, "after": 0.002881},
            "delta_pct": delta,
            "ci_pct": [low, high],
            "confidence": 0.95,
            "method": "welch-t",
        }
    return {"schema": 1, "ok": True, "refusal": "", "tests": tests, "e2e": e2e}


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_HEXISH = re.compile(r"\b[0-9a-f]{7,64}\b")


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def unexplained_numbers(body: str, evidence_json: str) -> list[str]:
    """The numbers in `body` that evidence.json does not hold: each must be an evidence number in one of the
    body's display formats, or a number written inside one of the evidence's strings (names, versions,
    parameters). Hex prefixes of the evidence's shas and hashes count as those strings."""
    leaves = list(_leaves(json.loads(evidence_json)))
    strings = [v for v in leaves if isinstance(v, str)]
    numbers = [v for v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)]
    allowed = {token for text in strings for token in _NUMBER.findall(text)}
    allowed |= {fmt(float(n)) for n in numbers for fmt in NUMBER_FORMATS}
    allowed |= {str(n) for n in numbers if isinstance(n, int)}
    text = _HEXISH.sub(lambda m: "" if any(s.startswith(m.group(0)) for s in strings) else m.group(0), body)
    return [token for token in _NUMBER.findall(text) if token not in allowed]
