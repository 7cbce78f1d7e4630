"""`kernelbot evolve --llm` against the loopback OpenAI-compatible server, with the real LLM operator: priced
endpoints count cost and stop the run at its budget, the summary shows tokens and dollars per model, the seed
prompt carries the workers' GPU and versions, and the mutation prompt the roofline fractions. The executor is
the marker-judging fake (its workers report FAKE_HARDWARE) except where the real interpreter pool is meant."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
from openai_fake import Reply, diff_answer, rewrite_answer
from openai_fake import fake_openai as fake_openai  # the fixture
from search_fakes import FakeExecutor, make_tiny_task, program_source

from kernelbot import exit_codes
from kernelbot.cli import main

KEY_ENV = "KB_LLM_CLI_TEST_KEY"
SEED_ASK = "Write a first Triton implementation"
_PARENT_SCORE = re.compile(r"## Current program.*?^SCORE = ([0-9.]+)$", re.DOTALL | re.MULTILINE)


def improve(body: dict[str, Any]) -> Reply:
    """A first candidate when asked for one, else an edit raising the shown parent's score marker."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if SEED_ASK in prompt:
        first = rewrite_answer(program_source(1.1, body="x + x"))
        return Reply(first, prompt_tokens=120, completion_tokens=40)
    score = _PARENT_SCORE.search(prompt)
    assert score is not None, prompt
    old = score.group(1)
    edit = diff_answer(f"SCORE = {old}\n", f"SCORE = {float(old) + 0.5:.2f}\n")
    return Reply(edit, prompt_tokens=120, completion_tokens=40)


@pytest.fixture
def fake_executor(monkeypatch):
    made: list[FakeExecutor] = []

    def executor(config, eval_config):
        made.append(FakeExecutor())
        return made[-1]

    monkeypatch.setattr("evolution.search.make_executor", executor)
    return made


def search_config(tmp_path: Path, stop: str) -> Path:
    path = tmp_path / "search.toml"
    # The LLM alone mutates the best program, one request at a time: the arithmetic below is exact.
    path.write_text(
        f"[stop]\n{stop}\n\n[archive]\nislands = 1\n\n"
        "[sampling]\nexplore = 0\nexploit = 1\nweighted = 0\nexploit_top = 1\n\n"
        "[mutation]\nin_flight = 1\nrewrite_ratio = 0\n"
        "weights = { llm = 1, tune = 0, cross = 0, fusion = 0 }\n"
    )
    return path


def test_a_priced_endpoint_stops_the_run_at_its_cost_budget(
    tmp_path, fake_openai, fake_executor, monkeypatch, capsys
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-loopback-0123456789")
    server = fake_openai(default=improve, models=("fake-model",))
    task = make_tiny_task(tmp_path / "task", [program_source(1.0)])
    run = tmp_path / "run"
    # $1000 per million prompt tokens and $2000 per million completion tokens: 120 + 40 tokens cost $0.20.
    code = main(
        [
            "evolve", str(task), "--out", str(run), "--no-inductor-seed", "--no-fusion-seed",
            "--config", str(search_config(tmp_path, "iterations = 50\nmax_cost_usd = 0.5")),
            "--llm", f"fake-model@{server.url}#1,in=1000,out=2000", "--api-key-env", KEY_ENV,
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == exit_codes.OK, err
    # The seed ($0.20) and two mutations ($0.60 in all): the third crosses $0.50, and nothing more is asked.
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 3
    assert "stopped: cost budget: $0.6000 spent of $0.5000" in out
    assert "LLM fake-model: 3 answer(s), 360 prompt + 120 completion tokens, $0.6000" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stop_reason"].startswith("cost budget") and summary["iterations"] == 2
    assert summary["tokens"]["cost_usd"] == pytest.approx(0.6)
    assert summary["tokens"]["by_model"] == {
        "fake-model": {"requests": 3, "prompt": 360, "completion": 120, "cost_usd": pytest.approx(0.6)}
    }
    assert summary["best"]["score"] == pytest.approx(2.1)  # 1.1, then two edits of +0.5

    # The seed prompt, sent before anything was judged, names what the fake workers reported.
    (seed,) = [r for r in chats if SEED_ASK in r.prompt_text]
    assert "GPU: fake-gpu, 7 SMs, memory bandwidth 1234 GB/s" in seed.prompt_text
    assert "Triton 6.5.4, PyTorch 9.8.7" in seed.prompt_text and "unknown" not in seed.prompt_text
    # The mutation prompts feed back how close the parent came to the roofline (the fake: 10 us, floor 5 us).
    for mutation in (r for r in chats if r is not seed):
        assert "reaches 50% of the roofline (floor 5.00 us)" in mutation.prompt_text

    # A resume counts what the run already spent: the budget is spent, no request goes out.
    code = main(["evolve", str(task), "--out", str(run), "--resume", "--json"])
    out, _ = capsys.readouterr()
    assert code == exit_codes.OK
    assert json.loads(out)["stop_reason"].startswith("cost budget")
    assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 3


def test_an_unpriced_endpoint_costs_nothing_and_the_token_budget_still_counts(
    tmp_path, fake_openai, fake_executor, monkeypatch, capsys
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-loopback-0123456789")
    server = fake_openai(default=improve, models=("fake-model",))
    task = make_tiny_task(tmp_path / "task", [program_source(1.0)])
    config = search_config(tmp_path, "iterations = 50\nmax_tokens = 400\nmax_cost_usd = 0.01")
    code = main(
        [
            "evolve", str(task), "--out", str(tmp_path / "run"), "--json",
            "--no-inductor-seed", "--no-fusion-seed",
            "--config", str(config),
            "--llm", f"fake-model@{server.url}", "--api-key-env", KEY_ENV,
        ]
    )  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert code == exit_codes.OK
    assert summary["stop_reason"].startswith("token budget: 480 tokens used of 400")
    assert summary["tokens"]["by_model"]["fake-model"] == {
        "requests": 3,
        "prompt": 360,
        "completion": 120,
        "cost_usd": 0.0,
    }


@pytest.mark.slow
def test_the_seed_prompt_names_the_real_workers_hardware(tmp_path, fake_openai, monkeypatch, capsys) -> None:
    """The real interpreter pool: its warm worker reports the device and versions before any evaluation."""
    monkeypatch.setenv(KEY_ENV, "sk-loopback-0123456789")
    server = fake_openai(default=Reply("I cannot write Triton today."), models=("fake-model",))
    task = make_tiny_task(tmp_path / "task", [program_source(1.0)])
    code = main(
        [
            "evolve", str(task), "--out", str(tmp_path / "run"), "--iterations", "0",
            "--no-inductor-seed", "--no-fusion-seed",
            "--backend", "triton-interpret", "--workers-per-device", "1",
            "--llm", f"fake-model@{server.url}", "--api-key-env", KEY_ENV,
        ]
    )  # fmt: skip
    _, err = capsys.readouterr()
    assert code == exit_codes.OK, err  # the seed file is no Triton kernel, the LLM wrote none: judged
    (seed,) = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert "GPU: cpu" in seed.prompt_text
    assert f"Triton {triton.__version__}, PyTorch {torch.__version__}, triton interpreter" in seed.prompt_text
