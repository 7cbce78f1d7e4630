"""evolution.writers.tracing: the tracing subprocess both writers start (report read back, a crash's stderr
kept, a time limit that kills it), and the return-value structure both record."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
import torch

from evolution.writers.inductor.capture import CaptureError
from evolution.writers.tracing.errors import TraceError
from evolution.writers.tracing.launch import run_tracer
from evolution.writers.tracing.results import result_structure

TRACER = """
    import argparse, sys, time
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("--mode")
    parser.add_argument("--out")
    options = parser.parse_args()
    if options.mode == "hang":
        time.sleep(60)
    if options.mode == "crash":
        sys.exit("the tracer broke on " + options.task)
    open(options.out, "w").write('{"mode": "%s"}' % options.mode)
"""


def _trace(tmp_path: Path, mode: str, timeout_s: float = 120.0):
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    (task / "fake_tracer.py").write_text(textwrap.dedent(TRACER))
    workdir = tmp_path / f"work-{mode}"
    workdir.mkdir()
    return asyncio.run(
        run_tracer(
            "fake_tracer",
            task,
            workdir,
            what="a test tracer",
            timeout_s=timeout_s,
            args=("--mode", mode),
            env={"PYTHONPATH": str(task)},  # the fake tracer lives in the (read-only) task folder
        )
    )


def test_the_report_comes_back_and_a_crash_keeps_its_stderr(tmp_path: Path) -> None:
    done = _trace(tmp_path, "ok")
    assert (done.report, done.returncode, done.timed_out) == ('{"mode": "ok"}', 0, False)
    crashed = _trace(tmp_path, "crash")
    assert crashed.report is None and crashed.returncode == 1 and not crashed.timed_out
    assert "the tracer broke on" in crashed.stderr


def test_a_tracer_past_its_time_is_stopped(tmp_path: Path) -> None:
    done = _trace(tmp_path, "hang", timeout_s=2.0)
    assert done.timed_out and done.report is None and done.returncode is None


def test_both_writers_record_the_same_structure_with_their_own_constants() -> None:
    x, y = torch.ones(2), torch.zeros(2)
    out = torch.ones(3)
    value = (out, {"k": y, "n": None}, [3, "s"])
    fusion = result_structure(value, [out], {"x": x, "y": y})
    assert fusion == {
        "tuple": [
            {"out": 0},
            {"dict": [["k", {"arg": "y"}], ["n", {"const": "None"}]]},
            {"list": [{"const": "3"}, {"const": "'s'"}]},
        ]
    }
    with pytest.raises(CaptureError, match="returns a int, which kernelbot cannot rebuild"):
        result_structure(
            value, [out], {"x": x, "y": y}, constants=(bool, str), error=CaptureError, who="kernelbot"
        )
    with pytest.raises(TraceError, match="neither a graph output nor an argument"):
        result_structure(torch.ones(1), [out], {"x": x})
