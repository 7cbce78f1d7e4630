"""The controller driving the real LLMMutator against the loopback OpenAI-compatible server: good diffs,
garbage and rate limits flow through the store; the token budget stops the run; the key stays out."""

from __future__ import annotations

import asyncio

from openai_fake import Reply, Status, diff_answer, rewrite_answer
from openai_fake import fake_openai as fake_openai  # the fixture
from search_fakes import FakeExecutor, make_tiny_task, program_source

from evaluators.task import load_task
from evolution.config import (
    ArchiveConfig,
    FeatureDim,
    LLMEndpoint,
    MutationConfig,
    SamplingConfig,
    SearchConfig,
    StopConfig,
)
from evolution.controller import Controller
from evolution.llm_client import RetryPolicy
from evolution.mutators.llm import LLMMutator
from evolution.operators import OperatorSet
from evolution.redact import Redactor
from evolution.store import STORE_FILE, RunStore

KEY = "sk-loopback-0123456789abcdef"


def test_llm_outcomes_and_token_budget(tmp_path, fake_openai, monkeypatch) -> None:
    monkeypatch.setenv("KB_SEARCH_TEST_KEY", KEY)
    server = fake_openai(
        [  # the seeding call first (a rewrite from the reference), then mutations of the best
            Reply(rewrite_answer(program_source(1.2, body="x + x")), prompt_tokens=100, completion_tokens=50),
            Reply(diff_answer("SCORE = 1.2\n", "SCORE = 1.5\n"), prompt_tokens=200, completion_tokens=100),
            Reply("Sorry, I cannot help with that.", prompt_tokens=150, completion_tokens=50),
            Status(429, {"Retry-After": "0"}),
            Reply(diff_answer("SCORE = 1.5\n", "SCORE = 2.0\n"), prompt_tokens=200, completion_tokens=100),
        ],
        default=Reply("More garbage.", prompt_tokens=100, completion_tokens=100),
    )
    endpoint = LLMEndpoint(model="fake-model", base_url=server.url, api_key_env="KB_SEARCH_TEST_KEY")
    cfg = SearchConfig(
        archive=ArchiveConfig(islands=1, features=(FeatureDim("complexity", bins=2, low=1, high=1000),)),
        sampling=SamplingConfig(explore=0, exploit=1, weighted=0, exploit_top=1),  # always the best parent
        stop=StopConfig(iterations=50, max_tokens=1000),
        mutation=MutationConfig(llm=(endpoint,), in_flight=1),
    )
    task = load_task(make_tiny_task(tmp_path / "task", [program_source(1.0)]))
    llm = LLMMutator([endpoint], rewrite_ratio=0.0, retry=RetryPolicy(base_delay_s=0.0, max_delay_s=0.0))
    with RunStore.create(tmp_path / "run", task, cfg, Redactor.from_env(cfg)) as store:
        controller = Controller(task, cfg, store, FakeExecutor(), OperatorSet.of([llm], cfg.mutation.weights))
        summary = asyncio.run(controller.run())
        mutations = store.mutations()

    # 150 + 300 + 200 + 300 = 950 tokens < 1000: one more call (200) passes the budget, then no more
    assert summary.stop_reason.startswith("token budget")
    assert [(m["phase"], m["outcome"]) for m in mutations] == [
        ("seed", "child"),
        ("evolve", "child"),
        ("evolve", "malformed"),
        ("evolve", "child"),
        ("evolve", "malformed"),
    ]
    assert all(m["operator"] == "llm:fake-model" and m["prompt"] for m in mutations)
    assert "cannot help" in mutations[2]["response"] and mutations[2]["error"]
    assert sum(m["prompt_tokens"] + m["completion_tokens"] for m in mutations) == 1150
    assert summary.best.score == 2.0
    assert len(server.requests) == 6  # the 429 was retried; nothing was sent once the budget was spent
    # the parent's code was in the prompt, and the key travelled only in the request header
    assert "SCORE = 1.2" in server.requests[1].prompt_text
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    for path in (tmp_path / "run").iterdir():
        assert KEY.encode() not in path.read_bytes()
    assert (tmp_path / "run" / STORE_FILE).is_file()
