"""Every example task loads, is realistic enough to judge (inputs vary, outputs depend on them, small
cases exist for the interpreter), accepts perturbed serving sizes and ships candidates that keep the
contract."""

from __future__ import annotations

import ast

import pytest
import torch

from evaluators.candidate import find_evolve_block, parse_candidate
from evaluators.config import EvalConfig

EXPECTED_REGIME = {
    "decode_metadata": "wall",
    "moe_grouped_topk": "graph",
    "rmsnorm_residual": "graph",
    "silu_and_mul": "graph",
}
# Host code of a candidate may only allocate.
ALLOWED_TORCH_CALLS = {"empty", "empty_like", "empty_strided"}
# The evaluator skips interpreter cases above this many input elements (EvalConfig.interpret_max_numel).
INTERPRETER_MAX_NUMEL = EvalConfig().interpret_max_numel


@pytest.fixture(scope="module")
def smallest_case(task_harness, numel_of):
    return min(task_harness.task.cases, key=lambda c: numel_of(task_harness.task.name, dict(c.params)))


def tensors_of(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]


def test_task_toml_is_complete(task_harness):
    task = task_harness.task
    assert task.regime == EXPECTED_REGIME[task.name]
    assert task.source.repo.startswith("https://github.com/sgl-project/sglang")
    assert task.source.path.endswith(".py") and task.source.qualname and len(task.source.commit) == 40
    assert task.description and task.dynamic and len(task.cases) >= 5
    assert (task.root / "README.md").is_file()
    assert set(task.roofline_reads) <= set(task_harness.arg_names)
    for unordered in task.compare.unordered:
        assert unordered.key.startswith("return[")


def test_case_size_estimate_matches_the_inputs(task_harness, smallest_case, numel_of):
    args, kwargs = task_harness.inputs(dict(smallest_case.params), 0, "cpu")
    built = sum(t.numel() for t in tensors_of(args, kwargs))
    assert built == numel_of(task_harness.task.name, dict(smallest_case.params))


def test_at_least_two_cases_fit_the_interpreter(task_harness, numel_of):
    name = task_harness.task.name
    sizes = [numel_of(name, dict(c.params)) for c in task_harness.task.cases]
    assert sum(size <= INTERPRETER_MAX_NUMEL for size in sizes) >= 2


def test_inputs_are_deterministic_per_seed_and_vary_across_seeds(task_harness, smallest_case):
    params = dict(smallest_case.params)
    first = tensors_of(*task_harness.inputs(params, 0, "cpu"))
    again = tensors_of(*task_harness.inputs(params, 0, "cpu"))
    other = tensors_of(*task_harness.inputs(params, 1, "cpu"))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(first, other, strict=True) if a.shape == b.shape)


def test_no_input_is_constant(task_harness):
    for case in task_harness.task.cases[:2]:
        for tensor in tensors_of(*task_harness.inputs(dict(case.params), 0, "cpu")):
            if tensor.numel() > 1:
                assert tensor.unique().numel() > 1, f"{case.name}: a constant input tensor"


def test_reference_outputs_depend_on_the_inputs(task_harness, smallest_case):
    """Degenerate-task guard: outputs (and mutated arguments) change in most places from seed to seed."""
    params = dict(smallest_case.params) | {task_harness.task.dynamic[0]: 8}
    runs = []
    for seed in (0, 1):
        args, kwargs = task_harness.inputs(params, seed, "cpu")
        outputs, after = task_harness.run(task_harness.reference, args, kwargs)
        pairs = zip(args, after, strict=True)
        mutated = [b for a, b in pairs if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
        runs.append([*outputs.values(), *mutated])
    assert runs[0], "the reference neither returns nor mutates anything"
    for a, b in zip(*runs, strict=True):
        assert a.shape == b.shape and (a != b).float().mean() > 0.3


@pytest.mark.parametrize("size", [1, 3, 17])
def test_dynamic_keys_accept_any_positive_size(task_harness, smallest_case, size):
    task = task_harness.task
    for key in task.dynamic:
        params = dict(smallest_case.params) | {key: size}
        args, kwargs = task_harness.inputs(params, 2, "cpu")
        outputs, after = task_harness.run(task_harness.reference, args, kwargs)
        leading = {t.shape[0] for t in outputs.values()} or {after[0].shape[0]}
        assert leading == {size}


def test_candidates_follow_the_contract(task_harness, candidate_files):
    task = task_harness.task
    paths = candidate_files(task.name)
    assert any(p.name == f"{task.name}_triton.py" for p in paths)
    for path in paths:
        source = path.read_text()
        parse_candidate(source, task.entry, path)
        block = find_evolve_block(source)
        assert block is not None, f"{path.name} has no EVOLVE-BLOCK"
        assert "@triton.jit" in block.text and f"def {task.entry}(" in block.text
        before_block = "".join(source.splitlines(keepends=True)[: block.start_line])
        assert "import triton" in before_block  # imports stay above the block
        assert_host_code_only_allocates(ast.parse(source), task.entry, path.name)


def assert_host_code_only_allocates(tree: ast.Module, entry: str, where: str) -> None:
    launcher = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry)
    for node in ast.walk(launcher):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id in {"torch", "F"}:
                assert node.func.attr in ALLOWED_TORCH_CALLS, f"{where}: host calls torch.{node.func.attr}"
        assert not isinstance(node, (ast.Global, ast.Nonlocal)), f"{where}: keeps state across calls"
