from __future__ import annotations

import io
import json

import pytest
from search_fakes import ScriptedMutator, program_source
from test_controller import ARCHIVE, run

from evolution.config import (
    ArchiveConfig,
    LLMEndpoint,
    MutationConfig,
    SamplingConfig,
    SearchConfig,
    StopConfig,
)
from evolution.export import Exporter
from evolution.redact import Redactor
from evolution.store import RunStore
from evolution.types import MutationOutcome, TokenUsage

KEY = "sk-export-secret-0123456789"


@pytest.fixture
def finished_run(tmp_path, monkeypatch):
    """A seed (1.0), then: better (1.5), worse (1.2 from 1.5), failing, malformed, better again (2.0)."""
    monkeypatch.setenv("EXPORT_TEST_KEY", KEY)
    sources = {
        "better": program_source(1.5, body="x + x"),
        "worse": program_source(1.2, body="2 * x"),
        "failing": program_source(0, body="x", fail="correctness"),
        "best": program_source(2.0, body="x.mul(2)"),
    }
    script = [
        lambda r: MutationOutcome(
            "llm:m",
            sources["better"],
            prompt=f"improve (key {KEY})",
            response="```better```",
            usage=TokenUsage(100, 40),
        ),
        lambda r: MutationOutcome("tune:launch", sources["worse"]),
        lambda r: MutationOutcome(
            "llm:m", sources["failing"], prompt="p3", response="r3", usage=TokenUsage(90, 30)
        ),
        lambda r: MutationOutcome("llm:m", None, prompt="p4", response="garbage", error="no code block"),
        lambda r: MutationOutcome(
            "llm:m", sources["best"], prompt="p5", response="r5", usage=TokenUsage(80, 20)
        ),
    ]
    cfg = SearchConfig(
        archive=ArchiveConfig(islands=1, features=ARCHIVE.features),
        stop=StopConfig(iterations=5),
        mutation=MutationConfig(
            in_flight=1, llm=(LLMEndpoint("m", "http://127.0.0.1:9/v1", "EXPORT_TEST_KEY"),)
        ),
        sampling=SamplingConfig(explore=0, exploit=1, weighted=0, exploit_top=1),
    )
    run(tmp_path, [ScriptedMutator("llm:m", script)], cfg=cfg, redact=Redactor.from_env(cfg))
    return tmp_path / "run"


def export(run_dir, fmt: str) -> list[dict]:
    with RunStore.open(run_dir, readonly=True) as store:
        exporter = Exporter(store, Redactor([KEY]))
    buf = io.StringIO()
    count = exporter.write(fmt, buf)
    lines = buf.getvalue().splitlines()
    assert len(lines) == count
    rows = [json.loads(line) for line in lines]  # valid JSONL: one object per line
    assert KEY not in buf.getvalue()
    return rows


def test_sft_keeps_translations_and_best_steps_only(finished_run) -> None:
    rows = export(finished_run, "sft")
    kinds = [(r["kind"], r["score"]) for r in rows]
    assert kinds == [("translation", 1.0), ("revision", 1.5), ("revision", 2.0)]
    translation, first, second = rows
    assert translation["parent_id"] is None and translation["prompt_source"] == "synthesized"
    assert "def scale" in translation["prompt"]  # the reference is in the synthesized prompt
    assert first["prompt_source"] == "llm" and first["response"] == "```better```"
    assert first["prompt"] == "improve (key ***)"
    assert first["parent_score"] == 1.0 and second["parent_score"] == 1.5
    for r in rows:
        assert set(r) >= {
            "task",
            "kind",
            "program_id",
            "parent_id",
            "operator",
            "messages",
            "prompt",
            "response",
            "code",
            "score",
            "speedup",
            "parent_score",
            "parent_speedup",
            "prompt_source",
        }
        assert [m["role"] for m in r["messages"]] == ["user", "assistant"]


def test_grpo_rows_cover_every_mutation_with_reward_inputs(finished_run) -> None:
    rows = export(finished_run, "grpo")
    assert [r["reward_inputs"]["outcome"] for r in rows] == ["child", "child", "child", "malformed", "child"]
    better, worse, failing, malformed, best = rows
    assert better["reward_inputs"]["speedup_vs_parent"] == pytest.approx(1.5)
    assert worse["reward_inputs"]["speedup_vs_parent"] == pytest.approx(1.2 / 1.5)
    assert worse["prompt_source"] == "synthesized" and "Current implementation" in worse["prompt"]
    assert failing["reward_inputs"]["correct"] is False and failing["reward_inputs"]["stage"] == "correctness"
    assert failing["reward_inputs"]["speedup_vs_parent"] == 0.0
    assert malformed["child_code"] is None and malformed["response"] == "garbage"
    assert malformed["reward_inputs"]["speedup_vs_parent"] is None
    assert best["reward_inputs"]["score"] == 2.0 and best["parent_code"] == better["child_code"]
    for r in rows:
        assert set(r) >= {"prompt", "parent_code", "parent_id", "response", "reward_inputs", "operator"}
        assert set(r["reward_inputs"]) >= {
            "correct",
            "speedup",
            "parent_speedup",
            "speedup_vs_parent",
            "stage",
        }


def test_secret_is_absent_from_store_and_exports(finished_run) -> None:
    for path in finished_run.iterdir():
        assert KEY.encode() not in path.read_bytes(), path
