"""LLM mutation: ask an OpenAI-compatible endpoint to improve (or first write) a candidate.

Per request: the model is drawn by weight from the configured endpoints; the answer format is a
SEARCH/REPLACE diff of the parent's EVOLVE-BLOCK, or (with probability `rewrite_ratio`, and always when
writing a first candidate) a rewrite; the prompt comes from the templates in evolution/prompts/. The child
must parse, define the entry and keep the parent's code outside the block; anything else is a malformed
answer, recorded with its prompt and response and skipped. Once the token or cost budget is spent, the
mutator refuses without calling the endpoint.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Mapping, Sequence

from evaluators import secrets
from evaluators.candidate import EVOLVE_END, EVOLVE_START, find_evolve_block
from evaluators.errors import CandidateError
from evolution.llm_client import (
    Budget,
    ChatAnswer,
    ChatClient,
    EndpointLike,
    LLMError,
    LLMErrorWithUsage,
    Price,
    RetryPolicy,
    Sleep,
)
from evolution.mutators.base import child_problem, failed
from evolution.mutators.diff import MalformedAnswer, apply_edits, apply_rewrite, extract_rewrite, parse_edits
from evolution.mutators.prompts import Prompt, environment, render_prompt
from evolution.types import MutationOutcome, MutationRequest

FAMILY = "llm"


class LLMMutator:
    name = FAMILY

    def __init__(
        self,
        endpoints: Sequence[EndpointLike],
        *,
        seed: int = 0,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        prices: Mapping[str, Price] | None = None,
        rewrite_ratio: float = 0.2,
        retry: RetryPolicy | None = None,
        sleep: Sleep | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("LLMMutator needs at least one endpoint")
        self.seed = seed
        self.rewrite_ratio = rewrite_ratio
        self.budget = Budget(max_tokens, max_cost_usd)
        self._rng = random.Random(f"llm-jitter:{seed}")
        self.clients = [
            ChatClient(ep, price=_price(ep, prices), retry=retry, sleep=sleep, rng=self._rng, environ=environ)
            for ep in endpoints
        ]
        self.weights = [float(getattr(ep, "weight", 1.0)) for ep in endpoints]

    def can_seed(self) -> bool:
        return True

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        parent = request.parent
        rng = random.Random(
            f"{self.seed}:{parent.id if parent else 'seed'}:{request.iteration}:{request.island}"
        )
        client = rng.choices(self.clients, weights=self.weights)[0]
        operator = f"{FAMILY}:{client.endpoint.model}"
        spent = self.budget.exhausted()
        if spent:
            return failed(operator, f"{spent}; no request sent")
        mode = "rewrite" if parent is None or rng.random() < self.rewrite_ratio else "diff"
        prompt = (
            _seed_prompt(request)
            if parent is None
            else render_prompt(request.task, parent, request.inspirations, request.hardware, mode)
        ).redacted()  # a candidate's log or source may quote a secret: the endpoint gets what the store keeps
        try:
            answer = await client.chat(prompt.messages())
        except LLMErrorWithUsage as exc:
            self.budget.charge(exc.usage)
            return failed(operator, str(exc), prompt=prompt.as_text(), usage=exc.usage)
        except LLMError as exc:
            return failed(operator, str(exc), prompt=prompt.as_text())
        except Exception as exc:  # an unexpected client failure must not stop the search
            problem = secrets.redact(f"the LLM call failed: {type(exc).__name__}: {exc}")  # may quote a URL
            return failed(operator, problem, prompt=prompt.as_text())
        self.budget.charge(answer.usage)
        return _outcome(operator, request, mode, prompt, answer)


def _outcome(
    operator: str, request: MutationRequest, mode: str, prompt: Prompt, answer: ChatAnswer
) -> MutationOutcome:
    parent = request.parent
    cut = " (the answer was cut off at max_tokens)" if answer.finish_reason == "length" else ""
    try:
        if parent is None:
            child = _with_markers(extract_rewrite(answer.text))
        elif mode == "diff":
            child = apply_edits(parent.source, parse_edits(answer.text))
        else:
            child = apply_rewrite(parent.source, extract_rewrite(answer.text))
    except MalformedAnswer as exc:
        return failed(
            operator,
            f"malformed answer: {exc}{cut}",
            prompt=prompt.as_text(),
            response=answer.text,
            usage=answer.usage,
        )
    problem = child_problem(parent.source if parent else child, child, request.task.entry)
    if problem is None and parent is not None and child.strip() == parent.source.strip():
        problem = "the answer changes nothing"
    if problem is not None:
        return failed(
            operator,
            f"unusable answer: {problem}{cut}",
            prompt=prompt.as_text(),
            response=answer.text,
            usage=answer.usage,
        )
    return MutationOutcome(
        operator=operator,
        child_source=child,
        prompt=prompt.as_text(),
        response=answer.text,
        usage=answer.usage,
    )


def _seed_prompt(request: MutationRequest) -> Prompt:
    task = request.task
    context = {
        "task": {
            "name": task.name,
            "entry": task.entry,
            "regime": task.regime,
            "description": task.description.strip(),
            "cases": [
                {"name": c.name, "params": ", ".join(f"{k}={v}" for k, v in c.params.items())}
                for c in task.cases
                if not c.is_captured
            ],
        },
        "hardware": request.hardware,
        "reference": task.reference_path.read_text().rstrip(),
    }
    env = environment()
    return Prompt(
        system=env.get_template("system.j2").render().strip() + "\n",
        user=env.get_template("seed.j2").render(**context).strip() + "\n",
    )


def _with_markers(source: str) -> str:
    """A first candidate without EVOLVE-BLOCK markers gets them around everything after its imports."""
    try:
        if find_evolve_block(source) is not None:
            return source
        tree = ast.parse(source)
    except CandidateError as exc:
        raise MalformedAnswer(f"its EVOLVE-BLOCK markers are malformed: {exc}") from exc
    except SyntaxError as exc:
        raise MalformedAnswer(f"the code does not parse: line {exc.lineno}: {exc.msg}") from exc
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0] is tree.body[0]
    ):
        body = body[1:]  # the module docstring stays above the block
    if not body:
        raise MalformedAnswer("the code defines nothing besides imports")
    first = body[0]
    start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
    lines = source.rstrip("\n").splitlines()
    if any(isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno - 1 > start for n in tree.body):
        return "\n".join([EVOLVE_START, *lines, EVOLVE_END]) + "\n"  # imports interleaved: all evolvable
    return "\n".join([*lines[:start], EVOLVE_START, *lines[start:], EVOLVE_END]) + "\n"


def _price(endpoint: EndpointLike, prices: Mapping[str, Price] | None) -> Price:
    if prices and endpoint.model in prices:
        return prices[endpoint.model]
    return Price(
        float(getattr(endpoint, "input_price_per_mtok", 0.0) or 0.0),
        float(getattr(endpoint, "output_price_per_mtok", 0.0) or 0.0),
    )
