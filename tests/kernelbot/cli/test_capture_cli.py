"""`kernelbot capture` on the bundled example engine: the command records the calls its benchmark makes and
writes a Task that replays them (the import hook itself is tested in tests/extractors/test_capture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.task import load_task
from kernelbot.cli import main

MINIREPO = Path(__file__).resolve().parents[3] / "examples" / "minirepo"


@pytest.mark.slow
@pytest.mark.skipif(not MINIREPO.is_dir(), reason="examples/minirepo is not in this checkout")
def test_capture_from_the_example_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "capture",
            "--repo",
            str(MINIREPO),
            "--function",
            "minisglang.layers.layernorm:RMSNorm.forward_native",
            "--max-calls",
            "2",
            "--out",
            str(tmp_path / "rms"),
            "--",
            "python",
            "benchmarks/throughput.py",
            "--batch",
            "2",
            "--steps",
            "2",
            "--warmup",
            "0",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "recorded 2 distinct call(s)" in printed
    task = load_task(tmp_path / "rms")
    assert {c.name for c in task.cases} >= {"call0", "captured:call0"}
    assert json.loads(json.dumps(task.source.qualname)) == "RMSNorm.forward_native"
