"""`kernelbot evolve` for real on the smallest example task: the Triton interpreter judges, the default
no-LLM operators mutate. Slow on a 2-core machine (each evaluation is a fresh worker running the kernels
in numpy), hence few iterations, and the task's two smallest cases only (tests/example_tasks.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbot import exit_codes
from kernelbot.cli import main
from tests.example_tasks import SMALL_CASES, silu_and_mul_task

REPO = Path(__file__).resolve().parents[3]
SILU = REPO / "examples" / "tasks" / "silu_and_mul"
# CPU: the interpreter, one warm worker, no Inductor seed (torch.compile emits C++ on CPU, not Triton).
# The extra seed has literal launch parameters, so launch tuning has something to move (the task's own
# candidate derives them from the shape).
TUNABLE_SEED = REPO / "tests" / "evolution" / "data" / "silu_and_mul_tunable.py"
CPU_FLAGS = [
    "--backend",
    "triton-interpret",
    "--workers-per-device",
    "1",
    "--no-inductor-seed",
    "--no-fusion-seed",
]
CPU_FLAGS += ["--seed", str(TUNABLE_SEED)]
# Lighter judging than the defaults (no perturbed hidden case, one drift call): the search is under test here,
# the evaluator's own tests cover those checks.
LIGHT_EVAL = "[eval]\nhidden_cases = 0\ndrift_calls = 1\n"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SILU.is_dir(), reason="examples/tasks/silu_and_mul is not there"),
]


def evolve_args(run: Path, *extra: str) -> list[str]:
    config = run.parent / "light.toml"
    config.write_text(LIGHT_EVAL)
    task = silu_and_mul_task(run.parent / "task", keep=SMALL_CASES, candidates=True)
    return ["evolve", str(task), "--out", str(run), "--config", str(config), *CPU_FLAGS, *extra]


def test_full_run_then_best_and_exports(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    assert main(evolve_args(run, "--iterations", "2", "--json")) == exit_codes.OK
    summary = json.loads(capsys.readouterr().out)
    assert summary["stop_reason"].startswith(("iterations", "exhausted"))
    best = summary["best"]
    assert best is not None and best["passed"] and best["backend"] == "triton-interpret"
    assert best["score"] == 1.0  # the interpreter checks correctness, it never claims a speedup
    assert {c["name"] for c in best["cases"]} >= {"t1_d2048_bf16", "t16_d1792_fp32"}
    assert summary["iterations"] == 2 and summary["evaluations"] >= 3  # two seeds, at least one child
    with sqlite3.connect(run / "run.sqlite") as conn:
        operators = {r[0] for r in conn.execute("SELECT operator FROM programs")}
    assert operators >= {"seed:file", "tune:launch"}
    assert (run / "growth.csv").is_file() and (run / "summary.json").is_file()

    assert main(["best", str(run), "--out", str(tmp_path / "winner.py")]) == exit_codes.OK
    assert "def silu_and_mul" in (tmp_path / "winner.py").read_text()
    for fmt in ("sft", "grpo"):
        out = tmp_path / f"{fmt}.jsonl"
        assert main(["export", str(run), "--format", fmt, "--out", str(out)]) == exit_codes.OK
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        if fmt == "sft":  # the seed file is a correct first translation
            assert rows and rows[0]["kind"] == "translation" and "def silu_and_mul" in rows[0]["code"]
        for row in rows:
            assert row["task"] == "silu_and_mul"


def _snapshot(db: Path) -> tuple[dict[str, tuple[str, str]], set[str], int]:
    """(evaluations by program id -> (sha, result json), pending program ids, evolve mutations)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        evals = {
            pid: (sha, rj)
            for pid, sha, rj in conn.execute("SELECT program_id, sha, result_json FROM evaluations")
        }
        pending = {r[0] for r in conn.execute("SELECT id FROM programs WHERE status = 'pending'")}
        mutations = conn.execute("SELECT COUNT(*) FROM mutations WHERE phase = 'evolve'").fetchone()[0]
        return evals, pending, int(mutations)
    finally:
        conn.close()


def test_sigkill_mid_run_then_resume_loses_nothing(tmp_path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "kernelbot.cli", *evolve_args(run, "--iterations", "2")]
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    db = run / "run.sqlite"
    deadline = time.monotonic() + 240
    before: tuple[dict, set, int] = ({}, set(), 0)
    try:
        # Kill once something is judged and a child is dispatched but not judged yet (or the run ends).
        while time.monotonic() < deadline and proc.poll() is None:
            if db.is_file():
                with contextlib.suppress(sqlite3.OperationalError):  # the schema is being moved into place
                    before = _snapshot(db)
                if before[0] and before[1]:
                    break
            time.sleep(0.2)
        assert proc.poll() is None, (
            f"the run ended before it could be killed:\n{(tmp_path / 'first.log').read_text()}"
        )
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    judged, pending, _ = _snapshot(db)  # what the kill left: everything committed is still there
    assert judged and set(before[0]) <= set(judged)

    resumed = subprocess.run([*cmd, "--resume", "--json"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads(resumed.stdout)
    after, still_pending, mutations = _snapshot(db)
    for pid, verdict in judged.items():  # nothing judged before the kill was lost or redone
        assert after[pid] == verdict
    shas = [sha for sha, _ in after.values()]
    assert len(shas) == len(set(shas)), "a candidate was evaluated twice"
    assert pending <= set(after), "children dispatched before the kill were judged after the resume"
    assert not still_pending
    assert mutations == 2 and summary["stop_reason"].startswith("iterations")
    assert summary["best"] is not None and summary["evaluations"] == len(after)
