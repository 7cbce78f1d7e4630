"""Builders of the runs the report is tested on.

- a real `kernelbot evolve` on the Triton interpreter (a small SiLU-and-mul task, three seeds: a correct one
  with literal launch parameters for launch tuning to move, one the correctness stage rejects, one the static
  checks reject), SIGKILLed mid-search, copied as it was left, then resumed to the end;
- `kernelbot evolve` with a scripted loopback LLM endpoint (tests/evolution/openai_fake.py) and the marker-
  judging executor of tests/evolution/search_fakes.py, so LLM steps (and a stand-in for the Inductor seed,
  which needs a GPU) appear in the store with timings in both regimes;
- a `kernelbot target` run directory with what only a GPU run has (a measured end-to-end benchmark): the
  files in their documented shapes (target.toml, verify.json as kernelbot.verify writes it on a GPU) and the
  PR bundle written by kernelbot.propose itself from the LLM run's store.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tomli_w

REPO = Path(__file__).resolve().parents[3]
SILU = REPO / "examples" / "tasks" / "silu_and_mul"
DATA = Path(__file__).resolve().parent / "data"
SEEDS = (
    REPO / "tests" / "evolution" / "data" / "silu_and_mul_tunable.py",
    DATA / "silu_no_silu.py",
    DATA / "silu_torch_host.py",
)
SILU_SMALL_TOML = """\
name = "silu_small"
entry = "silu_and_mul"
regime = "graph"
dynamic = ["tokens"]
seeds = 1

[[cases]]
name = "t2_d64_fp32"
tokens = 2
d = 64
dtype = "float32"

[[cases]]
name = "t1_d256_bf16"
tokens = 1
d = 256
dtype = "bfloat16"
"""
# Lighter judging than the defaults: the report is under test, not the evaluator's hidden-case and drift
# checks.
LIGHT_EVAL = "[eval]\nhidden_cases = 0\ndrift_calls = 1\n"
LLM_KEY_ENV = "KB_REPORT_TEST_LLM_KEY"
LLM_KEY = "sk-report-loopback-5f4e3d2c1b0a"


def make_silu_task(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("reference.py", "inputs.py"):
        shutil.copy(SILU / name, root / name)
    (root / "task.toml").write_text(SILU_SMALL_TOML)
    return root


def evolve_argv(task: Path, run: Path, *extra: str) -> list[str]:
    config = run.parent / "light.toml"
    config.write_text(LIGHT_EVAL)
    argv = [sys.executable, "-m", "kernelbot.cli", "evolve", str(task), "--out", str(run)]
    argv += ["--config", str(config), "--backend", "triton-interpret", "--workers-per-device", "1"]
    argv += ["--no-inductor-seed", "--no-fusion-seed", "--iterations", "2", "--rng-seed", "7"]
    for seed in SEEDS:
        argv += ["--seed", str(seed)]
    return [*argv, *extra]


def _judged_and_pending(db: Path) -> tuple[int, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        judged = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        pending = conn.execute("SELECT COUNT(*) FROM programs WHERE status = 'pending'").fetchone()[0]
        return int(judged), int(pending)
    finally:
        conn.close()


def kill_mid_search(argv: list[str], run: Path, log: Path, timeout_s: float = 240.0) -> None:
    """Start the search and SIGKILL it (its whole process group) once one candidate is judged while
    another waits: the store then holds a finished evaluation and a pending one."""
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and proc.poll() is None:
                if (run / "run.sqlite").is_file():
                    with contextlib.suppress(sqlite3.OperationalError):  # the schema is being moved in
                        judged, pending = _judged_and_pending(run / "run.sqlite")
                        if judged and pending:
                            break
                time.sleep(0.2)
            assert proc.poll() is None, f"the search ended before it could be killed:\n{log.read_text()}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def copy_run(src: Path, dst: Path) -> Path:
    """A run directory as it is now (the store with its WAL), leaving the reports out (links stay links)."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("report*.html"))
    return dst


# --- the LLM run ----------------------------------------------------------------------------------------

_CURRENT = re.compile(r"## Current program.*?```python\n(.*?)```", re.DOTALL)
_SCORE = re.compile(r"^SCORE = ([0-9.]+)$", re.MULTILINE)
_BLOCK = re.compile(r"# EVOLVE-BLOCK-START\n(.*?)# EVOLVE-BLOCK-END", re.DOTALL)


