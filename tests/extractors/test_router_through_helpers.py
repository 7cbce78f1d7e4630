"""A router whose `topk(sorted=False)` result reaches its outputs through two helpers: extraction infers
`[[compare.unordered]]` and `[[compare.ties]]` through them, and an LLM-free search on the Triton interpreter
reaches a correct kernel with the task exactly as extracted (the fusion kernel returns each row's experts in
its own order, which only the inferred rules accept)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

from evaluators.task import load_task
from extractors.extract import ExtractOptions, extract
from kernelbot import exit_codes
from kernelbot.cli import main
from tests.extractors.conftest import write_repo

ROUTER = """
import torch


def _scores(logits):
    return logits.softmax(dim=-1, dtype=torch.float32)


def _select(scores, k):
    return torch.topk(scores, k, dim=-1, sorted=False)


def _pick(logits, k):
    weights, ids = _select(_scores(logits), k)
    return weights / weights.sum(dim=-1, keepdim=True), ids


def route(router_logits, top_k: int):
    weights, ids = _pick(router_logits, top_k)
    return weights, ids.to(torch.int32)
"""
SPEC = """
[sizes]
tokens = [3, 8]
experts = 16
top_k = 4

[args.router_logits]
shape = ["tokens", "experts"]
dtype = "float32"

[args.top_k]
value = "top_k"
"""
LIGHT_EVAL = "[eval]\nhidden_cases = 0\ndrift_calls = 1\n"


def _extracted(tmp_path: Path) -> Path:
    repo = write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/router.py": ROUTER})
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "task"
    summary = extract(ExtractOptions(repo, "pkg.router:route", out=out, spec=spec))
    assert summary.probe is not None and summary.probe.ran
    return out


def test_rules_are_inferred_through_two_helpers(tmp_path: Path) -> None:
    out = _extracted(tmp_path)
    toml = tomllib.loads((out / "task.toml").read_text())
    assert toml["regime"] == "graph" and toml["extraction"]["regime_from"].startswith("default")
    compare = toml["compare"]
    assert compare["unordered"] == [{"key": "return[1]", "values": ["return[0]"]}]
    assert compare["ties"] == [{"key": "return[1]", "values": "return[0]"}]
    task = load_task(out)
    assert task.compare.unordered and task.compare.ties


@pytest.mark.slow
def test_an_llm_free_search_reaches_a_correct_kernel_with_no_hand_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _extracted(tmp_path)
    config = tmp_path / "light.toml"
    config.write_text(LIGHT_EVAL)
    args = ["evolve", str(out), "--out", str(tmp_path / "run"), "--config", str(config)]
    args += ["--backend", "triton-interpret", "--workers-per-device", "1", "--no-inductor-seed"]
    assert main([*args, "--iterations", "1", "--json"]) == exit_codes.OK
    summary = json.loads(capsys.readouterr().out)
    best = summary["best"]
    assert best is not None and best["passed"], summary
    assert "fusion" in json.dumps(best) or best["score"] == 1.0
