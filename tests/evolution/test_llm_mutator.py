"""LLMMutator against the loopback OpenAI-compatible server: diffs, rewrites, garbage, rate limits, server
errors, timeouts, the token/cost budget, weighted models, and keeping the API key out of everything stored."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from openai_fake import FakeOpenAI, Hang, RawBody, Reply, Status, diff_answer, fake_openai, rewrite_answer

from evaluators.candidate import check_evolve_block
from evaluators.task import load_task
from evolution.config import LLMEndpoint
from evolution.llm_client import Price, RetryPolicy
from evolution.mutators.llm import LLMMutator
from evolution.types import MutationRequest, Program

__all__ = ["fake_openai"]  # the fixture, imported for pytest

KEY_ENV = "KB_TEST_LLM_KEY"
SECRET = "sk-kb-test-0123456789-SECRET"
PARENT = """import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START
BLOCK = 1024


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=4)
    return out
# EVOLVE-BLOCK-END
"""


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def task(tmp_path: Path):
    root = tmp_path / "task"
    root.mkdir()
    (root / "task.toml").write_text('name = "tiny_scale"\nentry = "scale"\n[[cases]]\nname = "n8"\nn = 8\n')
    (root / "reference.py").write_text("import torch\n\n\ndef scale(x):\n    return x * 2\n")
    (root / "inputs.py").write_text("def make_inputs(case, seed, device):\n    raise NotImplementedError\n")
    return load_task(root)


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def endpoint(server: FakeOpenAI, model: str = "fake-coder", **kw) -> LLMEndpoint:
    return LLMEndpoint(model=model, base_url=server.url, api_key_env=KEY_ENV, **kw)


def request(task, iteration: int = 0, parent_source: str | None = PARENT) -> MutationRequest:
    parent = None
    if parent_source is not None:
        parent = Program("parent-1", parent_source, "sha1", None, "seed:file", 0, 0)
    return MutationRequest(task=task, parent=parent, iteration=iteration)


def mutate(mutator: LLMMutator, req: MutationRequest):
    return asyncio.run(mutator.mutate(req))


def assert_no_secret(outcome, server: FakeOpenAI) -> None:
    for text in (outcome.prompt, outcome.response, outcome.error):
        assert SECRET not in (text or "")
    for recorded in server.requests:
        assert SECRET not in recorded.prompt_text
        assert recorded.headers["authorization"] == f"Bearer {SECRET}"  # sent as a header, nowhere else


def test_diff_answer_becomes_a_child_with_prompt_response_and_usage(task, fake_openai):
    server = fake_openai([Reply(diff_answer("BLOCK = 1024\n", "BLOCK = 2048\n"), 1000, 300)])
    prices = {"fake-coder": Price(input_per_mtok=2.0, output_per_mtok=10.0)}
    mutator = LLMMutator([endpoint(server)], rewrite_ratio=0.0, prices=prices)
    outcome = mutate(mutator, request(task))
    assert outcome.error == "" and outcome.operator == "llm:fake-coder"
    assert "BLOCK = 2048\n" in outcome.child_source
    check_evolve_block(PARENT, outcome.child_source)
    assert outcome.usage.prompt_tokens == 1000 and outcome.usage.completion_tokens == 300
    assert outcome.usage.cost_usd == pytest.approx((1000 * 2.0 + 300 * 10.0) / 1e6)
    assert "<<<<<<< SEARCH" in outcome.response and PARENT.strip() in outcome.prompt
    (sent,) = server.requests
    assert sent.model == "fake-coder" and [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert sent.body["max_tokens"] == 8192 and sent.body["temperature"] == 0.7
    assert_no_secret(outcome, server)


def test_rewrite_answer_replaces_the_block(task, fake_openai):
    body = "def scale(x):\n    return x  # REWRITTEN\n"
    server = fake_openai([Reply(rewrite_answer(body))])
    outcome = mutate(LLMMutator([endpoint(server)], rewrite_ratio=1.0), request(task))
    assert outcome.error == ""
    assert "# REWRITTEN" in outcome.child_source and "_scale_kernel" not in outcome.child_source
    check_evolve_block(PARENT, outcome.child_source)
    assert "single ```python code block" in server.requests[0].prompt_text


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("I think the kernel is already optimal.", "malformed answer: the answer holds no <<<<<<< SEARCH"),
        (diff_answer("import torch\n", "import torch, os\n"), "outside the EVOLVE-BLOCK"),
        (diff_answer("BLOCK = 7\n", "BLOCK = 8\n"), "SEARCH text is not in the EVOLVE-BLOCK"),
        (diff_answer("def scale(x):\n", "def scale(x:\n"), "unusable answer: candidate does not parse"),
        (diff_answer("BLOCK = 1024\n", "BLOCK = 1024\n"), "the answer changes nothing"),
    ],
)
def test_malformed_answers_are_recorded_and_skipped(task, fake_openai, answer, why):
    server = fake_openai([Reply(answer)])
    outcome = mutate(LLMMutator([endpoint(server)], rewrite_ratio=0.0), request(task))
    assert outcome.child_source is None
    assert why in outcome.error
    assert outcome.response == answer and outcome.prompt and outcome.usage.prompt_tokens == 120
    assert_no_secret(outcome, server)


def test_truncated_answer_says_it_was_cut(task, fake_openai):
    server = fake_openai([Reply("<<<<<<< SEARCH\nBLOCK = 1024\n====", finish_reason="length")])
    outcome = mutate(LLMMutator([endpoint(server)], rewrite_ratio=0.0), request(task))
    assert outcome.child_source is None and "cut off at max_tokens" in outcome.error


def test_rate_limit_is_retried_after_the_servers_retry_after(task, fake_openai):
    server = fake_openai(
        [Status(429, {"Retry-After": "3"}), Reply(diff_answer("BLOCK = 1024\n", "BLOCK = 512\n"))]
    )
    sleep = SleepRecorder()
    mutator = LLMMutator([endpoint(server)], rewrite_ratio=0.0, sleep=sleep)
    outcome = mutate(mutator, request(task))
    assert outcome.error == "" and "BLOCK = 512" in outcome.child_source
    assert len(server.requests) == 2
    (delay,) = sleep.delays
    assert 3.0 <= delay < 3.2  # the server's pause, plus a little jitter


def test_server_errors_back_off_exponentially_then_give_up(task, fake_openai):
    server = fake_openai(default=Status(500, message="upstream exploded"))
    sleep = SleepRecorder()
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=60.0)
    mutator = LLMMutator([endpoint(server, max_retries=3)], retry=policy, sleep=sleep)
    outcome = mutate(mutator, request(task))
    assert outcome.child_source is None
    assert "HTTP 500, still failing after 4 attempt(s)" in outcome.error
    assert len(server.requests) == 4 and len(sleep.delays) == 3
    for attempt, delay in enumerate(sleep.delays):
        assert 0.0 <= delay <= 2**attempt  # full jitter under a doubling cap
    assert outcome.prompt and outcome.response is None


def test_a_pause_longer_than_the_cap_is_not_waited_for(task, fake_openai):
    server = fake_openai([Status(429, {"retry-after-ms": "900000"})])
    sleep = SleepRecorder()
    mutator = LLMMutator([endpoint(server)], retry=RetryPolicy(max_retry_after_s=60.0), sleep=sleep)
    outcome = mutate(mutator, request(task))
    assert "more than the 60 s cap" in outcome.error and sleep.delays == []


def test_hang_past_the_client_timeout_is_a_transport_failure(task, fake_openai):
    server = fake_openai(default=Hang(30.0))
    mutator = LLMMutator([endpoint(server, timeout_s=0.5, max_retries=1)], sleep=SleepRecorder())
    started = time.monotonic()
    outcome = mutate(mutator, request(task))
    assert time.monotonic() - started < 10.0
    assert "no answer within 0.5 s, still failing after 2 attempt(s)" in outcome.error
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (RawBody("<html>gateway says hi</html>", content_type="text/html"), "returned no message text"),
        (
            RawBody('{"choices": [}'),
            "not a chat completion (JSONDecodeError), still failing after 2 attempt(s)",
        ),
        (RawBody('{"object": "chat.completion", "choices": []}'), "returned no message text"),
    ],
)
def test_a_body_that_is_no_chat_completion_is_not_a_child(task, fake_openai, body, why):
    server = fake_openai(default=body)
    mutator = LLMMutator([endpoint(server, max_retries=1)], sleep=SleepRecorder())
    outcome = mutate(mutator, request(task))
    assert outcome.child_source is None and why in outcome.error


def test_authentication_failure_is_not_retried_and_not_quoted(task, fake_openai):
    server = fake_openai([Status(401, message=f"Incorrect API key provided: {SECRET}")])
    outcome = mutate(LLMMutator([endpoint(server)], sleep=SleepRecorder()), request(task))
    assert "rejected the request: HTTP 401" in outcome.error and len(server.requests) == 1
    assert_no_secret(outcome, server)


def test_token_budget_refuses_once_spent_without_calling_the_endpoint(task, fake_openai):
    server = fake_openai(default=Reply("nothing useful", prompt_tokens=120, completion_tokens=40))
    mutator = LLMMutator([endpoint(server)], max_tokens=200)
    outcomes = [mutate(mutator, request(task, iteration=i)) for i in range(4)]
    assert len(server.requests) == 2  # 160 tokens < 200 allows a second call; 320 stops the rest
    assert "LLM token budget spent (320 of 200 tokens); no request sent" in outcomes[2].error
    assert outcomes[3].prompt is None and mutator.budget.spent.prompt_tokens == 240


def test_cost_budget_uses_the_price_table(task, fake_openai):
    server = fake_openai(default=Reply("nothing useful", prompt_tokens=1000, completion_tokens=1000))
    prices = {"fake-coder": Price(input_per_mtok=4.0, output_per_mtok=6.0)}  # $0.01 per answer
    mutator = LLMMutator([endpoint(server)], max_cost_usd=0.015, prices=prices)
    outcomes = [mutate(mutator, request(task, iteration=i)) for i in range(3)]
    assert len(server.requests) == 2
    assert "LLM cost budget spent ($0.0200 of $0.0150)" in outcomes[2].error


def test_models_are_drawn_by_weight_and_deterministically(task, fake_openai):
    server = fake_openai(default=Reply("no diff here"))
    endpoints = [endpoint(server, "big-model", weight=3.0), endpoint(server, "small-model", weight=1.0)]

    def models(seed: int) -> list[str]:
        mutator = LLMMutator(endpoints, seed=seed)

        async def run() -> list[str]:
            return [(await mutator.mutate(request(task, iteration=i))).operator for i in range(40)]

        return asyncio.run(run())

    first = models(seed=7)
    counts = Counter(first)
    assert set(counts) == {"llm:big-model", "llm:small-model"}
    assert counts["llm:big-model"] > 2 * counts["llm:small-model"]
    assert models(seed=7) == first
    assert [r.model for r in server.requests[:40]] == [op.removeprefix("llm:") for op in first]


def test_first_candidate_from_the_reference(task, fake_openai):
    written = "import torch\nimport triton\n\n\ndef scale(x):\n    return x * 2\n"
    server = fake_openai([Reply(rewrite_answer(written))])
    mutator = LLMMutator([endpoint(server)])
    assert mutator.can_seed()
    outcome = mutate(mutator, request(task, parent_source=None))
    assert outcome.error == ""
    assert "import triton\n\n\n# EVOLVE-BLOCK-START\ndef scale(x):" in outcome.child_source
    assert outcome.child_source.endswith("# EVOLVE-BLOCK-END\n")
    assert "Write a first Triton implementation of `scale`" in server.requests[0].prompt_text
