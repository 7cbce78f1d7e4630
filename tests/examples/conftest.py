"""Fixtures for the example-task tests.

`TaskHarness` runs a task's reference and one of its candidates on clones of the same inputs and compares
every output and every tensor argument with `evaluators.correctness.compare.compare_tensors` under
`evaluators.correctness.tolerances.tolerance_for`, honouring the task's [compare] options, so these tests and
the evaluator share one definition of "correct". Without a GPU the candidates run on Triton's interpreter
(tests/conftest.py sets TRITON_INTERPRET=1 before triton is imported).

Test modules reach these helpers only through fixtures (no `import conftest`): a module that sets
`TASK = "<name>"` gets `harness`, `candidate` (one per file in candidates/) and `small_case`; a test asking
for `task_name` runs once per example task.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from evaluators.correctness.compare import Comparison, compare_tensors
from evaluators.correctness.tolerances import tolerance_for
from evaluators.task import Task, load_task

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
TASKS_DIR = EXAMPLES_DIR / "tasks"
MINIREPO_DIR = EXAMPLES_DIR / "minirepo"
TASK_NAMES = ("decode_metadata", "moe_grouped_topk", "rmsnorm_residual", "silu_and_mul")
HAS_GPU = torch.cuda.is_available()
DEVICE = "cuda" if HAS_GPU else "cpu"
# These tests keep to smaller task cases on the interpreter so the directory runs in about a minute.
TEST_MAX_NUMEL = 200_000

_module_ids = itertools.count()


def case_numel(task_name: str, params: dict[str, Any]) -> int:
    """Number of input elements make_inputs builds for `params`, without building them."""
    if task_name == "decode_metadata":
        batch, ctx = int(params["batch"]), int(params["context_len"])
        pages = math.ceil(ctx / int(params["page_size"]))
        return (2 * batch + 1) * ctx + batch * pages + 2 * batch + (batch + 1) + batch + pages
    if task_name == "moe_grouped_topk":
        experts = int(params.get("num_experts", 256))
        return int(params["tokens"]) * experts + experts
    if task_name == "rmsnorm_residual":
        return (2 * int(params["tokens"]) + 1) * int(params["hidden"])
    if task_name == "silu_and_mul":
        return int(params["tokens"]) * 2 * int(params["d"])
    raise KeyError(task_name)


def small_case_names(task_name: str, limit: int = TEST_MAX_NUMEL) -> list[str]:
    task = load_task(TASKS_DIR / task_name)
    return [c.name for c in task.cases if case_numel(task_name, dict(c.params)) <= limit]


def import_file(path: Path) -> ModuleType:
    name = f"kb_example_{path.stem}_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def candidate_paths(task_name: str) -> list[Path]:
    return sorted((TASKS_DIR / task_name / "candidates").glob("*.py"))


def _clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def named_outputs(result: Any) -> dict[str, torch.Tensor]:
    if result is None:
        return {}
    if isinstance(result, torch.Tensor):
        return {"return": result}
    if isinstance(result, (tuple, list)):
        return {f"return[{i}]": r for i, r in enumerate(result)}
    raise TypeError(f"unexpected return type {type(result).__name__}")


@dataclass
class TaskHarness:
    task: Task
    reference: Callable[..., Any]
    make_inputs: Callable[[dict, int, str], tuple[tuple, dict]]

    @classmethod
    def load(cls, name: str) -> TaskHarness:
        task = load_task(TASKS_DIR / name)
        return cls(task, task.load_reference(), task.load_make_inputs())

    @property
    def arg_names(self) -> list[str]:
        return list(inspect.signature(self.reference).parameters)

    def inputs(self, params: dict[str, Any], seed: int = 0, device: str = DEVICE) -> tuple[tuple, dict]:
        args, kwargs = self.make_inputs(dict(params), seed, device)
        return tuple(args), dict(kwargs)

    def run(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[dict[str, torch.Tensor], tuple]:
        """Call `fn` on clones; return its named outputs and the (possibly mutated) argument clones."""
        call_args = tuple(_clone(a) for a in args)
        call_kwargs = {k: _clone(v) for k, v in kwargs.items()}
        outputs = named_outputs(fn(*call_args, **call_kwargs))
        return outputs, call_args

    def _canonical(self, outputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Sort rows of every unordered key (top-k ids) and carry its value outputs along."""
        outputs = dict(outputs)
        for unordered in self.task.compare.unordered:
            order = outputs[unordered.key].argsort(dim=-1, stable=True)
            for name in (unordered.key, *unordered.values):
                outputs[name] = outputs[name].gather(-1, order)
        return outputs

    def compare(self, expected: dict[str, torch.Tensor], actual: dict[str, torch.Tensor]) -> Comparison:
        assert expected.keys() == actual.keys(), f"outputs {sorted(actual)} != {sorted(expected)}"
        expected, actual = self._canonical(expected), self._canonical(actual)
        verdict = Comparison(ok=True)
        for name, want in expected.items():
            verdict = verdict.merged(
                compare_tensors(
                    want,
                    actual[name],
                    tolerance_for(want.dtype, self.task),
                    name,
                    mismatch_fraction=self.task.compare.mismatch_fraction,
                )
            )
        return verdict

    def check(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Comparison:
        """Compare `fn` with the reference: every output and every tensor argument afterwards."""
        ref_out, ref_args = self.run(self.reference, args, kwargs)
        out, cand_args = self.run(fn, args, kwargs)
        expected = dict(ref_out)
        actual = dict(out)
        names = self.arg_names
        for i, (want, got) in enumerate(zip(ref_args, cand_args, strict=True)):
            if isinstance(want, torch.Tensor):
                label = names[i] if i < len(names) else f"args[{i}]"
                expected[label], actual[label] = want, got
        return self.compare(expected, actual)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test module names its task in `TASK`; `small_case` runs over the task's cases that fit the
    interpreter budget (all cases on a GPU) and `candidate_path` over every file in its candidates/.
    Elsewhere, `task_name` runs over all example tasks."""
    task_name = getattr(metafunc.module, "TASK", None)
    if task_name is None:
        if "task_name" in metafunc.fixturenames:
            metafunc.parametrize("task_name", TASK_NAMES, scope="module")
        return
    if "small_case" in metafunc.fixturenames:
        names = small_case_names(task_name, limit=10**12 if HAS_GPU else TEST_MAX_NUMEL)
        metafunc.parametrize("small_case", names)
    if "candidate_path" in metafunc.fixturenames:
        paths = candidate_paths(task_name)
        metafunc.parametrize("candidate_path", paths, ids=[p.stem for p in paths], scope="module")


@pytest.fixture(scope="module")
def harness(request: pytest.FixtureRequest) -> TaskHarness:
    return TaskHarness.load(request.module.TASK)


@pytest.fixture(scope="module")
def candidate(harness: TaskHarness, candidate_path: Path) -> Callable[..., Any]:
    return getattr(import_file(candidate_path), harness.task.entry)


@pytest.fixture(scope="session")
def device() -> str:
    return DEVICE


@pytest.fixture(scope="module")
def task_harness(task_name: str) -> TaskHarness:
    return TaskHarness.load(task_name)


@pytest.fixture(scope="session")
def numel_of() -> Callable[[str, dict[str, Any]], int]:
    return case_numel


@pytest.fixture(scope="session")
def candidate_files() -> Callable[[str], list[Path]]:
    return candidate_paths


@pytest.fixture(scope="session")
def load_harness() -> Callable[[str], TaskHarness]:
    return TaskHarness.load


@pytest.fixture(scope="session")
def minirepo_dir() -> Path:
    return MINIREPO_DIR
