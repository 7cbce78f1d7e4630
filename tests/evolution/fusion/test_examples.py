"""The bundled example tasks (examples/tasks/*: their references and inputs, never their candidates/) with
their first cases at a few tokens: seed:fusion writes a candidate from the reference alone and the evaluator
(the interpreter) finds it correct, hidden dynamic sizes included. The first three cases keep each task's
serving widths (hidden 4096/7168, 256 experts, 4K-token contexts) and its dtypes."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from readable import problems

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.task import load_task
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.types import MutationRequest
from evolution.writers.fusion.writer import FusionWriter

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judge():
    config = EvalConfig(backend="triton-interpret")
    pool = WorkerPool(config.backend, size=1, device_index=0, config=config, replace_workers=False)
    with pool:
        yield lambda task, source: pool.evaluate(
            task, Candidate(source=source, entry=task.entry), config=config
        )


def _shrunk(example: Path, root: Path) -> Path:
    """The example without candidates/, its first three cases at 2 or 3 rows."""
    root.mkdir(parents=True)
    for name in ("reference.py", "inputs.py"):
        shutil.copy(example / name, root / name)
    text = (example / "task.toml").read_text()
    original = load_task(example)
    lines = [text[: text.index("[[cases]]")].rstrip(), ""]
    for k, case in enumerate(original.cases[:3]):
        lines += ["[[cases]]", f'name = "{case.name}"']
        for key, value in case.params.items():
            if key in original.dynamic:
                value = 2 + k % 2
            lines.append(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value!r}")
        lines.append("")
    (root / "task.toml").write_text("\n".join(lines))
    return root


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file()))
def test_example_reaches_a_correct_fusion_seed(tmp_path: Path, judge, example: str) -> None:
    task = load_task(_shrunk(EXAMPLES / example, tmp_path / example))
    assert not (task.root / "candidates").exists()
    outcome = asyncio.run(FusionSeedMutator(FusionWriter()).mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    assert problems(outcome.child_source) == []  # the rules of a shippable module (readable.py)
    result = judge(task, outcome.child_source)
    assert result.correct, result.reason
