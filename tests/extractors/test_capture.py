"""Capture (`kernelbot capture`): the import hook records real calls, and the Task replays them (the command
on the example engine: tests/kernelbot/cli/test_capture_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evaluators.errors import DegenerateTaskError
from evaluators.task import load_task
from extractors.capture import CaptureOptions, capture
from extractors.errors import ExtractionError
from tests.extractors.conftest import write_repo

SCALER = {
    "scaler/__init__.py": "",
    "scaler/ops.py": """
        import torch


        def scale_rows(x, idx, factor: float, bias=None):
            out = x[idx] * factor
            return out if bias is None else out + bias


        class Cache:
            def __init__(self, n):
                self.table = torch.arange(n, dtype=torch.float32) * 0.5

            def lookup(self, ids, offset: int = 0):
                return self.table[ids] + offset


        def lengths(seq_lens, delta: int):
            return seq_lens + delta
    """,
    "run.py": """
        import torch
        from scaler.ops import Cache, scale_rows

        g = torch.Generator().manual_seed(0)
        for rows in (4, 4, 8, 8, 16):
            x = torch.randn(rows, 32, generator=g)
            idx = torch.randperm(rows, generator=g)[: rows // 2]
            scale_rows(x, idx, 0.5)
        scale_rows(x, idx, 2.0, bias=torch.ones(32))
        cache = Cache(64)
        cache.lookup(torch.tensor([3, 1, 2]), offset=1)
        from scaler.ops import lengths

        lengths(torch.tensor([5, 9], dtype=torch.int32), 1)
    """,
}


@pytest.fixture
def scaler_repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "scaler", SCALER)


def test_records_distinct_calls_with_real_index_values(scaler_repo: Path, tmp_path: Path) -> None:
    summary, calls = capture(
        CaptureOptions(
            scaler_repo, "scaler.ops:scale_rows", ["python", "run.py"], max_calls=3, out=tmp_path / "task"
        )
    )
    # rows=4 twice is one signature; the first three distinct ones are kept.
    assert [c["call"] for c in calls] == ["call0", "call1", "call2"]
    assert calls[0]["arguments"]["x"]["shape"] == [4, 32]
    assert calls[2]["arguments"]["x"]["shape"] == [16, 32]
    task = load_task(tmp_path / "task")
    assert [c.name for c in task.cases] == [
        "call0",
        "call1",
        "call2",
        "captured:call0",
        "captured:call1",
        "captured:call2",
    ]
    blob = torch.load(tmp_path / "task" / "captured" / "call1.pt", weights_only=True)
    args, _ = task.make_inputs(task.case("call1"), 7, "cpu")
    assert torch.equal(args[1], blob["args"][1])  # index values are the recorded ones
    assert args[0].shape == blob["args"][0].shape and not torch.equal(args[0], blob["args"][0])
    assert args[2] == 0.5
    assert summary.probe is not None and summary.probe.ran


def test_method_calls_record_self_attributes(scaler_repo: Path, tmp_path: Path) -> None:
    summary, calls = capture(
        CaptureOptions(scaler_repo, "scaler.ops:Cache.lookup", ["python", "run.py"], out=tmp_path / "task")
    )
    assert calls[0]["arguments"]["table"]["shape"] == [64]
    task = load_task(tmp_path / "task")
    captured = task.case("captured:call0")
    args, kwargs = task.make_inputs(captured, 0, "cpu")
    assert torch.equal(task.load_reference()(*args, **kwargs), torch.tensor([2.5, 1.5, 2.0]))
    assert summary.built.attribute_params == {"table": "table"}


def test_integer_only_calls_are_refused_with_a_hint(scaler_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(DegenerateTaskError, match="describe its inputs with `kernelbot extract --spec`"):
        capture(CaptureOptions(scaler_repo, "scaler.ops:lengths", ["python", "run.py"], out=tmp_path / "t"))


def test_command_that_never_calls_the_target(scaler_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ExtractionError, match=r"no call of scaler\.ops:scale_rows was recorded"):
        capture(
            CaptureOptions(
                scaler_repo, "scaler.ops:scale_rows", ["python", "-c", "print('hi')"], out=tmp_path / "task"
            )
        )
    assert not (tmp_path / "task").exists()