def llm_behaviour(step: list[int]):
    """An answer to whatever parent the prompt shows, in the format it asks for (an edit, or the whole
    EVOLVE-BLOCK): mostly raising its SCORE marker by a little more than 0.25 (never the same child twice);
    the third answer breaks it (the child fails at correctness), the fifth is no answer at all and quotes
    the key (the store masks it)."""

    def answer(body: dict[str, Any]) -> Any:
        from openai_fake import Reply, diff_answer, rewrite_answer

        step[0] += 1
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        parent = _CURRENT.search(text)
        score = _SCORE.search(parent.group(1)) if parent else None
        if parent is None or score is None or step[0] == 5:
            return Reply(f"I cannot edit this; my key is {LLM_KEY}.", prompt_tokens=90, completion_tokens=12)
        old = score.group(0) + "\n"
        new = (
            'FAIL = "correctness"\n'
            if step[0] == 3
            else f"SCORE = {float(score.group(1)) + 0.25 + 0.01 * step[0]:.2f}\n"
        )
        if "single ```python code block" in text:  # a rewrite of the block was asked for
            block = _BLOCK.search(parent.group(1))
            assert block is not None
            return Reply(rewrite_answer(block.group(1).replace(old, new), "Rewrite the loop."))
        return Reply(diff_answer(old, new, "Vectorise the loads."), prompt_tokens=300, completion_tokens=80)

    return answer


# --- the target run -------------------------------------------------------------------------------------

PATCH = """\
diff --git a/minisglang/layers/activation.py b/minisglang/layers/activation.py
--- a/minisglang/layers/activation.py
+++ b/minisglang/layers/activation.py
@@ -1,3 +1,5 @@
+from minisglang.layers.kernels.silu_and_mul_triton import silu_and_mul_triton
+
 class SiluAndMul:
     def forward_native(self, x):
-        return silu(x[..., :d]) * x[..., d:]
+        return silu_and_mul_triton(x)
"""


def write_target_state(run: Path, stages: dict[str, dict[str, Any]], created_at: float) -> None:
    """RUN/target.toml as kernelbot.target writes it (schema 1)."""
    state = {
        "schema": 1,
        "profile": "example",
        "function": "minisglang.layers.activation:SiluAndMul.forward_native",
        "created_at": created_at,
        "repo": {
            "source": "example",
            "path": "upstream",
            "base_commit": "3f2a9c41d0e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4",
            "branch": "main",
        },
        "stages": stages,
    }
    (run / "target.toml").write_text(tomli_w.dumps(state))


def stage(status: str, start: float, end: float | None, **outcome: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"status": status, "started_at": start, "outcome": outcome}
    if end is not None:
        record["finished_at"] = end
    return record


def make_target_run(run: Path, search: Path, task: Path) -> Path:
    """A finished target run (extract .. propose) whose search is `search` and whose bundle is real."""
    from proposal_fixtures import (
        BASE_SHA,
        FUNCTION,
        OP_SLUG,
        ProfileStandIn,
        integration_record,
        verify_content,
    )

    from kernelbot.propose import build_evidence, write_bundle

    run.mkdir(parents=True)
    copy_run(search, run / "search")
    shutil.copytree(task, run / "task")
    verify = verify_content(e2e_measured=True)
    (run / "verify.json").write_text(json.dumps(verify, indent=2))
    profile = ProfileStandIn()
    evidence = build_evidence(
        search_dir=run / "search",
        task_dir=run / "task",
        profile=profile,
        integration=integration_record(),
        verify=verify,
        repo_url="https://github.com/example/minisglang",
        base_sha=BASE_SHA,
        base_branch="main",
        function=FUNCTION,
        op_slug=OP_SLUG,
    )
    write_bundle(run, evidence, profile, PATCH)
    t0 = time.time() - 900
    write_target_state(
        run,
        {
            "extract": stage("done", t0, t0 + 4, task_dir="task", entry="silu_and_mul", inputs=1),
            "evolve": stage("done", t0 + 5, t0 + 600, search_dir="search", evaluations=12),
            "integrate": stage("done", t0 + 601, t0 + 640, worktree="worktree", op_slug=OP_SLUG),
            "verify": stage("done", t0 + 641, t0 + 820, report="verify.json", ok=True),
            "propose": stage("done", t0 + 821, t0 + 830, bundle="pr", branch=f"kernelbot/{OP_SLUG}"),
        },
        t0,
    )
    return run


def make_stopped_target_run(run: Path, killed_search: Path, task: Path) -> Path:
    """A target run stopped during its search: extract done, evolve recorded as running, nothing after."""
    run.mkdir(parents=True)
    copy_run(killed_search, run / "search")
    shutil.copytree(task, run / "task")
    t0 = time.time() - 120
    write_target_state(
        run,
        {
            "extract": stage("done", t0, t0 + 3, task_dir="task", entry="silu_and_mul", inputs=1),
            "evolve": stage("running", t0 + 4, None),
        },
        t0,
    )
    return run


def make_report(run: Path, out: Path | None = None) -> str:
    """`kernelbot report RUN --out FILE` through the CLI; the page's text."""
    from kernelbot import exit_codes
    from kernelbot.cli import main

    out = out or run.parent / f"report-{run.name}.html"
    assert main(["report", str(run), "--out", str(out)]) == exit_codes.OK
    return out.read_text()
